"""What was imported already: source file (path, id, size, mtime) -> the omp session made from it.

The ledger is ``<cache dir>/foreign-imports.jsonl``, one JSON line per import, appended with one
``write`` (``O_APPEND``), so an interrupted batch keeps what it finished. Runs at the same time take
turns (a lock on the ledger file, held while one source is imported) and each reads what the
others recorded before it imports a source, so none imports a source another just did. A damaged
line is skipped. An import counts only while the omp session it made still exists: delete that
session and the source imports again.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from omp_session.paths import cache_dir

__all__ = ["Ledger", "LedgerFailure", "LedgerRecord", "ledger_path"]


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


@dataclass(frozen=True)
class LedgerFailure:
    """An import that failed because the source cannot be converted (not because it could not be
    read or written): the source as it was then (size, mtime) and why. It has no ``session`` field,
    so a reader that knows only imports skips the line as not its own."""

    source: str
    source_id: str
    source_path: str
    size: int
    mtime_ns: int
    failed: str  # the reason
    failed_at: str


_TEXT_FIELDS = ("source", "source_id", "source_path", "session", "imported_at")
_FAILURE_TEXT_FIELDS = ("source", "source_id", "source_path", "failed", "failed_at")
_INT_FIELDS = ("size", "mtime_ns")


def _parse(line: bytes) -> LedgerRecord | LedgerFailure | None:
    """One ledger line, or None when it is damaged (cut short, edited, not ours)."""
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    if not all(isinstance(raw.get(k), int) and not isinstance(raw.get(k), bool) for k in _INT_FIELDS):
        return None
    if "session" not in raw and all(isinstance(raw.get(k), str) for k in _FAILURE_TEXT_FIELDS):
        return LedgerFailure(**{k: raw[k] for k in LedgerFailure.__dataclass_fields__})
    if not all(isinstance(raw.get(k), str) for k in _TEXT_FIELDS):
        return None
    return LedgerRecord(**{k: raw[k] for k in LedgerRecord.__dataclass_fields__})


class Ledger:
    """The imports recorded so far, newest last per source path.

    Another run may append while this one works: :meth:`locked` serializes the runs (an advisory
    ``flock`` on the ledger file) and :meth:`refresh` reads what they appended since.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else ledger_path()
        self._by_path: dict[str, list[LedgerRecord]] = {}
        self._failed: dict[str, LedgerFailure] = {}  # the last failure of each source path, unless imported since
        self._offset = 0  # the bytes read so far: whole lines only
        self.refresh()

    def refresh(self) -> None:
        """Take in the lines appended since the last read. A ledger that cannot be read is taken as
        empty here: :meth:`locked` and :meth:`add` say why, before anything is imported."""
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size < self._offset:  # replaced by a shorter file: read it anew
                    self._by_path.clear()
                    self._failed.clear()
                    self._offset = 0
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return
        end = data.rfind(b"\n") + 1  # a last line without its end is still being written, or was cut short
        for line in data[:end].splitlines():
            rec = _parse(line)
            if rec is not None:
                self._take(rec)
        self._offset += end

    def _take(self, rec: LedgerRecord | LedgerFailure) -> None:
        if isinstance(rec, LedgerFailure):
            self._failed[rec.source_path] = rec
        else:
            self._by_path.setdefault(rec.source_path, []).append(rec)
            self._failed.pop(rec.source_path, None)  # imported after it failed: that failure is stale

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the ledger for one import: no other run records (or imports) meanwhile."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def latest(self, source_path: str) -> LedgerRecord | None:
        """The newest import of ``source_path`` whose omp session still exists. An empty file is
        none: sessions are not synced to disk one by one (omp's importer does not sync either),
        so after a crash of the machine an import may have left an empty file behind, and its
        source is to be imported again."""
        for rec in reversed(self._by_path.get(source_path, [])):
            try:
                if os.stat(rec.session).st_size > 0:
                    return rec
            except (OSError, ValueError):  # ValueError: a NUL in a name edited by hand
                continue
        return None

    def failure(self, source_path: str, size: int, mtime_ns: int) -> LedgerFailure | None:
        """The last recorded failure to convert ``source_path`` when the file is still as it was
        then (same size and mtime), else None: a source that changed may import now."""
        rec = self._failed.get(source_path)
        return rec if rec is not None and rec.size == size and rec.mtime_ns == mtime_ns else None

    def add(self, rec: LedgerRecord | LedgerFailure) -> None:
        """Append ``rec`` (raises OSError); call it under :meth:`locked`."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(rec.__dict__) + "\n").encode("ascii")  # \u escapes keep undecodable path bytes
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # end a line cut short by a crash, so this one stays whole
            written = os.write(fd, line)
        finally:
            os.close(fd)
        self._take(rec)
        if size == self._offset and written == len(line):  # read all before it: no need to read it back
            self._offset = size + written
