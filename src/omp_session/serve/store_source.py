"""``serve --store URL``: the sessions of a database or Redis store instead of the files
(docs/serve.md, "--store").

:class:`StoreCatalog` answers the list page and the ``/s/<id>`` look-up as :class:`Catalog` does
for the files: the listing comes from the store's derived tables when they are of this
omp-session's layout (``index --store``, ``sync --to`` make them), else from the stored bytes
(as ``list --store`` does). Only keys under the URL's root are ever listed, so only they can be
served. Search and costs use the derived tables as ``search --store`` and ``stats --store`` do;
``user=``/``machine=`` filter all three with their filters (store_filters.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from omp_session.catalog.listing import SessionInfo, sort_sessions
from omp_session.catalog.store_listing import list_derived_sessions, list_store_sessions
from omp_session.catalog.stored import read_stored_session
from omp_session.catalog.summaries import is_archived
from omp_session.errors import SessionError, SessionNotFoundError, StoreError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.ops.export.html import MAX_SUBAGENT_DEPTH, render_html_pieces
from omp_session.ops.export.store_subagents import store_transcripts
from omp_session.ops.export.subagents import FILE_TRANSCRIPTS
from omp_session.ops.search.query import SearchHit, to_fts
from omp_session.store.derived.layout import tables_layout
from omp_session.store.reopening import ReopeningStorage

from .events import plain
from .sessions import Catalog, Page, Query, Row, ids_of, paged, url_word
from .store_filters import Namespaces, needs_tables, store_namespaces
from .viewer import SessionStream, links_below, resume_line, serve_csp, served_pieces

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

    @contextlib.contextmanager
    def locked_tables(self) -> Iterator[DerivedTables | None]:
        """:meth:`tables` with :attr:`db_lock` held until the block ends; a StoreError in it drops
        the connection (connected again on the next request)."""
        with self.db_lock:
            tables = self.tables()
            try:
                yield tables
            except StoreError:
                self.drop_tables()
                raise

    def close(self) -> None:
        with self.db_lock:
            self.drop_tables()
        self.storage.close()

    def _listing(self, user: str | None = None,
                 host: str | None = None) -> tuple[list[SessionInfo], dict[str, list[SessionInfo]]]:
        """Every session under the root (of the namespace's ``user``/``host``: ``list --store
        --user/--machine``'s rows, which only the search tables know) and their subagents."""
        prefix = self.parsed.root
        with self.locked_tables() as tables:
            layout = tables_layout(tables, self.parsed.name)
            if tables is not None and layout.current:
                found = list_derived_sessions(tables, prefix, all_buckets=True, user=user, host=host)
                return found.sessions, found.subagents
        if user is not None or host is not None:
            raise needs_tables(layout)
        found = list_store_sessions(self.storage, prefix, all_buckets=True)
        return found.sessions, found.subagents

    def page(self, q: Query) -> Page:
        if not q.user and not q.machine:
            return super().page(q)
        # one namespace's rows, this request's own: the shared listing stays every session's
        parents, _by_id, projects = self._rows(*self._listing(q.user or None, q.machine or None))
        return paged(parents, projects, q)

    def refresh(self) -> None:
        parents, by_id, projects = self._rows(*self._listing())
        with self._lock:
            self._parents, self._by_id, self._projects = parents, by_id, projects

    def _rows(self, sessions: list[SessionInfo], subagents: dict[str, list[SessionInfo]]
              ) -> tuple[list[Row], dict[str, Row], list[tuple[str, int]]]:
        """The listed parents in omp's order (subagents in ``children``), by id, and the projects."""
        counts: dict[str, int] = {}
        parents: list[Row] = []
        for info in sort_sessions(i for i in sessions if i.path.startswith(self.parsed.root)):
            p = _row(info, None)
            p.children = [_row(c, p.path) for c in subagents.get(p.path, []) if c.path.startswith(self.parsed.root)]
            parents.append(p)
            counts[p.cwd] = counts.get(p.cwd, 0) + 1
        return parents, ids_of(r for p in parents for r in (p, *p.children)), sorted(counts.items())

    def find(self, session_id: str) -> Row | None:
        self.refresh()
        row = self._by_id.get(session_id)
        if row is None or not row.path.startswith(self.parsed.root):
            return None
        return row

    def with_stats(self, wait: float) -> int:
        return 0  # no per-session cost in a store's list (the Costs page has the totals)

    def namespaces(self) -> Namespaces | None:
        """The users and machines to filter by (None: the store has no current search tables)."""
        with self.db_lock:
            try:
                tables = self.tables()
                return None if tables is None else store_namespaces(tables, self.parsed.root)
            except StoreError:
                self.drop_tables()
                raise


def store_page(catalog: StoreCatalog, row: Row) -> SessionStream:
    """The page of the listed stored session ``row``, as the file's page is made (raises
    SessionNotFoundError when the key is gone)."""
    try:
        s = read_stored_session(catalog.storage, row.path, blob_store=MemoryBlobStore())
    except FileNotFoundError:
        raise SessionNotFoundError(f"{catalog.parsed.name}: no session {row.path}") from None
    problems: list[str] = []
    # the transcripts omp keeps next to it, read from the store's keys as the file page reads the
    # files; a file: store's keys are the files: read as the file page reads them, so a symlink
    # among them (which could bring any file of the disk into the page) shows none, as there
    files = catalog.parsed.kind == "file"
    link = links_below(row.path[: -len(".jsonl")], MAX_SUBAGENT_DEPTH) if files and row.path.endswith(".jsonl") \
        else None
    if link is not None:
        problems.append(f"{link}: a symlink among the subagent transcripts: subagents not shown")
    try:
        pieces = render_html_pieces(s, subagents=link is None, on_problem=problems.append,
                                    transcripts=FILE_TRANSCRIPTS if files else store_transcripts(catalog.storage, row.path))
        events = f"/events/{url_word(row.id)}"
        data: dict[str, Any] = {"id": row.id, "resume": resume_line(s, row.path), "events": events,
                                "archived": row.archived, "entries": len(s), "leaf": plain(s.get_leaf_id())}
    except BaseException:
        s.close()
        raise
    return SessionStream(served_pieces(pieces, data, s), serve_csp(), problems, s)


def store_search(catalog: StoreCatalog, query: str, *, role: str | None, limit: int, sessions: bool,
                 user: str | None = None, host: str | None = None) -> list[SearchHit]:
    """The hits of ``query`` under the store's root (of the namespace's ``user``/``host``), as
    ``search --store`` finds them. Raises SessionError (no tables yet), StoreError (MariaDB,
    Redis) or QueryError."""
    from omp_session.ops.search.query import ROLES
    from omp_session.store.derived.layout import Fact, checked_version
    from omp_session.store.derived.query import search_derived

    with catalog.db_lock:
        tables = catalog.tables()
        if tables is None:
            from omp_session.store.derived import NOT_SUPPORTED

            raise StoreError(f"{catalog.parsed.name}: search {NOT_SUPPORTED}")
        try:
            # a newer layout is not read (its line, as the command line's); 0: not omp-session's
            layout = tables_layout(tables, catalog.parsed.name, version=checked_version(tables))
            if layout.fact is Fact.MISSING:
                raise SessionError(f"{catalog.parsed.name}: {NO_TABLES}")
            if layout.fact is Fact.FOREIGN or ((user or host) and not layout.current):
                raise needs_tables(layout)
            fts5 = to_fts(query) if tables.dialect == "sqlite" else None
            hits = search_derived(tables, query, fts5=fts5, roles=ROLES[role] if role else None,
                                  root=catalog.parsed.root, limit=limit, sessions=sessions, user=user, host=host)
        except StoreError:
            catalog.drop_tables()
            raise
    return [SearchHit(h.session_id, h.title, h.key, h.cwd, h.entry_id, h.entry_type, h.role, h.kind, h.ts,
                      h.snippet, h.score, h.target_id) for h in hits]


def store_report(catalog: StoreCatalog, *, by: str, since: str | None, until: str | None,
                 tz: str | None, user: str | None = None, host: str | None = None) -> StatsReport:
    """``stats --store --all``'s report: added up by the database from the derived tables when
    they are current, else by reading every session under the root, as ops/stats/store.py
    chooses (``user``/``host``, as ``--user``/``--machine``, need the tables)."""
    from omp_session.ops.stats.store import stats_for_store

    return stats_for_store(catalog.locked_tables(), catalog.parsed.name, catalog.storage, all_sessions=True,
                           root=catalog.parsed.root, by=by, since=since, until=until, tz=tz, user=user, host=host,
                           placed=True, refuse=needs_tables)
