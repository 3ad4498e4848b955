"""A fresh team store (omp's table and the derived tables) on SQLite or the machine's PostgreSQL,
for the tests of the derived tables: its URL, and the tables dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from omp_session.store.derived import derived_names

from .sqlutil import POSTGRES_URL

ROOT = "/team/sessions/"


def drop_derived(table: str) -> None:
    """Drop omp's table ``table`` and its derived tables from the machine's PostgreSQL."""
    n = derived_names(table)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for name in (n.entries, n.usage, n.sessions, table):
            conn.execute(f"DROP TABLE IF EXISTS {name}")


@contextmanager
def team_url(kind: str, tmp_path: Path, root: str = ROOT) -> Iterator[str]:
    """The URL of a fresh table on ``kind`` ("sqlite" or "postgres") under ``root``."""
    table = f"t_{uuid.uuid4().hex[:16]}"
    base = f"sqlite:{tmp_path / 'team.db'}" if kind == "sqlite" else POSTGRES_URL
    try:
        yield f"{base}?table={table}&root={root}"
    finally:
        if kind == "postgres":
            drop_derived(table)


@contextmanager
def pg_roles(*names: str, group: str | None = None) -> Iterator[None]:
    """Roles on the machine's PostgreSQL that may log in (it trusts 127.0.0.1), members of the
    NOLOGIN role ``group`` when given (made first); dropped afterwards with what they own or were
    granted."""
    made: list[str] = []
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            if group is not None:
                conn.execute(f"CREATE ROLE {group} NOLOGIN")
                made.append(group)
            for name in names:
                conn.execute(f"CREATE ROLE {name} LOGIN" + (f" IN ROLE {group}" if group is not None else ""))
                made.append(name)
        yield
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            for name in reversed(made):
                conn.execute(f"DROP OWNED BY {name}")  # grants left on tables not yet dropped
                conn.execute(f"DROP ROLE {name}")


def as_role(role: str, url: str) -> str:
    """``url`` (the machine's PostgreSQL as postgres) connecting as ``role`` instead."""
    assert url.startswith("postgresql://postgres@")
    return url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)
