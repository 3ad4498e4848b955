"""The common cases of model/text.py's Markdown escaping, done without its general steps: the
same text, faster (issue 16 item 2). Whatever a fast path cannot prove is handed to the helper;
tests/ops/export/test_markdown_fast_paths.py checks each against it.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from omp_session.model import text as helpers
from omp_session.model.text import clean_text, usage_line

__all__ = ["encoded_lines", "fence", "inline", "inline_code", "plain_word", "pretty_json", "usage_inline"]

_BACKTICKS = re.compile(r"`+")  # as model.text's
_PUNCT = re.compile(r"([\\`*_\[\]<>&#|~$])")  # as model.text's
_REPLACEMENT = "\ufffd".encode()
_JSON_SCALARS = frozenset({str, int, bool, type(None)})  # (not float: Python and orjson spell some apart)


def fence(text: str, info: str = "text") -> str:
    """model.text.fence without its clean_text: every batch is cleaned (encoded_lines), and cleaning
    (lone surrogates and NULs replaced, pairs joined) changes neither backtick runs nor line
    ends. The fence is the same, the text needs no copy, and one without three backticks in a
    row no regex (its fence is three long whatever its runs)."""
    ticks = "```"
    if ticks in text:
        # the longest run, by asking for a run one longer while there is one (a search each,
        # where listing every run of the text's inline code took most of a fence's time); a
        # run of dozens is odd enough for the listing
        while ticks in text:
            ticks += "`"
            if len(ticks) > 64:
                ticks = "`" * (max(len(m) for m in _BACKTICKS.findall(text)) + 1)
                break
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{ticks}{info}\n{text}{ticks}"


def plain_word(value: Any) -> bool:
    """A non-empty str of printable ASCII without a space or backtick (an id, a tool name): what
    clean_text, the whitespace collapsing and the backtick count of inline_code leave as it is."""
    return (type(value) is str and value.isascii() and value.isprintable() and " " not in value
            and "`" not in value and value != "")


def inline_code(value: Any) -> str:
    """model.text.inline_code, its common case without the general steps (same text)."""
    return f"`{value}`" if plain_word(value) else helpers.inline_code(value)


def inline(value: Any) -> str:
    """model.text.inline, its common case (printable ASCII, single spaces) without the general steps."""
    if (type(value) is str and value.isascii() and value.isprintable() and "  " not in value
            and not value.startswith(" ") and not value.endswith(" ")):
        return _PUNCT.sub(r"\\\1", value) if _PUNCT.search(value) else value
    return helpers.inline(value)


def usage_inline(usage: Any) -> str:
    """``model.text.inline(usage_line(usage))``: that line holds digits, ",", ".", "-", "?",
    letters, "$" and "·" between single spaces, so of inline's steps only the escape of "$" does
    anything (the "·" sent every line the general way, a tenth of an assistant's rendering)."""
    return usage_line(usage).replace("$", "\\$")


def pretty_json(value: Any) -> str:
    """model.text.pretty_json, by orjson when it writes the same text: only str, int, bool, None,
    lists and str-keyed objects (json.dumps(indent=2) and orjson's OPT_INDENT_2 agree on those;
    an int beyond 64 bits, a lone surrogate or deep nesting make orjson refuse: the slow path)."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict:
            for k, sub in v.items():
                if type(k) is not str:
                    return helpers.pretty_json(value)
                stack.append(sub)
        elif t is list:
            stack.extend(v)
        elif t not in _JSON_SCALARS:
            return helpers.pretty_json(value)
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:
        return helpers.pretty_json(value)


def encoded_lines(lines: list[str]) -> bytes:
    """``clean_text("\\n".join(lines) + "\\n")`` in UTF-8 (one encoding of the joined text costs
    less than one per line); the long way only for a batch holding a surrogate, which clean_text
    joins or replaces (else it only replaces NULs)."""
    try:
        data = ("\n".join(lines) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return clean_text("\n".join(lines) + "\n").encode("utf-8")
    return data.replace(b"\x00", _REPLACEMENT) if b"\x00" in data else data
