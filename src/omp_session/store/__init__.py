"""Session stores: where omp keeps session files — a directory, SQLite, PostgreSQL, MySQL/MariaDB
or Redis — behind one :class:`~omp_session.storage.SessionStorage` interface (spec S12).

:func:`open_store` turns a store URL into a storage; :class:`~omp_session.SessionManager`,
the read commands (``--store``) and ``omp-session sync`` take one. docs/stores.md has the layout
of each backend and how it matches omp 18.2.3's.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from omp_session.errors import StoreError, StoreMissingError

if TYPE_CHECKING:
    from .base import FileStorage, MemoryStorage, SessionStorage, StoredFile
    from .url import StoreURL, parse_store_url

# imported when first asked for: a command that only writes a file atomically (store.atomic) or
# reads search tables does not pay for the storages and the URL parser
_LAZY = {"FileStorage": "base", "MemoryStorage": "base", "SessionStorage": "base", "StoredFile": "base",
         "StoreURL": "url", "parse_store_url": "url"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

__all__ = ["FileStorage", "MemoryStorage", "SessionStorage", "StoreError", "StoreMissingError", "StoreURL", "StoredFile", "open_store",
           "parse_store_url"]


def open_store(url: str | StoreURL, *, create: bool = True, timeout: float | None = None) -> SessionStorage:
    """The storage a store URL names, connected and checked.

    ``create=False`` opens for reading: no table is created (a missing one is an error).
    ``timeout``: seconds a server has to connect and finish its handshake (default: the URL's
    ``timeout`` option, else 10); file and SQLite stores ignore it. Raises
    :class:`StoreError` with one line naming the store for a bad URL, an unreachable server,
    refused credentials, an unsafe table name or a table that is not omp's layout.
    """
    from .base import FileStorage
    from .url import check_timeout, parse_store_url

    parsed = parse_store_url(url) if isinstance(url, str) else url
    opts = parsed.options
    seconds = check_timeout(timeout, parsed.name) if timeout is not None else parsed.timeout
    if parsed.kind == "file":
        if not create and not os.path.isdir(parsed.location):
            raise StoreMissingError(f"{parsed.name}: no such directory")
        return FileStorage()
    if parsed.kind == "sqlite":
        from .sqlite import SqliteStorage

        return SqliteStorage(parsed.location, opts.get("table", "omp_session_files"), create_table=create)
    if parsed.kind == "postgres":
        # psycopg only where the built-in client cannot connect (pg_connect.py requires it then)
        from .postgres import PostgresStorage

        return PostgresStorage(parsed.location, parsed.name, opts.get("table", "omp_session_files"),
                               create_table=create, connect_timeout=seconds)
    from urllib.parse import unquote, urlsplit

    from omp_session.extras import require

    if parsed.kind == "mysql":
        require("pymysql")
        from .mysql import MysqlStorage

        parts = urlsplit(parsed.location)
        args: dict[str, Any] = {"host": parts.hostname or "localhost", "port": parts.port or 3306,
                                "user": unquote(parts.username or "root"),
                                "password": unquote(parts.password or ""),
                                "database": unquote(parts.path.lstrip("/")) or None}
        if "unix_socket" in parsed.extra:
            args["unix_socket"] = parsed.extra["unix_socket"]
        return MysqlStorage(args, parsed.name, opts.get("table", "omp_session_files"), create_table=create,
                            timeout=seconds)
    require("redis")
    from .redis import RedisStorage

    return RedisStorage(parsed.location, prefix=opts.get("prefix", "omp:sessions:"), timeout=seconds)
