"""A loaded session: header, entries, leaf, tree, labels and context, as omp derives them."""

from __future__ import annotations

import operator
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice, repeat
from typing import Any, overload

from omp_session.diagnostics import Diagnostic, Severity
from omp_session.format.blobs import BLOB_PREFIX, parse_blob_ref, resolve_blob_refs
from omp_session.format.columns import Grown, compact_ids
from omp_session.format.migrate import header_version, migrate, needs_migration
from omp_session.format.reader import (
    Journal,
    MalformedSpan,
    copilot_records,
    head_of_message,
    is_shared_head,
    scan_bytes,
    scan_file,
    shared_heads,
)
from omp_session.format.title import TitleSlot
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.js.number import to_number

from . import context as _context
from .omp_version import resolve as resolve_omp
from .tree import (
    Tree,
    build_index,
    chained_flags,
    js_key,
    js_truthy,
    nonlinear_entries,
    on_path,
    parent_indices,
    parent_indices_linear,
    path_runs,
    path_to,
)

_TYPED = re.compile(rb"\x02")  # KIND_TYPED in Session.kinds
_OTHER = re.compile(rb"\x03")  # KIND_OTHER: other roles, or a message without a message object
_COMPACT_FROM = 4096  # entries; below that the lists cost little and are faster to index
# lookups by scanning the ids before the id -> index map is built: each scan reads every id, so a
# caller that looks up many (validate's label and compaction references) would take quadratic time
_SCANS_BEFORE_INDEX = 256

__all__ = [
    "KIND_ASSISTANT",
    "KIND_MESSAGE",
    "KIND_ODD",
    "KIND_OTHER",
    "KIND_TYPED",
    "EntryList",
    "Session",
    "entry_kinds",
    "is_task_result",
    "open_session",
    "read_session",
    "usage_or_model_candidates",
    "with_side_calls",
]

KIND_MESSAGE = 0    # a user or toolResult message
KIND_ASSISTANT = 1  # an assistant message
KIND_TYPED = 2      # any other entry type (a string)
KIND_OTHER = 3      # a message with another role, or without a message object
KIND_ODD = 4        # a non-string type, or not an object


# entry_kinds combines a type code (x8) and a head code into one byte, then maps it to a kind
_T_MESSAGE, _T_TYPED, _T_ODD = 0, 8, 16
_H_NONE, _H_PLAIN, _H_ASSISTANT, _H_OTHER = 0, 1, 2, 3
_KIND_TABLE = bytearray(range(256))
for _h, _kind in ((_H_NONE, KIND_OTHER), (_H_PLAIN, KIND_MESSAGE), (_H_ASSISTANT, KIND_ASSISTANT),
                  (_H_OTHER, KIND_OTHER)):
    _KIND_TABLE[_T_MESSAGE + _h] = _kind
    _KIND_TABLE[_T_TYPED + _h] = KIND_TYPED
    _KIND_TABLE[_T_ODD + _h] = KIND_ODD


def entry_kinds(types: Sequence[Any], heads: Sequence[Any], shared: Iterable[Any] | None = None) -> bytearray:
    """Classify entries from their envelope (``heads`` is indexed by record: entry k is k + 1).

    Built from C-level maps over the few distinct types and message heads: this runs on every
    large-session context and must not cost a Python step per entry. ``shared``, when given,
    holds every head object of ``heads`` other than None (the reader's shared heads).
    """
    n = len(types)
    # heads are shared objects: key them by identity (hashing a struct per entry costs more)
    if shared is None:
        distinct = dict(zip(map(id, heads), heads, strict=True))
    else:
        distinct = {id(head): head for head in shared}
        distinct[id(None)] = None
    head_codes: dict[int, int] = {}
    for ident, head in distinct.items():
        role = None if head is None else head.role
        head_codes[ident] = _H_NONE if head is None else (
            (_H_PLAIN if role in ("user", "toolResult") else _H_ASSISTANT if role == "assistant" else _H_OTHER)
            if type(role) is str else _H_OTHER)
    try:
        if not set(map(type, types)) <= {str}:
            raise TypeError("a non-string type")
        type_codes = bytearray(map({"message": _T_MESSAGE}.get, types, repeat(_T_TYPED, n)))
        head_bytes = bytearray(map(head_codes.__getitem__, map(id, islice(heads, 1, None))))
    except (TypeError, KeyError):  # unhashable heads or types, odd types, unshared heads: one step per entry
        return bytearray(_kind_of(t, heads[k + 1]) for k, t in enumerate(types))
    return bytearray(map(operator.add, type_codes, head_bytes)).translate(_KIND_TABLE)


def _kind_of(t: Any, head: Any) -> int:
    if t != "message" or type(t) is not str:
        return KIND_TYPED if type(t) is str else KIND_ODD
    role = None if head is None else head.role
    if type(role) is not str:
        return KIND_OTHER
    return KIND_MESSAGE if role in ("user", "toolResult") else KIND_ASSISTANT if role == "assistant" else KIND_OTHER


def is_task_result(head: Any) -> bool:
    """Whether a message with this head (:class:`~omp_session.format.reader.MessageHead`) is a
    ``task`` tool's result: the only tool result whose usage omp's sum reads."""
    return bool(head.role == "toolResult" and head.toolName == "task")


def with_side_calls(s: Session, branch: Sequence[int], picked: list[int]) -> list[int]:
    """``picked`` (entries of ``branch``, in its order) and the side calls hanging off the branch,
    in file order when there are any: a ``model_usage`` entry (a title, an auto-thinking
    classification) is attached to the branch it was made for without becoming part of it (spec
    S3.15), and the branch's usage counts it, as stats' current view does."""
    if s.migrated:  # (the envelope columns describe a migrated file, not its entries)
        calls = [k for k in range(len(s)) if _type_of(s.peek_entry(k)) == "model_usage"]
    else:
        calls = [k for k, t in enumerate(s.types) if t == "model_usage"]
    if not calls:
        return picked
    on_branch, parents = set(branch), s.parent_index
    side = [k for k in calls if k not in on_branch and parents[k] in on_branch]
    return sorted(picked + side) if side else picked


def _type_of(entry: Any) -> Any:
    return entry.get("type") if isinstance(entry, dict) else None


def usage_or_model_candidates(s: Session) -> bytearray:
    """Per entry, 1 when it may hold usage or name a model (an assistant message, a possible
    ``task`` result, model_change/model_usage, odd shapes), 0 when it cannot: the others can be
    skipped without being decoded. A user message counts as none; a tool result only as a ``task``
    result: one whose ``toolName`` (its last, as ``JSON.parse`` keeps it) is ``"task"``."""
    if s.migrated:  # the envelope columns describe the file, not the migrated entries
        return bytearray(b"\x01" * len(s))
    kinds, types, j = s.kinds, s.types, s.journal
    out = bytearray(len(kinds))
    for k, kind in enumerate(kinds):
        if kind == KIND_TYPED:
            out[k] = types[k] in ("model_usage", "model_change")
        elif kind == KIND_MESSAGE:  # a user message is never one; a tool result only a task's
            out[k] = is_task_result(j.heads[k + 1])
        else:
            out[k] = 1
    for i in j.values:  # appended or maybe changed in memory: its bytes and envelope say nothing
        if i:
            out[i - 1] = 1
    return out


class EntryList(Sequence[Any]):
    """The entries after the header, decoded on first access (then kept, so edits stick)."""

    def __init__(self, session: Session) -> None:
        self._s = session

    def __len__(self) -> int:
        return self._s._count

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._s.entry_at(k) for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._s.entry_at(i)

    def __iter__(self) -> Iterator[Any]:
        for k in range(len(self)):
            yield self._s.entry_at(k)


class _ById(Mapping[Any, Any]):
    """id -> entry (last one wins), decoding lazily."""

    def __init__(self, session: Session) -> None:
        self._s = session

    def __getitem__(self, key: Any) -> Any:
        i = self._s.index.get(js_key(key))
        if i is None:
            raise KeyError(key)
        return self._s.entry_at(i)

    def __contains__(self, key: object) -> bool:
        return js_key(key) in self._s.index

    def __iter__(self) -> Iterator[Any]:
        for i in self._s.index.values():
            yield self._s._ids[i]

    def __len__(self) -> int:
        return len(self._s.index)


class Session:
    """Everything omp derives from one session file, read lazily.

    ``header`` is None when the file has no valid header (``diagnostics`` says why); such a file
    cannot be resumed by omp. Reading never writes.
    """

    def __init__(self, journal: Journal, path: str | None = None, blob_store: Any = None, *,
                 omp: str | None = None) -> None:
        self.path = path
        # the omp release whose derivations we imitate (S20); a setter so a manager can switch it
        self.omp = resolve_omp(omp)
        self.journal = journal
        self.blob_store = blob_store
        self._blob_marked: set[int] = set()  # records whose blob references are resolved on decode
        self.diagnostics: list[Diagnostic] = []
        self.title_slot: TitleSlot | None = journal.slot
        self.migrated = False
        self.ids_made_up = False
        self.sanitized = False  # omp stripped Copilot replay metadata on open: it rewrites the file
        self.raw_header: Any = UNDEFINED
        self.header: dict[str, Any] | None = None
        self._count = max(len(journal) - 1, 0)
        # The session takes over the journal's envelope lists, minus the header's row: no copies
        # of three lists that each hold a pointer per record.
        for column in (journal.ids, journal.parents, journal.types, journal.linear):
            if column:
                del column[0]
        self._ids: Sequence[Any] = journal.ids
        self._parents: Sequence[Any] = journal.parents
        self._types: list[Any] = journal.types
        self._read_header()
        if self.header is not None:
            self._resolve_blobs()
            self._overlay_title()  # before migration: omp overlays the slot first (key order shows it)
            self._migrate()
            self._sanitize_copilot_replay()
        self._index_cache: dict[Any, int] | None = None
        self._scans = 0
        self._unique_strings = self._ids_are_unique_strings()
        self._pidx: Sequence[int] | None = None
        self._nonlinear: tuple[list[int], bool] | None = None
        self._kinds: bytearray | None = None
        if self._unique_strings and self._count >= _COMPACT_FROM:
            self._compact()
        self._leaf: Any = self._ids[-1] if self._count else None
        self._labels: dict[Any, Any] | None = None
        self._tree: Tree | None = None
        self.entries = EntryList(self)
        self.by_id: Mapping[Any, Any] = _ById(self)
        self._diagnose_records()

    # ----- loading --------------------------------------------------------------------------

    def _diag(self, code: str, severity: Severity, message: str, *, offset: int | None = None,
              entry_id: Any = None, line: int | None = None) -> None:
        if line is None and offset is not None:
            line = self.journal.line_of(offset)
        self.diagnostics.append(Diagnostic(code, severity, message, line=line, offset=offset,
                                           entry_id=entry_id if isinstance(entry_id, str) else None,
                                           path=self.path))

    def _read_header(self) -> None:
        j = self.journal
        if len(j) == 0:
            if j.malformed:
                self._diag("invalid-header", Severity.ERROR,
                           "no record could be read, so there is no session header",
                           offset=j.malformed[0].start)
            return
        value = j.value(0)
        self.raw_header = value
        if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
            self.header = value
            return
        self._diag("invalid-header", Severity.ERROR,
                   'the first record is not a session header ({"type":"session","id":<string>})',
                   offset=j.start(0))

    def _resolve_blobs(self) -> None:
        """Replace blob references by their data when an entry is decoded, as omp does on load
        (S8.8.5); report references to blobs the store does not have now."""
        j = self.journal
        if self.blob_store is None or not j.blob_offsets:
            return
        # a record decoded later is one the scan searched for references: no search of its bytes again
        marked = self._blob_marked = j.blob_records()
        marked.discard(0)  # the header is never resolved
        store = self.blob_store

        def on_decode(i: int, raw: bytes, value: Any) -> Any:
            return resolve_blob_refs(value, store) if i in marked else value

        j.decode_hook = on_decode
        for i in list(j.values):  # records the exact path already decoded
            if i > 0 and b"blob:sha256:" in j.raw(i):
                j.values[i] = resolve_blob_refs(j.values[i], self.blob_store)
        checked: dict[str, bool] = {}
        for offset in j.blob_offsets:
            ref = j.read(offset + len(BLOB_PREFIX), offset + len(BLOB_PREFIX) + 64).decode("ascii", "replace")
            if parse_blob_ref(BLOB_PREFIX + ref) is None:
                self._diag("blob-malformed-ref", Severity.INFO, "a blob reference that is not "
                           "blob:sha256:<64 lowercase hex>; omp never resolves it", offset=offset)
                continue
            if ref not in checked:
                checked[ref] = ref in self.blob_store
            if not checked[ref]:
                self._diag("blob-missing", Severity.WARNING, f"{BLOB_PREFIX}{ref} is not in the blob store",
                           offset=offset)

    def _migrate(self) -> None:
        header = self.header
        assert header is not None
        if not needs_migration(header):
            return
        self.ids_made_up = to_number(header_version(header)) < 2  # v1 files hold no ids
        entries = [self.entry_at(k) for k in range(self._count)]
        j = self.journal
        self.migrated, found = migrate(header, entries, line_of=lambda k: j.line_of(j.start(k + 1)))
        for d in found:
            self.diagnostics.append(Diagnostic(d.code, d.severity, d.message, line=d.line, path=self.path))
        ids, parents = j.ids, j.parents  # still the journal's lists: compaction comes later
        for k, entry in enumerate(entries):
            if isinstance(entry, dict):
                ids[k] = entry.get("id", UNDEFINED)
                parents[k] = entry.get("parentId", UNDEFINED)

    def _sanitize_copilot_replay(self) -> None:
        """What omp does to GitHub Copilot assistant messages on open (S4.8): the native replay
        payload and thinking signatures belong to a dead connection, so they are dropped."""
        j = self.journal
        for i in copilot_records(j):
            if i == 0:
                continue
            entry = j.value(i)
            if not isinstance(entry, dict) or entry.get("type") != "message":
                continue
            message = entry.get("message")
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            payload = message.get("providerPayload")
            if not (isinstance(payload, dict) and payload.get("type") == "openaiResponsesHistory"
                    and message.get("provider") == "github-copilot"):
                continue
            content = message.get("content")
            if not isinstance(content, list):
                continue  # omp throws here (content.map); the file is reported, not changed
            # omp sets these to undefined, which JSON.stringify leaves out: removing the keys writes
            # the same bytes and keeps undefined out of what the API returns
            sanitized = {k: v for k, v in message.items() if k != "providerPayload"}
            blocks = [{k: v for k, v in b.items() if k != "thinkingSignature"}
                      if isinstance(b, dict) and b.get("type") == "thinking" and "thinkingSignature" in b else b
                      for b in content]
            if any(new is not old for new, old in zip(blocks, content, strict=True)):
                sanitized["content"] = blocks
            entry["message"] = sanitized
            self.sanitized = True

    def _overlay_title(self) -> None:
        slot, header = self.title_slot, self.header
        if slot is None or header is None:
            return
        if slot.title:
            header["title"] = slot.title
        else:
            header.pop("title", None)
        if slot.source is not None:
            header["titleSource"] = slot.source
        else:
            header.pop("titleSource", None)

    def _diagnose_records(self) -> None:
        j = self.journal
        for span in j.malformed:
            self._diag("malformed-record", Severity.WARNING,
                       "not a JSON value: omp skips this record and drops it on its next rewrite",
                       offset=span.start)
        if j.bom:
            self._diag("bom", Severity.WARNING, "the file starts with a UTF-8 BOM: omp can read it but "
                       "never rewrite it", offset=0)
        if j.invalid_utf8:
            self._diag("invalid-utf8", Severity.WARNING, "the file holds invalid UTF-8: omp reads U+FFFD "
                       "in its place and can never rewrite it")
        if j.size and not j.final_newline:
            self._diag("no-final-newline", Severity.WARNING, "the last line has no final LF: omp's next "
                       "append is glued onto it and lost", offset=j.size)
        if self.header is not None and not isinstance(self.header.get("cwd", ""), str):
            self._diag("omp-cannot-open", Severity.ERROR, "the header's cwd is not a string: omp cannot "
                       "open this file", offset=j.start(0))
        for i, value in j.values.items():
            if value is None and i > 0:
                self._diag("omp-cannot-open", Severity.ERROR, "a null record: omp cannot open this file",
                           offset=j.start(i))
        headless = [m.start() for m in _OTHER.finditer(self.kinds)]
        for k in [k for k in headless if j.heads[k + 1] is None]:
            entry = self.entry_at(k)
            # omp reads entry.message.role on open: only a missing or null message throws
            if isinstance(entry, dict) and entry.get("message") is None:
                self._diag("omp-cannot-open", Severity.ERROR, "a message entry without a message object: "
                           "omp cannot open this file", offset=j.start(k + 1), entry_id=self._ids[k])
        if not self._unique_strings and len(self.index) < self._count and self.header is not None:
            self._diag("duplicate-id", Severity.WARNING, f"{self._count - len(self.index)} entries reuse an "
                       "id: lookups and paths resolve to the last entry with that id")
            self.get_tree()  # reports omp's getTree() hang, if the duplicates cause one

    # ----- entries --------------------------------------------------------------------------

    def entry_at(self, k: int) -> Any:
        """Entry ``k`` (0-based, header excluded), decoded on first access."""
        return self.journal.value(k + 1)

    def peek_entry(self, k: int) -> Any:
        """Entry ``k`` as :meth:`entry_at` gives it, not kept decoded: for one pass over a big session
        (an export, a rewrite) whose memory must not grow with it. Never modify what it returns."""
        return self.journal.peek(k + 1)

    def peek_in_order(self, resolve_if: Callable[[Any], bool] | None = None) -> Callable[[int], Any]:
        """:meth:`peek_entry` for a pass that asks for entries mostly in file order (a tree's rows,
        an export): their bytes are read a window at a time, not one ``pread`` each.

        ``resolve_if``: for a pass that reads only part of each entry, whether an entry holding
        blob references (given as the file holds it) could show a resolved one in that part; when
        it says no, the entry is given unresolved and its blobs are not read."""
        marked, resolve = self._blob_marked, self.journal.decode_hook
        if resolve_if is None or not marked or resolve is None:
            peek = self.journal.peek_in_order()
        else:
            def hook(i: int, raw: bytes, value: Any) -> Any:
                return resolve(i, raw, value) if i in marked and resolve_if(value) else value

            peek = self.journal.peek_in_order(hook)
        return lambda k: peek(k + 1)

    def __len__(self) -> int:
        return self._count

    @property
    def ids(self) -> Sequence[Any]:
        return self._ids

    def line_of_entry(self, k: int) -> int:
        return self.journal.line_of(self.journal.start(k + 1))

    def entry_lines(self) -> Sequence[int]:
        """:meth:`line_of_entry` of every entry, found at once (for a pass over them all)."""
        return self.journal.record_lines()[1:]

    @property
    def malformed(self) -> list[MalformedSpan]:
        return self.journal.malformed

    # ----- in-memory changes (the writer's side) ----------------------------------------------

    @classmethod
    def new(cls, header: dict[str, Any], *, blob_store: Any = None, path: str | None = None,
            omp: str | None = None) -> Session:
        """An empty session holding ``header`` (a new session that has no file yet)."""
        session = cls(scan_bytes(codec.dumps_line(header)), path, blob_store, omp=omp)
        session.header = header
        session.raw_header = header
        return session

    def append_entry(self, entry: Any, *, new_id: bool = False) -> int:
        """Add ``entry`` after the last one, as omp's index inserts it; the leaf moves to it.
        ``new_id``: the caller checked that no entry has its id (a fresh id), so it is not
        looked up again.

        Only the id index is kept up to date here (the writer checks every new id against
        it); views derived from the whole journal are rebuilt on their next use.
        """
        self._expand()
        k = self._count
        j = self.journal
        j.starts.append(j.size)
        j.ends.append(j.size)
        entry_id = entry.get("id", UNDEFINED) if isinstance(entry, dict) else UNDEFINED
        parent = entry.get("parentId", UNDEFINED) if isinstance(entry, dict) else UNDEFINED
        kind = entry.get("type", UNDEFINED) if isinstance(entry, dict) else UNDEFINED
        head = head_of_message(entry.get("message")) if isinstance(entry, dict) and "message" in entry else None
        j.heads.append(head)
        if head is not None and not is_shared_head(head):
            j.loose_heads = True
        j.values[k + 1] = entry
        assert isinstance(self._ids, list | Grown) and isinstance(self._parents, list | Grown)
        if self._unique_strings and not (type(entry_id) is str and entry_id and
                                         (new_id or self.index_of(entry_id) is None)):
            self._unique_strings = False
        j.linear.append(1 if k and type(parent) is str and self._ids[k - 1] == parent else 0)
        self._ids.append(entry_id)
        self._parents.append(parent)
        self._types.append(kind)
        self._count += 1
        if self._index_cache is not None:
            self._index_cache[js_key(entry_id)] = k
        if self._kinds is not None:
            self._kinds.append(_kind_of(kind, head))
        self._pidx = None
        self._nonlinear = None
        self._labels = None
        self._tree = None
        self._leaf = entry_id
        return k

    def set_leaf(self, entry_id: Any) -> None:
        """Move the leaf (omp's ``branch``/``resetLeaf``): None starts a new root."""
        self._leaf = entry_id

    def _expand(self) -> None:
        """Compact columns cannot grow: appended entries go to a list after them."""
        if not isinstance(self._ids, list | Grown):
            self._ids = Grown(self._ids)
        if not isinstance(self._parents, list | Grown):
            self._parents = Grown(self._parents)

    def __contains__(self, entry_id: object) -> bool:
        """Whether an entry has this id."""
        return self.index_of(entry_id) is not None

    # ----- SessionManager read API ---------------------------------------------------------

    def get_header(self) -> dict[str, Any] | None:
        return self.header

    def get_entries(self) -> list[Any]:
        return list(self.entries)

    def get_entry(self, entry_id: Any) -> Any:
        i = self.index_of(entry_id)
        return None if i is None else self.entry_at(i)

    def get_leaf_id(self) -> Any:
        """The id of the last entry (None also when that entry has no id)."""
        return None if self._leaf is UNDEFINED else self._leaf

    def _leaf_index(self, leaf: Any) -> int | None:
        return self.index_of(leaf) if js_truthy(leaf) else None

    def get_branch(self, from_id: Any = UNDEFINED) -> list[Any]:
        """Entries root -> ``from_id`` (default: the leaf)."""
        return [self.entry_at(i) for i in self.branch_indices(from_id)]

    def branch_indices(self, from_id: Any = UNDEFINED) -> Sequence[int]:
        leaf = self._leaf if from_id is UNDEFINED or from_id is None else from_id
        return path_to(self._leaf_index(leaf), self.parent_index)

    def get_children(self, parent_id: Any) -> list[Any]:
        return [self.entry_at(k) for k in self.children_indices(parent_id)]

    def children_indices(self, parent_id: Any) -> list[int]:
        if type(parent_id) is str:
            return [k for k, p in enumerate(self._parents) if p == parent_id and type(p) is str]
        key = js_key(parent_id)
        return [k for k, p in enumerate(self._parents) if type(p) is not str and js_key(p) == key]

    def _label_map(self) -> dict[Any, Any]:
        """Labels in effect: every label entry in file order, the last one per target wins (S6.6)."""
        if self._labels is None:
            labels: dict[Any, Any] = {}
            targets: dict[Any, Any] = {}
            types = self._types
            for k in [m.start() for m in _TYPED.finditer(self.kinds)]:
                if types[k] != "label":
                    continue
                entry = self.entry_at(k)
                target = entry.get("targetId", UNDEFINED)
                label = entry.get("label", UNDEFINED)
                key = js_key(target)
                if js_truthy(label):
                    labels[key] = label
                    targets[key] = target
                else:
                    labels.pop(key, None)
            self._labels = labels
            self._label_targets = targets
        return self._labels

    def get_label(self, entry_id: Any) -> Any:
        """The label in effect for an entry, or None."""
        value = self._label_map().get(js_key(entry_id), UNDEFINED)
        return None if value is UNDEFINED else value

    def labels_by_entry(self) -> dict[int, Any]:
        """Entry index -> the label in effect, for every entry that has one: :meth:`get_label` of
        every entry's id at once, for a pass over many (entries sharing an id share its label)."""
        labels = self._label_map()
        if not labels:
            return {}
        return {k: labels[key] for k, entry_id in enumerate(self._ids)
                if (key := entry_id if entry_id.__class__ is str else js_key(entry_id)) in labels}

    def labels(self) -> dict[Any, Any]:
        """targetId -> label for every label in effect (latest wins, branch-independent)."""
        self._label_map()
        return {_hashable(self._label_targets[k]): v for k, v in self._labels.items()} if self._labels else {}

    def get_tree(self) -> Tree:
        if self._tree is None:
            self._tree = Tree(self._ids, self._parents, lambda: self.index,
                              timestamp_of=self._timestamp_of, entry_of=self.entry_at,
                              labels=self._label_map,
                              unique_parents=self.parent_index if self._unique_strings else None,
                              nonlinear=self._linear_breaks())
            if self._tree.cycle_nodes:
                ids = sorted({str(self._ids[n]) for n in self._tree.cycle_nodes})
                self._diag("tree-cycle", Severity.ERROR,
                           "duplicate ids make an entry its own ancestor; omp's getTree() never returns "
                           f"on this file (ids: {', '.join(ids[:5])})")
        return self._tree

    def _timestamp_of(self, k: int) -> Any:
        entry = self.entry_at(k)
        return entry.get("timestamp", UNDEFINED) if isinstance(entry, dict) else UNDEFINED

    def build_session_context(self, *, transcript: bool = False, collapse_compacted_history: bool = False,
                              keep_dangling_tool_calls: bool = False) -> dict[str, Any]:
        """omp's ``buildSessionContext`` (the model context, or with ``transcript`` the display
        transcript). Raises :class:`~omp_session.context.ContextError` where omp throws."""
        from .context_path import build_context

        return build_context(self, transcript=transcript, collapse_compacted_history=collapse_compacted_history,
                             keep_dangling_tool_calls=keep_dangling_tool_calls,
                             resolve_frame_data=self._frame_resolver(), omp=self.omp)

    def _frame_resolver(self) -> Any:
        get = getattr(self.blob_store, "get", None)
        return _context.blob_frame_resolver(get) if get is not None else None

    # ----- index helpers shared with context_path --------------------------------------------

    @property
    def raw_leaf(self) -> Any:
        """The leaf as omp holds it after loading: the last entry's id (UNDEFINED if it has none)."""
        return self._leaf if self._count else None

    def index_of(self, entry_id: Any) -> int | None:
        """Index of the last entry with this id (JS Map semantics), or None."""
        if (self._index_cache is None and self._unique_strings and type(entry_id) is str
                and self._scans < _SCANS_BEFORE_INDEX):
            # distinct string ids: one C-level scan beats building a dict for a few lookups
            if self._count and entry_id == self._ids[-1]:
                return self._count - 1
            self._scans += 1
            try:
                return self._ids.index(entry_id)
            except ValueError:
                return None
        return self.index.get(js_key(entry_id))

    @property
    def index(self) -> dict[Any, int]:
        """id -> index of the last entry with that id; built on first use."""
        if self._index_cache is None:
            self._index_cache = build_index(self._ids)
        return self._index_cache

    def _compact(self) -> None:
        """Swap the id and parentId lists for compact columns (``compact.py``) in big sessions."""
        breaks = self._linear_breaks()
        if breaks is None:
            return
        packed = compact_ids(self._ids, self._parents, self.parent_index, breaks)
        if packed is None:
            return
        self._ids, self._parents = packed
        self.journal.ids = []
        self.journal.parents = []

    def _ids_are_unique_strings(self) -> bool:
        ids = self._ids
        if not set(map(type, ids)) <= {str}:
            return False
        seen = set(ids)
        return len(seen) == len(ids) and "" not in seen

    def path_indices(self, start: int) -> Sequence[int]:
        runs = self.path_runs(start)
        if runs is None:
            return path_to(start, self.parent_index)
        out = array("i")
        for first, last in runs:
            out.extend(range(first, last + 1))
        return out

    def is_on_path(self, target: int, start: int) -> bool:
        """Whether entry ``target`` is on the path to entry ``start`` (``target in
        path_indices(start)``, without building the path where runs tell it)."""
        nonlinear, forward = self._branch_points()
        if forward:
            return target in path_to(start, self.parent_index)
        return on_path(target, start, self.parent_index, nonlinear)

    def path_runs(self, start: int) -> list[tuple[int, int]] | None:
        """The path to ``start`` as runs of consecutive entries, or None when some parent comes
        after its child (then only the step-by-step walk is exact)."""
        nonlinear, forward = self._branch_points()
        return None if forward else path_runs(start, self.parent_index, nonlinear)

    def _branch_points(self) -> tuple[list[int], bool]:
        """Entries whose parent is not the entry before them, and whether a parent follows its child."""
        parent_index = self.parent_index  # finds them on the way for distinct string ids
        if self._nonlinear is None:
            self._nonlinear = nonlinear_entries(parent_index)
        return self._nonlinear

    def _linear_breaks(self) -> list[int] | None:
        if not self._unique_strings:
            return None
        nonlinear, forward = self._branch_points()
        return None if forward else nonlinear

    @property
    def kinds(self) -> bytearray:
        """One byte per entry, for scans that must not decode: see ``KIND_*``."""
        if self._kinds is None:
            j = self.journal
            self._kinds = entry_kinds(self._types, j.heads, None if j.loose_heads else shared_heads())
        return self._kinds

    @property
    def unique_string_ids(self) -> bool:
        """Every entry id is a distinct, non-empty string (the normal case)."""
        return self._unique_strings

    @property
    def parent_index(self) -> Sequence[int]:
        """Per entry, the entry its parentId leads to on a path walk (-1 ends the path)."""
        if self._pidx is None:
            if self._unique_strings:
                linear = self.journal.linear
                if self.migrated or len(linear) != self._count:
                    linear = chained_flags(self._ids, self._parents)
                self._pidx, nonlinear, forward = parent_indices_linear(self._ids, self._parents, linear)
                self._nonlinear = (nonlinear, forward)
            else:
                self._pidx = parent_indices(self._ids, self._parents, lambda: self.index, False)
        return self._pidx

    @property
    def types(self) -> Sequence[Any]:
        return self._types

    @property
    def parent_ids(self) -> Sequence[Any]:
        return self._parents

    def get_usage_statistics(self) -> dict[str, Any]:
        """omp's ``getUsageStatistics()`` (S13.1). Only the entries that can hold a usage are read,
        none is kept decoded, and a plain assistant usage is summed from its numbers (kept by the
        scan when the session was opened with ``usage=True``, else read from its bytes)."""
        from .usage import branch_and_all_usage
        from .usage_plain import usage_numbers

        counted = usage_or_model_candidates(self)
        every = [k for k in range(len(self)) if counted[k]]
        return branch_and_all_usage(self.peek_entry, [], every, usage_numbers(self))[1]

    def get_session_name(self) -> str | None:
        if self.header is None:
            return None
        title = self.header.get("title")
        return title if isinstance(title, str) and title else None

    # ----- properties for the common views ---------------------------------------------------

    @property
    def leaf_id(self) -> Any:
        return self.get_leaf_id()

    @property
    def branch(self) -> list[Any]:
        return self.get_branch()

    @property
    def tree(self) -> Tree:
        return self.get_tree()

    @property
    def context(self) -> dict[str, Any]:
        return self.build_session_context()

    @property
    def usage(self) -> dict[str, Any]:
        return self.get_usage_statistics()

    @property
    def name(self) -> str | None:
        return self.get_session_name()

    def close(self) -> None:
        self.journal.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _hashable(target: Any) -> Any:
    """A label's targetId as a dict key: an object or array (no entry can have it as its id) as
    its JSON text; a label entry without ``targetId`` under None (the public API never returns
    JavaScript undefined)."""
    if target is UNDEFINED:
        return None
    return codec.stringify(target) if isinstance(target, dict | list) else target


def read_session(path: str | os.PathLike[str], *, blob_store: Any = None, omp: str | None = None,
                 usage: bool = False) -> Session:
    """Read a session file (never writes). Raises OSError subclasses for I/O problems only.

    A session archived by omp's ``gc --archive`` (``*.jsonl.gz``) reads as the plain file it was: it
    is decompressed, in pieces, into an unlinked temporary file (a damaged archive is a FormatError).
    ``usage``: as :func:`open_session`'s.
    """
    if os.fspath(path).endswith(".jsonl.gz"):
        return Session(scan_archived(os.fspath(path), usage=usage), os.fspath(path), blob_store, omp=omp)
    return Session(scan_file(path, usage=usage), os.fspath(path), blob_store, omp=omp)


def scan_archived(path: str, *, usage: bool = False) -> Journal:
    """The journal of a ``.jsonl.gz`` session as the plain file it was (FormatError when damaged)."""
    import gzip
    import shutil
    import tempfile
    import zlib

    from omp_session.errors import FormatError

    with tempfile.NamedTemporaryFile(prefix=".omp-session-", suffix=".jsonl", delete=False) as tmp:
        try:
            with gzip.open(path, "rb") as src:
                shutil.copyfileobj(src, tmp, 1 << 20)
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            os.unlink(tmp.name)
            raise FormatError(f"not a readable gzip archive ({e})", path=path) from None
        except BaseException:
            os.unlink(tmp.name)
            raise
    try:
        return scan_file(tmp.name, usage=usage)  # a large file's handle stays open: the data outlives the name
    finally:
        os.unlink(tmp.name)


def open_session(path: str | os.PathLike[str], *, blob_store: object = None, omp: str | None = None,
                 usage: bool = False) -> Session:
    """Read a session file, however damaged, into a :class:`Session`; never writes.

    Content problems become ``session.diagnostics``; only a file that cannot be read at all
    raises :class:`SessionFileError` (a one-line message naming the file). ``omp_session.open``.
    ``omp`` picks the omp release whose derivations we imitate ("18.2.3", "18.3", ...; default
    ``$OMP_SESSION_OMP`` or the newest we implement): see docs/compatibility.md. ``usage``: keep
    each assistant message's usage numbers while reading, so that the totals
    (:meth:`Session.get_usage_statistics`, and ``show``'s and the Markdown export's) read no
    entry again: about a tenth more work up front and 56 bytes per assistant message.
    """
    import errno

    from omp_session.errors import SessionFileError

    path = os.path.expanduser(os.fspath(path))
    if blob_store is None:
        from omp_session.format.blobs import BlobStore
        from omp_session.paths import blobs_dir

        blob_store = BlobStore(blobs_dir())
    try:
        return read_session(path, blob_store=blob_store, omp=omp, usage=usage)
    except IsADirectoryError:
        raise SessionFileError(path, "is a directory, not a session file") from None
    except FileNotFoundError:
        raise SessionFileError(path, "no such file") from None
    except PermissionError:
        raise SessionFileError(path, "permission denied") from None
    except OSError as e:
        raise SessionFileError(path, os.strerror(e.errno or errno.EIO)) from None
