"""Collecting validator findings with their location (spec S14): one place turns a byte offset
into a physical line, attaches the file path and caps how many findings one code may produce.
"""

from __future__ import annotations

from typing import Any

from omp_session.diagnostics import Diagnostic, Severity
from omp_session.format.reader import Journal

__all__ = ["MAX_PER_CODE", "Report", "show"]

# A file where every entry is damaged the same way must not produce a list as large as the file:
# after this many findings of one code, the rest are counted in one closing finding.
MAX_PER_CODE = 1000


def show(value: Any) -> str:
    """``repr(value)`` for a message; JSON nests deeper than repr() can recurse."""
    try:
        return repr(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"


class Report:
    def __init__(self, path: str | None, journal: Journal | None) -> None:
        self.path = path
        self.journal = journal
        self.found: list[Diagnostic] = []
        self._counts: dict[str, int] = {}
        self._first_over: dict[str, Diagnostic] = {}

    def add(self, code: str, message: str, *, severity: Severity | None = None, offset: int | None = None,
            entry_id: Any = None, line: int | None = None) -> None:
        """One finding of a registered code. Its severity is the registry's; a code registered
        with several (``Code.also``) is given the one this finding has."""
        count = self._counts.get(code, 0) + 1
        self._counts[code] = count
        if count > MAX_PER_CODE:
            if code not in self._first_over:
                self._first_over[code] = Diagnostic.of(code, message, severity=severity, path=self.path)
            return
        if line is None and offset is not None and self.journal is not None:
            line = self.journal.line_of(offset)
        self.found.append(Diagnostic.of(code, message, severity=severity, line=line, offset=offset,
                                        entry_id=entry_id if isinstance(entry_id, str) else None,
                                        path=self.path))

    def keep(self, diagnostic: Diagnostic) -> None:
        """A finding made elsewhere (the reader's), counted like the others."""
        count = self._counts.get(diagnostic.code, 0) + 1
        self._counts[diagnostic.code] = count
        if count <= MAX_PER_CODE:
            self.found.append(diagnostic)
        elif diagnostic.code not in self._first_over:
            self._first_over[diagnostic.code] = diagnostic

    def take_in(self, later: Report) -> None:
        """What ``later`` found after this report's findings (its own counts, caps and first
        finding over a cap), counted as if this report had found it."""
        for d in later.found:
            self.keep(d)
        for code, first in later._first_over.items():
            kept = sum(1 for d in later.found if d.code == code)
            self._counts[code] += later._counts[code] - kept  # keep() counted the kept ones
            # the first over the cap of both is among ``later.found`` unless this report had none
            self._first_over.setdefault(code, first)

    def result(self) -> list[Diagnostic]:
        out = list(self.found)
        for code, first in self._first_over.items():
            more = self._counts[code] - MAX_PER_CODE
            out.append(Diagnostic(code, first.severity, f"{more} more findings of this kind are not listed",
                                  path=self.path))
        return out
