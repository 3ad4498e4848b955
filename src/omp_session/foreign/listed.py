"""The created time ``list --foreign`` shows for a foreign session.

omp's listings take a Claude Code session's created time from ``history.jsonl``, else from the
file's birth time. A file copied or restored keeps its old modified time (``cp -p``, ``rsync``,
an unpacked backup) but is born *now*: its created time would be later than its modified time.
The listing shows the session's own first timestamp instead (its first record that has one, in
the first 64 KiB), else the file's modified time: never a time after the modified one.
"""

from __future__ import annotations

import orjson

from omp_session.js.date import time_clip

from .claude import CWD_PREFIX_BYTES, timestamp_ms
from .filetimes import file_times
from .sources import ForeignSession

__all__ = ["first_record_ms", "listed_created_ms"]

_NAN = float("nan")


def first_record_ms(path: str) -> float:
    """The timestamp of the first record (in the first 64 KiB) that has a valid one, else NaN."""
    try:
        with open(path, "rb") as f:
            prefix = f.read(CWD_PREFIX_BYTES)
    except OSError:
        return _NAN
    for line in prefix.removeprefix(b"\xef\xbb\xbf").split(b"\n"):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            stamp = time_clip(timestamp_ms(value.get("timestamp"), _NAN))
            if stamp == stamp:
                return stamp
    return _NAN


def listed_created_ms(info: ForeignSession) -> float:
    """``info.created_ms`` when it is a time no later than the modified time; else the first
    record's timestamp when that is; else the file's modified time (else the listed modified time)."""
    created, modified = info.created_ms, info.modified_ms
    if modified != modified:  # no modified time to compare with
        return created
    if created == created and created <= modified:
        return created
    first = first_record_ms(info.path)
    if first == first and first <= modified:
        return first
    try:
        mtime = file_times(info.path, birth=False).mtime_ms
    except OSError:
        return modified
    return min(mtime, modified)
