"""``list``, ``stats`` and ``search --store`` on PostgreSQL read through the built-in client
(store/pgwire/): the same output as through psycopg, and psycopg is not even imported."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from builders import assistant, entry, header, run, user, write_session
from omp_session.cli import cli
from omp_session.ops.sync import sync_urls
from omp_session.paths import project_dir_name
from omp_session.store import open_store
from omp_session.store.pg_connect import DRIVER_VARIABLE
from omp_session.store.pgwire import Connection
from stores.teamutil import team_url

COMMANDS = [
    ["list", "--all", "--json"],
    ["list", "--all", "--json", "--limit", "1"],
    ["stats", "--all", "--by", "day", "--json", "--tz", "UTC"],
    ["stats", "--all", "--by", "model", "--json"],
    ["search", "pgwire", "--json"],
    ["search", "nothing-matches-this", "--json"],
]


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "sessions" / project_dir_name("/work/p")
    for n in range(3):
        write_session(
            root / f"2026-01-0{n + 1}T00-00-00-000Z_s{n}.jsonl",
            [
                entry("e1", None, message=user(f"about pgwire {n} é 𝄞")),
                entry("e2", "e1", message=assistant(f"answer {n}", model=f"m{n % 2}")),
            ],
            head=header(f"s{n}", cwd="/work/p"),
        )
    with team_url("postgres", tmp_path) as made:
        sync_urls(f"file:{tmp_path / 'sessions'}", made, use_state=False)
        assert run(cli, "index", "--store", made)[0] == 0
        yield made


def _outputs(url: str) -> list[tuple[int, str, str]]:
    return [run(cli, *command[:1], "--store", url, *command[1:]) for command in COMMANDS]


def test_the_read_commands_answer_as_through_psycopg(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DRIVER_VARIABLE, raising=False)
    ours = _outputs(url)
    monkeypatch.setenv(DRIVER_VARIABLE, "psycopg")
    theirs = _outputs(url)
    assert ours == theirs
    assert all(code == 0 for code, _, _ in ours) and '"pgwire' not in ours[0][1]
    assert "about [pgwire] 0" in ours[4][1] and ours[5][1].strip() == "[]"


def test_the_store_connection_is_the_built_in_one(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DRIVER_VARIABLE, raising=False)
    storage = open_store(url, create=False)
    try:
        assert isinstance(storage._conn, Connection)  # type: ignore[attr-defined]
    finally:
        storage.close()


@pytest.mark.parametrize("command", COMMANDS[::2], ids=lambda c: c[0])
def test_the_read_commands_need_no_psycopg(url: str, command: list[str]) -> None:
    code = (
        "import sys\nsys.modules['psycopg'] = None  # any import of it fails\n"
        "from omp_session.cli import main\nsys.argv = ['omp-session', *sys.argv[1:]]\nmain()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, command[0], "--store", url, *command[1:]],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


@pytest.mark.parametrize(
    ("query", "env"), [("?target_session_attrs=any", {}), ("", {DRIVER_VARIABLE: "psycopg"})]
)
def test_psycopg_missing_where_it_is_needed_is_one_line(query: str, env: dict[str, str]) -> None:
    import os

    from stores.sqlutil import POSTGRES_URL

    code = (
        "import sys\nsys.modules['psycopg'] = None\n"
        "from omp_session.cli import main\nsys.argv = ['omp-session', *sys.argv[1:]]\nmain()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "list", "--store", POSTGRES_URL + query, "--all"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "omp-session[postgres]" in lines[0], lines
