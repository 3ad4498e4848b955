"""What was imported already: source file (path, id, size, mtime) -> the omp session made from it.

The ledger is ``<cache dir>/foreign-imports.jsonl``, one JSON line per import, appended with one
``write`` (``O_APPEND``), so concurrent imports never interleave a line and an interrupted batch
keeps what it finished. A damaged line is skipped. An import counts only while the omp session it
made still exists: delete that session and the source imports again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from omp_session.paths import cache_dir

__all__ = ["Ledger", "LedgerRecord", "ledger_path"]


def ledger_path() -> Path:
    return cache_dir() / "foreign-imports.jsonl"


@dataclass(frozen=True)
class LedgerRecord:
    source: str
    source_id: str
    source_path: str
    size: int
    mtime_ns: int
    session: str
    imported_at: str


class Ledger:
    """The imports recorded so far, newest last per source path."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else ledger_path()
        self._by_path: dict[str, list[LedgerRecord]] = {}
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for line in data.splitlines():
            try:
                raw = json.loads(line)
                rec = LedgerRecord(**{k: raw[k] for k in LedgerRecord.__dataclass_fields__})
            except (ValueError, TypeError, KeyError):
                continue  # a line cut short by a crash, or not ours
            self._by_path.setdefault(rec.source_path, []).append(rec)

    def latest(self, source_path: str) -> LedgerRecord | None:
        """The newest import of ``source_path`` whose omp session still exists."""
        for rec in reversed(self._by_path.get(source_path, [])):
            if os.path.exists(rec.session):
                return rec
        return None

    def add(self, rec: LedgerRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(rec.__dict__) + "\n").encode("ascii")  # \u escapes keep undecodable path bytes
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        self._by_path.setdefault(rec.source_path, []).append(rec)
