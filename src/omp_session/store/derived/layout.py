"""Whether a store's derived tables can serve this omp-session, and the one line that says why
not (docs/team.md): none yet, an older layout (``index --store`` derives them again), one that is
not omp-session's, or a newer layout, which this omp-session neither reads nor rewrites (it would
misread the columns, and a rebuild would throw away what the newer one derived).

:func:`tables_layout` is the one place that decides which: the command line's refusals
(:meth:`TablesLayout.refusal`, exit 1) and ``serve --store``'s (serve/store_filters.py, a 400)
are worded from its :attr:`TablesLayout.why`."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import EllipsisType

from omp_session.errors import StoreError

from .schema import SCHEMA_VERSION
from .tables import NOT_SUPPORTED, DerivedTables

__all__ = ["Fact", "TablesLayout", "checked_version", "needs_tables", "newer_layout", "not_supported",
           "tables_layout", "writable_version"]

_INDEX = "run omp-session index --store URL"


class Fact(enum.Enum):
    """What a store's derived tables are to this omp-session."""

    UNSUPPORTED = "unsupported"  # a store that cannot have them: MySQL/MariaDB, Redis, files
    MISSING = "missing"  # none yet: index --store makes them
    FOREIGN = "foreign"  # a table of their name that is not omp-session's (version 0): left alone
    OLDER = "older"  # an older layout: index --store derives them again
    NEWER = "newer"  # a newer layout: neither read nor rewritten (upgrade omp-session)
    CURRENT = "current"  # this omp-session's layout


@dataclass(frozen=True, slots=True)
class TablesLayout:
    """The :class:`Fact` about store ``name``'s derived tables, and the parts their lines are
    worded from: ``version`` (``DerivedTables.version()``) and ``sessions``, the sessions table's
    name (a table of that name not omp-session's)."""

    name: str
    fact: Fact
    version: int | None = None
    sessions: str = ""

    @property
    def current(self) -> bool:
        """The tables are of this omp-session's layout: they can be read (and filtered)."""
        return self.fact is Fact.CURRENT

    @property
    def why(self) -> str:
        """Why the tables cannot serve, with what to do about it when something can be done: what
        follows "needs the search tables, and " (UNSUPPORTED: ": "; NEWER: the store's name)."""
        if self.fact is Fact.UNSUPPORTED:
            return NOT_SUPPORTED
        if self.fact is Fact.MISSING:
            return f"there are none yet: {_INDEX}"
        if self.fact is Fact.FOREIGN:
            return f"{self.sessions} in the database is not omp-session's"
        if self.fact is Fact.OLDER:
            return f"they are of an older layout ({self.version}, this omp-session's: {SCHEMA_VERSION}): {_INDEX}"
        if self.fact is Fact.NEWER:
            return (f"the search tables are layout {self.version}, this omp-session knows layouts up to "
                    f"{SCHEMA_VERSION}: upgrade omp-session")
        raise ValueError(f"{self.name}: the search tables are current: nothing to explain")

    def refusal(self, need: str) -> StoreError:
        """The command line's error for ``need`` (a flag such as ``--user``, or ``search --store``),
        which reads the derived tables, when they cannot serve it (a newer layout: its own line)."""
        if self.fact is Fact.UNSUPPORTED:
            return StoreError(f"{self.name}: {need} needs the search tables: {self.why}")
        if self.fact is Fact.NEWER:
            return StoreError(newer_layout(self.name, self.version))
        return StoreError(f"{self.name}: {need} needs the search tables, and {self.why}")


def tables_layout(tables: DerivedTables | None, name: str | None = None, *,
                  version: int | EllipsisType | None = ...) -> TablesLayout:
    """What ``tables`` are to this omp-session (None: store ``name`` cannot have them); ``version``:
    ``tables.version()`` when the caller has read it already, else it is read here."""
    if tables is None:
        if name is None:
            raise ValueError("tables_layout: a store without derived tables needs its name")
        return TablesLayout(name, Fact.UNSUPPORTED)
    if isinstance(version, EllipsisType):
        version = tables.version()
    if version is None:
        fact = Fact.MISSING
    elif version == 0:
        fact = Fact.FOREIGN
    elif version < SCHEMA_VERSION:
        fact = Fact.OLDER
    elif version > SCHEMA_VERSION:
        fact = Fact.NEWER
    else:
        fact = Fact.CURRENT
    return TablesLayout(tables.name if name is None else name, fact, version, tables.names.sessions)


def newer_layout(name: str, version: int | None) -> str:
    """The whole line of a newer layout than this omp-session's (which nothing reads or rewrites)."""
    return f"{name}: {TablesLayout(name, Fact.NEWER, version).why}"


def checked_version(tables: DerivedTables) -> int | None:
    """``tables.version()``; a newer layout than this omp-session's is a :class:`StoreError`."""
    layout = tables_layout(tables)
    if layout.fact is Fact.NEWER:
        raise StoreError(newer_layout(layout.name, layout.version))
    return layout.version


def writable_version(tables: DerivedTables) -> int | None:
    """:func:`checked_version` for a writer: a table of the derived tables' name that is not
    omp-session's (version 0: its ``layout`` default NULL or not a number) is a :class:`StoreError`
    too, neither derived into, emptied nor dropped."""
    version = checked_version(tables)
    layout = tables_layout(tables, version=version)
    if layout.fact is Fact.FOREIGN:
        raise StoreError(f"{layout.name}: {layout.why}: left alone, nothing derived into it")
    return version


def needs_tables(tables: DerivedTables, need: str, version: int | None) -> StoreError:
    """The error for ``need`` (a flag such as ``--user``, or ``search --store``), which reads the
    derived tables, when they are at ``version`` (``checked_version``: not a newer one) and not
    of this layout."""
    return tables_layout(tables, version=version).refusal(need)


def not_supported(name: str, need: str) -> StoreError:
    """The error for ``need`` on a store that has no derived tables (MySQL/MariaDB, Redis, files)."""
    return tables_layout(None, name).refusal(need)
