"""Step one of a repair: the file's bytes as an ordered list of records (spec S1.1-S1.4).

Every record the lenient reader (``reader.py``, omp's own parse rules) finds is taken; what it
skips as malformed is looked at again line by line, because omp's skip rules can throw away
whole records that parse on their own (a torn line glued to a complete one, a valid last line
swallowed by an unterminated value). Nothing that cannot be used is dropped silently: it is
quarantined, except whitespace and NUL padding, which hold no data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from omp_session.format.reader import Journal
from omp_session.js import codec

from .model import Fix, Quarantined

__all__ = ["Rec", "Records", "read_records"]

_WS = b" \t\r\n"
_PAD = _WS + b"\x00"
_EMBEDDED = re.compile(rb'\{\s*"')
_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,64})"')
_PARENT = re.compile(rb'"parentId"\s*:\s*(null|"([^"\\]{1,64})")')


@dataclass(slots=True)
class Rec:
    """One logical record. ``raw`` is written back unchanged unless ``dirty`` (then re-serialized)."""

    value: Any
    raw: bytes
    offset: int
    line: int
    dirty: bool = False

    def out(self) -> bytes:
        return codec.dumps_line(self.value) if self.dirty else self.raw + b"\n"


@dataclass(slots=True)
class Records:
    recs: list[Rec] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
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


def _valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse(data: bytes) -> Any:
    """The value ``data`` holds exactly (JSON with JavaScript semantics), or raise ValueError."""
    return codec.loads(data.decode("utf-8", "replace"))


def read_records(j: Journal) -> Records:
    """Records of a scanned file in file order, with the fixes made while reading them."""
    out = Records()
    items: list[tuple[int, int, Rec | None]] = []  # (offset, order, rec) - None marks a malformed span
    for i in range(len(j)):
        start, end = j.start(i), j.end(i)
        items.append((start, 0, _take(j, i, start, end, out)))
    nul = 0
    for span in j.malformed:
        for rec, kind in _rescue(j, span.start, span.end, out):
            if rec is not None:
                items.append((rec.offset, 1, rec))
            elif kind == "nul":
                nul += 1
    items.extend((rec.offset, 1, rec) for rec in _rejoin(out))
    items.sort(key=lambda t: (t[0], t[1]))
    out.recs = [rec for _, _, rec in items if rec is not None]
    data = j.read(j.body_start, j.size)
    blank, crlf = _line_stats(data)
    if crlf:
        out.fixes.append(Fix("crlf", f"{crlf} line(s) ended in CR LF; written with LF only (omp writes LF)"))
    if blank:
        out.fixes.append(Fix("blank-lines", f"{blank} blank or whitespace-only line(s) removed"))
    if nul:
        out.fixes.append(Fix("nul-padding", f"{nul} run(s) of NUL bytes removed (a preallocated block that was "
                             "never written, e.g. after a power loss)",
                             offset=data.find(b"\x00") + j.body_start))
    if j.size and not j.final_newline:
        out.fixes.append(Fix("no-final-newline", "the last line had no final LF (omp would glue its next append "
                             "onto it and lose both); written with one", offset=j.size))
    return out


def _line_stats(data: bytes) -> tuple[int, int]:
    blank = crlf = 0
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            crlf += 1
        if line and not line.strip(_WS):
            blank += 1
    return blank, crlf


def _take(j: Journal, i: int, start: int, end: int, out: Records) -> Rec:
    raw = j.read(start, end)
    value = j.value(i)
    line = j.line_of(start)
    clean = raw.strip(_WS)
    rec = Rec(value, clean, start + (len(raw) - len(raw.lstrip(_WS))), line)
    if not _valid_utf8(raw):
        rec.dirty = True
        out.quarantine(line, start, raw, "invalid UTF-8: the record is kept with U+FFFD in place of the bad "
                       "bytes (as omp reads it); the original bytes are kept here")
        out.fixes.append(Fix("invalid-utf8", "invalid UTF-8 replaced by U+FFFD (original bytes quarantined)",
                             line=line, offset=start, entry_id=_id_of(value)))
    elif j.invalid_utf8 and not _same_value(clean, value):
        # the reader's byte offsets can be off when invalid UTF-8 follows a value on its line
        # (U+FFFD is 3 bytes, the bad byte 1): write the value it read, not the misplaced bytes
        rec.dirty = True
        rec.raw = codec.dumps_line(value)[:-1]
        out.fixes.append(Fix("record-bytes", "a record whose line also holds invalid bytes, re-written from its "
                             "value", line=line, offset=start, entry_id=_id_of(value)))
    elif b"\n" in clean or b"\r" in clean:
        rec.dirty = True
        out.fixes.append(Fix("multiline-record", "a record written over several lines, joined onto one",
                             line=line, offset=start, entry_id=_id_of(value)))
    elif clean != raw:
        out.fixes.append(Fix("whitespace", "whitespace around a record removed", line=line, offset=start,
                             entry_id=_id_of(value)))
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
            if not _valid_utf8(core):
                out.quarantine(line, at, core, "invalid UTF-8: the record is kept with U+FFFD in place of the "
                               "bad bytes; the original bytes are kept here")
            out.fixes.append(Fix("rescued-record", "a complete record that omp's reader skips (it sits in a "
                                 "span omp drops as malformed) is kept", line=line, offset=at,
                                 entry_id=_id_of(rec.value)))
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
                                     offset=rec.offset, entry_id=_id_of(rec.value)))
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
                                 offset=tail.offset, entry_id=_id_of(rec.value)))
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
    rec.dirty = not _valid_utf8(core) or b"\n" in core or b"\r" in core
    return rec


def _id_of(value: Any) -> str | None:
    if isinstance(value, dict):
        v = value.get("id")
        if isinstance(v, str):
            return v
    return None
