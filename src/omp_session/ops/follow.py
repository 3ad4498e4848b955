"""Follow a live session file while omp writes to it (``omp-session tail -f``).

What omp does to a file it is running on (spec references), and how the follower notices it:

* Appends one serialized entry plus LF per write through an O_APPEND descriptor (S1.1.2, S8.2).
  Only the bytes after the last complete line already read are read again, and they are parsed
  with omp's lenient JSONL rules (S1.4.3, ``codec.parse_jsonl``).
* A final line without LF is a write in progress, or an append that failed and that omp is about
  to truncate back (S8.2). It is held back until its LF arrives, even if it already parses as
  JSON. Otherwise a prefix that happens to be complete JSON could not be told apart from a
  finished line. A line whose LF never arrives is damage (S1.4.9): omp glues its next append onto
  it and loses that append, so the follower does not guess either. ``pending_bytes`` says how
  much is being held back. ``initial()`` holds it back too, so the first entry the LF completes is
  reported as appended. (``omp_session.open`` keeps a complete unterminated final line, as omp's
  loader does, S1.4.3.)
* The leaf is the last record (S6.1). A record whose parent is not the current leaf moves the
  session to another branch (S6.2, S6.3; also concurrent writers, S8.6): ``BranchSwitch``.
* Whole-file rewrites write a temp file and rename it over the path (S8.4), so the path gets a
  new inode: ``Replaced``. The file is read again from scratch.
* Title changes append a ``title_change`` entry and then overwrite the 256-byte title slot at
  offset 0 in place: same inode, same size (S1.2.7, S8.9). The slot is compared on every poll:
  ``TitleChanged``.
* A file that shrank below what was read is read again from scratch: ``Truncated``. So is a file
  whose last bytes before the read offset (up to 64) changed while it grew or was touched. That
  is what a truncate-and-rewrite by some other tool leaves behind. Edits in place further back
  in the file are not looked for: no writer of session files makes them, and finding them would
  mean reading the whole file on every poll.
* A path that does not exist yet is waited for (``Created`` when it appears with a header
  record). A path deleted while followed gives ``Deleted``, then ``Replaced`` if it comes back.

Content never raises: malformed records omp would skip become ``Skipped`` events. An I/O error
other than a missing file becomes one ``Unreadable`` event, and the file is tried again on the
next poll.

The parse of appended bytes is exact when every record is on its own line, which is how omp
writes. A multi-line value that is still open at the end of the bytes read is reported as
skipped, while a whole-file read might accept it once later lines arrive.

Entries are the values as stored. Blob references (S8.8) are resolved only when a
``blob_store`` is given.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

from omp_session.errors import SessionFileError
from omp_session.format.blobs import BLOB_PREFIX, resolve_blob_refs
from omp_session.format.reader import scan_bytes
from omp_session.format.title import parse_title_slot
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session
from omp_session.model.tree import js_key, js_truthy

__all__ = [
    "Appended",
    "BranchSwitch",
    "Created",
    "Deleted",
    "Event",
    "Follower",
    "Reloaded",
    "Replaced",
    "Skipped",
    "TitleChanged",
    "Truncated",
    "Unreadable",
]

_ANCHOR = 64  # bytes before the read offset compared on each change, to see in-place rewrites


@dataclass(frozen=True, slots=True)
class Appended:
    """A new record that continues the current branch (its parent is the previous leaf)."""

    kind: ClassVar[str] = "appended"
    entry: Any


@dataclass(frozen=True, slots=True)
class BranchSwitch:
    """A new record moved the leaf off the current branch.

    ``entries`` lists the entries of the new branch after ``fork_id``, the last entry the two
    branches share (None when they share nothing). They are in root-to-leaf order and end with
    the new leaf.
    """

    kind: ClassVar[str] = "branch_switch"
    old_leaf: Any
    new_leaf: Any
    fork_id: Any
    entries: list[Any] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Reloaded:
    """The file was read again from scratch. ``entries`` holds the entries of the current branch
    after ``fork_id``, the last entry it shares with the branch followed before (compared by id,
    the only link between two versions of a file). ``branch_length`` counts the whole branch."""

    kind: ClassVar[str] = "reloaded"
    old_leaf: Any
    new_leaf: Any
    fork_id: Any
    entries: list[Any]
    branch_length: int


@dataclass(frozen=True, slots=True)
class Created(Reloaded):
    """The file appeared, or got its header record, after the follower started."""

    kind: ClassVar[str] = "created"


@dataclass(frozen=True, slots=True)
class Truncated(Reloaded):
    """The file shrank below what had been read, or the bytes just before the read offset changed."""

    kind: ClassVar[str] = "truncated"


@dataclass(frozen=True, slots=True)
class Replaced(Reloaded):
    """The path names another file (new inode): omp's atomic rewrite, or deleted and written again."""

    kind: ClassVar[str] = "replaced"


@dataclass(frozen=True, slots=True)
class TitleChanged:
    """The title slot was rewritten in place. ``None`` means no title (S1.2.6: an empty slot title
    removes the header's title)."""

    kind: ClassVar[str] = "title_changed"
    old: str | None
    new: str | None


@dataclass(frozen=True, slots=True)
class Deleted:
    """The path no longer exists. The follower keeps waiting for it."""

    kind: ClassVar[str] = "deleted"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A malformed record that omp's reader skips too (S1.4.3). ``offset`` is a byte offset into the file."""

    kind: ClassVar[str] = "skipped"
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class Unreadable:
    """The file could not be read (not a missing file). It is tried again on the next poll."""

    kind: ClassVar[str] = "unreadable"
    reason: str


Event = Appended | BranchSwitch | Reloaded | TitleChanged | Deleted | Skipped | Unreadable


class Follower:
    """Incremental reader of one session file path.

    Call ``initial()`` once for the current branch, then ``poll()`` as often as wanted. A poll
    that sees no change costs one open, one fstat and, for a file with a title slot, one
    256-byte read. ``events()`` runs the polling loop.
    """

    def __init__(self, path: str | os.PathLike[str], *, blob_store: Any = None) -> None:
        self.path = os.path.expanduser(os.fspath(path))
        self.blob_store = blob_store
        self.title: str | None = None
        self._session: Session | None = None
        self._branch: list[int] = []  # entry indices root -> leaf
        self._offset = 0  # just after the last complete line taken
        self._size = 0  # the file's size at the last poll
        self._anchor_start = 0
        self._anchor = b""
        self._head = b""  # BOM + title slot line with its LF, when the file has a slot
        self._ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read
        self._stamp: tuple[int, int] | None = None  # (size, mtime_ns) at the last poll
        self._missing = False
        self._started = False
        self._error: str | None = None

    # ----- state ---------------------------------------------------------------------------

    @property
    def session(self) -> Session | None:
        """Everything read so far, with appended entries added. None before a header record exists."""
        return self._session

    @property
    def leaf_id(self) -> Any:
        return None if self._session is None else self._session.get_leaf_id()

    @property
    def branch(self) -> list[Any]:
        """The entries of the current branch, root to leaf."""
        s = self._session
        return [] if s is None else [s.entry_at(i) for i in self._branch]

    @property
    def pending_bytes(self) -> int:
        """Bytes after the last LF at the last poll, held back until their line is complete."""
        return max(self._size - self._offset, 0)

    @property
    def offset(self) -> int:
        """Byte offset just after the last complete line read."""
        return self._offset

    # ----- reading -------------------------------------------------------------------------

    def initial(self) -> list[Any]:
        """Read the file and return the entries of its current branch, root to leaf.

        A missing file (or one without a complete header line yet) gives ``[]``, and the
        follower waits for it. Raises :class:`SessionFileError` only when the path exists but
        cannot be read at all (a directory, no permission).
        """
        self._started = True
        try:
            with open(self.path, "rb") as f:
                self._load(f)
        except FileNotFoundError:
            self._missing = True
            return []
        except IsADirectoryError:
            raise SessionFileError(self.path, "is a directory, not a session file") from None
        except PermissionError:
            raise SessionFileError(self.path, "permission denied") from None
        except OSError as e:
            raise SessionFileError(self.path, os.strerror(e.errno or 5)) from None
        return self.branch

    def poll(self) -> list[Event]:
        """What changed since the last call (or since ``initial()``). Never raises for content or I/O."""
        if not self._started:
            self.initial()
            return []
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - closed below, whatever path is taken
        except FileNotFoundError:
            if self._ident is not None and not self._missing:
                self._missing = True
                return [Deleted()]
            self._missing = True
            return []
        except OSError as e:
            return self._unreadable(e)
        try:
            with f:
                events = self._poll_open(f)
        except FileNotFoundError:  # deleted between open and read: seen on the next poll
            return []
        except OSError as e:
            return self._unreadable(e)
        self._error = None
        return events

    def events(self, interval: float = 0.5, *, max_polls: int | None = None,
               sleep: Callable[[float], None] = time.sleep) -> Iterator[Event]:
        """Poll every ``interval`` seconds (sleeping first) and yield each event. Stops after
        ``max_polls`` polls when given. Call ``initial()`` first."""
        polls = 0
        while max_polls is None or polls < max_polls:
            sleep(interval)
            polls += 1
            yield from self.poll()

    # ----- internals -----------------------------------------------------------------------

    def _unreadable(self, e: OSError) -> list[Event]:
        reason = os.strerror(e.errno) if e.errno else str(e)
        if reason == self._error:
            return []
        self._error = reason
        return [Unreadable(reason)]

    def _poll_open(self, f: IO[bytes]) -> list[Event]:
        fd = f.fileno()
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        stamp = (st.st_size, st.st_mtime_ns)
        if self._session is None:  # nothing with a header read yet
            if ident == self._ident and stamp == self._stamp and not self._missing:
                return []
            self._missing = False
            return self._reload(f, Created)
        if self._missing or ident != self._ident:
            self._missing = False
            return self._reload(f, Replaced)
        size = st.st_size
        if size < self._offset:
            return self._reload(f, Truncated)
        events: list[Event] = []
        if stamp != self._stamp:
            start = self._anchor_start
            data = os.pread(fd, size - start, start)
            if not data.startswith(self._anchor):
                return self._reload(f, Truncated)
            new = data[len(self._anchor):]
            cut = new.rfind(b"\n") + 1
            if cut:
                events.extend(self._take(new[:cut]))
                self._set_offset(self._offset + cut, data[: len(self._anchor) + cut])
            self._size = start + len(data)
            self._stamp = stamp
        if self._head:
            head = os.pread(fd, len(self._head), 0)
            if head != self._head:
                changed = self._title_from(head)
                if changed is None:  # not a slot of the same width: more than the slot was written
                    return self._reload(f, Truncated)
                events.append(changed)
        return events

    def _title_from(self, head: bytes) -> TitleChanged | None:
        bom = 3 if head.startswith(b"\xef\xbb\xbf") else 0
        if len(head) != len(self._head) or not head.endswith(b"\n") or b"\n" in head[bom:-1]:
            return None
        slot = parse_title_slot(head[bom:-1])
        if slot is None:
            return None
        self._head = head
        old, self.title = self.title, slot.title or None
        return TitleChanged(old, self.title)

    def _set_offset(self, offset: int, tail: bytes) -> None:
        """Move the read offset. ``tail`` holds the file's bytes just before ``offset``."""
        self._offset = offset
        start = max(len(self._head), offset - _ANCHOR)
        keep = tail[len(tail) - (offset - start):] if offset > start else b""
        self._anchor_start, self._anchor = offset - len(keep), keep

    def _load(self, f: IO[bytes]) -> None:
        """Read the whole file into a fresh state (no events)."""
        st = os.fstat(f.fileno())
        f.seek(0)
        data = f.read()
        if self._session is not None:
            self._session.close()
        self._ident = (st.st_dev, st.st_ino)
        self._stamp = (st.st_size, st.st_mtime_ns)
        self._size = len(data)
        self._missing = False
        cut = data.rfind(b"\n") + 1
        journal = scan_bytes(data[:cut])
        if len(journal) == 0:  # no header record yet: wait for more
            self._session, self._branch, self._head, self.title = None, [], b"", None
            self._offset, self._anchor_start, self._anchor = 0, 0, b""
            return
        s = Session(journal, self.path, self.blob_store)
        _ = s.index  # built once; append_entry keeps it current, so lookups stay O(1)
        self._session = s
        self._branch = list(s.branch_indices())
        self._head = data[: journal.body_start] if journal.slot is not None else b""
        self.title = s.get_session_name()
        self._offset = 0
        self._set_offset(cut, data[:cut])

    def _reload(self, f: IO[bytes], kind: type[Reloaded]) -> list[Event]:
        old = self._session
        old_ids = [old.ids[i] for i in self._branch] if old is not None else []
        old_leaf, old_title = self.leaf_id, self.title
        self._load(f)
        s = self._session
        if s is None:
            if kind is Created:
                return []
            return [kind(old_leaf, None, None, [], 0)]
        new = self._branch
        shared = 0
        if kind is not Created:
            ids = s.ids
            for a, i in zip(old_ids, new, strict=False):
                if not js_truthy(a) or js_key(a) != js_key(ids[i]):
                    break
                shared += 1
        fork = s.ids[new[shared - 1]] if shared else None
        events: list[Event] = [kind(old_leaf, s.get_leaf_id(), fork, [s.entry_at(i) for i in new[shared:]],
                                    len(new))]
        if kind is not Created and self.title != old_title:
            events.append(TitleChanged(old_title, self.title))
        return events

    def _take(self, chunk: bytes) -> list[Event]:
        """Events for ``chunk``: whole lines that start at the read offset."""
        text = chunk.decode("utf-8", "replace")
        records, malformed = codec.parse_jsonl(text)
        positions: list[tuple[int, Event]] = []
        base = self._offset
        for start, end in malformed:
            at = base + len(text[:start].encode("utf-8", "surrogatepass"))
            positions.append((start, Skipped(at, len(text[start:end].encode("utf-8", "surrogatepass")))))
        for value, start, end in records:
            if self.blob_store is not None and BLOB_PREFIX in text[start:end]:
                value = resolve_blob_refs(value, self.blob_store)
            positions.append((start, self._add(value)))
        positions.sort(key=lambda p: p[0])
        return [event for _, event in positions]

    def _add(self, entry: Any) -> Event:
        s = self._session
        assert s is not None
        old_leaf = s.get_leaf_id()
        branch = self._branch
        if branch and isinstance(entry, dict) and self._continues(s, branch, entry):
            branch.append(s.append_entry(entry, new_id=True))
            return Appended(entry)
        s.append_entry(entry)
        new = list(s.branch_indices())
        shared = _shared_prefix(branch, new)
        self._branch = new
        if shared == len(branch) and len(new) == shared + 1:
            return Appended(entry)
        fork = s.ids[new[shared - 1]] if shared else None
        return BranchSwitch(old_leaf, s.get_leaf_id(), fork, [s.entry_at(i) for i in new[shared:]])

    @staticmethod
    def _continues(s: Session, branch: list[int], entry: dict[str, Any]) -> bool:
        """Whether ``entry`` just extends the branch: its parent resolves to the leaf and its
        fresh id cannot change how any parentId on the branch resolves (S6.3)."""
        new_id = entry.get("id", UNDEFINED)
        parent = entry.get("parentId", UNDEFINED)
        if type(new_id) is not str or not new_id or s.index_of(new_id) is not None:
            return False
        if not js_truthy(parent) or s.index_of(parent) != branch[-1]:
            return False
        root_parent = s.parent_ids[branch[0]]
        return not (type(root_parent) is str and root_parent == new_id)


def _shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
