"""One Claude Code transcript -> omp entries, as omp's ``ClaudeSessionStore.load`` converts it.

* ``user`` and ``assistant`` records become ``message`` entries (text, images, thinking with its
  signature, tool calls, tool results split out of a user record into ``toolResult`` messages);
  an assistant record with a new model is preceded by a ``model_change``.
* Sidechain (subagent) and meta records, summaries, system records, snapshots, queue operations
  and every other kind are left out, as omp leaves them out; their uuids still link the tree.
* Entry ids are derived from the source uuids (``claude-<uuid>-<suffix>-<n>``), timestamps from
  the records (the file's mtime when a record has none), parents from ``parentUuid`` through the
  records that were left out.
* The title is the last ``custom-title`` (set by the user), else the last ``ai-title``.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from omp_session.errors import FormatError
from omp_session.js.date import date_parse, to_iso

from .claude import string_field, timestamp_ms
from .claude_records import ClaudeBlock, ClaudeMessage, ClaudeRecord, read_claude_records, tool_result_blocks
from .converted import Converted
from .filetimes import file_times
from .jsonl import Problem
from .lines import materialize, raw_text
from .sources import ForeignSession

__all__ = ["KNOWN_KINDS", "convert_claude"]

# Record kinds Claude Code writes that omp reads no message from: skipped without a warning.
KNOWN_KINDS = frozenset({"summary", "system", "custom-title", "ai-title", "file-history-snapshot",
                         "queue-operation", "progress", "attachment", "tag", "agent-name", "last-prompt",
                         "pr-link", "mode"})


def _empty_usage() -> dict[str, Any]:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


_MAX_SAFE = 2**53
_INF = float("inf")


def _double(value: Any) -> Any:
    """An int as the double ``JSON.parse`` gave omp for its literal: past 2**53 rounded, past the
    doubles infinite (msgspec keeps every integer literal exact). Anything else as it is."""
    if value.__class__ is not int or -_MAX_SAFE <= value <= _MAX_SAFE:
        return value
    try:
        return float(value)
    except OverflowError:
        return _INF if value > 0 else -_INF


def _number(record: dict[str, Any], key: str) -> Any:
    value = _double(record.get(key))
    if value.__class__ is int:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value in (
            float("inf"), float("-inf")):
        return 0
    return value


def _text(value: Any) -> Any:
    """A block's text field as an entry holds it: the :class:`RawText` of a JSON string (or the
    ``str`` of a record read the exact way); None when it is no string."""
    c = value.__class__
    if c is msgspec.Raw:
        token = bytes(value)
        return raw_text(token) if token[:1] == b'"' else None
    return value if c is str else None


def _image(block: Any) -> dict[str, Any] | None:
    if block.__class__ is not ClaudeBlock or block.type != "image" or not isinstance(block.source, dict):
        return None
    data = string_field(block.source, "data")
    mime = string_field(block.source, "media_type")
    return {"type": "image", "data": data, "mimeType": mime} if data and mime else None


def _user_part(block: Any) -> dict[str, Any] | None:
    if block.__class__ is not ClaudeBlock:
        return None
    if block.type == "text":
        text = _text(block.text)
        return {"type": "text", "text": text} if text is not None else None
    return _image(block)


def _tool_result_content(value: Any) -> list[dict[str, Any]]:
    c = value.__class__
    if c is msgspec.Raw:
        token = bytes(value)
        if token[:1] == b'"':
            return [{"type": "text", "text": raw_text(token)}]
        if token[:1] != b"[":
            return []
        value = tool_result_blocks(token)
    elif c is str:
        return [{"type": "text", "text": value}]
    elif c is not list:
        return []
    content: list[dict[str, Any]] = []
    for block in value:
        part = _user_part(block)  # a text, an image; nothing else
        if part:
            content.append(part)
    return content


def _assistant_content(value: Any, tool_names: dict[str, str]) -> list[dict[str, Any]]:
    if value.__class__ is not list:
        return []
    content: list[dict[str, Any]] = []
    for block in value:
        if block.__class__ is not ClaudeBlock:
            continue
        kind = block.type
        if kind == "text":
            text = _text(block.text)
            if text is not None:
                content.append({"type": "text", "text": text})
        elif kind == "thinking":
            text = _text(block.thinking)
            if text is not None:
                thinking = {"type": "thinking", "thinking": text}
                if isinstance(block.signature, str):
                    thinking["thinkingSignature"] = block.signature
                content.append(thinking)
        elif kind == "tool_use":
            call_id = _str(block.id)
            name = _str(block.name)
            if not call_id or not name:
                continue
            arguments = block.input
            content.append({"type": "toolCall", "id": call_id, "name": name,
                            "arguments": arguments if isinstance(arguments, dict) else {}})
            tool_names[call_id] = name
    return content


def _usage(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return _empty_usage()
    i, o = _number(value, "input_tokens"), _number(value, "output_tokens")
    r, w = _number(value, "cache_read_input_tokens"), _number(value, "cache_creation_input_tokens")
    if all(t.__class__ is int and -2**51 <= t <= 2**51 for t in (i, o, r, w)):
        total = i + o + r + w  # no sum on the way past 2**53: the doubles omp adds give the same
    else:
        total = _js_number(float(i) + o + r + w)  # omp adds doubles, rounding each sum
    return {"input": i, "output": o, "cacheRead": r, "cacheWrite": w, "totalTokens": total,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _js_number(value: float) -> Any:
    """An integral double within 2**53 as an int (spelt the same by ``JSON.stringify``)."""
    return int(value) if value.is_integer() and -_MAX_SAFE <= value <= _MAX_SAFE else value


def _stop_reason(value: Any) -> str:
    if value == "tool_use":
        return "toolUse"
    if value == "max_tokens":
        return "length"
    if value in ("end_turn", "stop_sequence", "pause_turn") or value is None:
        return "stop"
    return "error"


def _str(value: Any) -> str | None:
    """``stringField`` of a field already read: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _js_time(ms: Any) -> Any:
    """``ms`` as omp's number: an integral double is written without ``.0``, so it is held as an int
    (the same number, and ``JSON.stringify`` spells it the same way without a fix-up)."""
    if ms.__class__ is float and ms.is_integer() and -2**53 <= ms <= 2**53:
        return int(ms)
    return ms


# What Claude Code writes (toISOString): for such a time of a valid day, Date.parse gives the day's
# midnight plus the time of day, and toISOString gives the text back.
_ISO_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")


class _Clock:
    """A record's time (``timestamp_ms``) and its ``toISOString``, with the days of one transcript
    worked out once."""

    def __init__(self, fallback: float) -> None:
        self.fallback = fallback
        self._days: dict[str, int | None] = {}

    def _midnight(self, day: str) -> int | None:
        try:
            return self._days[day]
        except KeyError:
            ms = date_parse(f"{day}T00:00:00.000Z")
            found = int(ms) if ms == ms and to_iso(ms)[:10] == day else None  # not "2025-02-30"
            self._days[day] = found
            return found

    def time(self, value: Any) -> tuple[Any, str | None]:
        """(the time in ms, its ISO text when known without ``to_iso``)."""
        if value.__class__ is str and len(value) == 24:
            m = _ISO_TIME.fullmatch(value)
            if m is not None:
                hour, minute, second, milli = map(int, m.groups())
                if hour <= 23 and minute <= 59 and second <= 59:
                    midnight = self._midnight(value[:10])
                    if midnight is not None:
                        return midnight + hour * 3_600_000 + minute * 60_000 + second * 1000 + milli, value
        if value.__class__ is int and abs(_double(value)) == _INF:
            value = _INF  # past the doubles omp's number is Infinity, not a time; short of them an
            # int is written as omp's double is
        return _js_time(timestamp_ms(value, self.fallback)), None


def _convert_record(record: ClaudeRecord, message: ClaudeMessage, timestamp: Any,
                    tool_names: dict[str, str]) -> list[tuple[dict[str, Any], str]]:
    """(message, id suffix) pairs of one user or assistant record (whose ``message`` is given)."""
    if record.type == "assistant":
        content = _assistant_content(message.content, tool_names)
        error = _str(record.error)
        if not content and not error:
            return []
        out: dict[str, Any] = {
            "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": _str(message.model) or "unknown", "usage": _usage(message.usage),
            # an API-error record still carries a completed stop_reason: only the flag says it failed
            "stopReason": "error" if record.isApiErrorMessage is True else _stop_reason(
                message.stop_reason),
            "timestamp": timestamp}
        response_id = _str(message.id)
        if response_id:
            out["responseId"] = response_id
        if error:
            out["errorMessage"] = error
        status = _double(record.apiErrorStatus)
        if not isinstance(status, bool) and isinstance(status, int | float) and status == status and abs(
                status) != float("inf"):
            out["errorStatus"] = status
        return [(out, "message")]
    raw = message.content
    if raw.__class__ is list:
        results: list[tuple[dict[str, Any], str]] = []
        parts: list[dict[str, Any]] = []
        start = 0
        for index, block in enumerate(raw):
            part = _user_part(block)
            if part:
                if not parts:
                    start = index
                parts.append(part)
                continue
            if block.__class__ is not ClaudeBlock or block.type != "tool_result":
                continue
            call_id = _str(block.tool_use_id)
            if not call_id:
                continue
            if parts:
                results.append(({"role": "user", "content": parts, "timestamp": timestamp}, f"user-{start}"))
                parts = []
            results.append(({"role": "toolResult", "toolCallId": call_id,
                             "toolName": tool_names.get(call_id, "unknown"),
                             "content": _tool_result_content(block.content),
                             "isError": block.is_error is True, "timestamp": timestamp}, f"tool-{index}"))
        if parts:
            results.append(({"role": "user", "content": parts, "timestamp": timestamp}, f"user-{start}"))
        return results  # a list that gave nothing gives nothing as a whole either
    if isinstance(raw, str) and raw:
        return [({"role": "user", "content": raw, "timestamp": timestamp}, "message")]
    return []


def _unique(base: str, used: set[str]) -> str:
    candidate, n = base, 2
    while candidate in used:
        candidate = f"{base}-{n}"
        n += 1
    used.add(candidate)
    return candidate


def _fate(record: ClaudeRecord, kinds: Any, problems: list[Problem], path: str, line: int) -> bool:
    """Count the record's kind; True when omp converts records of this kind."""
    kind = record.type
    if kind == "user" or kind == "assistant":
        if record.isSidechain is True:
            kinds[f"{kind}: sidechain (subagent), skipped"] += 1
            return False
        if record.isMeta is True:
            kinds[f"{kind}: meta, skipped"] += 1
            return False
        if record.message is None:
            kinds[f"{kind}: no message, skipped"] += 1
            problems.append(Problem(path, line, f"a {kind} record without a message object: skipped, as omp "
                                                "does"))
            return False
        return True
    if isinstance(kind, str) and kind in KNOWN_KINDS:
        kinds[f"{kind}: skipped"] += 1
    elif isinstance(kind, str):
        kinds[f"{kind}: unknown, skipped"] += 1
        problems.append(Problem(path, line, f"unknown record kind {kind!r}: skipped, as omp does"))
    else:
        kinds["(no type): skipped"] += 1
        problems.append(Problem(path, line, "a record without a type: skipped, as omp does"))
    return False


def convert_claude(info: ForeignSession, *, raw_text: bool = False) -> Converted:
    """Read and convert ``info.path``; raises OSError when it cannot be read and
    :class:`FormatError` where omp's import fails.

    ``raw_text``: texts copied from the transcript stay the JSON text they were there
    (:class:`RawText`, written out as it is by :func:`entry_line`), else they are ``str``."""
    read = read_claude_records(info.path)
    mtime = file_times(info.path, birth=False).mtime_ms
    if not read.records and read.size > 0:
        raise FormatError(f"Claude session {info.id} contains no readable records", path=info.path)
    parents: dict[str, str | None] = {}
    cwd: str | None = None
    source_title: str | None = None
    ai_title: str | None = None
    for value, _line in read.records:
        uuid = _str(value.uuid)
        if uuid:
            parents[uuid] = _str(value.parentUuid)
        if not cwd:
            cwd = _str(value.cwd)
        kind = value.type
        if kind == "custom-title":
            source_title = _str(value.customTitle) or source_title
        elif kind == "ai-title":
            ai_title = _str(value.aiTitle) or ai_title

    out = Converted(cwd=cwd or info.cwd, entries=[], problems=list(read.problems))
    entries = out.entries
    kinds = out.kinds
    tails: dict[str, str] = {}
    used: set[str] = set()
    tool_names: dict[str, str] = {}
    last_model: str | None = None
    synthetic = 0

    def resolve_parent(source_id: str | None) -> str | None:
        seen: set[str] = set()
        cursor = source_id
        while cursor and cursor not in seen:
            seen.add(cursor)
            kept = tails.get(cursor)
            if kept:
                return kept
            cursor = parents.get(cursor)
        return None

    clock = _Clock(mtime)
    for value, line in read.records:
        if not _fate(value, kinds, out.problems, info.path, line):
            continue
        message = value.message
        assert message is not None  # _fate saw to it
        ms, iso = clock.time(value.timestamp)
        converted = _convert_record(value, message, ms, tool_names)
        kind = value.type
        if not converted:
            kinds[f"{kind}: nothing omp keeps, skipped"] += 1
            continue
        kinds[f"{kind}: converted"] += 1
        source_uuid = _str(value.uuid) or f"line-{line}"
        parent_id = resolve_parent(_str(value.parentUuid))
        try:
            timestamp = iso or to_iso(ms)
        except ValueError:
            raise FormatError("RangeError: Invalid time value (omp cannot import this session)",
                              path=info.path, line=line) from None
        if kind == "assistant":
            model = _str(message.model)
            if model and model != last_model:
                entry_id = _unique(f"claude-{source_uuid}-model", used)
                entries.append({"type": "model_change", "id": entry_id, "parentId": parent_id,
                                "timestamp": timestamp, "model": f"anthropic/{model}"})
                parent_id = entry_id
                last_model = model
        for body, suffix in converted:
            synthetic += 1
            entry_id = _unique(f"claude-{source_uuid}-{suffix}-{synthetic}", used)
            entries.append({"type": "message", "id": entry_id, "parentId": parent_id, "timestamp": timestamp,
                            "message": body})
            parent_id = entry_id
        if parent_id:
            tails[source_uuid] = parent_id

    if not raw_text:
        out.entries = [materialize(entry) for entry in entries]
    title = source_title or ai_title or info.title
    if title:
        out.title = title
        out.title_source = "user" if source_title else "auto"
    return out
