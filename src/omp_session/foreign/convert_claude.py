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

from typing import Any

from omp_session.errors import FormatError
from omp_session.js.date import to_iso

from .claude import string_field, timestamp_ms
from .converted import Converted
from .filetimes import file_times
from .jsonl import Problem, read_records
from .sources import ForeignSession

__all__ = ["KNOWN_KINDS", "convert_claude"]

# Record kinds Claude Code writes that omp reads no message from: skipped without a warning.
KNOWN_KINDS = frozenset({"summary", "system", "custom-title", "ai-title", "file-history-snapshot",
                         "queue-operation", "progress", "attachment", "tag", "agent-name", "last-prompt",
                         "pr-link", "mode"})


def _empty_usage() -> dict[str, Any]:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _number(record: dict[str, Any], key: str) -> Any:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value in (
            float("inf"), float("-inf")):
        return 0
    return value


def _image(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or value.get("type") != "image" or not isinstance(value.get("source"), dict):
        return None
    data = string_field(value["source"], "data")
    mime = string_field(value["source"], "media_type")
    return {"type": "image", "data": data, "mimeType": mime} if data and mime else None


def _user_part(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    if value.get("type") == "text" and isinstance(value.get("text"), str):
        return {"type": "text", "text": value["text"]}
    return _image(value)


def _tool_result_content(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if not isinstance(value, list):
        return []
    content: list[dict[str, Any]] = []
    for block in value:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            content.append({"type": "text", "text": block["text"]})
        else:
            image = _image(block)
            if image:
                content.append(image)
    return content


def _assistant_content(value: Any, tool_names: dict[str, str]) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    content: list[dict[str, Any]] = []
    for block in value:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            content.append({"type": "text", "text": block["text"]})
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thinking = {"type": "thinking", "thinking": block["thinking"]}
            if isinstance(block.get("signature"), str):
                thinking["thinkingSignature"] = block["signature"]
            content.append(thinking)
        elif kind == "tool_use":
            call_id = string_field(block, "id")
            name = string_field(block, "name")
            if not call_id or not name:
                continue
            arguments = block.get("input")
            content.append({"type": "toolCall", "id": call_id, "name": name,
                            "arguments": arguments if isinstance(arguments, dict) else {}})
            tool_names[call_id] = name
    return content


def _usage(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return _empty_usage()
    i, o = _number(value, "input_tokens"), _number(value, "output_tokens")
    r, w = _number(value, "cache_read_input_tokens"), _number(value, "cache_creation_input_tokens")
    return {"input": i, "output": o, "cacheRead": r, "cacheWrite": w, "totalTokens": i + o + r + w,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _stop_reason(value: Any) -> str:
    if value == "tool_use":
        return "toolUse"
    if value == "max_tokens":
        return "length"
    if value in ("end_turn", "stop_sequence", "pause_turn") or value is None:
        return "stop"
    return "error"


def _convert_record(record: dict[str, Any], fallback: float,
                    tool_names: dict[str, str]) -> list[tuple[dict[str, Any], str]]:
    """(message, id suffix) pairs of one user or assistant record."""
    message = record["message"]
    timestamp = timestamp_ms(record.get("timestamp"), fallback)
    if record["type"] == "assistant":
        content = _assistant_content(message.get("content"), tool_names)
        error = string_field(record, "error")
        if not content and not error:
            return []
        out: dict[str, Any] = {
            "role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": string_field(message, "model") or "unknown", "usage": _usage(message.get("usage")),
            # an API-error record still carries a completed stop_reason: only the flag says it failed
            "stopReason": "error" if record.get("isApiErrorMessage") is True else _stop_reason(
                message.get("stop_reason")),
            "timestamp": timestamp}
        response_id = string_field(message, "id")
        if response_id:
            out["responseId"] = response_id
        if error:
            out["errorMessage"] = error
        status = record.get("apiErrorStatus")
        if not isinstance(status, bool) and isinstance(status, int | float) and status == status and abs(
                status) != float("inf"):
            out["errorStatus"] = status
        return [(out, "message")]
    raw = message.get("content")
    if isinstance(raw, list):
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
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call_id = string_field(block, "tool_use_id")
            if not call_id:
                continue
            if parts:
                results.append(({"role": "user", "content": parts, "timestamp": timestamp}, f"user-{start}"))
                parts = []
            results.append(({"role": "toolResult", "toolCallId": call_id,
                             "toolName": tool_names.get(call_id, "unknown"),
                             "content": _tool_result_content(block.get("content")),
                             "isError": block.get("is_error") is True, "timestamp": timestamp}, f"tool-{index}"))
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


def _fate(record: dict[str, Any], kinds: Any, problems: list[Problem], path: str, line: int) -> bool:
    """Count the record's kind; True when omp converts records of this kind."""
    kind = record.get("type")
    if kind in ("user", "assistant"):
        if record.get("isSidechain") is True:
            kinds[f"{kind}: sidechain (subagent), skipped"] += 1
            return False
        if record.get("isMeta") is True:
            kinds[f"{kind}: meta, skipped"] += 1
            return False
        if not isinstance(record.get("message"), dict):
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


def convert_claude(info: ForeignSession) -> Converted:
    """Read and convert ``info.path``; raises OSError when it cannot be read and
    :class:`FormatError` where omp's import fails."""
    read = read_records(info.path)
    mtime = file_times(info.path).mtime_ms
    if not read.records and read.size > 0:
        raise FormatError(f"Claude session {info.id} contains no readable records", path=info.path)
    parents: dict[str, str | None] = {}
    cwd: str | None = None
    source_title: str | None = None
    ai_title: str | None = None
    for value, _line in read.records:
        uuid = string_field(value, "uuid")
        if uuid:
            parents[uuid] = string_field(value, "parentUuid")
        if not cwd:
            cwd = string_field(value, "cwd")
        if value.get("type") == "custom-title":
            source_title = string_field(value, "customTitle") or source_title
        if value.get("type") == "ai-title":
            ai_title = string_field(value, "aiTitle") or ai_title

    out = Converted(cwd=cwd or info.cwd, entries=[], problems=list(read.problems))
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

    for value, line in read.records:
        if not _fate(value, out.kinds, out.problems, info.path, line):
            continue
        converted = _convert_record(value, mtime, tool_names)
        if not converted:
            out.kinds[f"{value['type']}: nothing omp keeps, skipped"] += 1
            continue
        out.kinds[f"{value['type']}: converted"] += 1
        source_uuid = string_field(value, "uuid") or f"line-{line}"
        parent_id = resolve_parent(string_field(value, "parentUuid"))
        try:
            timestamp = to_iso(timestamp_ms(value.get("timestamp"), mtime))
        except ValueError:
            raise FormatError("RangeError: Invalid time value (omp cannot import this session)",
                              path=info.path, line=line) from None
        if value["type"] == "assistant":
            model = string_field(value["message"], "model")
            if model and model != last_model:
                entry_id = _unique(f"claude-{source_uuid}-model", used)
                out.entries.append({"type": "model_change", "id": entry_id, "parentId": parent_id,
                                    "timestamp": timestamp, "model": f"anthropic/{model}"})
                parent_id = entry_id
                last_model = model
        for message, suffix in converted:
            synthetic += 1
            entry_id = _unique(f"claude-{source_uuid}-{suffix}-{synthetic}", used)
            out.entries.append({"type": "message", "id": entry_id, "parentId": parent_id, "timestamp": timestamp,
                                "message": message})
            parent_id = entry_id
        if parent_id:
            tails[source_uuid] = parent_id

    title = source_title or ai_title or info.title
    if title:
        out.title = title
        out.title_source = "user" if source_title else "auto"
    return out
