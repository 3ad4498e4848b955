"""Row-level security on a PostgreSQL store's search tables: ``rls.sql`` (a psql script, shipped
beside this module) applied through the store's own connection (docs/team.md).

The script is the one source of the policies; this reads its statements after the psql preamble
and fills in the names psql would (with the search tables' real names, hashed ones included).
"""

from __future__ import annotations

import re
from importlib.resources import files

from omp_session.errors import StoreError

from .layout import writable_version
from .tables import DerivedTables

__all__ = ["apply_rls", "grant", "rls_script", "rls_statements"]

_MARK = "-- policies"
_VARIABLE = re.compile(r""":"(\w+)"|:'(\w+)'|:(entries_seq)\b""")


def rls_script() -> str:
    """The text of ``rls.sql``."""
    return files(__package__).joinpath("rls.sql").read_text(encoding="utf-8")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def rls_statements(tables: DerivedTables, team: str, entries_seq: str) -> list[str]:
    """The script's statements for ``tables``, granting to the role ``team``; ``entries_seq``:
    the entries table's id sequence, as ``pg_get_serial_sequence`` names it."""
    names = {"omp_table": tables.table, "sessions_t": tables.names.sessions, "entries_t": tables.names.entries,
             "usage_t": tables.names.usage, "team": team}

    def fill(m: re.Match[str]) -> str:
        ident, literal, raw = m.groups()
        if ident is not None:
            return _ident(names[ident])
        if literal is not None:
            return "'" + names[literal].replace("'", "''") + "'"
        assert raw == "entries_seq", raw
        return entries_seq

    body = rls_script().split(_MARK, 1)[1].split("\n", 1)[1]
    lines = [line for line in body.splitlines() if not line.lstrip().startswith("--")]
    out: list[str] = []
    for statement in re.split(r";[ \t]*\n", "\n".join(lines) + "\n"):
        statement = statement.strip()
        if statement and statement.upper() not in ("BEGIN", "COMMIT"):
            out.append(_VARIABLE.sub(fill, statement))
    return out


def apply_rls(tables: DerivedTables, team: str) -> None:
    """Enable the policies of ``rls.sql`` on ``tables`` (a PostgreSQL store's, made already), as
    their owner, in one transaction."""
    if tables.dialect != "postgres":
        raise StoreError(f"{tables.name}: row-level security needs a PostgreSQL store")
    if writable_version(tables) is None:
        raise StoreError(f"{tables.name}: no search tables yet: run omp-session index --store URL once")
    statements = rls_statements(tables, team, _sequence(tables))
    with tables.transaction("enabling row-level security") as conn:
        for statement in statements:
            conn.execute(statement)


def grant(tables: DerivedTables, role: str) -> None:
    """The grants of ``rls.sql`` to ``role`` without its policies (a PostgreSQL store's tables
    remade by an upgrade, for a role that could use the old ones)."""
    if tables.dialect != "postgres":
        return
    statements = [s for s in rls_statements(tables, role, _sequence(tables)) if s.upper().startswith("GRANT")]
    with tables.transaction("granting the derived tables again") as conn:
        for statement in statements:
            conn.execute(statement)


def _sequence(tables: DerivedTables) -> str:
    found = tables.rows("SELECT pg_get_serial_sequence(?, 'id')", (tables.names.entries,))
    if not found or found[0][0] is None:
        raise StoreError(f"{tables.name}: {tables.names.entries} has no id sequence: not omp-session's table")
    return str(found[0][0])
