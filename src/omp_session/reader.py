"""Lenient, total reading of a session file's bytes into records (spec S1.4, S1.5).

One pass over the bytes records where every logical record starts and ends and its envelope
(``type``, ``id``, ``parentId``); values are decoded only when asked for. Clean regions are
validated a chunk at a time by msgspec (JSON syntax checked, only the envelope materialised);
a chunk that is not plainly one object per line goes through the exact path that reproduces
Bun's ``JSONL.parseChunk`` loop as omp drives it.
"""

from __future__ import annotations

import mmap
import os
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from . import codec
from .codec import UNDEFINED
from .title import TitleSlot, parse_title_slot

__all__ = ["STREAMING_THRESHOLD", "Journal", "MalformedSpan", "scan_bytes", "scan_file"]

STREAMING_THRESHOLD = 8 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_CHUNK = 4 * 1024 * 1024
_WINDOW = 64 * 1024
_NOT_DECODED: Any = object()
_JS_TRIM = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u2028\u2029\u202f\u205f\u3000\ufeff"


class _Envelope(msgspec.Struct):
    type: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    parentId: Any = msgspec.UNSET


_DECODER = msgspec.json.Decoder(_Envelope)
_INTERN: dict[Any, Any] = {}


def _intern(value: Any) -> Any:
    if type(value) is not str or len(value) > 40:
        return value
    return _INTERN.setdefault(value, value)


@dataclass(slots=True)
class MalformedSpan:
    """A span omp skips as one malformed record (byte offsets into the file)."""

    start: int
    end: int
    line: int = 0  # 1-based physical line of ``start``; filled in lazily


@dataclass(slots=True)
class Journal:
    """Where every record of a file is, and its envelope. Index 0 is the first logical record."""

    data: bytes | mmap.mmap
    size: int
    bom: bool = False
    slot: TitleSlot | None = None
    body_start: int = 0
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    types: list[Any] = field(default_factory=list)
    ids: list[Any] = field(default_factory=list)
    parents: list[Any] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    malformed: list[MalformedSpan] = field(default_factory=list)
    invalid_utf8: bool = False
    source_size: int = 0
    streaming: bool = False
    final_newline: bool = True
    _lfs: array[int] | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def raw(self, i: int) -> bytes:
        return bytes(self.data[self.starts[i]:self.ends[i]])

    def value(self, i: int) -> Any:
        value = self.values[i]
        if value is _NOT_DECODED:
            value = _decode(self.data[self.starts[i]:self.ends[i]])
            self.values[i] = value
        return value

    def is_decoded(self, i: int) -> bool:
        return self.values[i] is not _NOT_DECODED

    def line_of(self, offset: int) -> int:
        """1-based physical line holding byte ``offset``."""
        if self._lfs is None:
            lfs = array("q")
            find, n = self.data.find, self.size
            pos = find(b"\n", 0, n)
            while pos >= 0:
                lfs.append(pos)
                pos = find(b"\n", pos + 1, n)
            self._lfs = lfs
        return bisect_left(self._lfs, offset) + 1

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            try:
                self.data.close()
            except BufferError:
                # a caller still holds a view into the map; let the GC release it
                pass


def _decode(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return codec.loads(raw.decode("utf-8", "replace"))


def _envelope_of(value: Any) -> tuple[Any, Any, Any]:
    if isinstance(value, dict):
        return (_intern(value.get("type", UNDEFINED)), value.get("id", UNDEFINED),
                value.get("parentId", UNDEFINED))
    return UNDEFINED, UNDEFINED, UNDEFINED


def scan_file(path: str | os.PathLike[str]) -> Journal:
    """Scan a file. Raises OSError for I/O problems (missing, directory, unreadable)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data: bytes | mmap.mmap
        if size == 0:
            data = b""
        elif size < 1024 * 1024:
            data = f.read()
            size = len(data)
        else:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return scan_bytes(data, size)


def scan_bytes(data: bytes | mmap.mmap, size: int | None = None) -> Journal:
    size = len(data) if size is None else size
    j = Journal(data=data, size=size, streaming=size >= STREAMING_THRESHOLD)
    j.final_newline = size == 0 or data[size - 1:size] == b"\n"
    pos = 0
    if data[:3] == _BOM:
        j.bom = True
        pos = 3
    first_lf = data.find(b"\n", pos)
    if first_lf >= 0:
        slot = parse_title_slot(bytes(data[pos:first_lf]))
        if slot is not None:
            j.slot = slot
            pos = first_lf + 1
    elif not j.streaming:
        # the whole text is one line; the slot peel needs an LF after it
        pass
    j.body_start = pos
    _scan_body(j, pos)
    _measure_source(j)
    return j


def _measure_source(j: Journal) -> None:
    """omp's idea of the file size: the decoded text's UTF-8 length below 8 MiB (S1.4.8)."""
    if j.streaming:
        j.source_size = j.size
        return
    data = bytes(j.data[:j.size])
    try:
        data.decode("utf-8")
        j.source_size = j.size - (3 if j.bom else 0)
    except UnicodeDecodeError:
        j.invalid_utf8 = True
        text = data.decode("utf-8", "replace")
        j.source_size = len(text.encode("utf-8", "surrogatepass")) - (3 if j.bom else 0)


def _scan_body(j: Journal, pos: int) -> None:
    data, n = j.data, j.size
    find = data.find
    view = memoryview(data) if n else None
    while pos < n:
        limit = min(pos + _CHUNK, n)
        if limit < n:
            lf = find(b"\n", limit - 1)
            limit = n if lf < 0 else lf + 1
        if not _fast_chunk(j, pos, limit, view):
            limit = _slow_region(j, pos, limit)
        pos = limit


def _fast_chunk(j: Journal, start: int, stop: int, view: memoryview | None) -> bool:
    """Take a chunk whose every non-blank line is one object, validated in one msgspec call."""
    data = j.data
    find = data.find
    line_starts: list[int] = []
    line_ends: list[int] = []
    p = start
    while p < stop:
        e = find(b"\n", p, stop)
        if e < 0:
            e = stop
        q = e
        while q > p and data[q - 1] in (13, 32, 9):
            q -= 1
        if q > p:
            if data[p] != 123 or data[q - 1] != 125:  # '{' ... '}'
                return False
            line_starts.append(p)
            line_ends.append(q)
        p = e + 1
    if not line_starts:
        return True
    assert view is not None
    try:
        envs = _DECODER.decode_lines(view[start:stop])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    if len(envs) != len(line_starts):
        return False
    unset = msgspec.UNSET
    j.starts.extend(line_starts)
    j.ends.extend(line_ends)
    types, ids, parents = j.types, j.ids, j.parents
    for env in envs:
        t = env.type
        types.append(UNDEFINED if t is unset else _intern(t))
        i = env.id
        ids.append(UNDEFINED if i is unset else i)
        pa = env.parentId
        parents.append(UNDEFINED if pa is unset else pa)
    j.values.extend([_NOT_DECODED] * len(envs))
    return True


def _add(j: Journal, start: int, end: int, value: Any) -> None:
    j.starts.append(start)
    j.ends.append(end)
    t, i, p = _envelope_of(value)
    j.types.append(t)
    j.ids.append(i)
    j.parents.append(p)
    j.values.append(value)


def _is_blank_js(raw: bytes) -> bool:
    return not raw.decode("utf-8", "replace").strip(_JS_TRIM)


def _slow_region(j: Journal, start: int, stop: int) -> int:
    """Exact per-line handling of [start, stop); returns where the next chunk begins.

    A value that spans lines may carry the position past ``stop``.
    """
    data, n = j.data, j.size
    find = data.find
    p = start
    while p < stop:
        e = find(b"\n", p, n)
        line_end = n if e < 0 else e
        raw = bytes(data[p:line_end])
        if not raw.strip(b" \t\r"):
            p = line_end + 1
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            p = _parse_exact(j, p)
            continue
        q = line_end
        while q > p and data[q - 1] in (13, 32, 9):
            q -= 1
        _add(j, p, q, value)
        p = line_end + 1
    return max(p, stop)


def _nth_lf_after(data: bytes | mmap.mmap, start: int, count: int, n: int) -> int:
    """Byte offset of the ``count``-th LF at or after ``start`` (count >= 1), or n."""
    pos = start - 1
    for _ in range(count):
        pos = data.find(b"\n", pos + 1, n)
        if pos < 0:
            return n
    return pos


def _parse_exact(j: Journal, p: int) -> int:
    """One step of omp's skip-on-error loop at line start ``p`` (S1.4.3); returns the next start."""
    data, n = j.data, j.size
    window = _WINDOW
    while True:
        stop = min(n, p + window)
        if stop < n:
            lf = data.find(b"\n", stop - 1, n)
            stop = n if lf < 0 else lf + 1
        text = bytes(data[p:stop]).decode("utf-8", "replace")
        try:
            value, end = codec.scan_value(text, 0)
        except codec.JSONIncomplete as err:
            if stop < n:
                window *= 4
                continue
            # the open value swallows everything to the end of the input
            start = p + len(text[:err.pos].encode("utf-8", "surrogatepass"))
            j.malformed.append(MalformedSpan(start, n))
            return n
        except codec.JSONSyntaxError:
            e = data.find(b"\n", p, n)
            e = n if e < 0 else e
            if not _is_blank_js(bytes(data[p:e])):
                j.malformed.append(MalformedSpan(p, e))
            return e + 1
        # the value ends on the line of text offset ``end``
        lfs_before = text.count("\n", 0, end)
        value_line_start = p if lfs_before == 0 else _nth_lf_after(data, p, lfs_before, n) + 1
        e = data.find(b"\n", value_line_start, n)
        e = n if e < 0 else e
        line_text_end = text.find("\n", end)
        rest = text[end:] if line_text_end < 0 else text[end:line_text_end]
        tail = rest.rstrip(" \t\r")
        if tail:
            # trailing garbage: the value is kept, the rest of its line is one malformed record
            tail_start = e - len(rest.encode("utf-8", "surrogatepass"))
            _add(j, p, tail_start, value)
            if rest.strip(_JS_TRIM):
                j.malformed.append(MalformedSpan(tail_start, e))
        else:
            q = e
            while q > p and data[q - 1] in (13, 32, 9):
                q -= 1
            _add(j, p, q, value)
        return e + 1


def malformed_lines(j: Journal) -> list[MalformedSpan]:
    for span in j.malformed:
        if not span.line:
            span.line = j.line_of(span.start)
    return j.malformed
