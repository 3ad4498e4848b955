"""One file through ``omp_session.open`` and every view, each call under its own alarm.

A call may return or raise a ``SessionError`` (omp itself throws there, or the file cannot be
read); anything else is a failure, and so is a call still running after ``timeout`` seconds
("slow"). A failure's signature (call, exception type, innermost frame of the package) tells
distinct bugs apart, without line numbers so that it survives edits around the bug.
"""

from __future__ import annotations

import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import omp_session
from omp_session.errors import SessionError

__all__ = ["VIEWS", "Failure", "Slow", "alarm", "check_file", "signature_of"]


class Slow(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` in the library eats it."""


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise Slow

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass(frozen=True)
class Failure:
    call: str
    kind: str  # the exception's type name, or "slow"
    where: str  # innermost frame inside omp_session: "model/tree.py:walk", or ""
    message: str

    @property
    def signature(self) -> str:
        return f"{self.call}: {self.kind}" + (f" at {self.where}" if self.where else "")


def _where(tb: TracebackType | None) -> str:
    """The frame of the package that names the bug: for a RecursionError the function that
    recurses most (the limit strikes anywhere along the cycle), else the innermost one;
    comprehensions name their function instead."""
    frames = []
    for frame, _ in traceback.walk_tb(tb):
        name = frame.f_code.co_filename.replace("\\", "/")
        if "/omp_session/" in name:
            frames.append(f"{name.rsplit('/omp_session/', 1)[1]}:{frame.f_code.co_name}")
    named = [f for f in frames if not f.rsplit(":", 1)[1].startswith("<")] or frames
    if not named:
        return ""
    counts = Counter(named)
    top = max(counts.values())
    return next(f for f in reversed(named) if counts[f] == top)


def signature_of(call: str, exc: BaseException) -> Failure:
    where = _where(exc.__traceback__)
    if isinstance(exc, Slow):  # where the alarm struck is chance: not part of the signature
        return Failure(call, "slow", "", f"interrupted in {where}")
    return Failure(call, type(exc).__name__, where, str(exc)[:300])


def _tree(s: Any) -> int:
    return sum(1 for _ in s.get_tree().walk())


def _entries(s: Any) -> int:
    n = sum(1 for _ in s.entries)
    return n + len(s.get_entries())


def _diagnostics(s: Any) -> int:
    return sum(1 for d in s.diagnostics if d.code and d.message)


def _sums_or_error(sums: Callable[[], Any]) -> str:
    try:
        return repr(sums())
    except SessionError as e:  # omp throws there: so must the other reading, at the same entry
        return f"{type(e).__name__}: {e}"


def _kept_usage(s: Any) -> str:
    """The totals of the file opened again keeping usage as it is read (show's and the Markdown
    export's reading), which must be the ones the session sums without it."""
    with omp_session.open(s.path, usage=True) as kept:
        theirs = _sums_or_error(kept.get_usage_statistics)
    mine = _sums_or_error(s.get_usage_statistics)
    if mine != theirs and not s.migrated:  # (a v1 file's ids, named in an error, are made up on each load)
        raise AssertionError(f"usage kept while reading: {theirs[:120]} != {mine[:120]}")
    return mine


VIEWS: dict[str, Callable[[Any], Any]] = {
    "entries": _entries,
    "get_leaf_id": lambda s: s.get_leaf_id(),
    "get_branch": lambda s: s.get_branch(),
    "get_tree": _tree,
    "labels": lambda s: s.labels(),
    "get_session_name": lambda s: s.get_session_name(),
    "build_session_context": lambda s: s.build_session_context(),
    "build_session_context(transcript)": lambda s: s.build_session_context(transcript=True),
    "get_usage_statistics": lambda s: s.get_usage_statistics(),
    "get_usage_statistics(usage kept)": _kept_usage,
    "diagnostics": _diagnostics,
}
CALLS = ["open", *VIEWS, "validate"]


def check_file(path: Path, timeout: float, *, only: str | None = None) -> tuple[list[Failure], float]:
    """Every call on ``path`` (or ``open`` and ``only``): the failures and the seconds taken."""
    failures: list[Failure] = []
    started = time.perf_counter()

    def call(name: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        try:
            with alarm(timeout):
                return True, fn()
        except SessionError:
            return False, None
        except (Exception, Slow) as e:  # RecursionError, MemoryError and the rest: all bugs here
            failures.append(signature_of(name, e))
            return False, None

    if only != "validate":
        ok, session = call("open", lambda: omp_session.open(path))
        if ok:
            try:
                for name, view in VIEWS.items():
                    if only is not None and name != only:
                        continue
                    call(name, lambda view=view: view(session))  # type: ignore[misc]
                    if failures and failures[-1].kind == "slow":
                        break  # an interrupted call may leave half-built caches behind
            finally:
                session.close()
    if only in (None, "validate"):
        call("validate", lambda: omp_session.validate(path))
    return failures, time.perf_counter() - started
