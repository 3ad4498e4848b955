"""PostgreSQL: omp's PostgreSQL dialect of the session table, through the built-in client or psycopg 3
(pg_connect.py)."""

from __future__ import annotations

from typing import Any

from omp_session.errors import StoreError

from .pg_connect import connect, driver_errors
from .pg_options import libpq_options
from .sql import DEFAULT_TABLE, Dialect, SqlStorage
from .url import DEFAULT_TIMEOUT

__all__ = ["PostgresStorage"]

POSTGRES = Dialect(
    name="postgres", param="%s", int_param="%s::integer",
    byte_len="octet_length(content)",
    head="substring(convert_to(content, 'UTF8') from 1 for %s::integer)",
    last_char="right(content, 1)",
    concat="content || %s",
    # read committed whatever the role's or database's default: each write locks the one row it
    # reads (FOR UPDATE) and, having waited for another writer, must read that row again, where
    # repeatable read and serializable fail with "could not serialize access"
    begin="BEGIN ISOLATION LEVEL READ COMMITTED",
    lock=" FOR UPDATE",
)


class PostgresStorage(SqlStorage):
    """Sessions in a PostgreSQL table. ``conninfo`` is a libpq URL or key=value string."""

    dialect = POSTGRES

    def __init__(self, conninfo: str, name: str, table: str = DEFAULT_TABLE, *, create_table: bool = True,
                 connect_timeout: float = DEFAULT_TIMEOUT) -> None:
        self._conninfo = conninfo
        self.timeout = connect_timeout
        # the errors of the client that connects (read by SqlStorage's except clauses when they
        # catch, so _connect sets them again once it knows which client it was)
        self.driver_errors = driver_errors()
        super().__init__(name, table, create_table=create_table)

    def _connect(self) -> Any:
        # autocommit: _tx issues BEGIN / COMMIT itself, so a read outside one holds no snapshot.
        # connect_timeout covers the whole start-up (TLS negotiation, authentication);
        # keepalives end a connection to a server that vanished (pg_options.py)
        try:
            conn, self.driver_errors = connect(self._conninfo, libpq_options(self._conninfo, self.timeout))
        except BaseException:
            self.driver_errors = driver_errors()  # psycopg's too, when it was the one that failed
            raise
        return conn

    def _prepare(self, create_table: bool) -> None:
        # sizes are the server's octet_length, which counts the database's encoding: in a LATIN1
        # database "é" is one byte, so every size check against the UTF-8 body fails (each append a
        # conflict for ever), and a character outside it fails the write. SQL_ASCII would keep the
        # bytes, but its text reaches us as bytes (psycopg's; the built-in client leaves it to
        # psycopg), so no store of it could ever open: refused too, before a table is made
        encoding = self._conn.info.parameter_status("server_encoding")
        if encoding not in (None, "UTF8"):
            raise StoreError(f"{self.name}: the database's encoding is {encoding}: omp's session table needs a "
                             "UTF8 database (sizes are UTF-8 byte lengths; sessions hold any character)")
        super()._prepare(create_table)

    def reason(self, error: BaseException) -> str:
        # libpq's messages span lines ("connection to server at ... failed: FATAL: ..."): keep the gist
        lines = [" ".join(line.split()) for line in str(error).splitlines() if line.strip()]
        text = "; ".join(dict.fromkeys(lines)) or type(error).__name__
        return text.removeprefix("connection failed: ")

    def _columns(self, cur: Any) -> dict[str, str]:
        # omp inlines the name unquoted, so PostgreSQL folds it to lower case
        cur.execute("SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = %s", (self.table.lower(),))
        return {str(r[0]): str(r[1]).lower() for r in cur.fetchall()}
