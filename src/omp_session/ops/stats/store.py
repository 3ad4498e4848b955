"""``stats`` of a store (``stats --store URL``, ``serve --store``'s Costs page; docs/stats.md,
docs/team.md): which way the report is made. When the store's derived tables are of this
omp-session's layout the database adds the usage up (database.py); else, or on a store that cannot
have them (MySQL/MariaDB, Redis, files), every session is read (report.py). ``user``/``host`` are
only in the tables: without them the caller's ``refuse`` says why, worded its own way from the
tables' :class:`~omp_session.store.derived.layout.TablesLayout`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from omp_session.store.derived.layout import Fact, TablesLayout, tables_layout

from .report import StatsReport, stats

if TYPE_CHECKING:
    from omp_session.store.base import SessionStorage
    from omp_session.store.derived import DerivedTables

__all__ = ["stats_for_store"]


def stats_for_store(tables: AbstractContextManager[DerivedTables | None], name: str, storage: SessionStorage,
                    paths: Sequence[str] | None = None, *, all_sessions: bool, root: str, by: str,
                    since: str | None, until: str | None, tz: str | None, user: str | None = None,
                    host: str | None = None, placed: bool = False,
                    progress: Callable[[int, int], None] | None = None,
                    refuse: Callable[[TablesLayout], Exception],
                    stale: Callable[[TablesLayout], None] | None = None) -> StatsReport:
    """The report of ``paths`` (top-level keys), or of every session under ``root``
    (``all_sessions``), of store ``name``: from its derived tables (``tables``: entered while
    they are read; None inside: the store cannot have them) when they are current and the paths
    are top-level sessions in them, else by reading the sessions from ``storage``.

    ``user``/``host`` need the tables: when they cannot apply the filters, ``refuse(layout)`` is
    raised (``layout.current``: the tables are current but the paths are not top-level sessions).
    ``stale(layout)`` is told before every session is read because the store's tables are not
    current (missing, not omp-session's, of an older or a newer layout); it may raise instead."""
    with tables as t:
        layout = tables_layout(t, name)
        if t is not None and layout.current:
            from omp_session.store.derived.stats_query import top_level

            if paths is None or top_level(t, paths) == set(paths):
                from .database import stats_in_tables

                return stats_in_tables(t, paths, all_sessions=all_sessions, root=root, by=by, since=since,
                                       until=until, tz=tz, user=user, host=host, placed=placed)
    if user is not None or host is not None:
        raise refuse(layout)
    if stale is not None and not layout.current and layout.fact is not Fact.UNSUPPORTED:
        stale(layout)
    return stats(paths, all_sessions=all_sessions, root=root, by=by, since=since, until=until, tz=tz,
                 progress=progress, storage=storage)
