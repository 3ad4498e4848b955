"""``list --foreign``: Claude Code and Codex sessions not imported yet, after omp's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session.cli import cli
from omp_session.paths import project_dir_name

HOME = Path(__file__).resolve().parents[1] / "data" / "foreign" / "home"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(HOME, copy, symlinks=True)
    monkeypatch.setenv("HOME", str(copy))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return copy


def _rows(*args: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli, ["list", *args, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert isinstance(rows, list)
    return rows


def test_foreign_sessions_are_listed_only_when_asked_and_until_imported(home: Path) -> None:
    assert _rows("--all") == []
    rows = _rows("--all", "--foreign")
    agents = {r["agent"] for r in rows}
    assert agents == {"claude", "codex"} and all(r["import_status"] == "new" for r in rows)
    assert all(r["status"] == f"{r['agent']}:new" for r in rows)
    imported = None
    for row in (r for r in rows if r["agent"] == "claude"):  # some fixtures are damaged on purpose
        if CliRunner().invoke(cli, ["import", "claude", str(row["path"])]).exit_code == 0:
            imported = row
            break
    assert imported is not None
    after = _rows("--all", "--foreign")
    assert imported["path"] not in {r["path"] for r in after} and len(after) == len(rows)
    assert sum(1 for r in after if "agent" not in r) == 1  # the imported session is omp's now


def test_foreign_rows_follow_the_project_and_grep_filters(home: Path) -> None:
    every = _rows("--all", "--foreign")
    cwd = str(every[0]["cwd"])
    mine = _rows("--foreign", "--project", cwd)
    # a project is its folder, as omp names it: the fixtures hold ".../work/api-0" and ".../work/api/0",
    # one folder (which of them is listed first follows the files' times, set by the checkout)
    assert mine and all(project_dir_name(str(r["cwd"])) == project_dir_name(cwd) for r in mine)
    assert {r["path"] for r in mine} == {r["path"] for r in every
                                        if project_dir_name(str(r["cwd"])) == project_dir_name(cwd)}
    assert _rows("--foreign", "--all", "--grep", "zz-no-such-words-zz") == []


def test_foreign_is_refused_with_a_store(home: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["list", "--foreign", "--store", f"sqlite:{tmp_path / 's.db'}"])
    assert result.exit_code in (1, 2) and "Traceback" not in result.output


def test_at_80_columns_a_foreign_row_still_says_whose_it_is(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(cli, ["import", "codex", "--all"])  # omp's rows first, then the foreign ones
    assert result.exit_code == 0, result.output
    shown = CliRunner().invoke(cli, ["list", "--all", "--foreign"])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert "status" in lines[0].split() and all(len(line) <= 80 for line in lines)
    claude = [line for line in lines if "claude:new" in line]
    assert len(claude) == len([r for r in _rows("--all", "--foreign") if r.get("agent") == "claude"]) > 0
    plain = CliRunner().invoke(cli, ["list", "--all"])  # without foreign rows, the usual columns
    assert "status" not in plain.stdout.splitlines()[0].split()


def test_import_takes_cwd_as_the_other_commands_do_for_project(home: Path) -> None:
    rows = [r for r in _rows("--all", "--foreign") if r.get("agent") == "claude"]
    project = str(rows[0]["cwd"])

    def said(*flag: str) -> object:
        result = CliRunner().invoke(cli, ["import", "claude", *flag, "--dry-run", "--json"])
        assert result.exit_code in (0, 1), result.output
        return json.loads(result.stdout)

    by_project = said("--project", project)
    assert by_project == said("--cwd", project) and by_project != said("--all")


def test_a_foreign_session_whose_file_is_gone_is_listed_with_an_unknown_size(home: Path) -> None:
    # Codex's state database still lists rollouts that were deleted: their size is unknown, and the
    # table's size column raised TypeError on it (--json was fine)
    import sqlite3

    db = home / ".codex" / "state_5.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE threads (id TEXT, rollout_path TEXT, created_at INTEGER, updated_at INTEGER, "
                    "cwd TEXT, title TEXT, first_user_message TEXT)")
        con.execute("INSERT INTO threads VALUES ('t1', 'sessions/gone.jsonl', 1767323045, 1767323046, ?, 'gone', 'hi')",
                    (str(home),))
    con.close()
    rows = [r for r in _rows("--all", "--foreign") if r.get("title") == "gone"]
    assert len(rows) == 1 and rows[0]["size"] is None
    for extra in ([], ["--sort", "size"]):
        result = CliRunner().invoke(cli, ["list", "--all", "--foreign", *extra], env={"COLUMNS": "120"})
        assert result.exit_code == 0, result.output
        line = next(x for x in result.stdout.splitlines() if x.rstrip().endswith("gone"))
        assert " ? " in line
