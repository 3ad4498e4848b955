"""JavaScript's loose number conversion, for the few places omp compares with `<`/`>=` (spec S5.1)."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["to_number"]

# JS StrWhiteSpaceChar: WhiteSpace plus LineTerminator.
_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\Z")
_PREFIXED = re.compile(r"0([xXoObB])([0-9a-fA-F]+)\Z")


def _string_to_number(s: str) -> float:
    s = s.strip(_JS_SPACE)
    if not s:
        return 0.0
    m = _PREFIXED.match(s)
    if m:
        base = {"x": 16, "o": 8, "b": 2}[m.group(1).lower()]
        try:
            return float(int(m.group(2), base))
        except ValueError:
            return math.nan
    if _DECIMAL.match(s):
        return float(s.replace("Infinity", "inf"))
    return math.nan


def to_number(value: Any) -> float:
    """`Number(value)` for JSON values (objects give NaN, arrays go through their string form)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return _string_to_number(value)
    if isinstance(value, list):
        try:
            return _string_to_number(_array_to_string(value))
        except RecursionError:  # nested thousands deep: JavaScript overflows its stack too
            return math.nan
    return math.nan


def _array_to_string(value: list[Any]) -> str:
    parts = []
    for item in value:
        if item is None:
            parts.append("")
        elif isinstance(item, list):
            parts.append(_array_to_string(item))
        elif isinstance(item, dict):
            parts.append("[object Object]")
        elif isinstance(item, bool):
            parts.append("true" if item else "false")
        else:
            parts.append(str(item))
    return ",".join(parts)
