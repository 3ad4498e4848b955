"""omp's session listing (spec S11) over a store: the same ``SessionInfo`` per session as the file
listing, read from the same head and tail windows of the stored bytes (title overlay included,
as omp's ``readTextSlices`` returns it) -- or, where a PostgreSQL or SQLite store has its derived
tables (docs/team.md), from the list facts derived from those windows when the session was last
indexed (:func:`list_derived_sessions`: rows only, the newest first, as many as asked for)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omp_session.js.codec import parse_jsonl
from omp_session.store.base import SessionStorage, StoredFile
from omp_session.store.derived import DerivedTables
from omp_session.store.derived.listing import ListRow, listed_in, newest_first, unlisted

from . import listing as _listing
from .listing import PREFIX_BYTES, SUFFIX_BYTES, SessionInfo

__all__ = ["StoreListing", "list_derived_sessions", "list_store_sessions", "store_session_info"]


@dataclass(frozen=True)
class _Stat:
    """What the listing reads from a file's stat, for a stored file."""

    st_size: int
    st_mtime_ns: int


def store_session_info(storage: SessionStorage, stored: StoredFile) -> SessionInfo | None:
    """The ``SessionInfo`` of one stored session, None for one omp would not list."""
    try:
        data = storage.read(stored.path)
    except FileNotFoundError:
        return None
    content = _listing.decode_text(data[:PREFIX_BYTES])
    suffix = _listing.decode_text(data[-SUFFIX_BYTES:])
    try:
        values = [value for value, _, _ in parse_jsonl(content)[0]]
        header = _listing.parse_header(content, values)
        if header is None:
            return None
        # whole milliseconds apart: a float product would turn 123 ms into 122.999… ms (listed as 122)
        whole = math.floor(stored.mtime_ms)
        st: Any = _Stat(len(data), whole * 1_000_000 + round((stored.mtime_ms - whole) * 1_000_000))
        return _listing.summarise(stored.path, st, header, content, values, suffix)
    except (ValueError, RecursionError, _listing.Unlisted):
        return None


@dataclass
class StoreListing:
    sessions: list[SessionInfo]  # omp's order: newest modified first
    subagents: dict[str, list[SessionInfo]]  # parent path → its subagent sessions, by name
    skipped: list[str]  # stored files that are not sessions omp would list


def list_store_sessions(storage: SessionStorage, prefix: str, *, all_buckets: bool) -> StoreListing:
    """The sessions directly under ``prefix`` (a bucket), or in every bucket directly under it
    (``all_buckets``: ``prefix`` is the sessions root), with the subagent sessions kept in each
    one's artifacts folder."""
    depth = 1 if all_buckets else 0
    top: list[StoredFile] = []
    nested: dict[str, list[StoredFile]] = {}
    files = storage.scan(prefix)
    names = {f.path for f in files}
    for f in files:
        rel = f.path[len(prefix):]
        parts = rel.split("/")
        if len(parts) == depth + 1 and not parts[-1].startswith("."):
            top.append(f)
        elif len(parts) == depth + 2 and not parts[-1].startswith(("__advisor", ".")):
            parent = f.path.rsplit("/", 1)[0] + ".jsonl"
            if parent in names:
                nested.setdefault(parent, []).append(f)
    infos: list[SessionInfo] = []
    skipped: list[str] = []
    for f in top:
        info = store_session_info(storage, f)
        if info is None:
            skipped.append(f.path)
        else:
            infos.append(info)
    subagents: dict[str, list[SessionInfo]] = {}
    for parent, subs in nested.items():
        found = [i for i in (store_session_info(storage, s) for s in sorted(subs)) if i is not None]
        if found:
            subagents[parent] = found
    return StoreListing(_listing.sort_sessions(infos), subagents, skipped)


def _info(r: ListRow) -> SessionInfo:
    # all_messages_text is not derived (the list cache keeps none either): no listing shows it
    return SessionInfo(r.key, r.id, r.cwd, r.title, r.parent, r.created, r.modified, r.messages, r.size,
                       r.first_message, "", r.status)


def list_derived_sessions(tables: DerivedTables, prefix: str, *, all_buckets: bool, since_ms: int | None = None,
                          until_ms: int | None = None, user: str | None = None, host: str | None = None,
                          match: Callable[[SessionInfo], bool] | None = None, limit: int | None = None,
                          subagents: bool = True) -> StoreListing:
    """:func:`list_store_sessions` from the store's derived tables, as they were last brought up
    to date (``index --store``, ``sync --to``): the same ``SessionInfo`` for the same bytes, but
    ``all_messages_text`` empty. Only the sessions modified in [``since_ms``, ``until_ms``), of
    the namespace's ``user``/``host`` and for which ``match`` holds; with ``limit``, only the
    first ``limit`` of them in omp's order (the database reads about that many rows). Subagent
    sessions (unless ``subagents`` is False) are those of the sessions returned, unfiltered;
    ``skipped``: the derived sessions under ``prefix`` that omp's listing passes over."""
    place: dict[str, str] = {"root": prefix} if all_buckets else {"folder": prefix.rstrip("/")}
    rows = newest_first(tables, since_ms=since_ms, until_ms=until_ms, user=user, host=host,
                        # past a limit only ties with the last one kept are read: pages of the same size
                        page=100 if limit is None else limit + 1, grow=limit is None or match is not None,
                        **place)
    found: list[SessionInfo] = []
    kept = 0
    for row in rows:
        # rows come newest first: past the limit, only those as new as the last kept one can
        # still take its place (omp orders equal times by creation and path)
        if limit is not None and kept >= limit and row.modified < found[-1].modified:
            break
        info = _info(row)
        if match is None or match(info):
            found.append(info)
            kept += 1
    sessions = _listing.sort_sessions(found)[:limit]
    children: dict[str, list[SessionInfo]] = {}
    if subagents and sessions:
        parents = {s.path.removesuffix(".jsonl"): s.path for s in sessions if s.path.endswith(".jsonl")}
        for row in listed_in(tables, list(parents)):
            children.setdefault(parents[row.key.rpartition("/")[0]], []).append(_info(row))
    return StoreListing(sessions, children, unlisted(tables, **place))
