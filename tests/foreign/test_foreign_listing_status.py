"""``list --foreign``: a Claude Code session the importer cannot convert is listed as
``claude:unimportable`` (with the reason in --json) until the file changes, and a listed created
time is never later than the modified time."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from omp_session.cli import cli

MODIFIED = 1756684800  # 2025-09-01T00:00:00Z
BAD_TIME = "22222222-2222-4222-8222-222222222222"
NO_RECORDS = "33333333-3333-4333-8333-333333333333"
GOOD = "44444444-4444-4444-8444-444444444444"


def _line(value: Any) -> bytes:
    return json.dumps(value).encode() + b"\n"


def _user(uuid: str, parent: str | None, timestamp: Any, cwd: str) -> bytes:
    return _line({"type": "user", "uuid": uuid, "parentUuid": parent, "cwd": cwd, "timestamp": timestamp,
                  "message": {"role": "user", "content": "hello"}})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    project = home / "proj"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(project)
    folder = home / ".claude" / "projects" / str(project).replace("/", "-")
    folder.mkdir(parents=True)
    cwd = str(project)
    files = {
        # a time past what a Date holds: omp's import fails with "RangeError: Invalid time value"
        BAD_TIME: _user("u1", None, "2025-08-30T10:00:00.000Z", cwd) + _user("u2", "u1", 1e300, cwd),
        NO_RECORDS: b"this is not json\n{also not\n",
        GOOD: _user("u1", None, "2025-08-31T10:00:00.000Z", cwd),
    }
    for sid, data in files.items():
        path = folder / f"{sid}.jsonl"
        path.write_bytes(data)
        os.utime(path, (MODIFIED, MODIFIED))  # copied with its times kept: born now, modified before
    return home


def _rows() -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["list", "--foreign", "--all", "--json"])
    assert result.exit_code == 0, result.output
    return {str(r["id"]): r for r in json.loads(result.stdout) if "agent" in r}  # the foreign rows


def test_created_is_never_later_than_modified(home: Path) -> None:
    rows = _rows()
    assert set(rows) == {BAD_TIME, NO_RECORDS, GOOD}
    for row in rows.values():
        assert row["created"] is not None and row["created"] <= row["modified"], row
    assert rows[BAD_TIME]["created"].startswith("2025-08-30T10:00:00")  # its first record's time
    assert rows[GOOD]["created"].startswith("2025-08-31T10:00:00")
    assert rows[NO_RECORDS]["created"] == rows[NO_RECORDS]["modified"]  # no record: the file's mtime


def test_sessions_the_importer_cannot_convert_are_listed_as_unimportable(home: Path) -> None:
    before = _rows()
    assert {r["status"] for r in before.values()} == {"claude:new"}
    result = CliRunner().invoke(cli, ["import", "claude", "--all", "--json"])
    assert result.exit_code != 0  # two of three failed
    after = _rows()
    assert set(after) == {BAD_TIME, NO_RECORDS}  # the good one is omp's now: not listed as foreign
    assert after[BAD_TIME]["status"] == "claude:unimportable"
    assert after[BAD_TIME]["import_status"] == "unimportable"
    assert "RangeError" in after[BAD_TIME]["import_error"]
    assert after[NO_RECORDS]["status"] == "claude:unimportable"
    assert "no readable records" in after[NO_RECORDS]["import_error"]
    # the table says it too
    table = CliRunner().invoke(cli, ["list", "--foreign", "--all"])
    assert table.exit_code == 0 and table.output.count("claude:unimportable") == 2, table.output
    # a failure counts for the file as it was: once it changes, it is offered again
    path = Path(after[NO_RECORDS]["path"])
    with open(path, "ab") as f:
        f.write(_user("u9", None, "2025-09-02T10:00:00.000Z", str(home / "proj")))
    again = _rows()
    assert again[NO_RECORDS]["status"] == "claude:new" and again[NO_RECORDS]["import_error"] is None
    assert again[BAD_TIME]["status"] == "claude:unimportable"


def test_a_failure_before_a_successful_import_of_the_same_file_is_forgotten(home: Path) -> None:
    """An older converter failed on the file; a newer one imported it as it is. When that omp
    session is deleted, the source is ``new`` again, not ``unimportable``: the import since proved
    the failure stale."""
    from omp_session.foreign.filetimes import file_times
    from omp_session.foreign.ledger import Ledger, LedgerFailure

    path = Path(_rows()[GOOD]["path"])
    times = file_times(str(path), birth=False)
    ledger = Ledger()
    with ledger.locked():
        ledger.add(LedgerFailure(source="claude", source_id=GOOD, source_path=str(path), size=times.size,
                                 mtime_ns=times.mtime_ns, failed="an older version could not", failed_at="x"))
    assert _rows()[GOOD]["status"] == "claude:unimportable"
    result = CliRunner().invoke(cli, ["import", "claude", GOOD, "--json"])
    assert result.exit_code == 0, result.output
    session = json.loads(result.stdout)["sessions"][0]["session"]
    assert GOOD not in _rows()
    os.unlink(session)
    row = _rows()[GOOD]
    assert row["status"] == "claude:new" and row["import_error"] is None, row
