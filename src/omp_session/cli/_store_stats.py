"""``stats --store URL``: on a PostgreSQL or SQLite store the database adds the usage up from its
derived tables (ops/stats/database.py); elsewhere, or before ``index --store`` made them, every
session is read (ops/stats/report.py). docs/stats.md, docs/team.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

import click

from omp_session.ops.stats.report import StatsReport

if TYPE_CHECKING:
    from omp_session.store.base import SessionStorage
    from omp_session.store.derived import DerivedTables
    from omp_session.store.derived.layout import TablesLayout
    from omp_session.store.url import StoreURL

__all__ = ["check_filters", "store_stats"]


def check_filters(user: str | None, host: str | None, store: bool) -> None:
    """``--user``/``--machine``: a store's filters, each a valid part of a namespace."""
    if user is None and host is None:
        return
    from omp_session.store.derived.namespace import check_namespace

    if not store and (user is not None or host is not None):
        raise click.UsageError(f"--{'user' if user is not None else 'machine'} filters a store's sessions: "
                               "it needs --store URL")
    for flag, what, value in (("user", "user", user), ("machine", "host", host)):
        why = None if value is None else check_namespace(value, what)
        if why is not None:
            raise click.UsageError(f"--{flag}: {why}")


def store_stats(parsed: StoreURL, storage: SessionStorage, paths: Sequence[str] | None, *, all_sessions: bool, by: str,
                since: str | None, until: str | None, tz: str | None, user: str | None, host: str | None,
                placed: bool, progress: Callable[[int, int], None] | None) -> StatsReport:
    """The report of a store: from its derived tables when it has them (of this omp-session's
    layout), else by reading every session (ops/stats/store.py decides); ``--user``/``--machine``
    need the tables, and a newer layout is refused, not misread."""
    from omp_session.ops.stats.store import stats_for_store
    from omp_session.store.derived.layout import Fact

    filtered = "--user" if user is not None else "--machine" if host is not None else None

    def refuse(layout: TablesLayout) -> Exception:
        if layout.current:  # the paths given are not all top-level sessions in them
            return click.UsageError("--user/--machine filter top-level sessions: give those, or none")
        return layout.refusal(filtered or "stats --store")

    def stale(layout: TablesLayout) -> None:
        if layout.fact is Fact.NEWER:
            raise layout.refusal("stats --store")
        why = {Fact.MISSING: "are not there yet", Fact.FOREIGN: "are not omp-session's",
               Fact.OLDER: "are of an older omp-session"}[layout.fact]
        click.echo(f"omp-session: {parsed.name}: the search tables {why}: run omp-session index --store URL "
                   "to let the database add the usage up; reading every session", err=True)

    if parsed.kind in ("postgres", "sqlite"):
        from omp_session.store.derived import open_derived

        tables: AbstractContextManager[DerivedTables | None] = open_derived(parsed, reading=True)
    else:
        tables = nullcontext(None)
    return stats_for_store(tables, parsed.name, storage, paths, all_sessions=all_sessions, root=parsed.root, by=by,
                           since=since, until=until, tz=tz, user=user, host=host, placed=placed, progress=progress,
                           refuse=refuse, stale=stale)
