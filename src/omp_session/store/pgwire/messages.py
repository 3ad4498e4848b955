"""The protocol's message framing, and the server's error fields worded as libpq words them."""

from __future__ import annotations

import struct
from collections.abc import Mapping

__all__ = ["cstr", "error_text", "message", "parse_fields"]


def message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\x00"


def parse_fields(body: bytes) -> dict[str, str]:
    """An ErrorResponse's or NoticeResponse's fields (code letter → text)."""
    out: dict[str, str] = {}
    for part in body.split(b"\x00"):
        if part:
            out[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return out


def error_text(fields: Mapping[str, str], query: str | None) -> str:
    """libpq's message at its default verbosity, without the severity (as psycopg's ``str``)."""
    lines = [fields.get("M", "missing error text")]
    position = fields.get("P")
    if query and position and position.isdigit():
        lines.append(_position(query, int(position)))
    elif fields.get("q") and (fields.get("p") or "").isdigit():
        lines.append(_position(fields["q"], int(fields["p"])))
    for code, label in (("D", "DETAIL"), ("H", "HINT"), ("q", "QUERY"), ("W", "CONTEXT")):
        if code in fields:
            lines.append(f"{label}:  {fields[code]}")
    return "\n".join(line for line in lines if line).strip()


def _position(query: str, position: int) -> str:
    """libpq's ``LINE n:`` and its caret under the character at ``position`` (1-based): tabs
    shown as spaces, wide characters counted as two columns, a long line cut to 60 columns
    around the caret."""
    loc = position - 1
    if loc < 0:
        return ""
    import unicodedata

    chars = list(query)
    starts: list[int] = []  # screen column where each character starts
    column = 0
    line, begin, end = 1, 0, -1
    count = 0
    for count, ch in enumerate(chars):
        starts.append(column)
        if ch == "\t":
            chars[count] = " "
        elif ch in "\r\n":
            if count < loc:
                if ch == "\r" or count == 0 or chars[count - 1] != "\r":
                    line += 1
                begin = count + 1
            else:
                end = count
                break
        column += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    else:
        count = len(chars)
    if end < 0:
        end = count
        starts.append(column)
    if loc > count:
        return ""
    cut_left = cut_right = False
    if starts[end] - starts[begin] > 60:
        if starts[begin] + 60 >= starts[loc] + 10:
            while starts[end] - starts[begin] > 60:
                end -= 1
            cut_right = True
        else:
            while starts[loc] + 10 < starts[end]:
                end -= 1
                cut_right = True
            while starts[end] - starts[begin] > 60:
                begin += 1
                cut_left = True
    lead = f"LINE {line}: " + ("..." if cut_left else "")
    text = lead + "".join(chars[begin:end]) + ("..." if cut_right else "")
    return f"{text}\n{' ' * (len(lead) + starts[loc] - starts[begin])}^"
