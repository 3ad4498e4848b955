"""Test helpers for the SQL stores: the real servers on loopback, one fresh table per test.

The servers (``.ci/services.sh`` starts them): PostgreSQL 127.0.0.1:5432 (trust, database
``test``), MariaDB 127.0.0.1:3306 (root, no password, database ``test``). Override with
``OMP_TEST_POSTGRES_URL`` / ``OMP_TEST_MYSQL_URL``.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pymysql

from omp_session.write import manager as manager_module

POSTGRES_URL = os.environ.get("OMP_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("OMP_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
SQL_BACKENDS = ["sqlite", "postgres", "mysql"]


def fresh_table() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


def drop_table(kind: str, table: str, sqlite_path: Path | None = None) -> None:
    if kind == "postgres":
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    elif kind == "mysql":
        conn = mysql_connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP TABLE IF EXISTS {table}")
        finally:
            conn.close()


def mysql_connect() -> Any:
    from urllib.parse import urlsplit

    parts = urlsplit(MYSQL_URL)
    return pymysql.connect(host=parts.hostname, port=parts.port or 3306, user=parts.username or "root",
                           password=parts.password or "", database=parts.path.lstrip("/"), autocommit=True,
                           charset="utf8mb4")


def raw_execute(kind: str, sql: str, params: tuple[Any, ...] = (), sqlite_path: Path | None = None) -> list[Any]:
    """Run SQL directly (not through our storage): to look at what is stored, or to break it."""
    if kind == "postgres":
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            cur = conn.execute(sql.replace("?", "%s"), params)
            return list(cur.fetchall()) if cur.description else []
    if kind == "mysql":
        conn = mysql_connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql.replace("?", "%s"), params)
                return list(cur.fetchall())
        finally:
            conn.close()
    import sqlite3

    assert sqlite_path is not None
    with sqlite3.connect(sqlite_path) as db:
        rows = list(db.execute(sql, params).fetchall())
        db.commit()
        return rows


def store_url(kind: str, table: str, sqlite_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:{sqlite_path}?table={table}"
    base = POSTGRES_URL if kind == "postgres" else MYSQL_URL
    return f"{base}?table={table}"


@contextmanager
def deterministic_ids() -> Iterator[None]:
    """Ids and timestamps from counters, so two runs of one script write the same bytes."""
    counter = itertools.count(1)
    clock = itertools.count(1_767_225_600_000, 1000)
    saved = (manager_module.generate_id, manager_module.iso_timestamp, manager_module.new_session_id,
             manager_module.new_session_timestamp)

    def iso(ms: int | None = None) -> str:
        from omp_session.write.ids import iso_timestamp

        return iso_timestamp(next(clock) if ms is None else ms)

    manager_module.generate_id = lambda taken: f"{next(counter):08x}"  # type: ignore[assignment]
    manager_module.iso_timestamp = iso  # type: ignore[assignment]
    manager_module.new_session_id = lambda ms=None: f"0197aaaa-0000-7000-8000-{next(counter):012x}"  # type: ignore[assignment]
    manager_module.new_session_timestamp = lambda: iso()  # type: ignore[assignment]
    try:
        yield
    finally:
        (manager_module.generate_id, manager_module.iso_timestamp, manager_module.new_session_id,
         manager_module.new_session_timestamp) = saved  # type: ignore[assignment]
