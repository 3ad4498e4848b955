"""The JSON files our caches keep under the user cache dir (listing, stats, search state).

A cache is an accelerator only: a missing, unreadable, corrupt or old-version file loads as empty,
and a save that fails says so and changes nothing (the file is replaced whole, by a rename).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

__all__ = ["load_cache", "replace_quietly"]


def load_cache(file: Path, version: int) -> dict[str, Any]:
    """The ``files`` map of a cache written with ``{"version": version, "files": {...}}``."""
    try:
        data = orjson.loads(file.read_bytes())
    except (OSError, orjson.JSONDecodeError):
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
