"""SessionManager: what it writes, when, and how it keeps data safe (spec S3, S8, S10)."""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import omp_session
from builders import ASSISTANT, user
from omp_session.errors import EditError, EntryNotFoundError, LockError, PersistenceError, WriteConflictError
from omp_session.format.blobs import BlobStore, MemoryBlobStore
from omp_session.format.title import build_title_slot
from omp_session.store.locking import lock_path
from omp_session.write.manager import SessionManager

USER = user()


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return agent


def lines(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def new(tmp_path: Path, **kw: Any) -> SessionManager:
    return SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), blob_store=MemoryBlobStore(), **kw)


# ----- what is written, and when -----------------------------------------------------------------

def test_a_new_session_is_written_at_its_first_assistant_message(tmp_path: Path) -> None:
    sm = new(tmp_path)
    path = sm.get_session_file()
    assert path is not None and Path(path).name.endswith(f"_{sm.get_session_id()}.jsonl")
    u = sm.append_message(USER)
    assert not os.path.exists(path)  # lazy (S8.1)
    a = sm.append_message(ASSISTANT)
    records = lines(path)
    assert [r["type"] for r in records] == ["title", "session", "message", "message"]
    assert len(Path(path).read_bytes().split(b"\n")[0]) == 255  # the 256-byte slot, LF included
    assert records[2]["id"] == u and records[3]["parentId"] == u and records[3]["id"] == a
    size = os.path.getsize(path)
    sm.append_message(USER)
    assert os.path.getsize(path) > size and len(lines(path)) == 5  # an append, not a rewrite
    sm.close()


def test_ensure_on_disk_writes_an_empty_session(tmp_path: Path) -> None:
    sm = new(tmp_path)
    sm.append_model_change("anthropic/claude", "smol")
    sm.ensure_on_disk()
    assert [r["type"] for r in lines(sm.get_session_file() or "")] == ["title", "session", "model_change"]


def test_entries_have_omps_key_order(tmp_path: Path) -> None:
    sm = new(tmp_path)
    sm.ensure_on_disk()
    u = sm.append_message(USER)
    sm.append_model_change("a/b")
    sm.append_thinking_level_change("high")
    sm.append_custom_entry("hud", {"n": 1})
    sm.append_custom_message_entry("ext", "injected", True, {"a": 1, "__queueChipText": "x"}, "robot")
    sm.append_compaction("sum", "short", u, 10, tokens_after=3, method="soft")
    sm.append_label_change(u, "start")
    sm.append_label_change(u)
    sm.branch_with_summary(None, "left")
    keys = [list(r) for r in lines(sm.get_session_file() or "")[2:]]
    envelope = ["type", "id", "parentId", "timestamp"]
    assert keys == [
        [*envelope, "message"],
        [*envelope, "model", "resolvedModelIsFallback"],
        [*envelope, "thinkingLevel", "configured"],
        ["type", "customType", "data", "id", "parentId", "timestamp"],
        ["type", "customType", "content", "display", "details", "attribution", "id", "parentId", "timestamp"],
        [*envelope, "summary", "shortSummary", "firstKeptEntryId", "tokensBefore", "tokensAfter", "method"],
        [*envelope, "targetId", "label"],
        [*envelope, "targetId"],
        [*envelope, "fromId", "summary"],
    ]
    custom = lines(sm.get_session_file() or "")[6]
    assert custom["details"] == {"a": 1} and custom["attribution"] == "agent"
    assert sm.get_label(u) is None and sm.get_leaf_id() == lines(sm.get_session_file() or "")[-1]["id"]


def test_branching_moves_the_leaf_and_append_to_branch_does_not(tmp_path: Path) -> None:
    sm = new(tmp_path)
    a = sm.append_message(USER)
    b = sm.append_message(ASSISTANT)
    side = sm.append_message_to_branch(USER, a)
    assert sm.get_leaf_id() == b and sm.get_entry(side)["parentId"] == a
    sm.branch(a)
    c = sm.append_message(USER)
    assert [e["id"] for e in sm.get_branch()] == [a, c]
    assert [e["id"] for e in sm.get_children(a)] == [b, side, c]
    sm.reset_leaf()
    root = sm.append_message(USER)
    assert sm.get_entry(root)["parentId"] is None
    assert len(sm.get_tree().roots) == 2


def test_reopen_gives_back_what_was_in_memory(tmp_path: Path) -> None:
    sm = new(tmp_path)
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    sm.set_session_name("My  session\n", "user")
    path = sm.get_session_file()
    context, entries = sm.build_session_context(), sm.get_entries()
    sm.close()
    again = SessionManager.open(path or "", blob_store=MemoryBlobStore())
    assert again.get_entries() == entries and again.build_session_context() == context
    assert again.get_session_name() == "My session" and again.get_header()["titleSource"] == "user"  # type: ignore[index]
    assert not again.set_session_name("auto title")  # an auto title never replaces the user's
    again.close()


def test_set_session_name_rewrites_the_slot_in_place(tmp_path: Path) -> None:
    sm = new(tmp_path)
    sm.append_message(ASSISTANT)
    path = Path(sm.get_session_file() or "")
    before = path.stat().st_ino
    sm.set_session_name("A title", "user")
    data = path.read_bytes()
    assert path.stat().st_ino == before  # written in place, not replaced
    assert json.loads(data.split(b"\n")[0])["title"] == "A title"
    assert lines(path)[-1]["type"] == "title_change"


def test_in_memory_sessions_never_write(tmp_path: Path) -> None:
    sm = SessionManager.in_memory(str(tmp_path), blob_store=MemoryBlobStore())
    sm.append_message(ASSISTANT)
    sm.ensure_on_disk()
    assert sm.get_session_file() is None and sm.fork() is None
    assert list(tmp_path.iterdir()) == []


def test_fork_and_branched_session(tmp_path: Path) -> None:
    sm = new(tmp_path)
    a = sm.append_message(USER)
    sm.append_label_change(a, "start")
    b = sm.append_message(ASSISTANT)
    first = sm.get_session_file()
    old_id = sm.get_session_id()
    branched = sm.create_branched_session(b)
    assert branched is not None and sm.get_session_file() == branched
    records = lines(branched)
    assert records[1]["parentSession"] == first
    assert [r["type"] for r in records[2:]] == ["message", "message", "label"]  # labels carried as new entries
    forked = sm.fork()
    assert forked is not None and forked[0] == branched
    header = lines(forked[1])[1]
    assert header["parentSession"] == sm.get_header()["parentSession"] != old_id  # type: ignore[index]
    assert SessionManager.fork_from(first or "", str(tmp_path), str(tmp_path / "s2"),
                                    blob_store=MemoryBlobStore()).get_header()["parentSession"] == old_id  # type: ignore[index]


def test_new_session_writes_its_header_at_once(tmp_path: Path) -> None:
    sm = new(tmp_path)
    sm.append_message(ASSISTANT)
    first = sm.get_session_file()
    second = sm.new_session(parent_session="p")
    assert second != first and lines(second or "")[1]["parentSession"] == "p"
    assert sm.get_entries() == []


def test_huge_strings_are_truncated_on_disk_only(tmp_path: Path) -> None:
    sm = new(tmp_path)
    big = "x" * 600_000
    k = sm.append_message({"role": "user", "content": big, "timestamp": 1})
    sm.append_message(ASSISTANT)
    assert sm.get_entry(k)["message"]["content"] == big
    on_disk = lines(sm.get_session_file() or "")[2]["message"]["content"]
    assert len(on_disk) == 500_000 and on_disk.endswith("[Session persistence truncated large content]")


def test_images_go_to_the_blob_store_and_come_back(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    sm = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), blob_store=store)
    data = "iVBORw0KGgo" + "A" * 2000
    sm.append_message({"role": "user", "content": [{"type": "image", "data": data, "mimeType": "image/png"}],
                       "timestamp": 1})
    sm.append_message(ASSISTANT)
    path = sm.get_session_file() or ""
    ref = lines(path)[2]["message"]["content"][0]["data"]
    assert ref.startswith("blob:sha256:") and ref[12:] in store
    again = SessionManager.open(path, blob_store=store)
    assert again.get_entries()[0]["message"]["content"][0]["data"].rstrip("=") == data.rstrip("=")


# ----- data safety -------------------------------------------------------------------------------

def saved(tmp_path: Path) -> Path:
    sm = new(tmp_path)
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    sm.close()
    return Path(sm.get_session_file() or "")


def test_an_append_completes_a_last_line_without_its_newline(tmp_path: Path) -> None:
    path = saved(tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    sm.append_message(USER)
    assert len(omp_session.open(path).entries) == 3


def test_a_bom_does_not_block_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z",'
                     b'"cwd":"/"}\n')
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    sm.append_message(USER)
    assert sm.set_session_name("named")  # no slot: a whole-file rewrite, which omp cannot do here
    sm.close()
    s = omp_session.open(path)
    assert s.name == "named" and len(s.entries) == 2


def test_a_slot_of_the_wrong_width_is_not_overwritten_in_place(tmp_path: Path) -> None:
    path = saved(tmp_path)
    data = path.read_bytes()
    slot_end = data.index(b"\n")
    path.write_bytes(data[:slot_end].replace(b'"pad":"', b'"pad":"    ') + data[slot_end:])  # 260 bytes
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    assert sm.set_session_name("title", "user")
    s = omp_session.open(path)
    assert s.header is not None and s.header["id"] == sm.get_session_id() and s.name == "title"
    assert len(path.read_bytes().split(b"\n")[0]) == 255


def test_a_rewrite_never_overwrites_another_writers_entries(tmp_path: Path) -> None:
    path = saved(tmp_path)
    path.write_bytes(path.read_bytes()[256:])  # no title slot: set_session_name must rewrite
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    other = SessionManager.open(path, blob_store=MemoryBlobStore())
    other.append_message(USER)  # the file grew behind sm's back
    before = path.read_bytes()
    with pytest.raises(WriteConflictError, match="changed before rewrite"):
        sm.set_session_name("mine")
    assert path.read_bytes() == before
    with pytest.raises(WriteConflictError):
        sm.append_message(USER)  # later calls retry the rewrite and keep failing loudly
    with pytest.raises(WriteConflictError):
        sm.flush()
    assert path.read_bytes() == before
    assert not list(path.parent.glob(".*.tmp")) and not list(path.parent.glob(".*.lock"))


def _append_many(path: str, tag: str, n: int) -> None:
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    for i in range(n):
        sm.append_message({"role": "user", "content": f"{tag}{i}", "timestamp": i})
    sm.close()


def test_two_processes_appending_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(saved(tmp_path))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(path, tag, 150)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    s = omp_session.open(path)
    texts = {e["message"]["content"] for e in s.entries if isinstance(e["message"]["content"], str)}
    assert {f"{t}{i}" for t in "ab" for i in range(150)} <= texts
    assert not s.malformed and not [d for d in s.diagnostics if d.severity == "error"]


@pytest.mark.oracle
def test_omp_reads_what_two_writers_wrote(tmp_path: Path) -> None:
    path = str(saved(tmp_path))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(path, tag, 40)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    oracle = Path(os.environ.get("OMP_ORACLE_DIR", Path(__file__).resolve().parents[2] / "tests" / "reference"))
    out = subprocess.run([str(oracle / "omp-reference"), "load", path], capture_output=True, text=True, check=True)
    rec = json.loads(out.stdout)
    assert rec["error"] is None and rec["loader"]["malformed_records"] == 0
    assert len(rec["entries"]) == 2 + 80


def test_a_held_lock_makes_a_write_fail_and_a_dead_holders_lock_is_taken(tmp_path: Path) -> None:
    path = saved(tmp_path)
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    lock = Path(lock_path(str(path)))
    lock.write_text(f"{os.getpid()}:{int(time.time() * 1000)}\n")
    before = path.read_bytes()
    with pytest.raises(LockError):
        sm.append_message(USER)
    assert path.read_bytes() == before
    lock.write_text("999999999:1\n")  # no such process: a stale lock
    sm.append_message(USER)
    assert not lock.exists() and len(omp_session.open(path).entries) == 4


def _fill_disk(path: str, conn: Any) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    size = os.path.getsize(path)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, size + 100))
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    try:
        sm.append_message({"role": "user", "content": "x" * 5000, "timestamp": 1})
        conn.send("no error")
    except PersistenceError as e:
        conn.send(f"PersistenceError: {e}")


def test_a_full_disk_is_a_clear_error_and_the_file_stays_as_it_was(tmp_path: Path) -> None:
    path = saved(tmp_path)
    before = path.read_bytes()
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_fill_disk, args=(str(path), child))
    p.start()
    p.join(30)
    message = parent.recv()
    assert message.startswith("PersistenceError") and str(path) in message
    assert path.read_bytes() == before


# ----- bad input ---------------------------------------------------------------------------------

def test_bad_arguments_are_clear_errors_and_change_nothing(tmp_path: Path) -> None:
    path = saved(tmp_path)
    before = path.read_bytes()
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    with pytest.raises(EntryNotFoundError, match="nope"):
        sm.append_message_to_branch(USER, "nope")
    with pytest.raises(EntryNotFoundError):
        sm.append_label_change("nope", "x")
    with pytest.raises(EntryNotFoundError):
        sm.branch("nope")
    with pytest.raises(EditError, match="string"):
        sm.set_session_name(42)  # type: ignore[arg-type]
    assert path.read_bytes() == before
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    with pytest.raises(EditError, match="not a directory"):
        SessionManager.create(str(not_a_dir), str(tmp_path / "s"))
    with pytest.raises(PersistenceError, match="session directory"):
        SessionManager.create(str(tmp_path), str(not_a_dir / "sessions"))


def test_a_file_without_a_header_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"type":"message"}\n')
    with pytest.raises(omp_session.FormatError, match="header"):
        SessionManager.open(path)
    assert path.read_text() == '{"type":"message"}\n'


def test_the_title_slot_builder_and_writer_agree(tmp_path: Path) -> None:
    slot = build_title_slot("t", "user", "2026-01-01T00:00:00.000Z")
    assert len(slot) == 256 and slot.endswith(b"\n")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_appending_to_a_big_session_with_compact_columns(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    rows = ['{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}']
    parent = "null"
    for k in range(5000):
        rows.append(f'{{"type":"message","id":"e{k:07d}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z",'
                    f'"message":{{"role":"user","content":"m{k}","timestamp":{k}}}}}')
        parent = f'"e{k:07d}"'
    path.write_text("\n".join(rows) + "\n")
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    new_id = sm.append_message(USER)
    sm.branch("e0002500")
    side = sm.append_message(USER)
    assert [e["id"] for e in sm.get_branch()][-2:] == ["e0002500", side]
    assert len(sm.build_session_context()["messages"]) == 2502
    assert sm.get_entry(new_id)["parentId"] == "e0004999"
    nodes = list(sm.get_tree().walk())
    assert len(nodes) == 5002 and len(sm.get_children("e0002500")) == 2 and "e0004999" in sm.session
    sm.close()
    again = omp_session.open(path)
    assert len(again) == 5002 and again.get_leaf_id() == side


def test_a_deleted_file_is_written_again_whole(tmp_path: Path) -> None:
    path = saved(tmp_path)
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    path.unlink()
    sm.append_message(USER)
    s = omp_session.open(path)
    assert s.header is not None and len(s.entries) == 3


class _FailingBlobs(MemoryBlobStore):
    """A blob store on a full disk until ``fail`` is cleared."""

    fail = True

    def put(self, data: bytes, mime_type: str | None = None) -> str:
        if self.fail:
            raise OSError(28, "No space left on device")
        return super().put(data, mime_type)


def test_a_failed_blob_write_is_latched_and_the_entry_is_written_later(tmp_path: Path) -> None:
    blobs = _FailingBlobs()
    sm = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), blob_store=blobs)
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    image = {"role": "user", "content": [{"type": "image", "data": "A" * 2000, "mimeType": "image/png"}],
             "timestamp": 3}
    with pytest.raises(PersistenceError):
        sm.append_message(image)
    with pytest.raises(PersistenceError):
        sm.flush()  # not forgotten: the entry is not on disk
    blobs.fail = False
    last = sm.append_message(USER)  # retries a whole-file rewrite, which now carries the image entry
    sm.close()
    s = omp_session.open(sm.get_session_file() or "")
    assert len(s.entries) == 4 and s.entries[-1]["id"] == last
    assert s.entries[2]["message"]["content"][0]["data"].startswith("blob:sha256:")


def test_a_deleted_file_is_written_again_whole_by_a_title_change(tmp_path: Path) -> None:
    path = saved(tmp_path)
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    path.unlink()
    assert sm.set_session_name("renamed", "user")  # as an append would: the file comes back whole
    sm.append_message(USER)
    s = omp_session.open(path)
    assert s.header is not None and s.name == "renamed" and len(s.entries) == 4


def test_a_session_path_under_a_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(PersistenceError, match="afile"):
        SessionManager.open(tmp_path / "afile" / "s.jsonl", blob_store=MemoryBlobStore())
    assert (tmp_path / "afile").read_text() == "x"


def test_a_rewrite_keeps_garbage_glued_to_a_record_on_its_line(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    a = {"type": "custom", "id": "glued001", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
         "customType": "x"}
    b = dict(a, id="glued002")
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(header) + "\n" + json.dumps(a) + " " + json.dumps(b) + "\n")
    before = [e["id"] for e in omp_session.open(p).entries]
    assert before == ["glued001"]  # omp keeps a and skips the rest of its line
    sm = SessionManager.open(p)
    sm.set_session_name("named", "user")  # no title slot yet: a whole-file rewrite
    sm.close()
    after = omp_session.open(p).entries
    assert [e["id"] for e in after if e["type"] != "title_change"] == before  # b is not read as an entry now
    assert json.dumps(b).encode() in p.read_bytes()  # and not lost either
