"""``append_if_size``: sync's append, written only while the target still has the size the caller
compared against, in one step of each backend (files under omp's publish lock, SQL one UPDATE with
a byte-length condition, Redis one script). Against the real servers, fresh tables/prefixes."""

from __future__ import annotations

import multiprocessing
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from omp_session.errors import PersistenceError
from omp_session.format.title import build_title_slot
from omp_session.store import open_store
from omp_session.store.base import FileStorage, MemoryStorage
from omp_session.store.locking import lock_path
from stores.sqlutil import drop_table, fresh_table, raw_execute, store_url

REDIS_URL = os.environ.get("OMP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
BACKENDS = ["file", "memory", "sqlite", "postgres", "mysql", "redis"]
SHARED = ["file", "sqlite", "postgres", "mysql", "redis"]  # several writers reach one store

SLOT = build_title_slot("first ✓", "auto", "2026-01-01T00:00:00.000Z")
BODY = SLOT + b'{"type":"session","version":3,"id":"0197","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
DELTA = b'{"type":"message","id":"a1","message":{"role":"user","content":"h\xc3\xa9llo \xf0\x9d\x84\x9e"}}\n' \
        b'{"type":"message","id":"a2","message":{"role":"assistant","content":"ok"}}\n'


class Backend:
    """One fresh store of a kind; ``open()`` gives another client of it (its own connection)."""

    def __init__(self, kind: str, tmp: Path) -> None:
        self.kind, self.tmp = kind, tmp
        self.root = str(tmp / "files") if kind == "file" else "/home/u/.omp/agent/sessions"
        self.table = fresh_table()
        self.prefix = f"omp-test-cond-{secrets.token_hex(6)}:"
        self.memory = MemoryStorage()
        self.opened: list[Any] = []

    @property
    def url(self) -> str:
        if self.kind == "redis":
            return f"{REDIS_URL}?prefix={self.prefix}"
        return store_url(self.kind, self.table, self.tmp / "sessions.db")

    def open(self) -> Any:
        if self.kind == "memory":
            return self.memory
        storage = FileStorage() if self.kind == "file" else open_store(self.url)
        self.opened.append(storage)
        return storage

    def key(self, name: str) -> str:
        return f"{self.root}/--w--/{name}.jsonl"

    def raw(self, key: str) -> Any:
        """What is stored under ``key``, below the storage: every column, every Redis field."""
        if self.kind == "file":
            path = Path(key)
            return (path.read_bytes(), path.stat().st_mtime_ns) if path.exists() else None
        if self.kind == "memory":
            data = self.memory.files.get(key)
            return None if data is None else (bytes(data), self.memory.mtimes.get(key))
        if self.kind == "redis":
            client = redis.Redis.from_url(REDIS_URL)
            try:
                p = self.prefix.encode()
                found = (client.get(p + b"file:" + key.encode()), client.hget(p + b"meta", key),
                         client.hget(p + b"title", key))
                return None if found == (None, None, None) else found
            finally:
                client.close()
        rows = raw_execute(self.kind, f"SELECT content, mtime_ms, title, title_source, title_updated_at FROM "
                           f"{self.table} WHERE path = ?", (key,), self.tmp / "sessions.db")
        return tuple(rows[0]) if rows else None

    def close(self) -> None:
        for storage in self.opened:
            storage.close()
        if self.kind in ("postgres", "mysql"):
            drop_table(self.kind, self.table)
        elif self.kind == "redis":
            client = redis.Redis.from_url(REDIS_URL)
            keys = list(client.scan_iter(match=self.prefix.encode() + b"*", count=500))
            if keys:
                client.delete(*keys)
            client.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    b = Backend(request.param, tmp_path)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(params=SHARED)
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    b = Backend(request.param, tmp_path)
    try:
        yield b
    finally:
        b.close()


def _seed(storage: Any, key: str, body: bytes = BODY) -> None:
    storage.replace(key, body, None)
    assert storage.set_mtime(key, 1_000_000.0, len(body))  # an old time, so a write shows


# ----- the size matches: appended, as `append` would ----------------------------------------------


def test_the_bytes_are_appended_when_the_size_matches(backend: Backend) -> None:
    storage = backend.open()
    key = backend.key("a")
    _seed(storage, key)
    assert storage.append_if_size(key, len(BODY), DELTA) is True
    assert storage.read(key) == BODY + DELTA
    found = storage.stat(key)
    assert found.size == len(BODY + DELTA) and found.mtime_ms > 1_000_000.0
    assert storage.append_if_size(key, len(BODY + DELTA), b"") is True  # nothing to add still matches
    assert storage.read(key) == BODY + DELTA


def test_it_writes_what_append_writes(backend: Backend) -> None:
    """Same body, same title columns / hash, a new mtime: omp reads both keys alike."""
    storage = backend.open()
    plain, conditional = backend.key("plain"), backend.key("conditional")
    for key in (plain, conditional):
        _seed(storage, key)
        # a title change that, in SQL and Redis, lives outside the stored body
        assert storage.write_title_slot(key, build_title_slot("renamed", "user", "2026-01-02T00:00:00.000Z"))
    before = backend.raw(conditional)
    assert storage.append(plain, DELTA) == len(DELTA)
    assert storage.append_if_size(conditional, len(BODY), DELTA) is True
    assert storage.read(conditional) == storage.read(plain)
    assert b"renamed" in storage.read(conditional)[:256]
    after_plain, after = backend.raw(plain), backend.raw(conditional)
    assert after[0] == before[0] + (DELTA if isinstance(before[0], bytes) else DELTA.decode())
    assert after[1] != before[1]  # the modification time moved on, as after an append
    if backend.kind in ("sqlite", "postgres", "mysql"):
        assert after[2:] == after_plain[2:] == before[2:]  # title columns untouched
    if backend.kind == "redis":
        assert after[2] == after_plain[2] == before[2]  # the title hash untouched


def test_data_is_appended_as_given_without_completing_a_cut_line(backend: Backend) -> None:
    """Unlike `append`, no LF is added: the caller said which bytes it knows are there."""
    storage = backend.open()
    key = backend.key("cut")
    _seed(storage, key, BODY + b'{"type":"mess')
    assert storage.append_if_size(key, len(BODY) + 13, b'age"}\n') is True
    assert storage.read(key) == BODY + b'{"type":"message"}\n'


# ----- the size differs: nothing written -----------------------------------------------------------


@pytest.mark.parametrize("expected", [0, len(BODY) - 1, len(BODY) + 1, len(BODY) + len(DELTA)])
def test_nothing_is_written_when_the_size_differs(backend: Backend, expected: int) -> None:
    storage = backend.open()
    key = backend.key("a")
    _seed(storage, key)
    before = backend.raw(key)
    assert storage.append_if_size(key, expected, DELTA) is False
    assert backend.raw(key) == before  # byte for byte, modification time included
    assert storage.read(key) == BODY
    if backend.kind == "file":
        assert not os.path.exists(lock_path(key))


def test_a_missing_key_is_not_created(backend: Backend) -> None:
    storage = backend.open()
    key = backend.key("missing")
    assert storage.append_if_size(key, 0, DELTA) is False
    assert storage.stat(key) is None and backend.raw(key) is None
    if backend.kind == "file":
        assert not os.path.exists(os.path.dirname(key))  # not even its folder


def test_a_body_an_sql_store_cannot_hold_is_refused_before_anything_is_written(backend: Backend) -> None:
    storage = backend.open()
    key = backend.key("a")
    _seed(storage, key)
    before = backend.raw(key)
    if backend.kind in ("sqlite", "postgres", "mysql"):
        with pytest.raises(PersistenceError, match="not UTF-8"):
            storage.append_if_size(key, len(BODY), b"\xff\n")
        assert backend.raw(key) == before
    else:  # files and Redis keep bytes
        assert storage.append_if_size(key, len(BODY), b"\xff\n") is True
        assert storage.read(key) == BODY + b"\xff\n"


# ----- races: of writers at one size, exactly one appends ------------------------------------------


ROUNDS = 30


def test_of_threads_appending_at_the_same_size_exactly_one_succeeds(shared: Backend) -> None:
    writers = [shared.open() for _ in range(3)]  # one client (connection) each
    results: list[list[bool]] = []
    for n in range(ROUNDS):
        key = shared.key(f"race-{n}")
        _seed(writers[0], key)
        barrier = threading.Barrier(len(writers), timeout=60)
        got: list[bool] = []
        lock = threading.Lock()

        def one(storage: Any, key: str = key, barrier: threading.Barrier = barrier, got: list[bool] = got,
                lock: threading.Lock = lock) -> None:
            barrier.wait()
            ok = storage.append_if_size(key, len(BODY), DELTA)
            with lock:
                got.append(ok)

        threads = [threading.Thread(target=one, args=(w,)) for w in writers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        results.append(sorted(got))
        assert writers[1].read(key) == BODY + DELTA, f"round {n}"
    assert results == [[False, False, True]] * ROUNDS


def _append_in_child(url: str | None, key: str, barrier: Any, out: Any) -> None:
    storage = FileStorage() if url is None else open_store(url)
    try:
        barrier.wait()
        out.put(storage.append_if_size(key, len(BODY), DELTA))
    finally:
        storage.close()


def test_of_processes_appending_at_the_same_size_exactly_one_succeeds(shared: Backend) -> None:
    ctx = multiprocessing.get_context("fork")
    seeder = shared.open()
    url = None if shared.kind == "file" else shared.url
    for n in range(12):
        key = shared.key(f"procs-{n}")
        _seed(seeder, key)
        barrier, out = ctx.Barrier(3, timeout=60), ctx.Queue()
        procs = [ctx.Process(target=_append_in_child, args=(url, key, barrier, out)) for _ in range(3)]
        for p in procs:
            p.start()
        got = sorted(out.get(timeout=120) for _ in procs)
        for p in procs:
            p.join()
        assert [p.exitcode for p in procs] == [0, 0, 0]
        assert got == [False, False, True], f"round {n}"
        assert seeder.read(key) == BODY + DELTA, f"round {n}"


def test_a_file_append_waits_for_omps_publish_lock(tmp_path: Path) -> None:
    """The check and the write happen under omp's publish lock: while another writer (omp) holds
    it, nothing is written, and the caller gets omp's lock error, a conflict for sync."""
    from omp_session.errors import LockError
    from omp_session.store.locking import publish_lock

    storage, key = FileStorage(), str(tmp_path / "s.jsonl")
    Path(key).write_bytes(BODY)
    with publish_lock(key), pytest.raises(LockError, match="another writer holds the publish lock"):
        storage.append_if_size(key, len(BODY), DELTA)
    assert Path(key).read_bytes() == BODY
    assert storage.append_if_size(key, len(BODY), DELTA) is True
    assert not os.path.exists(lock_path(key))
