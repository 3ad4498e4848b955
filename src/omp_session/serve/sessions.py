"""The sessions the server knows: one listing of the root, refreshed cheaply on every request.

A refresh scans the bucket folders and stats each session file (what ``list --all`` does); when
no file changed since the last refresh the rows built then are kept, so the list page costs a
directory scan whatever the number of sessions. Changed files go through the listing cache
(:class:`omp_session.catalog.summaries.ListCache`), which reads only the head and tail of a file.

Cost and models (``list --stats``) need the whole file, so they are computed only once a request
sorts by cost or filters by model: in a background thread, through the same cache, while the
request waits up to :data:`STATS_WAIT` seconds; a page answered before they are all known says how
many are still being computed (``Page.stats_pending``) and sorts or filters by what is known.

This is also the only way from a URL to a file: ``/s/<id>`` looks the id up here. A path is
never taken from a request; files that are symlinks, or that resolve outside the root, are not
listed at all.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final
from urllib.parse import quote

from omp_session.catalog import listing
from omp_session.catalog.summaries import ListCache, SessionStats, is_archived
from omp_session.js.date import to_iso

__all__ = ["ACTIVE_MS", "SORTS", "STATS_WAIT", "Catalog", "Page", "Query", "QueryError", "Row", "ids_of", "now_ms",
           "paged", "row_json", "url_word", "without_surrogates"]

ACTIVE_MS: Final = 5 * 60 * 1000  # a session written to this recently is marked active
SORTS: Final = ("modified", "created", "size", "messages", "title", "cost")
STATS_WAIT: Final = 2.0  # seconds a request waits for cost and models before answering with what is known
_STATS_SAVE_EVERY: Final = 500  # files read between two writes of the stats cache
_SUFFIXES: Final = (".jsonl", ".jsonl.gz")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (a damaged file's JSON escape, which has no UTF-8) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def url_word(text: str) -> str:
    """``text`` (an id) as one segment of a URL, lone surrogates as U+FFFD: the form :func:`ids_of`
    also files the row under (and the search index keeps the id in)."""
    return quote(without_surrogates(text), safe="")


def ids_of(rows: Iterable[Row]) -> dict[str, Row]:
    """``rows`` (newest first) by id: the first row of an id wins (a copy under another name
    shares it). A row whose id holds a lone surrogate is also filed under the id its URL names
    (U+FFFD in place of each), unless a row's own id is that: a URL opens the session whose id
    it spells, and of damaged ids that read the same, the newest."""
    by_id: dict[str, Row] = {}
    damaged: list[Row] = []
    for row in rows:
        if isinstance(row.id, str) and row.id:
            by_id.setdefault(row.id, row)
            if _SURROGATE.search(row.id):
                damaged.append(row)
    for row in damaged:
        by_id.setdefault(without_surrogates(row.id), row)
    return by_id


@dataclass
class Row:
    """One listed session (a subagent's row names its parent's path in ``subagent_of``)."""

    id: str
    path: str
    title: str | None
    cwd: str
    created: int | None  # epoch ms; None for omp's Invalid Date
    modified: int  # epoch ms (the file's mtime, as omp's listing)
    messages: int
    size: int
    status: str | None
    first_message: str
    parent_session: str | None
    subagent_of: str | None
    archived: bool
    children: list[Row] = field(default_factory=list)
    # list --stats' figures, set once asked for; stats None with stats_known: unreadable
    stats: SessionStats | None = None
    stats_known: bool = False

    @property
    def cost(self) -> Any:
        return None if self.stats is None else self.stats.cost

    def uses_model(self, model: str) -> bool:
        """``model`` is "provider/model" or only the model's name (as ``stats --by model`` shows it)."""
        return self.stats is not None and any(m == model or m.split("/", 1)[-1] == model for m in self.stats.models)

    @functools.cached_property
    def haystack(self) -> str:
        """What the text filter looks in, made once: a row is built again when its file changes."""
        return f"{self.title or ''}\n{self.first_message}\n{self.id}".lower()


def row_json(row: Row, now_ms: float) -> dict[str, Any]:
    """The fields of ``list --json`` (docs/cli.md), plus ``active`` and the page's ``url``."""
    out: dict[str, Any] = {
        "path": row.path, "id": row.id, "title": row.title, "cwd": row.cwd,
        "created": None if row.created is None else to_iso(row.created), "modified": to_iso(row.modified),
        "messages": row.messages, "size": row.size, "status": row.status, "first_message": row.first_message,
        "parent_session": row.parent_session, "subagent_of": row.subagent_of,
    }
    if row.archived:
        out["archived"] = True
    out["active"] = now_ms - row.modified < ACTIVE_MS
    out["url"] = "/s/" + url_word(row.id)  # an id is the file's word: "#", "?" or "/" in it too
    if row.stats_known:  # list --stats' fields, only once computed (a cost sort or a model filter)
        st = row.stats
        if st is None:  # unreadable: the row stays, marked by nulls
            out.update(entries=None, branches=None, models=None, cost=None, tokens=None)
        else:
            out.update(entries=st.entries, messages=st.messages, branches=st.branches, models=st.models,
                       cost=st.cost, tokens=st.tokens)
    return out


@dataclass(frozen=True)
class Query:
    """What the list page asks for. ``since``/``until`` are local dates (YYYY-MM-DD), until inclusive."""

    project: str = ""
    text: str = ""
    model: str = ""  # "provider/model" or the model's name: sessions (or their subagents) that used it
    since: str = ""
    until: str = ""
    sort: str = "modified"
    reverse: bool = False
    page: int = 1
    per_page: int = 100
    user: str = ""  # a store's namespace filters (serve --store only; "": any)
    machine: str = ""


@dataclass
class Page:
    rows: list[Row]  # the page's parents, each with its subagents in ``children``
    total: int  # parents matching the query
    page: int
    pages: int
    projects: list[tuple[str, int]]  # every project (cwd) with its number of sessions
    stats_pending: int = 0  # sessions whose cost and models are still being computed (0: all known)


class QueryError(ValueError):
    """A query parameter that cannot be understood (shown to the user as a 400)."""


def _day_ms(text: str, *, end: bool) -> int | None:
    if not text:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise QueryError(f"{text!r} is not a date (YYYY-MM-DD)") from None
    try:
        # the next local midnight, not +24 h: a day when the clocks change is 23 or 25 hours long
        if end:
            day += timedelta(days=1)
        return int(day.timestamp() * 1000)  # local midnight, as the date inputs of the page mean it
    except (OverflowError, ValueError, OSError):  # year 1 or 9999: beyond every file's time
        return -(1 << 62) if (day.year < 1970) else 1 << 62


def _lstat_regular(e: os.DirEntry[str]) -> os.stat_result | None:
    """The ``lstat`` of an entry the scan saw as a regular file; None when it is gone, or is no
    longer a regular file (swapped for a symlink since the scan: never listed)."""
    try:
        st = e.stat(follow_symlinks=False)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _visible_files(directory: str, folders: set[str], stats: dict[str, os.stat_result]) -> list[str]:
    """A bucket's session files (``.jsonl`` and archived ``.jsonl.gz``), never symlinks, each with
    its ``stat`` put in ``stats``, and its subfolders (where subagent sessions live) put in
    ``folders``: one scan, one ``lstat`` per file (the same as ``stat`` for the regular files kept).
    ``directory`` is normalised (``node_join``), so a file's path is ``directory/name``."""
    found: list[str] = []
    prefix = directory if directory.endswith("/") else directory + "/"
    try:
        with os.scandir(directory) as it:
            for e in it:
                name = e.name
                if name.startswith("."):
                    continue
                if name.endswith(_SUFFIXES) and e.is_file(follow_symlinks=False) \
                        and not listing.is_quarantine_name(name):
                    path = prefix + name
                    st = _lstat_regular(e)
                    if st is not None:
                        stats[path] = st
                        found.append(path)
                elif e.is_dir(follow_symlinks=False):
                    folders.add(prefix + name)
    except OSError:
        return []
    return found


def _subagent_files(parent: str, folders: set[str], stats: dict[str, os.stat_result]) -> list[str]:
    """``<session>/<agentId>.jsonl`` beside a parent session (S9.5), advisors and symlinks left out;
    their ``stat`` put in ``stats``."""
    folder = parent[: -len(".jsonl")] if parent.endswith(".jsonl") else None
    if folder is None or folder not in folders:
        return []
    out = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.endswith(".jsonl") and not e.name.startswith(("__advisor", ".")) \
                        and e.is_file(follow_symlinks=False):
                    path = os.path.join(folder, e.name)
                    st = _lstat_regular(e)
                    if st is not None:
                        stats[path] = st
                        out.append(path)
    except OSError:
        return []
    return sorted(out)


class Catalog:
    """The listing of one sessions root, kept between requests (thread-safe)."""

    def __init__(self, root: str | os.PathLike[str], *, cache: bool = True) -> None:
        self.root = os.fspath(root)
        self._real_root = os.path.realpath(self.root)
        self._cache = ListCache(enabled=cache)
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[int, int, int]] | None = None
        self._parents: list[Row] = []
        self._by_id: dict[str, Row] = {}
        self._projects: list[tuple[str, int]] = []
        self.skipped: list[str] = []  # files that are not readable sessions, at the last change
        # path -> (the file's key when read, its stats): filled by the worker, read by requests
        self._stats: dict[str, tuple[tuple[int, int, int], SessionStats | None]] = {}
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()

    # ----- the listing ---------------------------------------------------------------------

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real.startswith(self._real_root + os.sep)

    def refresh(self) -> None:
        """Bring the listing up to date with the files (a directory scan when nothing changed)."""
        with self._lock:
            folders: set[str] = set()
            stats: dict[str, os.stat_result] = {}
            files = [f for bucket in listing.glob_visible(self.root, True)
                     for f in _visible_files(listing.node_join(self.root, bucket), folders, stats)]
            subs = {f: _subagent_files(f, folders, stats) for f in files} if folders else {}
            keys = {f: (st.st_size, st.st_mtime_ns, st.st_ino) for f, st in stats.items()}
            if keys == self._keys:
                return
            self._rebuild(files, subs, stats)
            self._keys = keys

    def _row(self, path: str, st: os.stat_result, parent: str | None) -> Row | None:
        if not self._inside(path):
            return None  # a bucket that resolves elsewhere (bind mounts aside): not served
        info = self._cache.info(path, st)
        if info is None:
            return None
        return Row(id=info.id, path=info.path, title=info.title, cwd=info.cwd, created=info.created,
                   modified=info.modified, messages=info.message_count, size=info.size, status=info.status,
                   first_message=info.first_message, parent_session=info.parent_session_path,
                   subagent_of=parent, archived=is_archived(info.path))

    def _rebuild(self, files: list[str], subs: dict[str, list[str]], stats: dict[str, os.stat_result]) -> None:
        rows: dict[str, Row] = {}
        skipped: list[str] = []
        for f in files:
            st = stats.get(f)
            row = None if st is None else self._row(f, st, None)
            if row is None:
                if st is not None:
                    skipped.append(f)
                continue
            rows[row.path] = row
        order = listing.sort_sessions(_as_info(r) for r in rows.values())
        parents = [rows[i.path] for i in order]
        counts: dict[str, int] = {}
        for p in parents:
            for s in subs.get(p.path, []):
                st = stats.get(s)
                sub = None if st is None else self._row(s, st, p.path)
                if sub is not None:
                    p.children.append(sub)
            counts[p.cwd] = counts.get(p.cwd, 0) + 1
        # the newest session of an id wins (a copy under another name shares it)
        by_id = ids_of(r for p in parents for r in (p, *p.children))
        # a text the cache's JSON cannot hold (a lone surrogate of a damaged file): the listing is
        # still right, only not kept for the next start
        with contextlib.suppress(TypeError, ValueError):
            self._cache.save()
        self._parents = parents
        self._by_id = by_id
        self._projects = sorted(counts.items())
        self.skipped = skipped

    # ----- questions -----------------------------------------------------------------------

    def find(self, session_id: str) -> Row | None:
        """The listed session of this id; None for anything else (the only URL -> file mapping)."""
        self.refresh()
        row = self._by_id.get(session_id)
        if row is None or not os.path.isfile(row.path) or os.path.islink(row.path) or not self._inside(row.path):
            return None
        return row

    def open_listed(self, row: Row) -> int:
        """A descriptor of the listed file ``row.path``, opened now without following a symlink at
        any step below the root: what the file became since it was listed (a link out of the
        root, the bucket swapped for one) is refused with OSError, not read."""
        rel = os.path.relpath(row.path, self.root)
        parts = rel.split(os.sep)
        if rel.startswith(os.pardir) or os.path.isabs(rel) or not parts:
            raise OSError(f"{row.path}: not under the sessions root")
        fd = os.open(self._real_root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in parts[:-1]:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = inner
            # O_NONBLOCK: a FIFO put in its place must not hang the request
            found = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        finally:
            os.close(fd)
        if not stat.S_ISREG(os.fstat(found).st_mode):
            os.close(found)
            raise OSError(f"{row.path}: not a regular file any more")
        return found

    def is_listed_file(self, path: str) -> bool:
        """Whether ``path`` is still what may be served: a regular file, not a symlink, inside the
        root (checked again while an event stream follows it)."""
        try:
            st = os.lstat(path)
        except OSError:
            return True  # gone: the follower says so itself
        return stat.S_ISREG(st.st_mode) and self._inside(path)

    def rows(self) -> list[Row]:
        """Every parent session, in omp's order (newest first), subagents in ``children``."""
        self.refresh()
        return self._parents

    def page(self, q: Query) -> Page:
        self.refresh()
        _check(q)
        pending = self.with_stats(STATS_WAIT) if q.sort == "cost" or q.model.strip() else 0
        return paged(self._parents, self._projects, q, pending)  # the rows the stats were put on

    # ----- cost and models, on demand --------------------------------------------------------

    def with_stats(self, wait: float) -> int:
        """Put the known stats on every listed row, computing the missing ones in the background
        (waiting up to ``wait`` seconds for them); the number of sessions still unknown."""
        missing = self._attach()
        if missing:
            worker = self._start_worker(missing)
            worker.join(wait)
            missing = self._attach()
        return len(missing)

    def _attach(self) -> list[str]:
        keys = self._keys or {}
        missing: list[str] = []
        for p in self._parents:
            for r in (p, *p.children):
                got = self._stats.get(r.path)
                if got is not None and got[0] == keys.get(r.path):
                    r.stats, r.stats_known = got[1], True
                else:
                    r.stats, r.stats_known = None, False
                    missing.append(r.path)
        return missing

    def _start_worker(self, paths: list[str]) -> threading.Thread:
        with self._worker_lock:
            # one at a time: files missed by a running one are picked up by the next request's
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._compute, args=(paths,), name="serve-stats",
                                                daemon=True)
                self._worker.start()
            return self._worker

    def _compute(self, paths: list[str]) -> None:
        for n, path in enumerate(paths, 1):
            try:
                st = os.stat(path)
            except OSError:
                continue  # gone: the next refresh drops its row
            with self._lock:  # the cache is the listing's too; held per file so requests go on
                stats = self._cache.stats(path, st)
                if n % _STATS_SAVE_EVERY == 0:
                    with contextlib.suppress(TypeError, ValueError):
                        self._cache.save()
            self._stats[path] = ((st.st_size, st.st_mtime_ns, st.st_ino), stats)
        with self._lock, contextlib.suppress(TypeError, ValueError):
            self._cache.save()


def _check(q: Query) -> None:
    if q.sort not in SORTS:
        raise QueryError(f"cannot sort by {q.sort!r} (choose one of {', '.join(SORTS)})")
    # a bad date, an empty window or page: a 400 before any cost is computed
    since, until = _day_ms(q.since, end=False), _day_ms(q.until, end=True)
    if since is not None and until is not None and until <= since:
        raise QueryError(f"until={q.until} is before since={q.since}")
    if q.page < 1:
        raise QueryError(f"page={q.page} (pages count from 1)")
    if q.per_page < 1:
        raise QueryError(f"per_page={q.per_page} (give 1 or more)")


def paged(parents: list[Row], projects: list[tuple[str, int]], q: Query, pending: int = 0) -> Page:
    """The page ``q`` asks for of ``parents`` (every listed parent, in omp's order; ``projects``:
    their projects, counted), filtered, sorted and cut (a store's listing too)."""
    _check(q)
    since, until = _day_ms(q.since, end=False), _day_ms(q.until, end=True)
    model = q.model.strip()
    text = q.text.strip().lower()
    if q.project or text or since is not None or until is not None:
        parents = [p for p in parents if _matches(p, q.project, text, since, until)]
    if model:
        parents = [p for p in parents if p.uses_model(model) or any(c.uses_model(model) for c in p.children)]
    if q.sort != "modified" or q.reverse:
        parents = _sorted(parents, q.sort, q.reverse)
    per = q.per_page
    pages = max(1, -(-len(parents) // per))
    # past the end is an empty page, not the last one again: a client paging until it gets
    # nothing must stop, and see no row twice
    return Page(parents[(q.page - 1) * per: q.page * per], len(parents), q.page, pages, projects, pending)


def _as_info(row: Row) -> listing.SessionInfo:
    return listing.SessionInfo(path=row.path, id=row.id, cwd=row.cwd, title=row.title,
                               parent_session_path=row.parent_session, created=row.created, modified=row.modified,
                               message_count=row.messages, size=row.size, first_message=row.first_message,
                               all_messages_text="", status=row.status)


def _matches(row: Row, project: str, text: str, since: int | None, until: int | None) -> bool:
    if project and row.cwd != project:
        return False
    if since is not None and row.modified < since:
        return False
    if until is not None and row.modified >= until:
        return False
    return not text or text in row.haystack or any(text in c.haystack for c in row.children)


def _sorted(rows: Iterable[Row], sort: str, reverse: bool) -> list[Row]:
    """``list --sort``'s order: largest / newest first, titles A-Z; missing values last."""
    def key(r: Row) -> tuple[bool, Any]:
        value: Any = getattr(r, sort)
        if value is None:
            return (True, "" if sort == "title" else 0)
        if sort == "cost" and not isinstance(value, int | float):
            return (False, 0)  # a JS-string total of a damaged usage sorts as 0, as list --sort cost
        return (False, value.lower() if sort == "title" else value)

    out = sorted(rows, key=key, reverse=sort != "title")
    if reverse:
        out.reverse()
    return out


def now_ms() -> float:
    return time.time() * 1000
