"""Escaping and formatting for the Markdown export (export_markdown.py).

Safety rule: nothing taken from the session is ever written as live Markdown. Bodies (message
text, thinking, tool arguments and output, summaries) go in fenced code blocks whose fence is
longer than any backtick run inside them, so no content line can close the fence; ids and tool
names go in code spans longer than any backtick run in them; other one-line values (labels,
models, titles) are whitespace-collapsed, never start a line (so they cannot start a block) and
have every character with an inline meaning backslash-escaped (no link, HTML tag, emphasis, code
span or math can open).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, Final

from omp_session.errors import ContextError
from omp_session.format.blobs import BLOB_PREFIX
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED

from .usage import usage_statistics

__all__ = [
    "clean_text",
    "compact_json",
    "dollars",
    "fence",
    "finite_number",
    "image_note",
    "inline",
    "inline_code",
    "model_of",
    "nonempty_str",
    "pretty_json",
    "preview",
    "shown",
    "text_of",
    "tokens",
    "usage_line",
    "usage_totals",
]

# What can change meaning mid-line: code spans, emphasis, links and images, raw HTML and entities,
# heading closers, tables, strikethrough and (on GitHub) math. Values never start a line.
_PUNCT = re.compile(r"([\\`*_\[\]<>&#|~$])")
_BACKTICKS = re.compile(r"`+")
_PREVIEW = 80


# ----- escaping -----------------------------------------------------------------------------------


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8: surrogate pairs joined, lone surrogates and NUL replaced."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text.replace("\x00", "\ufffd")


def inline(value: Any) -> str:
    """One line of literal text, never placed at the start of a line: whitespace runs become one
    space, and the characters with an inline meaning are escaped."""
    text = value if isinstance(value, str) else compact_json(value)
    return _PUNCT.sub(r"\\\1", " ".join(clean_text(text).split()))


def inline_code(value: Any) -> str:
    """A code span holding ``value`` literally (ids, tool names): the delimiter is one backtick
    longer than the longest run inside, padded so edge backticks do not merge with it."""
    text = " ".join(clean_text(value if isinstance(value, str) else compact_json(value)).split())
    if not text:
        return "` `"
    ticks = "`" * (max((len(m) for m in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text[0] == " " and text[-1] == " ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, info: str = "text") -> str:
    """A fenced code block that no line of ``text`` can close (its fence is longer than any
    backtick run in ``text``, at least 3)."""
    body = clean_text(text)
    ticks = "`" * max(3, max((len(m) for m in _BACKTICKS.findall(body)), default=0) + 1)
    if body and not body.endswith("\n"):
        body += "\n"
    return f"{ticks}{info}\n{body}{ticks}"


def shown(value: Any) -> str:
    """A value as one piece of display text, at any nesting depth: a string as it is, an object or
    array as compact JSON (``str()`` of a list nested a few thousand levels deep raises
    RecursionError; issue 16), anything else as ``str()``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list | tuple):
        return compact_json(value)
    return str(value)


def compact_json(value: Any) -> str:
    try:
        return json.dumps(_plain(value), ensure_ascii=False, default=str)
    except RecursionError:  # nested deeper than json.dumps goes (the reader takes such records)
        return codec.stringify(value) or "null"


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(_plain(value), ensure_ascii=False, indent=2, default=str)
    except RecursionError:  # nested deeper than json.dumps goes: printed compact, but whole
        return codec.stringify(value) or "null"


def _plain(value: Any) -> Any:
    """Drop JavaScript-undefined members (they do not exist in JSON) so json.dumps can print."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not UNDEFINED}
    if isinstance(value, list):
        return [None if v is UNDEFINED else _plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


# ----- values -------------------------------------------------------------------------------------


def nonempty_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def finite_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


_EXACT_INT: Final = 2**53  # an int no larger is a double exactly: int(float(n)) gives it back


def tokens(value: Any) -> str:
    if value.__class__ is int and -_EXACT_INT <= value <= _EXACT_INT:
        return f"{value:,}"  # (the usual count, without the float and back: a line per assistant)
    n = finite_number(value)
    return f"{int(n):,}" if n is not None else "?"


def dollars(value: Any) -> str:
    n = finite_number(value)
    return f"${n:.4f}" if n is not None else "?"


def _nonzero(value: Any) -> bool:
    """``bool(finite_number(value))``."""
    return value != 0 if value.__class__ is int else bool(finite_number(value))


def usage_line(usage: Any) -> str:
    if not isinstance(usage, dict):
        return "unavailable"
    get = usage.get
    parts = [f"{tokens(get('input'))} in", f"{tokens(get('output'))} out"]
    read, write = get("cacheRead"), get("cacheWrite")
    if _nonzero(read):
        parts.append(f"{tokens(read)} cache read")
    if _nonzero(write):
        parts.append(f"{tokens(write)} cache write")
    cost = get("cost")
    parts.append(dollars(cost.get("total") if isinstance(cost, dict) else cost))
    return " · ".join(parts)


def usage_totals(entries: Sequence[Any]) -> str:
    try:
        return usage_line(usage_statistics(entries))
    except ContextError as e:  # omp cannot sum these either; say so rather than fail the export
        return f"unavailable ({e})"


def model_of(message: dict[str, Any]) -> str | None:
    model = nonempty_str(message.get("model"))
    provider = nonempty_str(message.get("provider"))
    if model is None:
        return None
    return f"{provider}/{model}" if provider else model


def image_note(block: dict[str, Any]) -> str:
    mime = nonempty_str(block.get("mimeType")) or "unknown type"
    data = block.get("data")
    if isinstance(data, str) and data.startswith(BLOB_PREFIX):
        where = f"blob {data[len(BLOB_PREFIX):len(BLOB_PREFIX) + 12]}… (not in the blob store)"
    elif isinstance(data, str):
        size = len(data.rstrip("=")) * 3 // 4  # base64 length to bytes
        where = f"{size:,} bytes"
    elif nonempty_str(block.get("url")):
        where = f"url {block['url']}"
    else:
        where = "no data"
    return f"*\\[image: {inline(mime)}, {inline(where)}\\]*"


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(shown(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def preview(entry: Any) -> str:
    """A one-line description of an entry (its role or type and the start of its text)."""
    if not isinstance(entry, dict):
        return "non-object record"
    kind = entry.get("type")
    message = entry.get("message")
    if kind == "message" and isinstance(message, dict):
        text = text_of(message.get("content"))
        if not text and isinstance(message.get("content"), list):
            calls = [b.get("name") for b in message["content"] if isinstance(b, dict) and b.get("type") == "toolCall"]
            text = "tool calls: " + ", ".join(shown(c) for c in calls) if calls else ""
        head = shown(message.get("role"))
    elif kind in ("compaction", "branch_summary"):
        head, text = shown(kind), shown(entry.get("shortSummary") or entry.get("summary") or "")
    else:
        head, text = shown(kind), ""
    text = " ".join(text.split())
    if len(text) > _PREVIEW:
        text = text[: _PREVIEW - 1] + "…"
    return f"{head}: {text}" if text else head
