"""Property: whatever happens to the source between syncs (appends, title changes, rewrites, new
sessions), a sync leaves every session byte-identical in the target, a second sync moves nothing,
and a session changed on the target side too is never overwritten."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.format.title import build_title_slot
from omp_session.ops.sync import SyncState, sync
from omp_session.store.base import MemoryStorage
from omp_session.store.sqlite import SqliteStorage

HEADER = b'{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters='"\\\n'), max_size=12)
op = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 3), text),
    st.tuples(st.just("title"), st.integers(0, 3), text),
    st.tuples(st.just("rewrite"), st.integers(0, 3), text),
    st.tuples(st.just("target"), st.integers(0, 3), text),  # someone writes into the target copy
    st.tuples(st.just("sync"), st.just(0), st.just("")),
)


def _key(root: str, n: int) -> str:
    return f"{root}/--p--/2026-01-01T00-00-00-000Z_{n}.jsonl"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=25))
def test_sync_converges_and_never_overwrites_a_target_change(ops: list[tuple[str, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = MemoryStorage()
        target = SqliteStorage(str(Path(tmp) / "t.db"))
        state_file = Path(tmp) / "state.json"
        touched: set[int] = set()  # sessions written on the target side since they were last in sync

        def run() -> None:
            before = {f.path: target.read(f.path) for f in target.scan("/t/")}
            report = sync(source, target, source_root="/s", target_root="/t", state=SyncState(state_file))
            for item in report.items:
                n = int(item.target.rsplit("_", 1)[1][: -len(".jsonl")])
                if item.action in ("conflict", "kept"):
                    assert n in touched, item
                    assert target.read(item.target) == before[item.target]  # never overwritten
                else:
                    assert target.read(item.target) == source.read(item.source), item
                    touched.discard(n)
            again = sync(source, target, source_root="/s", target_root="/t", state=SyncState(state_file))
            assert again.bytes_moved == 0

        for kind, n, value in ops:
            key = _key("/s", n)
            if kind == "sync":
                run()
            elif kind == "target":
                if target.size(_key("/t", n)) is not None:
                    target.append(_key("/t", n), f'{{"target":"{value}"}}\n'.encode())
                    touched.add(n)
            elif source.size(key) is None or kind == "rewrite":
                body = build_title_slot(value, "auto", "2026-01-01T00:00:00.000Z") + HEADER \
                    + f'{{"v":"{value}"}}\n'.encode()
                source.replace(key, body, source.size(key))  # a write: a new mtime, like every store
            elif kind == "append":
                source.append(key, f'{{"m":"{value}"}}\n'.encode())
            else:
                source.append(key, b'{"type":"title_change"}\n')
                assert source.write_title_slot(key, build_title_slot(value, "user", "2026-02-02T00:00:00.000Z"))
        run()
        target.close()
