"""What the search index holds of one record (search_index.py): the searchable texts by kind
(message text, thinking, tool calls and results, summaries, labels, titles) and the envelope
columns (id, parent, type, role, time) that filters and the current branch need.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from omp_session.js.date import date_parse
from omp_session.model.text import clean_text, text_of
from omp_session.model.tree import js_key, js_truthy

__all__ = ["Searchable", "id_key", "index_text", "searchable", "time_ms"]


def index_text(text: str) -> str:
    """Text as SQLite can store it, without our snippet markers."""
    if "\x02" in text or "\x03" in text:
        text = text.replace("\x02", " ").replace("\x03", " ")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (S1.1.3) cannot be stored as SQLite text
            text = clean_text(text)
    return text


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    """Every string (and number) inside a JSON value: tool-call arguments without the JSON syntax."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict) and depth < 32:
        for v in value.values():
            _strings(v, out, depth + 1)
    elif isinstance(value, list) and depth < 32:
        for v in value:
            _strings(v, out, depth + 1)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        out.append(str(value))


def _add(docs: dict[str, list[str]], kind: str, text: Any) -> None:
    if isinstance(text, str) and text:
        docs.setdefault(kind, []).append(text)


def _message_docs(m: dict[str, Any], role: Any, docs: dict[str, list[str]]) -> None:
    content = m.get("content")
    plain = "tool_result" if role == "toolResult" else "text"
    if isinstance(content, str):
        _add(docs, plain, content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                _add(docs, plain, block.get("text"))
            elif kind == "thinking":
                _add(docs, "thinking", block.get("thinking"))
            elif kind == "toolCall":
                parts = [block["name"]] if isinstance(block.get("name"), str) else []
                _strings(block.get("arguments"), parts)
                _add(docs, "tool_call", "\n".join(parts))
    if role in ("bashExecution", "pythonExecution"):
        _add(docs, "tool_call", m.get("command") if role == "bashExecution" else m.get("code"))
        _add(docs, "tool_result", m.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        _add(docs, "summary", m.get("summary"))
    elif role == "fileMention" and isinstance(m.get("files"), list):
        _add(docs, "text", "\n".join(f["path"] for f in m["files"] if isinstance(f, dict)
                                     and isinstance(f.get("path"), str)))


def id_key(value: Any) -> str | None:
    """An id as a TEXT key: strings as they are, other truthy scalars tagged (JS Map semantics)."""
    if type(value) is str:
        return value or None
    if not js_truthy(value) or isinstance(value, dict | list):
        return None
    return "\x00" + repr(js_key(value))


def time_ms(value: Any) -> int | None:
    """A timestamp string as epoch milliseconds, as Date.parse reads it (None when it cannot)."""
    if not isinstance(value, str):
        return None
    if len(value) == 24 and value[23] == "Z" and value[10] == "T":
        try:  # omp's own toISOString form: the common case, 10x faster than Date.parse
            return int(datetime.fromisoformat(value).timestamp() * 1000)
        except ValueError:
            pass
    ms = date_parse(value)
    return None if ms != ms else int(ms)


@dataclass(slots=True)
class Searchable:
    row: tuple[Any, ...]  # entries columns after (file_id, seq)
    docs: dict[str, list[str]]


def searchable(value: Any) -> Searchable:
    """The searchable texts and envelope columns of one record (any JSON value)."""
    if not isinstance(value, dict):
        return Searchable((None, None, None, None, None, None), {})
    kind = value.get("type")
    docs: dict[str, list[str]] = {}
    role: Any = None
    target: Any = None
    if kind == "message":
        m = value.get("message")
        if isinstance(m, dict):
            role = m.get("role")
            _message_docs(m, role, docs)
    elif kind == "custom_message":
        role = "custom"
        _add(docs, "text", text_of(value.get("content")))
    elif kind in ("compaction", "branch_summary"):
        _add(docs, "summary", value.get("summary"))
        _add(docs, "summary", value.get("shortSummary"))
    elif kind == "label":
        _add(docs, "label", value.get("label"))
        target = id_key(value.get("targetId"))
    elif kind == "title_change" or kind == "session":
        _add(docs, "title", value.get("title"))
    return Searchable((id_key(value.get("id")), id_key(value.get("parentId")), kind if isinstance(kind, str) else None,
                    role if isinstance(role, str) else None, time_ms(value.get("timestamp")), target), docs)
