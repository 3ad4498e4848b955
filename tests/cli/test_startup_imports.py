"""``omp-session --help`` and ``--version`` import click and the command table, nothing of the
library: start-up is a feature (DESIGN.md, "The house")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from omp_session import __version__

# runs the program as ``python -m omp_session`` does, then reports what it imported
WRAPPER = """
import json, runpy, sys
sys.argv = ["omp-session", *sys.argv[1:]]
try:
    runpy.run_module("omp_session", run_name="__main__")
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(sys.modules)) + "\\n")
"""

ALLOWED = {"omp_session", "omp_session._version", "omp_session.cli", "omp_session.cli._fast", "omp_session.cli._group",
           "omp_session.cli._lazy"}
FAST = {"omp_session", "omp_session._version", "omp_session.cli", "omp_session.cli._fast"}
HEAVY = {"rich", "msgspec", "orjson", "sqlite3", "tarfile", "zstandard", "psycopg", "pymysql", "redis",
         "importlib.metadata"}


def _run(*args: str) -> tuple[str, set[str]]:
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True, check=True)
    return done.stdout, set(json.loads(done.stderr.splitlines()[-1]))


@pytest.mark.parametrize("flag", ["--help", "-h", "--version"])
def test_help_and_version_import_nothing_of_the_library(flag: str) -> None:
    _out, modules = _run(flag)
    ours = {m for m in modules if m == "omp_session" or m.startswith("omp_session.")}
    assert FAST <= ours <= ALLOWED
    assert {m for m in modules if m.partition(".")[0] in HEAVY or m in HEAVY} == set()


def test_help_lists_every_command_without_importing_it() -> None:
    from omp_session.cli import COMMANDS

    out, modules = _run("--help")
    rows = out.split("Commands:\n", 1)[1].splitlines()
    listed = [row.split()[0] for row in rows if row[:2] == "  " and row[2:3].isalpha()]
    assert listed == sorted(COMMANDS)
    assert not any(m.startswith("omp_session.cli.") and m not in ALLOWED for m in modules)


def test_version_is_the_package_version() -> None:
    out, _modules = _run("--version")
    assert out == f"omp-session, version {__version__}\n"


def test_a_command_imports_only_its_own_module() -> None:
    _out, modules = _run("sync", "--help")
    commands = {m for m in modules if m.startswith("omp_session.cli.") and "._" not in m}
    assert commands == {"omp_session.cli.sync"}


def test_version_needs_no_click() -> None:
    _out, modules = _run("--version")
    assert {m for m in modules if m.startswith("omp_session")} == FAST
    assert "click" not in modules


@pytest.mark.parametrize("columns", ["50", "80", "200"])
def test_a_second_help_is_clicks_help_without_click(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    first, first_modules = _run("--help")
    second, second_modules = _run("-h")
    assert "click" in first_modules and "click" not in second_modules
    assert {m for m in second_modules if m.startswith("omp_session")} == FAST
    import click

    from omp_session.cli import cli

    # what click prints for `omp-session --help` at this width (CliRunner would force 80 columns)
    rendered = click.Context(cli, info_name="omp-session", help_option_names=["-h", "--help"]).get_help() + "\n"
    assert first == second == rendered


def test_a_kept_help_of_another_width_or_table_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    narrow, _ = _run("--help")
    monkeypatch.setenv("COLUMNS", "120")
    wide, modules = _run("--help")
    assert "click" in modules and narrow != wide
    from omp_session.cli import _fast

    path = _fast._help_file()
    assert path is not None
    with open(path, "w", encoding="utf-8") as f:
        f.write("stale\n")
    import os

    group = os.path.join(os.path.dirname(_fast.__file__), "_group.py")
    st = os.stat(group)
    os.utime(group, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # the table "changed"
    try:
        again, modules = _run("--help")
    finally:
        os.utime(group, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "click" in modules and again == wide


@pytest.mark.parametrize("columns", ["abc", "-5", "0", ""])
def test_odd_columns_give_clicks_help(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """COLUMNS that is not a positive number is ignored, as shutil.get_terminal_size (click) does."""
    monkeypatch.setenv("COLUMNS", columns)
    for _ in range(2):  # rendered, then kept
        out = subprocess.run([sys.executable, "-c", WRAPPER, "--help"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        import click

        from omp_session.cli import cli

        expected = click.Context(cli, info_name="omp-session", help_option_names=["-h", "--help"]).get_help()
        assert out.stdout == expected + "\n"


def test_search_json_on_an_index_as_it_is_loads_no_rich_and_no_reader(tmp_path: Path) -> None:
    # the search a script runs: the index's query and JSON out, neither the terminal's styling nor
    # the session reader (only an index update reads files)
    root, index = tmp_path / "sessions", tmp_path / "index.db"
    root.mkdir()
    subprocess.run([sys.executable, "-m", "omp_session", "index", "--root", str(root), "--index", str(index)],
                   check=True, capture_output=True)
    out, modules = _run("search", "csv", "--index", str(index), "--no-update", "--json")
    assert json.loads(out) == []
    assert "rich" not in modules and "omp_session.format.reader" not in modules
    assert "omp_session.catalog.summaries" not in modules
