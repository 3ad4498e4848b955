"""Session ids (UUIDv7) and timestamps as omp writes them (spec S2.1, S19.5, S19.6)."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime

__all__ = ["iso_timestamp", "new_session_id", "new_session_timestamp", "now_ms"]

_last_session_ms = 0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def iso_timestamp(ms: int | None = None) -> str:
    """``new Date(ms).toISOString()``: UTC, milliseconds, ``Z``."""
    ms = now_ms() if ms is None else ms
    dt = datetime.fromtimestamp(ms / 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def new_session_id(ms: int | None = None) -> str:
    """A UUIDv7: 48-bit millisecond timestamp, version 7, variant 10, random rest."""
    ms = now_ms() if ms is None else ms
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 68) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def new_session_timestamp() -> str:
    """Now, for a new session's header and file name, but never the same millisecond twice in
    this process: file names then sort in creation order, as they do in omp when sessions are
    not created within one millisecond."""
    global _last_session_ms
    _last_session_ms = max(now_ms(), _last_session_ms + 1)
    return iso_timestamp(_last_session_ms)
