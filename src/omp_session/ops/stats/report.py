"""Token and cost reports over many sessions (``omp-session stats``, issue 8; docs/stats.md).

Where the numbers come from (spec S13.1, S3.15, S4.9): the ``usage`` of every assistant message,
of every ``model_usage`` entry (side calls: titles, auto-thinking...), and of ``task`` tool results
(``details.usage``: what the task's subagents spent). Each is one *usage record*, with its time
(the message's ``timestamp``, else the entry's), provider and model (for a task result, the model
its agent or the result itself records: ``resolvedModel``, ``resolvedModelIdentity``, ``model``).

Two views of every group:

* **billed** -- every record in the file, on every branch, plus the records of the session's
  subagent and advisor transcripts (``<session path without .jsonl>/*.jsonl``, nested to any depth,
  spec S9.5), attributed to the top-level session;
* **current** -- the records on the session's current branch (root to leaf, what the resumed
  conversation holds) and the side calls (``model_usage``) hanging off it, plus the current branch
  of each subagent whose ``task`` result is on it.

What omp records twice, and is counted once here:

1. A ``task`` result's ``details.usage`` restates the assistant usage in the subagent's own session
   file (``<agent id>.jsonl`` anywhere in the artifacts tree). When that file exists its records
   count (they carry the models and times) and the task result's share for that agent does not;
   when it is gone, the result's ``details.results[i].usage`` counts instead.
2. ``fork()`` and ``createBranchedSession()`` copy the parent's entries into a new file with the
   same entry ids and timestamps. Within one report a record whose (entry id, entry timestamp)
   was already billed from another file is billed once: to the session created first. (The
   current-branch view is per conversation and keeps the copy.)

A ``model_usage`` entry is not a copy of any message usage (side calls are not messages): both
count. Per session, ``omp_usage`` is exactly omp's ``getUsageStatistics()`` for the file (the
oracle's ``usage``), and with no subagent files and no forks in the report the billed totals
equal it (same records, same order of summation; non-numeric fields count as 0 here).

Reading thousands of sessions stays cheap: per file, only the entries that can carry usage are
decoded, and the extracted records are cached in ``$XDG_CACHE_HOME/omp-session/stats-usage.json``
keyed by (path, size, mtime, inode).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from omp_session.errors import ContextError, StatsOptionError
from omp_session.format.gc_pause import gc_paused
from omp_session.js.date import now_ms, to_iso
from omp_session.model.usage_items import usage_items, usage_ms
from omp_session.paths import project_dir_name, sessions_dir

from .blocks import Block, billing_blocks, shown_time

if TYPE_CHECKING:  # what reads sessions is imported where a report reads them: stats --store reads rows
    from omp_session.model.usage_plain import PlainAssistant
    from omp_session.store.base import SessionStorage
from .group import (
    GROUPINGS,
    TIME_GROUPINGS,
    UNKNOWN,
    Group,
    Window,
    group_rows,
    model_key,
    order_groups,
    parse_window,
    period_key,
    zone,
    zone_name,
)

__all__ = ["CACHE_NAME", "FileUsage", "StatsCache", "StatsItem", "StatsOptionError", "StatsReport", "UsageRecord",
           "group_items", "read_file_usage", "session_extra", "stats", "total_of"]

CACHE_NAME: Final = "stats-usage.json"
_VERSION: Final = 3  # 2: task results without usage, model ids with a colon, omp NaN as null; 3: task models
_SUFFIX: Final = ".jsonl"
_MAX_DEPTH: Final = 16  # nested subagents; deeper folders are not followed (a symlink loop, not omp)


# ---------------------------------------------------------------------------------------------------
# Records of one file


# Not frozen: a 1 GB session makes 150,000 of each, and a frozen dataclass's __init__ (a call to
# object.__setattr__ per field) took 7 % of `stats`; neither is ever changed after it is made.
@dataclass(slots=True)
class UsageRecord:
    """One usage: an assistant message, a ``model_usage`` entry, or one agent of a ``task`` result."""

    kind: str  # "assistant" | "model_usage" | "task"
    timestamp: float | None  # ms since the epoch
    provider: str | None
    model: str | None
    input: int | float
    output: int | float
    cache_read: int | float
    cache_write: int | float
    total_tokens: int | float
    cost: int | float
    on_branch: bool  # the entry is on the file's current branch
    key: str | None  # "<entry id> <entry timestamp>": what a fork's copy shares with its original
    agent: str | None  # task records: the subagent whose session file holds the same calls

    def to_list(self) -> list[Any]:
        return [self.kind, self.timestamp, self.provider, self.model, self.input, self.output, self.cache_read,
                self.cache_write, self.total_tokens, self.cost, self.on_branch, self.key, self.agent]

    @classmethod
    def from_list(cls, v: Sequence[Any]) -> UsageRecord:
        r = cls(*v)
        # a cache entry of another shape (edited, another build): read the file rather than sum strings
        if not (isinstance(r.kind, str) and isinstance(r.on_branch, bool)
                and all(_count(x) is x for x in (r.input, r.output, r.cache_read, r.cache_write, r.total_tokens,
                                                  r.cost))
                and (r.timestamp is None or _count(r.timestamp) is r.timestamp)
                and all(x is None or isinstance(x, str) for x in (r.provider, r.model, r.key, r.agent))):
            raise ValueError("not a usage record")
        return r


@dataclass
class FileUsage:
    """What one session file contributes: its header facts, omp's totals and its usage records."""

    path: str
    id: str | None
    title: str | None
    cwd: str | None
    created: str | None  # the header timestamp
    omp_usage: dict[str, Any] | None  # getUsageStatistics(); None where omp throws computing it
    records: list[UsageRecord]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "cwd": self.cwd, "created": self.created,
                "omp": self.omp_usage, "records": [r.to_list() for r in self.records]}

    @classmethod
    def from_json(cls, path: str, d: dict[str, Any]) -> FileUsage:
        if not all(d[k] is None or isinstance(d[k], str) for k in ("id", "title", "cwd", "created")):
            raise ValueError("not a session's usage")
        return cls(path, d["id"], d["title"], d["cwd"], d["created"], d["omp"],
                   [UsageRecord.from_list(r) for r in d["records"]])


def _count(value: Any) -> int | float:
    """A token count or cost as a number; anything else (a string, NaN, a bool) counts 0."""
    kind = value.__class__
    if kind is int:
        return value  # type: ignore[no-any-return]
    if kind is float and math.isfinite(value):
        return value  # type: ignore[no-any-return]
    return 0


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _record(kind: str, usage: dict[str, Any], ms: float | None, provider: Any, model: Any, on_branch: bool,
            key: str | None, agent: str | None = None) -> UsageRecord:
    cost = usage.get("cost")
    return UsageRecord(kind, ms, _str(provider), _str(model), _count(usage.get("input")),
                       _count(usage.get("output")), _count(usage.get("cacheRead")), _count(usage.get("cacheWrite")),
                       _count(usage.get("totalTokens")), _count(cost.get("total")) if isinstance(cost, dict) else 0,
                       on_branch, key, agent)


def _records_of(entry: Any, on_branch: bool, keyed: bool) -> list[UsageRecord]:
    return [_record(i.kind, i.usage, i.timestamp, i.provider, i.model, on_branch, i.key, i.agent)
            for i in usage_items(entry, keyed)]


def _plain_record(p: PlainAssistant, on_branch: bool, keyed: bool) -> UsageRecord:
    """:func:`_record` of an assistant message whose usage is plain numbers."""
    eid, ets = p.entry_id, p.entry_timestamp
    key = f"{eid} {ets}" if keyed and isinstance(eid, str) and eid and isinstance(ets, str) else None
    i, o, cr, cw, tt, cost = p.numbers
    whole = i + o + cr + cw + tt + cost
    if whole - whole != 0:  # one is infinite (or the sum overflowed): each as _count takes it
        i, o, cr, cw, tt, cost = map(_count, p.numbers)
    return UsageRecord("assistant", usage_ms(p.message_timestamp, ets), _str(p.provider), _str(p.model),
                       i, o, cr, cw, tt, cost, on_branch, key, None)


_Read = tuple[UsageRecord, tuple[Any, ...]] | None  # a plain assistant's record and its numbers for omp's sum


def read_file_usage(path: str | os.PathLike[str], storage: SessionStorage | None = None) -> FileUsage:
    """The usage records of one session file (or of the session stored under ``path`` in
    ``storage``), read now (no cache). Raises OSError when unreadable."""
    from omp_session.catalog.stored import read_stored_session
    from omp_session.catalog.summaries import usage_candidates
    from omp_session.format.blobs import MemoryBlobStore
    from omp_session.format.split import ReadAhead
    from omp_session.model.session import read_session
    from omp_session.model.usage import UsageSum
    from omp_session.model.usage_plain import plain_reader

    path = os.fspath(path)
    # no blob store: images do not change any number
    s = read_session(path) if storage is None else read_stored_session(storage, path, blob_store=MemoryBlobStore())
    ahead: ReadAhead[int, _Read] | None = None
    try:
        header = s.header if isinstance(s.header, dict) else {}
        n = len(s)
        if s.migrated:
            picked: Sequence[int] = range(n)
        else:
            j = s.journal
            picked = usage_candidates(s.kinds, s.types, j.heads)
        on_branch = set(s.branch_indices()) if picked else set()
        parents = s.parent_index if picked else []
        # v1 ids are made up on every load: they identify nothing across files
        keyed = not s.migrated
        records: list[Any] = []
        total: UsageSum | None = UsageSum()  # omp's getUsageStatistics(); None once omp would throw
        plain = plain_reader(s)  # (one object per provider and model name: each pickled once)

        def read(k: int) -> _Read:
            fast = plain(k)
            return None if fast is None else (_plain_record(fast, k in on_branch, keyed), fast.numbers)

        # decoding every assistant's usage is most of stats' own work on a large file: a child
        # reads the later part (measured even at about 60 / 40 on the 1 GB session); the records
        # are plain values (no sentinel crosses the pipe), taken in file order, so the records
        # and sums are the one-process ones
        ahead = ReadAhead(picked, read, 0 if s.migrated else s.journal.size, 60)
        for at, k in enumerate(picked):
            got = ahead(at)
            shaped = got is not None
            if got is not None:
                record, numbers = got
                records.append(record)
                if total is None or total.add_numbers(numbers):
                    continue
            e = s.peek_entry(k)  # decoded, not kept: memory stays flat on a 1 GB session
            if not shaped:
                # a side call (model_usage) hangs off the branch without becoming part of it (S3.15):
                # it belongs to the conversation it was made for
                side = isinstance(e, dict) and e.get("type") == "model_usage" and parents[k] in on_branch
                records.extend(_records_of(e, k in on_branch or side, keyed))
            if total is not None:
                try:
                    total.add(e)
                except ContextError:
                    total = None  # omp threw there: our records go on past it
        omp = None if total is None else total.result()
        if omp is not None:  # omp's NaN/Infinity (a missing count) as JSON.stringify and the cache write it
            omp = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in omp.items()}
        cwd = header.get("cwd")
        return FileUsage(path, _str(header.get("id")), s.get_session_name(), cwd if isinstance(cwd, str) else None,
                         _str(header.get("timestamp")), omp, records)
    finally:
        if ahead is not None:
            ahead.cancel()  # (nothing to do once taken; after an error, the child goes)
        s.close()


# ---------------------------------------------------------------------------------------------------
# The cache


def _key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


class StatsCache:
    """Extracted records per file, keyed by (size, mtime, inode); ``enabled=False`` keeps nothing.

    An accelerator only: a missing, corrupt or stale cache gives the same report. Saved atomically.
    """

    def __init__(self, directory: Path | None = None, *, enabled: bool = True) -> None:
        from omp_session.catalog.summaries import cache_dir

        self.enabled = enabled
        self.file = (cache_dir() if directory is None else directory) / CACHE_NAME
        self._files: dict[str, Any] = self._load() if enabled else {}
        self._seen: set[str] = set()
        self._dirty = False
        self.hits = 0
        self.reads = 0

    def _load(self) -> dict[str, Any]:
        from omp_session.catalog.cache import load_cache

        return load_cache(self.file, _VERSION)

    def get(self, path: str) -> FileUsage:
        """The records of ``path``; raises OSError when it cannot be read."""
        self._seen.add(path)
        st = os.stat(path)
        rec = self._files.get(path)
        if isinstance(rec, dict) and rec.get("key") == _key(st):
            try:
                usage = FileUsage.from_json(path, rec["data"])
                self.hits += 1
                return usage
            except (KeyError, TypeError, ValueError):
                pass  # a damaged entry: read the file
        self.reads += 1
        usage = read_file_usage(path)
        if self.enabled and _key(os.stat(path)) == _key(st):  # not written to while we read
            self._files[path] = {"key": _key(st), "data": usage.to_json()}
            self._dirty = True
        return usage

    def save(self) -> bool:
        """Write the cache if it changed; False when it could not be written (the report is unaffected)."""
        if not self.enabled or not self._dirty:
            return True
        files = {p: r for p, r in self._files.items() if p in self._seen or os.path.exists(p)}
        try:
            data = orjson.dumps({"version": _VERSION, "files": files})
        except TypeError:  # a count beyond 64 bits (orjson's limit): no cache this time
            return False
        from omp_session.catalog.cache import replace_quietly

        if not replace_quietly(self.file, data):
            return False
        self._dirty = False
        return True


class _StoreReader:
    """The cache's interface over a database or Redis store: read every time (a store has no
    inode, and reading a stored body is one query)."""

    def __init__(self, storage: SessionStorage) -> None:
        self.storage = storage

    def get(self, path: str) -> FileUsage:
        return read_file_usage(path, self.storage)

    def save(self) -> bool:
        return True


# ---------------------------------------------------------------------------------------------------
# Finding sessions and their subagents


@dataclass
class _Node:
    """A session file and the transcripts in its artifacts folder (subagents and advisors)."""

    path: str
    agent: str | None = None  # the stem of a subagent file; None for top-level sessions and advisors
    children: list[_Node] = field(default_factory=list)


def _artifact_files(path: str, depth: int) -> list[_Node]:
    if depth > _MAX_DEPTH or not path.endswith((_SUFFIX, _SUFFIX + ".gz")):
        return []
    folder = path.removesuffix(".gz")[: -len(_SUFFIX)]  # an archive's artifacts: the path without .jsonl.gz
    if os.path.islink(folder):  # omp makes a real folder: a link could count files from anywhere
        return []
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it if e.name.endswith(_SUFFIX) and not e.name.startswith(".")
                           and e.is_file(follow_symlinks=False))
    except OSError:
        return []
    nodes = []
    for name in names:
        sub = os.path.join(folder, name)
        agent = None if name.startswith("__advisor") else name[: -len(_SUFFIX)]
        nodes.append(_Node(sub, agent, _artifact_files(sub, depth + 1)))
    return nodes


def _project_files(directory: Path) -> list[str]:
    # the files list finds (omp's listing): no symlink (and --all no linked project folder)
    try:
        with os.scandir(directory) as it:
            return sorted(os.path.join(directory, e.name) for e in it
                          if e.name.endswith(_SUFFIX) and not e.name.startswith(".")
                          and e.is_file(follow_symlinks=False))
    except OSError:
        return []


def _all_files(root: Path) -> list[str]:
    try:
        with os.scandir(root) as it:
            buckets = sorted(e.path for e in it if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))
    except OSError:
        return []
    return [f for b in buckets for f in _project_files(Path(b))]


def _stored_tree(storage: SessionStorage, key: str) -> _Node:
    """A stored session and the transcripts stored under its artifacts prefix, as _artifact_files
    finds them on disk."""
    stem = key.removesuffix(_SUFFIX)
    below = [f.path for f in storage.scan(stem + "/")] if key.endswith(_SUFFIX) else []

    def children(folder: str, depth: int) -> list[_Node]:
        if depth > _MAX_DEPTH:
            return []
        nodes = []
        for sub in below:
            name = sub[len(folder) + 1:]
            if sub.startswith(folder + "/") and "/" not in name and not name.startswith("."):
                agent = None if name.startswith("__advisor") else name.removesuffix(_SUFFIX)
                nodes.append(_Node(sub, agent, children(sub.removesuffix(_SUFFIX), depth + 1)))
        return nodes

    return _Node(key, None, children(stem, 1))


def _stored_tops(storage: SessionStorage, root: str, bucket: str | None) -> list[str]:
    """Top-level sessions in the store: every bucket's (``bucket`` None) or one bucket's."""
    prefix = root if bucket is None else root + bucket + "/"
    depth = 1 if bucket is None else 0  # "<bucket>/<file>" below the root, "<file>" below a bucket
    return [f.path for f in storage.scan(prefix) if f.path[len(prefix):].count("/") == depth]


def _walk(node: _Node) -> Iterable[_Node]:
    yield node
    for child in node.children:
        yield from _walk(child)


# ---------------------------------------------------------------------------------------------------
# The report


@dataclass(slots=True)
class StatsItem:
    """A record as placed in the report: whose it is, and in which views it counts."""

    record: UsageRecord
    session: str  # the top-level session file it is attributed to
    project: str  # that session's cwd (else its folder name)
    source: str  # the file the record was read from (the session itself, or a subagent/advisor file)
    billed: bool
    current: bool


@dataclass
class StatsReport:
    """The rows of one report, their total, and the placed records behind them (for charts)."""

    by: str
    tz: tzinfo
    window: Window
    groups: list[Group]
    total: Group
    items: list[StatsItem]  # in the window; ``billed``/``current`` say where each counts
    sessions: list[FileUsage]  # the top-level sessions read
    files: int  # session files read, subagent and advisor files included
    problems: list[str]  # files that could not be read: one line each
    # the times of billed records the window left out: they place the 5-hour blocks (blocks.py)
    outside: list[float] = field(default_factory=list)

    def crosstab(self, rows: str, columns: str, *, value: str = "cost", view: str = "billed") -> dict[str, dict[str, Any]]:
        """``{row key: {column key: sum}}`` of ``value`` (a :class:`Totals` field) over one view."""
        out: dict[str, dict[str, Any]] = {}
        for item in self.items:
            if not getattr(item, view):
                continue
            r, c = _key_of(item, rows, self.tz), _key_of(item, columns, self.tz)
            cell = out.setdefault(r, {})
            cell[c] = cell.get(c, 0) + getattr(item.record, value)
        return out

    def blocks(self, now: float | None = None) -> list[Block]:
        """The billed records in 5-hour billing blocks, with the gaps between them (``--blocks``);
        ``now`` (ms since the epoch, default the clock) decides which block is active."""
        at = now_ms() if now is None else now
        # a window that ended by now holds only part of the block now is in: nothing to project
        live = self.window.until is None or self.window.until > at
        return billing_blocks(self.items, at if live else None, self.outside)

    def blocks_dict(self, now: float | None = None) -> dict[str, Any]:
        """What ``--blocks --json`` prints."""
        at = now_ms() if now is None else now
        return {
            "tz": zone_name(self.tz), "now": shown_time(at, self.tz),
            "since": None if self.window.since is None else to_iso(self.window.since),
            "until": None if self.window.until is None else to_iso(self.window.until),
            "sessions": len(self.sessions), "files": self.files,
            "blocks": [b.to_dict(self.tz) for b in self.blocks(at)],
            "total": {"key": "total", "billed": self.total.billed.to_dict()}, "problems": self.problems,
        }

    def to_dict(self, *, models: bool = True) -> dict[str, Any]:
        """What ``--json`` prints; ``models=False`` leaves out the per-model rows of each period."""
        return {
            "by": self.by, "tz": zone_name(self.tz),
            "since": None if self.window.since is None else to_iso(self.window.since),
            "until": None if self.window.until is None else to_iso(self.window.until),
            "sessions": len(self.sessions), "files": self.files,
            "groups": [g.to_dict(models=models) for g in self.groups], "total": self.total.to_dict(),
            "problems": self.problems,
        }


def _key_of(item: StatsItem, by: str, tz: tzinfo) -> str:
    r = item.record
    if by == "session":
        return item.session
    if by == "project":
        return item.project
    if by == "provider":
        return r.provider or UNKNOWN
    if by == "model":
        return model_key(r)
    return period_key(r.timestamp, by, tz)


def session_extra(fu: FileUsage) -> dict[str, Any]:
    """What a session's row shows beside its sums (``--by session``)."""
    return {"path": fu.path, "id": fu.id, "title": fu.title, "cwd": fu.cwd, "created": fu.created,
            "omp_usage": fu.omp_usage}


def stats(sessions: Iterable[str | os.PathLike[str]] | None = None, *, all_sessions: bool = False,
          root: str | os.PathLike[str] | None = None, cwd: str | None = None, by: str = "session",
          since: str | None = None, until: str | None = None, tz: str | None = None,
          cache: StatsCache | bool = True, progress: Callable[[int, int], None] | None = None,
          storage: SessionStorage | None = None) -> StatsReport:
    """Token and cost totals of ``sessions`` (paths), of every session under the root (``all_sessions``),
    or of the sessions of project ``cwd`` (default: the current directory), grouped ``by`` one of
    session, day, week, month, model, provider, project. ``since``/``until`` (dates or ISO times) and
    the calendar periods are taken in ``tz`` (an IANA name; default local). ``progress(done, total)``
    is called after each file. By day, week or month each row's ``models`` holds one row per model
    (costliest first); :meth:`StatsReport.blocks` cuts the billed records into 5-hour blocks. See
    the module docstring for the billed/current views and the deduplication rules. Raises
    :class:`StatsOptionError` for a bad ``by``/``tz``/window.

    ``storage``: read the sessions from a database or Redis store (``omp_session.store``) instead
    of the files; ``root`` is then the store's key prefix of the sessions root and ``sessions``
    are keys.
    """
    if by not in GROUPINGS:
        raise StatsOptionError(f"cannot group by {by!r} (choose one of {', '.join(GROUPINGS)})")
    zone_ = zone(tz)
    window = parse_window(since, until, zone_)
    base = Path(root) if root is not None else sessions_dir()

    def bucket() -> str:  # only without SESSIONs or --all: the process may stand in a deleted folder
        return project_dir_name(cwd if cwd is not None else os.getcwd())

    if storage is not None:
        prefix = os.fspath(root) if root is not None else str(sessions_dir()) + "/"
        tops = ([os.fspath(p) for p in sessions] if sessions is not None
                else _stored_tops(storage, prefix, None if all_sessions else bucket()))
        trees = [_stored_tree(storage, p) for p in dict.fromkeys(tops)]
        store: StatsCache | _StoreReader = _StoreReader(storage)
    else:
        if sessions is not None:
            tops = [os.path.expanduser(os.fspath(p)) for p in sessions]
        elif all_sessions:
            tops = _all_files(base)
        else:
            tops = _project_files(base / bucket())
        store = cache if isinstance(cache, StatsCache) else StatsCache(enabled=cache)
        trees = [_Node(p, None, _artifact_files(p, 1)) for p in dict.fromkeys(tops)]
    total_files = sum(1 for t in trees for _ in _walk(t))
    done = 0
    problems: list[str] = []
    read: list[tuple[_Node, dict[str, FileUsage]]] = []
    for tree in trees:
        usages: dict[str, FileUsage] = {}
        for node in _walk(tree):
            try:
                with gc_paused():  # (see below)
                    usages[node.path] = store.get(node.path)
            except (OSError, ValueError, RecursionError) as e:
                reason = os.strerror(e.errno) if isinstance(e, OSError) and e.errno else str(e) or type(e).__name__
                problems.append(f"{node.path}: cannot read: {reason}")
            done += 1
            if progress is not None:
                progress(done, total_files)
        if tree.path in usages:
            read.append((tree, usages))
    store.save()
    # forks are billed to the session created first (ties: path order)
    read.sort(key=lambda t: (t[1][t[0].path].created or "", t[0].path))
    # No cyclic collection while records are made and placed (they make no cycles): every full
    # collection walked all of them so far, a fifth of `stats` on a 1 GB session.
    with gc_paused():
        items, outside = _place(read, window)
        report_sessions = [u[t.path] for t, u in read]
        groups = group_items(items, report_sessions, by, zone_, window)
        total = total_of(items)
    return StatsReport(by, zone_, window, groups, total, items, report_sessions, done - len(problems), problems,
                       outside)


def total_of(items: Iterable[StatsItem]) -> Group:
    """The ``total`` row: every billed record, every record on a current branch."""
    total = Group("total")
    for item in items:
        if item.billed:
            total.billed.add(item.record)
        if item.current:
            total.current.add(item.record)
    return total


def _place(read: list[tuple[_Node, dict[str, FileUsage]]],
           window: Window) -> tuple[list[StatsItem], list[float]]:
    """The records in the window, placed; and the times of the billed ones outside it."""
    billed_from: dict[str, str] = {}  # dedup key -> the file that billed it first
    items: list[StatsItem] = []
    outside: list[float] = []
    placed: set[str] = set()  # a subagent file also named as a session counts once, under its parent
    for tree, usages in read:
        top = usages[tree.path]
        project = top.cwd or os.path.basename(os.path.dirname(tree.path)) or UNKNOWN
        nodes = []
        for node in _walk(tree):
            real = os.path.realpath(node.path)
            if node.path in usages and real not in placed:
                placed.add(real)
                nodes.append(node)
        # a nested subagent's file sits in its parent subagent's folder or, with a dotted id
        # (``AgentA.Sub1.jsonl``), beside it: match task results to files anywhere in the tree
        by_agent: dict[str, _Node] = {}
        for node in nodes:
            if node.agent is not None:
                by_agent.setdefault(node.agent, node)
        current = _current_nodes(nodes[0], usages, by_agent) if nodes and nodes[0] is tree else set()
        for node in nodes:
            in_current = id(node) in current
            for r in usages[node.path].records:
                if r.kind == "task" and r.agent in by_agent:
                    if r.key is not None:  # billed here, from that file: a copy elsewhere is not (rule 2)
                        billed_from.setdefault(r.key, node.path)
                    continue  # the subagent's own file holds these calls (rule 1)
                billed = True
                if r.key is not None:
                    first = billed_from.setdefault(r.key, node.path)
                    billed = first == node.path  # a fork's copy of a record billed elsewhere (rule 2)
                if r.timestamp in window:
                    items.append(StatsItem(r, tree.path, project, node.path, billed, in_current and r.on_branch))
                elif billed and r.timestamp is not None:
                    outside.append(r.timestamp)
    return items, outside


def _current_nodes(top: _Node, usages: dict[str, FileUsage], by_agent: dict[str, _Node]) -> set[int]:
    """The session and, transitively, each subagent whose task result is on a current branch."""
    seen: set[int] = set()
    stack = [top]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack += [by_agent[r.agent] for r in usages[node.path].records
                  if r.kind == "task" and r.on_branch and r.agent is not None and r.agent in by_agent]
    return seen


def group_items(items: list[StatsItem], sessions: list[FileUsage], by: str, tz: tzinfo, window: Window) -> list[Group]:
    """The rows of placed records ``by`` a grouping, in the report's order (by session: a row for
    each of ``sessions`` without a window; by period: each period's models)."""
    keys = {id(item): _key_of(item, by, tz) for item in items}  # a period's key is a date conversion: once
    groups = group_rows(items, lambda item: keys[id(item)])
    if by == "session":
        for fu in sessions:
            g = groups.get(fu.path)
            if g is None and not window.bounded:
                g = groups[fu.path] = Group(fu.path)  # a session that spent nothing is still a row
            if g is not None:
                g.extra = session_extra(fu)
    if by in TIME_GROUPINGS:  # each period's models, as ccusage's daily report breaks a day down
        per: dict[str, list[StatsItem]] = {}
        for item in items:
            per.setdefault(keys[id(item)], []).append(item)
        for k, g in groups.items():
            g.models = order_groups(group_rows(per[k], lambda item: model_key(item.record)).values(), "model")
    return order_groups(groups.values(), by)
