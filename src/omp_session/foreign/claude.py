"""Listing Claude Code sessions as omp's ``ClaudeSessionStore.list`` does.

Sessions are ``<root>/projects/<encoded project>/<id>.jsonl`` (and ``.projects/``). What a listing
says about one comes from ``<root>/history.jsonl`` when that index knows the session (first prompt,
times, project), else from the transcript's first 64 KiB (its recorded ``cwd``), else from the
folder name, decoded with the help of the projects registered in ``.claude.json``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from omp_session.js import codec
from omp_session.js.date import date_parse, time_clip
from omp_session.js.value import JS_S, JS_SPACE

from .filetimes import file_times
from .jsonl import is_finite_number, read_records
from .sources import ForeignSession, claude_config_file

__all__ = ["CWD_PREFIX_BYTES", "list_claude", "string_field", "timestamp_ms"]

CWD_PREFIX_BYTES = 64 * 1024
_SPACES = re.compile(f"{JS_S}+")


def string_field(record: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string field, else None (Claude's ``stringField``)."""
    value = record.get(key)
    return value if isinstance(value, str) and value else None


def timestamp_ms(value: Any, fallback: float) -> float:
    """A finite number as it is, a string through ``Date.parse``, else ``fallback``."""
    if is_finite_number(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, str):
        parsed = date_parse(value)
        if parsed == parsed:
            return parsed
    return fallback


@dataclass
class _History:
    created: float
    modified: float
    first_message: str | None
    cwd: str | None
    count: int


def _clean_preview(value: str) -> str | None:
    cleaned = _SPACES.sub(" ", value).strip(JS_SPACE)
    return cleaned or None


def _history(path: str) -> dict[str, _History]:
    found: dict[str, _History] = {}
    try:
        records = read_records(path).records
    except OSError:
        return found  # the index is optional: project files are found without it
    for value, _line in records:
        sid = string_field(value, "sessionId") or string_field(value, "session_id")
        stamp = value.get("timestamp")
        timestamp = timestamp_ms(value.get("ts") if stamp is None else stamp, 0)
        if not sid or not timestamp > 0:
            continue
        raw = string_field(value, "display") or string_field(value, "text")
        text = _clean_preview(raw) if raw else None
        cwd = string_field(value, "project")
        seen = found.get(sid)
        if seen is None:
            found[sid] = _History(timestamp, timestamp, text, cwd, 1)
            continue
        if timestamp < seen.created:
            seen.created = timestamp
            if text:
                seen.first_message = text
        seen.modified = max(seen.modified, timestamp)
        if not seen.first_message and text:
            seen.first_message = text
        seen.count += 1
        if not seen.cwd and cwd:
            seen.cwd = cwd
    return found


def _registered_projects(root: str, env: Mapping[str, str] | None) -> list[str]:
    try:
        with open(claude_config_file(root, env), "rb") as f:
            parsed = codec.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return []
    projects = parsed.get("projects") if isinstance(parsed, dict) else None
    if not isinstance(projects, dict):
        return []
    # for...in order: integer-like keys first; an absolute path never is one
    return [p for p in projects if p.startswith("/")]


def _project_cwd(encoded: str, registered: list[str]) -> str:
    for project in registered:
        if project.replace(os.sep, "-") == encoded:
            return project
    if not encoded.startswith("-"):
        return encoded
    return encoded.replace("-", os.sep)


def _recorded_cwd(path: str) -> str | None:
    """The first ``cwd`` omp's lenient parse of the first 64 KiB finds. Each line ``orjson`` takes
    whole is one record of that parse (``codec.JSONLScanner``), so only the others go through it."""
    with open(path, "rb") as f:
        prefix = f.read(CWD_PREFIX_BYTES)
    text = prefix.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    scanner: codec.JSONLScanner | None = None
    pos, n = 0, len(text)
    while pos < n:
        end = text.find("\n", pos)
        if end < 0:
            end = n
        line = text[pos:end]
        try:
            values = [orjson.loads(line)]
            pos = end + 1
        except orjson.JSONDecodeError:
            if not line.strip(" \t\r"):
                pos = end + 1
                continue
            scanner = scanner or codec.JSONLScanner(text)
            records, _malformed, pos = scanner.step(pos)
            values = [value for value, _start, _end in records]
        for value in values:
            if isinstance(value, dict):
                cwd = string_field(value, "cwd")
                if cwd:
                    return cwd
    return None


def _project_files(root: str, env: Mapping[str, str] | None) -> list[tuple[str, str]]:
    registered = _registered_projects(root, env)
    found: list[tuple[str, str]] = []
    for container_name in ("projects", ".projects"):
        container = os.path.join(root, container_name)
        try:
            projects = list(os.scandir(container))
        except OSError:
            continue
        for project in projects:
            if not project.is_dir(follow_symlinks=False):
                continue
            try:
                entries = list(os.scandir(project.path))
            except OSError:
                continue
            cwd = _project_cwd(project.name, registered)
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and entry.name.endswith(".jsonl"):
                    found.append((entry.path, cwd))
    return found


def list_claude(root: str, env: Mapping[str, str] | None = None) -> list[ForeignSession]:
    """Every Claude Code session under ``root``, most recently modified first."""
    root = os.path.abspath(root)
    history = _history(os.path.join(root, "history.jsonl"))
    sessions: list[ForeignSession] = []
    for path, folder_cwd in _project_files(root, env):
        try:
            times = file_times(path)
            sid = os.path.basename(path)[: -len(".jsonl")]
            indexed = history.get(sid)
            created = indexed.created if indexed else (times.birthtime_ms or times.ctime_ms or times.mtime_ms)
            modified = max(indexed.modified if indexed else 0, times.mtime_ms)
            cwd = (indexed.cwd if indexed else None) or _recorded_cwd(path) or folder_cwd
        except OSError:
            continue  # Claude may rotate a file away while we list
        sessions.append(ForeignSession(
            source="claude", id=sid, path=path, cwd=cwd, created_ms=time_clip(created),
            modified_ms=time_clip(modified), first_message=indexed.first_message if indexed else None,
            message_count=indexed.count if indexed else None))
    # omp breaks ties with localeCompare (ICU); code point order differs only for odd names
    sessions.sort(key=lambda s: (-_sortable(s.modified_ms), s.path))
    return sessions


def _sortable(ms: float) -> float:
    return ms if ms == ms else float("-inf")
