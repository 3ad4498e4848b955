"""The tools of ``omp-session mcp --store URL``: the sessions of a database or Redis store.

:class:`StoreLibrary` answers every tool as :class:`~.tools.Library` does for the files, with the
same output, but finds and reads sessions in the store: keys under the URL's root (``root=``;
omp's keys are the absolute paths the files would have), nothing else. A call lists the root's
keys once if it needs them (ids, prefixes, subagents are looked up in them) and reads the
sessions it needs; nothing read from the store is kept between calls, so a session appended
between two calls (by omp, or ``sync --to``) is seen by the second.

Search runs in the store's derived search tables (``index --store`` makes them, ``sync --to``
keeps them), PostgreSQL's full-text search or SQLite's FTS5, as ``search --store`` does; other
stores have none (a tool error, one line). The functions below are where the keys, the listing,
the search and the token report come from, so each can follow the commands that do the same.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from omp_session.catalog.listing import SessionInfo, is_quarantine_name, sort_sessions
from omp_session.catalog.store_listing import list_store_sessions, store_session_info
from omp_session.catalog.stored import read_stored_session
from omp_session.errors import SessionError, SessionNotFoundError, StoreError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.store.base import SessionStorage, StoredFile
from omp_session.store.reopening import ReopeningStorage

from .tools import Library, file_id

if TYPE_CHECKING:
    from omp_session.model.session import Session
    from omp_session.ops.search.query import SearchHit
    from omp_session.ops.stats.report import StatsReport
    from omp_session.store.derived import DerivedTables
    from omp_session.store.url import StoreURL

__all__ = ["StoreLibrary", "store_infos", "store_search", "store_stats", "stored_keys"]

_T = TypeVar("_T")


def store_infos(storage: SessionStorage, prefix: str, *, all_buckets: bool,
                tables: DerivedTables | None = None) -> list[SessionInfo]:
    """The top-level sessions under ``prefix`` (the root: every bucket's; a bucket: its own), as
    ``list --store`` lists them, newest first. With ``tables`` holding the list facts, those of
    the sessions derived as they are now, and only the others (written since the last ``index
    --store`` or ``sync --to``: by omp itself, say) read from the store."""
    from omp_session.store.derived.schema import SCHEMA_VERSION

    if tables is None or tables.version() != SCHEMA_VERSION:  # none yet, or of another layout
        return list_store_sessions(storage, prefix, all_buckets=all_buckets).sessions
    from omp_session.catalog.store_listing import list_derived_sessions

    changed, gone = tables.pending(prefix)
    stale = {p.key for p in changed} | set(gone)
    depth = 1 if all_buckets else 0
    infos = [i for i in list_derived_sessions(tables, prefix, all_buckets=all_buckets, subagents=False).sessions
             if i.path not in stale]
    for p in changed:
        rel = p.key[len(prefix):]
        if rel.count("/") == depth and not rel.rsplit("/", 1)[-1].startswith("."):
            info = store_session_info(storage, StoredFile(p.key, p.size, p.modified))
            if info is not None:
                infos.append(info)
    return sort_sessions(infos)


def store_stats(storage: SessionStorage, root: str, keys: list[str] | None, since: str | None) -> StatsReport:
    """``stats --store --by model`` of ``keys``, or (None) of every session under ``root``."""
    from omp_session.ops.stats.report import stats

    return stats(keys, all_sessions=keys is None, root=root, by="model", since=since, tz="UTC", storage=storage)


def stored_keys(storage: SessionStorage, tables: DerivedTables | None, prefix: str) -> list[str]:
    """Every session key (``*.jsonl``) under ``prefix``, sorted. Through ``tables``' connection,
    by name alone: ``storage.scan`` also measures each body, which SQLite reads whole for it
    (0.1 s for 2,000 sessions of 0.2 GB, where the names take 4 ms)."""
    if tables is None:
        return [f.path for f in storage.scan(prefix)]
    n = "?::integer" if tables.dialect == "postgres" else "?"
    rows = tables.rows(f"SELECT path FROM {tables.table} WHERE substr(path, 1, {n}) = ?", (len(prefix), prefix),
                       "listing sessions")
    return sorted(key for (key,) in rows if isinstance(key, str) and key.endswith(".jsonl"))


def store_search(tables: DerivedTables, query: str, *, root: str, cwd: str | None, since_ms: int | None,
                 limit: int) -> list[SearchHit]:
    """The best hit of each of the ``limit`` best sessions under ``root``, as ``search --store``
    finds them. Raises :class:`~omp_session.errors.QueryError` for a query search cannot take."""
    from omp_session.ops.search.query import SearchHit, to_fts
    from omp_session.store.derived.query import search_derived

    fts5 = to_fts(query)  # the tool's query language, checked on every store
    options: dict[str, Any] = {"fts5": fts5 if tables.dialect == "sqlite" else None, "cwd": cwd,
                               "since_ms": since_ms, "sessions": True}
    # without root first: PostgreSQL cannot estimate a key prefix, and ranks every match of a
    # common word under one (seconds); a store seldom holds another root's sessions
    found = search_derived(tables, query, limit=limit, **options)
    hits = [h for h in found if h.key.startswith(root)]
    if len(hits) < len(found) and len(found) == limit:  # others took places that are this root's
        hits = search_derived(tables, query, root=root, limit=limit, **options)
    return [SearchHit(h.session_id, h.title, h.key, h.cwd, h.entry_id, h.entry_type, h.role, h.kind, h.ts,
                      h.snippet, h.score, h.target_id) for h in hits]


class StoreLibrary(Library):
    """The sessions under ``parsed``'s root in ``storage`` (opened for reading), for the tools."""

    def __init__(self, parsed: StoreURL, storage: SessionStorage, *, redact: bool = False,
                 timeout: float | None = None) -> None:
        super().__init__("/", redact=redact, cache=False)
        self.parsed = parsed
        self._given = storage
        # connected again after a database error (a restarted server closed the connection)
        self.storage = ReopeningStorage(parsed, storage, timeout=timeout)
        self.timeout = timeout
        # keys are names, not paths on this machine: nothing is resolved, and "/" splits them
        self.prefix = parsed.root
        self.root = self.real_root = parsed.root.rstrip("/") or "/"
        self._keys: list[str] | None = None
        # what the keys tell, kept while the next call lists the same keys (2,000 keys: 20 ms)
        self._layout: tuple[list[str], dict[str, list[str]]] | None = None
        self._counts: tuple[list[str], Counter[str]] | None = None
        self._tables: DerivedTables | None = None

    def close(self) -> None:
        self._drop_tables()
        try:
            self.storage.close()
        finally:
            self._given.close()

    # ----- the hooks of Library -------------------------------------------------------------

    def _begin(self) -> None:
        self._keys = None

    def _all_keys(self) -> list[str]:
        """Every session key under the root, listed once per call."""
        if self._keys is None:
            self._keys = self._with_tables(lambda tables: stored_keys(self.storage, tables, self.prefix))
        return self._keys

    @staticmethod
    def _canon(path: str) -> str:
        return posixpath.normpath(path)  # "x/../y" is y: a key under the root stays under it

    def _exists(self, path: str) -> bool:
        return self.storage.stat(path) is not None

    def _checked(self, path: str) -> str:
        return path  # a key listed under the root

    def _bucket_sessions(self, bucket: str) -> list[SessionInfo]:
        return self._with_tables(lambda tables: store_infos(self.storage, bucket + "/", all_buckets=False,
                                                            tables=tables))

    def _buckets_files(self) -> dict[str, list[str]]:
        """Each bucket (a project folder's key prefix, no "/" at the end) and the session keys
        directly in it, as the files' buckets and ``*.jsonl`` files are found."""
        keys = self._all_keys()
        if self._layout is None or self._layout[0] != keys:
            layout: dict[str, list[str]] = {}
            for key in keys:
                parts = key[len(self.prefix):].split("/")
                if len(parts) == 2 and not parts[0].startswith(".") and not parts[1].startswith(".") \
                        and not is_quarantine_name(parts[1]):
                    layout.setdefault(self.prefix + parts[0], []).append(key)
            self._layout = (keys, {b: sorted(layout[b]) for b in sorted(layout)})
        return self._layout[1]

    def _buckets(self) -> list[str]:
        return list(self._buckets_files())

    def _bucket_files(self, bucket: str) -> list[str]:
        return self._buckets_files().get(bucket, [])

    def _id_counts(self) -> Counter[str]:
        keys = self._all_keys()
        if self._counts is None or self._counts[0] != keys:
            self._counts = (keys, Counter(file_id(f.rpartition("/")[2]).lower()
                                          for files in self._buckets_files().values() for f in files))
        return self._counts[1]

    def infos(self) -> list[SessionInfo]:
        return self._with_tables(lambda tables: store_infos(self.storage, self.prefix, all_buckets=True,
                                                            tables=tables))

    def _subagents(self, path: str) -> list[SessionInfo]:
        folder = path.removesuffix(".jsonl") + "/"
        if folder == path + "/":
            return []
        found = []
        for key in self._all_keys():
            name = key[len(folder):]
            if key.startswith(folder) and "/" not in name and not name.startswith(("__advisor", ".")):
                stored = self.storage.stat(key)
                found.append(None if stored is None else store_session_info(self.storage, stored))
        return [i for i in found if i is not None]

    @contextmanager
    def _open(self, path: str) -> Iterator[Session]:
        try:
            s = read_stored_session(self.storage, path, blob_store=MemoryBlobStore())
        except FileNotFoundError:
            raise SessionNotFoundError(f"{self.handle(path)}: the session is gone") from None
        with s:
            yield s

    def _search(self, query: str, project: str | None, since: int | None, limit: int,
                notices: list[str]) -> list[SearchHit]:
        def run(tables: DerivedTables | None) -> list[SearchHit]:
            if tables is None:  # MariaDB, Redis: one line saying so
                from omp_session.store.derived import NOT_SUPPORTED

                raise StoreError(f"{self.parsed.name}: {NOT_SUPPORTED}")
            from omp_session.store.derived.layout import checked_version

            version = checked_version(tables)  # a newer layout is not read: StoreError, the CLI's line
            if version is None:
                raise SessionError(f"{self.parsed.name}: no search tables yet: run omp-session index --store URL "
                                   "once (sync --to keeps them up to date from then on)")
            if version == 0:
                raise SessionError(f"{self.parsed.name}: {tables.names.sessions} in the database is not "
                                   "omp-session's: nothing to search")
            return store_search(tables, query, root=self.prefix, cwd=project, since_ms=since, limit=limit)

        return self._with_tables(run)

    def _stats(self, paths: list[str] | None, since: str | None) -> StatsReport:
        return store_stats(self.storage, self.prefix, paths, since)

    # ----- the derived tables' connection -----------------------------------------------------

    def _with_tables(self, fn: Callable[[DerivedTables | None], _T]) -> _T:
        """``fn`` of the store's derived tables (None where a store has none: MariaDB, Redis),
        connected once; after a database error, connected again on the next call."""
        if self._tables is None and self.parsed.kind in ("postgres", "sqlite"):
            from omp_session.store.derived import open_derived

            self._tables = open_derived(self.parsed, timeout=self.timeout)
        try:
            return fn(self._tables)
        except StoreError:
            self._drop_tables()
            raise

    def _drop_tables(self) -> None:
        if self._tables is not None:
            try:
                self._tables.close()
            finally:
                self._tables = None
