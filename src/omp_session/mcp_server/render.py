"""Messages and entries as a model reads them: one plain ``text`` per item, clipped when long.

An item is ``{"i", "id"?, "role" or "type", "time"?, "text", ...}``: ``i`` its place in the view
(what ``from`` pages by), ``id`` the entry it comes from when there is one (what ``read_entry``
takes). Tool calls are lines ``→ name(call id) {arguments}`` in the assistant's text; thinking is
left out (it is the model's scratch, seldom what a later session needs). A text longer than the
caller's ``max_chars`` keeps its head and its tail (an error is often at the end) and says how
many characters it left out, and how to read them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from omp_session.js import codec
from omp_session.js.date import to_iso
from omp_session.model.text import shown

__all__ = ["clip", "entry_item", "entry_text", "iso", "message_item", "message_text", "preview", "utf8_safe"]

Scrub = Callable[[str], str]


def iso(value: Any) -> str | None:
    """An entry's or message's time as ISO text: entries store ISO strings, messages epoch ms."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return to_iso(value)
        except ValueError:  # NaN or beyond JavaScript's dates
            return None
    return None


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):  # NaN, deep nesting: omp's own encoder copes
        return codec.stringify(value) or "null"


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else _json(content)
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(shown(block.get("text", "")))
        elif kind == "toolCall":
            parts.append(f"→ {shown(block.get('name'))}({shown(block.get('id'))}) {_json(block.get('arguments'))}")
        elif kind == "image":
            parts.append(f"[image {shown(block.get('mimeType') or '')}]".replace(" ]", "]"))
    return "\n".join(p for p in parts if p)


def message_text(message: Any) -> str:
    """The whole text of an AgentMessage (context, transcript or a message entry's ``message``)."""
    if not isinstance(message, dict):
        return _json(message)
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        return shown(message.get("summary", ""))
    if role == "bashExecution":
        return f"$ {shown(message.get('command', ''))}\n{shown(message.get('output', ''))}".rstrip("\n")
    if role == "pythonExecution":
        return f">>> {shown(message.get('code', ''))}\n{shown(message.get('output', ''))}".rstrip("\n")
    if role == "fileMention":
        files = message.get("files")
        names = [f.get("path") if isinstance(f, dict) else f for f in (files if isinstance(files, list) else [])]
        return "files: " + ", ".join(shown(n) for n in names)
    text = _blocks_text(message.get("content"))
    error = message.get("errorMessage")
    if role == "assistant" and isinstance(error, str) and error:
        text = f"{text}\n[error: {error}]" if text else f"[error: {error}]"
    return text


def message_item(message: Any, scrub: Scrub) -> dict[str, Any]:
    """``role``, ``time``, the full ``text`` (not clipped yet) and what else identifies it."""
    item: dict[str, Any] = {}
    if isinstance(message, dict):
        item["role"] = shown(message.get("role"))
        when = iso(message.get("timestamp"))
        if when is not None:
            item["time"] = when
        role = message.get("role")
        if role == "toolResult":
            item["tool"] = shown(message.get("toolName"))
            item["call"] = shown(message.get("toolCallId"))
            if message.get("isError") is True:
                item["error"] = True
        elif role == "assistant" and isinstance(message.get("model"), str):
            item["model"] = message["model"]
        elif role in ("custom", "hookMessage") and message.get("customType") is not None:
            item["custom_type"] = shown(message.get("customType"))
    else:
        item["role"] = "?"
    item["text"] = scrub(message_text(message))
    return item


def entry_text(entry: Any) -> str:
    """The whole text of an entry of any type (a message entry's is its message's)."""
    if not isinstance(entry, dict):
        return _json(entry)
    kind = entry.get("type")
    if kind == "message":
        return message_text(entry.get("message"))
    if kind in ("compaction", "branch_summary"):
        return shown(entry.get("summary", ""))
    if kind == "custom_message":
        return _blocks_text(entry.get("content"))
    if kind == "model_change":
        return f"model: {shown(entry.get('model'))}"
    if kind == "thinking_level_change":
        return f"thinking level: {shown(entry.get('thinkingLevel'))}"
    if kind == "label":
        return f"label {shown(entry.get('targetId'))} = {_json(entry.get('label'))}"
    if kind == "title_change":
        return f"title: {shown(entry.get('title'))}"
    # other entries (mode changes, custom state, ...) as their fields, minus the envelope
    rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
    return _json(rest) if rest else ""


def entry_item(entry: Any, scrub: Scrub) -> dict[str, Any]:
    if isinstance(entry, dict) and entry.get("type") == "message":
        item = message_item(entry.get("message"), scrub)
        when = iso(entry.get("timestamp"))
        if when is not None:
            item["time"] = when
        return item
    item = {"type": shown(entry.get("type")) if isinstance(entry, dict) else "?"}
    when = iso(entry.get("timestamp")) if isinstance(entry, dict) else None
    if when is not None:
        item["time"] = when
    item["text"] = scrub(entry_text(entry))
    return item


def clip(item: dict[str, Any], max_chars: int, fetch: str) -> None:
    """Clip ``item["text"]`` to about ``max_chars``: head and tail kept, ``omitted`` the count left
    out and ``fetch`` how to read it all."""
    text = item.get("text", "")
    if len(text) <= max_chars:
        return
    tail = max_chars // 3
    head = max_chars - tail
    omitted = len(text) - head - tail
    item["text"] = f"{text[:head]}\n…[{omitted} characters omitted]…\n{text[len(text) - tail:]}" if tail \
        else f"{text[:head]}…"
    item["omitted"] = omitted if tail else len(text) - head
    item["fetch"] = fetch


def preview(entry: Any, width: int = 100) -> str:
    """One line: role or type, then the start of the text."""
    item = entry_item(entry, lambda t: t)
    text = " ".join(item.get("text", "").split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    head = item.get("role") or item.get("type") or "?"
    return f"{head}: {text}" if text else head


def utf8_safe(value: Any) -> Any:
    """``value`` with every string made encodable as UTF-8: a lone surrogate (JSON's ``"\\ud800"``
    is valid, and sessions hold them) becomes U+FFFD, a split pair is joined. The SDK writes
    answers as UTF-8 and one such character in an answer ended the whole server."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return value
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [utf8_safe(v) for v in value]
    return value
