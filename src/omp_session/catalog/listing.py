"""Session listing: the cheap per-file summaries omp shows in its resume picker (spec S11).

omp does not load a session to list it. It reads the first 4,096 bytes of the file (header, title,
first messages) and the last 32,768 bytes (lifecycle status), and derives a ``SessionInfo`` from those
windows alone (S11.2, S11.3). This module reproduces that scan and the listing built on it:

* :func:`scan_session_info` -- one file's :class:`SessionInfo`, or ``None`` when omp would not list it
  (unreadable, no header, or content on which omp's scan throws, e.g. a ``null`` record or a message
  whose ``content`` is an object).
* :func:`list_sessions` -- one bucket (``<dir>/*.jsonl``), like ``SessionManager.list(cwd, dir)``;
  it first promotes orphaned ``.bak`` backups as omp does (S8.4.3, :func:`recover_orphaned_backups`).
* :func:`list_all_sessions` -- every bucket (``<root>/*/*.jsonl``), like ``SessionManager.listAll()``.
* :func:`find_most_recent_session` -- omp's ``findMostRecentSession(dir)``.
* :func:`load_pinned_session_ids` -- ``<agent dir>/session-pins.json`` (S9.6).

Ordering (S11.4): newest ``modified`` first, then newer ``created``, then path descending by omp's
``localeCompare``; pinned ids move to the front, keeping that order.

Times are JavaScript-style integer milliseconds since the epoch: ``modified`` is the file's mtime as
Bun's ``stat().mtime`` gives it (a double in ms, truncated, so ``.999999`` ms rounds up), ``created`` is ``new Date(header.timestamp)``
(``None`` for an Invalid Date). Header timestamps without a zone parse as UTC (omp runs in local
time; the oracle and :mod:`omp_session.jsdate` use ``TZ=UTC``).

Known approximations: ``localeCompare`` is ICU collation; :func:`_locale_key` is exact for printable
ASCII (checked against Bun) and approximate beyond. omp's comparator is not transitive when an
Invalid ``created`` meets equal mtimes (NaN falls through to the path), so the result then depends on
the sort algorithm; Python's sort agrees with Bun's (JavaScriptCore's own stable sort) on small
inputs but not always. omp caches scans
per (path, mtime, size); this module rescans every time.
"""

from __future__ import annotations

import functools
import math
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from omp_session.js.codec import UNDEFINED, loads, parse_jsonl, stringify
from omp_session.js.date import js_string, new_date_ms, to_iso
from omp_session.js.value import JS_SPACE, truthy
from omp_session.model.omp_version import has_s20
from omp_session.model.omp_version import resolve as resolve_omp
from omp_session.paths import agent_dir, sessions_dir

from .quarantine import LEGACY_QUARANTINE_SUFFIX, QUARANTINE_SUFFIX, is_quarantine_name

__all__ = [
    "QUARANTINE_SUFFIX",
    "SessionInfo",
    "find_most_recent_session",
    "is_quarantine_name",
    "list_all_sessions",
    "list_sessions",
    "load_pinned_session_ids",
    "recover_orphaned_backups",
    "scan_session_info",
]

PREFIX_BYTES: Final = 4096
SUFFIX_BYTES: Final = 32_768
NO_MESSAGES: Final = "(no messages)"
PINS_FILENAME: Final = "session-pins.json"

StrPath = str | os.PathLike[str]


@dataclass
class SessionInfo:
    """omp's ``SessionInfo`` for one session file (S11.1). Times are epoch milliseconds."""

    path: str
    id: str
    cwd: str
    title: str | None
    parent_session_path: str | None
    created: int | None  # None = JavaScript Invalid Date
    modified: int
    message_count: int
    size: int
    first_message: str
    all_messages_text: str
    status: str | None  # None when scanned without the tail window (find_most_recent_session)
    # omp 18.3 (S20.3.9) only; None in an 18.2 listing, which has no such keys
    assistant_turns: int | None = None
    is_empty_session: bool | None = None

    @property
    def skipped_by_resume(self) -> bool:
        """omp 18.3's ``--continue``, picker and recent list pass over a session with no title
        and no assistant turn (an 18.2 listing never does)."""
        return bool(self.is_empty_session) and not self.title

    def to_dict(self) -> dict[str, Any]:
        """The object ``JSON.stringify`` sees: omp's key order, undefined keys left out."""
        out: dict[str, Any] = {"path": self.path, "id": self.id, "cwd": self.cwd}
        if self.title is not None:
            out["title"] = self.title
        if self.parent_session_path is not None:
            out["parentSessionPath"] = self.parent_session_path
        # Date.prototype.toJSON gives null for an Invalid Date.
        out["created"] = None if self.created is None else to_iso(self.created)
        out["modified"] = to_iso(self.modified)
        out["messageCount"] = self.message_count
        if self.assistant_turns is not None:
            out["assistantTurns"] = self.assistant_turns
            out["isEmptySession"] = bool(self.is_empty_session)
        out["size"] = self.size
        out["firstMessage"] = self.first_message
        out["allMessagesText"] = self.all_messages_text
        if self.status is not None:
            out["status"] = self.status
        return out

    def to_json(self) -> str:
        """Exactly omp's ``JSON.stringify(sessionInfo)``."""
        text = stringify(self.to_dict())
        assert text is not None  # a dict always serialises
        return text


class Unlisted(Exception):
    """omp's scan would throw here (its catch-all then drops the file from the listing)."""


# ---------------------------------------------------------------------------------------------------
# Reading the windows


def decode_text(data: bytes) -> str:
    # TextDecoder("utf-8"): replacement characters for bad bytes, and a leading BOM is dropped.
    text = data.decode("utf-8", "replace")
    return text[1:] if text.startswith("\ufeff") else text


def _mtime_ms_float(st: os.stat_result) -> float:
    # Bun's stat().mtimeMs: seconds and nanoseconds combined in doubles, so x.999999 ms rounds up to x+1.
    sec, nsec = divmod(st.st_mtime_ns, 1_000_000_000)
    return float(sec) * 1000.0 + nsec / 1_000_000.0


def _mtime_ms(st: os.stat_result) -> int:
    # stat().mtime is new Date(mtimeMs), which truncates toward zero.
    return math.trunc(_mtime_ms_float(st))


def _read_windows(path: str, with_status: bool) -> tuple[str, str]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(PREFIX_BYTES)
        if not with_status:
            return decode_text(head), ""
        if size <= len(head):
            tail = head[-SUFFIX_BYTES:]
        else:
            f.seek(max(0, size - SUFFIX_BYTES))
            tail = f.read(SUFFIX_BYTES)
    return decode_text(head), decode_text(tail)


# ---------------------------------------------------------------------------------------------------
# omp's textual fallbacks (they look at raw text, so a cut or damaged record still yields something)


def _decode_fragment(value: str) -> str:
    safe = value[:-1] if value.endswith("\\") else value
    try:
        decoded = loads(f'"{safe}"')
        if isinstance(decoded, str):
            return decoded
    except ValueError:
        pass
    # Order matters: it is omp's chain of global replaces.
    for escape, char in (("\\n", "\n"), ("\\r", "\r"), ("\\t", "\t"), ('\\"', '"'), ("\\\\", "\\")):
        safe = safe.replace(escape, char)
    return safe


_SKIP_WS: Final = frozenset(" \t\n\r")


def _string_property(source: str, name: str, start: int = 0) -> str | None:
    """The string value of the first ``"name"`` at or after ``start``, read without a JSON parser."""
    at = source.find(f'"{name}"', start)
    if at == -1:
        return None
    colon = source.find(":", at + len(name) + 2)
    if colon == -1:
        return None
    i = colon + 1
    n = len(source)
    while i < n and source[i] in _SKIP_WS:
        i += 1
    if i >= n or source[i] != '"':
        return None
    begin = i + 1
    escaped = False
    for j in range(begin, n):
        c = source[j]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            return _decode_fragment(source[begin:j])
    return _decode_fragment(source[begin:])


def _count_message_markers(content: str) -> int:
    count = 0
    index = 0
    while True:
        at = content.find('"type"', index)
        if at == -1:
            return count
        colon = content.find(":", at + 6)
        if colon == -1:
            return count
        if _string_property(content, "type", at) == "message":
            count += 1
        index = colon + 1


def _first_display_message(content: str) -> str | None:
    fallback: str | None = None
    index = content.find('"role"')
    while index != -1:
        role = _string_property(content, "role", index)
        text = _string_property(content, "content", index)
        if text is None:
            text = _string_property(content, "text", index)
        if text:
            if role == "user":
                return text
            if fallback is None and role in ("developer", "assistant"):
                fallback = text
        index = content.find('"role"', index + 6)
    return fallback


# ---------------------------------------------------------------------------------------------------
# Header


@dataclass
class Header:
    id: str
    cwd: str | None
    title: str | None
    parent_session: str | None
    timestamp: str | None


def _get(value: Any, key: str) -> Any:
    return value.get(key, UNDEFINED) if isinstance(value, dict) else UNDEFINED


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _slot_override(title: str | None) -> Any:
    """UNDEFINED = no slot; None = a blank slot, which hides the header title; else the title."""
    if title is None:
        return UNDEFINED
    return title if title.strip(JS_SPACE) else None


def _pick_title(override: Any, header_title: str | None) -> str | None:
    if override is None:
        return None
    return override if isinstance(override, str) else header_title


def _header_from_record(record: Any, override: Any) -> Header | None:
    if _get(record, "type") != "session" or not isinstance(_get(record, "id"), str):
        return None
    return Header(record["id"], _str_or_none(record.get("cwd")),
                   _pick_title(override, _str_or_none(record.get("title"))),
                   _str_or_none(record.get("parentSession")), _str_or_none(record.get("timestamp")))


def _header_from_line(line: str, override: Any) -> Header | None:
    if _string_property(line, "type") != "session":
        return None
    id_ = _string_property(line, "id")
    if not id_:
        return None
    return Header(id_, _string_property(line, "cwd"), _pick_title(override, _string_property(line, "title")),
                   _string_property(line, "parentSession"), _string_property(line, "timestamp"))


def parse_header(content: str, values: list[Any]) -> Header | None:
    first = values[0] if values else UNDEFINED
    has_slot = _get(first, "type") == "title"
    override = _slot_override(_str_or_none(_get(first, "title")) if has_slot else None)
    index = 1 if has_slot else 0
    header = _header_from_record(values[index] if index < len(values) else UNDEFINED, override)
    if header is not None:
        return header
    # JSON could not give a header (e.g. the header line is cut or damaged): read the first lines as text.
    override = UNDEFINED
    first_line = True
    for raw in re.split(r"\r?\n", content):
        line = raw.strip(JS_SPACE)
        if not line:
            continue
        if first_line and _string_property(line, "type") == "title":
            override = _slot_override(_string_property(line, "title"))
            first_line = False
            continue
        return _header_from_line(line, override)
    return None


# ---------------------------------------------------------------------------------------------------
# Messages and status


def _content_text(content: Any) -> str:
    """omp's ``extractTextFromContent``; raises where its ``for..of`` or ``block.type`` would throw."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise Unlisted("content is not iterable")
    parts: list[str] = []
    for block in content:
        if block is None:
            raise Unlisted("null content block")
        if _get(block, "type") == "text":
            text = _get(block, "text")
            # Array.prototype.join writes null and undefined as empty strings.
            parts.append("" if text is None or text is UNDEFINED else js_string(text))
    return " ".join(parts)


def message_status(message: Any) -> str:
    """The listing's status of a session whose last message line holds ``message`` (S11.3)."""
    role = _get(message, "role")
    if role == "assistant":
        stop = _get(message, "stopReason")
        if stop in ("error", "aborted"):
            return str(stop)
        if stop == "length":
            return "interrupted"
        content = _get(message, "content")
        if isinstance(content, list) and any(_get(b, "type") == "toolCall" for b in content):
            return "interrupted"
        return "complete"
    if role == "toolResult":
        return "interrupted"
    if role == "user":
        return "pending"
    return "unknown"


def _derive_status(suffix: str) -> str:
    """Status from the last ``message`` line of the tail window (S11.3); the cut first line never parses."""
    for line in reversed(suffix.split("\n")):
        if not line.startswith("{"):
            continue
        try:
            entry = loads(line)
        except ValueError:
            continue
        if _get(entry, "type") == "message" and truthy(_get(entry, "message")):
            return message_status(entry["message"])
    return "unknown"


# ---------------------------------------------------------------------------------------------------
# One file


def scan_session_info(path: StrPath, *, with_status: bool = True, omp: str | None = None) -> SessionInfo | None:
    """omp's ``scanSessionFile``: a :class:`SessionInfo` from the file's head and tail windows.

    Returns ``None`` for a file omp would not list. ``with_status=False`` skips the tail window and
    leaves ``status`` unset, as omp's most-recent lookup does. ``omp``: the release whose listing
    to imitate (18.3 adds ``assistantTurns``/``isEmptySession``); default: the library's.
    """
    path = os.fspath(path)
    try:
        st = os.stat(path)
        content, suffix = _read_windows(path, with_status)
        values = [value for value, _, _ in parse_jsonl(content)[0]]
        header = parse_header(content, values)
        if header is None:
            return None
        info = summarise(path, st, header, content, values, suffix if with_status else None)
        if has_s20(resolve_omp(omp)):
            turns = max(sum(1 for v in values[1:] if _is_assistant_message(v)),
                        content.count('"role":"assistant"'))
            info.assistant_turns = turns
            info.is_empty_session = turns == 0
        return info
    except (OSError, ValueError, RecursionError, Unlisted):
        return None


def _is_assistant_message(value: Any) -> bool:
    message = _get(value, "message")
    return _get(value, "type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"


def summarise(path: str, st: os.stat_result, header: Header, content: str, values: list[Any],
               suffix: str | None) -> SessionInfo:
    parsed_count = 0
    first_message = ""
    texts: list[str] = []
    short_summary: str | None = None
    # omp starts at record 1 whether the header was record 0, record 1 (after a slot) or textual.
    for entry in values[1:]:
        if entry is None:
            raise Unlisted("null record")  # omp reads entry.type and throws
        kind = _get(entry, "type")
        if kind == "compaction" and isinstance(_get(entry, "shortSummary"), str):
            short_summary = entry["shortSummary"]
        message = _get(entry, "message")
        if kind != "message" or not truthy(message):
            continue
        parsed_count += 1
        role = _get(message, "role")
        if role in ("user", "assistant"):
            text = _content_text(_get(message, "content"))
            if text:
                texts.append(text)
                if not first_message and role == "user":
                    first_message = text
    first_message = first_message or _first_display_message(content) or ""
    created = new_date_ms(header.timestamp if header.timestamp is not None else "")
    return SessionInfo(
        path=path,
        id=header.id,
        cwd=header.cwd if header.cwd is not None else "",
        title=header.title if header.title is not None else short_summary,
        parent_session_path=header.parent_session,
        created=None if created != created else int(created),
        modified=_mtime_ms(st),
        message_count=max(parsed_count, _count_message_markers(content)),
        size=st.st_size,
        first_message=first_message or NO_MESSAGES,
        all_messages_text=" ".join(texts) if texts else first_message,
        status=None if suffix is None else _derive_status(suffix),
    )


# ---------------------------------------------------------------------------------------------------
# Ordering


# ICU root collation of printable ASCII as Bun's localeCompare orders it (letters: lower before upper
# only at the tertiary level). Other C0 controls and DEL are ignorable in ICU.
_ASCII_ORDER: Final = "\t\n\x0b\x0c\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY: Final = {c: i for i, c in enumerate(_ASCII_ORDER)}


def _locale_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A three-level sort key approximating ``String.prototype.localeCompare`` (en-US, ICU)."""
    primary: list[int] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    import unicodedata  # only to sort by title: not on every command's start-up

    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch):
            if secondary:
                secondary[-1] = ord(ch)
            continue
        low = ch.lower()
        weight = _PRIMARY.get(low) if len(low) == 1 else None
        if weight is None:
            if ord(ch) < 0x20 or ch == "\x7f":
                continue
            weight = 1000 + ord(low[0])
        primary.append(weight)
        secondary.append(0)
        tertiary.append(1 if ch != low else 0)
    return tuple(primary), tuple(secondary), tuple(tertiary)


def _locale_compare(a: str, b: str) -> int:
    if a == b:
        return 0
    ka, kb = _locale_key(a), _locale_key(b)
    return (ka > kb) - (ka < kb)


def _compare(a: SessionInfo, b: SessionInfo) -> int:
    # omp: b.modified - a.modified || b.created - a.created || b.path.localeCompare(a.path),
    # where an Invalid Date makes the middle term NaN, which falls through like 0.
    if a.modified != b.modified:
        return b.modified - a.modified
    if a.created is not None and b.created is not None and a.created != b.created:
        return b.created - a.created
    return _locale_compare(b.path, a.path)


def sort_sessions(sessions: Iterable[SessionInfo]) -> list[SessionInfo]:
    return sorted(sessions, key=functools.cmp_to_key(_compare))


def _pinned_first(sessions: list[SessionInfo], pins: Iterable[str] | None) -> list[SessionInfo]:
    pinned = load_pinned_session_ids() if pins is None else set(pins)
    top = [s for s in sessions if s.id in pinned]
    return top + [s for s in sessions if s.id not in pinned] if top else sessions


def load_pinned_session_ids(agent: StrPath | None = None) -> set[str]:
    """Pinned session ids from ``<agent dir>/session-pins.json``; empty when missing or unreadable."""
    path = Path(agent_dir() if agent is None else agent) / PINS_FILENAME
    try:
        pins = loads(path.read_bytes().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return set()
    return {p for p in pins if isinstance(p, str)} if isinstance(pins, list) else set()


# ---------------------------------------------------------------------------------------------------
# Directories


def node_join(directory: str, name: str) -> str:
    # Node's path.join normalises (".." and "." segments, duplicate slashes); the listing shows that.
    joined = posixpath.normpath(posixpath.join(directory, name)) if directory else name
    return joined[1:] if joined.startswith("//") else joined


def glob_visible(directory: str, want_dir: bool) -> list[str]:
    """Names ``Bun.Glob`` matches with ``*``: not hidden, and no symlinks (files only, or dirs only)."""
    try:
        with os.scandir(directory) as it:
            return [e.name for e in it if not e.name.startswith(".")
                    and (e.is_dir(follow_symlinks=False) if want_dir else e.is_file(follow_symlinks=False))]
    except OSError:
        return []


def _jsonl_files(directory: str) -> list[str]:
    # omp itself skips an old-style quarantine (no header); skipping it by name keeps it out of
    # "skipped N file(s)" and costs no read
    return [node_join(directory, n) for n in glob_visible(directory, False)
            if n.endswith(".jsonl") and not n.endswith(LEGACY_QUARANTINE_SUFFIX)]


def _scan_all(files: Iterable[str], with_status: bool, omp: str | None = None) -> list[SessionInfo]:
    found = (scan_session_info(f, with_status=with_status, omp=omp) for f in files)
    return sort_sessions(info for info in found if info is not None)


def recover_orphaned_backups(directory: StrPath) -> list[tuple[str, str]]:
    """Promote ``<name>.jsonl.<x>.bak`` to ``<name>.jsonl`` when that file is missing (S8.4.3).

    These backups are left by omp's EPERM rewrite fallback if it crashes between its two renames.
    The newest backup (by mtime) wins. Returns the ``(backup, primary)`` renames done; failures
    are skipped, as omp only logs them.
    """
    directory = os.fspath(directory)
    candidates: dict[str, tuple[str, float]] = {}
    for name in glob_visible(directory, False):
        if not name.endswith(".bak"):
            continue
        trimmed = name[: -len(".bak")]
        dot = trimmed.rfind(".")
        primary_name = trimmed[:dot]
        if dot <= 0 or not primary_name.endswith(".jsonl"):
            continue
        backup = node_join(directory, name)
        try:
            mtime = _mtime_ms_float(os.stat(backup))
        except OSError:
            continue
        primary = node_join(directory, primary_name)
        if primary not in candidates or mtime > candidates[primary][1]:
            candidates[primary] = (backup, mtime)
    done: list[tuple[str, str]] = []
    for primary, (backup, _) in candidates.items():
        if os.path.exists(primary):
            continue
        try:
            os.rename(backup, primary)
        except OSError:
            continue
        done.append((backup, primary))
    return done


def list_sessions(directory: StrPath, *, pins: Iterable[str] | None = None,
                  recover_backups: bool = True, omp: str | None = None) -> list[SessionInfo]:
    """``SessionManager.list(cwd, directory)``: the bucket's sessions, pinned first, then newest first.

    ``pins`` defaults to :func:`load_pinned_session_ids`; pass ``()`` for none. ``recover_backups``
    (omp always does it) renames orphaned backups first, so it can change the directory.
    """
    directory = os.fspath(directory)
    if recover_backups:
        recover_orphaned_backups(directory)
    return _pinned_first(_scan_all(_jsonl_files(directory), True, omp), pins)


def list_all_sessions(sessions_root: StrPath | None = None, *,
                      pins: Iterable[str] | None = None, omp: str | None = None) -> list[SessionInfo]:
    """``SessionManager.listAll()``: ``<root>/*/*.jsonl`` (one level only), pinned first, then newest first."""
    root = os.fspath(sessions_dir() if sessions_root is None else sessions_root)
    files = [f for bucket in glob_visible(root, True) for f in _jsonl_files(node_join(root, bucket))]
    return _pinned_first(_scan_all(files, True, omp), pins)


def find_most_recent_session(directory: StrPath, *, omp: str | None = None) -> str | None:
    """omp's ``findMostRecentSession``: the first path of the bucket's ordering (pins ignored);
    omp 18.3 passes over untitled sessions without an assistant turn (S20.3.9)."""
    directory = os.fspath(directory)
    recover_orphaned_backups(directory)
    sessions = _scan_all(_jsonl_files(directory), False, omp)
    return next((s.path for s in sessions if not s.skipped_by_resume), None)
