"""SessionManager: omp's manager in Pythonic form — create, open, append, branch, fork, title.

It writes what the omp it imitates writes (``omp=``: 18.3.4 by default, or 18.2.3 / 18.2.9; they
differ only where S20 says), byte for byte (spec S3, S8, S10): the same entries in the same
key order, the same lazy creation of a new session's file, the same choice between appending one
line and rewriting the whole file, the same atomic replace, title slot and persistence transform.

Where omp loses data silently we do not (docs/compatibility.md, "Writing"):

* a failed write raises from the call that made it (omp only latches it) and every later call
  retries through a full, size-checked rewrite, raising again while it fails; ``flush`` and
  ``close`` raise it too, so a failure is never silent;
* the expected size of the file is its real byte size, so a BOM or invalid UTF-8 never blocks a
  rewrite;
* an append first completes a last line that lacks its LF;
* a title slot is written in place only when it is exactly 256 bytes;
* unparsable records read from the file are written back verbatim by a rewrite, never dropped.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping, Sequence
from typing import Any

from omp_session.errors import EditError, EntryNotFoundError, FormatError, PersistenceError, SessionError
from omp_session.format.blobs import BlobStore
from omp_session.format.reader import MalformedSpan, scan_bytes
from omp_session.format.title import TITLE_SLOT_BYTES, build_title_slot
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.omp_version import has_s20
from omp_session.model.omp_version import resolve as resolve_omp
from omp_session.model.session import Session
from omp_session.model.tree import Tree
from omp_session.paths import blobs_dir, default_session_dir, session_dir_override
from omp_session.store.base import FileStorage, MemoryStorage, SessionStorage

from .entries import (
    clean_title,
    custom_message_entry,
    file_safe_timestamp,
    generate_id,
    record,
    timestamp_from_ms,
)
from .ids import iso_timestamp, new_session_id, new_session_timestamp
from .persist import persist_transform

__all__ = ["SessionManager"]

_CURRENT_VERSION = 3


def _is_assistant(entry: Any) -> bool:
    if not isinstance(entry, dict) or entry.get("type") != "message":
        return False
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


class SessionManager:
    """One session, in memory and (unless in memory only) in its file.

    Build it with :meth:`create`, :meth:`open`, :meth:`continue_recent`, :meth:`in_memory` or
    :meth:`fork_from`. Read methods mirror omp's in snake_case; every ``append_*`` returns the
    new entry's id.
    """

    def __init__(self, cwd: str, session_dir: str, *, persist: bool, storage: SessionStorage,
                 blob_store: Any, omp: str | None = None) -> None:
        # the omp release we imitate (docs/compatibility.md, "Support matrix"); resolved first so
        # a bad value fails before anything is touched
        self.omp = resolve_omp(omp)
        self._s20 = has_s20(self.omp)
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._storage = storage
        self.blob_store = blob_store
        self.session: Session = Session.new({"type": "session"}, omp=self.omp)
        self._session_file: str | None = None
        self._session_name: str | None = None
        self._title_source: str | None = None
        self._title_updated_at = ""
        self._has_title_slot = True
        self._has_assistant = False
        self._file_is_current = False
        self._rewrite_required = False
        self._expected_size: int | None = None
        self._force_file_creation = False
        self._failure: BaseException | None = None
        # the header's cwd could not be entered: new files go to the bucket of the cwd we use
        self._fallback_dir = False
        # workspace directories beyond cwd (multi-root): carried into forks and branched sessions
        self._additional_dirs: builtins.list[Any] = []

    # ----- constructors (S10.1) ------------------------------------------------------------------

    @classmethod
    def create(cls, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
               storage: SessionStorage | str | None = None, blob_store: Any = None,
               omp: str | None = None) -> SessionManager:
        """A new session for ``cwd``; its file is written once it has an assistant message (S8.1).
        ``omp`` (here and in every constructor): the omp release to imitate, "18.2.3", "18.3", ...;
        default ``$OMP_SESSION_OMP`` or the newest we implement."""
        omp = resolve_omp(omp)
        cwd = _check_cwd(cwd)
        directory = _session_dir_for(cwd, session_dir)
        store = _storage_of(storage)
        if isinstance(store, FileStorage):
            _check_writable_dir(directory)
        manager = cls(cwd, directory, persist=True, storage=store, blob_store=_blobs(blob_store), omp=omp)
        manager._reset_to_new_session()
        return manager

    @classmethod
    def in_memory(cls, cwd: str | os.PathLike[str] | None = None, *, blob_store: Any = None,
                  omp: str | None = None) -> SessionManager:
        """A session that is never written anywhere."""
        manager = cls(os.fspath(cwd) if cwd is not None else os.getcwd(), "", persist=False,
                      storage=MemoryStorage(), blob_store=_blobs(blob_store), omp=omp)
        manager._reset_to_new_session()
        return manager

    @classmethod
    def open(cls, path: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
             initial_cwd: str | None = None, parent_session: str | None = None, throw_if_missing: bool = False,
             storage: SessionStorage | str | None = None, blob_store: Any = None,
             omp: str | None = None) -> SessionManager:
        """Open a session file to continue it.

        A missing or empty file starts a new session at that path and writes its title slot and
        header at once (S1.4.5). A file without a valid header raises :class:`FormatError` and is
        left untouched. The header's cwd is adopted when it is a directory we can enter; else
        ``initial_cwd`` (default: the process cwd) is used.
        """
        omp = resolve_omp(omp)
        path = os.path.abspath(os.fspath(path))
        store = _storage_of(storage)
        blobs = _blobs(blob_store)
        session = _load(store, path, blobs, omp)
        header = session.header if session is not None else None
        recorded = header.get("cwd") if header is not None else None
        usable = isinstance(recorded, str) and bool(recorded) and _enterable(recorded)
        cwd = recorded if usable and isinstance(recorded, str) else (initial_cwd or os.getcwd())
        if session_dir is not None:
            directory = os.fspath(session_dir)
        elif isinstance(recorded, str) and recorded and not usable and isinstance(store, FileStorage):
            directory = default_session_dir(cwd)
        else:
            directory = os.path.dirname(path)
        manager = cls(cwd, directory, persist=True, storage=store, blob_store=blobs, omp=omp)
        manager._set_session_file(path, session, throw_if_missing=throw_if_missing, parent_session=parent_session)
        return manager

    @classmethod
    def continue_recent(cls, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
                        storage: SessionStorage | str | None = None, blob_store: Any = None,
                        omp: str | None = None) -> SessionManager:
        """Continue the most recently modified session of ``cwd``'s bucket, else start a new one.

        omp first consults the terminal breadcrumb of the calling terminal; a library has no
        terminal, so only the bucket is searched (docs/compatibility.md).
        """
        from omp_session.catalog.listing import find_most_recent_session

        omp = resolve_omp(omp)
        cwd = _check_cwd(cwd)
        directory = _session_dir_for(cwd, session_dir)
        store = _storage_of(storage)
        if isinstance(store, FileStorage):
            recent = find_most_recent_session(directory, omp=omp)
        else:  # a database or Redis store: its newest session of the bucket
            stats = [store.stat(p) for p in store.list(directory, "*.jsonl")]
            newest = max((st for st in stats if st is not None), key=lambda st: st.mtime_ms, default=None)
            recent = newest.path if newest is not None else None
        if recent is not None:
            manager = cls(cwd, directory, persist=True, storage=store, blob_store=_blobs(blob_store), omp=omp)
            manager._set_session_file(os.path.abspath(recent),
                                      _load(store, os.path.abspath(recent), manager.blob_store, omp))
            return manager
        return cls.create(cwd, directory, storage=store, blob_store=blob_store, omp=omp)

    @classmethod
    def fork_from(cls, source: str | os.PathLike[str], cwd: str | os.PathLike[str],
                  session_dir: str | os.PathLike[str] | None = None, *, session_file: str | None = None,
                  reset_inherited_cost: bool = False, storage: SessionStorage | str | None = None,
                  blob_store: Any = None, omp: str | None = None) -> SessionManager:
        """A new session in ``cwd``'s bucket holding every entry of ``source`` (S2.3)."""
        omp = resolve_omp(omp)
        cwd = _check_cwd(cwd)
        directory = _session_dir_for(cwd, session_dir)
        store = _storage_of(storage)
        manager = cls(cwd, directory, persist=True, storage=store, blob_store=_blobs(blob_store), omp=omp)
        src = os.path.abspath(os.fspath(source))
        if store.size(src) is None:
            raise SessionError(f"Fork source not found: {src}")
        loaded = _load(store, src, manager.blob_store, omp)
        source_header = loaded.header if loaded is not None else None
        history = [e for e in (loaded.entries if loaded is not None else ())
                   if not (isinstance(e, dict) and e.get("type") == "session")]
        history = codec.loads(codec.dumps_line(history))  # structuredClone: the fork owns its entries
        if reset_inherited_cost:
            from omp_session.model.usage import reset_usage_cost

            for entry in history:
                reset_usage_cost(entry)
        sh = source_header or {}
        manager._reset_to_new_session(
            parent_session=sh.get("id", UNDEFINED),
            provider_prompt_cache_key=_coalesce(sh.get("providerPromptCacheKey", UNDEFINED), sh.get("id")),
            forced_file=session_file)
        header = manager.session.header
        assert header is not None
        header["title"] = sh.get("title", UNDEFINED)
        header["titleSource"] = sh.get("titleSource", UNDEFINED)
        inherited = sh.get("additionalDirectories")
        resolved_cwd = os.path.abspath(cwd)
        manager._additional_dirs = [d for d in inherited if d != resolved_cwd] if isinstance(inherited, list) else []
        header["additionalDirectories"] = list(manager._additional_dirs) if manager._additional_dirs else UNDEFINED
        manager._session_name = _or_none(header.get("title"))
        manager._title_source = _or_none(header.get("titleSource"))
        manager._title_updated_at = iso_timestamp()
        manager._replace_entries(header, history)
        manager._force_file_creation = True
        manager._rewrite()
        return manager

    @staticmethod
    def get_default_session_dir(cwd: str | os.PathLike[str], agent_dir: str | None = None) -> str:
        """The bucket of ``cwd`` under the sessions root (S9.2); created if missing."""
        return default_session_dir(os.fspath(cwd), agent_dir=agent_dir)

    @staticmethod
    def list(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None, *,
             omp: str | None = None) -> builtins.list[Any]:
        """``SessionInfo`` of every session in ``cwd``'s bucket, pinned first, newest first (S11)."""
        from omp_session.catalog.listing import list_sessions

        omp = resolve_omp(omp)
        directory = os.fspath(session_dir) if session_dir is not None else default_session_dir(os.fspath(cwd))
        return builtins.list(list_sessions(directory, omp=omp))

    @staticmethod
    def list_all(*, omp: str | None = None) -> builtins.list[Any]:
        """``SessionInfo`` of every session in every bucket (S11.4)."""
        from omp_session.catalog.listing import list_all_sessions
        from omp_session.paths import sessions_dir

        return builtins.list(list_all_sessions(str(sessions_dir()), omp=resolve_omp(omp)))

    # ----- session state --------------------------------------------------------------------------

    def _reconcile_session_dir(self) -> None:
        """A session resumed away from its recorded cwd writes its new files into the bucket of
        the cwd actually used (omp's ``reconcileSessionDirForFallback``)."""
        if self._fallback_dir:
            self._session_dir = default_session_dir(self._cwd)
            self._fallback_dir = False

    def _reset_to_new_session(self, *, parent_session: Any = UNDEFINED, provider_prompt_cache_key: Any = UNDEFINED,
                              forced_file: str | None = None,
                              additional_directories: Sequence[str] = ()) -> str | None:
        self._failure = None
        self._reconcile_session_dir()
        self._expected_size = None
        # one clock reading for the time and the id, as omp takes them
        timestamp = new_session_timestamp()
        session_id = new_session_id(_iso_ms(timestamp))
        self._session_name = None
        self._title_source = None
        self._has_title_slot = True
        header = {"type": "session", "version": _CURRENT_VERSION, "id": session_id, "timestamp": timestamp,
                  "cwd": self._cwd, "parentSession": parent_session, "providerPromptCacheKey": provider_prompt_cache_key}
        self._additional_dirs = _workspace_dirs(self._cwd, additional_directories)
        if self._additional_dirs:
            header["additionalDirectories"] = list(self._additional_dirs)
        self._title_updated_at = timestamp
        self._replace_entries(header, [])
        self._file_is_current = False
        self._rewrite_required = False
        self._force_file_creation = False
        if self._persist:
            self._session_file = forced_file or os.path.join(
                self._session_dir, f"{file_safe_timestamp(timestamp)}_{session_id}.jsonl")
        else:
            self._session_file = None
        return self._session_file

    def _replace_entries(self, header: dict[str, Any], entries: Sequence[Any]) -> None:
        """A fresh in-memory session holding ``header`` and ``entries`` (no file behind it)."""
        self.session.close()
        session = Session.new(header, blob_store=self.blob_store, path=self._session_file, omp=self.omp)
        for entry in entries:
            session.append_entry(entry)
        self.session = session
        self._has_assistant = any(_is_assistant(e) for e in entries)

    def _set_session_file(self, path: str, session: Session | None, *, throw_if_missing: bool = False,
                          parent_session: str | None = None) -> None:
        if session is not None and session.header is None and (len(session.journal) or session.journal.malformed):
            session.close()
            raise FormatError(f'Cannot resume session "{path}": the session header is missing or malformed. '
                              "The file was not modified.", path=path)
        if session is None or session.header is None:
            if throw_if_missing:
                raise FormatError(f'Cannot resume session "{path}": the session file holds no entries. '
                                  "The file was not modified.", path=path)
            size = self._storage.size(path)
            self._reset_to_new_session(forced_file=path,
                                       parent_session=parent_session if parent_session is not None else UNDEFINED)
            self._expected_size = size
            self._force_file_creation = True
            self._rewrite()
            self._file_is_current = True
            return
        self._session_file = path
        self.session.close()
        self.session = session
        header = session.header
        assert header is not None
        recorded = header.get("cwd")
        if isinstance(recorded, str) and recorded and os.path.abspath(recorded) != os.path.abspath(self._cwd):
            if _enterable(recorded):
                self._cwd = os.path.abspath(recorded)
                self._session_dir = os.path.dirname(path)
            else:
                self._fallback_dir = True
        self._session_name = header.get("title") if isinstance(header.get("title"), str) else None
        self._title_source = header.get("titleSource") if isinstance(header.get("titleSource"), str) else None
        extra = header.get("additionalDirectories")
        self._additional_dirs = list(extra) if isinstance(extra, list) else []
        slot = session.title_slot
        self._title_updated_at = slot.updated_at if slot is not None else _str_or(header.get("timestamp"), "")
        j = session.journal
        self._has_title_slot = slot is not None and not j.bom and j.body_start == TITLE_SLOT_BYTES
        self._expected_size = j.size
        self._file_is_current = True
        self._rewrite_required = session.migrated or session.sanitized
        self._force_file_creation = True
        self._has_assistant = True  # a loaded file is always kept on disk: the lazy gate is open

    # ----- persistence (S8) -----------------------------------------------------------------------

    def _should_have_file(self) -> bool:
        return self._force_file_creation or self._file_is_current or self._has_assistant

    def _line(self, value: Any) -> bytes:
        return codec.dumps_line(persist_transform(value, self.blob_store, s20=self._s20))

    def _title_slot(self) -> bytes:
        header = self.session.header or {}
        updated = self._title_updated_at or _str_or(header.get("timestamp"), "")
        return build_title_slot(self._session_name or "",
                                self._title_source if self._title_source in ("user", "auto") else None, updated)

    def file_body(self) -> bytes:
        """What a whole-file rewrite writes now: slot, header, every entry (S8.4.1), and every
        unparsable record read from the file, verbatim and in place."""
        s = self.session
        parts = [self._title_slot(), self._line(s.header)]
        j = s.journal
        prev_end = j.end(0)  # where the last record written so far ended in the file
        malformed = sorted(j.malformed, key=lambda m: m.start)

        def keep(span: MalformedSpan) -> None:
            raw = j.read(span.start, span.end)
            gap = j.read(prev_end, span.start) if prev_end <= span.start else b"\n"
            if b"\n" not in gap and parts[-1].endswith(b"\n"):
                # garbage after a record on its line ({a} {b}): it stays on that line, where omp
                # keeps the record and skips the rest; on a line of its own it would be read
                parts[-1] = parts[-1][:-1] + gap
            parts.append(_verbatim(raw))

        m = 0
        for k in range(len(s)):
            start = j.start(k + 1)
            while m < len(malformed) and malformed[m].start < start:
                keep(malformed[m])
                prev_end = malformed[m].end
                m += 1
            parts.append(self._line(s.entry_at(k)))
            prev_end = j.end(k + 1)
        for span in malformed[m:]:
            keep(span)
            prev_end = span.end
        return b"".join(parts)

    def _rewrite(self, *, lazy: bool = False) -> None:
        """Replace the whole file if its size is still what we last saw (S8.4).

        ``lazy``: only when the file should exist yet (the synchronous rewrite of an append).
        A failure is latched and raised.
        """
        if not self._persist or self._session_file is None:
            return
        if lazy and not self._should_have_file():
            return
        try:
            body = self.file_body()  # may store blobs: a full blob disk fails the write too
            self._storage.replace(self._session_file, body, self._expected_size)
        except SessionError as e:
            self._latch(e)
            raise
        except OSError as e:
            error = PersistenceError(self._session_file, "writing the session file", e)
            self._latch(error)
            raise error from e
        self._failure = None
        self._expected_size = len(body)
        self._file_is_current = True
        self._rewrite_required = False
        self._has_title_slot = True

    def _latch(self, error: BaseException) -> None:
        self._failure = error
        self._file_is_current = False
        self._rewrite_required = True

    def _persist_entry(self, entry: Any) -> None:
        if not self._persist or self._session_file is None:
            return
        if self._failure is not None:
            self._file_is_current = False
            self._rewrite_required = True
        if not self._should_have_file():
            self._file_is_current = False
            return
        if not self._file_is_current or self._rewrite_required:
            self._rewrite(lazy=True)
            return
        try:
            line = self._line(entry)
        except SessionError as e:
            self._latch(e)
            raise
        except OSError as e:  # the blob store failed: the entry must not be skipped on disk
            error = PersistenceError(self._session_file, "storing an image in the blob store", e)
            self._latch(error)
            raise error from e
        try:
            added = self._storage.append(self._session_file, line)
        except FileNotFoundError:
            # the file was deleted under us: write it again, whole, rather than a headerless line
            self._expected_size = None
            self._rewrite()
            return
        except SessionError as e:
            self._latch(e)
            raise
        self._expected_size = (self._expected_size or 0) + added

    def _record(self, entry: dict[str, Any]) -> str:
        self.session.append_entry(entry, new_id=True)  # every id _record sees came from generate_id
        if _is_assistant(entry):
            self._has_assistant = True
        self._persist_entry(entry)
        return str(entry["id"])

    def _fresh(self) -> tuple[str, Any, str]:
        """(id, parentId, timestamp) of the next entry: a new id, the leaf, now."""
        return generate_id(self.session), self.session.raw_leaf, iso_timestamp()

    def _has(self, entry_id: Any) -> bool:
        return self.session.index_of(entry_id) is not None

    def _require(self, entry_id: Any) -> None:
        if not self._has(entry_id):
            raise EntryNotFoundError(f"Entry {entry_id} not found")

    # ----- appending (S3, S10.2) ------------------------------------------------------------------

    def _append(self, kind: str, *fields: tuple[str, Any]) -> str:
        entry_id, parent, timestamp = self._fresh()
        return self._record(record(("type", kind), ("id", entry_id), ("parentId", parent),
                                   ("timestamp", timestamp), *fields))

    def append_message(self, message: Mapping[str, Any]) -> str:
        return self._append("message", ("message", message))

    def append_message_to_branch(self, message: Mapping[str, Any], parent_id: str | None) -> str:
        """Append under ``parent_id`` (None: a new root) without moving the leaf."""
        if parent_id is not None:
            self._require(parent_id)
        leaf = self.session.raw_leaf
        entry = record(("type", "message"), ("id", generate_id(self.session)), ("parentId", parent_id),
                       ("timestamp", iso_timestamp()), ("message", message))
        try:
            return self._record(entry)
        finally:
            self.session.set_leaf(leaf)

    def append_model_usage(self, usage: Mapping[str, Any], *, session_id: str, parent_id: str | None) -> str | None:
        """Usage of a side model call, on its initiating branch; None when ``session_id`` is not
        this session or ``parent_id`` is unknown. The leaf does not move."""
        if session_id != self.get_session_id() or (parent_id is not None and not self._has(parent_id)):
            return None
        leaf = self.session.raw_leaf
        entry = record(("type", "model_usage"), ("id", generate_id(self.session)), ("parentId", parent_id),
                       ("timestamp", iso_timestamp()), *usage.items())
        try:
            return self._record(entry)
        finally:
            if leaf != parent_id:
                self.session.set_leaf(leaf)

    def append_thinking_level_change(self, thinking_level: str | None = None, configured: str | None = None) -> str:
        return self._append("thinking_level_change", ("thinkingLevel", thinking_level), ("configured", configured))

    def append_service_tier_change(self, service_tier: Mapping[str, Any] | None) -> str:
        return self._append("service_tier_change", ("serviceTier", service_tier))

    def append_mode_change(self, mode: str, data: Any = UNDEFINED) -> str:
        return self._append("mode_change", ("mode", mode), ("data", data))

    def append_model_change(self, model: str, role: Any = UNDEFINED, resolved_model_is_fallback: bool = False) -> str:
        """``model`` is ``"provider/modelId"``."""
        return self._append("model_change", ("model", model), ("role", role),
                            ("resolvedModelIsFallback", resolved_model_is_fallback))

    def append_session_init(self, init: Mapping[str, Any]) -> str:
        """A subagent's bootstrap record: ``init``'s keys follow the envelope, in their order."""
        return self._append("session_init", *(init.items() if isinstance(init, Mapping) else ()))

    def append_compaction(self, summary: str, short_summary: Any, first_kept_entry_id: str, tokens_before: float,
                          *, details: Any = UNDEFINED, from_extension: Any = UNDEFINED,
                          preserve_data: Any = UNDEFINED, method: Any = UNDEFINED,
                          provider_replay_through_entry_id: Any = UNDEFINED, tokens_after: Any = UNDEFINED) -> str:
        """A compaction: ``summary`` replaces the path before ``first_kept_entry_id`` in the
        context (S3.5). Pass ``UNDEFINED`` as ``short_summary`` to leave the key out."""
        return self._append(
            "compaction", ("summary", summary), ("shortSummary", short_summary),
            ("firstKeptEntryId", first_kept_entry_id), ("tokensBefore", tokens_before), ("tokensAfter", tokens_after),
            ("method", method), ("providerReplayThroughEntryId", provider_replay_through_entry_id),
            ("details", details), ("fromExtension", from_extension), ("preserveData", preserve_data))

    def append_reset_boundary(self) -> str:
        return self._append("reset_boundary")

    def append_custom_entry(self, custom_type: str, data: Any = UNDEFINED) -> str:
        entry_id, parent, timestamp = self._fresh()
        return self._record(record(("type", "custom"), ("customType", custom_type), ("data", data),
                                   ("id", entry_id), ("parentId", parent), ("timestamp", timestamp)))

    def append_custom_message_entry(self, custom_type: Any, content: Any, display: Any, details: Any = UNDEFINED,
                                    attribution: Any = "agent", timestamp: Any = UNDEFINED) -> str:
        """A message an extension injects into the context; ``timestamp`` in ms (default: now)."""
        entry_id, parent, now = self._fresh()
        when = now if timestamp is UNDEFINED else timestamp_from_ms(0 if timestamp is None else timestamp)
        return self._record(custom_message_entry(custom_type, content, display, details,
                                                 "agent" if attribution is UNDEFINED else attribution,
                                                 (entry_id, parent, when)))

    def append_label_change(self, target_id: str, label: Any = UNDEFINED) -> str:
        """Set (or with no label, ``""`` or None, clear) the label of an existing entry."""
        self._require(target_id)
        return self._append("label", ("targetId", target_id), ("label", label))

    def append_ttsr_injection(self, rule_names: Sequence[str]) -> str:
        return self._append("ttsr_injection", ("injectedRules", list(rule_names)))

    def append_credential_pin(self, provider: str, hash: str) -> str:
        return self._append("credential_pin", ("provider", provider), ("hash", hash))

    def ingest_replicated_entry(self, entry: dict[str, Any]) -> None:
        """Append an entry written elsewhere verbatim, keeping its id and parentId."""
        self.session.append_entry(entry)
        if _is_assistant(entry):
            self._has_assistant = True
        self._persist_entry(entry)

    # ----- navigation ---------------------------------------------------------------------------

    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry: the next append starts a new branch there."""
        self._require(entry_id)
        self.session.set_leaf(entry_id)

    def reset_leaf(self) -> None:
        """The next append becomes a new root."""
        self.session.set_leaf(None)

    def branch_with_summary(self, entry_id: str | None, summary: str, details: Any = UNDEFINED,
                            from_extension: Any = UNDEFINED) -> str:
        """Branch at ``entry_id`` (None: before the first entry) and record a summary of what was
        left behind."""
        if entry_id is not None:
            self._require(entry_id)
        self.session.set_leaf(entry_id)
        return self._record(record(
            ("type", "branch_summary"), ("id", generate_id(self.session)), ("parentId", entry_id),
            ("timestamp", iso_timestamp()), ("fromId", "root" if entry_id is None else entry_id),
            ("summary", summary), ("details", details), ("fromExtension", from_extension)))

    # ----- title (S8.9) ---------------------------------------------------------------------------

    def set_session_name(self, name: str, source: str = "auto", trigger: str | None = None) -> bool:
        """Rename the session; False when the cleaned name is empty, or when an ``"auto"`` name
        would replace one the user chose."""
        if not isinstance(name, str):
            raise EditError(f"a session name must be a string, not {type(name).__name__}")
        if self._title_source == "user" and source == "auto":
            return False
        title = clean_title(name)
        if not title:
            return False
        previous = self._session_name
        timestamp = iso_timestamp()
        self._session_name = title
        self._title_source = source
        self._title_updated_at = timestamp
        header = self.session.header
        assert header is not None
        header["title"] = title
        header["titleSource"] = source
        entry_id, parent, _ = self._fresh()
        entry = record(("type", "title_change"), ("id", entry_id), ("parentId", parent), ("timestamp", timestamp),
                       ("title", title), ("source", source), ("previousTitle", previous or UNDEFINED),
                       ("trigger", trigger or UNDEFINED))
        self.session.append_entry(entry, new_id=True)
        self._persist_title_change(entry)
        return True

    def _persist_title_change(self, entry: dict[str, Any]) -> None:
        path = self._session_file
        if not self._persist or path is None:
            return
        if self._failure is not None:
            self._file_is_current = False
            self._rewrite_required = True
            self._rewrite(lazy=True)
            return
        if not self._should_have_file():
            self._file_is_current = False
            return
        if self._storage.size(path) is None:
            self._expected_size = None  # deleted under us: written again, whole, as an append does
            self._rewrite()
            return
        if not self._file_is_current or self._rewrite_required or not self._has_title_slot:
            self._rewrite()
            return
        try:
            self._expected_size = (self._expected_size or 0) + self._storage.append(path, self._line(entry))
            written = self._storage.write_title_slot(path, self._title_slot())
        except FileNotFoundError:
            self._expected_size = None  # deleted under us: written again, whole, below
            written = False
        except SessionError:
            written = False
        if not written:  # omp falls back to a whole-file rewrite too
            self._rewrite()

    # ----- whole-session operations ---------------------------------------------------------------

    def ensure_on_disk(self) -> None:
        """Write the file now, even before the first assistant message."""
        if not self._persist or self._session_file is None:
            return
        self._force_file_creation = True
        if self._file_is_current and not self._rewrite_required:
            return
        self._rewrite()

    def rewrite_entries(self) -> None:
        """Rewrite the whole file from memory (after editing entries in place)."""
        self._rewrite()

    def new_session(self, *, parent_session: str | None = None, provider_prompt_cache_key: str | None = None,
                    additional_directories: Sequence[str] = (),
                    session_dir: str | os.PathLike[str] | None = None) -> str | None:
        """Start a new, empty session (new id and file) and write its header at once.

        ``session_dir`` (omp 18.3, S20.2.5): put the new file, and later ones, in that directory
        (created if missing). omp 18.2 has no such option: there it is ignored, as omp ignores it.
        """
        if session_dir is not None and self._s20 and self._persist:
            directory = os.path.abspath(os.fspath(session_dir))
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as e:
                raise PersistenceError(directory, "creating the session directory", e) from e
            self._session_dir = directory
            self._fallback_dir = False
        self._reset_to_new_session(
            parent_session=UNDEFINED if parent_session is None else parent_session,
            provider_prompt_cache_key=UNDEFINED if provider_prompt_cache_key is None else provider_prompt_cache_key,
            additional_directories=additional_directories)
        self.ensure_on_disk()
        return self._session_file

    def fork(self) -> tuple[str, str] | None:
        """Continue in a new file holding every entry (header ``parentSession`` = this session's
        id). Returns (old file, new file), or None for an in-memory session."""
        if not self._persist or self._session_file is None:
            return None
        old_file = self._session_file
        parent_id = self.get_session_id()
        self._failure = None
        self._reconcile_session_dir()
        old = self.session.header or {}
        timestamp = new_session_timestamp()
        session_id = new_session_id()
        header = {"type": "session", "version": _CURRENT_VERSION, "id": session_id,
                  "title": _coalesce(old.get("title", UNDEFINED), self._session_name),
                  "titleSource": _coalesce(old.get("titleSource", UNDEFINED), self._title_source),
                  "timestamp": timestamp, "cwd": self._cwd,
                  "additionalDirectories": list(self._additional_dirs) if self._additional_dirs else UNDEFINED,
                  "parentSession": parent_id,
                  "providerPromptCacheKey": _coalesce(old.get("providerPromptCacheKey", UNDEFINED), parent_id)}
        self._failure = None
        self._session_file = os.path.join(self._session_dir, f"{file_safe_timestamp(timestamp)}_{session_id}.jsonl")
        self._expected_size = None
        entries = list(self.session.entries)
        leaf = self.session.raw_leaf
        self._replace_entries(header, entries)
        self.session.set_leaf(leaf)
        self._session_name = _or_none(header.get("title"))
        self._title_source = _or_none(header.get("titleSource"))
        self._title_updated_at = timestamp
        self._has_title_slot = True
        self._file_is_current = False
        self._rewrite_required = False
        self._force_file_creation = True
        self._rewrite()
        return old_file, self._session_file

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Continue in a new file holding only the path root → ``leaf_id`` (labels on it carried
        over as fresh label entries). Returns the new file, or None for an in-memory session."""
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFoundError(f"Entry {leaf_id} not found")
        keep = [e for e in path if not (isinstance(e, dict) and e.get("type") == "label")]
        kept_ids = {e.get("id") for e in keep if isinstance(e, dict)}
        carried = [(target, label) for target, label in self.session.labels().items() if target in kept_ids]
        timestamp = new_session_timestamp()
        session_id = new_session_id()
        self._reconcile_session_dir()
        new_file = os.path.join(self._session_dir, f"{file_safe_timestamp(timestamp)}_{session_id}.jsonl")
        header = {"type": "session", "version": _CURRENT_VERSION, "id": session_id, "timestamp": timestamp,
                  "cwd": self._cwd, "title": _or_undefined(self._session_name),
                  "titleSource": _or_undefined(self._title_source),
                  "parentSession": self._session_file if self._persist and self._session_file else UNDEFINED,
                  "additionalDirectories": list(self._additional_dirs) if self._additional_dirs else UNDEFINED}
        labels: builtins.list[dict[str, Any]] = []
        parent = keep[-1].get("id") if keep and isinstance(keep[-1], dict) else None
        for target, label in carried:
            entry = record(("type", "label"), ("id", generate_id(kept_ids | {e["id"] for e in labels})),
                           ("parentId", parent), ("timestamp", iso_timestamp()), ("targetId", target),
                           ("label", label))
            labels.append(entry)
            parent = entry["id"]
        self._session_file = new_file if self._persist else None
        self._replace_entries(header, [*keep, *labels])
        self._session_name = _or_none(header.get("title"))
        self._title_source = _or_none(header.get("titleSource"))
        self._title_updated_at = timestamp
        self._has_title_slot = True
        self._force_file_creation = self._persist
        if not self._persist:
            self._file_is_current = False
            self._rewrite_required = False
            return None
        self._expected_size = None
        self._rewrite(lazy=True)
        return new_file

    def flush(self, *, rewrite: bool = True) -> None:
        """Make everything durable; raise a write failure that has not been resolved.

        With ``rewrite=False`` this is omp's asynchronous ``flush()``, which never rewrites (a
        migrated file stays as it is on disk); the default is omp's ``flushSync()``.
        """
        if not self._persist or self._session_file is None:
            return
        if self._failure is not None:
            raise self._failure
        if rewrite and (not self._file_is_current or self._rewrite_required):
            self._rewrite(lazy=True)

    def close(self) -> None:
        """Release the session; raises a write failure that has not been resolved. Like omp's
        ``close()`` it does not rewrite: call :meth:`flush` first for that."""
        try:
            if self._persist and self._session_file is not None and self._storage.size(self._session_file) is not None:
                self._file_is_current = True
            if self._failure is not None:
                raise self._failure
        finally:
            self.session.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- reading (omp's read API, snake_case) ---------------------------------------------------

    def get_header(self) -> dict[str, Any] | None:
        """The header as omp holds it (title overlaid, migrated); keys omp holds as
        ``undefined`` are left out."""
        header = self.session.get_header()
        if header is not None and any(v is UNDEFINED for v in header.values()):
            return {k: v for k, v in header.items() if v is not UNDEFINED}
        return header

    def get_entries(self) -> builtins.list[Any]:
        return self.session.get_entries()

    def get_entry(self, entry_id: Any) -> Any:
        return self.session.get_entry(entry_id)

    def get_leaf_id(self) -> Any:
        return self.session.get_leaf_id()

    def get_leaf_entry(self) -> Any:
        leaf = self.session.raw_leaf
        return self.session.get_entry(leaf) if leaf else None

    def get_branch(self, from_id: Any = UNDEFINED) -> builtins.list[Any]:
        return self.session.get_branch(from_id)

    def get_children(self, parent_id: Any) -> builtins.list[Any]:
        return self.session.get_children(parent_id)

    def get_label(self, entry_id: Any) -> Any:
        return self.session.get_label(entry_id)

    def get_tree(self) -> Tree:
        return self.session.get_tree()

    def build_session_context(self, **options: bool) -> dict[str, Any]:
        return self.session.build_session_context(**options)

    def get_usage_statistics(self) -> dict[str, Any]:
        return self.session.get_usage_statistics()

    def get_session_name(self) -> str | None:
        return self._session_name

    def get_session_file(self) -> str | None:
        return self._session_file

    def get_session_id(self) -> str:
        header = self.session.header or {}
        return str(header.get("id", ""))

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_cwd(self) -> str:
        return self._cwd

    def is_session_on_disk(self) -> bool:
        return self._session_file is not None and self._storage.size(self._session_file) is not None

    def get_artifacts_dir(self) -> str | None:
        """``<session file without .jsonl>/``: tool output spills, drafts, subagent sessions (S9.5)."""
        f = self._session_file
        return f[: -len(".jsonl")] if f is not None and f.endswith(".jsonl") else None

    @property
    def path(self) -> str | None:
        return self._session_file


# ----- helpers ------------------------------------------------------------------------------------

def _iso_ms(timestamp: str) -> int:
    from datetime import datetime

    return round(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


def _blobs(blob_store: Any) -> Any:
    return blob_store if blob_store is not None else BlobStore(blobs_dir())


def _storage_of(storage: SessionStorage | str | None) -> SessionStorage:
    """The storage a constructor was given: a storage, a store URL (docs/stores.md), or the files."""
    if storage is None:
        return FileStorage()
    if isinstance(storage, str):
        from omp_session.store import open_store

        return open_store(storage)
    return storage


def _load(storage: SessionStorage, path: str, blob_store: Any, omp: str | None = None) -> Session | None:
    """The session stored at ``path``, or None when there is no such file."""
    if isinstance(storage, FileStorage):
        if not os.path.exists(path):
            return None
        if path.endswith(".jsonl.gz"):  # appending plain lines would break the archive
            raise FormatError("an archived session (.jsonl.gz) can be read, not continued; unpack or gunzip "
                              "it first", path=path)
        from omp_session.model.session import read_session

        try:
            return read_session(path, blob_store=blob_store, omp=omp)
        except IsADirectoryError as e:
            raise FormatError("is a directory, not a session file", path=path) from e
        except OSError as e:
            raise PersistenceError(path, "reading the session file", e) from e
    try:
        data = storage.read(path)
    except FileNotFoundError:
        return None
    return Session(scan_bytes(data), path, blob_store, omp=omp)


def _session_dir_for(cwd: str, session_dir: str | os.PathLike[str] | None) -> str:
    """The directory new sessions of ``cwd`` go to: the one given, else
    ``$PI_CODING_AGENT_SESSION_DIR`` (as omp's command line does), else the project's bucket."""
    if session_dir is not None:
        return os.fspath(session_dir)
    return session_dir_override() or default_session_dir(cwd)


def _workspace_dirs(cwd: str, directories: Sequence[Any]) -> builtins.list[str]:
    """Extra workspace directories: absolute, without duplicates, without the cwd itself."""
    base = os.path.abspath(cwd)
    out: builtins.list[str] = []
    for d in directories:
        if isinstance(d, str) and d:
            full = os.path.normpath(os.path.join(base, d))
            if full != base and full not in out:
                out.append(full)
    return out


def _enterable(directory: str) -> bool:
    return os.path.isdir(directory) and os.access(directory, os.X_OK)


def _check_cwd(cwd: str | os.PathLike[str]) -> str:
    value = os.fspath(cwd)
    if not isinstance(value, str) or not value:
        raise EditError(f"a working directory must be a non-empty path, not {value!r}")
    if os.path.exists(value) and not os.path.isdir(value):
        raise EditError(f"{value}: the working directory is not a directory")
    return value


def _check_writable_dir(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise PersistenceError(directory, "creating the session directory", e) from e
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PersistenceError(directory, "using the session directory",
                               PermissionError(13, "no write permission"))


def _verbatim(raw: bytes) -> bytes:
    return raw if raw.endswith(b"\n") else raw + b"\n"


def _str_or(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _coalesce(value: Any, fallback: Any) -> Any:
    """JavaScript ``value ?? fallback`` (undefined for a None fallback)."""
    if value is not None and value is not UNDEFINED:
        return value
    return UNDEFINED if fallback is None else fallback


def _or_undefined(value: Any) -> Any:
    return UNDEFINED if value is None else value


def _or_none(value: Any) -> Any:
    return None if value is UNDEFINED else value
