"""The one exception tree of omp_session.

Findings about a file's content are data (``Diagnostic``); exceptions mean an
operation cannot continue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .diagnostics import Diagnostic

__all__ = [
    "BlobError",
    "DamagedSessionError",
    "EditError",
    "EntryNotFoundError",
    "FormatError",
    "LockError",
    "PersistenceError",
    "SessionError",
    "SessionFileError",
    "UnsupportedVersionError",
    "WriteConflictError",
]


class SessionError(Exception):
    """Base of every error this library raises on purpose."""


class FormatError(SessionError, ValueError):
    """Bytes that cannot be read as an omp session (e.g. no valid header)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 offset: int | None = None) -> None:
        where = ""
        if path is not None:
            where = path
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.offset = offset


class UnsupportedVersionError(SessionError):
    """A session version this library refuses to write."""


class DamagedSessionError(SessionError):
    """A strict load found problems; ``diagnostics`` lists them."""

    def __init__(self, message: str, diagnostics: list[Diagnostic]) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


class WriteConflictError(SessionError):
    """The file changed under us; nothing was overwritten."""


class EditError(SessionError):
    """An edit that cannot be applied: unknown parent, bad title, ..."""


class EntryNotFoundError(EditError, LookupError):
    """An operation names an entry id the session does not hold."""


class LockError(WriteConflictError):
    """Another live process holds the file's publish lock; nothing was written."""


class PersistenceError(SessionError):
    """Writing the session file failed (disk full, permissions, ...); what was on disk is kept.

    ``__cause__`` is the underlying :class:`OSError`.
    """

    def __init__(self, path: str, action: str, cause: BaseException) -> None:
        reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause)
        super().__init__(f"{path}: {action} failed: {reason}; the file on disk was left as it was")
        self.path = path
        self.action = action


class BlobError(SessionError):
    """A missing blob, a hash mismatch or a malformed blob reference."""


class SessionFileError(SessionError, OSError):
    """A session file that cannot be read at all: missing, a directory, no permission."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
