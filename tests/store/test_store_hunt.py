"""Regressions found by using ``sync`` and the stores as a team would, and as an unlucky one would:
each test failed before its fix (docs/stores.md, "omp-session sync")."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from omp_session.format.title import build_title_slot
from omp_session.ops.sync import SyncState, sync
from omp_session.store import open_store, parse_store_url
from omp_session.store.base import FileStorage
from stores.sqlutil import SQL_BACKENDS, drop_table, fresh_table, store_url

SLOT = build_title_slot("hunt ✓", "auto", "2026-01-01T00:00:00.000Z")
HEADER = SLOT + b'{"type":"session","version":3,"id":"0197","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind, table = request.param, fresh_table()
    try:
        yield store_url(kind, table, tmp_path / "sessions.db")
    finally:
        drop_table(kind, table)


def _sync(source_root: Path, url: str, tmp_path: Path) -> list[tuple[str, str, str]]:
    target_root = parse_store_url(url).root.rstrip("/")
    target = open_store(url)
    try:
        report = sync(FileStorage(), target, source_root=str(source_root), target_root=target_root,
                      state=SyncState(tmp_path / "record.json"))
    finally:
        target.close()
    return [(i.source[len(str(source_root)) + 1:], i.action, i.reason) for i in report.items]


# ----- a file name that is not UTF-8 -------------------------------------------------------------


def test_a_session_whose_name_is_not_utf8_fails_alone_in_a_sync_to_sql(sql_url: str, tmp_path: Path) -> None:
    """A session file named with bytes that are not UTF-8 (os.fsdecode gives surrogates) cannot be
    a key of a text column: it used to end the whole sync with a UnicodeEncodeError traceback, the
    sessions after it never synced. Now that session is ``failed``, one line naming it."""
    source = tmp_path / "source"
    (source / "--w--").mkdir(parents=True)
    (source / "--w--" / "a.jsonl").write_bytes(HEADER)
    with open(os.path.join(os.fsencode(source), b"--w--", b"b\xff.jsonl"), "wb") as f:
        f.write(HEADER)
    (source / "--w--" / "c.jsonl").write_bytes(HEADER)
    items = _sync(source, sql_url, tmp_path)
    assert [(name, action) for name, action, _ in items] == [
        ("--w--/a.jsonl", "copied"), ("--w--/b\udcff.jsonl", "failed"), ("--w--/c.jsonl", "copied")]
    assert "not valid UTF-8" in items[1][2] and "\n" not in items[1][2]
