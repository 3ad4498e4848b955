"""Following a live session file (follow.py) and ``omp-session tail`` (issue 5; spec S1.2.7, S6.1, S8.2, S8.4)."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import builders
from builders import tool_result, user
from omp_session.cli.tail import tail
from omp_session.format.blobs import MemoryBlobStore
from omp_session.js import codec
from omp_session.ops.follow import (
    Appended,
    BranchSwitch,
    Created,
    Deleted,
    Follower,
    Replaced,
    Skipped,
    TitleChanged,
    Truncated,
    Unreadable,
)
from omp_session.write.manager import SessionManager

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"


run = partial(builders.run, tail)


def assistant(text: str, *, call: str | None = None) -> dict[str, Any]:
    """An answer; with ``call``, one that calls that tool (id c1) on a.py."""
    content: list[dict[str, Any]] = [builders.text(text)]
    if call is not None:
        content.append({"type": "toolCall", "id": "c1", "name": call, "arguments": {"path": "a.py"}})
    return builders.assistant(content, stop_reason="toolUse" if call else "stop")


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return agent


@pytest.fixture
def sm(tmp_path: Path) -> SessionManager:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), blob_store=MemoryBlobStore())
    manager.append_message(user("hello"))
    manager.append_message(assistant("hi"))  # the file is written now (S8.1)
    return manager


def path_of(sm: SessionManager) -> str:
    path = sm.get_session_file()
    assert path is not None and os.path.exists(path)
    return path


def started(sm: SessionManager) -> Follower:
    f = Follower(path_of(sm))
    assert [e["message"]["role"] for e in f.initial()] == ["user", "assistant"]
    return f


def ids(entries: list[Any]) -> list[Any]:
    return [e.get("id") for e in entries]


# ----- appends ---------------------------------------------------------------------------------

def test_appended_entries_are_reported_one_poll_at_a_time(sm: SessionManager) -> None:
    f = started(sm)
    assert f.poll() == []
    u = sm.append_message(user("next"))
    a = sm.append_message(assistant("done", call="read"))
    events = f.poll()
    assert [type(e) for e in events] == [Appended, Appended]
    assert [e.entry["id"] for e in events if isinstance(e, Appended)] == [u, a]
    assert f.leaf_id == a and ids(f.branch)[-2:] == [u, a]
    assert f.poll() == []
    assert f.pending_bytes == 0 and f.offset == os.path.getsize(path_of(sm))


def test_a_partial_last_line_waits_for_its_lf(sm: SessionManager) -> None:
    f = started(sm)
    path = path_of(sm)
    entry = {"type": "custom", "id": "c0ffee01", "parentId": sm.get_leaf_id(), "timestamp": "2026-01-01T00:00:00Z",
             "customType": "x"}
    line = codec.dumps_line(entry)
    assert line.endswith(b"\n")
    with open(path, "ab") as out:
        out.write(line[:10])
    assert f.poll() == [] and f.pending_bytes == 10
    with open(path, "ab") as out:
        out.write(line[10:-1])  # complete JSON, but no LF yet: still held back
    assert f.poll() == [] and f.pending_bytes == len(line) - 1
    with open(path, "ab") as out:
        out.write(b"\n")
    assert f.poll() == [Appended(entry)]
    assert f.leaf_id == "c0ffee01" and f.pending_bytes == 0


def test_initial_holds_back_an_unterminated_last_line(sm: SessionManager) -> None:
    path = path_of(sm)
    with open(path, "ab") as out:
        out.write(b'{"type":"custom","id":"late","parentId":"x"}')
    f = Follower(path)
    assert len(f.initial()) == 2 and f.pending_bytes > 0
    with open(path, "ab") as out:
        out.write(b"\n")
    [event] = f.poll()
    assert isinstance(event, BranchSwitch) and event.new_leaf == "late" and event.fork_id is None


def test_a_failed_append_truncated_back_is_not_a_truncation(sm: SessionManager) -> None:
    f = started(sm)
    path = path_of(sm)
    size = os.path.getsize(path)
    with open(path, "ab") as out:
        out.write(b'{"type":"mess')
    assert f.poll() == []
    os.truncate(path, size)  # what omp does after a write error (S8.2)
    assert f.poll() == [] and f.pending_bytes == 0
    u = sm.append_message(user("again"))
    assert [e.entry["id"] for e in f.poll() if isinstance(e, Appended)] == [u]


def test_malformed_lines_are_skipped_like_omp(sm: SessionManager) -> None:
    f = started(sm)
    path = path_of(sm)
    size = os.path.getsize(path)
    with open(path, "ab") as out:
        out.write(b"not json\n\n")
    u = sm.append_message(user("after"))
    events = f.poll()
    assert events[0] == Skipped(size, 8)
    assert isinstance(events[1], Appended) and events[1].entry["id"] == u and len(events) == 2


# ----- branches ----------------------------------------------------------------------------------

def test_an_entry_whose_parent_is_earlier_switches_branch(sm: SessionManager) -> None:
    first = ids(sm.get_branch())[0]
    b = sm.append_message(user("b1"))
    f = Follower(path_of(sm))
    f.initial()
    old_leaf = f.leaf_id
    assert old_leaf == b
    sm.branch(first)
    c = sm.append_message(user("other way"))
    [event] = f.poll()
    assert isinstance(event, BranchSwitch)
    assert (event.old_leaf, event.new_leaf, event.fork_id) == (b, c, first)
    assert ids(event.entries) == [c]
    assert ids(f.branch) == [first, c]
    d = sm.append_message(assistant("ok"))
    assert [type(e) for e in f.poll()] == [Appended] and ids(f.branch) == [first, c, d]


def test_switching_back_to_an_old_branch_lists_it_from_the_fork(sm: SessionManager) -> None:
    first, second = ids(sm.get_branch())
    sm.branch(first)
    other = sm.append_message(user("other"))
    f = Follower(path_of(sm))
    assert ids(f.initial()) == [first, other]
    sm.branch(second)  # back to the older branch: the next append continues it
    tip = sm.append_message(user("continue"))
    [event] = f.poll()
    assert isinstance(event, BranchSwitch) and event.fork_id == first
    assert ids(event.entries) == [second, tip]


def test_a_record_without_id_empties_the_branch_and_never_raises(sm: SessionManager) -> None:
    f = started(sm)
    with open(path_of(sm), "ab") as out:
        out.write(b"42\n[1,2]\n")
    events = f.poll()
    assert len(events) == 2 and all(isinstance(e, BranchSwitch) for e in events)
    assert f.leaf_id is None and f.branch == []


# ----- truncation, replacement, deletion, title -------------------------------------------------------

def test_truncation_rereads_the_file(sm: SessionManager) -> None:
    path = path_of(sm)
    keep = os.path.getsize(path)
    extra = sm.append_message(user("to be cut"))
    f = Follower(path)
    assert ids(f.initial())[-1] == extra
    os.truncate(path, keep)
    [event] = f.poll()
    assert isinstance(event, Truncated)
    assert event.old_leaf == extra and event.new_leaf == sm.get_branch()[1]["id"]
    assert event.entries == [] and event.branch_length == 2  # the shorter branch is a prefix of the old
    assert ids(f.branch) == ids(sm.get_branch())[:2]


def test_bytes_rewritten_in_place_count_as_truncation(sm: SessionManager) -> None:
    f = started(sm)
    path = path_of(sm)
    data = Path(path).read_bytes()
    assert data.endswith(b'"timestamp":2}}\n')
    changed = data[:-4] + b"3}}\n"  # what another tool's truncate-and-rewrite leaves near the end
    with open(path, "r+b") as out:  # same inode, same size, other bytes just before the read offset
        out.write(changed)
    [event] = f.poll()
    assert isinstance(event, Truncated) and event.entries == []  # same ids: nothing new to list
    assert f.branch[-1]["message"]["timestamp"] == 3


def test_atomic_replacement_is_noticed(sm: SessionManager) -> None:
    f = started(sm)
    path = path_of(sm)
    tmp = path + ".tmp"
    Path(tmp).write_bytes(Path(path).read_bytes() + codec.dumps_line(
        {"type": "custom", "id": "n1", "parentId": sm.get_leaf_id(), "customType": "x"}))
    os.replace(tmp, path)
    [event] = f.poll()
    assert isinstance(event, Replaced) and event.new_leaf == "n1" and ids(event.entries) == ["n1"]
    assert event.branch_length == 3


def test_rewrite_entries_by_omp_is_a_replacement(sm: SessionManager) -> None:
    f = started(sm)
    leaf = sm.get_leaf_id()
    sm.rewrite_entries()  # temp file + rename (S8.4)
    [event] = f.poll()
    assert isinstance(event, Replaced) and event.new_leaf == leaf and event.entries == []
    u = sm.append_message(user("after the rewrite"))
    assert [e.entry["id"] for e in f.poll() if isinstance(e, Appended)] == [u]


def test_title_slot_rewritten_in_place(sm: SessionManager) -> None:
    f = started(sm)
    assert f.title is None
    ino = os.stat(path_of(sm)).st_ino
    assert sm.set_session_name("Fix the importer", "user")
    assert os.stat(path_of(sm)).st_ino == ino  # in place (S1.2.7), not a rewrite
    events = f.poll()
    assert [type(e) for e in events] == [Appended, TitleChanged]
    assert isinstance(events[0], Appended) and events[0].entry["type"] == "title_change"
    assert events[1] == TitleChanged(None, "Fix the importer") and f.title == "Fix the importer"
    assert sm.set_session_name("Second name", "user")
    assert f.poll()[-1] == TitleChanged("Fix the importer", "Second name")
    assert f.poll() == []


def test_a_missing_file_is_waited_for(tmp_path: Path) -> None:
    sm = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), blob_store=MemoryBlobStore())
    path = sm.get_session_file()
    assert path is not None and not os.path.exists(path)
    f = Follower(path)
    assert f.initial() == [] and f.session is None
    assert f.poll() == []
    sm.append_message(user("hello"))
    assert f.poll() == []  # still in memory (S8.1)
    sm.append_message(assistant("hi"))
    [event] = f.poll()
    assert isinstance(event, Created) and [e["type"] for e in event.entries] == ["message", "message"]


def test_a_file_without_a_complete_header_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    header = codec.dumps_line({"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/"})
    path.write_bytes(header[:20])
    f = Follower(path)
    assert f.initial() == [] and f.poll() == []
    with open(path, "ab") as out:
        out.write(header[20:] + b'{"type":"custom","id":"e1","parentId":null}\n')
    [event] = f.poll()
    assert isinstance(event, Created) and ids(event.entries) == ["e1"]


def test_deleted_then_recreated(sm: SessionManager) -> None:
    f = started(sm)
    path = path_of(sm)
    data = Path(path).read_bytes()
    os.unlink(path)
    assert f.poll() == [Deleted()]
    assert f.poll() == []  # reported once
    Path(path).write_bytes(data)
    [event] = f.poll()
    assert isinstance(event, Replaced) and event.entries == [] and event.branch_length == 2


def test_an_unreadable_path_is_reported_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    f = Follower(path)
    assert f.initial() == []
    path.mkdir()
    assert [type(e) for e in f.poll()] == [Unreadable]
    assert f.poll() == []


def test_events_loop_is_bounded(sm: SessionManager) -> None:
    f = started(sm)
    u = sm.append_message(user("x"))
    slept: list[float] = []
    events = list(f.events(0.25, max_polls=3, sleep=slept.append))
    assert slept == [0.25, 0.25, 0.25] and [e.entry["id"] for e in events if isinstance(e, Appended)] == [u]


# ----- the command -----------------------------------------------------------------------------------

def test_tail_prints_the_end_of_the_current_branch() -> None:
    code, out, _ = run(str(SAMPLE), "-n", "3")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4 and "earlier entries" in lines[0]
    assert "assistant" in lines[-1] and "Done: csv.reader" in lines[-1]
    assert "compaction" in lines[-2]


def test_tail_json_prints_the_raw_branch_entries() -> None:
    code, out, _ = run(str(SAMPLE), "--json", "-n", "100")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and rows[-1]["id"] == "fac25287"
    assert not {r["id"] for r in rows} & {"bf760380", "0c843b62", "d1e979c8", "a1b45091"}  # other branches
    assert out.splitlines()[-1].encode() == SAMPLE.read_bytes().splitlines()[-1]


def test_tail_previews_tool_calls_and_results(sm: SessionManager) -> None:
    sm.append_message(assistant("let me look", call="read"))
    sm.append_message(tool_result("line one\nline two " + "x" * 200, name="read"))
    code, out, _ = run(path_of(sm), "-n", "2")
    lines = out.splitlines()
    assert code == 0 and "→ read" in lines[-2] and "toolResult read: line one line two" in lines[-1]
    assert len(lines[-1]) < 140


def test_tail_missing_file_is_one_line_exit_1(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "nope.jsonl"))
    assert code == 1 and err.startswith("omp-session: ") and err.count("\n") == 1


def test_tail_follow_prints_appends_and_notices(sm: SessionManager, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ids(sm.get_branch())[0]
    script = [lambda: sm.append_message(user("live entry")),
              lambda: (sm.branch(first), sm.append_message(user("forked"))),
              lambda: sm.rewrite_entries(),
              lambda: None]
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    code, out, _ = run(path_of(sm), "-f", "--max-polls", "4", "--interval", "0.01")
    assert code == 0, out
    assert "live entry" in out and "branch switch" in out and "forked" in out and "file replaced" in out


def test_tail_follow_json_keeps_stdout_entries_only(sm: SessionManager, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ids(sm.get_branch())[0]
    script = [lambda: (sm.branch(first), sm.append_message(user("forked")))]
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    code, out, err = run(path_of(sm), "-f", "--json", "--max-polls", "1", "-n", "0")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and [r["message"]["content"] for r in rows] == ["forked"]
    assert "branch switch" in err


def test_tail_follow_waits_for_a_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: None)
    code, out, _ = run(str(tmp_path / "later.jsonl"), "-f", "--max-polls", "2")
    assert code == 0 and "waiting for" in out


def test_tail_follow_ctrl_c_exits_0(sm: SessionManager, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(_s: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("omp_session.cli.tail._sleep", interrupt)
    result = CliRunner().invoke(tail, [path_of(sm), "-f"])
    assert result.exit_code == 0 and "Traceback" not in result.output and "Aborted" not in result.output


def test_a_title_change_on_a_file_without_slot_is_a_replacement(tmp_path: Path) -> None:
    path = tmp_path / "legacy.jsonl"
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(tmp_path)}
    path.write_bytes(codec.dumps_line(header) + codec.dumps_line(
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": user("hello")}))
    f = Follower(path)
    assert ids(f.initial()) == ["u1"]
    manager = SessionManager.open(str(path), blob_store=MemoryBlobStore())
    assert manager.set_session_name("Named", "user")  # no slot: omp rewrites the whole file (S1.2.7)
    events = f.poll()
    assert [type(e) for e in events] == [Replaced, TitleChanged]
    assert events[1] == TitleChanged(None, "Named") and ids(f.branch)[-1] == manager.get_leaf_id()
    manager.close()


def test_tail_reads_and_follows_a_sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:{tmp_path / 'store.db'}"
    stored = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), storage=url,
                                   blob_store=MemoryBlobStore())
    stored.append_message(user("hello"))
    stored.append_message(assistant("stored reply"))
    stored.flush()
    key = stored.get_session_file()
    assert key is not None and not os.path.exists(key)  # it lives in the database only
    code, out, _ = run(key, "--store", url, "-n", "1")
    assert code == 0 and "stored reply" in out and "hello" not in out
    first = ids(stored.get_branch())[0]
    script = [lambda: (stored.append_message(user("live in the store")), stored.flush()),
              lambda: None,
              lambda: (stored.branch(first), stored.append_message(user("forked in the store")), stored.flush())]
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    code, out, _ = run(key, "--store", url, "-f", "--max-polls", "3", "-n", "0")
    assert code == 0, out
    assert "live in the store" in out and "branch changed" in out and "forked in the store" in out
    assert out.count("live in the store") == 1
    code, _, err = run("nope", "--store", url)
    assert code == 1 and err.startswith("omp-session: ") and "no session" in err
