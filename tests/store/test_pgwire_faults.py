"""The built-in PostgreSQL client (store/pgwire/) under load and interruption, against the machine's
PostgreSQL: a value of many megabytes is read in linear work, and a query interrupted (Ctrl-C) leaves
a connection that refuses further statements instead of answering them with the interrupted one's
result."""

from __future__ import annotations

import builtins
import signal
import threading
import time
from typing import Any

import psycopg
import pytest

from omp_session.store import pgwire
from omp_session.store.pgwire import connection as wire_connection
from stores.sqlutil import POSTGRES_URL


def test_a_value_of_megabytes_is_copied_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 100 MB session body is one DataRow: read it in 64 KB pieces and copy what has arrived
    after each piece, and the work grows with the square of its size (minutes, where psycopg
    takes a second). The bytes the client copies must stay a small multiple of the value's."""
    size = 8_000_000
    copied = [0]

    def counting_bytes(*args: Any) -> bytes:
        out = builtins.bytes(*args)
        copied[0] += len(out)
        return out

    conn = pgwire.connect(POSTGRES_URL)
    try:
        monkeypatch.setattr(wire_connection, "bytes", counting_bytes, raising=False)
        (value,) = conn.execute("SELECT repeat('é', %s::integer / 2) || 'end'", (size,)).fetchall()[0]
        assert len(value.encode()) == size + 3 and value.endswith("é" * 10 + "end")
        assert copied[0] < 4 * size, f"{copied[0]:,} bytes copied to read a value of {size:,}"
        # and the connection goes on, in step with the server
        assert conn.execute("SELECT %s::text", ("next",)).fetchall() == [("next",)]
    finally:
        conn.close()


def _wait_active(pid: int) -> None:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as watcher:
        for _ in range(500):
            row = watcher.execute(
                "SELECT state FROM pg_stat_activity WHERE pid = %s AND query LIKE %s", (pid, "%pg_sleep%")
            ).fetchone()
            if row and row[0] == "active":
                return
            time.sleep(0.01)
    raise AssertionError("the query never ran")


def test_a_query_interrupted_leaves_a_connection_that_refuses_the_next_one() -> None:
    """Ctrl-C while the server runs a statement: the rows it still sends would be read as the next
    statement's (SqlStorage's ROLLBACK after the interrupt, then anything after it), so the
    connection is closed, as one the server ended; close() still works."""
    conn = pgwire.connect(POSTGRES_URL)
    main = threading.get_ident()

    def interrupt() -> None:
        _wait_active(conn.info.backend_pid)
        signal.pthread_kill(main, signal.SIGINT)

    killer = threading.Thread(target=interrupt, daemon=True)
    killer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            conn.execute("SELECT pg_sleep(0.5), 'interrupted'")
        killer.join(10)
        assert conn.closed
        with pytest.raises(pgwire.OperationalError, match=r"^the connection is closed$"):
            conn.execute("ROLLBACK")
        with pytest.raises(pgwire.OperationalError, match=r"^the connection is closed$"):
            conn.cursor()
    finally:
        conn.close()
        conn.close()


def test_a_connection_on_a_descriptor_past_1024_still_queries() -> None:
    """A long-running process (sync --watch, serve) may hold more than 1024 descriptors: the look
    for what the server sent while idle must not use select(), which refuses such a socket."""
    import os
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:  # raised for this test as far as the hard limit lets (a process may do so)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
        if min(hard, 4096) < 1200:
            pytest.skip(f"the hard descriptor limit is {hard}")
    read_end, write_end = os.pipe()
    held = []
    try:
        while len(held) < 1030:
            held.append(os.dup(read_end))
        conn = pgwire.connect(POSTGRES_URL)
        try:
            assert conn.pgconn.socket >= 1024
            assert conn.execute("SELECT %s::int", (1,)).fetchall() == [(1,)]
            assert conn.execute("SELECT 2").fetchall() == [(2,)]
        finally:
            conn.close()
    finally:
        for fd in (*held, read_end, write_end):
            os.close(fd)
