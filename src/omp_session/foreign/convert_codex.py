"""One Codex rollout -> omp entries, as omp's ``CodexSessionStore.load`` converts it.

* ``response_item`` records are the canonical transcript: messages (text, images), reasoning
  (thinking), function / custom / web-search / tool-search calls and their outputs.
* ``event_msg`` records add what the response items lack (user and agent messages, reasoning,
  dynamic and MCP tool calls, web searches), renames (``thread_name_updated``) and rollbacks
  (``thread_rolled_back`` drops the last N user turns); what duplicates a response item is dropped.
* ``turn_context`` records with a new model become ``model_change`` entries; ``compacted`` records
  become ``compaction`` entries that keep Codex's replacement history.
* ``session_meta`` gives the cwd; every other kind is left out, as omp leaves it out.
* Entry ids are ``codex-<n>`` (base 36) in order, one number per converted item.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from omp_session.errors import FormatError
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.js.date import to_iso
from omp_session.js.value import JS_SPACE

from .codex import string_field, timestamp_millis
from .converted import Converted
from .jsonl import Problem, read_records
from .sources import ForeignSession

__all__ = ["KNOWN_KINDS", "convert_codex"]

# Record kinds Codex writes that omp reads nothing from: skipped without a warning.
KNOWN_KINDS = frozenset({"session_meta"})
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.+)", re.DOTALL)
_DETAILS = ("auto", "low", "high", "original")
_TEXT_TYPES = ("input_text", "output_text", "text")


def _empty_usage() -> dict[str, Any]:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _number(record: dict[str, Any], key: str) -> Any:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def _image(value: Any, detail: Any) -> dict[str, Any] | None:
    if not isinstance(value, str):
        return None
    match = _DATA_URL.fullmatch(value)
    if not match:
        return None
    return {"type": "image", "mimeType": match.group(1), "data": match.group(2),
            "detail": detail if detail in _DETAILS else UNDEFINED}


def _response_content(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    content: list[dict[str, Any]] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        kind = string_field(item, "type")
        text = string_field(item, "text")
        if kind in _TEXT_TYPES and text is not None:
            content.append({"type": "text", "text": text})
            continue
        if kind == "input_image":
            image = _image(item.get("image_url"), item.get("detail"))
            if image:
                content.append(image)
    return content


def _text_of(value: Any) -> str:
    return "".join(p["text"] for p in _response_content(value) if p["type"] == "text")


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return {}
    try:
        parsed = codec.loads(value)
    except (ValueError, RecursionError):
        parsed = None  # custom tools carry input that is not JSON on purpose
    return parsed if isinstance(parsed, dict) else {"input": value}


def _output_content(value: Any) -> list[dict[str, Any]]:
    structured = _response_content(value)
    if structured:
        return structured
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if value is UNDEFINED:
        return []
    return [{"type": "text", "text": codec.stringify(value)}]


def _reasoning(payload: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for key in ("summary", "content"):
        value = payload.get(key)
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, dict):
                text = string_field(item, "text")
                if text:
                    parts.append({"type": "thinking", "thinking": text})
    return parts


def _assistant(content: list[dict[str, Any]], timestamp: float, model: str, stop: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "api": "openai-codex-responses", "provider": "openai-codex",
            "model": model, "usage": _empty_usage(), "stopReason": stop, "timestamp": timestamp}


def _tool_result(call_id: str, name: str, content: list[dict[str, Any]], is_error: bool,
                 timestamp: float) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": content,
            "isError": is_error, "timestamp": timestamp}


def _get(record: dict[str, Any], key: str) -> Any:
    return record.get(key, UNDEFINED)


def _coalesce(*values: Any) -> Any:
    """JavaScript ``a ?? b ?? c``."""
    for value in values[:-1]:
        if value is not None and value is not UNDEFINED:
            return value
    return values[-1]


class _Item(dict[str, Any]):
    """A converted record (omp's ``ConvertedRecord``): message, following, model, rollback, title,
    timestamp, compaction; a key is there only when omp's object has it. ``line``: the line whose
    timestamp its time is, or its record's when it has no time (for an error's message)."""

    line = 0


def _response_item(payload: dict[str, Any], timestamp: float, model: str, names: dict[str, str]) -> _Item | None:
    kind = string_field(payload, "type")
    if kind == "message":
        role = string_field(payload, "role")
        content = _response_content(payload.get("content"))
        if not content:
            return None
        if role == "user":
            return _Item(message={"role": "user", "content": content, "timestamp": timestamp})
        if role == "assistant":
            return _Item(message=_assistant(content, timestamp, model, "stop"))
        return None
    if kind == "reasoning":
        thinking = _reasoning(payload)
        return _Item(message=_assistant(thinking, timestamp, model, "stop")) if thinking else None
    if kind in ("function_call", "custom_tool_call"):
        call_id = _coalesce(string_field(payload, "call_id"), string_field(payload, "id"), None)
        name = string_field(payload, "name")
        if not call_id or not name:
            return None
        names[call_id] = name
        custom = kind == "custom_tool_call"
        call = {"type": "toolCall", "id": call_id, "name": name,
                "arguments": _arguments(_get(payload, "input") if custom else _get(payload, "arguments")),
                "customWireName": name if custom else UNDEFINED}
        return _Item(message=_assistant([call], timestamp, model, "toolUse"))
    if kind in ("function_call_output", "custom_tool_call_output"):
        call_id = string_field(payload, "call_id")
        if not call_id:
            return None
        return _Item(message=_tool_result(call_id, names.get(call_id, "unknown"),
                                          _output_content(_get(payload, "output")), False, timestamp))
    if kind in ("web_search_call", "tool_search_call"):
        call_id = _coalesce(string_field(payload, "call_id"), string_field(payload, "id"), None)
        if not call_id:
            return None
        name = "web_search" if kind == "web_search_call" else "tool_search"
        names[call_id] = name
        raw = _get(payload, "action") if kind == "web_search_call" else _get(payload, "arguments")
        call = {"type": "toolCall", "id": call_id, "name": name, "arguments": _arguments(raw)}
        return _Item(message=_assistant([call], timestamp, model, "toolUse"))
    if kind == "tool_search_output":
        call_id = string_field(payload, "call_id")
        if not call_id:
            return None
        return _Item(message=_tool_result(call_id, names.get(call_id, "tool_search"),
                                          _output_content(_get(payload, "tools")),
                                          payload.get("status") == "failed", timestamp))
    return None


class _Canonical:
    """What the response items already say: user and assistant texts, tool call ids."""

    def __init__(self, records: list[tuple[dict[str, Any], int]]) -> None:
        self.users: set[str] = set()
        self.assistants: set[str] = set()
        self.calls: set[str] = set()
        for record, _line in records:
            payload = record.get("payload")
            if record.get("type") != "response_item" or not isinstance(payload, dict):
                continue
            call_id = _coalesce(string_field(payload, "call_id"), string_field(payload, "id"), None)
            kind = payload.get("type")
            if call_id and isinstance(kind, str) and "call" in kind:
                self.calls.add(call_id)
            if kind == "message":
                text = _text_of(payload.get("content"))
                if not text:
                    continue
                if payload.get("role") == "user":
                    self.users.add(text)
                elif payload.get("role") == "assistant":
                    self.assistants.add(text)
            elif kind == "reasoning":
                self.assistants.update(p["thinking"] for p in _reasoning(payload))


def _event(payload: dict[str, Any], timestamp: float, model: str, canon: _Canonical,
           names: dict[str, str]) -> _Item | None:
    kind = string_field(payload, "type")
    if kind == "user_message":
        text = string_field(payload, "message")
        if not text or text in canon.users:
            return None
        return _Item(message={"role": "user", "content": text, "timestamp": timestamp})
    if kind == "agent_message":
        text = string_field(payload, "message")
        if not text or text in canon.assistants:
            return None
        return _Item(message=_assistant([{"type": "text", "text": text}], timestamp, model, "stop"))
    if kind == "agent_reasoning":
        text = string_field(payload, "text")
        if not text or text in canon.assistants:
            return None
        return _Item(message=_assistant([{"type": "thinking", "thinking": text}], timestamp, model, "stop"))
    if kind == "dynamic_tool_call_request":
        call_id = _coalesce(string_field(payload, "callId"), string_field(payload, "call_id"), None)
        name = string_field(payload, "tool")
        if not call_id or not name or call_id in canon.calls:
            return None
        names[call_id] = name
        call = {"type": "toolCall", "id": call_id, "name": name, "arguments": _arguments(_get(payload, "arguments"))}
        return _Item(message=_assistant([call], timestamp, model, "toolUse"))
    if kind == "dynamic_tool_call_response":
        call_id = _coalesce(string_field(payload, "call_id"), string_field(payload, "callId"), None)
        if not call_id or call_id in canon.calls:
            return None
        error = string_field(payload, "error")
        name = _coalesce(names.get(call_id), string_field(payload, "tool"), "unknown")
        content = [{"type": "text", "text": error}] if error else _output_content(_get(payload, "content_items"))
        return _Item(message=_tool_result(call_id, name, content,
                                          error is not None or payload.get("success") is False, timestamp))
    if kind == "web_search_end":
        call_id = string_field(payload, "call_id")
        if not call_id:
            return None
        name = names.get(call_id, "web_search")
        result = _tool_result(call_id, name,
                              _output_content(_coalesce(_get(payload, "results"), _get(payload, "query"))),
                              False, timestamp)
        if call_id in canon.calls or call_id in names:
            return _Item(message=result)
        names[call_id] = name
        call = {"type": "toolCall", "id": call_id, "name": name,
                "arguments": _arguments(_coalesce(_get(payload, "action"), _get(payload, "query")))}
        return _Item(message=_assistant([call], timestamp, model, "toolUse"), following=result)
    if kind == "mcp_tool_call_end":
        call_id = string_field(payload, "call_id")
        invocation = payload.get("invocation")
        if not call_id or call_id in canon.calls or not isinstance(invocation, dict):
            return None
        server = string_field(invocation, "server")
        tool = string_field(invocation, "tool")
        if not server or not tool:
            return None
        name = f"{server}/{tool}"
        names[call_id] = name
        call = {"type": "toolCall", "id": call_id, "name": name,
                "arguments": _arguments(_get(invocation, "arguments"))}
        raw = _get(payload, "result")
        ok = raw.get("Ok") if isinstance(raw, dict) else None
        result = ok if isinstance(ok, dict) else raw
        err = raw.get("Err") if isinstance(raw, dict) else None
        error = err if isinstance(err, str) else None
        content = [{"type": "text", "text": error}] if error else _output_content(
            _get(result, "content") if isinstance(result, dict) else result)
        is_error = error is not None or (isinstance(result, dict) and result.get("isError") is True)
        return _Item(message=_assistant([call], timestamp, model, "toolUse"),
                     following=_tool_result(call_id, name, content, is_error, timestamp))
    if kind == "thread_name_updated":
        return _Item(title=string_field(payload, "thread_name"))
    if kind == "thread_rolled_back":
        turns = _number(payload, "num_turns")
        return _Item(rollback=0 if turns is None else turns)
    return None


def _rollback(items: list[_Item], turns: float) -> None:
    remaining = turns
    while remaining > 0:
        user = next((i for i in range(len(items) - 1, -1, -1)
                     if items[i].get("message", {}).get("role") == "user"), -1)
        if user < 0:
            return
        del items[user:]
        remaining -= 1


def _js_max(a: float, b: float) -> float:
    return math.nan if a != a or b != b else max(a, b)


def _compaction(payload: dict[str, Any], timestamp: float) -> _Item | None:
    message = string_field(payload, "message")
    summary = message.strip(JS_SPACE) if message is not None else None
    raw = payload.get("replacement_history")
    history = raw if isinstance(raw, list) and all(isinstance(c, dict) for c in raw) else None
    if not summary and history is None:
        return None
    item = next((c for c in reversed(history or []) if (
        c.get("type") == "compaction" and isinstance(c.get("encrypted_content"), str))
        or c.get("type") == "compaction_summary"), None)
    return _Item(compaction=(summary or "Context compacted by Codex.", history, item), timestamp=timestamp)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def _tally(record: dict[str, Any], item: _Item | None, kinds: Counter[str], problems: list[Problem], path: str,
           line: int) -> None:
    kind = record.get("type")
    if not isinstance(kind, str):  # never converted; not put in words (an array may nest past str()'s stack)
        kinds["(no type): skipped"] += 1
        problems.append(Problem(path, line, "a record without a type: skipped, as omp does"))
        return
    payload = record.get("payload")
    sub = payload.get("type") if isinstance(payload, dict) else None
    label = f"{kind}/{sub}" if isinstance(sub, str) and kind in ("response_item", "event_msg") else kind
    if item is not None:
        kinds[f"{label}: converted"] += 1
    elif kind in ("response_item", "event_msg", "turn_context", "compacted") or kind in KNOWN_KINDS:
        kinds[f"{label}: skipped"] += 1
    else:
        kinds[f"{label}: unknown, skipped"] += 1
        problems.append(Problem(path, line, f"unknown record kind {kind!r}: skipped, as omp does"))


def convert_codex(info: ForeignSession) -> Converted:
    """Read and convert ``info.path``; raises OSError when it cannot be read and
    :class:`FormatError` where omp's import fails."""
    read = read_records(info.path)
    records = read.records
    if not records:
        raise FormatError(f"Codex session {info.id} at {info.path} is empty or malformed", path=info.path)
    meta = next((r for r, _ in records if r.get("type") == "session_meta" and isinstance(r.get("payload"), dict)),
                None)
    cwd = _coalesce(string_field(meta["payload"], "cwd"), info.cwd) if meta is not None else info.cwd
    out = Converted(cwd=cwd, entries=[], problems=list(read.problems))
    canon = _Canonical(records)
    items: list[_Item] = []
    names: dict[str, str] = {}
    model = "codex"
    fallback = info.created_ms
    fallback_line = 0  # the line whose timestamp the fallback comes from (0: none, the session's creation)
    title = info.title
    for record, line in records:
        own = timestamp_millis(record.get("timestamp"), math.nan)
        # timestamp_millis(..., fallback); a time out of range is blamed on the line it is written on
        timestamp, time_line = (own, line) if own == own else (fallback, fallback_line or line)
        if timestamp > fallback + 1:
            fallback_line = time_line
        fallback = _js_max(fallback + 1, timestamp)
        payload = record.get("payload")
        if not isinstance(payload, dict):
            _tally(record, None, out.kinds, out.problems, info.path, line)
            continue
        item: _Item | None = None
        kind = record.get("type")
        if kind == "turn_context":
            next_model = string_field(payload, "model")
            if next_model and next_model != model:
                model = next_model
                item = _Item(model=model, timestamp=timestamp)
        elif kind == "response_item":
            item = _response_item(payload, timestamp, model, names)
        elif kind == "event_msg":
            item = _event(payload, timestamp, model, canon, names)
        elif kind == "compacted":
            item = _compaction(payload, timestamp)
        _tally(record, item, out.kinds, out.problems, info.path, line)
        if item is None:
            continue
        item.line = time_line if "timestamp" in item or "message" in item else line
        if item.get("rollback"):
            _rollback(items, item["rollback"])
        else:
            items.append(item)
        if "following" in item:
            following = _Item(message=item["following"])
            following.line = time_line
            items.append(following)
        if item.get("title"):
            title = item["title"]

    parent: str | None = None
    for ordinal, item in enumerate(items, 1):
        entry_id = f"codex-{_base36(ordinal)}"
        message = item.get("message")
        stamp = _coalesce(message["timestamp"] if message is not None else UNDEFINED,
                          item.get("timestamp", UNDEFINED), fallback)
        try:
            timestamp_text = to_iso(stamp)
        except ValueError:
            raise FormatError("RangeError: Invalid time value (omp cannot import this session)",
                              # an item without a time of its own takes the last: blame where it is from
                              path=info.path, line=item.line if message is not None or "timestamp" in item
                              else fallback_line or item.line) from None
        entry: dict[str, Any] | None = None
        if message is not None:
            entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": timestamp_text,
                     "message": message}
        elif item.get("model"):
            entry = {"type": "model_change", "id": entry_id, "parentId": parent, "timestamp": timestamp_text,
                     "model": f"openai-codex/{item['model']}"}
        elif "compaction" in item:
            summary, history, compaction_item = item["compaction"]
            preserve: Any = UNDEFINED
            if history is not None:
                remote: dict[str, Any] = {"provider": "openai-codex", "replacementHistory": history}
                if compaction_item is not None:
                    remote["compactionItem"] = compaction_item
                preserve = {"openaiRemoteCompaction": remote}
            entry = {"type": "compaction", "id": entry_id, "parentId": parent, "timestamp": timestamp_text,
                     "summary": summary, "shortSummary": "Imported Codex compaction", "firstKeptEntryId": entry_id,
                     "tokensBefore": 0, "preserveData": preserve}
        if entry is None:
            continue
        out.entries.append(entry)
        parent = entry_id
    if title:
        out.title = title
        out.title_trigger = "codex-import"
    return out
