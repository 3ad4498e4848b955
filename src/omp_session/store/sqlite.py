"""SQLite through the standard library's ``sqlite3``: omp's SQLite dialect of the session table."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from omp_session.errors import StoreMissingError

from .sql import DEFAULT_TABLE, Dialect, SqlStorage

__all__ = ["SqliteStorage"]

SQLITE = Dialect(
    name="sqlite", param="?", int_param="?",
    byte_len="length(cast(content AS blob))",
    head="substr(cast(content AS blob), 1, ?)",
    last_char="substr(content, -1)",
    concat="content || ?",
    # IMMEDIATE takes the write lock before the first read, so a read-then-write never deadlocks
    begin="BEGIN IMMEDIATE",
    lock="",
)


class SqliteStorage(SqlStorage):
    """Sessions in an SQLite database file (created when missing, with its directory)."""

    dialect = SQLITE
    driver_errors = (sqlite3.Error,)

    def __init__(self, path: str, table: str = DEFAULT_TABLE, *, create_table: bool = True,
                 timeout: float = 30.0) -> None:
        self.path = path
        self.name = f"sqlite:{path}"
        self._timeout = timeout
        self._create = create_table
        super().__init__(f"sqlite:{path}", table, create_table=create_table)

    def _connect(self) -> Any:
        if self.path != ":memory:":
            if not self._create and not os.path.exists(self.path):
                raise StoreMissingError(f"{self.name}: no database file {self.path}")
            parent = os.path.dirname(os.path.abspath(self.path))
            if self._create and not os.path.isdir(parent):
                os.makedirs(parent, exist_ok=True)
        # autocommit mode: _tx issues BEGIN IMMEDIATE / COMMIT itself
        return sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)

    def _columns(self, cur: Any) -> dict[str, str]:
        cur.execute(f"PRAGMA table_info({self.table})")
        return {str(r[1]): str(r[2]).lower() for r in cur.fetchall()}
