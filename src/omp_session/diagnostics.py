"""Findings about a session file: stable codes, a severity and a location."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["Diagnostic", "Severity", "format_location"]


def format_location(path: str | None, line: int | None, offset: int | None, entry_id: str | None) -> str:
    """``path, line N, byte N, entry ID`` with the parts that are known."""
    parts = [path] if path else []
    if line is not None:
        parts.append(f"line {line}")
    if offset is not None:
        parts.append(f"byte {offset}")
    if entry_id is not None:
        parts.append(f"entry {entry_id}")
    return ", ".join(parts)


class Severity(StrEnum):
    ERROR = "error"      # omp cannot load/resume the file, or misbehaves on it
    WARNING = "warning"  # omp tolerates it, but data is lost or ambiguous
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding. ``line`` is 1-based (physical line), ``offset`` a byte offset."""

    code: str
    severity: Severity
    message: str
    line: int | None = None
    offset: int | None = None
    entry_id: str | None = None
    path: str | None = None

    def location(self) -> str:
        return format_location(self.path, self.line, self.offset, self.entry_id)

    def __str__(self) -> str:
        where = self.location()
        return f"{where}: {self.severity.value}: {self.message} [{self.code}]" if where else \
            f"{self.severity.value}: {self.message} [{self.code}]"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "severity": self.severity.value, "message": self.message}
        for key in ("path", "line", "offset", "entry_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out
