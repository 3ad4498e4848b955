"""Whether a file is an omp session at all: the one rule ``validate`` reports as ``not-a-session``
and every command that reads one session refuses with (issue 15 item 12).

A file is *not a session* when its first megabyte is empty, only whitespace or NUL bytes, binary
data, holds no JSON object (and no session follows: omp reads past blank lines, NUL padding or a long
garbage line, so a file that goes on is judged from its first ``{``), or is the quarantine ``repair``
writes; or when, with no session
header, no title slot and no ``"type"`` in that megabyte, no record is an object with a string
``type``. Anything else is a session, however damaged (a lost header, malformed or truncated
lines, a v1/v2 file without a title slot): the commands read it and ``validate`` says what is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from omp_session.model.session import Session

__all__ = ["NOT_A_SESSION", "SNIFF", "is_quarantine", "not_a_session_message", "why_not_a_session",
           "why_not_a_session_file", "why_not_by_fd", "why_not_by_head", "why_not_by_start"]

NOT_A_SESSION = "not an omp session file"
SNIFF = 1024 * 1024  # how much of the file the rule looks at first
# bytes that never occur in JSON text outside a broken string: many of them mean binary data (not
# DEL, 0x7f: JSON escapes only U+0000-U+001F, so omp writes a DEL in a text as the raw byte)
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13))
_QUARANTINE_KEYS = frozenset({"line", "offset", "reason", "text", "base64"})
_RECORDS = 1000  # records looked at for a string type when the first megabyte names none
_CHUNK = 1024 * 1024  # what is read at a time looking for the first "{" past the first megabyte


def not_a_session_message(reason: str) -> str:
    """The words every command and ``validate`` use: ``not an omp session file: <why>``."""
    return f"{NOT_A_SESSION}: {reason}"


def is_quarantine(head: bytes) -> bool:
    """Whether the file starts like repair's quarantine (docs/repair.md): its first line an object of
    ``line``, ``offset``, ``reason`` and ``text`` or ``base64``; no session record looks so."""
    first = head.lstrip(b" \t\r\n").split(b"\n", 1)[0]
    try:
        value = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and "reason" in value and "line" in value and value.keys() <= _QUARANTINE_KEYS


def why_not_by_head(head: bytes, size: int) -> tuple[bool, str | None]:
    """What the first ``SNIFF`` bytes (``head``) of a file of ``size`` bytes decide: (True, why it
    is not a session), (True, None) for a session, or (False, None) when only its records can tell."""
    if not size:
        return True, "the file is empty (omp would start a new session in it)"
    text = head.replace(b"\x00", b"")
    if not text.strip():
        return True, "the file holds only whitespace or NUL bytes"
    if (len(text) - len(text.translate(None, _CONTROL))) * 100 > len(text):
        return True, "binary data"
    if b"{" not in text:
        return True, "no JSON object in its first megabyte"
    if is_quarantine(head):
        return True, "the quarantine omp-session repair writes (records taken out of a session; docs/repair.md)"
    if b'"type"' in head:
        return True, None
    return False, None


def why_not_by_start(read: Callable[[int, int], bytes], size: int) -> tuple[bool, str | None]:
    """:func:`why_not_by_head` of a file whose bytes ``read(start, end)`` returns. When the first
    megabyte holds no ``{`` (only blank lines, NUL padding or one long garbage line) and the file goes
    on, omp reads past it: the verdict is then that of the megabyte from the first ``{`` on, found
    a chunk at a time (memory stays bounded; only a file with no session in it is read to its end)."""
    head = read(0, min(size, SNIFF))
    decided, reason = why_not_by_head(head, size)
    if reason is None or b"{" in head or size <= len(head):
        return decided, reason
    at = len(head)
    while at < size:
        chunk = read(at, min(size, at + _CHUNK))
        if not chunk:
            break
        brace = chunk.find(b"{")
        if brace >= 0:
            start = at + brace
            more, why = why_not_by_head(read(start, min(size, start + SNIFF)), size - start)
            return (decided, reason) if why is not None else (more, None)
        at += len(chunk)
    return decided, reason


def why_not_by_fd(fd: int, size: int) -> tuple[bool, str | None]:
    """:func:`why_not_by_start` of the open file ``fd`` of ``size`` bytes, read with ``pread``."""
    return why_not_by_start(lambda start, end: os.pread(fd, end - start, start), size)


def _why_not_by_records(session: Session) -> str | None:
    if session.header is not None or session.title_slot is not None:
        return None
    raw = session.raw_header
    if isinstance(raw, dict) and isinstance(raw.get("type"), str):
        return None
    if any(isinstance(t, str) for t in session.types[:_RECORDS]):
        return None
    return "no record is an object with a string type"


def why_not_a_session(session: Session) -> str | None:
    """Why the file ``session`` was read from is not an omp session file, or None when it is one
    (perhaps damaged)."""
    j = session.journal
    decided, reason = why_not_by_start(j.read, j.size)
    if decided:
        return reason
    return _why_not_by_records(session)


def why_not_a_session_file(path: str | os.PathLike[str]) -> str | None:
    """:func:`why_not_a_session` of a plain file, reading only its first megabyte when that decides
    (an archive, ``*.jsonl.gz``, is judged as the plain file it was). None too when the file cannot
    be read: the command's own reading then says why, in its usual words."""
    from omp_session.model.session import open_session

    try:
        if not os.fspath(path).endswith(".jsonl.gz"):
            with open(path, "rb") as f:
                fd = f.fileno()
                decided, reason = why_not_by_fd(fd, os.fstat(fd).st_size)
            if decided:
                return reason
        with open_session(path) as s:
            return why_not_a_session(s)
    except (OSError, ValueError):  # SessionFileError, a damaged archive's FormatError
        return None
