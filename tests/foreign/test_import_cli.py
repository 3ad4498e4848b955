"""``omp-session import``: idempotence, --update, --dry-run, filters, bad input, --json; the
reader's reports; where sources are found; the listing of not-yet-imported sessions."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from omp_session.cli._group import cli
from omp_session.foreign.batch import list_foreign
from omp_session.foreign.codex import list_codex
from omp_session.foreign.jsonl import read_records
from omp_session.foreign.sources import claude_root, codex_root

UUID = "11111111-2222-4333-8444-555555555555"


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode() + b"\n"


def _claude_session(home: Path, cwd: Path | str, sid: str = UUID, extra: bytes = b"") -> Path:
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(
        _line({"type": "user", "uuid": "u1", "parentUuid": None, "cwd": str(cwd), "timestamp": "2026-01-02T03:04:05.000Z",
               "message": {"role": "user", "content": "hello"}})
        + _line({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-02T03:04:06.000Z",
                 "message": {"model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "hi"}],
                             "stop_reason": "end_turn"}})
        + extra)
    return path


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["import", *args], catch_exceptions=False)


def _sessions() -> list[Path]:
    root = Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions"
    return sorted(root.rglob("*.jsonl")) if root.exists() else []


def test_second_run_imports_nothing_and_update_makes_a_new_session(home: Path) -> None:
    src = _claude_session(home, home / "proj")
    first = _run("claude")
    assert first.exit_code == 0, first.output
    assert "1 imported" in first.output
    [made] = _sessions()
    assert made.parent.name == "-proj"  # the project folder of ~/proj
    lines = made.read_bytes().splitlines()
    assert json.loads(lines[-1])["data"] == {"source": "claude", "sourceId": UUID, "sourcePath": str(src),
                                             "sourceCwd": str(home / "proj")}
    before = made.read_bytes()

    second = _run("claude")
    assert second.exit_code == 0 and "1 already imported" in second.output
    assert _sessions() == [made]

    with src.open("ab") as f:  # the source grows
        f.write(_line({"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"content": "more"}}))
    third = _run("claude")
    assert third.exit_code == 0 and "1 changed" in third.output and "--update" in third.output
    assert _sessions() == [made]

    fourth = _run("claude", "--update")
    assert fourth.exit_code == 0 and "1 imported" in fourth.output
    assert len(_sessions()) == 2 and made.read_bytes() == before  # never overwritten


def test_dry_run_writes_nothing(home: Path) -> None:
    _claude_session(home, home / "proj")
    result = _run("claude", "--dry-run")
    assert result.exit_code == 0 and "would import" in result.output
    assert _sessions() == []
    assert "1 imported" in _run("claude").output  # the dry run recorded nothing either


def test_project_filter_and_all(home: Path) -> None:
    (home / "other").mkdir()
    _claude_session(home, home / "other", sid="22222222-2222-4333-8444-555555555555")
    assert "nothing to do" in _run("claude").output  # only the current directory's project
    assert "1 would import" in _run("claude", "--project", str(home / "other"), "--dry-run").output
    assert "1 imported" in _run("claude", "--all").output
    assert _run("claude", "--all", "--project", ".").exit_code == 2


def test_bad_input_is_reported_per_session_and_the_rest_imported(home: Path) -> None:
    good = _claude_session(home, home / "proj")
    folder = good.parent
    (folder / "33333333-2222-4333-8444-555555555555.jsonl").write_bytes(b"this is not json\n{nor this\n")
    _claude_session(home, home / "proj", sid="44444444-2222-4333-8444-555555555555",
                    extra=b'{"type":"x-new-kind","uuid":"z"}\n[1]\n{"type":"user","message":{"content":"cut')
    result = _run("claude", "--all", "-v")  # (the unreadable one's project comes from its folder name)
    assert result.exit_code == 1
    out = result.output
    assert "FAILED claude 33333333" in out and "contains no readable records" in out
    assert "44444444-2222-4333-8444-555555555555.jsonl:3: unknown record kind 'x-new-kind'" in out
    assert ":4: a JSON array, not an object" in out
    assert ":5: truncated last line" in out
    assert "2 imported, 1 failed" in out
    assert len(_sessions()) == 2


def test_gone_project_lands_in_the_current_directory(home: Path) -> None:
    _claude_session(home, "/no/such/project")
    result = _run("claude", "--all", "--json")
    assert result.exit_code == 0
    report = json.loads(result.output)
    [one] = report["sessions"]
    assert one["moved_to_current_dir"] is True and one["session_cwd"] == str(home / "proj")
    [made] = _sessions()
    assert json.loads(made.read_bytes().splitlines()[1])["cwd"] == str(home / "proj")


def test_source_by_id_prefix_and_unknown(home: Path) -> None:
    _claude_session(home, home / "proj")
    assert "1 imported" in _run("claude", "1111").output
    missing = _run("claude", "9999")
    assert missing.exit_code == 1 and "9999: no such session found" in missing.output


def test_list_foreign_shows_what_is_not_imported_yet(home: Path) -> None:
    _claude_session(home, home / "proj")
    assert [(i.id, s) for i, s in list_foreign(("claude",))] == [(UUID, "new")]
    _run("claude")
    assert list_foreign(("claude",)) == []
    assert [s for _i, s in list_foreign(("claude",), include_imported=True)] == ["imported"]


def test_reader_keeps_omps_records_and_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a":1}\n\n{"b":"\xff"}\r\n"s"\n{"c":')
    read = read_records(path)
    assert [(r, n) for r, n in read.records] == [({"a": 1}, 1), ({"b": "\ufffd"}, 3)]
    assert [(p.line, p.message.split(":")[0]) for p in read.problems] == [(4, "a JSON string, not an object"),
                                                                          (5, "truncated last line (5 bytes without an end)")]


def test_sources_follow_omps_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("CODEX_HOME", "/elsewhere")  # omp ignores it
    assert claude_root() == str(tmp_path / ".claude")
    assert codex_root() == str(tmp_path / ".codex")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "  relative/dir \t")
    assert claude_root() == os.path.abspath("relative/dir")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "   ")
    assert claude_root() == str(tmp_path / ".claude")


def test_codex_state_database_is_read_first(tmp_path: Path) -> None:
    root = tmp_path / ".codex"
    (root / "sessions").mkdir(parents=True)
    rollout = root / "sessions" / f"rollout-2026-01-01T00-00-00-{UUID}.jsonl"
    rollout.write_bytes(_line({"type": "session_meta", "payload": {"id": UUID, "cwd": "/p",
                                                                   "timestamp": "2026-01-01T00:00:00Z"}}))
    db = sqlite3.connect(root / "state_5.sqlite")
    db.execute("CREATE TABLE threads (id TEXT, rollout_path TEXT, created_at INTEGER, updated_at INTEGER, cwd TEXT, "
               "title TEXT, first_user_message TEXT)")
    db.executemany("INSERT INTO threads VALUES (?,?,?,?,?,?,?)", [
        ("t1", "sessions/../sessions/x.jsonl", 1767225600, 1767225700, "/db/cwd", "From the DB", "hi"),
        ("t2", "/abs/y.jsonl", None, 1767225800000, "/db/cwd", None, None),
        ("t3", "z.jsonl", 1, 2, "", "no cwd: skipped", None)])
    db.commit()
    db.close()
    got = list_codex(str(root))
    assert [(s.id, s.path, s.created_ms, s.modified_ms, s.title) for s in got] == [
        ("t2", "/abs/y.jsonl", 1767225800000, 1767225800000, None),
        ("t1", str(root / "sessions" / "x.jsonl"), 1767225600000, 1767225700000, "From the DB")]
    (root / "state_9.sqlite").write_bytes(b"not a database")  # the newest wins, and falls back to the rollouts
    assert [s.id for s in list_codex(str(root))] == [UUID]
