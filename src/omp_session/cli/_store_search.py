"""``search --store URL`` and ``index --store URL``: the search in a PostgreSQL or SQLite store's
derived tables (docs/team.md), with the same hits as the file search."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import click

from omp_session.catalog.derived import refresh_url
from omp_session.ops.search.query import ROLES, SearchHit, to_fts
from omp_session.store.derived import open_derived
from omp_session.store.derived.layout import checked_version, needs_tables, not_supported
from omp_session.store.derived.namespace import check_namespace
from omp_session.store.derived.query import search_derived
from omp_session.store.derived.schema import SCHEMA_VERSION
from omp_session.store.url import parse_store_url

__all__ = ["index_store", "search_store"]


def search_store(url: str, query: str, *, role: str | None, cwd: str | None, since_ms: int | None,
                 until_ms: int | None, thinking: bool, limit: int, sessions: bool,
                 timeout: float | None, user: str | None = None, host: str | None = None) -> list[SearchHit]:
    """The hits of ``query`` in the store's derived tables (made by ``index --store``): every
    session in them, whichever machine's sessions root its key starts with (``user``/``host``:
    only those whose namespace has this user/host)."""
    for flag, what, value in (("user", "user", user), ("machine", "host", host)):
        why = None if value is None else check_namespace(value, what)
        if why is not None:
            raise click.UsageError(f"--{flag}: {why}")
    parsed = parse_store_url(url)
    filtered = "--user" if user is not None else "--machine" if host is not None else None
    need = filtered or "search --store"
    if parsed.kind not in ("postgres", "sqlite"):
        raise not_supported(parsed.name, need)
    with open_derived(parsed, timeout=timeout, reading=True) as tables:
        # an older layout's texts are searched as they are (until index --store derives them again);
        # the filters need this layout's namespaces, as in list and stats; a table not ours is not read
        version = checked_version(tables)
        if version in (None, 0) or (filtered and version != SCHEMA_VERSION):
            raise needs_tables(tables, need, version)
        fts5 = to_fts(query) if tables.dialect == "sqlite" else None
        hits = search_derived(tables, query, fts5=fts5, roles=ROLES[role] if role else None,
                              cwd=cwd, since_ms=since_ms, until_ms=until_ms, thinking=thinking, limit=limit,
                              sessions=sessions, user=user, host=host)
    return [SearchHit(h.session_id, h.title, h.key, h.cwd, h.entry_id, h.entry_type, h.role, h.kind, h.ts,
                      h.snippet, h.score, h.target_id) for h in hits]


def index_store(url: str, *, rebuild: bool, as_json: bool, timeout: float | None,
                progress: Callable[[int, int], None] | None) -> None:
    """Make or bring up to date the store's derived tables, and say what was done."""
    parsed = parse_store_url(url)
    # copies: under row-level security, the owner's update settles what the roles' could not (docs/team.md)
    report = refresh_url(parsed, create=True, timeout=timeout, progress=progress, rebuild=rebuild, copies=True)
    assert report is not None  # create=True
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=1))
        return
    click.echo(f"{report.sessions} session(s) in {parsed.name} under {parsed.root}: {len(report.added)} added, "
               f"{len(report.grown)} grown, {len(report.rederived)} re-derived, {len(report.removed)} removed "
               f"({report.bytes_read:,} bytes read in {report.seconds:.2f} s)")
    for key, why in report.rederived:
        click.echo(f"  re-derived {key}: {why}")
    if report.skipped:
        print(f"omp-session: {report.skipped} session(s) were derived by another indexer meanwhile", file=sys.stderr)
