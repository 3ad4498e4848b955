"""``serve --store URL``: the sessions of a database or Redis store instead of the files
(docs/serve.md, "--store").

:class:`StoreCatalog` answers the list page and the ``/s/<id>`` look-up as :class:`Catalog` does
for the files: the listing comes from the store's derived tables when they are of this
omp-session's layout (``index --store``, ``sync --to`` make them), else from the stored bytes
(as ``list --store`` does). Only keys under the URL's root are ever listed, so only they can be
served. Search and costs use the derived tables as ``search --store`` and ``stats --store`` do.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from omp_session.catalog.listing import SessionInfo, sort_sessions
from omp_session.catalog.store_listing import list_derived_sessions, list_store_sessions
from omp_session.catalog.stored import read_stored_session
from omp_session.catalog.summaries import is_archived
from omp_session.errors import SessionError, SessionNotFoundError, StoreError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.ops.export.html import render_html_pieces
from omp_session.ops.search.query import SearchHit, to_fts
from omp_session.store.reopening import ReopeningStorage

from .events import plain
from .sessions import Catalog, Row
from .viewer import SessionStream, resume_line, serve_csp, served_pieces

if TYPE_CHECKING:
    from omp_session.ops.stats.report import StatsReport
    from omp_session.store.base import SessionStorage
    from omp_session.store.derived import DerivedTables
    from omp_session.store.url import StoreURL

__all__ = ["NO_TABLES", "StoreCatalog", "store_page", "store_report", "store_search"]

NO_TABLES = ("no search tables yet: run omp-session index --store URL once "
             "(sync --to keeps them up to date from then on)")


def _row(info: SessionInfo, parent: str | None) -> Row:
    return Row(id=info.id, path=info.path, title=info.title, cwd=info.cwd, created=info.created,
               modified=info.modified, messages=info.message_count, size=info.size, status=info.status,
               first_message=info.first_message, parent_session=info.parent_session_path,
               subagent_of=parent, archived=is_archived(info.path))


class StoreCatalog(Catalog):
    """The listing of the sessions under ``parsed``'s root in ``storage``, made again on every
    request (a store has no cheap "nothing changed" check; the derived tables are one query)."""

    def __init__(self, parsed: StoreURL, storage: SessionStorage, *, timeout: float | None = None) -> None:
        super().__init__(parsed.root, cache=False)
        self.parsed = parsed
        self.storage = ReopeningStorage(parsed, storage, timeout=timeout)
        self.timeout = timeout
        self.db_lock = threading.Lock()  # one connection, one request at a time
        self._tables: DerivedTables | None = None
        self._opened = False

    def tables(self) -> DerivedTables | None:
        """The store's derived tables (None for MariaDB and Redis), connected once; call with
        :attr:`db_lock` held."""
        if not self._opened and self.parsed.kind in ("postgres", "sqlite"):
            from omp_session.store.derived import open_derived

            self._tables = open_derived(self.parsed, timeout=self.timeout)
            self._opened = True
        return self._tables

    def drop_tables(self) -> None:
        """After a database error: connected again on the next request."""
        if self._tables is not None:
            with contextlib.suppress(StoreError):  # already broken: that is why it is dropped
                self._tables.close()
        self._tables, self._opened = None, False

    def close(self) -> None:
        with self.db_lock:
            self.drop_tables()
        self.storage.close()

    def _listing(self) -> tuple[list[SessionInfo], dict[str, list[SessionInfo]]]:
        from omp_session.store.derived.schema import SCHEMA_VERSION

        prefix = self.parsed.root
        with self.db_lock:
            try:
                tables = self.tables()
                if tables is not None and tables.version() == SCHEMA_VERSION:
                    found = list_derived_sessions(tables, prefix, all_buckets=True)
                    return found.sessions, found.subagents
            except StoreError:
                self.drop_tables()
                raise
        found = list_store_sessions(self.storage, prefix, all_buckets=True)
        return found.sessions, found.subagents

    def refresh(self) -> None:
        sessions, subagents = self._listing()
        by_id: dict[str, Row] = {}
        counts: dict[str, int] = {}
        parents: list[Row] = []
        for info in sort_sessions(i for i in sessions if i.path.startswith(self.parsed.root)):
            p = _row(info, None)
            p.children = [_row(c, p.path) for c in subagents.get(p.path, []) if c.path.startswith(self.parsed.root)]
            parents.append(p)
            for r in (p, *p.children):
                if isinstance(r.id, str) and r.id and r.id not in by_id:
                    by_id[r.id] = r
            counts[p.cwd] = counts.get(p.cwd, 0) + 1
        with self._lock:
            self._parents, self._by_id, self._projects = parents, by_id, sorted(counts.items())

    def find(self, session_id: str) -> Row | None:
        self.refresh()
        row = self._by_id.get(session_id)
        if row is None or not row.path.startswith(self.parsed.root):
            return None
        return row

    def with_stats(self, wait: float) -> int:
        return 0  # no per-session cost in a store's list (the Costs page has the totals)


def store_page(catalog: StoreCatalog, row: Row) -> SessionStream:
    """The page of the listed stored session ``row``, as the file's page is made (raises
    SessionNotFoundError when the key is gone)."""
    try:
        s = read_stored_session(catalog.storage, row.path, blob_store=MemoryBlobStore())
    except FileNotFoundError:
        raise SessionNotFoundError(f"{catalog.parsed.name}: no session {row.path}") from None
    problems: list[str] = []
    try:
        pieces = render_html_pieces(s, subagents=False, on_problem=problems.append)
        events = f"/events/{quote(row.id, safe='')}"
        data: dict[str, Any] = {"id": row.id, "resume": resume_line(s, row.path), "events": events,
                                "archived": row.archived, "entries": len(s), "leaf": plain(s.get_leaf_id())}
    except BaseException:
        s.close()
        raise
    return SessionStream(served_pieces(pieces, data, s), serve_csp(), problems, s)


def store_search(catalog: StoreCatalog, query: str, *, role: str | None, limit: int,
                 sessions: bool) -> list[SearchHit]:
    """The hits of ``query`` under the store's root, as ``search --store`` finds them. Raises
    SessionError (no tables yet), StoreError (MariaDB, Redis) or QueryError."""
    from omp_session.ops.search.query import ROLES
    from omp_session.store.derived.query import search_derived

    with catalog.db_lock:
        tables = catalog.tables()
        if tables is None:
            from omp_session.store.derived import NOT_SUPPORTED

            raise StoreError(f"{catalog.parsed.name}: search {NOT_SUPPORTED}")
        try:
            if not tables.exists():
                raise SessionError(f"{catalog.parsed.name}: {NO_TABLES}")
            fts5 = to_fts(query) if tables.dialect == "sqlite" else None
            hits = search_derived(tables, query, fts5=fts5, roles=ROLES[role] if role else None,
                                  root=catalog.parsed.root, limit=limit, sessions=sessions)
        except StoreError:
            catalog.drop_tables()
            raise
    return [SearchHit(h.session_id, h.title, h.key, h.cwd, h.entry_id, h.entry_type, h.role, h.kind, h.ts,
                      h.snippet, h.score, h.target_id) for h in hits]


def store_report(catalog: StoreCatalog, *, by: str, since: str | None, until: str | None,
                 tz: str | None) -> StatsReport:
    """``stats --store --all``'s report: added up by the database from the derived tables when
    they are current, else by reading every session under the root."""
    from omp_session.ops.stats.report import stats

    with catalog.db_lock:
        tables = catalog.tables()
        if tables is not None:
            try:
                version = tables.version()
                if version is not None and version != 0 and not tables.outdated():
                    from omp_session.ops.stats.database import stats_in_tables

                    return stats_in_tables(tables, None, all_sessions=True, root=catalog.parsed.root, by=by,
                                           since=since, until=until, tz=tz, placed=True)
            except StoreError:
                catalog.drop_tables()
                raise
    return stats(all_sessions=True, root=catalog.parsed.root, by=by, since=since, until=until, tz=tz,
                 storage=catalog.storage)
