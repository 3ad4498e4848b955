"""The faithful JSON export's records as stored: the file's own bytes where they can be used as
they are, else the record parsed and written again with ``JSON.stringify``'s rules.

A record the scan validated in its fast path (it is not in ``Journal.values``) is one line
holding one JSON object, valid to ``JSON.parse``; its bytes are used as they are when they are
UTF-8 (the scan's decoder skips the strings of fields it does not keep without checking them).
So an entry exports to the bytes of its line, whoever wrote it; only a record the scan had to
decode itself (a value spanning lines, a line with trailing garbage or invalid UTF-8), changed
in memory, or not in the file is written from its value.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from omp_session.format.utf8 import is_utf8
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session

__all__ = ["mostly_as_stored", "record_bytes", "stored_header", "stored_records", "verbatim_run"]


def stored_records(session: Session) -> Callable[[int], Any]:
    """Entry k exactly as stored in the file, or as loaded when omp migrates the file on open.

    Loaded entries have blob references resolved and Copilot replay data stripped, so the file's
    own bytes are parsed again. A v1/v2 file is the exception: its ids only exist after
    migration (omp assigns them on load), so without it the tree would not be intact.
    """
    j = session.journal
    if session.migrated:
        return session.entry_at  # migration decoded and keeps every entry already
    raw_of = j.raw_in_order()  # entries are asked for in file order: a window read at a time

    def stored(k: int) -> Any:
        if session.header is None:
            return session.peek_entry(k)  # no header: nothing was transformed on load
        try:
            return codec.loads(raw_of(k + 1))
        except ValueError:
            return session.peek_entry(k)  # the reader took it; keep what it took

    return stored


def stored_header(session: Session) -> Any:
    """The first record as stored: the loaded header carries the title slot's overlay."""
    if session.raw_header is UNDEFINED:
        return None
    if session.migrated:
        return session.header
    try:
        return codec.loads(session.journal.raw(0))
    except ValueError:
        return session.raw_header


def _json_bytes(value: Any) -> bytes:
    """``JSON.stringify(value)`` in UTF-8 (it escapes lone surrogates, so it always encodes)."""
    return b"null" if value is UNDEFINED else codec.dumps_bytes(value)


def _decoded_entries(session: Session) -> list[int] | None:
    """The entries (sorted) whose bytes cannot be used as they are, or None when none can be
    (a migrated file, a file without a header: their entries are what the reader made)."""
    if session.migrated or session.header is None:
        return None
    return sorted(i - 1 for i in session.journal.values if i > 0)


def mostly_as_stored(session: Session) -> bool:
    """Whether at most one entry in a hundred is to be written from its value (the rest are
    copies of their lines: no work worth sharing with a second process)."""
    decoded = _decoded_entries(session)
    return decoded is not None and len(decoded) * 100 <= len(session)


def record_bytes(session: Session) -> Callable[[int], bytes]:
    """Entry k's bytes in the export: its line as stored when that is usable, else its stored
    value written with ``JSON.stringify``'s rules."""
    stored = stored_records(session)
    decoded = _decoded_entries(session)
    if decoded is None:
        return lambda k: _json_bytes(stored(k))
    raw_of = session.journal.raw_in_order()
    last = len(session.journal) - 1  # entries past the file's records are in ``decoded`` too
    kept = set(decoded)

    def bytes_of(k: int) -> bytes:
        if k < last and k not in kept:
            raw = raw_of(k + 1)
            if is_utf8(raw):
                return raw
        return _json_bytes(stored(k))

    return bytes_of


def verbatim_run(session: Session) -> Callable[[int, int], bytes | None]:
    """``run(lo, hi)``: entries ``lo``..``hi - 1`` as their lines joined by ``,\\n`` in one read,
    when each is usable as stored and they follow each other one line feed apart (the usual
    file); else None (take them one by one with :func:`record_bytes`)."""
    decoded = _decoded_entries(session)
    j = session.journal
    if decoded is None:
        return lambda lo, hi: None
    starts, ends = j.starts, j.ends

    def run(lo: int, hi: int) -> bytes | None:
        a, b = lo + 1, hi + 1  # records
        if b > len(starts) or bisect_left(decoded, lo) < bisect_left(decoded, hi) or a >= b:
            return None
        first, last = starts[a], ends[b - 1]
        gaps = (last - first) - (sum(ends[a:b]) - sum(starts[a:b]))
        if gaps != b - a - 1:
            return None  # some record is followed by more than its line feed
        block = j.read(first, last)
        if not is_utf8(block):
            return None
        # every gap holds a line feed (a record the scan took whole is alone on its line) and is
        # one byte: so the line feeds are the gaps (counted again by the replacement: no record
        # holds one)
        lines = block.replace(b"\n", b",\n")
        return lines if len(lines) - len(block) == gaps else None

    return run
