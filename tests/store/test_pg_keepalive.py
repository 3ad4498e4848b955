"""Every PostgreSQL connection of ours carries TCP keepalives and a user timeout (pg_options.py):
a server that vanished without a word ends the connection in about a minute, so `sync --watch`
reconnects instead of waiting forever. Checked on the socket itself; a URL's own value wins."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from omp_session.store.derived.tables import DerivedTables
from omp_session.store.pg_options import KEEPALIVES, libpq_options
from omp_session.store.postgres import PostgresStorage
from omp_session.store.url import parse_store_url
from stores.sqlutil import POSTGRES_URL, drop_table, fresh_table, store_url


def _socket_options(conn: object) -> tuple[int, int, int, int, int]:
    s = socket.socket(fileno=conn.pgconn.socket)  # type: ignore[attr-defined]
    try:
        return (s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT))
    finally:
        s.detach()  # the connection's socket: not ours to close


WANT = (1, KEEPALIVES["keepalives_idle"], KEEPALIVES["keepalives_interval"], KEEPALIVES["keepalives_count"],
        KEEPALIVES["tcp_user_timeout"])


@pytest.fixture
def table() -> Iterator[str]:
    name = fresh_table()
    yield name
    drop_table("postgres", name)


@pytest.mark.db
def test_the_session_store_connection_has_keepalives(table: str) -> None:
    storage = PostgresStorage(POSTGRES_URL, "pg", table)
    try:
        storage.size("/nothing.jsonl")  # connects
        assert _socket_options(storage._conn) == WANT
    finally:
        storage.close()


@pytest.mark.db
def test_the_derived_tables_connection_has_keepalives(table: str) -> None:
    storage = PostgresStorage(POSTGRES_URL, "pg", table)
    storage.size("/nothing.jsonl")  # makes the session table the derived tables stand beside
    storage.close()
    tables = DerivedTables(parse_store_url(store_url("postgres", table, Path("unused"))))
    try:
        assert _socket_options(tables.conn) == WANT
    finally:
        tables.close()


@pytest.mark.db
def test_a_value_in_the_url_wins(table: str) -> None:
    sep = "&" if "?" in POSTGRES_URL else "?"
    storage = PostgresStorage(f"{POSTGRES_URL}{sep}keepalives_idle=7", "pg", table)
    try:
        storage.size("/nothing.jsonl")
        assert _socket_options(storage._conn)[1] == 7
    finally:
        storage.close()


@pytest.mark.parametrize(("conninfo", "left_out"), [
    ("postgresql://u@h/db", set()),
    ("postgresql://u@h/db?connect_timeout=3&keepalives=0", {"connect_timeout", "keepalives"}),
    ("host=h connect_timeout=3 tcp_user_timeout=5", {"connect_timeout", "tcp_user_timeout"}),
    ("postgresql://u@h/db?application_name=my_keepalives_idle", set()),
])
def test_options_the_conninfo_sets_are_left_to_it(conninfo: str, left_out: set[str]) -> None:
    got = libpq_options(conninfo, 2.5)
    assert set(got) == ({"connect_timeout", *KEEPALIVES} - left_out)
    if "connect_timeout" in got:
        assert got["connect_timeout"] == 3
