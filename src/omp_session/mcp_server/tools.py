"""The tools of ``omp-session mcp``, as plain functions: arguments in, a JSON-able dict out.

:class:`Library` holds what lasts between calls (the sessions root, the listing cache, the
redactor) and answers each tool from the library: the listing (``catalog``), full-text search
(``ops.search``), a session's context, transcript and tree (``model``), and token reports
(``ops.stats``). Nothing is kept that could go stale: every call looks at the files again (the
caches it uses are keyed by size, mtime and inode), so a session appended between two calls is
seen by the second.

Everything stays inside the sessions root: a ``session`` that is a path must lie under it once
symlinks are resolved, ids and prefixes are looked up only in its buckets, and search hits from
other roots sharing the index are dropped. With ``redact``, every string returned has passed the
``redact`` command's detectors (a text is redacted whole before it is clipped or paged, so a
secret cut in two is still found).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, Final, TypeVar

from omp_session.catalog.listing import SessionInfo, is_quarantine_name, list_sessions, sort_sessions
from omp_session.catalog.resolve import name_matches, pick_one
from omp_session.catalog.summaries import ListCache
from omp_session.errors import AmbiguousSessionError, EntryNotFoundError, SessionError, SessionNotFoundError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.js.codec import UNDEFINED
from omp_session.js.date import to_iso
from omp_session.model.session import Session, open_session
from omp_session.model.tree import branch_tips
from omp_session.paths import project_dir_name

from .args import ToolArgumentError, check_names, choice_arg, int_arg, text_arg, when_arg
from .render import clip, entry_item, iso, message_item, preview

if TYPE_CHECKING:
    from omp_session.ops.redact.detectors import Matcher
    from omp_session.ops.search.query import SearchHit
    from omp_session.ops.stats.report import StatsReport

__all__ = ["MAX_CHARS", "MAX_LIMIT", "VIEWS", "Library", "file_id"]

VIEWS: Final = ("context", "transcript", "branch")
MAX_LIMIT: Final = 200  # items, sessions or hits per call: more is one page after another
MAX_CHARS: Final = 100_000  # characters per item (read_session) or per page (read_entry)
DEFAULT_ITEM_CHARS: Final = 2_000
_SUFFIXES: Final = (".jsonl", ".jsonl.gz")
_LIST_SHOWN: Final = 100  # forks, labels, tips... per session_tree answer
# the times stats reads (Python's datetime: years 1 to 9999); Date.parse and an age reach further
_STATS_FIRST_MS: Final = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
_STATS_LAST_MS: Final = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _under(cwd: str | None, project: str) -> bool:
    """Whether a session's working directory is ``project`` or below it: ``project`` made
    absolute and normal as search's filter takes it (``/a/./b``, ``/a/b/.``: ``/a/b``)."""
    if not isinstance(cwd, str):
        return False
    base = os.path.abspath(project).rstrip("/") or "/"
    return cwd == base or cwd.startswith(base.rstrip("/") + "/")


def file_id(name: str) -> str:
    """The session id in a file name ``<time>_<id>.jsonl``; "" when the name has none."""
    stem = name.removesuffix(".gz").removesuffix(".jsonl")
    return stem.split("_", 1)[1] if "_" in stem else ""


def _strings(value: Any) -> Iterator[str]:
    """Every string in a decoded JSON value, keys included."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(k for k in v if isinstance(k, str))
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _ms_iso(ms: int | float | None) -> str | None:
    return None if ms is None else iso(ms)


_A = TypeVar("_A")
_R = TypeVar("_R")


def _call(method: Callable[[Library, _A], _R]) -> Callable[[Library, _A], _R]:
    """A tool or resource: it starts from what is stored now (:meth:`Library._begin`)."""
    @wraps(method)
    def call(self: Library, arg: _A) -> _R:
        self._begin()
        return method(self, arg)
    return call


class Library:
    """The sessions under ``root``, read for the tools; ``redact`` scrubs every returned string."""

    def __init__(self, root: str | os.PathLike[str], *, redact: bool = False, index_path: str | None = None,
                 cache: bool = True) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.real_root = os.path.realpath(self.root)
        self.index_path = index_path
        self.cache = ListCache(enabled=cache)
        self._scrub: Callable[[str], str] = lambda text: text
        self._matcher: Matcher | None = None
        if redact:
            from omp_session.ops.redact.detectors import Matcher

            matcher = self._matcher = Matcher()
            self._scrub = lambda text: matcher.scrub(text)[0]
        self.redacting = redact
        self._ids: tuple[list[tuple[str, int]], Counter[str]] | None = None

    # ----- the tools ------------------------------------------------------------------------

    @_call
    def list_sessions(self, args: Mapping[str, Any]) -> dict[str, Any]:
        check_names(args, ("project", "since", "query", "limit", "offset"))
        project = text_arg(args, "project")
        since = when_arg(args, "since")
        query = text_arg(args, "query")
        limit = int_arg(args, "limit", 20, 1, MAX_LIMIT)
        offset = int_arg(args, "offset", 0, 0, 10**9)
        words = query.lower().split() if query else []
        rows = []
        for info in self.infos():
            if project is not None and not _under(info.cwd, project):
                continue
            if since is not None and info.modified < since:
                continue
            if words:
                hay = f"{info.title or ''}\n{info.first_message}\n{info.all_messages_text}".lower()
                if not all(w in hay for w in words):
                    continue
            rows.append(info)
        page = rows[offset:offset + limit]
        return self._out({"sessions": [self._row(i) for i in page], "total": len(rows), "offset": offset,
                          "next_offset": offset + limit if offset + limit < len(rows) else None})

    @_call
    def search_sessions(self, args: Mapping[str, Any]) -> dict[str, Any]:
        check_names(args, ("query", "project", "since", "limit"))
        query = text_arg(args, "query", required=True)
        assert query is not None
        project = text_arg(args, "project")
        since = when_arg(args, "since")
        limit = int_arg(args, "limit", 10, 1, MAX_LIMIT)
        notices: list[str] = []
        hits = self._search(query, project, since, limit, notices)
        secrets: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
        out: dict[str, Any] = {"hits": [self._hit(h, secrets) for h in hits[:limit]]}
        if notices:
            out["notices"] = notices
        return self._out(out)

    @_call
    def read_session(self, args: Mapping[str, Any]) -> dict[str, Any]:
        check_names(args, ("session", "leaf", "view", "from", "limit", "max_chars"))
        path = self.locate(text_arg(args, "session", required=True) or "")
        leaf = text_arg(args, "leaf")
        view = choice_arg(args, "view", VIEWS, "context")
        start = int_arg(args, "from", 0, 0, 10**9)
        limit = int_arg(args, "limit", 50, 1, MAX_LIMIT)
        max_chars = int_arg(args, "max_chars", DEFAULT_ITEM_CHARS, 100, MAX_CHARS)
        handle = self.handle(path)
        with self._open(path) as s:
            if leaf is not None:
                if s.index_of(leaf) is None:
                    raise EntryNotFoundError(f"session {handle} has no entry {leaf!r}")
                s.set_leaf(leaf)
            items, total = self._view(s, view, start, limit)
            for item in items:
                where = (f"read_entry(session={handle!r}, entry={item['id']!r})" if "id" in item else
                         f"read_session(session={handle!r}, view={view!r}, from={item['i']}, limit=1, "
                         f"max_chars={MAX_CHARS})")
                clip(item, max_chars, where)
            out = {**self._head(s, handle), "view": view, "leaf": self._id(s.get_leaf_id()), "total": total,
                   "from": start, "next": start + limit if start + limit < total else None, "items": items}
        return self._out(out)

    @_call
    def read_entry(self, args: Mapping[str, Any]) -> dict[str, Any]:
        check_names(args, ("session", "entry", "offset", "max_chars"))
        path = self.locate(text_arg(args, "session", required=True) or "")
        entry_id = text_arg(args, "entry", required=True)
        offset = int_arg(args, "offset", 0, 0, 10**12)
        max_chars = int_arg(args, "max_chars", 20_000, 100, MAX_CHARS)
        handle = self.handle(path)
        with self._open(path) as s:
            k = s.index_of(entry_id)
            if k is None:
                raise EntryNotFoundError(f"session {handle} has no entry {entry_id!r}")
            item = entry_item(s.entry_at(k), self._scrub)
            text = item.pop("text")
            out = {"session": handle, "entry": entry_id, **item, "offset": offset, "total_chars": len(text),
                   "text": text[offset:offset + max_chars],
                   "next_offset": offset + max_chars if offset + max_chars < len(text) else None}
        return self._out(out)

    @_call
    def session_tree(self, args: Mapping[str, Any]) -> dict[str, Any]:
        check_names(args, ("session",))
        path = self.locate(text_arg(args, "session", required=True) or "")
        handle = self.handle(path)
        with self._open(path) as s:
            out = {**self._head(s, handle), **self._tree(s)}
        subagents = self._subagents(path)
        out["subagents"] = [self._row(i) for i in subagents[:_LIST_SHOWN]]
        if len(subagents) > _LIST_SHOWN:  # capped as the other lists are (docs/mcp.md)
            out["subagents_not_shown"] = len(subagents) - _LIST_SHOWN
        return self._out(out)

    @_call
    def session_stats(self, args: Mapping[str, Any]) -> dict[str, Any]:
        check_names(args, ("session", "project", "since"))
        session = text_arg(args, "session")
        project = text_arg(args, "project")
        since = when_arg(args, "since")
        if session is not None and project is not None:
            raise ToolArgumentError("give session or project, not both")
        scope: dict[str, Any]
        paths: list[str] | None
        if session is not None:
            path = self.locate(session)
            paths = [path]
            scope = {"session": self.handle(path)}
        elif project is not None:
            paths = [i.path for i in self.infos() if _under(i.cwd, project)]
            scope = {"project": project}
        else:
            paths, scope = None, {"all": True}
        # a since beyond the years stats reads is the nearest it reads: stats refused it with a
        # line about --since and a time the caller never gave
        report = self._stats(paths, None if since is None else
                             to_iso(min(max(since, _STATS_FIRST_MS), _STATS_LAST_MS)))
        out = {**scope, "since": _ms_iso(since), "sessions": len(report.sessions),
               "billed": report.total.billed.to_dict(), "current_branch": report.total.current.to_dict(),
               "by_model": [{"model": g.key, "billed": g.billed.to_dict(), "current_branch": g.current.to_dict()}
                            for g in report.groups]}
        if report.problems:
            out["problems"] = report.problems
        return self._out(out)

    # ----- resources ------------------------------------------------------------------------

    @_call
    def recent(self, limit: int) -> list[dict[str, Any]]:
        """The newest sessions, for ``resources/list``."""
        return [self._out(self._row(i)) for i in self.infos()[:limit]]

    def session_markdown(self, session: str, max_chars: int = DEFAULT_ITEM_CHARS) -> str:
        """A session's model context as plain text, for ``resources/read``."""
        self._begin()
        # checked as a tool's session is: a URI can hold a NUL (realpath raised) or be any length
        path = self.locate(text_arg({"session": session}, "session", required=True) or "")
        handle = self.handle(path)
        with self._open(path) as s:
            head = self._out(self._head(s, handle))
            items, _total = self._view(s, "context", 0, None)
        lines = [f"# {head['title'] or head['session']}", "",
                 f"session {head['session']} · cwd {head['cwd']} · created {head['created']}", ""]
        for item in items:
            where = f"read_entry(session={handle!r}, entry={item['id']!r})" if "id" in item else "read_session"
            clip(item, max_chars, where)
            item = self._out(item)
            lines.append(f"## {item.get('role') or item.get('type')}" + (f" · {item['time']}" if "time" in item else "")
                         + (f" · entry {item['id']}" if "id" in item else ""))
            lines.append("")
            lines.append(item["text"])
            lines.append("")
        return "\n".join(lines)

    # ----- what a store does its own way (mcp_server/stored.py) ------------------------------

    def _begin(self) -> None:
        """A call starts: forget what was read for the last one (the files keep nothing)."""

    @staticmethod
    def _canon(path: str) -> str:
        """The one name of a session file: symlinks resolved (what ``_inside`` checks)."""
        return os.path.realpath(path)

    def _exists(self, path: str) -> bool:
        return os.path.isfile(path)

    def _bucket_sessions(self, bucket: str) -> list[SessionInfo]:
        """A project folder's sessions as omp lists them, newest first."""
        return list_sessions(bucket, pins=(), recover_backups=False)

    def _search(self, query: str, project: str | None, since: int | None, limit: int,
                notices: list[str]) -> list[SearchHit]:
        """The best hit of each of the ``limit`` best sessions, this root's only."""
        from omp_session.ops.search.query import search

        ask: int | None = limit
        while True:
            result = search(query, index_path=self.index_path, root=self.root, cwd=project, since_ms=since,
                            limit=ask, sessions=True, on_notice=notices.append)
            # the index may also hold sessions of another root: those never leave
            hits = [h for h in result.hits if _inside(os.path.realpath(h.path), self.real_root)]
            if len(hits) >= limit or ask is None or len(result.hits) < ask:
                return hits
            ask = ask * 8 if ask * 8 <= 10 * MAX_LIMIT else None  # None: every match

    def _stats(self, paths: list[str] | None, since: str | None) -> StatsReport:
        """``stats --by model`` of ``paths``, or (None) of every session of the root."""
        from omp_session.ops.stats.report import stats

        # every session: the files stats --all reads, less those linked in from elsewhere (a linked
        # project folder or session file): nothing from outside the root, not even a model's name
        return stats(self._stats_files() if paths is None else paths, root=self.root, by="model", since=since,
                     tz="UTC")

    # ----- finding sessions ------------------------------------------------------------------

    def locate(self, arg: str) -> str:
        """The session file ``arg`` names, inside the root: a path (absolute, or relative to the
        root), ``latest`` (the newest session of the server's working directory), a session id or
        a unique prefix of one (the server's project first, then every project)."""
        if not arg:
            raise ToolArgumentError("session is required")
        if "/" in arg or os.sep in arg or arg.endswith(_SUFFIXES):
            path = self._canon(os.path.join(self.root, arg))
            if not _inside(path, self.real_root):
                raise ToolArgumentError(f"{arg}: outside the sessions root {self.root}; only sessions under it "
                                        "can be read")
            if not path.endswith(_SUFFIXES):  # the root holds other files too (tool outputs, blobs)
                raise ToolArgumentError(f"{arg}: not a session file (*.jsonl)")
            if not self._exists(path):
                raise SessionNotFoundError(f"{arg}: no such session under {self.root}")
            return path
        bucket = os.path.join(self.root, project_dir_name(os.getcwd()))
        if arg == "latest":
            found = [s for s in self._bucket_sessions(bucket) if not s.skipped_by_resume]
            if not found:
                raise SessionNotFoundError(f"no session for the server's project ({os.getcwd()}) under {self.root}")
            return self._checked(found[0].path)
        local = self._bucket_files(bucket)
        everywhere = [f for b in self._buckets() for f in self._bucket_files(b)]
        # a whole id first: a handle this server gave must name its session even when it also
        # starts a longer id, or the id is also in the server's own project under another name
        key = arg.lower()
        exact = [f for f in everywhere if file_id(os.path.basename(f)).lower() == key]
        exact_local = [f for f in local if file_id(os.path.basename(f)).lower() == key]
        chosen = exact if len(exact) == 1 else exact_local if len(exact_local) == 1 else exact
        if not chosen:
            matching = [f for f in local if name_matches(os.path.basename(f), arg)]
            chosen = matching or [f for f in everywhere if name_matches(os.path.basename(f), arg)]
        if len(chosen) > 1:
            names = sorted(os.path.relpath(f, self.root).replace(os.sep, "/") for f in chosen)
            shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            raise AmbiguousSessionError(f"{arg!r} matches {len(names)} sessions; give one of {shown}", chosen)
        return self._checked(pick_one(chosen, arg, f"no session matches {arg!r} under {self.root}"))

    def _checked(self, path: str) -> str:
        real = os.path.realpath(path)
        if not _inside(real, self.real_root):  # a bucket or file symlinked out of the root
            raise ToolArgumentError(f"{path}: outside the sessions root {self.root}")
        return real

    def handle(self, path: str) -> str:
        """What a tool's ``session`` takes back: the id in a top-level session's file name
        (``<time>_<id>.jsonl``), else the path relative to the root (a subagent's session)."""
        rel = os.path.relpath(path, self.real_root)
        parts = rel.split(os.sep)
        name = parts[-1]
        ident = file_id(name)
        # the id only where it names this file alone (a copied session is in two projects)
        if len(parts) == 2 and ident and ident != name and ident.lower() != "latest" \
                and self._id_counts()[ident.lower()] == 1:
            return ident
        return rel.replace(os.sep, "/")

    def _id_counts(self) -> Counter[str]:
        """How many session files of the root have each id (lower case). Counted again only when
        a project folder changed (a file made, removed or renamed in it changes its mtime)."""
        buckets = self._buckets()
        key: list[tuple[str, int]] = []
        for b in buckets:
            try:
                key.append((b, os.stat(b).st_mtime_ns))
            except OSError:
                key.append((b, -1))
        if self._ids is None or self._ids[0] != key:
            self._ids = (key, Counter(file_id(os.path.basename(f)).lower() for b in buckets
                                      for f in self._bucket_files(b)))
        return self._ids[1]

    def _buckets(self) -> list[str]:
        try:
            with os.scandir(self.root) as it:
                return sorted(e.path for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
        except OSError:
            return []

    def _bucket_files(self, bucket: str) -> list[str]:
        try:
            with os.scandir(bucket) as it:
                return sorted(e.path for e in it if e.name.endswith(_SUFFIXES) and not e.name.startswith(".")
                              and not is_quarantine_name(e.name) and e.is_file(follow_symlinks=False))
        except OSError:
            return []

    def infos(self) -> list[SessionInfo]:
        """Every top-level session omp would list, newest first (the listing cache kept up to date)."""
        found = [self.cache.info(f) for b in self._buckets() for f in self._bucket_files(b)]
        self.cache.save()
        return sort_sessions(i for i in found if i is not None)

    def _stats_files(self) -> list[str]:
        """Every project's ``*.jsonl`` files as ``stats --all`` takes them, symlinks left out."""
        out = []
        for b in self._buckets():
            try:
                with os.scandir(b) as it:
                    out.extend(sorted(e.path for e in it if e.name.endswith(".jsonl") and not e.name.startswith(".")
                                      and e.is_file(follow_symlinks=False)))
            except OSError:
                continue
        return out

    def _subagents(self, path: str) -> list[SessionInfo]:
        """Subagent sessions, ``<session>/<agent>.jsonl`` (S9.5), advisors left out as ``list`` does."""
        folder = path.removesuffix(".jsonl")
        if folder == path or os.path.islink(folder):
            return []
        try:
            with os.scandir(folder) as it:
                files = sorted(e.path for e in it if e.name.endswith(".jsonl") and not e.name.startswith(("__advisor", "."))
                               and e.is_file(follow_symlinks=False))
        except OSError:
            return []
        found = [self.cache.info(f) for f in files]
        self.cache.save()
        return [i for i in found if i is not None]

    # ----- building answers -------------------------------------------------------------------

    @contextmanager
    def _open(self, path: str) -> Iterator[Session]:
        try:
            # no blob store: the blobs live beside the sessions root, not in it, and what they
            # hold (images) is shown only as a mention anyway
            s = open_session(path, blob_store=MemoryBlobStore())
        except FileNotFoundError:
            raise SessionNotFoundError(f"{self.handle(path)}: the session is gone") from None
        with s:
            yield s

    def _row(self, info: SessionInfo) -> dict[str, Any]:
        first = " ".join(info.first_message.split())
        return {"session": self.handle(self._canon(info.path)), "title": info.title, "cwd": info.cwd,
                "created": _ms_iso(info.created), "modified": _ms_iso(info.modified),
                "messages": info.message_count, "status": info.status,
                "first_message": first if len(first) <= 300 else first[:299] + "…", "path": info.path}

    def _hit(self, h: SearchHit, secrets: dict[tuple[str, str | None], list[tuple[str, str]]]) -> dict[str, Any]:
        snippet = h.snippet_text()
        if self._matcher is not None:
            from omp_session.ops.search.index import HIGHLIGHT

            from .snippets import redact_snippet

            key = (h.path, h.entry_id)
            if key not in secrets:
                secrets[key] = self._secrets_of(h.path, h.entry_id, self._matcher)
            snippet = redact_snippet(h.snippet, HIGHLIGHT, self._matcher, secrets[key])
        return {"session": self.handle(self._canon(h.path)), "title": h.title, "cwd": h.cwd,
                "entry": h.entry_id, "role": h.role or h.entry_type, "kind": h.kind, "time": h.timestamp,
                "snippet": snippet}

    def _secrets_of(self, path: str, entry_id: str | None, matcher: Matcher) -> list[tuple[str, str]]:
        """The secrets in the entry a search hit was cut from (None: the header and title), as
        (text, category), whitespace runs single spaces and escape sequences gone, as in a snippet."""
        try:
            with self._open(path) as s:
                k = None if entry_id is None else s.index_of(entry_id)
                source = [s.header, s.get_session_name()] if k is None else [s.entry_at(k)]
        except (SessionError, OSError):
            return []
        from omp_session.ops.search.snippet import strip_ansi

        found: dict[str, str] = {}
        for raw in _strings(source):
            text = strip_ansi(raw)  # as the snippet was cut: without its colour codes
            for hit in matcher.hits(text):
                found.setdefault(" ".join(text[hit.start:hit.end].split()), hit.category)
        return sorted(found.items(), key=lambda kv: -len(kv[0]))

    def _head(self, s: Session, handle: str) -> dict[str, Any]:
        header = s.header or {}
        return {"session": handle, "id": header.get("id"), "title": s.get_session_name(), "cwd": header.get("cwd"),
                "created": iso(header.get("timestamp"))}

    @staticmethod
    def _id(value: Any) -> Any:
        # an entry without an id has none to give (str() of the codec's UNDEFINED is "UNDEFINED")
        if value is None or value is UNDEFINED:
            return None
        return value if isinstance(value, str) else str(value)

    def _view(self, s: Session, view: str, start: int, limit: int | None) -> tuple[list[dict[str, Any]], int]:
        """Items ``start``..``start+limit`` of the view (not clipped yet), and the view's length."""
        branch = s.branch_indices()
        if view == "branch":
            total = len(branch)
            chosen = list(branch)[start:None if limit is None else start + limit]
            items = [{"i": start + n, "id": self._id(s.ids[k]), **entry_item(s.entry_at(k), self._scrub)}
                     for n, k in enumerate(chosen)]
            return items, total
        messages = s.build_session_context(transcript=view == "transcript")["messages"]
        # omp's context holds the stored message objects themselves: their identity finds the entry
        owner = {id(m): s.ids[k] for k in branch for e in (s.entry_at(k),) if isinstance(e, dict)
                 for m in (e.get("message"),) if isinstance(m, dict)}
        chosen_messages = messages[start:None if limit is None else start + limit]
        items = []
        for n, m in enumerate(chosen_messages):
            item: dict[str, Any] = {"i": start + n}
            entry_id = owner.get(id(m))
            if entry_id is not None:
                item["id"] = self._id(entry_id)
            item.update(message_item(m, self._scrub))
            items.append(item)
        return items, len(messages)

    def _tree(self, s: Session) -> dict[str, Any]:
        on_branch = set(s.branch_indices())
        children = Counter(p for p in s.parent_index if p >= 0)
        forks = [k for k in range(len(s)) if children[k] > 1]
        tips = branch_tips(s)
        labels = s.labels()
        compactions = [k for k in range(len(s)) if s.types[k] == "compaction"]
        summaries = [k for k in range(len(s)) if s.types[k] == "branch_summary"]

        def capped(name: str, ks: list[Any], row: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = {name: [row(k) for k in ks[:_LIST_SHOWN]]}
            if len(ks) > _LIST_SHOWN:
                out[f"{name}_not_shown"] = len(ks) - _LIST_SHOWN
            return out

        def summary_row(k: int) -> dict[str, Any]:
            e = s.entry_at(k)
            e = e if isinstance(e, dict) else {}
            row = {"id": self._id(s.ids[k]), "time": iso(e.get("timestamp")), "on_branch": k in on_branch,
                   "summary": preview(e, 200)}
            if isinstance(e.get("tokensBefore"), int | float):
                row["tokens_before"] = e["tokensBefore"]
            return row

        return {
            "entries": len(s), "leaf": self._id(s.get_leaf_id()), "branch_length": len(on_branch),
            "parent_session": (s.header or {}).get("parentSession"),
            **capped("tips", tips, lambda k: {"id": self._id(s.ids[k]), "on_branch": k in on_branch,
                                              "last": preview(s.entry_at(k))}),
            **capped("forks", forks, lambda k: {"id": self._id(s.ids[k]), "branches": children[k],
                                                "on_branch": k in on_branch, "at": preview(s.entry_at(k))}),
            **capped("labels", list(labels.items()), lambda kv: {"id": self._id(kv[0]), "label": kv[1]}),
            **capped("compactions", compactions, summary_row),
            **capped("branch_summaries", summaries, summary_row),
        }

    def _out(self, answer: dict[str, Any]) -> dict[str, Any]:
        """``answer`` with every string redacted (with ``redact``), keys included."""
        return {self._walk(k): self._walk(v) for k, v in answer.items()} if self.redacting else answer

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, dict):
            return {self._walk(k): self._walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        return value
