"""Checking the arguments of a tool call: what a model sends is untrusted JSON.

Every value is checked against what the tool's schema promises (the SDK does not check), and a
wrong one is a :class:`ToolArgumentError` naming the argument and what it takes, which the server
returns as the tool's error result. Limits have a ceiling: a huge ``limit`` is refused, not served.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from omp_session.errors import ToolArgumentError
from omp_session.js.date import date_parse

__all__ = ["ToolArgumentError", "check_names", "choice_arg", "int_arg", "text_arg", "when_arg"]

_MAX_TEXT = 4096  # no id, path, query or date needs more
_MAX_TIME = 8.64e15  # JavaScript's last valid time, in ms
_AGE_UNITS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000}


def check_names(args: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """An argument the tool does not take is refused: a misspelt one would be silently ignored."""
    known = set(allowed)
    unknown = sorted(k for k in args if k not in known)
    if unknown:
        raise ToolArgumentError(f"unknown argument {unknown[0]!r} (this tool takes {', '.join(sorted(known))})")


def text_arg(args: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise ToolArgumentError(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise ToolArgumentError(f"{name} must be a string, not {_kind(value)}")
    if not value.strip():
        raise ToolArgumentError(f"{name} must not be empty")
    if len(value) > _MAX_TEXT or "\x00" in value:
        raise ToolArgumentError(f"{name} is not a usable value (longer than {_MAX_TEXT} characters or holds NUL)")
    return value


def int_arg(args: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = args.get(name)
    if value is None:
        return default
    # JSON has one number type: 20.0 is 20, 20.5 is not an integer
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolArgumentError(f"{name} must be an integer, not {_kind(value)}")
    if not lo <= value <= hi:
        raise ToolArgumentError(f"{name} must be between {lo} and {hi}, not {value}")
    return value


def choice_arg(args: Mapping[str, Any], name: str, choices: tuple[str, ...], default: str) -> str:
    value = args.get(name)
    if value is None:
        return default
    if value not in choices:
        raise ToolArgumentError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    assert isinstance(value, str)
    return value


def when_arg(args: Mapping[str, Any], name: str, *, now_ms: int | None = None) -> int | None:
    """A time as epoch ms: anything JavaScript's ``Date.parse`` reads (``2026-05-14``,
    ``2026-05-14T10:00Z``), or an age: ``7d``, ``12h``, ``30m`` ago."""
    text = text_arg(args, name)
    if text is None:
        return None
    text = text.strip()
    # ASCII digits only: str.isdigit() is also true of "²" and "١", which int() refuses
    if text[-1:] in _AGE_UNITS and text[:-1].isascii() and text[:-1].isdigit():
        now = int(time.time() * 1000) if now_ms is None else now_ms
        # an int, checked below: float() of an age of hundreds of digits raised OverflowError
        ms: float = now - int(text[:-1]) * _AGE_UNITS[text[-1]]
    else:
        ms = date_parse(text)
    if ms != ms or abs(ms) > _MAX_TIME:  # NaN: not a date
        raise ToolArgumentError(f"{name}: {text!r} is not a date (try 2026-05-14, 2026-05-14T10:00Z or 7d)")
    return int(ms)


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)
