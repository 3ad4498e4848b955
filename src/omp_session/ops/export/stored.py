"""The faithful JSON export's records as stored: the file's own bytes where they can be used as
they are, else the record parsed and written again with ``JSON.stringify``'s rules.

Every record of the file is the span of one value the reader's scan accepted (valid to
``JSON.parse``, trailing garbage and blanks left out), and the stored entry is that span parsed;
so the span is used as it is when it is one line of UTF-8 (the scan's fast decoder skips the
strings of fields it does not keep without checking them). An entry exports to the bytes of its
line, whoever wrote it; only a value spanning lines, invalid UTF-8, an entry added in memory and
every entry of a migrated file or of a file without a header are written from their values.
(Nothing here depends on how the scan cut the file: in one process or two, the same bytes.)
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from omp_session.format.utf8 import is_utf8, is_utf8_line
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session

__all__ = ["as_stored", "json_bytes", "record_bytes", "stored_header", "stored_records", "verbatim_run"]


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


def json_bytes(value: Any) -> bytes:
    """``JSON.stringify(value)`` in UTF-8 (it escapes lone surrogates, so it always encodes)."""
    return b"null" if value is UNDEFINED else codec.dumps_bytes(value)


def _file_records(session: Session) -> int | None:
    """How many records the file holds (entries added in memory come after them), or None when
    no entry is to be copied as stored (a migrated file, a file without a header: their entries
    are what the reader made)."""
    if session.migrated or session.header is None:
        return None
    j = session.journal
    return bisect_left(j.starts, j.size)  # (an entry added in memory starts where the file ends)


def as_stored(session: Session) -> bool:
    """Whether the entries are copied as stored where they can be (then there is no work worth
    sharing with a second process: a few lines at most are written from their values)."""
    return _file_records(session) is not None


def record_bytes(session: Session) -> Callable[[int], bytes]:
    """Entry k's bytes in the export: its line as stored when that is usable (one line of
    UTF-8), else its stored value written with ``JSON.stringify``'s rules."""
    stored = stored_records(session)
    records = _file_records(session)
    if records is None:
        return lambda k: json_bytes(stored(k))
    raw_of = session.journal.raw_in_order()

    def bytes_of(k: int) -> bytes:
        if k + 1 < records:
            raw = raw_of(k + 1)
            if is_utf8_line(raw):
                return raw
        return json_bytes(stored(k))

    return bytes_of


def verbatim_run(session: Session) -> Callable[[int, int], bytes | None]:
    """``run(lo, hi)``: entries ``lo``..``hi - 1`` as their lines joined by ``,\n`` in one read,
    when each is usable as stored and they follow each other one line feed apart (the usual
    file); else None (take them one by one with :func:`record_bytes`)."""
    records = _file_records(session)
    j = session.journal
    if records is None:
        return lambda lo, hi: None
    starts, ends = j.starts, j.ends

    def run(lo: int, hi: int) -> bytes | None:
        a, b = lo + 1, hi + 1  # records
        if b > records or a >= b:
            return None
        first, last = starts[a], ends[b - 1]
        gaps = (last - first) - (sum(ends[a:b]) - sum(starts[a:b]))
        if gaps != b - a - 1:
            return None  # some record is followed by more than its line feed
        block = j.read(first, last)
        if not is_utf8(block):
            return None
        # every gap holds a line feed (the scan starts a record at the start of a line, after a
        # value's line), so each is one: the replacement counts the records' own line feeds (a
        # value spanning lines) with them, and a run holding one is taken record by record
        lines = block.replace(b"\n", b",\n")
        return lines if len(lines) - len(block) == gaps else None

    return run
