"""Listing Codex sessions as omp's ``CodexSessionStore.list`` does.

The newest ``<root>/state_<N>.sqlite`` is read first (its ``threads`` table: id, rollout path,
times, cwd, title); when there is none, it cannot be read, or it lists nothing usable, the rollout
files under ``sessions/``, ``.sessions/`` and ``archived_sessions/`` are listed from their first
record (``session_meta``), with titles from ``session_index.jsonl``.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from omp_session.js.date import date_parse, time_clip

from .filetimes import file_times
from .jsonl import is_finite_number, read_records
from .sources import ForeignSession

__all__ = ["list_codex", "string_field", "timestamp_millis"]

_STATE_DB = re.compile(r"state_(\d+)\.sqlite\Z")
_ROLLOUT_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f-]{27})\.jsonl\Z", re.IGNORECASE)
_SECONDS_BELOW = 10_000_000_000


def string_field(record: Mapping[str, Any], key: str) -> str | None:
    """Any string field, empty included (Codex's ``stringField``)."""
    value = record.get(key)
    return value if isinstance(value, str) else None


def timestamp_millis(value: Any, fallback: float) -> float:
    """Seconds or ms (a finite number below 1e10 is seconds), a string through ``Date.parse``, else
    ``fallback``."""
    if is_finite_number(value):
        return value * 1000 if value < _SECONDS_BELOW else value  # type: ignore[no-any-return]
    if isinstance(value, str):
        parsed = date_parse(value)
        if parsed == parsed:
            return parsed
    return fallback


def _date_from_epoch(value: Any, fallback: float) -> float:
    if value is None or not is_finite_number(value):
        return fallback
    return time_clip(value * 1000 if value < _SECONDS_BELOW else value)


def _state_database(root: str) -> str | None:
    try:
        names = os.listdir(root)
    except OSError:
        return None
    versions = [(int(m.group(1)), name) for name in names if (m := _STATE_DB.match(name))]
    if not versions:
        return None
    versions.sort(key=lambda v: -v[0])  # stable: equal versions (state_1, state_01) keep listing order
    return os.path.join(root, versions[0][1])


class _Fallback(Exception):
    """The state database cannot be used: omp lists the rollout files instead."""


def _from_database(root: str, database: str) -> list[ForeignSession]:
    try:
        # a URI (for mode=ro): '#', '?' and '%' in the path must not be read as URI syntax
        connection = sqlite3.connect(f"file:{quote(os.fsencode(database), safe='/')}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise _Fallback from e
    try:
        rows = connection.execute("SELECT id, rollout_path, created_at, updated_at, cwd, title, "
                                  "first_user_message FROM threads").fetchall()
    except sqlite3.Error as e:
        raise _Fallback from e
    finally:
        connection.close()
    sessions: list[ForeignSession] = []
    for sid, rollout, created_at, updated_at, cwd, title, first in rows:
        if not sid or not rollout or not cwd:
            continue
        if not isinstance(rollout, str):
            raise _Fallback  # path.isAbsolute throws on it, and omp falls back
        if not isinstance(sid, str) or not isinstance(cwd, str):
            continue  # omp would carry a number or bytes on as the id or cwd; we skip the row
        path = rollout if rollout.startswith("/") else os.path.normpath(os.path.join(root, rollout))
        modified = _date_from_epoch(updated_at, 0.0)
        created = _date_from_epoch(created_at, modified)
        sessions.append(ForeignSession(
            source="codex", id=sid, path=path, cwd=cwd, created_ms=created, modified_ms=modified,
            title=title if isinstance(title, str) else None,
            first_message=first if isinstance(first, str) else None))
    return sessions


def _index(root: str) -> dict[str, tuple[str, str]]:
    """id -> (thread name, updated at) from ``session_index.jsonl``."""
    found: dict[str, tuple[str, str]] = {}
    try:
        records = read_records(os.path.join(root, "session_index.jsonl")).records
    except OSError:
        return found
    for value, _line in records:
        sid = string_field(value, "id")
        name = string_field(value, "thread_name")
        updated = string_field(value, "updated_at")
        if sid and name and updated:
            found[sid] = (name, updated)
    return found


def _rollout_files(directory: str) -> list[str]:
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    files: list[str] = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            files.extend(_rollout_files(entry.path))
        elif entry.is_file(follow_symlinks=False) and entry.name.endswith(".jsonl"):
            files.append(entry.path)
    return files


def _rollout_id(path: str) -> str:
    match = _ROLLOUT_ID.search(path)
    return match.group(1) if match else os.path.basename(path)[: -len(".jsonl")]


def _from_rollouts(root: str) -> list[ForeignSession]:
    index = _index(root)
    files = [f for name in ("sessions", ".sessions", "archived_sessions")
             for f in _rollout_files(os.path.join(root, name))]
    sessions: list[ForeignSession] = []
    for path in files:
        try:
            records = read_records(path, first_only=True).records
        except OSError:
            continue
        first = records[0][0] if records else None
        if first is None or first.get("type") != "session_meta" or not isinstance(first.get("payload"), dict):
            continue
        payload = first["payload"]
        sid = string_field(payload, "id")
        if sid is None:
            sid = _rollout_id(path)
        cwd = string_field(payload, "cwd")
        if not cwd:
            continue
        times = file_times(path)
        indexed = index.get(sid)
        created = time_clip(timestamp_millis(string_field(payload, "timestamp"), times.birthtime_ms))
        modified = time_clip(timestamp_millis(indexed[1], times.mtime_ms) if indexed else times.mtime_ms)
        sessions.append(ForeignSession(source="codex", id=sid, path=path, cwd=cwd, created_ms=created,
                                       modified_ms=modified, title=indexed[0] if indexed else None))
    return sessions


def _sorted(sessions: list[ForeignSession]) -> list[ForeignSession]:
    # omp breaks ties with localeCompare (ICU); code point order differs only for odd ids
    return sorted(sessions, key=lambda s: (-(s.modified_ms if s.modified_ms == s.modified_ms else -1e300), s.id))


def list_codex(root: str, env: Mapping[str, str] | None = None) -> list[ForeignSession]:
    """Every Codex session under ``root``, most recently modified first."""
    root = os.path.abspath(root)
    database = _state_database(root)
    if database is not None:
        try:
            found = _from_database(root, database)
        except _Fallback:
            found = []
        if found:
            return _sorted(found)
    return _sorted(_from_rollouts(root))
