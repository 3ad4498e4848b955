"""What a repair plan holds: the fixes, the notes, the quarantined records and the repaired bytes.

See ``docs/repair.md`` for the rules; ``repair.py`` builds plans, this module only describes them.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from omp_session.diagnostics import format_location
from omp_session.js import codec

__all__ = ["Fix", "Quarantined", "RepairPlan",
           "RepairResult"]


@dataclass(frozen=True, slots=True)
class Fix:
    """One change (``changes`` True) or one finding left as it is (a note).

    ``line`` (1-based) and ``offset`` locate it in the *original* file; ``entry_id`` names the
    entry concerned, when there is one.
    """

    code: str
    message: str
    line: int | None = None
    offset: int | None = None
    entry_id: str | None = None
    changes: bool = True

    def location(self) -> str:
        return format_location(None, self.line, self.offset, self.entry_id)

    def __str__(self) -> str:
        where = self.location()
        kind = "fix" if self.changes else "note"
        return f"{kind} [{self.code}] {where + ': ' if where else ''}{self.message}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "kind": "fix" if self.changes else "note",
                               "message": self.message}
        for key in ("line", "offset", "entry_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A record taken out of the file, kept byte for byte in the quarantine sidecar."""

    line: int
    offset: int
    raw: bytes
    reason: str

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"line": self.line, "offset": self.offset, "reason": self.reason}
        try:
            out["text"] = self.raw.decode("utf-8")
        except UnicodeDecodeError:
            out["base64"] = base64.b64encode(self.raw).decode("ascii")
        return out

    def line_bytes(self) -> bytes:
        return codec.dumps_line(self.to_json())


@dataclass(slots=True, weakref_slot=True)
class RepairPlan:
    """Everything ``plan_repair`` found for one file; applying it writes the repaired bytes
    (:meth:`pieces`, or all at once :attr:`output`), ``output_size`` bytes hashing to ``output_sha256``.

    ``size``, ``mtime_ns`` and ``sha256`` identify the bytes the plan was made from, so an
    in-place apply can refuse when the file changed since.
    """

    path: str
    size: int
    mtime_ns: int
    sha256: str
    # the repaired bytes, piece by piece, each time it is called (from the file itself when it
    # needs no change, else from a copy the plan keeps)
    pieces_of: Callable[[], Iterable[bytes]] = field(repr=False, compare=False)
    fixes: list[Fix] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    output_size: int = 0
    output_sha256: str = ""

    def pieces(self) -> Iterator[bytes]:
        yield from self.pieces_of()

    @property
    def output(self) -> bytes:
        """The repaired file, all in memory (:meth:`pieces` for a big one)."""
        return b"".join(self.pieces())

    @property
    def changes(self) -> list[Fix]:
        return [f for f in self.fixes if f.changes]

    @property
    def notes(self) -> list[Fix]:
        return [f for f in self.fixes if not f.changes]

    @property
    def is_empty(self) -> bool:
        """Nothing to change: the file is already what repair would write."""
        return not self.changes and not self.quarantined

    def quarantine_bytes(self) -> bytes:
        return b"".join(q.line_bytes() for q in self.quarantined)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256,
            "output_size": self.output_size,
            "output_sha256": self.output_sha256,
            "fixes": [f.to_json() for f in self.changes],
            "notes": [f.to_json() for f in self.notes],
            "quarantined": [q.to_json() for q in self.quarantined],
        }


@dataclass(frozen=True, slots=True)
class RepairResult:
    """What ``apply_repair`` wrote."""

    output: str
    backup: str | None = None
    quarantine: str | None = None
    written: bool = True
