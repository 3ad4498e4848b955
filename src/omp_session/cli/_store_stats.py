"""``stats --store URL``: on a PostgreSQL or SQLite store the database adds the usage up from its
derived tables (ops/stats/database.py); elsewhere, or before ``index --store`` made them, every
session is read (ops/stats/report.py). docs/stats.md, docs/team.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click

from omp_session.ops.stats.report import StatsReport, stats
from omp_session.store.base import SessionStorage
from omp_session.store.url import StoreURL

__all__ = ["check_filters", "store_stats"]


def check_filters(user: str | None, host: str | None, store: bool) -> None:
    """``--user``/``--machine``: a store's filters, each a valid part of a namespace."""
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
    layout), else by reading every session; ``--user``/``--machine`` need the tables."""
    filtered = "--user" if user is not None else "--machine" if host is not None else None
    if parsed.kind in ("postgres", "sqlite"):
        from omp_session.ops.stats.database import stats_in_tables
        from omp_session.store.derived import open_derived
        from omp_session.store.derived.layout import checked_version, needs_tables
        from omp_session.store.derived.schema import SCHEMA_VERSION
        from omp_session.store.derived.stats_query import top_level

        with open_derived(parsed) as tables:
            version = checked_version(tables)  # a newer layout: refused, not misread
            if version == SCHEMA_VERSION:
                if paths is None or top_level(tables, paths) == set(paths):
                    return stats_in_tables(tables, paths, all_sessions=all_sessions, root=parsed.root, by=by,
                                           since=since, until=until, tz=tz, user=user, host=host, placed=placed)
                if filtered:
                    raise click.UsageError("--user/--machine filter top-level sessions: give those, or none")
            elif filtered:
                raise needs_tables(tables, filtered, version)
            else:
                why = ("are of an older omp-session" if version not in (None, 0) else
                       "are not there yet" if version is None else "are not omp-session's")
                click.echo(f"omp-session: {parsed.name}: the search tables {why}: run omp-session index --store URL "
                           "to let the database add the usage up; reading every session", err=True)
    elif filtered:
        from omp_session.store.derived.layout import not_supported

        raise not_supported(parsed.name, filtered)
    return stats(paths, all_sessions=all_sessions, root=parsed.root, by=by, since=since, until=until, tz=tz,
                 progress=progress, storage=storage)
