"""MySQL / MariaDB through PyMySQL: omp's MySQL dialect of the session table.

PyMySQL is pure Python and maintained; the session table needs nothing a C driver adds. The
connection uses ``utf8mb4`` (the table's charset) and ``CLIENT.FOUND_ROWS``, so an UPDATE that
matched a row counts it even when the new values equal the old ones (omp re-reads the size to
cover that case; with FOUND_ROWS the count is already exact).
"""

from __future__ import annotations

from typing import Any

import pymysql  # type: ignore[import-untyped]
from pymysql.constants import CLIENT  # type: ignore[import-untyped]

from omp_session.errors import StoreError

from .sql import DEFAULT_TABLE, Dialect, SqlStorage
from .url import DEFAULT_TIMEOUT

__all__ = ["MysqlStorage"]

MYSQL = Dialect(
    name="mysql", param="%s", int_param="%s",
    byte_len="length(content)",
    head="substring(cast(content AS binary), 1, %s)",
    last_char="right(content, 1)",
    concat="CONCAT(content, %s)",
    begin="START TRANSACTION",
    lock=" FOR UPDATE",
)

_DUPLICATE_KEY = 1062
_DUPLICATE_COLUMN = 1060


class MysqlStorage(SqlStorage):
    """Sessions in a MySQL or MariaDB table."""

    dialect = MYSQL
    driver_errors = (pymysql.Error,)

    def __init__(self, connect_args: dict[str, Any], name: str, table: str = DEFAULT_TABLE, *,
                 create_table: bool = True, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._args = connect_args
        self.timeout = timeout
        self._charsets: dict[str, str] = {}
        super().__init__(name, table, create_table=create_table)

    def _connect(self) -> Any:
        # connect_timeout bounds only the TCP connect; the server's greeting is read with the read
        # timeout, and a server that is not MySQL (Redis, PostgreSQL) never sends one
        conn = pymysql.connect(**self._args, charset="utf8mb4", autocommit=True, client_flag=CLIENT.FOUND_ROWS,
                               connect_timeout=self.timeout, read_timeout=self.timeout,
                               write_timeout=self.timeout)
        # then no limit again: a statement may wait for a row lock held by another writer
        # (PyMySQL sets the socket's timeout from these before each read and write)
        conn._read_timeout = conn._write_timeout = None
        return conn

    def reason(self, error: BaseException) -> str:
        if isinstance(error, pymysql.Error) and len(error.args) == 2:
            return " ".join(str(error.args[1]).split()) + f" (error {error.args[0]})"
        return super().reason(error)

    def _is_duplicate_key(self, error: BaseException) -> bool:
        return isinstance(error, pymysql.Error) and bool(error.args) and error.args[0] == _DUPLICATE_KEY

    def _is_duplicate_column(self, error: BaseException) -> bool:
        return isinstance(error, pymysql.Error) and bool(error.args) and error.args[0] == _DUPLICATE_COLUMN

    def _columns(self, cur: Any) -> dict[str, str]:
        cur.execute("SELECT column_name, data_type, character_set_name FROM information_schema.columns "
                    "WHERE table_schema = DATABASE() AND table_name = %s", (self.table,))
        rows = cur.fetchall()
        self._charsets = {str(r[0]).lower(): str(r[2] or "").lower() for r in rows}
        return {str(r[0]).lower(): str(r[1]).lower() for r in rows}

    def _prepare(self, create_table: bool) -> None:
        super()._prepare(create_table)
        # sizes are length(content), in the column's character set: in latin1 or utf8mb3 an "é" or
        # a 4-byte character counts otherwise than in the UTF-8 body (every append to such a session
        # a conflict for ever), or cannot be stored at all ("Incorrect string value"; in a title
        # column too, which ended the whole sync)
        for column in ("content", "path", "title", "title_source", "title_updated_at"):
            charset = self._charsets.get(column, "")
            if charset != "utf8mb4":
                raise StoreError(f"{self.name}: column {self.table}.{column} is in the character set {charset}, "
                                 "omp 18.2.3 makes it utf8mb4: not omp's session table layout")
