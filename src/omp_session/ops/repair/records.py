"""Step one of a repair: the file's bytes as an ordered list of records (spec S1.1-S1.4).

Every record the lenient reader (``reader.py``, omp's own parse rules) finds is taken; what it
skips as malformed is looked at again line by line, because omp's skip rules can throw away
whole records that parse on their own (a torn line glued to a complete one, a valid last line
swallowed by an unterminated value). Nothing that cannot be used is dropped silently: it is
quarantined, except whitespace and NUL padding, which hold no data.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from omp_session.format.reader import Journal
from omp_session.format.split import Forked, forked, later_part
from omp_session.format.utf8 import is_utf8
from omp_session.js import codec

from .blocks import blocks, prove_loads, runs
from .model import Fix, Quarantined

__all__ = ["Later", "Rec", "Records", "id_of", "prove_later", "read_records"]

_CHUNK = 1024 * 1024
_WS = b" \t\r\n"
_PAD = _WS + b"\x00"
_EMBEDDED = re.compile(rb'\{\s*"')
_BLANK_LINE = re.compile(rb"\n[ \t\r]+(?=\n)")  # a whole line of spaces, tabs or CRs (at least one)
_SPACE_AFTER_LF = re.compile(rb"\n[ \t\r]")
_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,64})"')
_PARENT = re.compile(rb'"parentId"\s*:\s*(null|"([^"\\]{1,64})")')


_LAZY: Any = object()


class Rec:
    """One logical record. ``raw`` is written back unchanged unless ``dirty`` (then re-serialized).

    A record read from the file keeps only where its bytes are: ``raw`` is read again and
    ``value`` decoded again when asked for (a big file is planned in bounded memory). A record
    whose value is changed is first taken with :meth:`own`, which keeps it decoded.
    """

    # a lazy record's offset, end and line are the journal's (None) unless whitespace moved them:
    # three ints fewer per record on a file of a million lines
    __slots__ = ("_end", "_i", "_j", "_line", "_offset", "_raw", "_value", "dirty")

    def __init__(self, value: Any, raw: bytes, offset: int, line: int, dirty: bool = False) -> None:
        self._value = value
        self._raw: bytes | None = raw
        self._offset: int | None = offset
        self._line: int | None = line
        self.dirty = dirty
        self._j: Journal | None = None
        self._i = -1
        self._end: int | None = -1

    @classmethod
    def lazy(cls, j: Journal, i: int, offset: int, end: int) -> Rec:
        """Record ``i`` of ``j``, whose bytes (surrounding whitespace excluded) are [offset, end)."""
        rec = cls(_LAZY, b"", offset, 0)
        rec._raw = None
        rec._j, rec._i = j, i
        rec._offset = None if offset == j.starts[i] else offset
        rec._end = None if end == j.ends[i] else end
        rec._line = None
        return rec

    @property
    def offset(self) -> int:
        if self._offset is None:
            assert self._j is not None
            return self._j.starts[self._i]
        return self._offset

    @offset.setter
    def offset(self, value: int) -> None:
        self._offset = value

    @property
    def line(self) -> int:
        if self._line is None:
            assert self._j is not None
            return self._j.line_of(self._j.starts[self._i])
        return self._line

    @line.setter
    def line(self, value: int) -> None:
        self._line = value

    @property
    def line_is_positional(self) -> bool:
        """Whether :attr:`line` is only the journal's line of where the record starts (a lazy
        record's: worked out by a search of every line feed before it, when asked)."""
        return self._line is None

    def _stop(self) -> int:
        if self._end is None:
            assert self._j is not None
            return self._j.ends[self._i]
        return self._end

    def span(self) -> tuple[int, int] | None:
        """Where the record's bytes are in the file ([start, end)), for one read from it."""
        return (self.offset, self._stop()) if self._j is not None and self._raw is None else None

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            assert self._j is not None
            return self._j.read(self.offset, self._stop())
        return self._raw

    @raw.setter
    def raw(self, data: bytes) -> None:
        self._raw = data

    @property
    def value(self) -> Any:
        """The record's value; for a lazy record decoded anew each time: never change it (:meth:`own`)."""
        if self._value is _LAZY:
            assert self._j is not None
            return self._j.peek(self._i)
        return self._value

    @value.setter
    def value(self, value: Any) -> None:
        self._value = value

    def own(self) -> Any:
        """The value, kept decoded from now on, to be changed (the caller sets ``dirty``)."""
        if self._value is _LAZY:
            assert self._j is not None
            self._value = self._j.peek(self._i)
        return self._value

    def own_id(self) -> str | None:
        """The record's ``id`` when it is a non-empty string (the file's envelope, unless changed)."""
        if self._value is _LAZY:
            assert self._j is not None
            v = self._j.ids[self._i]
            return v if isinstance(v, str) and v else None
        return id_of(self._value)

    def kind(self) -> Any:
        """``value.get("type")`` of an object (UNDEFINED for anything else), without decoding it."""
        if self._value is _LAZY:
            assert self._j is not None
            return self._j.types[self._i]
        return self._value.get("type", codec.UNDEFINED) if isinstance(self._value, dict) else codec.UNDEFINED

    def cannot_crash(self) -> bool:
        """True when the envelope alone shows omp loads this record: an object of a type whose
        fields omp does not dig into, or a user message (``omp_crash_reason`` then says None)."""
        if self._value is not _LAZY:
            return False
        assert self._j is not None
        kind = self._j.types[self._i]
        if type(kind) is not str:
            return False  # not an object, or no type: decided on the value
        if kind == "message":
            head = self._j.heads[self._i]
            return head is not None and head.role == "user"
        return kind not in ("model_usage", "ttsr_injection")

    def proven(self, safe: bytearray) -> bool:
        """Whether ``safe`` (:attr:`Records.safe`) says omp loads this record, still as read."""
        return self._value is _LAZY and 0 <= self._i < len(safe) and safe[self._i] == 1

    def parent(self) -> Any:
        """``value.get("parentId")`` of an object (None when absent), without decoding it."""
        if self._value is _LAZY:
            assert self._j is not None
            p = self._j.parents[self._i]
            return None if p is codec.UNDEFINED else p
        return self._value.get("parentId") if isinstance(self._value, dict) else None

    def out(self) -> bytes:
        return codec.dumps_line(self.value) if self.dirty else self.raw + b"\n"


@dataclass(slots=True)
class Records:
    recs: list[Rec] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    # safe[i]: record i of the journal, as read, is one omp surely loads (blocks.prove_loads)
    safe: bytearray = field(default_factory=bytearray)
    quarantined: list[Quarantined] = field(default_factory=list)
    # id -> parentId of records that were removed, as evidence for re-attaching their children
    evidence: dict[str, str | None] = field(default_factory=dict)

    def quarantine(self, line: int, offset: int, raw: bytes, reason: str) -> None:
        self.quarantined.append(Quarantined(line, offset, raw, reason))
        m = _ID.search(raw)
        if m is not None:
            p = _PARENT.search(raw)
            key = m.group(1).decode("utf-8", "replace")
            if p is not None and key not in self.evidence:
                self.evidence[key] = None if p.group(2) is None else p.group(2).decode("utf-8", "replace")




def _parse(data: bytes) -> Any:
    """The value ``data`` holds exactly (JSON with JavaScript semantics), or raise ValueError."""
    return codec.loads(data.decode("utf-8", "replace"))


class Later:
    """The later blocks of a large file, read and proven by a forked child (:func:`prove_later`)."""

    def __init__(self, every: list[tuple[int, int]], mid: int, result: Forked[tuple[bytes, bytes]]) -> None:
        self.every, self.mid, self.result = every, mid, result


def prove_later(j: Journal) -> Later | None:
    """On a large file, a forked child that reads and proves the later blocks (a second decode of
    every line) while this process takes the first: it sends back which blocks are clean and the
    proofs of their records; :func:`read_records` makes the fixes of the others, in file order.
    Started before any thread (a process with threads is not forked); None where not worth it."""
    every = runs(j)
    mid = later_part(len(every), j.size, 55)  # (measured even at about 55 / 45 on the 1 GB session)
    if mid == len(every):
        return None
    return Later(every, mid, forked(lambda: _proven(j, every[mid:]), j.size))


def read_records(j: Journal, later: Later | None = None) -> Records:
    """Records of a scanned file in file order, with the fixes made while reading them
    (``later``: :func:`prove_later` of ``j``, started before)."""
    out = Records(safe=bytearray(len(j)))
    recs: list[Rec] = []  # in file order
    all_clean = True
    every = later.every if later is not None else runs(j)
    mid = later.mid if later is not None else len(every)
    for block in blocks(j, every[:mid]):
        if block.clean:  # nothing to fix in any of them, as _take would find one by one
            recs.extend(Rec.lazy(j, k, j.starts[k], j.ends[k]) for k in range(block.first, block.last + 1))
            prove_loads(block, out.safe)
        else:
            all_clean = False
            recs.extend(_take(j, k, j.start(k), j.end(k), out) for k in range(block.first, block.last + 1))
    if later is not None:
        clean, safe = later.result()
        first = every[mid][0]
        out.safe[first:first + len(safe)] = safe
        for (i, b), ok in zip(every[mid:], clean, strict=True):
            if ok:
                recs.extend(Rec.lazy(j, k, j.starts[k], j.ends[k]) for k in range(i, b + 1))
            else:
                all_clean = False
                recs.extend(_take(j, k, j.start(k), j.end(k), out) for k in range(i, b + 1))
    items: list[tuple[int, int, Rec]] = []  # (offset, order, rec): the records found besides
    nul = 0
    for span in j.malformed:
        for rec, kind in _rescue(j, span.start, span.end, out):
            if rec is not None:
                items.append((rec.offset, 1, rec))
            elif kind == "nul":
                nul += 1
    items.extend((rec.offset, 1, rec) for rec in _rejoin(out))
    if items:  # a record read whole goes before one rescued at the same offset
        items.extend((j.start(i), 0, rec) for i, rec in enumerate(recs))
        items.sort(key=lambda t: (t[0], t[1]))
        recs = [rec for _, _, rec in items]
    out.recs = recs
    blank, crlf = (0, 0) if all_clean and _one_line_each(j) else _line_stats(j)
    if crlf:
        out.fixes.append(Fix("crlf", f"{crlf} line(s) ended in CR LF; written with LF only (omp writes LF)"))
    if blank:
        out.fixes.append(Fix("blank-lines", f"{blank} blank or whitespace-only line(s) removed"))
    if nul:
        out.fixes.append(Fix("nul-padding", f"{nul} run(s) of NUL bytes removed (a preallocated block that was "
                             "never written, e.g. after a power loss)",
                             offset=_first_nul(j)))
    if j.size and not j.final_newline:
        out.fixes.append(Fix("no-final-newline", "the last line had no final LF (omp would glue its next append "
                             "onto it and lose both); written with one", offset=j.size))
    return out


def _proven(j: Journal, these: list[tuple[int, int]]) -> tuple[bytes, bytes]:
    """For the blocks ``these`` (consecutive): one byte per block, 1 when it is clean; and the
    ``safe`` flags of their records (see :func:`~.blocks.prove_loads`), from the first on."""
    first = these[0][0]
    safe = bytearray(len(j))
    clean = bytearray()
    for block in blocks(j, these):
        clean.append(block.clean)
        if block.clean:
            prove_loads(block, safe)
    return bytes(clean), bytes(safe[first:these[-1][1] + 1])


def _chunks(j: Journal, start: int) -> Iterator[bytes]:
    pos = start
    while pos < j.size:
        block = j.read(pos, pos + _CHUNK)
        if not block:
            return
        yield block
        pos += len(block)


def _one_line_each(j: Journal) -> bool:
    """Whether the body is nothing but the records, each one line ending in a lone LF: then it
    has no blank line and no CR LF (each record being clean: no LF, CR or whitespace around it)."""
    starts, ends, n = j.starts, j.ends, len(j)
    if not n or j.malformed or starts[0] != j.body_start or ends[n - 1] + 1 != j.size or not j.final_newline:
        return False
    return all(starts[k + 1] == ends[k] + 1 for k in range(n - 1))


def _line_stats(j: Journal) -> tuple[int, int]:
    """(blank lines, CR LF lines) of the body, as ``split(b"\\n")`` counts them, a chunk at a time.

    Only the line a chunk starts in the middle of and the one it ends in are followed byte by byte;
    the whole lines between are counted by searches (a split copied every line of the file)."""
    blank = crlf = 0
    # the line read so far: its length, whether it is all whitespace, its last byte
    length, spaces, last = 0, True, 0
    for block in _chunks(j, j.body_start):
        lf = block.find(b"\n")
        if lf < 0:
            length, spaces, last = _more(length, spaces, last, block)
            continue
        length, spaces, last = _more(length, spaces, last, block[:lf])
        crlf += last == 0x0D and length > 0
        blank += length > 0 and spaces
        end = block.rfind(b"\n") + 1  # block[lf:end]: whole lines, each after its LF
        # (searching for one byte is a memchr; a two-byte search here cost as much as the split)
        if b"\r" in block:
            crlf += block.count(b"\r\n", lf, end)
        if _SPACE_AFTER_LF.search(block, lf, end) is not None:
            blank += len(_BLANK_LINE.findall(block, lf, end))
        length, spaces, last = _more(0, True, 0, block[end:])
    crlf += last == 0x0D and length > 0
    blank += length > 0 and spaces
    return blank, crlf


def _more(length: int, spaces: bool, last: int, piece: bytes) -> tuple[int, bool, int]:
    if not piece:
        return length, spaces, last
    return length + len(piece), spaces and not piece.strip(_WS), piece[-1]


def _first_nul(j: Journal) -> int:
    """Offset of the first NUL byte of the body (``body_start - 1`` when there is none)."""
    at = j.source.find(b"\x00", j.body_start)
    return at if at >= 0 else j.body_start - 1


def _take(j: Journal, i: int, start: int, end: int, out: Records) -> Rec:
    raw = j.read(start, end)
    clean = raw.strip(_WS)
    at = start + (len(raw) - len(raw.lstrip(_WS)))
    rec = Rec.lazy(j, i, at, at + len(clean))
    if raw == clean and is_utf8(raw) and not j.invalid_utf8 and b"\r" not in raw and b"\n" not in raw:
        return rec  # nothing to fix: the line number is worked out only if something asks for it
    line = j.line_of(start)
    if not is_utf8(raw):
        rec.dirty = True
        value = rec.own()
        out.quarantine(line, start, raw, "invalid UTF-8: the record is kept with U+FFFD in place of the bad "
                       "bytes (as omp reads it); the original bytes are kept here")
        out.fixes.append(Fix("invalid-utf8", "invalid UTF-8 replaced by U+FFFD (original bytes quarantined)",
                             line=line, offset=start, entry_id=id_of(value)))
    elif j.invalid_utf8 and not _same_value(clean, rec.value):
        # the reader's byte offsets can be off when invalid UTF-8 follows a value on its line
        # (U+FFFD is 3 bytes, the bad byte 1): write the value it read, not the misplaced bytes
        rec.dirty = True
        value = rec.own()
        rec.raw = codec.dumps_line(value)[:-1]
        out.fixes.append(Fix("record-bytes", "a record whose line also holds invalid bytes, re-written from its "
                             "value", line=line, offset=start, entry_id=id_of(value)))
    elif b"\n" in clean or b"\r" in clean:
        rec.dirty = True
        value = rec.own()
        out.fixes.append(Fix("multiline-record", "a record written over several lines, joined onto one",
                             line=line, offset=start, entry_id=id_of(value)))
    elif clean != raw:
        out.fixes.append(Fix("whitespace", "whitespace around a record removed", line=line, offset=start,
                             entry_id=rec.own_id()))
    return rec


def _same_value(raw: bytes, value: Any) -> bool:
    try:
        return codec.stringify(_parse(raw)) == codec.stringify(value)
    except ValueError:
        return False


def _rescue(j: Journal, start: int, end: int, out: Records) -> list[tuple[Rec | None, str]]:
    """Look at a span omp skips, one physical line at a time: keep what parses, quarantine the rest."""
    found: list[tuple[Rec | None, str]] = []
    data = j.read(start, end)
    pos = 0
    for piece in data.split(b"\n"):
        at = start + pos
        pos += len(piece) + 1
        core = piece.strip(_PAD)
        if not core:
            found.append((None, "nul" if b"\x00" in piece else "blank"))
            continue
        at += len(piece) - len(piece.lstrip(_PAD))
        if b"\x00" in piece:
            found.append((None, "nul"))
        line = j.line_of(at)
        rec = _whole(core, at, line)
        if rec is not None:
            if not is_utf8(core):
                out.quarantine(line, at, core, "invalid UTF-8: the record is kept with U+FFFD in place of the "
                               "bad bytes; the original bytes are kept here")
            out.fixes.append(Fix("rescued-record", "a complete record that omp's reader skips (it sits in a "
                                 "span omp drops as malformed) is kept", line=line, offset=at,
                                 entry_id=id_of(rec.value)))
            found.append((rec, "rec"))
            continue
        # a torn write: the start of one record with a complete record glued after it
        # only a line ending in '}' can end in a complete record, and only one place can start it
        for m in _glued_start(core):
            rec = _whole(core[m.start():], at + m.start(), line)
            if rec is not None:
                out.quarantine(line, at, core[: m.start()], "malformed: not a complete JSON value "
                               "(a complete record that followed it on the same line was kept)")
                out.fixes.append(Fix("malformed-record", "the start of a record that was never completed, "
                                     "quarantined", line=line, offset=at))
                out.fixes.append(Fix("rescued-record", "a complete record glued onto an unfinished one (two "
                                     "writers at once); omp drops both, it is kept", line=line,
                                     offset=rec.offset, entry_id=id_of(rec.value)))
                found.append((rec, "rec"))
                break
        else:
            out.quarantine(line, at, core, "malformed: not a complete JSON value")
            out.fixes.append(Fix("malformed-record", "unparsable line quarantined (omp skips it and drops it on "
                                 "its next rewrite)", line=line, offset=at))
            found.append((None, "malformed"))
    return found


def _rejoin(out: Records) -> list[Rec]:
    """A record torn in two by another writer's line (S8.6): its head and tail were quarantined
    as separate malformed lines; when the two together parse as one object, that record is kept
    (at the tail's place, where its write completed) and both pieces leave the quarantine."""
    pieces = [q for q in out.quarantined if q.reason.startswith("malformed")][:200]
    found: list[Rec] = []
    used: set[int] = set()
    for a, head in enumerate(pieces):
        if id(head) in used or not head.raw.startswith(b"{"):
            continue
        for tail in pieces[a + 1:]:
            if id(tail) in used or tail.raw.startswith(b"{"):
                continue
            rec = _whole(head.raw + tail.raw, tail.offset, tail.line)
            if rec is None:
                continue
            rec.dirty = True
            used.update((id(head), id(tail)))
            found.append(rec)
            out.fixes.append(Fix("rejoined-record", f"a record torn in two by another writer: its start (line "
                                 f"{head.line}) and its end were joined and kept here", line=tail.line,
                                 offset=tail.offset, entry_id=id_of(rec.value)))
            break
    if used:
        out.quarantined = [q for q in out.quarantined if id(q) not in used]
        joined = {q.offset for q in pieces if id(q) in used}
        out.fixes = [f for f in out.fixes if not (f.code == "malformed-record" and f.offset in joined)]
    return found


def _glued_start(core: bytes) -> list[re.Match[bytes]]:
    """Where a complete record glued onto the end of ``core`` can start (none or one place).

    A value that parses up to the line's end ends in the ``}`` closing the ``{`` it starts with,
    and inside valid JSON a quote preceded by an even number of backslashes toggles a string, so
    matching brackets backwards from the end finds that ``{``. One parse instead of one per
    ``{"`` on the line: trying each was quadratic on a deeply nested torn line (issue 16).
    """
    n = len(core)
    if not n or core[-1] != 0x7D:  # "}"
        return []
    depth = 0
    i = n - 1
    while i >= 1:
        c = core[i]
        if c == 0x22:  # a string, read backwards to its opening quote
            i -= 1
            while i >= 0:
                if core[i] == 0x22:
                    k = i
                    while k > 0 and core[k - 1] == 0x5C:
                        k -= 1
                    if (i - k) % 2 == 0:
                        break
                i -= 1
        elif c == 0x7D or c == 0x5D:
            depth += 1
        elif c == 0x7B or c == 0x5B:
            depth -= 1
            if depth == 0:
                m = _EMBEDDED.match(core, i) if c == 0x7B else None
                return [m] if m is not None else []
        i -= 1
    return []


def _whole(core: bytes, at: int, line: int) -> Rec | None:
    try:
        value = _parse(core)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    rec = Rec(value, core, at, line)
    rec.dirty = not is_utf8(core) or b"\n" in core or b"\r" in core
    return rec


def id_of(value: Any) -> str | None:
    if isinstance(value, dict):
        v = value.get("id")
        if isinstance(v, str):
            return v
    return None
