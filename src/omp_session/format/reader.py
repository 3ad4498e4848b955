"""Lenient, total reading of a session file's bytes into records (spec S1.4, S1.5).

One pass over the bytes records where every logical record starts and ends and its envelope
(``type``, ``id``, ``parentId``); values are decoded only when asked for, by reading their
bytes again. The file is read in chunks, never whole, so memory stays proportional to what is
asked for. A clean chunk is validated by msgspec in one call (JSON syntax checked, only the
envelope materialised); a chunk that is not plainly one object per line goes through the exact
path that reproduces Bun's ``JSONL.parseChunk`` loop as omp drives it.
"""

from __future__ import annotations

import operator
import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, BinaryIO

import msgspec
import orjson

from omp_session.errors import JSONSyntaxError, SessionFileError
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED

from . import usage_numbers
from .gc_pause import gc_paused
from .split import pieces_of, scan_in_two
from .title import TitleSlot, parse_title_slot
from .utf8 import is_utf8

__all__ = ["STREAMING_THRESHOLD", "Journal", "MalformedSpan", "MessageHead", "gc_paused", "scan_bytes", "scan_file"]

STREAMING_THRESHOLD = 8 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1024 * 1024  # small enough that the buffer stays in cache while msgspec reads it
_IN_MEMORY = 8 * 1024 * 1024  # smaller files are read whole: one read beats many preads
_WINDOW = 64 * 1024
_BLOB_MARK = b"blob:sha256:"
_PREADV: Any = getattr(os, "preadv", None)
_NOT_DECODED: Any = object()
_NO_ID: Any = object()  # "the record before the first of a chunk": never the same object as a parentId
_JS_TRIM = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
_TRAILING_WS = (13, 32, 9)  # CR, space, tab: allowed after a value on its line


class MessageHead(msgspec.Struct, frozen=True):
    """The message fields read on every path entry: shared between records, compared by value."""

    role: Any = UNDEFINED
    provider: Any = UNDEFINED
    model: Any = UNDEFINED
    # a tool result's: the one kind of tool result omp's usage sum reads is the "task" tool's
    toolName: Any = UNDEFINED  # the JSON key, as msgspec decodes it


class _Envelope(msgspec.Struct):
    type: Any = UNDEFINED
    id: Any = UNDEFINED
    parentId: Any = UNDEFINED
    # the few message fields context building reads on every path entry (S7.3)
    message: MessageHead = UNDEFINED  # type: ignore[assignment]  # absent stays UNDEFINED


_DECODER = msgspec.json.Decoder(_Envelope)


class _MessageAndUsage(msgspec.Struct):
    """A :class:`MessageHead`'s fields and the usage object's bytes (a scan that keeps usage)."""

    role: Any = UNDEFINED
    provider: Any = UNDEFINED
    model: Any = UNDEFINED
    toolName: Any = UNDEFINED
    usage: msgspec.Raw = usage_numbers.ABSENT


class _EnvelopeAndUsage(msgspec.Struct):
    type: Any = UNDEFINED
    id: Any = UNDEFINED
    parentId: Any = UNDEFINED
    message: _MessageAndUsage = UNDEFINED  # type: ignore[assignment]


_USAGE_DECODER = msgspec.json.Decoder(_EnvelopeAndUsage)
_INTERN: dict[Any, Any] = {}


_HEADS: dict[Any, Any] = {}


def _head_of(message: Any) -> Any:
    """(role, provider, model, toolName) of a message, shared between records; None if not an object."""
    if isinstance(message, MessageHead):
        key: Any = message
    elif isinstance(message, dict):
        key = MessageHead(message.get("role", UNDEFINED), message.get("provider", UNDEFINED),
                          message.get("model", UNDEFINED), message.get("toolName", UNDEFINED))
    else:
        return None
    try:
        return _HEADS.setdefault(key, key)
    except TypeError:  # an unhashable role/provider/model: keep it unshared
        return key


def head_of_message(message: Any) -> Any:
    """The (role, provider, model) head of a message object (shared when hashable), or None."""
    return _head_of(message)


def is_shared_head(head: Any) -> bool:
    return _is_shared(head)


def _is_shared(head: Any) -> bool:
    try:
        return _HEADS.get(head) is head
    except TypeError:
        return False


def _is_copilot(head: Any) -> bool:
    return isinstance(head, MessageHead) and head.role == "assistant" and head.provider == "github-copilot"


def shared_heads() -> list[Any]:
    """Every shared message head: when a journal has no loose heads, each of its heads is one of these or None."""
    return list(_HEADS.values())


def copilot_records(j: Journal) -> list[int]:
    """Records whose message is a GitHub Copilot assistant's, in file order: the only ones whose
    replay metadata omp strips on open (S4.8). Shared heads are few, so the column is searched
    per matching head at C speed rather than walked record by record."""
    heads = j.heads
    if j.loose_heads:
        return [i for i, h in enumerate(heads) if _is_copilot(h)]
    found: set[int] = set()
    for head in [h for h in shared_heads() if _is_copilot(h)]:
        i = _find(heads, head, 0)
        while i >= 0:
            found.add(i)
            i = _find(heads, head, i + 1)
    return sorted(found)


def _find(items: list[Any], item: Any, start: int) -> int:
    try:
        return items.index(item, start)
    except ValueError:
        return -1


def head_of_fields(role: Any, provider: Any, model: Any, tool_name: Any = UNDEFINED) -> Any:
    return _head_of(MessageHead(role, provider, model, tool_name))


def intern_types(values: list[Any]) -> list[Any]:
    """Share equal type strings between records (a few distinct values, one per record)."""
    try:
        intern = _INTERN.setdefault
        return [intern(t, t) for t in values]
    except TypeError:  # an unhashable type value
        return [_intern(t) for t in values]


def _intern(value: Any) -> Any:
    if type(value) is not str or len(value) > 40:
        return value
    return _INTERN.setdefault(value, value)


class _Source:
    """Random access to the file's bytes: in memory for small files, ``pread`` for large ones."""

    def __init__(self, data: bytes | None = None, handle: BinaryIO | None = None, size: int = 0) -> None:
        self._data = data
        self._handle = handle
        self.size = len(data) if data is not None else size
        self._path: str | None = None
        self._identity: tuple[int, int] | None = None
        if handle is not None:
            st = os.fstat(handle.fileno())
            self._path, self._identity = os.fsdecode(handle.name), (st.st_dev, st.st_ino)

    def _fd(self) -> int:
        """The file's descriptor; after :meth:`close`, the file opened again (omp's manager stays
        usable after its close, and a session reads its big file as asked), unless it is no longer
        the file read (renamed over, as omp rewrites it, or cut shorter)."""
        if self._handle is not None:
            return self._handle.fileno()
        if self._path is None:
            raise SessionFileError("<session>", "the session was closed")
        handle = open(self._path, "rb")  # noqa: SIM115 - kept, as the first one was
        st = os.fstat(handle.fileno())
        if (st.st_dev, st.st_ino) != self._identity or st.st_size < self.size:
            handle.close()
            raise SessionFileError(self._path, "the session was closed and its file replaced since: open it again")
        self._handle = handle
        return handle.fileno()

    def read(self, start: int, end: int) -> bytes:
        end = min(end, self.size)
        if start >= end:
            return b""
        if self._data is not None:
            return self._data[start:end]
        return os.pread(self._fd(), end - start, start)

    @property
    def in_memory(self) -> bool:
        return self._data is not None

    @property
    def can_read_into(self) -> bool:
        return self._data is None and _PREADV is not None

    def read_into(self, buf: bytearray, start: int, length: int) -> int:
        """Read ``length`` bytes at ``start`` into the front of ``buf``; returns how many were read."""
        assert _PREADV is not None
        return int(_PREADV(self._fd(), [memoryview(buf)[:length]], start))

    def find(self, sub: bytes, start: int, end: int | None = None) -> int:
        """Offset of ``sub`` in [start, end), reading a window at a time."""
        end = self.size if end is None else min(end, self.size)
        if self._data is not None:
            return self._data.find(sub, start, end)
        step, overlap = _WINDOW, len(sub) - 1
        pos = start
        while pos < end:
            block = self.read(pos, min(end, pos + step))
            at = block.find(sub)
            if at >= 0:
                return pos + at
            if pos + len(block) >= end:
                return -1
            pos += len(block) - overlap
            step = min(step * 2, _CHUNK)
        return -1

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


@dataclass(slots=True)
class MalformedSpan:
    """A span omp skips as one malformed record (byte offsets into the file)."""

    start: int
    end: int


@dataclass(slots=True)
class Journal:
    """Where every record of a file is, and its envelope. Index 0 is the first logical record."""

    source: _Source
    size: int
    bom: bool = False
    slot: TitleSlot | None = None
    body_start: int = 0
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    # ids/parents/types have one row per record until a Session takes them over and drops the
    # header's row (then row k is entry k, i.e. record k + 1)
    types: list[Any] = field(default_factory=list)
    ids: list[Any] = field(default_factory=list)
    parents: list[Any] = field(default_factory=list)
    heads: list[Any] = field(default_factory=list)  # a message head (role, provider, model) or None
    # per record, 1 when its parentId is the previous record's id string (0 says nothing)
    linear: bytearray = field(default_factory=bytearray)
    values: dict[int, Any] = field(default_factory=dict)
    malformed: list[MalformedSpan] = field(default_factory=list)
    blob_offsets: list[int] = field(default_factory=list)
    # a message head could not be shared (an unhashable role/provider/model)
    loose_heads: bool = False
    invalid_utf8: bool = False
    source_size: int = 0
    streaming: bool = False
    final_newline: bool = True
    _lfs: array[int] | None = None
    _lfs_end: int = 0  # the line feeds before this offset are in _lfs
    # called with (index, raw bytes, value) when a record is first decoded; returns the value to keep
    decode_hook: Callable[[int, bytes, Any], Any] | None = None
    # a scan asked to keep usage (scan_file(usage=True)): the records whose bytes are an assistant
    # message with a plain usage (format/usage_numbers.py), ascending, and its six numbers each
    usage_records: array[int] | None = None
    usage_numbers: array[float] = field(default_factory=lambda: array("d"))

    def __len__(self) -> int:
        return len(self.starts)

    def read(self, start: int, end: int) -> bytes:
        return self.source.read(start, end)

    def start(self, i: int) -> int:
        """Byte offset where record ``i`` starts."""
        return self.starts[i]

    def end(self, i: int) -> int:
        """Byte offset just after record ``i`` (trailing whitespace excluded)."""
        return self.ends[i]

    def raw(self, i: int) -> bytes:
        return self.source.read(self.start(i), self.end(i))

    def raw_in_order(self) -> Callable[[int], bytes]:
        """:meth:`raw` for records asked for in file order (usage sums read every assistant's):
        a window of the file read at once serves the records in it, where a ``pread`` each cost
        more than the bytes."""
        return self.raw if self.source.in_memory else _InOrder(self)

    def value(self, i: int) -> Any:
        value = self.values.get(i, _NOT_DECODED)
        if value is _NOT_DECODED:
            raw = self.raw(i)
            value = decode_record(raw)
            if self.decode_hook is not None:
                value = self.decode_hook(i, raw, value)
            self.values[i] = value
        return value

    def is_decoded(self, i: int) -> bool:
        return i in self.values

    def peek(self, i: int, raw: bytes | None = None,
             hook: Callable[[int, bytes, Any], Any] | None = None) -> Any:
        """Record ``i`` as :meth:`value` gives it, without keeping it decoded (one pass over a big
        file in bounded memory); a record decoded before, or changed in memory, is the kept one.
        ``raw``: the record's bytes, when the caller has read them already; ``hook``: in place of
        :attr:`decode_hook`, for a pass that needs less of it."""
        value = self.values.get(i, _NOT_DECODED)
        if value is _NOT_DECODED:
            if raw is None:
                raw = self.raw(i)
            value = decode_record(raw)
            hook = hook or self.decode_hook
            if hook is not None:
                value = hook(i, raw, value)
        return value

    def peek_in_order(self, hook: Callable[[int, bytes, Any], Any] | None = None) -> Callable[[int], Any]:
        """:meth:`peek` for records asked for mostly in file order, their bytes read a window at a
        time (see :meth:`raw_in_order`)."""
        raw_of, values, loads = self.raw_in_order(), self.values, orjson.loads

        def peek(i: int) -> Any:
            # (:meth:`peek` written out: a pass over a big file makes this call for every record)
            value = values.get(i, _NOT_DECODED)  # (a kept record's bytes are not read)
            if value is not _NOT_DECODED:
                return value
            raw = raw_of(i)
            try:
                value = loads(raw)
            except orjson.JSONDecodeError:
                value = decode_record(raw)
            decoded = hook or self.decode_hook
            return value if decoded is None else decoded(i, raw, value)

        return peek

    def runs(self, first: int, end: int, limit: int = _CHUNK) -> Iterator[tuple[int, int]]:
        """Records ``first``..``end - 1`` in order as runs ``(i, b)``: records ``i``..``b`` each one
        byte (its line's LF) after the previous, spanning less than ``limit`` bytes (one is always
        taken). Such a run is plain JSON lines, read and decoded at once."""
        starts, ends = self.starts, self.ends
        i = first
        while i < end:
            b = i
            start = starts[i]
            while b + 1 < end and starts[b + 1] == ends[b] + 1 and ends[b + 1] - start < limit:
                b += 1
            yield i, b
            i = b + 1

    def entry_pieces(self, entries: Sequence[int], limit: int = 1 << 20) -> list[tuple[int, int]]:
        """``entries`` (entry k is record k + 1) cut into pieces of about ``limit`` bytes as stored,
        for :func:`~omp_session.format.split.interleaved`; an entry that is no record of the file
        (made by a migration or an edit) counts one byte."""
        starts, ends = self.starts, self.ends
        last = len(starts) - 1
        sizes: Iterable[int]
        if isinstance(entries, range) and entries.step == 1 and entries.start >= 0 and entries.stop <= last:
            sizes = map(operator.sub, ends[entries.start + 1:entries.stop + 1],
                        starts[entries.start + 1:entries.stop + 1])
        else:
            sizes = [ends[k + 1] - starts[k + 1] if k < last else 1 for k in entries]
        return pieces_of(len(entries), sizes, limit)

    def blob_records(self) -> set[int]:
        """The records the scan found a blob reference in. A record holding one but not among them
        was decoded by the scan (it is in :attr:`values`): the chunks it searched hold the others."""
        return {i for i in map(self.record_at, self.blob_offsets) if i is not None}

    def record_at(self, offset: int) -> int | None:
        """Index of the record whose bytes hold ``offset``."""
        i = bisect_right(self.starts, offset) - 1
        return i if i >= 0 and offset < self.ends[i] else None

    def line_of(self, offset: int) -> int:
        """1-based physical line holding byte ``offset``."""
        # the line feeds are found as far as asked: a finding near the start (the header's, the
        # title slot's) reads a block, not the whole file
        if self._lfs is None:
            self._lfs = array("q")
        lfs, pos = self._lfs, self._lfs_end
        while pos < offset and pos < self.size:
            block = self.source.read(pos, pos + _CHUNK)
            if not block:
                break
            at = block.find(b"\n")
            while at >= 0:
                lfs.append(pos + at)
                at = block.find(b"\n", at + 1)
            pos += len(block)
        self._lfs_end = pos
        return bisect_left(lfs, offset) + 1

    def record_lines(self) -> array[int]:
        """The 1-based physical line each record starts on: :meth:`line_of` of every start, from the
        gaps between records. A record starts a line of its own and holds no line feed unless the
        scan decoded it itself (a value spanning lines is kept in :attr:`values`), so a gap of one
        byte is the one line feed: only longer gaps, and the records in :attr:`values`, are read.
        (A record added in memory starts where the file ends, maybe after no line feed at all.)"""
        starts, ends = self.starts, self.ends
        n = bisect_left(starts, self.size)  # the records of the file, in file order
        if not n:
            return array("q", [self.line_of(start) for start in starts])
        feeds = list(map(operator.sub, starts[1:n], ends[:n - 1]))  # the gap after each record
        if feeds.count(1) != len(feeds):
            for k in [k for k, gap in enumerate(feeds) if gap != 1]:
                feeds[k] = self.read(ends[k], starts[k + 1]).count(b"\n")
        for k in self.values:
            if k < n - 1:
                feeds[k] += self.read(starts[k], ends[k]).count(b"\n")
        lines = array("q", accumulate(feeds, initial=self.read(0, starts[0]).count(b"\n") + 1))
        lines.extend(self.line_of(start) for start in starts[n:])
        return lines

    def close(self) -> None:
        self.source.close()


def decode_record(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        with gc_paused():
            return codec.loads(raw.decode("utf-8", "replace"))


def _envelope_of(value: Any) -> tuple[Any, Any, Any]:
    if isinstance(value, dict):
        return (_intern(value.get("type", UNDEFINED)), value.get("id", UNDEFINED),
                value.get("parentId", UNDEFINED))
    return UNDEFINED, UNDEFINED, UNDEFINED


def scan_file(path: str | os.PathLike[str], *, usage: bool = False) -> Journal:
    """Scan a file. Raises OSError for I/O problems (missing, directory, unreadable). ``usage``:
    keep the plain usage numbers of assistant messages as they pass (``Journal.usage_records``),
    for a caller that sums them (a little more work and memory than the scan alone)."""
    handle = open(path, "rb")  # noqa: SIM115 - a large file's handle lives as long as the Journal
    try:
        size = os.fstat(handle.fileno()).st_size
        if size < _IN_MEMORY:
            data = handle.read()
            handle.close()
            return scan_bytes(data, usage=usage)
        return _scan(_Source(handle=handle, size=size), usage)
    except BaseException:
        handle.close()
        raise


def scan_bytes(data: bytes, *, usage: bool = False) -> Journal:
    return _scan(_Source(data=bytes(data)), usage)


def _scan(src: _Source, usage: bool = False) -> Journal:
    size = src.size
    j = Journal(source=src, size=size, streaming=size >= STREAMING_THRESHOLD,
                usage_records=array("q") if usage else None)
    j.final_newline = size == 0 or src.read(size - 1, size) == b"\n"
    pos = 0
    if src.read(0, 3) == _BOM:
        j.bom = True
        pos = 3
    first_lf = src.find(b"\n", pos)
    if first_lf >= 0:
        slot = parse_title_slot(src.read(pos, first_lf))
        if slot is not None:
            j.slot = slot
            pos = first_lf + 1
    j.body_start = pos
    if not scan_in_two(j, pos, _TWO_HALVES, size=size, source=src):
        _scan_body(j, pos)
    _measure_source(j)
    return j


def _measure_source(j: Journal) -> None:
    """omp's idea of the file size: the decoded text's UTF-8 length below 8 MiB (S1.4.8)."""
    if j.streaming:
        j.source_size = j.size
        return
    data = j.source.read(0, j.size)
    if is_utf8(data):
        j.source_size = j.size - (3 if j.bom else 0)
    else:
        j.invalid_utf8 = True
        text = data.decode("utf-8", "replace")
        j.source_size = len(text.encode("utf-8", "surrogatepass")) - (3 if j.bom else 0)


def _scan_body(j: Journal, pos: int, end: int | None = None) -> int:
    """Scan records from ``pos`` up to ``end`` (a line start, default the end of the file).

    Returns where scanning stopped: ``end``, or later when a value spanning lines crossed it.
    """
    src, n = j.source, j.size
    stop = n if end is None else end
    # One buffer for every chunk of a file: no fresh pages to fault in and zero per chunk.
    buf = bytearray(min(_CHUNK, stop - pos)) if src.can_read_into and pos < stop else None
    while pos < stop:
        want = min(_CHUNK, stop - pos)
        chunk: bytes | bytearray
        if buf is not None and want <= len(buf):
            chunk, size = buf, src.read_into(buf, pos, want)
        else:
            chunk = src.read(pos, pos + want)
            size = len(chunk)
        limit = size
        if pos + size < stop:
            cut = chunk.rfind(b"\n", 0, size)
            if cut < 0:  # a line longer than a chunk
                chunk = bytes(chunk[:size])
                while cut < 0 and pos + len(chunk) < stop:
                    chunk += src.read(pos + len(chunk), min(pos + 2 * len(chunk), stop))
                    cut = chunk.rfind(b"\n")
                size = len(chunk)
            limit = size if cut < 0 else cut + 1
        _add_blob_marks(j, chunk, pos, limit)
        if _clean_chunk(j, chunk, limit, pos) or _fast_chunk(j, chunk, limit, pos):
            pos += limit
        else:
            end = pos + limit
            pos = _slow_chunk(j, bytes(chunk[:limit]), pos)
            if pos > end:  # a value ran past the chunk (both ends are line starts)
                _find_blob_marks(j, end, pos)
    return pos


def _add_blob_marks(j: Journal, block: bytes | bytearray, base: int, limit: int) -> None:
    """Add the blob references in ``block[:limit]`` (file offset ``base``) to ``j.blob_offsets``."""
    at = block.find(_BLOB_MARK, 0, limit)
    while at >= 0:
        j.blob_offsets.append(base + at)
        at = block.find(_BLOB_MARK, at + 1, limit)


def _find_blob_marks(j: Journal, start: int, end: int) -> None:
    """Add the blob references in bytes ``start``..``end`` (a block at a time) to ``j.blob_offsets``."""
    overlap = len(_BLOB_MARK) - 1
    at = start
    while at < end:
        stop = min(end, at + _CHUNK)
        block = j.source.read(at, stop)
        _add_blob_marks(j, block, at, len(block))
        at = stop if stop == end else stop - overlap  # (a mark across two blocks is found in the next)


def _clean_chunk(j: Journal, chunk: bytes | bytearray, limit: int, base: int) -> bool:
    """The common case: every line of ``chunk[:limit]`` is exactly ``{...}`` + LF (checked line
    by line with memchr).

    Then a value cannot span lines, so as many values as lines means one value per line.
    """
    if not limit or chunk[limit - 1] != 10:
        return False
    starts: list[int] = []
    ends: list[int] = []
    add_start, add_end = starts.append, ends.append
    find = chunk.find
    p = 0
    while p < limit:
        e = find(b"\n", p, limit)
        if chunk[p] != 123 or chunk[e - 1] != 125 or e == p:
            return False
        add_start(base + p)
        add_end(base + e)
        p = e + 1
    return _take(j, chunk, limit, starts, ends)


def _take(j: Journal, chunk: bytes | bytearray, limit: int, starts: list[int], ends: list[int]) -> bool:
    """Validate ``chunk[:limit]`` in one msgspec call and keep its records if there is one per line."""
    decoder: Any = _DECODER if j.usage_records is None else _USAGE_DECODER
    try:
        envs = decoder.decode_lines(chunk if limit == len(chunk) else memoryview(chunk)[:limit])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # too deep for msgspec
        return False
    if len(envs) != len(starts):
        return False
    if j.usage_records is not None:
        _keep_usage(j, envs, len(j.starts))
    j.starts.extend(starts)
    j.ends.extend(ends)
    _add_envelopes(j, envs)
    return True


def _keep_usage(j: Journal, envs: list[Any], first: int) -> None:
    """Keep the usage numbers of the assistant messages among ``envs`` (records ``first``...; read
    now: they point into a buffer the next chunk reuses) and make each message a :class:`MessageHead`."""
    records, numbers, plain = j.usage_records, j.usage_numbers, usage_numbers.plain_numbers
    assert records is not None
    for n, e in enumerate(envs):
        m = e.message
        if m is UNDEFINED:
            continue
        e.message = MessageHead(m.role, m.provider, m.model, m.toolName)
        if m.usage is not usage_numbers.ABSENT and m.role == "assistant" and e.type == "message":
            found = plain(m.usage)
            if found is not None:
                records.append(first + n)
                numbers.extend(found)


def _add_envelopes(j: Journal, envs: list[_Envelope]) -> None:
    j.types.extend(intern_types([e.type for e in envs]))
    ids = [e.id for e in envs]
    j.ids.extend(ids)
    parents = [e.parentId for e in envs]
    try:
        # a parentId almost always names a record of the same chunk: share that id's string
        get = dict(zip(ids, ids, strict=True)).get
        parents = [get(p, p) for p in parents]
    except TypeError:  # an unhashable id or parentId
        pass
    j.parents.extend(parents)
    # 1 where the parentId is (the very string of) the previous record's id: the usual chain
    j.linear.extend(map(operator.is_, parents, [_NO_ID, *ids[:-1]]))
    heads = _HEADS.setdefault
    try:
        messages: list[Any] = [e.message for e in envs]
        j.heads.extend([None if m is UNDEFINED else heads(m, m) for m in messages])
    except TypeError:  # an unhashable role/provider/model
        j.heads.extend([_head_of(e.message) for e in envs])
        j.loose_heads = True


def _fast_chunk(j: Journal, chunk: bytes | bytearray, limit: int, base: int) -> bool:
    """Take ``chunk[:limit]`` when its every non-blank line is one object, validated in one msgspec call.

    A line that starts with ``{`` and ends with ``}`` cannot be part of a value spanning lines;
    with that, "as many values as lines" means exactly one value per line, as omp reads it.
    """
    find = chunk.find
    line_starts: list[int] = []
    line_ends: list[int] = []
    add_start, add_end = line_starts.append, line_ends.append
    p, m = 0, limit
    while p < m:
        e = find(b"\n", p, m)
        if e < 0:
            e = m
        if chunk[e - 1] == 125 and chunk[p] == 123 and e > p:  # the usual line: {...}
            add_start(base + p)
            add_end(base + e)
        else:
            q = e
            while q > p and chunk[q - 1] in _TRAILING_WS:
                q -= 1
            if q > p:
                if chunk[p] != 123 or chunk[q - 1] != 125:
                    return False
                add_start(base + p)
                add_end(base + q)
        p = e + 1
    return not line_starts or _take(j, chunk, limit, line_starts, line_ends)


def _add(j: Journal, start: int, end: int, value: Any) -> None:
    j.starts.append(start)
    j.ends.append(end)
    t, i, p = _envelope_of(value)
    j.types.append(t)
    j.ids.append(i)
    j.parents.append(p)
    j.linear.append(0)
    head = _head_of(value.get("message")) if isinstance(value, dict) and "message" in value else None
    j.heads.append(head)
    if head is not None and not j.loose_heads and not _is_shared(head):
        j.loose_heads = True
    j.values[len(j.starts) - 1] = value


def _is_blank_js(raw: bytes) -> bool:
    return not raw.decode("utf-8", "replace").strip(_JS_TRIM)


def _slow_chunk(j: Journal, chunk: bytes, base: int) -> int:
    """Exact per-line handling of a chunk; returns where the next chunk begins.

    A value that spans lines may carry the position past the chunk.
    """
    p, m = 0, len(chunk)
    while p < m:
        e = chunk.find(b"\n", p)
        line_end = m if e < 0 else e
        line = chunk[p:line_end]
        if not line.strip(b" \t\r"):
            p = line_end + 1
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            resume = _parse_exact(j, base + p)
            if resume >= base + m:
                return resume
            p = resume - base
            continue
        q = line_end
        while q > p and chunk[q - 1] in _TRAILING_WS:
            q -= 1
        _add(j, base + p, base + q, value)
        p = line_end + 1
    return base + m


def _byte_offset(block: bytes, text: str, k: int) -> int:
    """Where text offset ``k`` of ``block.decode("utf-8", "replace")`` starts in ``block``.

    Re-encoding the text is exact only without invalid bytes: each invalid byte became one
    U+FFFD, three bytes long. Then the shortest prefix of ``block`` decoding to ``text[:k]`` is
    searched for (decoded lengths grow with the prefix)."""
    if "\ufffd" not in text[:k]:
        return len(text[:k].encode("utf-8", "surrogatepass"))
    lo, hi = 0, len(block)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(block[:mid].decode("utf-8", "replace")) < k:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _parse_exact(j: Journal, p: int) -> int:
    """One step of omp's skip-on-error loop at line start ``p`` (S1.4.3); returns the next start."""
    src, n = j.source, j.size
    window = _WINDOW
    while True:
        stop = min(n, p + window)
        if stop < n:
            lf = src.find(b"\n", stop - 1)
            stop = n if lf < 0 else lf + 1
        block = src.read(p, stop)
        text = block.decode("utf-8", "replace")
        try:
            with gc_paused():
                value, end = codec.scan_value(text, 0)
        except codec.JSONIncomplete as err:
            if stop < n:
                window *= 4
                continue
            # the open value swallows everything to the end of the input
            start = p + len(text[:err.pos].encode("utf-8", "surrogatepass"))
            j.malformed.append(MalformedSpan(start, n))
            return n
        except (JSONSyntaxError, RecursionError):  # too deep to scan: malformed, never raised
            e = block.find(b"\n")
            e = n if e < 0 else p + e
            if not _is_blank_js(src.read(p, e)):
                j.malformed.append(MalformedSpan(p, e))
            return e + 1
        # the value ends on the physical line holding text offset ``end``
        line_text_end = text.find("\n", end)
        rest = text[end:] if line_text_end < 0 else text[end:line_text_end]
        lfs_before = text.count("\n", 0, end)
        e_rel = -1
        for _ in range(lfs_before + 1):
            e_rel = block.find(b"\n", e_rel + 1)
            if e_rel < 0:
                break
        e = n if e_rel < 0 else p + e_rel
        if rest.rstrip(" \t\r"):
            # trailing garbage: the value is kept, the rest of its line is one malformed record
            tail_start = p + _byte_offset(block, text, end)
            _add(j, p, tail_start, value)
            if rest.strip(_JS_TRIM):
                j.malformed.append(MalformedSpan(tail_start, e))
        else:
            tail = src.read(p, e)
            q = len(tail)
            while q > 0 and tail[q - 1] in _TRAILING_WS:
                q -= 1
            _add(j, p, p + q, value)
        return e + 1


class _InOrder:
    """:meth:`Journal.raw` through a window of the file: it grows while it serves several records,
    and shrinks while it serves one (records far apart, where reading between them is waste)."""

    __slots__ = ("_at", "_ends", "_held", "_read", "_served", "_size", "_starts")

    def __init__(self, j: Journal) -> None:
        self._starts, self._ends, self._read = j.starts, j.ends, j.source.read
        self._at, self._held, self._size, self._served = 0, b"", 64 * 1024, 0

    def __call__(self, i: int) -> bytes:
        a, b = self._starts[i], self._ends[i]
        at, held = self._at, self._held
        if at <= a and b <= at + len(held):
            self._served += 1
            return held[a - at:b - at]
        size = self._size
        if b - a >= size:
            return self._read(a, b)
        self._size = min(size * 2, _CHUNK) if self._served > 2 else max(size // 2, 16 * 1024)
        self._at, self._held, self._served = a, self._read(a, a + size), 1
        return self._held[:b - a]


class _TwoHalves:
    """The reader's side of :func:`split.scan_in_two`: how a half is scanned, packed and merged."""

    def part(self, j: Journal) -> Journal:
        # pread never moves the shared file offset, so the child may use the inherited handle
        return Journal(source=j.source, size=j.size, streaming=j.streaming,
                       usage_records=None if j.usage_records is None else array("q"))

    def scan(self, j: Journal, start: int, end: int | None = None) -> int:
        return _scan_body(j, start, end)

    def pack(self, part: Journal) -> bytes:
        # heads are shared objects: send each distinct one once, and per record its number
        # (C-level maps: the child's packing is on the critical path)
        distinct = dict(zip(map(id, part.heads), part.heads, strict=True))
        code_of = {ident: k for k, ident in enumerate(distinct)}
        table = [None if head is None else (head.role, head.provider, head.model, head.toolName)
                 for head in distinct.values()]
        codes = array("i", map(code_of.__getitem__, map(id, part.heads)))
        import pickle  # only a large file is split: not on a small command's start-up

        return pickle.dumps((part.starts, part.ends, part.types, part.ids, part.parents, part.linear, table, codes,
                             part.values, [(m.start, m.end) for m in part.malformed], part.blob_offsets,
                             part.loose_heads, part.usage_records, part.usage_numbers),
                            protocol=pickle.HIGHEST_PROTOCOL)


    def unpack(self, j: Journal, payload: bytes) -> None:
        import pickle

        (starts, ends, types, ids, parents, linear, table, codes, values, malformed, blobs,
         loose, usage_records, usage) = pickle.loads(payload)
        heads = [None if t is None else head_of_fields(*t) for t in table]
        first = len(j.starts)
        j.starts.extend(starts)
        j.ends.extend(ends)
        j.types.extend(intern_types(types))
        j.ids.extend(ids)
        j.parents.extend(parents)
        j.linear.extend(linear)
        j.heads.extend(map(heads.__getitem__, codes))
        for i, value in values.items():
            j.values[first + i] = value
        j.malformed.extend(MalformedSpan(a, b) for a, b in malformed)
        j.blob_offsets.extend(blobs)
        j.loose_heads = j.loose_heads or loose
        if j.usage_records is not None and usage_records is not None:
            j.usage_records.extend(array("q", [first + i for i in usage_records]))
            j.usage_numbers.extend(usage)


_TWO_HALVES = _TwoHalves()
