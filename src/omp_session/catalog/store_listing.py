"""omp's session listing (spec S11) over a store: the same ``SessionInfo`` per session as the file
listing, read from the same head and tail windows of the stored bytes (title overlay included,
as omp's ``readTextSlices`` returns it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from omp_session.js.codec import parse_jsonl
from omp_session.store.base import SessionStorage, StoredFile

from . import listing as _listing
from .listing import PREFIX_BYTES, SUFFIX_BYTES, SessionInfo

__all__ = ["StoreListing", "list_store_sessions", "store_session_info"]


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
