"""A Claude Code transcript's records, read once from bytes and only as far as omp looks at them.

omp ``JSON.parse``s every line (``readForeignJsonRecords``, see :mod:`.jsonl`) and its converter
then reads a dozen fields of each record. Most of a real transcript's bytes are in fields it never
reads: ``toolUseResult`` (Claude Code's copy of every tool result), ``snapshot``... So each line is
decoded straight from the file's bytes by msgspec into a :class:`ClaudeRecord` holding only the
fields the converter reads: the others are checked for valid JSON (a line omp cannot parse is still
skipped) but never built as Python objects.

msgspec accepts only strict UTF-8 JSON, and where it accepts a line it gives the values
``JSON.parse`` gives (integers beyond 64 bits stay ``int``: omp's doubles print the same). Every
line it refuses (a JSON array, a BOM, invalid UTF-8, an escaped lone surrogate, a blank line...)
takes :func:`.jsonl.decode_line`, the exact path, and gets the same record or problem as before.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from .jsonl import Problem, decode_line, kind_of

__all__ = ["ClaudeBlock", "ClaudeMessage", "ClaudeRecord", "ClaudeRecords", "read_claude_records",
           "tool_result_blocks"]


_ABSENT = msgspec.Raw()


class ClaudeBlock(msgspec.Struct, gc=False):
    """A content block as the converter reads it. ``text``, ``thinking`` and ``content`` (of a tool
    result) are the value's JSON text (``msgspec.Raw``; empty when absent): the texts are written
    out as they are, never built as Python strings. A record read the exact way holds them as
    ``str`` (or, for ``content``, a list of blocks) instead, and ``None`` for any other value."""

    type: Any = None
    text: msgspec.Raw = _ABSENT
    thinking: msgspec.Raw = _ABSENT
    signature: Any = None
    id: Any = None
    name: Any = None
    input: Any = None
    tool_use_id: Any = None
    is_error: Any = None
    content: msgspec.Raw = _ABSENT
    source: Any = None


class ClaudeMessage(msgspec.Struct, gc=False):
    """A record's ``message`` object: ``content`` is a string, a list of blocks (an item that is not
    an object: ``None``, kept for the indexes), else ``None``."""

    content: str | list[ClaudeBlock] | None = None
    model: Any = None
    usage: Any = None
    stop_reason: Any = None
    id: Any = None


class ClaudeRecord(msgspec.Struct, gc=False):
    """The fields of one record omp's Claude converter reads; ``None`` for absent or null (the
    converter treats both alike), and for a ``message`` that is not an object."""

    type: Any = None
    uuid: Any = None
    parentUuid: Any = None
    cwd: Any = None
    timestamp: Any = None
    message: ClaudeMessage | None = None
    isSidechain: Any = None
    isMeta: Any = None
    error: Any = None
    isApiErrorMessage: Any = None
    apiErrorStatus: Any = None
    customTitle: Any = None
    aiTitle: Any = None


_FIELDS = ClaudeRecord.__struct_fields__
_DECODE = msgspec.json.Decoder(ClaudeRecord).decode
_DECODE_BLOCKS = msgspec.json.Decoder(list[ClaudeBlock]).decode


class ClaudeRecords(msgspec.Struct, gc=False):
    """The object records of a file with their 1-based line numbers, and the lines left out."""

    records: list[tuple[ClaudeRecord, int]]
    problems: list[Problem]
    size: int


def _from_dict(value: dict[str, Any]) -> ClaudeRecord:
    """The record of a line read the exact way (``JSON.parse`` gave ``value``)."""
    get = value.get
    out = ClaudeRecord(*[get(name) for name in _FIELDS])
    message: Any = out.message
    if isinstance(message, dict):
        content = message.get("content")
        out.message = ClaudeMessage(content if isinstance(content, str) else _blocks(content),
                                    message.get("model"), message.get("usage"), message.get("stop_reason"),
                                    message.get("id"))
    else:
        out.message = None
    return out


def _blocks(value: Any, *, inner: bool = False) -> list[Any] | None:
    """The blocks of a message's content; ``inner``: of a tool result's content, whose own
    ``content`` the converter never reads (left ``None``, not followed however deep it nests)."""
    if not isinstance(value, list):
        return None
    return [_block(item, inner) if isinstance(item, dict) else None for item in value]


def _block(value: dict[str, Any], inner: bool) -> ClaudeBlock:
    get = value.get
    text, thinking, content = get("text"), get("thinking"), get("content")
    # the fields hold Python values here, not JSON text: the converter takes either
    exact: dict[str, Any] = {"text": text if isinstance(text, str) else None,
                             "thinking": thinking if isinstance(thinking, str) else None,
                             "content": content if isinstance(content, str) else
                             None if inner else _blocks(content, inner=True)}
    return ClaudeBlock(type=get("type"), signature=get("signature"), id=get("id"), name=get("name"),
                       input=get("input"), tool_use_id=get("tool_use_id"), is_error=get("is_error"),
                       source=get("source"), **exact)


def tool_result_blocks(raw: bytes) -> list[Any]:
    """The blocks of a tool result's ``content`` given as the JSON text of an array."""
    try:
        return _DECODE_BLOCKS(raw)
    except (msgspec.DecodeError, RecursionError):  # an item that is not an object, an odd string...
        return _blocks(decode_line(raw), inner=True) or []


def read_claude_records(path: str | os.PathLike[str]) -> ClaudeRecords:
    """The records of ``path`` as :func:`.jsonl.read_records` reads them (raises OSError)."""
    name = os.fspath(path)
    with open(name, "rb") as f:
        data = f.read()
    view = memoryview(data)
    records: list[tuple[ClaudeRecord, int]] = []
    problems: list[Problem] = []
    n = len(data)
    start = 0
    number = 0
    find = data.find
    append = records.append
    while start < n:
        end = find(b"\n", start)
        if end < 0:
            end = n
        number += 1
        try:
            append((_DECODE(view[start:end]), number))
        except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
            _slow_line(data[start:end], number, end == n, name, records, problems)
        start = end + 1
    view.release()
    return ClaudeRecords(records, problems, n)


def _slow_line(raw: bytes, number: int, last: bool, name: str, records: list[tuple[ClaudeRecord, int]],
               problems: list[Problem]) -> None:
    if not raw.strip(b" \t\r"):
        return  # a blank line: JSON.parse throws, omp skips it; nothing worth saying
    try:
        value = decode_line(raw)
    except (ValueError, RecursionError):  # JSONSyntaxError is one
        if last:
            problems.append(Problem(name, number, f"truncated last line ({len(raw)} bytes without an end): "
                                                  "skipped, as omp does"))
        else:
            problems.append(Problem(name, number, "not JSON: skipped, as omp does"))
        return
    if not isinstance(value, dict):
        problems.append(Problem(name, number, f"a JSON {kind_of(value)}, not an object: skipped, as omp does"))
        return
    records.append((_from_dict(value), number))
