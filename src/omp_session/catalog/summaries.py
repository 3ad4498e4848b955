"""Per-session statistics for ``omp-session list --stats``, and the cache that keeps listing cheap.

omp's listing looks only at the first 4 KB and last 32 KB of a file; entry counts, branches, models
and cost need the whole file. :func:`compute_stats` gets them from the library's envelope scan
(:func:`omp_session.session.read_session`): counts, branch tips and models come from the envelope
columns (``type``, ``id``, ``parentId``, the message head's provider/model) without decoding any
entry; for usage only the records that can carry one are decoded (assistant messages,
``model_usage`` entries, ``task`` tool results, and odd records on which omp might throw), then
summed by :func:`omp_session.usage.usage_statistics` exactly as ``getUsageStatistics()`` does.

:class:`ListCache` keeps, per file, the listing's :class:`SessionInfo` and these statistics in
``$XDG_CACHE_HOME/omp-session/list-stats.json`` (default ``~/.cache/omp-session``), keyed by
(path, size, mtime_ns, inode). A file that only grew (same inode, same first 4 KB, same 4 KB before
the old end, which was a line end) is updated from its appended bytes alone; anything else is
recomputed. The cache is an accelerator only: a missing, corrupt or stale cache gives the same
results, and every write is atomic (temporary file + rename).

Archived sessions (``*.jsonl.gz``) are decompressed: their head and tail for the listing, the whole
stream for statistics. They are never updated incrementally.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from omp_session.errors import ContextError
from omp_session.format.reader import Journal, scan_bytes, shared_heads
from omp_session.js.codec import parse_jsonl
from omp_session.model.session import (
    KIND_MESSAGE,
    KIND_OTHER,
    KIND_TYPED,
    Session,
    entry_kinds,
    is_task_result,
)
from omp_session.model.usage import usage_statistics
from omp_session.paths import cache_dir

from . import listing as _listing
from .cache import cache_dumps, cache_loads, load_cache, replace_quietly
from .listing import SessionInfo

__all__ = ["CACHE_NAME", "ListCache", "SessionStats", "archived_session_info", "cache_dir", "compute_stats",
           "is_archived"]

CACHE_NAME: Final = "list-stats.json"
_VERSION: Final = 1
_PROBE: Final = 4096  # bytes hashed at the head and before the old end to recognise "only appended"
_SUFFIX: Final = ".jsonl.gz"
# a usage total that is still a plain number can seed a later sum exactly (0 + x == x)
_NUMERIC: Final = (int, float)


def is_archived(path: str) -> bool:
    return path.endswith(_SUFFIX)


# ---------------------------------------------------------------------------------------------------
# Statistics


@dataclass
class SessionStats:
    """What ``list --stats`` shows for one session (all branches, the whole file)."""

    entries: int
    messages: int  # entries of type "message"
    branches: int  # branch tips: entries no other entry names as its parent
    models: list[str]  # "provider/model" of assistant messages, each once, most recently used last
    usage: dict[str, Any] | None  # getUsageStatistics(); None where omp throws computing it

    @property
    def cost(self) -> Any:
        return None if self.usage is None else self.usage.get("cost")

    @property
    def tokens(self) -> Any:
        return None if self.usage is None else self.usage.get("totalTokens")


@dataclass
class _State:
    """Stats plus what an append needs to update them: tips, ids, parents not seen yet."""

    stats: SessionStats
    incremental: bool  # unique string ids, v3, a clean end: appended records can be folded in
    leaves: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)


def _model_key(head: Any) -> str | None:
    if head is None:
        return None
    provider, model = head.provider, head.model
    if isinstance(provider, str) and isinstance(model, str):
        return f"{provider}/{model}"
    return model if isinstance(model, str) else None


def _merge_models(models: list[str], heads: Iterable[Any]) -> list[str]:
    order = dict.fromkeys(models)
    for head in heads:
        key = _model_key(head)
        if key is not None:
            order.pop(key, None)
            order[key] = None
    return list(order)


def usage_candidates(kinds: bytearray, types: Sequence[Any], heads: Sequence[Any]) -> list[int]:
    """Entries whose usage omp's sum reads, or on which it may throw; the rest contribute nothing."""
    # KIND_ASSISTANT, KIND_OTHER, KIND_ODD
    picked = [m.start() for m in re.finditer(rb"[\x01\x03\x04]", kinds)]
    if KIND_TYPED in kinds:
        picked += [k for k, t in enumerate(types) if t == "model_usage"]
    if KIND_MESSAGE in kinds:
        picked += [k for k, kind in enumerate(kinds) if kind == KIND_MESSAGE
                   and is_task_result(heads[k + 1])]
    # other roles with a message object add nothing and cannot throw
    return sorted(k for k in set(picked) if kinds[k] != KIND_OTHER or heads[k + 1] is None)


def _sum_usage(seed: dict[str, Any] | None, values: Iterable[Any]) -> dict[str, Any] | None:
    entries: list[Any] = []
    if seed is not None:
        orchestration = {"input": seed["orchestrationInput"], "output": seed["orchestrationOutput"],
                         "cacheRead": seed["orchestrationCacheRead"]}
        entries.append({"type": "model_usage", "usage": {
            **{k: seed[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")},
            "cost": {"total": seed["cost"]}, "orchestration": orchestration,
            "premiumRequests": seed["premiumRequests"]}})
    entries.extend(values)
    try:
        return usage_statistics(entries)
    except ContextError:
        return None


def _fold_branches(ids: Sequence[Any], parents: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Tips and dangling parent ids for unique string ids (an entry naming itself is no parent)."""
    named = {p for x, p in zip(ids, parents, strict=True) if p != x}
    known = set(ids)
    leaves = [x for x in ids if x not in named]
    dangling = [p for p in named if isinstance(p, str) and p not in known]
    return leaves, dangling


def _full_state(s: Session) -> _State:
    n = len(s)
    j = s.journal
    types = s.types
    messages = types.count("message") if n else 0
    if s.migrated:
        return _state_from_values(s, list(s.entries))
    kinds = s.kinds
    heads = j.heads
    candidates = usage_candidates(kinds, types, heads)
    usage = _sum_usage(None, (s.entry_at(k) for k in candidates))
    assistants = [m.start() + 1 for m in re.finditer(rb"\x01", kinds)]
    models = _merge_models([], (heads[i] for i in assistants))
    ids, parents = list(s.ids), list(s.parent_ids)
    clean_end = j.final_newline and not any(span.end >= j.size for span in j.malformed)
    if s.unique_string_ids:
        leaves, dangling = _fold_branches(ids, parents)
        stats = SessionStats(n, messages, len(leaves), models, usage)
        return _State(stats, clean_end and _seedable(usage), leaves, dangling, ids)
    pidx = s.parent_index
    referenced = {p for k, p in enumerate(pidx) if p >= 0 and p != k}
    return _State(SessionStats(n, messages, n - len(referenced), models, usage), False)


def _seedable(usage: dict[str, Any] | None) -> bool:
    return usage is None or all(isinstance(v, _NUMERIC) for v in usage.values())


def _state_from_values(s: Session, entries: list[Any]) -> _State:
    """Migrated (v1/v2) sessions: the entries as omp holds them after migration; never incremental."""
    from omp_session.format.reader import head_of_message

    heads = [head_of_message(e.get("message")) if isinstance(e, dict) and e.get("type") == "message" else None
             for e in entries]
    models = _merge_models([], (h for h in heads if h is not None and h.role == "assistant"))
    messages = sum(1 for e in entries if isinstance(e, dict) and e.get("type") == "message")
    pidx = s.parent_index
    referenced = {p for k, p in enumerate(pidx) if p >= 0 and p != k}
    n = len(entries)
    return _State(SessionStats(n, messages, n - len(referenced), models, _sum_usage(None, entries)), False)


def _append(state: _State, tail: Journal) -> _State | None:
    """Fold the records of appended bytes into ``state``; None when only a full read is exact."""
    if tail.slot is not None or tail.bom:
        return None  # the appended bytes would not read the same in place
    ids, parents, types = tail.ids, tail.parents, tail.types
    known = set(state.ids)
    dangling = set(state.dangling)
    leaves = dict.fromkeys(state.leaves)
    for x, p in zip(ids, parents, strict=True):
        if not isinstance(x, str) or not x or x in known or x in dangling:
            return None  # a duplicate or forward-referenced id: the tree needs the whole file
        known.add(x)
        leaves[x] = None
        if p != x and p in known:
            leaves.pop(p, None)
        elif isinstance(p, str) and p != x:
            dangling.add(p)
    heads = [None, *tail.heads]
    kinds = entry_kinds(types, heads, None if tail.loose_heads else shared_heads())
    candidates = usage_candidates(kinds, types, heads)
    old = state.stats
    usage = None if old.usage is None else _sum_usage(old.usage, (tail.value(k) for k in candidates))
    models = _merge_models(old.models, (heads[m.start() + 1] for m in re.finditer(rb"\x01", kinds)))
    n = len(tail)
    stats = SessionStats(old.entries + n, old.messages + types.count("message"), len(leaves), models, usage)
    clean_end = tail.final_newline and not any(span.end >= tail.size for span in tail.malformed)
    return _State(stats, clean_end and _seedable(usage), list(leaves), list(dangling), [*state.ids, *ids])


def _read_archive(path: str) -> bytes:
    with gzip.open(path, "rb") as f:
        return f.read()


def _full(path: str) -> _State:
    if is_archived(path):
        journal = scan_bytes(_read_archive(path))
        state = _full_state(Session(journal, path, None))
        state.incremental = False
        return state
    from omp_session.model.session import read_session

    s = read_session(path)  # no blob store: resolving images would not change any of these numbers
    try:
        return _full_state(s)
    finally:
        s.close()


def compute_stats(path: str | os.PathLike[str]) -> SessionStats:
    """The statistics of one session file (``.jsonl`` or ``.jsonl.gz``), read whole, no cache.

    Raises OSError (and ``gzip``/``zlib`` errors for a damaged archive) when it cannot be read.
    """
    return _full(os.fspath(path)).stats


# ---------------------------------------------------------------------------------------------------
# Archived sessions in the listing


def archived_session_info(path: str, st: os.stat_result | None = None) -> SessionInfo | None:
    """:func:`omp_session.listing.scan_session_info` for a ``.jsonl.gz``: the same head (4 KB) and
    tail (32 KB) windows, of the decompressed text. ``size`` and ``modified`` are the archive's."""
    try:
        st = os.stat(path) if st is None else st
        head = b""
        tail = b""
        with gzip.open(path, "rb") as f:
            while block := f.read(1 << 20):
                if len(head) < _listing.PREFIX_BYTES:
                    head += block[: _listing.PREFIX_BYTES - len(head)]
                tail = (tail + block)[-_listing.SUFFIX_BYTES:]
        # reuses the listing's own steps so an archive lists exactly as its .jsonl would
        content, suffix = _listing.decode_text(head), _listing.decode_text(tail)
        values = [value for value, _, _ in parse_jsonl(content)[0]]
        header = _listing.parse_header(content, values)
        if header is None:
            return None
        return _listing.summarise(path, st, header, content, values, suffix)
    except (OSError, ValueError, EOFError, zlib.error, RecursionError, _listing.Unlisted):
        return None


# ---------------------------------------------------------------------------------------------------
# The cache


def _info_to_json(info: SessionInfo) -> dict[str, Any]:
    return {"path": info.path, "id": info.id, "cwd": info.cwd, "title": info.title,
            "parent": info.parent_session_path, "created": info.created, "modified": info.modified,
            "messages": info.message_count, "size": info.size, "first": info.first_message, "status": info.status}


def _info_from_json(d: dict[str, Any]) -> SessionInfo:
    # all_messages_text is not kept: the CLI never shows it, and it would make the cache large
    return SessionInfo(d["path"], d["id"], d["cwd"], d["title"], d["parent"], d["created"], d["modified"],
                       d["messages"], d["size"], d["first"], "", d["status"])


def _stats_to_json(s: SessionStats) -> dict[str, Any]:
    return {"entries": s.entries, "messages": s.messages, "branches": s.branches, "models": s.models,
            "usage": s.usage}


def _stats_from_json(d: dict[str, Any]) -> SessionStats:
    if d["usage"] is not None and not isinstance(d["usage"], dict):
        raise TypeError("usage")  # a damaged record: read the file
    return SessionStats(int(d["entries"]), int(d["messages"]), int(d["branches"]), list(d["models"]), d["usage"])


def _key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _probe(f: Any, size: int) -> tuple[str, str]:
    """Hashes of the first 4 KB and of the 4 KB before ``size`` (both within ``size``: the file may
    have grown since)."""
    head = os.pread(f.fileno(), min(_PROBE, size), 0)
    start = max(0, size - _PROBE)
    return _digest(head), _digest(os.pread(f.fileno(), size - start, start))


class ListCache:
    """Cached listing infos and statistics; ``enabled=False`` computes everything and keeps nothing."""

    def __init__(self, directory: Path | None = None, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.directory = cache_dir() if directory is None else directory
        self.file = self.directory / CACHE_NAME
        self._files: dict[str, dict[str, Any]] = self._load() if enabled else {}
        self._dirty = False
        self._seen: set[str] = set()
        self.counts = {"info_hits": 0, "info_reads": 0, "stats_hits": 0, "stats_appends": 0, "stats_reads": 0}

    def _load(self) -> dict[str, dict[str, Any]]:
        return load_cache(self.file, _VERSION)

    def _ids_file(self, path: str) -> Path:
        return self.directory / "list-ids" / (hashlib.sha1(path.encode("utf-8", "surrogatepass")).hexdigest()
                                             + ".json")

    # ----- listing infos

    def info(self, path: str, st: os.stat_result | None = None) -> SessionInfo | None:
        """The listing's :class:`SessionInfo` of ``path`` (None: omp would not list it)."""
        self._seen.add(path)
        try:
            st = os.stat(path) if st is None else st
        except OSError:
            return None
        rec = self._files.get(path)
        key = _key(st)
        if rec is not None and rec.get("key") == key and "info" in rec:
            try:
                self.counts["info_hits"] += 1
                return None if rec["info"] is None else _info_from_json(rec["info"])
            except (KeyError, TypeError, ValueError):
                pass  # a damaged record: read the file
        self.counts["info_reads"] += 1
        info = archived_session_info(path, st) if is_archived(path) else _listing.scan_session_info(path)
        if self.enabled and info is not None and info.size == st.st_size:
            # only when the scan saw the size we keyed on (no write raced it)
            rec = self._files.setdefault(path, {})
            if rec.get("key") != key:
                rec.pop("info", None)
            rec["key"] = key
            rec["info"] = _info_to_json(info)
            self._dirty = True
        return info

    # ----- statistics

    def is_fresh(self, path: str, st: os.stat_result) -> bool:
        """Whether :meth:`stats` would answer from the cache without reading the file."""
        rec = self._files.get(path, {}).get("stats")
        return isinstance(rec, dict) and rec.get("key") == _key(st)

    def stats(self, path: str, st: os.stat_result | None = None) -> SessionStats | None:
        """The statistics of ``path``; None when it cannot be read."""
        self._seen.add(path)
        try:
            st = os.stat(path) if st is None else st
            rec = self._files.get(path, {}).get("stats")
            if isinstance(rec, dict) and rec.get("key") == _key(st):
                try:
                    stats = _stats_from_json(rec["stats"])
                    self.counts["stats_hits"] += 1
                    return stats
                except (KeyError, TypeError, ValueError):
                    pass
            state = self._grown(path, st, rec) if isinstance(rec, dict) else None
            if state is None:
                self.counts["stats_reads"] += 1
                state = _full(path)
            else:
                self.counts["stats_appends"] += 1
            self._remember(path, st, state)
            return state.stats
        except (OSError, EOFError, zlib.error, ValueError, RecursionError):
            return None

    def _grown(self, path: str, st: os.stat_result, rec: dict[str, Any]) -> _State | None:
        """The updated state when ``path`` only grew since ``rec`` was made; None when in doubt."""
        try:
            size, _, ino = rec["key"]
            if (is_archived(path) or not rec.get("incremental") or ino != st.st_ino or st.st_size <= size
                    or not rec.get("ids_file")):
                return None
            with open(path, "rb") as f:
                if _probe(f, size) != (rec["head"], rec["tail"]):
                    return None
                appended = os.pread(f.fileno(), st.st_size - size, size)
            ids_doc = cache_loads(Path(rec["ids_file"]).read_bytes())
            if not isinstance(ids_doc, dict) or ids_doc.get("size") != size or ids_doc.get("path") != path:
                return None
            old = _State(_stats_from_json(rec["stats"]), True, list(rec["leaves"]), list(rec["dangling"]),
                         list(ids_doc["ids"]))
            if len(appended) != st.st_size - size:
                return None
            # inside the try: a damaged usage total (keys missing) fails while seeding the sum
            return _append(old, scan_bytes(appended))
        except (OSError, KeyError, TypeError, ValueError, orjson.JSONDecodeError):
            return None

    def _remember(self, path: str, st: os.stat_result, state: _State) -> None:
        size = st.st_size
        if not self.enabled:
            return
        try:
            with open(path, "rb") as f:
                now = os.fstat(f.fileno())
                if _key(now) != _key(st):
                    return  # written to while we read: keep nothing rather than something stale
                head, tail = _probe(f, size) if not is_archived(path) else ("", "")
        except OSError:
            return
        rec = self._files.setdefault(path, {})
        stats_rec: dict[str, Any] = {"key": _key(st), "stats": _stats_to_json(state.stats),
                                     "incremental": state.incremental, "head": head, "tail": tail}
        if state.incremental:
            ids_file = self._ids_file(path)
            if self._write_atomic(ids_file, cache_dumps({"path": path, "size": size, "ids": state.ids})):
                stats_rec.update(leaves=state.leaves, dangling=state.dangling, ids_file=str(ids_file))
            else:
                stats_rec["incremental"] = False
        rec["stats"] = stats_rec
        self._dirty = True

    # ----- saving

    def _write_atomic(self, target: Path, data: bytes) -> bool:
        return replace_quietly(target, data)

    def save(self) -> bool:
        """Write the cache if anything changed (atomically); False when it could not be written."""
        if not self.enabled or not self._dirty:
            return True
        # drop files that are gone, so the cache does not grow forever
        files = {p: r for p, r in self._files.items() if p in self._seen or os.path.exists(p)}
        for p, r in self._files.items():
            ids_file = r.get("stats", {}).get("ids_file") if isinstance(r.get("stats"), dict) else None
            if p not in files and isinstance(ids_file, str):
                with contextlib.suppress(OSError):
                    os.unlink(ids_file)
        ok = self._write_atomic(self.file, cache_dumps({"version": _VERSION, "files": files}))
        self._dirty = not ok
        return ok

