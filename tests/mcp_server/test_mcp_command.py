"""``omp-session mcp`` as a command: its errors are one line, and the SDK is an extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAIN = "from omp_session.cli import main; import sys; sys.argv[0] = 'omp-session'; main()"


def _run(*args: str, block_sdk: bool = False) -> subprocess.CompletedProcess[str]:
    code = ("import sys\nsys.modules['mcp'] = None\n" if block_sdk else "") + MAIN
    return subprocess.run([sys.executable, "-c", code, "mcp", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_without_the_sdk_it_names_the_extra(tmp_path: Path) -> None:
    out = _run("--root", str(tmp_path), block_sdk=True)
    assert out.returncode == 1, out
    assert out.stderr.strip().splitlines() == [
        "omp-session: omp-session mcp needs the mcp package: pip install 'omp-session[mcp]' (or omp-session[all])"]


def test_a_missing_root_is_one_line(tmp_path: Path) -> None:
    out = _run("--root", str(tmp_path / "nowhere"))
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"omp-session: {tmp_path / 'nowhere'}: no such sessions directory"]


def test_the_server_ends_when_its_input_does(tmp_path: Path) -> None:
    out = _run("--root", str(tmp_path))  # stdin is empty: the client is gone before it spoke
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
