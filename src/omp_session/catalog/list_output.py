"""The last JSON output of ``omp-session list``, kept with the state of every file it came from.

A warm ``list --json`` should cost little more than looking at the directory (reading 4 KB of
every file is the floor it is measured against). When no listed file changed — same size,
mtime and inode — and the options are the same, the output cannot have changed either, so it is
printed as it was, without reading the listing cache or building a row.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

__all__ = ["OutputCache", "file_key"]

_VERSION = 1


def file_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


class OutputCache:
    """Per set of options, ``list-output-<hash>.json`` (``{"version", "keys": {path: key},
    "sha256"}``) and the output itself beside it as ``.txt`` (read as bytes: no JSON to parse)."""

    def __init__(self, directory: Path, options: str) -> None:
        import hashlib  # here: a store's listing (list --store) never opens this cache

        digest = hashlib.sha1(options.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self.file = directory / f"list-output-{digest}.json"
        self.text = directory / f"list-output-{digest}.txt"

    def get(self, keys: dict[str, list[int]]) -> str | None:
        try:
            data = orjson.loads(self.file.read_bytes())
            if not isinstance(data, dict) or data.get("version") != _VERSION or data.get("keys") != keys:
                return None
            raw = self.text.read_bytes()
        except (OSError, orjson.JSONDecodeError):
            return None
        # the pair is written in two steps: the hash says the text belongs to these keys
        import hashlib

        if data.get("sha256") != hashlib.sha256(raw).hexdigest():
            return None
        return raw.decode("utf-8", "surrogatepass")

    def put(self, keys: dict[str, list[int]], output: str) -> None:
        import hashlib

        raw = output.encode("utf-8", "surrogatepass")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            for target, data in ((self.text, raw), (self.file, orjson.dumps(
                    {"version": _VERSION, "keys": keys, "sha256": hashlib.sha256(raw).hexdigest()}))):
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, target)
        except OSError:
            pass  # the cache only saves time: a read-only cache directory is not an error
