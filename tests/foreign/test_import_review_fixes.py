"""Bugs found reviewing ``omp-session import`` (each checked against omp 18.2.3's importer through
``omp-reference import`` before it was fixed here)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from omp_session.cli._group import cli
from omp_session.foreign.claude import list_claude
from omp_session.foreign.codex import list_codex
from omp_session.foreign.convert_claude import convert_claude
from omp_session.foreign.convert_codex import convert_codex
from omp_session.foreign.filetimes import file_times
from omp_session.foreign.sources import ForeignSession
from omp_session.js.date import to_iso

PROJ_UUID = "11111111-2222-4333-8444-555555555555"
CODEX_ID = "0199aaaa-0000-7000-8000-000000000001"


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode() + b"\n"


def _claude_info(path: Path, cwd: str = "/p") -> ForeignSession:
    return ForeignSession(source="claude", id=path.stem, path=str(path), cwd=cwd, created_ms=0.0, modified_ms=0.0)


def _codex_info(path: Path, created_ms: float = 1_000.0) -> ForeignSession:
    return ForeignSession(source="codex", id=CODEX_ID, path=str(path), cwd="/p", created_ms=created_ms,
                          modified_ms=0.0)


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["import", *args], catch_exceptions=False)


# --- an infinite number (JSON 1e400) is not a time: omp's Number.isFinite falls back ----------------

def test_claude_infinite_timestamp_falls_back_to_the_file_time(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_line({"type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2025-01-01T00:00:00Z",
                            "message": {"content": "a"}})
                     + b'{"type":"user","uuid":"u2","parentUuid":"u1","timestamp":1e400,"message":{"content":"b"}}\n')
    out = convert_claude(_claude_info(path))
    mtime = file_times(path).mtime_ms
    second = out.entries[1]
    assert second["timestamp"] == to_iso(mtime)
    assert second["message"]["timestamp"] == mtime


def test_claude_history_ignores_an_infinite_time(tmp_path: Path) -> None:
    root = tmp_path / ".claude"
    folder = root / "projects" / "-p"
    folder.mkdir(parents=True)
    (folder / f"{PROJ_UUID}.jsonl").write_bytes(_line({"type": "user", "cwd": "/p", "message": {"content": "a"}}))
    (root / "history.jsonl").write_bytes(
        f'{{"sessionId":"{PROJ_UUID}","timestamp":1e400,"display":"from history","project":"/h"}}\n'.encode())
    [info] = list_claude(str(root))
    assert info.cwd == "/p" and info.first_message is None  # the history line is skipped, as omp skips it
    assert info.modified_ms == info.modified_ms and info.created_ms == info.created_ms  # not NaN


def test_codex_infinite_timestamp_falls_back_to_the_previous_time(tmp_path: Path) -> None:
    path = tmp_path / f"rollout-{CODEX_ID}.jsonl"
    path.write_bytes(_line({"type": "session_meta", "timestamp": "2025-01-02T00:00:00.000Z",
                            "payload": {"id": CODEX_ID, "cwd": "/p"}})
                     + b'{"timestamp":1e400,"type":"response_item","payload":{"type":"message","role":"user",'
                       b'"content":[{"type":"input_text","text":"e"}]}}\n')
    out = convert_codex(_codex_info(path))
    [entry] = out.entries
    assert entry["timestamp"] == "2025-01-02T00:00:00.000Z"  # the running fallback: the meta record's time


def test_codex_state_database_infinite_times_are_epoch(tmp_path: Path) -> None:
    root = tmp_path / ".codex"
    root.mkdir()
    db = sqlite3.connect(root / "state_5.sqlite")
    db.execute("CREATE TABLE threads (id, rollout_path, created_at, updated_at, cwd, title, first_user_message)")
    db.execute("INSERT INTO threads VALUES (?,?,?,?,?,?,?)",
               (CODEX_ID, "/r.jsonl", float("-inf"), float("inf"), "/p", None, None))
    db.commit()
    db.close()
    [info] = list_codex(str(root))
    assert (info.created_ms, info.modified_ms) == (0, 0)  # omp: dateFromEpoch(...) -> new Date(0)


# --- the ledger: two runs at once, damaged lines ----------------------------------------------------

def _claude_home(home: Path, cwd: Path, sid: str = PROJ_UUID) -> Path:
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(_line({"type": "user", "uuid": "u1", "parentUuid": None, "cwd": str(cwd),
                            "timestamp": "2026-01-02T03:04:05.000Z", "message": {"content": "hello"}}))
    return path


def _omp_sessions() -> list[Path]:
    root = Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions"
    return sorted(root.rglob("*.jsonl")) if root.exists() else []


def test_two_runs_started_together_import_a_source_once(home: Path, tmp_path: Path) -> None:
    # Two runs read the ledger when they start; the second must see what the first recorded
    # since, not import the same source a second time.
    from omp_session.foreign.batch import find_sessions, import_sessions
    from omp_session.foreign.ledger import Ledger

    _claude_home(home, home / "proj")
    ledger_file = tmp_path / "ledger.jsonl"
    first, second = Ledger(ledger_file), Ledger(ledger_file)
    found = find_sessions("claude")
    [a] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=first)
    [b] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=second)
    assert (a.status, b.status) == ("imported", "already imported")
    assert len(_omp_sessions()) == 1


def test_a_damaged_ledger_line_is_skipped_not_a_crash(home: Path) -> None:
    from omp_session.foreign.ledger import ledger_path

    src = _claude_home(home, home / "proj")
    assert _run("claude").exit_code == 0
    [made] = _omp_sessions()
    good = ledger_path().read_bytes()
    record = json.loads(good)
    damaged = [
        {**record, "source_path": ["not", "a", "path"]},  # unhashable
        {**record, "session": None},  # os.path.exists(None) raises TypeError
        {**record, "session": 3},  # os.path.exists(3) asks whether fd 3 is open
        {**record, "size": "12"},
        {**record, "mtime_ns": True},
        [1, 2],
    ]
    ledger_path().write_bytes(b"".join(_line(d) for d in damaged) + good)
    result = _run("claude", "-v")
    assert result.exit_code == 0, result.output
    assert "1 already imported" in result.output and _omp_sessions() == [made]
    # a damaged line that names the source with a live fd as its session must not hide it either
    ledger_path().write_bytes(_line({**record, "session": 3}))
    assert "1 imported" in _run("claude").output
    assert src.exists()


def test_a_ledger_line_cut_short_does_not_swallow_the_next_one(home: Path) -> None:
    from omp_session.foreign.ledger import ledger_path

    _claude_home(home, home / "proj")
    ledger_path().parent.mkdir(parents=True, exist_ok=True)
    ledger_path().write_bytes(b'{"source": "claude", "source_id": "cut sh')  # a crash mid-append
    assert "1 imported" in _run("claude").output
    assert "1 already imported" in _run("claude", "-v").output


def test_the_ledger_lock_is_held_while_a_source_is_imported(tmp_path: Path) -> None:
    import fcntl

    from omp_session.foreign.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.jsonl")
    with ledger.locked():
        fd = os.open(ledger.path, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    fd = os.open(ledger.path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released
    finally:
        os.close(fd)


def test_a_ledger_that_cannot_be_written_fails_each_import_in_one_line(home: Path) -> None:
    from omp_session.foreign.ledger import ledger_path

    _claude_home(home, home / "proj")
    ledger_path().mkdir(parents=True)  # a directory where the ledger file goes
    result = _run("claude")
    assert result.exit_code == 1
    assert "FAILED claude" in result.output and "cannot record the import in the ledger" in result.output
    assert _omp_sessions() == []  # nothing imported that the next run would import again
    assert "1 would import" in _run("claude", "--dry-run").output


# --- where the file goes --------------------------------------------------------------------------

def test_the_session_dir_variable_does_not_move_an_import(home: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # omp's importer (persistForeignSession from the session picker) passes no sessionDir: the
    # copy goes to its project's folder whatever PI_CODING_AGENT_SESSION_DIR says (that variable
    # is only the default of omp's --session-dir for the session it runs).
    _claude_home(home, home / "proj")
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(elsewhere))
    assert _run("claude").exit_code == 0
    [made] = _omp_sessions()
    assert made.parent.name == "-proj"
    assert not elsewhere.exists() or not any(elsewhere.iterdir())


# --- the Codex state database under a path with URI characters -------------------------------------

@pytest.mark.parametrize("folder", ["a#b", "a?b", "a%20b"])
def test_codex_state_database_is_read_whatever_its_path(tmp_path: Path, folder: str) -> None:
    root = tmp_path / folder / ".codex"
    (root / "sessions").mkdir(parents=True)
    rollout = root / "sessions" / f"rollout-2026-01-01T00-00-00-{CODEX_ID}.jsonl"
    rollout.write_bytes(_line({"type": "session_meta", "payload": {"id": CODEX_ID, "cwd": "/from/rollout"}}))
    db = sqlite3.connect(root / "state_5.sqlite")
    db.execute("CREATE TABLE threads (id, rollout_path, created_at, updated_at, cwd, title, first_user_message)")
    db.execute("INSERT INTO threads VALUES (?,?,?,?,?,?,?)",
               (CODEX_ID, str(rollout), 1767225600, 1767225700, "/from/db", "From the DB", "hi"))
    db.commit()
    db.close()
    [info] = list_codex(str(root))
    assert (info.cwd, info.title) == ("/from/db", "From the DB")


# --- listing a rollout reads its first record, not the whole file ---------------------------------

def test_the_first_record_is_read_without_reading_the_rest(tmp_path: Path) -> None:
    # A FIFO whose writer stays open after the first line: reading to the end would wait for it.
    import threading

    from omp_session.foreign.jsonl import read_records

    fifo = tmp_path / "rollout.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()
    waited_out: list[bool] = []

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(b'not json\n{"type":"session_meta","payload":{"cwd":"/p"}}\n{"more":')
            f.flush()
            waited_out.append(not done.wait(30))  # a safety net: the reader is expected long before

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        read = read_records(fifo, first_only=True)
    finally:
        done.set()
        thread.join()
    assert waited_out == [False]
    assert read.records == [({"type": "session_meta", "payload": {"cwd": "/p"}}, 2)]


# --- the command line -------------------------------------------------------------------------------

def test_from_a_folder_that_does_not_exist_is_a_usage_error(home: Path, tmp_path: Path) -> None:
    # a mistyped --from used to list nothing and say "nothing to do" with exit status 0
    result = _run("claude", "--from", str(tmp_path / "no-such-folder"), "--all")
    assert result.exit_code == 2
    assert "no-such-folder" in result.output



def test_a_run_killed_right_after_placing_a_session_does_not_import_it_twice(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The ledger is written before the session takes its name: a run that dies between the two
    # leaves a record of a session that exists (counted) or of one that does not (imported again),
    # never a session the next run does not know about.
    from omp_session.foreign import batch
    from omp_session.foreign.batch import find_sessions, import_sessions
    from omp_session.foreign.ledger import Ledger

    _claude_home(home, home / "proj")
    real = batch.place_staged

    def place_then_die(staged: Any) -> str:
        real(staged)
        raise SystemExit("killed")  # (a worker killed here: nothing after this line runs)

    monkeypatch.setattr(batch, "place_staged", place_then_die)
    found = find_sessions("claude")
    with pytest.raises(SystemExit):
        list(import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(tmp_path / "ledger.jsonl")))
    [made] = _omp_sessions()
    monkeypatch.setattr(batch, "place_staged", real)
    [again] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(tmp_path / "ledger.jsonl"))
    assert again.status == "already imported" and _omp_sessions() == [made]


def test_a_session_that_cannot_be_placed_is_imported_by_the_next_run(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.errors import SessionError
    from omp_session.foreign import batch
    from omp_session.foreign.batch import find_sessions, import_sessions
    from omp_session.foreign.ledger import Ledger

    _claude_home(home, home / "proj")
    real = batch.place_staged

    def refuse(staged: Any) -> str:
        batch.discard_staged(staged)
        raise SessionError(f"{staged.path}: cannot write: No space left on device")

    monkeypatch.setattr(batch, "place_staged", refuse)
    found = find_sessions("claude")
    [failed] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(tmp_path / "ledger.jsonl"))
    assert failed.status == "failed" and _omp_sessions() == []
    monkeypatch.setattr(batch, "place_staged", real)
    [done] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(tmp_path / "ledger.jsonl"))
    assert done.status == "imported" and len(_omp_sessions()) == 1
