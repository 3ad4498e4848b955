"""The entries omp's SessionManager writes, built with its key order and normalisation (S3).

Each builder returns a plain dict in the key order omp serialises. Keys whose value is
JavaScript ``undefined`` (:data:`~omp_session.codec.UNDEFINED`) are left out, as
``JSON.stringify`` leaves them out; ``None`` is ``null`` and stays.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Container
from typing import Any

from omp_session.js.codec import UNDEFINED

from .ids import iso_timestamp

__all__ = [
    "DEFAULT_CUSTOM_MESSAGE_TYPE",
    "clean_title",
    "custom_message_entry",
    "file_safe_timestamp",
    "generate_id",
    "record",
    "timestamp_from_ms",
]

DEFAULT_CUSTOM_MESSAGE_TYPE = "custom-message"
_INTERNAL_DETAILS_FIELDS = ("__queueChipText",)
# JavaScript's String.prototype.trim: WhiteSpace and LineTerminator code points
_JS_SPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
             "\u2028\u2029\u202f\u205f\u3000\ufeff")
_CONTROLS = {c: " " for c in [*range(0x20), *range(0x7F, 0xA0)]}
_MAX_DATE_MS = 8.64e15


def record(*pairs: tuple[str, Any]) -> dict[str, Any]:
    """A dict from ``(key, value)`` pairs, without the undefined ones."""
    return {k: v for k, v in pairs if v is not UNDEFINED}


def generate_id(taken: Container[Any]) -> str:
    """omp's entry id: 8 random hex digits not already taken (after 100 clashes, 16)."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate
    return secrets.token_hex(8)


def file_safe_timestamp(iso: str) -> str:
    return iso.replace(":", "-").replace(".", "-")


def timestamp_from_ms(ms: Any) -> str:
    """``new Date(ms).toISOString()``; ValueError where JavaScript throws RangeError."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms) or abs(ms) > _MAX_DATE_MS:
        raise ValueError(f"Invalid time value: {ms!r}")
    return iso_timestamp(math.trunc(ms) + 0)


def clean_title(raw: str) -> str:
    """Control characters to spaces, runs of spaces collapsed, trimmed (S8.9)."""
    text = raw.translate(_CONTROLS)
    while "  " in text:
        text = text.replace("  ", " ")
    return text.strip(_JS_SPACE)


def _strip_internal_details(details: Any) -> Any:
    if not isinstance(details, dict) or not any(k in details for k in _INTERNAL_DETAILS_FIELDS):
        return details
    return {k: v for k, v in details.items() if k not in _INTERNAL_DETAILS_FIELDS}


def custom_message_entry(custom_type: Any, content: Any, display: Any, details: Any, attribution: Any,
                         fresh: tuple[str, Any, str]) -> dict[str, Any]:
    """A ``custom_message`` entry, normalised as omp normalises extension input (S3.8)."""
    entry_id, parent_id, timestamp = fresh
    return record(
        ("type", "custom_message"),
        ("customType", custom_type if isinstance(custom_type, str) and custom_type else DEFAULT_CUSTOM_MESSAGE_TYPE),
        ("content", content if isinstance(content, str | list) else ""),
        ("display", display if isinstance(display, bool) else False),
        ("details", _strip_internal_details(details)),
        ("attribution", "user" if attribution == "user" else "agent"),
        ("id", entry_id), ("parentId", parent_id), ("timestamp", timestamp),
    )
