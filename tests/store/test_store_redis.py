"""RedisStorage against the real Redis on 127.0.0.1:6379 (spec S12.5).

Every test works under its own random key prefix and removes its keys afterwards. The oracle
tests drive omp's own RedisSessionStorage under Bun (tests/stores/omp_redis_store.ts) on the same
keys, in both directions.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from builders import assistant, header, usage
from omp_session.errors import StoreError, WriteConflictError
from omp_session.format.title import build_title_slot
from omp_session.js import codec
from omp_session.store.base import FileStorage, StoredFile
from omp_session.store.redis import RedisStorage
from omp_session.write import manager as manager_module
from omp_session.write.manager import SessionManager

URL = os.environ.get("OMP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ORACLE_HOME = Path(os.environ.get("OMP_ORACLE_HOME", Path.home() / ".cache" / "omp-session-reference" / "18.2.3"))
BUN = ORACLE_HOME / "node_modules" / "bun" / "bin" / "bun.exe"
OMP_SCRIPT = Path(__file__).parents[1] / "stores" / "omp_redis_store.ts"

ASSISTANT = assistant("an answer ✓", model="claude-test", timestamp=1767225601000, usage=usage(10, 5, 0))


@pytest.fixture
def raw() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(URL)
    yield client
    client.close()


@pytest.fixture
def prefix(raw: redis.Redis) -> Iterator[str]:
    """A fresh key prefix; every key under it is deleted afterwards."""
    value = f"omp-session-test:{secrets.token_hex(6)}:"
    yield value
    keys = list(raw.scan_iter(match=value.encode() + b"*", count=500))
    if keys:
        raw.delete(*keys)


@pytest.fixture
def store(prefix: str) -> Iterator[RedisStorage]:
    s = RedisStorage(URL, prefix=prefix)
    yield s
    s.close()


def body_of(*records: dict[str, Any], title: str = "", source: str | None = None) -> bytes:
    slot = build_title_slot(title, source, "2026-01-01T00:00:00.000Z")
    return slot + b"".join(codec.dumps_line(r) for r in records)


HEADER = header("01900000-0000-7000-8000-000000000000")


# ----- a scripted session, identical on every backend ----------------------------------------------


def deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids and clocks of the manager from fresh counters, so two runs write the same bytes."""
    clock = itertools.count(1767225600000, 7)
    ids = itertools.count(1)

    def iso(ms: int | None = None) -> str:
        from omp_session.write.ids import iso_timestamp

        return iso_timestamp(next(clock) if ms is None else ms)

    monkeypatch.setattr(manager_module, "iso_timestamp", iso)
    monkeypatch.setattr(manager_module, "new_session_timestamp", iso)
    monkeypatch.setattr(manager_module, "new_session_id", lambda ms=None: f"01900000-0000-7000-8000-{next(ids):012x}")
    monkeypatch.setattr(manager_module, "generate_id", lambda taken: f"{next(ids):08x}")


def scripted_session(storage: Any, directory: str, cwd: str) -> tuple[str, list[bytes]]:
    """Create, title, branch, label, rewrite and reopen a session; the bytes after each step."""
    snapshots: list[bytes] = []
    sm = SessionManager.create(cwd, directory, storage=storage)
    first = sm.append_message({"role": "user", "content": "hello ✓ — 𝄞", "timestamp": 1767225600000})
    sm.append_message(dict(ASSISTANT))
    path = sm.get_session_file()
    assert path is not None
    snapshots.append(storage.read(path))
    sm.set_session_name("A title that is set in place", "user")
    snapshots.append(storage.read(path))
    sm.append_message({"role": "user", "content": "x" * 5000, "timestamp": 1767225602000})
    sm.append_label_change(first, "start")
    sm.branch(first)
    sm.append_message({"role": "user", "content": "another branch", "timestamp": 1767225603000})
    sm.set_session_name("T" * 400, "user")  # longer than the slot holds: cut to fit
    snapshots.append(storage.read(path))
    sm.rewrite_entries()
    snapshots.append(storage.read(path))
    sm.close()
    again = SessionManager.open(path, storage=storage)
    again.append_message({"role": "user", "content": "after reopening", "timestamp": 1767225604000})
    again.close()
    snapshots.append(storage.read(path))
    return path, snapshots


def test_manager_round_trip_equals_the_file_backend(store: RedisStorage, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    directory = str(tmp_path / "sessions")
    deterministic(monkeypatch)
    file_path, on_disk = scripted_session(FileStorage(), directory, str(cwd))
    deterministic(monkeypatch)
    redis_path, in_redis = scripted_session(store, directory, str(cwd))
    assert redis_path == file_path
    assert len(in_redis) == len(on_disk) == 5
    for ours, theirs in zip(in_redis, on_disk, strict=True):
        assert ours == theirs
    assert store.size(redis_path) == os.path.getsize(file_path)
    loaded, from_file = SessionManager.open(redis_path, storage=store), SessionManager.open(file_path)
    assert _entries(loaded) == _entries(from_file) and len(loaded.get_entries()) == 8
    assert loaded.get_session_name() == from_file.get_session_name()
    assert (loaded.get_session_name() or "").startswith("TTT")


def test_title_change_updates_only_the_metadata(store: RedisStorage, raw: redis.Redis, prefix: str) -> None:
    path = "/s/p/a.jsonl"
    body = body_of(HEADER, title="old")
    store.replace(path, body, None)
    assert json.loads(raw.hget(prefix + "title", path) or b"") == {"title": "old", "updatedAt": "2026-01-01T00:00:00.000Z"}
    slot = build_title_slot("new ✓", "user", "2026-02-02T00:00:00.000Z")
    assert store.write_title_slot(path, slot)
    assert raw.get(prefix + "file:" + path) == body  # omp keeps the stored slot ...
    assert store.read(path) == slot + body[256:]  # ... and lays the new one over it on reads
    assert store.size(path) == len(body)
    assert json.loads(raw.hget(prefix + "title", path) or b"") == {
        "title": "new ✓", "source": "user", "updatedAt": "2026-02-02T00:00:00.000Z"}
    store.append(path, b'{"type":"x"}\n')
    assert store.read(path) == slot + body[256:] + b'{"type":"x"}\n'
    # a full write takes the title from its own slot again
    store.replace(path, body, len(body) + 13)
    assert store.read(path) == body


def test_no_title_slot_no_title_metadata(store: RedisStorage, raw: redis.Redis, prefix: str) -> None:
    legacy = codec.dumps_line(HEADER)
    store.replace("/s/legacy.jsonl", legacy, None)
    assert not store.write_title_slot("/s/legacy.jsonl", build_title_slot("t", None, "2026-01-01T00:00:00.000Z"))
    assert raw.hget(prefix + "title", "/s/legacy.jsonl") is None
    assert store.read("/s/legacy.jsonl") == legacy
    # a title line that is not 256 bytes wide is body, not a slot: kept verbatim, no metadata
    narrow = b'{"type":"title","v":1,"title":"n","updatedAt":"2026-01-01T00:00:00.000Z","pad":""}\n' + legacy
    store.replace("/s/narrow.jsonl", narrow, None)
    assert raw.hget(prefix + "title", "/s/narrow.jsonl") is None
    # metadata left by someone else over a body without a slot is not laid over it (omp would)
    raw.hset(prefix + "title", "/s/narrow.jsonl", '{"title":"x","updatedAt":"2026-01-01T00:00:00.000Z"}')
    assert store.read("/s/narrow.jsonl") == narrow
    assert not store.write_title_slot("/s/missing.jsonl", build_title_slot("t", None, "2026-01-01T00:00:00.000Z"))


def test_unreadable_title_metadata_is_ignored_as_omp_does(store: RedisStorage, raw: redis.Redis, prefix: str) -> None:
    body = body_of(HEADER, title="kept")
    store.replace("/s/a.jsonl", body, None)
    for meta in (b"not json", b'{"title":"x"}', b"[]", b'{"title":"x","updatedAt":5}'):
        raw.hset(prefix + "title", "/s/a.jsonl", meta)
        assert store.read("/s/a.jsonl") == body
    raw.hset(prefix + "title", "/s/a.jsonl", b'{"title":7,"source":"bot","updatedAt":"2026-03-03T00:00:00.000Z"}')
    assert store.read("/s/a.jsonl")[:256] == build_title_slot("", None, "2026-03-03T00:00:00.000Z")


def test_size_preconditions(store: RedisStorage, raw: redis.Redis, prefix: str) -> None:
    path = "/s/p/b.jsonl"
    body = body_of(HEADER)
    with pytest.raises(FileNotFoundError):
        store.append(path, b"{}\n")
    assert raw.exists(prefix + "file:" + path) == 0
    store.replace(path, body, None)
    with pytest.raises(WriteConflictError, match=r"expected missing, found \d+ bytes"):
        store.replace(path, b"other", None)
    with pytest.raises(WriteConflictError, match=r"expected 3 bytes, found \d+ bytes"):
        store.replace(path, b"other", 3)
    assert store.read(path) == body
    store.delete(path)
    with pytest.raises(WriteConflictError, match="expected 5 bytes, found missing"):
        store.replace(path, b"other", 5)
    assert store.size(path) is None and store.stat(path) is None
    store.replace(path, b"", None)  # an empty body exists, with size 0
    assert store.size(path) == 0
    assert store.append(path, b"one\n") == 4
    raw.append(prefix + "file:" + path, b"torn")  # a last line without its LF
    assert store.append(path, b"two\n") == 5
    assert store.read(path) == b"one\ntorn\ntwo\n"


def test_two_managers_on_one_session_conflict_instead_of_overwriting(store: RedisStorage, tmp_path: Path) -> None:
    sm = SessionManager.create(str(tmp_path), str(tmp_path / "s"), storage=store)
    sm.append_message({"role": "user", "content": "q", "timestamp": 1})
    sm.append_message(dict(ASSISTANT))
    path = sm.get_session_file()
    assert path is not None
    other = SessionManager.open(path, storage=store)
    other.append_message({"role": "user", "content": "from the other writer", "timestamp": 2})
    before = store.read(path)
    with pytest.raises(WriteConflictError, match="nothing was overwritten"):
        sm.rewrite_entries()
    assert store.read(path) == before


def test_list_scan_stat_rename_delete(store: RedisStorage, raw: redis.Redis, prefix: str) -> None:
    d = "/s/we[ir]d*dir?"
    body = body_of(HEADER, title="moved")
    for name in ("b.jsonl", "a.jsonl", "notes.txt", "a/sub.jsonl", "a/art.log"):
        store.replace(f"{d}/{name}", body, None)
    store.replace("/s/weXrdYdirZ/decoy.jsonl", body, None)  # matches the directory only as a glob
    assert store.list(d, "*.jsonl") == [f"{d}/a.jsonl", f"{d}/b.jsonl"]
    assert store.list(d + "/", "*") == [f"{d}/a.jsonl", f"{d}/b.jsonl", f"{d}/notes.txt"]
    scanned = store.scan(d + "/")
    assert [f.path for f in scanned] == [f"{d}/a.jsonl", f"{d}/a/sub.jsonl", f"{d}/b.jsonl"]
    assert all(f.size == len(body) for f in scanned)
    st = store.stat(f"{d}/a.jsonl")
    assert isinstance(st, StoredFile) and st.mtime_ms == float(raw.hget(prefix + "meta", f"{d}/a.jsonl") or 0)
    assert st.mtime_ms == pytest.approx(time.time() * 1000, abs=60_000)
    # rename: body, mtime and title move together; the destination's old title goes
    raw.hset(prefix + "title", f"{d}/c.jsonl", b'{"title":"stale","updatedAt":"2026-01-01T00:00:00.000Z"}')
    store.replace(f"{d}/legacy.jsonl", codec.dumps_line(HEADER), None)
    store.rename(f"{d}/legacy.jsonl", f"{d}/c.jsonl")
    assert raw.hget(prefix + "title", f"{d}/c.jsonl") is None
    store.rename(f"{d}/b.jsonl", f"{d}/c.jsonl")
    assert store.read(f"{d}/c.jsonl") == body and store.size(f"{d}/b.jsonl") is None
    assert raw.hget(prefix + "title", f"{d}/c.jsonl") is not None
    assert raw.hget(prefix + "title", f"{d}/b.jsonl") is None and raw.hget(prefix + "meta", f"{d}/b.jsonl") is None
    with pytest.raises(FileNotFoundError):
        store.rename(f"{d}/b.jsonl", f"{d}/d.jsonl")
    # delete takes the artifacts directory along, and nothing else
    store.delete(f"{d}/a.jsonl")
    assert [f.path for f in store.scan("/s/")] == ["/s/weXrdYdirZ/decoy.jsonl", f"{d}/c.jsonl"]
    assert store.list(d, "*") == [f"{d}/c.jsonl", f"{d}/notes.txt"]
    assert raw.hget(prefix + "meta", f"{d}/a/art.log") is None
    store.delete(f"{d}/never.jsonl")  # missing is fine


def test_prefix_from_the_url(prefix: str, raw: redis.Redis) -> None:
    other = prefix + "inner:"
    with RedisStorage(f"{URL}?prefix={other}") as s:
        assert s.prefix == other
        s.replace("/x.jsonl", b"{}\n", None)
    assert raw.get(other + "file:/x.jsonl") == b"{}\n"
    # the store URL of open_store / --store / SessionManager(storage=URL) reaches the same keys
    from omp_session.store import open_store

    opened = open_store(f"{URL}?prefix={other}")
    assert isinstance(opened, RedisStorage) and opened.read("/x.jsonl") == b"{}\n"
    opened.close()
    with pytest.raises(StoreError, match=r"^redis store redis://127\.0\.0\.1:\d+/0: connecting failed"):
        open_store(f"redis://127.0.0.1:{_free_port()}/0")


# ----- bad input: one line naming the store ----------------------------------------------------------


def _one_line_error(url: str, **kwargs: Any) -> str:
    with pytest.raises(StoreError) as info:
        RedisStorage(url, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message.startswith("redis store ")
    return message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_wrong_url() -> None:
    assert "not a Redis URL" in _one_line_error("http://127.0.0.1:6379")
    assert "not a Redis URL" in _one_line_error("127.0.0.1:6379")
    assert "not a valid Redis URL" in _one_line_error("redis://127.0.0.1:notaport/0")
    assert "not a valid Redis URL" in _one_line_error("redis://127.0.0.1:6379/notadb")
    assert "prefix is empty" in _one_line_error(URL, prefix="")


def test_unreachable_server() -> None:
    port = _free_port()
    message = _one_line_error(f"redis://127.0.0.1:{port}/0")
    assert f"redis://127.0.0.1:{port}/0: connecting failed: cannot reach the server" in message


def test_bad_credentials(raw: redis.Redis, prefix: str) -> None:
    user = "omp_session_test_" + secrets.token_hex(4)
    raw.acl_setuser(user, enabled=True, passwords=["+right-password"], keys=[prefix + "*"], commands=["+@all"])
    try:
        message = _one_line_error(f"redis://{user}:wrong-password@127.0.0.1:6379/0")
        assert "authentication refused" in message and "wrong-password" not in message
        assert f"redis://{user}:***@127.0.0.1:6379/0" in message
        # the right password works, and only inside the keys it was granted
        with RedisStorage(f"redis://{user}:right-password@127.0.0.1:6379/0", prefix=prefix) as s:
            s.replace("/ok.jsonl", b"{}\n", None)
        with pytest.raises(StoreError, match="permission denied"):
            RedisStorage(f"redis://{user}:right-password@127.0.0.1:6379/0", prefix="elsewhere:")
    finally:
        raw.acl_deluser(user)


def test_keys_of_another_layout(raw: redis.Redis, prefix: str) -> None:
    raw.set(prefix + "meta", "not a hash")
    assert f"key {prefix}meta is a string, not the hash omp 18.2.3 keeps there" in _one_line_error(URL, prefix=prefix)
    raw.delete(prefix + "meta")
    raw.rpush(prefix + "file:/s/list.jsonl", "a")
    with RedisStorage(URL, prefix=prefix) as s:
        with pytest.raises(StoreError, match=r"/s/list.jsonl.*not of the type omp 18.2.3 uses") as info:
            s.read("/s/list.jsonl")
        assert "\n" not in str(info.value)
        with pytest.raises(StoreError, match="not of the type"):
            s.append("/s/list.jsonl", b"{}\n")
        assert raw.lrange(prefix + "file:/s/list.jsonl", 0, -1) == [b"a"]
        # a hash replaced under an open store: the write fails before changing anything
        body = body_of(HEADER)
        s.replace("/s/ok.jsonl", body, None)
        raw.delete(prefix + "meta")
        raw.set(prefix + "meta", "overwritten by someone else")
        for write in (lambda: s.append("/s/ok.jsonl", b"{}\n"), lambda: s.replace("/s/ok.jsonl", b"x", len(body)),
                      lambda: s.rename("/s/ok.jsonl", "/s/moved.jsonl"),
                      lambda: s.write_title_slot("/s/ok.jsonl", build_title_slot("t", None, "u"))):
            with pytest.raises(StoreError, match=r"not of the type omp 18\.2\.3 uses"):
                write()
            assert raw.get(prefix + "file:/s/ok.jsonl") == body and raw.exists(prefix + "file:/s/moved.jsonl") == 0


# ----- a killed writer -------------------------------------------------------------------------------

_WRITER = """
import sys
from omp_session.store.redis import RedisStorage
s = RedisStorage(sys.argv[1], prefix=sys.argv[2])
n = 0
while True:
    n += 1
    line = b'{"n":%d,"pad":"' % n + b"y" * (4 << 20) + b'"}\\n'
    s.append("/s/killed.jsonl", line)
    print(n, flush=True)
"""


def test_sigkilled_writer_leaves_no_partial_record(store: RedisStorage, prefix: str) -> None:
    """4 MB lines: the kill lands while a command is on the wire; Redis runs only whole commands."""
    store.replace("/s/killed.jsonl", body_of(HEADER), None)
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, URL, prefix], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "1"
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    data = store.read("/s/killed.jsonl")
    assert data.endswith(b"\n")
    lines = data[256:].splitlines()
    numbers = [json.loads(line)["n"] for line in lines[1:]]
    assert numbers == list(range(1, len(numbers) + 1)) and numbers
    assert all(len(json.loads(line)["pad"]) == 4 << 20 for line in lines[1:])


# ----- omp's own RedisSessionStorage on the same keys -----------------------------------------------


def omp(*args: str, stdin: bytes | None = None, home: Path) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "OMP_PROFILE", "PI_"))}
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"), OMP_ORACLE_HOME=str(ORACLE_HOME),
               TZ="UTC", BUN_RUNTIME_TRANSPILER_CACHE_PATH=str(ORACLE_HOME / ".transpiler-cache"))
    done = subprocess.run([str(BUN), "--no-install", str(OMP_SCRIPT), *args], input=stdin, capture_output=True,
                          env=env, cwd=home, timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


@pytest.fixture
def bun_home(tmp_path: Path) -> Path:
    if not BUN.exists():
        pytest.fail(f"omp is not installed in {ORACLE_HOME}: run tests/reference/install")
    home = tmp_path / "bun-home"
    home.mkdir()
    return home


def _entries(sm: SessionManager) -> Any:
    return json.loads(codec.dumps_line(sm.get_entries()))


@pytest.mark.oracle
def test_omp_reads_what_we_write(store: RedisStorage, prefix: str, tmp_path: Path, bun_home: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    sm = SessionManager.create(str(cwd), "/omp-test/sessions", storage=store)
    sm.append_message({"role": "user", "content": "hello ✓ — 𝄞", "timestamp": 1767225600000})
    sm.append_message(dict(ASSISTANT))
    sm.set_session_name("Our title ✓", "user")
    sm.append_message({"role": "user", "content": "more", "timestamp": 1767225602000})
    sm.close()
    path = sm.get_session_file()
    assert path is not None
    seen = omp("read", URL, prefix, path, home=bun_home)
    assert seen["text"].encode() == store.read(path)
    assert seen["size"] == store.size(path)
    assert seen["listed"] == [path]
    assert seen["name"] == "Our title ✓"
    assert seen["entries"] == _entries(sm)
    assert seen["leaf"] == sm.get_leaf_id()
    # omp changes the title of our session; we read the slot omp reads
    omp("title", URL, prefix, path, "Renamed by omp", "2026-05-05T00:00:00.000Z", home=bun_home)
    after = store.read(path)
    assert after[:256] == build_title_slot("Renamed by omp", "user", "2026-05-05T00:00:00.000Z")
    assert after == omp("read", URL, prefix, path, home=bun_home)["text"].encode()


@pytest.mark.oracle
def test_we_read_what_omp_writes(store: RedisStorage, prefix: str, tmp_path: Path, bun_home: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    made = omp("write", URL, prefix, str(cwd), "/omp-test/sessions", "Title from omp ✓", home=bun_home)
    path = made["path"]
    assert store.read(path) == made["text"].encode()
    assert store.list("/omp-test/sessions", "*.jsonl") == [path]
    sm = SessionManager.open(path, storage=store)
    assert _entries(sm) == made["entries"]
    assert sm.get_session_name() == "Title from omp ✓"
    # we append and retitle; omp reads the same bytes and entries
    sm.append_message({"role": "user", "content": "appended by us", "timestamp": 1767225609000})
    sm.set_session_name("Title from us", "user")
    sm.close()
    seen = omp("read", URL, prefix, path, home=bun_home)
    assert seen["text"].encode() == store.read(path)
    assert seen["entries"] == _entries(sm)
    assert seen["name"] == "Title from us"


@pytest.mark.oracle
def test_rename_and_size_checks_agree_with_omp(store: RedisStorage, prefix: str, bun_home: Path) -> None:
    body = body_of(HEADER, title="before", source="auto")
    store.replace("/omp-test/a.jsonl", body, None)
    omp("rename", URL, prefix, "/omp-test/a.jsonl", "/omp-test/b.jsonl", home=bun_home)
    assert store.size("/omp-test/a.jsonl") is None and store.read("/omp-test/b.jsonl") == body
    # omp's size-checked write against the size we report
    new = body_of(HEADER, {"type": "custom", "id": "a1", "parentId": None, "timestamp": "t"}, title="after")
    wrong = omp("put", URL, prefix, "/omp-test/b.jsonl", str(len(body) + 1), stdin=new, home=bun_home)
    assert "conflict" in wrong and store.read("/omp-test/b.jsonl") == body
    assert omp("put", URL, prefix, "/omp-test/b.jsonl", str(store.size("/omp-test/b.jsonl")), stdin=new,
               home=bun_home) == {"ok": True}
    assert store.read("/omp-test/b.jsonl") == new
    # and ours against what omp wrote
    with pytest.raises(WriteConflictError):
        store.replace("/omp-test/b.jsonl", body, len(body))
    store.rename("/omp-test/b.jsonl", "/omp-test/c.jsonl")
    seen = omp("read", URL, prefix, "/omp-test/c.jsonl", home=bun_home)
    assert seen["text"].encode() == new and seen["listed"] == ["/omp-test/c.jsonl"]


@pytest.mark.oracle
def test_a_narrow_title_line_is_body_to_us_and_a_slot_to_omp(store: RedisStorage, prefix: str, bun_home: Path) -> None:
    """docs/stores-redis.md: omp records a title for a first line of any width and then lays a
    256-byte slot over it on every read, eating the header; we keep such a body as written."""
    narrow = b'{"type":"title","v":1,"title":"n","updatedAt":"2026-01-01T00:00:00.000Z","pad":""}\n'
    body = narrow + codec.dumps_line(HEADER) + codec.dumps_line({"type": "custom", "id": "a1", "parentId": None})
    assert omp("put", URL, prefix, "/omp-test/n.jsonl", "none", stdin=body, home=bun_home) == {"ok": True}
    theirs = omp("text", URL, prefix, "/omp-test/n.jsonl", home=bun_home)["text"].encode()
    assert theirs[:256] == build_title_slot("n", None, "2026-01-01T00:00:00.000Z")
    assert theirs[256:] == body[256:] and b'"type":"session"' not in theirs
    assert store.read("/omp-test/n.jsonl") == body
    # written by us, omp reads it unharmed too: we record no title for it
    store.replace("/omp-test/m.jsonl", body, None)
    assert omp("text", URL, prefix, "/omp-test/m.jsonl", home=bun_home)["text"].encode() == body
