"""Review of ``append_if_size`` (sync's size-checked append) against the real servers: what the
one-statement UPDATE does at the edges of the server's own limits and isolation levels.

* MariaDB/MySQL: ``CONCAT`` returns NULL when its result would be longer than
  ``max_allowed_packet``. A non-strict server then stores ``''`` in the NOT NULL column — the whole
  session gone, reported as a successful append; a strict one fails the statement, which surfaced
  as a StoreError that ended the whole sync (and made ``sync --watch`` reconnect for ever). The
  append is refused before the UPDATE, as a PersistenceError naming the limit: that session is
  ``failed``, the others are synced.
* PostgreSQL with ``default_transaction_isolation`` repeatable read or serializable (a role or
  database setting, or ``options`` in the URL): the UPDATE that waited for another writer's row
  lock fails with a serialization error instead of re-reading the row. It is tried again in a new
  transaction, so it answers what it answers under read committed: False when the other writer
  changed the size, True when it did not."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from omp_session.errors import PersistenceError
from omp_session.format.title import build_title_slot
from omp_session.ops.sync import SyncState, sync
from omp_session.store import open_store, parse_store_url
from omp_session.store.base import FileStorage
from omp_session.store.mysql import MysqlStorage
from omp_session.store.postgres import PostgresStorage
from stores.sqlutil import MYSQL_URL, POSTGRES_URL, drop_table, fresh_table, raw_execute, store_url

pytestmark = pytest.mark.db

SLOT = build_title_slot("review ✓", "auto", "2026-01-01T00:00:00.000Z")
HEADER = SLOT + b'{"type":"session","version":3,"id":"0197","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
DELTA = b'{"type":"message","id":"a1","message":{"role":"user","content":"h\xc3\xa9llo"}}\n'
ROOT = "/home/u/.omp/agent/sessions"
KEY = f"{ROOT}/--w--/big.jsonl"


def _line(n: int) -> bytes:
    """One JSONL line of exactly ``n`` bytes (LF included)."""
    head, tail = b'{"type":"custom","data":"', b'"}\n'
    return head + b"a" * (n - len(head) - len(tail)) + tail


def _max_allowed_packet() -> int:
    return int(raw_execute("mysql", "SELECT @@max_allowed_packet")[0][0])


def _mysql_args(sql_mode: str | None) -> dict[str, Any]:
    parts = urlsplit(MYSQL_URL)
    args: dict[str, Any] = {"host": parts.hostname, "port": parts.port or 3306, "user": parts.username or "root",
                            "password": parts.password or "", "database": parts.path.lstrip("/")}
    if sql_mode is not None:  # a server configured without strict mode (MySQL 5.6's default, a my.cnf)
        args["init_command"] = f"SET SESSION sql_mode = '{sql_mode}'"
    return args


@pytest.fixture
def mysql_table() -> Iterator[str]:
    table = fresh_table()
    try:
        yield table
    finally:
        drop_table("mysql", table)


def _mysql_row(table: str) -> tuple[int, int]:
    rows = raw_execute("mysql", f"SELECT length(content), mtime_ms FROM {table} WHERE path = ?", (KEY,))
    return int(rows[0][0]), int(rows[0][1])


# ----- MariaDB: a body past max_allowed_packet -----------------------------------------------------


@pytest.mark.parametrize(("method", "sql_mode"), [("append_if_size", None), ("append_if_size", ""),
                                                  ("append", "")])
def test_a_mysql_append_past_max_allowed_packet_is_refused_and_the_row_kept(
        mysql_table: str, method: str, sql_mode: str | None) -> None:
    limit = _max_allowed_packet()
    body = HEADER + _line(limit - 65536 - len(HEADER))  # fits in one packet, with room for the statement
    storage = MysqlStorage(_mysql_args(sql_mode), "mysql-review", mysql_table)
    try:
        storage.replace(KEY, body, None)
        before = _mysql_row(mysql_table)
        assert before[0] == len(body)
        delta = _line(70_000)  # body + delta: past the limit
        with pytest.raises(PersistenceError, match="max_allowed_packet"):
            if method == "append_if_size":
                storage.append_if_size(KEY, len(body), delta)
            else:
                storage.append(KEY, delta)
        assert _mysql_row(mysql_table) == before  # not emptied, not touched
        # the connection is still usable, and an append that fits still goes in
        assert storage.append_if_size(KEY, len(body), DELTA) is True
        assert storage.size(KEY) == len(body) + len(DELTA)
    finally:
        storage.close()


def test_a_sync_into_mysql_reports_the_too_large_session_and_syncs_the_others(
        mysql_table: str, tmp_path: Path) -> None:
    limit = _max_allowed_packet()
    source_root = tmp_path / "source"
    (source_root / "--w--").mkdir(parents=True)
    big, small = source_root / "--w--" / "a-big.jsonl", source_root / "--w--" / "b-small.jsonl"
    big.write_bytes(HEADER + _line(limit - 65536 - len(HEADER)))
    small.write_bytes(HEADER)
    url = store_url("mysql", mysql_table, tmp_path / "unused.db")
    target_root = parse_store_url(url).root.rstrip("/")
    state = SyncState(tmp_path / "record.json")
    target = open_store(url)
    try:
        first = sync(FileStorage(), target, source_root=str(source_root), target_root=target_root, state=state)
        assert [i.action for i in first.items] == ["copied", "copied"]
        with big.open("ab") as f:
            f.write(_line(70_000))
        with small.open("ab") as f:
            f.write(DELTA)
        second = sync(FileStorage(), target, source_root=str(source_root), target_root=target_root, state=state)
        assert [i.action for i in second.items] == ["failed", "appended"]
        assert "max_allowed_packet" in second.items[0].reason
        assert target.read(target_root + "/--w--/b-small.jsonl") == HEADER + DELTA
        assert target.size(target_root + "/--w--/a-big.jsonl") == limit - 65536
    finally:
        target.close()


# ----- PostgreSQL: serializable / repeatable read by default --------------------------------------


@pytest.fixture
def serializable() -> Iterator[tuple[PostgresStorage, str]]:
    table = fresh_table()
    sep = "&" if "?" in POSTGRES_URL else "?"
    conninfo = f"{POSTGRES_URL}{sep}options=-c%20default_transaction_isolation%3Dserializable"
    storage = PostgresStorage(conninfo, "pg-review", table)
    try:
        yield storage, table
    finally:
        storage.close()
        drop_table("postgres", table)


def _append_while_another_writer_holds_the_row(storage: PostgresStorage, table: str, other_sql: str,
                                               args: tuple[Any, ...],
                                               write: Callable[[], Any] | None = None) -> list[Any]:
    """``append_if_size(KEY, len(HEADER), DELTA)`` (or ``write()``) started while another
    transaction has updated the row and not committed; that transaction commits once the append
    waits for its row lock."""
    got: list[Any] = []
    with psycopg.connect(POSTGRES_URL) as other:  # a transaction of its own (not autocommit)
        other.execute(other_sql, args)
        pid = storage._conn.info.backend_pid

        def run() -> None:
            try:
                got.append(storage.append_if_size(KEY, len(HEADER), DELTA) if write is None else write())
            except Exception as e:  # the test shows what it was
                got.append(e)

        worker = threading.Thread(target=run)
        worker.start()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as watch:
            for _ in range(6000):  # until the append waits for the row lock (a minute at most)
                row = watch.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
                if (row is not None and row[0] == "Lock") or not worker.is_alive():
                    break
                time.sleep(0.01)
        other.commit()
        worker.join(timeout=120)
    assert not worker.is_alive()
    return got


def test_a_serializable_postgres_append_that_lost_the_race_is_false_not_an_error(
        serializable: tuple[PostgresStorage, str]) -> None:
    storage, table = serializable
    storage.replace(KEY, HEADER, None)
    got = _append_while_another_writer_holds_the_row(
        storage, table, f"UPDATE {table} SET content = content || %s WHERE path = %s", ("{}\n", KEY))
    assert got == [False]
    assert storage.read(KEY) == HEADER + b"{}\n"  # the other writer's bytes, not ours
    # the connection is not left in an aborted transaction
    assert storage.append_if_size(KEY, len(HEADER) + 3, DELTA) is True
    assert storage.read(KEY) == HEADER + b"{}\n" + DELTA


def test_a_serializable_postgres_append_beside_a_title_change_still_appends(
        serializable: tuple[PostgresStorage, str]) -> None:
    """The other writer changed the row but not its length: under read committed the append
    goes in, and it does here too."""
    storage, table = serializable
    storage.replace(KEY, HEADER, None)
    got = _append_while_another_writer_holds_the_row(
        storage, table, f"UPDATE {table} SET title = %s WHERE path = %s", ("renamed", KEY))
    assert got == [True]
    assert storage.read(KEY)[256:] == HEADER[256:] + DELTA


def test_a_serializable_postgres_append_and_rewrite_beside_another_writer_still_write(
        serializable: tuple[PostgresStorage, str]) -> None:
    """The writes of a session (append an entry, rewrite it, change its title) lock the row they
    read: under the server's default isolation of repeatable read or serializable, the one that
    waited for another writer's lock failed ("could not serialize access") where read committed
    reads the row again. Each transaction of ours now says read committed itself."""
    storage, table = serializable
    storage.replace(KEY, HEADER, None)
    got = _append_while_another_writer_holds_the_row(
        storage, table, f"UPDATE {table} SET content = content || %s WHERE path = %s", ("{}\n", KEY),
        write=lambda: storage.append(KEY, DELTA))
    assert got == [len(DELTA)]
    assert storage.read(KEY) == HEADER + b"{}\n" + DELTA
    size = len(HEADER) + 3 + len(DELTA)
    body = HEADER + b'{"type":"custom","data":"x"}\n'
    got = _append_while_another_writer_holds_the_row(
        storage, table, f"UPDATE {table} SET title = %s WHERE path = %s", ("renamed", KEY),
        write=lambda: storage.replace(KEY, body, size))
    assert got == [None]
    assert storage.read(KEY)[256:] == body[256:]
    slot = build_title_slot("third", "user", "2026-01-02T00:00:00.000Z")
    got = _append_while_another_writer_holds_the_row(
        storage, table, f"UPDATE {table} SET mtime_ms = mtime_ms + 1 WHERE path = %s", (KEY,),
        write=lambda: storage.write_title_slot(KEY, slot))
    assert got == [True]
    assert storage.read(KEY)[:256] == slot
