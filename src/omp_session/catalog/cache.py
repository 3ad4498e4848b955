"""The JSON files our caches keep under the user cache dir (listing, stats, search state).

A cache is an accelerator only: a missing, unreadable, corrupt or old-version file loads as empty,
and a save that fails says so and changes nothing (the file is replaced whole, by a rename).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from omp_session.errors import JSONSyntaxError
from omp_session.js.codec import loads as js_loads

__all__ = ["cache_dumps", "cache_loads", "load_cache", "replace_quietly"]


def cache_dumps(value: Any) -> bytes:
    """JSON bytes of ``value``; a lone surrogate (a session can hold one: omp writes it as an
    escape) is written as its ``\\udXXX`` escape, which orjson refuses to do."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def cache_loads(data: bytes) -> Any:
    """What :func:`cache_dumps` wrote, lone surrogates included. Raises ValueError."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return js_loads(data)  # escaped lone surrogates: orjson refuses them, JSON.parse does not
        except JSONSyntaxError as e:
            raise ValueError(str(e)) from None


def load_cache(file: Path, version: int) -> dict[str, Any]:
    """The ``files`` map of a cache written with ``{"version": version, "files": {...}}``."""
    try:
        data = cache_loads(file.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != version or not isinstance(data.get("files"), dict):
        return {}
    return {k: v for k, v in data["files"].items() if isinstance(v, dict)}


def replace_quietly(target: Path, data: bytes) -> bool:
    """Replace ``target`` by ``data`` atomically; False (and nothing changed) when that fails."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True
