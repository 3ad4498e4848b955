"""Whether a store's derived tables can serve this omp-session, and the one line that says why
not (docs/team.md): none yet, an older layout (``index --store`` derives them again), one that is
not omp-session's, or a newer layout, which this omp-session neither reads nor rewrites (it would
misread the columns, and a rebuild would throw away what the newer one derived)."""

from __future__ import annotations

from omp_session.errors import StoreError

from .schema import SCHEMA_VERSION
from .tables import NOT_SUPPORTED, DerivedTables

__all__ = ["checked_version", "needs_tables", "newer_layout", "not_supported", "writable_version"]


def newer_layout(name: str, version: int) -> str:
    return (f"{name}: the search tables are layout {version}, this omp-session knows layouts up to "
            f"{SCHEMA_VERSION}: upgrade omp-session")


def checked_version(tables: DerivedTables) -> int | None:
    """``tables.version()``; a newer layout than this omp-session's is a :class:`StoreError`."""
    version = tables.version()
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(newer_layout(tables.name, version))
    return version


def writable_version(tables: DerivedTables) -> int | None:
    """:func:`checked_version` for a writer: a table of the derived tables' name that is not
    omp-session's (version 0: its ``layout`` default NULL or not a number) is a :class:`StoreError`
    too, neither derived into, emptied nor dropped."""
    version = checked_version(tables)
    if version == 0:
        raise StoreError(f"{tables.name}: {tables.names.sessions} in the database is not omp-session's: "
                         "left alone, nothing derived into it")
    return version


def needs_tables(tables: DerivedTables, need: str, version: int | None) -> StoreError:
    """The error for ``need`` (a flag such as ``--user``, or ``search --store``), which reads the
    derived tables, when they are at ``version`` (``checked_version``: not a newer one) and not
    of this layout."""
    if version is None:
        why = "there are none yet: run omp-session index --store URL"
    elif version == 0:
        why = f"{tables.names.sessions} in the database is not omp-session's"
    else:
        why = (f"they are of an older layout ({version}, this omp-session's: {SCHEMA_VERSION}): run omp-session "
               "index --store URL")
    return StoreError(f"{tables.name}: {need} needs the search tables, and {why}")


def not_supported(name: str, need: str) -> StoreError:
    """The error for ``need`` on a store that has no derived tables (MySQL/MariaDB, Redis, files)."""
    return StoreError(f"{name}: {need} needs the search tables: {NOT_SUPPORTED}")
