"""Reliability under load: many processes appending through a shared store at once, and writers
killed with SIGKILL in the middle of an append.

To add a backend, append a :class:`Backend` to ``BACKENDS``: a name, a function that makes a
fresh empty store and returns its URL, a cleanup for that URL, and whether the store runs SQL
transactions (then the kill-inside-the-transaction test applies too).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from omp_session.catalog.stored import read_stored_session
from omp_session.format.blobs import MemoryBlobStore
from omp_session.store import open_store
from omp_session.write.manager import SessionManager
from stores.sqlutil import drop_table, fresh_table, store_url

WORKER = Path(__file__).parents[1] / "stores" / "load_worker.py"


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[[Path], str]  # a fresh, empty store's URL (tmp_path given for file-based stores)
    cleanup: Callable[[str], None]
    sql: bool = False  # runs SQL transactions: the kill-before-commit test applies


def _sql_backend(kind: str) -> Backend:
    def make(tmp: Path) -> str:
        return store_url(kind, fresh_table(), tmp / "load.db")

    def cleanup(url: str) -> None:
        drop_table(kind, url.rsplit("table=", 1)[1])

    return Backend(kind, make, cleanup, sql=True)


def _redis_backend() -> Backend:
    base = os.environ.get("OMP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

    def make(tmp: Path) -> str:
        return f"{base}?prefix=omp-load-test:{os.urandom(6).hex()}:"

    def cleanup(url: str) -> None:
        import redis

        client = redis.Redis.from_url(base)
        keys = list(client.scan_iter(match=url.rsplit("prefix=", 1)[1] + "*", count=500))
        if keys:
            client.delete(*keys)
        client.close()

    return Backend("redis", make, cleanup)


BACKENDS: list[Backend] = [_sql_backend("postgres"), _sql_backend("mysql"), _redis_backend()]

APPENDS = 25  # entries per writer


@pytest.fixture(params=BACKENDS, ids=lambda b: b.name)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    backend: Backend = request.param
    url = backend.make(tmp_path)
    try:
        yield url
    finally:
        backend.cleanup(url)


def _new_session(url: str, cwd: Path) -> str:
    sm = SessionManager.create(str(cwd), "/load/sessions/--p--", storage=url, blob_store=MemoryBlobStore())
    sm.append_message({"role": "user", "content": "start", "timestamp": 0})
    sm.ensure_on_disk()
    path = sm.get_session_file()
    assert path is not None
    sm.close()
    return path


def _run_writers(url: str, jobs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """One process per (path, tag), all at once; returns tag → the ids it appended."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = {tag: subprocess.Popen([sys.executable, str(WORKER), "append", url, path, tag, str(APPENDS)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
             for path, tag in jobs}
    out: dict[str, list[str]] = {}
    for tag, p in procs.items():
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr
        out[tag] = stdout.split()
    return out


def _check_chains(url: str, path: str, written: dict[str, list[str]]) -> None:
    """Every writer's entries are there exactly once, in order, each the child of the one before."""
    storage = open_store(url, create=False)
    try:
        session = read_stored_session(storage, path, blob_store=MemoryBlobStore())
        assert not session.diagnostics, session.diagnostics
        entries = [e for e in session.entries if e.get("type") == "message"]
        by_id = {e["id"]: e for e in entries}
        contents = [e["message"]["content"] for e in entries]
        assert len(contents) == len(set(contents)) == 1 + APPENDS * len(written)  # none lost, none twice
        assert next(e for e in entries if e["message"]["content"] == "start")["parentId"] is None
        for tag, ids in written.items():
            assert [by_id[i]["message"]["content"] for i in ids] == [f"{tag}:{k}" for k in range(APPENDS)]
            parents = [by_id[i]["parentId"] for i in ids]
            # the first hangs off whatever was the leaf when the writer opened the session
            assert parents[0] in by_id and parents[1:] == ids[:-1]
        tree = session.get_tree()
        assert tree is not None
        # the body is whole lines of JSON
        body = storage.read(path)
        assert body.endswith(b"\n")
        for line in body.splitlines():
            json.loads(line)
    finally:
        storage.close()


def test_sixteen_writers_on_sixteen_sessions(store: str, tmp_path: Path) -> None:
    paths = [_new_session(store, tmp_path) for _ in range(16)]
    written = _run_writers(store, [(p, f"w{i}") for i, p in enumerate(paths)])
    for i, p in enumerate(paths):
        _check_chains(store, p, {f"w{i}": written[f"w{i}"]})
        sm = SessionManager.open(p, storage=store, blob_store=MemoryBlobStore())
        assert len(sm.get_branch()) == 1 + APPENDS  # the leaf is the writer's last entry
        sm.close()


def test_four_writers_on_one_session(store: str, tmp_path: Path) -> None:
    path = _new_session(store, tmp_path)
    written = _run_writers(store, [(path, f"w{i}") for i in range(4)])
    _check_chains(store, path, written)


def _spawn(mode: str, url: str, path: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, str(WORKER), mode, url, path, *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)


def test_a_writer_killed_inside_its_transaction_leaves_nothing(request: pytest.FixtureRequest, store: str,
                                                               tmp_path: Path) -> None:
    backend = request.node.callspec.params["store"]
    if not backend.sql:
        return  # stores without SQL transactions are covered by the random-kill test below
    path = _new_session(store, tmp_path)
    reader = open_store(store, create=False)
    before = reader.read(path)
    p = _spawn("hang", store, path)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "mid"  # UPDATE done, COMMIT not
        assert reader.read(path) == before  # an uncommitted append is invisible
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
    assert reader.read(path) == before
    # the killed writer's row lock went with its connection: the next append goes through
    assert reader.append(path, b'{"type":"custom","customType":"after","id":"eeeeeeee","parentId":null,'
                               b'"timestamp":"2026-01-01T00:00:00.000Z"}\n') > 0
    assert b"never" not in reader.read(path) and b"after" in reader.read(path)
    reader.close()


def test_writers_killed_at_random_moments_leave_whole_records(store: str, tmp_path: Path) -> None:
    path = _new_session(store, tmp_path)
    rng = random.Random(1234)
    started = 0  # appends begun ("k" is printed before each)
    for _ in range(4):
        p = _spawn("spin", store, path, str(300_000))  # big lines (under the persist truncation): the kill often lands mid-transfer
        assert p.stdout is not None
        seen = rng.randint(1, 4)
        for _ in range(seen):
            assert p.stdout.readline()
        time.sleep(rng.random() * 0.05)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
        started += seen + len(p.stdout.read().split())
    storage = open_store(store, create=False)
    try:
        body = storage.read(path)
        assert body.endswith(b"\n")
        records = [json.loads(line) for line in body.splitlines()]
        messages = [r for r in records if r.get("type") == "message"][1:]  # after "start"
        assert started - 4 <= len(messages) <= started  # each writer lost at most the append it was in
        for m in messages:
            _, _, pad = m["message"]["content"].partition(":")
            assert pad == "x" * 300_000
        session = read_stored_session(storage, path, blob_store=MemoryBlobStore())
        assert not session.diagnostics
    finally:
        storage.close()
