"""Two `sync` runs of one pair at the same time (a `sync` beside `sync --watch`, two machines into
one store): a session that grew reaches the target exactly once, never its new entries twice.

Each run is its own process with its own connection and the pair's shared record of the last
sync, as two commands would be. Both are held at the source read until both have listed the
target, so both start from its old size: one appends, the other writes nothing (a conflict: the
target changed during the sync), every round."""

from __future__ import annotations

import multiprocessing
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import ASSISTANT, user
from omp_session.format.blobs import MemoryBlobStore
from omp_session.ops.sync import SyncState, sync
from omp_session.paths import project_dir_name
from omp_session.store import open_store, parse_store_url
from omp_session.store.base import FileStorage
from omp_session.write.manager import SessionManager
from stores.sqlutil import drop_table, fresh_table, store_url

REDIS_URL = os.environ.get("OMP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ROUNDS = 10
TARGETS = [pytest.param(k, marks=pytest.mark.db if k in ("postgres", "mysql", "redis") else ())
           for k in ("file", "sqlite", "postgres", "mysql", "redis")]


@pytest.fixture(params=TARGETS)
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind, table = request.param, fresh_table()
    if kind == "file":
        (tmp_path / "target").mkdir()
        yield f"file:{tmp_path / 'target'}"
    elif kind == "redis":
        import redis

        prefix = f"omp-test-syncrace-{secrets.token_hex(6)}:"
        yield f"{REDIS_URL}?prefix={prefix}"
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        if keys:
            client.delete(*keys)
        client.close()
    else:
        yield store_url(kind, table, tmp_path / "target.db")
        drop_table(kind, table)


class _Meeting(FileStorage):
    """The source as both runs see it: a read waits until the other run reads too."""

    def __init__(self, barrier: Any) -> None:
        self.barrier = barrier

    def read(self, path: str) -> bytes:
        self.barrier.wait()
        return super().read(path)


def _run_sync(source_root: str, target_url: str, record: str, barrier: Any, out: Any) -> None:
    parsed = parse_store_url(target_url)
    target = open_store(parsed)
    try:
        report = sync(_Meeting(barrier), target, source_root=source_root, target_root=parsed.root,
                      state=SyncState(Path(record)))
        out.put([(i.target, i.action, i.reason) for i in report.items])
    finally:
        target.close()


def _stored(url: str) -> dict[str, bytes]:
    parsed = parse_store_url(url)
    store = open_store(parsed, create=False)
    try:
        return {f.path[len(parsed.root):]: store.read(f.path) for f in store.scan(parsed.root)}
    finally:
        store.close()


def test_two_syncs_of_a_grown_session_append_its_entries_once(target_url: str, tmp_path: Path) -> None:
    source_root = str(tmp_path / "source")
    project = str(tmp_path / "project")
    managers = []
    for n in range(2):
        sm = SessionManager.create(project, f"{source_root}/{project_dir_name(project)}", storage=FileStorage(),
                                   blob_store=MemoryBlobStore())
        sm.append_message(user(f"question {n} ✓"))
        sm.append_message(ASSISTANT)
        managers.append(sm)
    record = str(tmp_path / "record.json")
    target = open_store(parse_store_url(target_url))
    first = sync(FileStorage(), target, source_root=source_root, target_root=parse_store_url(target_url).root,
                 state=SyncState(Path(record)))
    target.close()
    assert [i.action for i in first.items] == ["copied", "copied"]

    ctx = multiprocessing.get_context("fork")
    for n in range(ROUNDS):
        for sm in managers:
            sm.append_message(user(f"round {n} ✓"))
            sm.append_message(ASSISTANT)
        barrier, out = ctx.Barrier(2, timeout=60), ctx.Queue()
        runs = [ctx.Process(target=_run_sync, args=(source_root, target_url, record, barrier, out)) for _ in range(2)]
        for p in runs:
            p.start()
        reports = [out.get(timeout=120) for _ in runs]
        for p in runs:
            p.join()
        assert [p.exitcode for p in runs] == [0, 0]
        # per session: one run appended; the other wrote nothing: its append found the target grown
        # (conflict), or, when the record it loaded was already outdated by the other run's save, it
        # read the target after the append and found it equal (unchanged)
        for key in {t for report in reports for t, _, _ in report}:
            actions = sorted(a for report in reports for t, a, _ in report if t == key)
            assert actions in (["appended", "conflict"], ["appended", "unchanged"]), f"round {n}: {key}: {reports}"
        assert all("the target changed during the sync" in why for report in reports
                   for _, a, why in report if a == "conflict")
        source = {str(p)[len(source_root) + 1:]: p.read_bytes() for p in Path(source_root).rglob("*.jsonl")}
        assert _stored(target_url) == source, f"round {n}"  # each entry exactly once

    target = open_store(parse_store_url(target_url))
    after = sync(FileStorage(), target, source_root=source_root, target_root=parse_store_url(target_url).root,
                 state=SyncState(Path(record)))
    target.close()
    assert after.bytes_moved == 0 and not after.conflicts
    for sm in managers:
        sm.close()
