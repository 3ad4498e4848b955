"""One imported entry -> the line omp writes for it, without the general path when it cannot differ.

omp writes each entry through its persistence transform (images to the blob store, strings past
500,000 UTF-16 units cut, ``jsonlEvents`` dropped...) and ``JSON.stringify``; the general path
(:func:`omp_session.write.persist.persist_transform`, then :func:`omp_session.js.codec.dumps_line`)
walks every node and scans every byte of the output for numbers orjson spells differently. An
imported entry is nearly always plain text, ids and small integers, for which both are the
identity: :func:`entry_line` looks at the entry once (a couple of dozen nodes; the bulk is a few
big strings, looked at in O(1)), and when nothing in it can be changed by the transform or spelled
differently by orjson, writes orjson's bytes as they are. Everything else takes the general path.

What the transform can act on, and so sends an entry the general way: a ``data``, ``image_url``,
``jsonlEvents``, ``lineCount`` or ``structuredContent`` member (images, data URLs, events, file
line counts, spilled MCP output), a ``type`` of ``image_generation_call`` or
``openaiResponsesHistory`` (generated images, replayed reasoning), and any string longer than
500,000 UTF-16 units (then the line is longer than 500,000 bytes). What orjson may spell unlike
JavaScript: integral or very small or large floats, integer-like keys (JavaScript puts them
first), integers past 2**53, lone surrogates, ``undefined`` (orjson refuses the last three).

A text copied from a transcript may be held as :class:`RawText`, the JSON text it had there, when
that is exactly what ``JSON.stringify`` writes for it (Claude Code writes its transcripts with
``JSON.stringify``): it goes into the line as it is, never decoded nor encoded again.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import orjson

from omp_session.format.blobs import BlobSink
from omp_session.js import codec
from omp_session.write.persist import MAX_PERSIST_CHARS, persist_transform

__all__ = ["RawText", "entry_line", "is_plain", "materialize", "raw_text"]

# past 2**53 orjson refuses: JavaScript holds such a number rounded; the newline is added by orjson
# (one copy of the line less)
_OPTIONS = orjson.OPT_STRICT_INTEGER | orjson.OPT_APPEND_NEWLINE
_TRANSFORMED_KEYS = frozenset({"data", "image_url", "jsonlEvents", "lineCount", "structuredContent"})
_TRANSFORMED_TYPES = frozenset({"image_generation_call", "openaiResponsesHistory"})
# The keys of omp's entries and messages: known not to be any of the above nor integer-like, so
# looked up once instead of tested three times.
_ENTRY_KEYS = frozenset({
    "type", "id", "parentId", "timestamp", "message", "role", "content", "text", "thinking",
    "thinkingSignature", "toolCallId", "toolName", "isError", "api", "provider", "model", "usage", "input",
    "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "total", "stopReason", "responseId",
    "errorMessage", "errorStatus", "mimeType", "name", "arguments", "details", "customType", "summary",
    "firstKeptEntryId", "tokensBefore", "preserveData", "title", "source", "trigger", "path", "command",
    "file_path", "old_string", "new_string", "pattern", "description", "query", "url", "limit", "offset",
})


class RawText:
    """A string held as the JSON text ``JSON.stringify`` writes for it (quotes and escapes included):
    a text copied from a transcript is written out as it was read, never decoded and encoded again."""

    __slots__ = ("json",)

    def __init__(self, json: bytes) -> None:
        self.json = json

    @property
    def text(self) -> str:
        return msgspec.json.decode(self.json, type=str)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawText) and other.json == self.json

    def __hash__(self) -> int:
        return hash(self.json)

    def __repr__(self) -> str:
        return f"RawText({self.json[:40]!r}{'...' if len(self.json) > 40 else ''})"


# Escapes JSON.stringify never writes: "\/", and "\u" but for a control character without a short
# form, in lowercase. Every other escape ("\"", "\\", "\b", "\f", "\n", "\r", "\t") it writes
# as JSON allows only one way to; a raw character needs none (valid UTF-8 holds no lone surrogate).
_UNLIKE_STRINGIFY = re.compile(rb"\\(?:/|u(?!00(?:0[0-7bef]|1[0-9a-f])))")


def raw_text(token: bytes) -> RawText | str:
    """The string whose JSON text (valid, UTF-8) is ``token``: kept as that text when it is what
    ``JSON.stringify`` writes for it, else decoded."""
    if b"\\" in token and _UNLIKE_STRINGIFY.search(token) is not None:  # no backslash: nothing to look at
        return codec.loads(token)  # type: ignore[no-any-return]
    return RawText(token)


def materialize(value: Any) -> Any:
    """``value`` with its :class:`RawText` strings decoded: a copy where there are any, else
    ``value`` itself."""
    try:
        return _materialize(value)
    except RecursionError:  # nested deeper than Python's stack (a tool call's arguments can be)
        return _materialize_deep(value)


def _materialize(value: Any) -> Any:
    c = value.__class__
    if c is RawText:
        return value.text
    if c is dict:
        copy: dict[str, Any] | None = None
        for k, v in value.items():
            nv = _materialize(v) if v.__class__ in _CONTAINERS else v
            if nv is not v and copy is None:
                copy = dict(value)
            if copy is not None:
                copy[k] = nv
        return value if copy is None else copy
    if c is list:
        items = [_materialize(v) if v.__class__ in _CONTAINERS else v for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


_CONTAINERS = frozenset({dict, list, RawText})


def _materialize_deep(value: Any) -> Any:
    """:func:`materialize` with a stack of its own: every container is copied."""
    if value.__class__ is RawText:
        return value.text
    if value.__class__ is not dict and value.__class__ is not list:
        return value
    root = dict(value) if value.__class__ is dict else list(value)
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        for k, v in list(node.items() if node.__class__ is dict else enumerate(node)):
            c = v.__class__
            if c is RawText:
                node[k] = v.text
            elif c is dict or c is list:
                node[k] = copy = dict(v) if c is dict else list(v)
                stack.append(copy)
    return root


def _fragment(value: Any) -> Any:
    if value.__class__ is RawText:
        return orjson.Fragment(value.json)
    raise TypeError


def _plain_float(f: float) -> bool:
    # within this range, a float that is not integral is written by orjson in JavaScript's decimal
    # form with the same shortest digits (orjson switches to exponents below 1e-5 and from 1e16,
    # JavaScript below 1e-6 and from 1e21; integral values get ".0" from orjson, none from JavaScript)
    return 1e-4 <= abs(f) < 1e15 and not f.is_integer()


def is_plain(value: Any) -> bool:
    """Whether ``value`` holds nothing the persistence transform acts on (long strings aside: the
    caller checks the length of the line) and nothing orjson spells unlike ``JSON.stringify``."""
    c = value.__class__
    if c is dict:
        for k, v in value.items():
            if k not in _ENTRY_KEYS and (k.__class__ is not str or k in _TRANSFORMED_KEYS or k[:1].isdigit()):
                return False
            vc = v.__class__
            if vc is str:
                if k == "type" and v in _TRANSFORMED_TYPES:
                    return False
            elif vc is RawText or vc is int or vc is bool or v is None:
                continue
            elif not is_plain(v):
                return False
        return True
    if c is list:
        for v in value:
            vc = v.__class__
            if vc is str or vc is RawText or vc is int or vc is bool or v is None:
                continue
            if not is_plain(v):
                return False
        return True
    if c is str or c is RawText or c is int or c is bool or value is None:
        return True
    if c is float:
        return _plain_float(value)
    return False


def entry_line(value: Any, blobs: BlobSink | None, *, s20: bool) -> bytes:
    """``JSON.stringify(persist(value)) + "\\n"`` as omp writes the entry ``value`` (images stored
    in ``blobs``; ``None``: computed only, as for a dry run)."""
    try:
        plain = is_plain(value)
    except RecursionError:  # nested deeper than Python's stack: the general path has a stack of its own
        plain = False
    if plain:
        try:
            line = orjson.dumps(value, default=_fragment, option=_OPTIONS)
        except TypeError:  # a lone surrogate, an integer past 2**53, undefined: the exact encoder decides
            pass
        else:
            if len(line) <= MAX_PERSIST_CHARS + 1:  # no string in it is long enough to be cut
                return line
    return codec.dumps_line(persist_transform(materialize(value), blobs, s20=s20))
