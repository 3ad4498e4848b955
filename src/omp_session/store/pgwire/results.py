"""Results: the column descriptions, each text-format value read into what psycopg's default
loaders give (arrays as lists), and the row count of a command tag."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["Column", "Result", "command_rowcount", "loader_for"]


class Column(NamedTuple):
    """One column of a result, as DB-API describes it (``[0]`` is the name)."""

    name: str
    type_code: int
    display_size: int | None = None
    internal_size: int | None = None
    precision: int | None = None
    scale: int | None = None
    null_ok: bool | None = None



def _bool(data: bytes) -> bool:
    return data == b"t"


def _numeric(data: bytes) -> Any:
    from decimal import Decimal

    return Decimal(data.decode())


def _bytea(data: bytes) -> bytes:
    if data.startswith(b"\\x"):
        return bytes.fromhex(data[2:].decode())
    # bytea_output = escape: \\ and \ooo escapes, every other byte as itself
    return re.sub(
        rb"\\(\\|[0-7]{3})", lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 8)]), data
    )


def _json(data: bytes) -> Any:
    import json

    return json.loads(data)


# arrays of builtin types psycopg has no element loader for: lists of str
# fmt: off
_TEXTLIKE_ARRAYS = frozenset({
    143, 271, 629, 719, 775, 791, 1002, 1003, 1006, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 1015, 1017, 1018,
    1019, 1027, 1034, 1040, 1561, 1563, 2201, 2207, 2208, 2209, 2210, 2211, 2949, 3221, 3643, 3644, 3645, 3735,
    3770, 4073, 4090, 4097, 4192,
})
_SCALARS: dict[int, Callable[[bytes], Any]] = {
    16: _bool, 17: _bytea, 20: int, 21: int, 23: int, 26: int, 700: float, 701: float, 1700: _numeric,
    114: _json, 3802: _json,
}
_ARRAY_ELEMENTS: dict[int, int] = {
    1000: 16, 1001: 17, 1016: 20, 1005: 21, 1007: 23, 1028: 26, 1021: 700, 1022: 701, 1231: 1700, 199: 114,
    3807: 3802,
}
# fmt: on


def loader_for(oid: int) -> Callable[[bytes], Any]:
    scalar = _SCALARS.get(oid)
    if scalar is not None:
        return scalar
    element = _ARRAY_ELEMENTS.get(oid)
    if element is not None:
        convert = _SCALARS[element]
        return lambda data: _array(data.decode("utf-8"), lambda s: convert(s.encode("utf-8")))
    if oid in _TEXTLIKE_ARRAYS:
        return lambda data: _array(data.decode("utf-8"), str)
    if oid == 1020:  # box[]: its delimiter is ';'
        return lambda data: _array(data.decode("utf-8"), str, ";")
    return bytes.decode  # UTF-8, strict: what psycopg's text loader gives


def _array(text: str, convert: Callable[[str], Any], delimiter: str = ",") -> list[Any]:
    """PostgreSQL's array text (``{1,NULL,"a b"}``, nested, with ``[lo:hi]=`` bounds) as lists."""
    pos = text.index("=") + 1 if text.startswith("[") else 0
    out, _ = _array_level(text, pos, convert, delimiter)
    return out


def _array_level(text: str, pos: int, convert: Callable[[str], Any], delimiter: str) -> tuple[list[Any], int]:
    out: list[Any] = []
    pos += 1  # past '{'
    if text[pos] == "}":
        return out, pos + 1
    stop = delimiter + "}"
    while True:
        ch = text[pos]
        if ch == "{":
            sub, pos = _array_level(text, pos, convert, delimiter)
            out.append(sub)
        elif ch == '"':
            pieces: list[str] = []
            pos += 1
            while True:
                quote = text.find('"', pos)
                slash = text.find("\\", pos, quote)
                if slash < 0:
                    pieces.append(text[pos:quote])
                    pos = quote + 1
                    break
                pieces.append(text[pos:slash])
                pieces.append(text[slash + 1])
                pos = slash + 2
            out.append(convert("".join(pieces)))
        else:
            start = pos
            while text[pos] not in stop:
                pos += 1
            token = text[start:pos]
            out.append(None if token == "NULL" else convert(token))
        if text[pos] == delimiter:
            pos += 1
            continue
        return out, pos + 1  # past '}'


def command_rowcount(tag: str | None) -> int:
    """libpq's ``PQcmdTuples``: the count of the commands that report one, else -1."""
    if not tag:
        return -1
    words = tag.split()
    if (
        words[0] in ("SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "MOVE", "FETCH", "COPY")
        and words[-1].isdigit()
    ):
        return int(words[-1])
    return -1


# a statement's result: (description, rows, command tag)
Result = tuple[list[Column] | None, list[tuple[Any, ...]], str | None]
