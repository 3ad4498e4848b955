"""Statement parameters: psycopg's ``%s`` placeholders as ``$n``, and each value typed and written
in text format as psycopg types and writes it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .errors import ProgrammingError

__all__ = ["dump", "placeholders"]

_PLACEHOLDER = re.compile(r"%(.)", re.DOTALL)
_INT_TYPES = ((1 << 15, 21, 1005), (1 << 31, 23, 1007), (1 << 63, 20, 1016))


def placeholders(sql: str, count: int) -> str:
    """``%s`` (``%b``, ``%t``) as ``$1``…, ``%%`` as ``%``, as psycopg turns them."""
    n = 0

    def turn(m: re.Match[str]) -> str:
        nonlocal n
        kind = m.group(1)
        if kind == "%":
            return "%"
        if kind in "sbt":
            n += 1
            return f"${n}"
        if kind == "(":
            raise ProgrammingError("named placeholders (%(name)s) are not supported by this client")
        raise ProgrammingError(f"only '%s', '%b', '%t' are allowed as placeholders, got '%{kind}'")

    if sql.endswith("%") and not sql.endswith("%%"):
        raise ProgrammingError("incomplete placeholder: '%'")
    out = _PLACEHOLDER.sub(turn, sql)
    if n != count:
        raise ProgrammingError(f"the query has {n} placeholders but {count} parameters were passed")
    return out


def _int_oid(value: int, array: bool) -> int:
    for limit, scalar, arr in _INT_TYPES:
        if -limit <= value < limit:
            return arr if array else scalar
    return 1231 if array else 1700


def dump(value: Any) -> tuple[int, bytes | None]:
    """(type OID, text) of one parameter, as psycopg types it (0: unknown, the server decides)."""
    if value is None:
        return 0, None
    if isinstance(value, bool):
        return 16, b"t" if value else b"f"
    if isinstance(value, int):
        return _int_oid(value, False), str(value).encode()
    if isinstance(value, float):
        return 701, repr(value).encode()
    if isinstance(value, str):
        if "\x00" in value:
            raise ProgrammingError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return 0, value.encode("utf-8")
    if isinstance(value, bytes | bytearray | memoryview):
        return 17, b"\\x" + bytes(value).hex().encode()
    if isinstance(value, list):
        return _array_oid(value), _array_text(value).encode("utf-8")
    from decimal import Decimal

    if isinstance(value, Decimal):
        return 1700, str(value).encode()
    raise ProgrammingError(
        f"cannot adapt type {type(value).__name__!r} using placeholder '%s' (format: AUTO)"
    )


def _leaves(value: list[Any]) -> Iterator[Any]:
    for item in value:
        if isinstance(item, list):
            yield from _leaves(item)
        elif item is not None:
            yield item


def _array_oid(value: list[Any]) -> int:
    items = list(_leaves(value))
    kinds = {type(item) for item in items}
    if len(kinds) > 1:
        names = ", ".join(sorted(k.__name__ for k in kinds))
        raise ProgrammingError(f"cannot dump lists of mixed types; got: {names}")
    if not items:
        return 0
    first = items[0]
    if isinstance(first, bool):
        return 1000
    if isinstance(first, int):
        return max((_int_oid(i, True) for i in items), key=(1005, 1007, 1016, 1231).index)
    if isinstance(first, float):
        return 1022
    if isinstance(first, str):
        return 0
    if isinstance(first, bytes | bytearray | memoryview):
        return 1001
    from decimal import Decimal

    if isinstance(first, Decimal):
        return 1231
    raise ProgrammingError(f"cannot adapt type {type(first).__name__!r} in a list")


_QUOTE_IN_ARRAY = re.compile(r'[{}",\\\s]')


def _array_text(value: list[Any]) -> str:
    parts: list[str] = []
    for item in value:
        if item is None:
            parts.append("NULL")
        elif isinstance(item, list):
            parts.append(_array_text(item))
        else:
            _, raw = dump(item)
            text = (raw or b"").decode("utf-8")
            if not text or text.upper() == "NULL" or _QUOTE_IN_ARRAY.search(text):
                text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
            parts.append(text)
    return "{" + ",".join(parts) + "}"
