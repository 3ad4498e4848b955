"""The database drivers and zstandard are extras: without them the core works, and using a store
or a ``.tar.zst`` archive says in one line which extra to install (exit 1, no traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "omp_session" / "samples" / "sample.jsonl"
DRIVERS = ("psycopg", "pymysql", "redis", "zstandard")


def _run(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where the drivers cannot be imported."""
    block = f"import sys\nfor m in {DRIVERS!r}: sys.modules[m] = None\n"
    return subprocess.run([sys.executable, "-c", block + code, *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_reading_and_file_commands_import_no_extra(tmp_path: Path) -> None:
    code = (
        "import omp_session, sys\n"
        "from omp_session.ops.export.formats import export\n"
        "s = omp_session.open(sys.argv[1]); s.build_session_context(); s.get_tree(); s.get_usage_statistics()\n"
        "omp_session.validate(sys.argv[1]); export(s, 'md')\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {DRIVERS!r} and sys.modules[m] is not None))\n"
    )
    out = _run(code, str(SAMPLE))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("url", "extra"), [
    # an option only libpq knows: psycopg's (the built-in client serves a plain URL without it)
    ("postgresql://postgres@127.0.0.1:5432/test?target_session_attrs=any", "postgres"),
    ("mysql://root@127.0.0.1:3306/test", "mysql"),
    ("redis://127.0.0.1:6379/0", "redis"),
])
def test_a_store_without_its_driver_is_one_line(url: str, extra: str) -> None:
    out = _run("from omp_session.cli import main; import sys; sys.argv[0] = 'omp-session'; main()",
               "list", "--store", url, "--all")
    assert out.returncode == 1, out
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"omp-session[{extra}]" in lines[0], lines


def test_the_library_raises_missing_extra() -> None:
    code = ("from omp_session.store import open_store\nfrom omp_session.errors import MissingExtraError, SessionError\n"
            "try:\n    open_store('redis://127.0.0.1:6379/0')\n"
            "except MissingExtraError as e:\n    print(e.extra, isinstance(e, SessionError), isinstance(e, ImportError))\n")
    out = _run(code)
    assert out.stdout.split() == ["redis", "True", "True"], out.stderr


def test_a_zstd_archive_without_zstandard_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "agent" / "sessions" / "-p"
    root.mkdir(parents=True)
    (root / "s.jsonl").write_bytes(SAMPLE.read_bytes())
    env_code = ("import os; os.environ['PI_CODING_AGENT_DIR'] = {!r}\n".format(str(tmp_path / "agent"))
                + "from omp_session.cli import main; import sys; sys.argv[0] = 'omp-session'; main()")
    out = _run(env_code, "pack", str(root / "s.jsonl"), "-o", str(tmp_path / "out.tar.zst"))
    assert out.returncode == 1, out
    assert "Traceback" not in out.stderr and "omp-session[zstd]" in out.stderr
    assert not (tmp_path / "out.tar.zst").exists()
