"""Every exception omp_session raises on purpose, in one tree.

Findings about a file's content are data (``Diagnostic``, docs/diagnostics.md); an exception
means an operation cannot continue. The command line prints any :class:`SessionError` as one
line and exits 1 (usage errors exit 2); nothing here is meant to reach a user as a traceback.

    SessionError
    ├── FormatError(ValueError)          bytes that cannot be read as this format (.path .line .offset)
    ├── UnsupportedVersionError          a session version we refuse to write
    ├── DamagedSessionError              a strict load found problems (.diagnostics)
    ├── SessionFileError(OSError)        a file that cannot be read at all (.path .reason)
    ├── SessionNotFoundError(LookupError)    no session matches a path, id, prefix or ``latest``
    ├── AmbiguousSessionError(LookupError)   several do (.candidates)
    ├── WriteConflictError               the file changed under us; nothing was overwritten
    │   └── LockError                    another live process holds the publish lock
    ├── PersistenceError                 writing failed (disk full, ...); the file was kept (.path .action)
    ├── EditError                        an edit that cannot be applied
    │   └── EntryNotFoundError(LookupError)
    ├── BlobError                        a missing blob, a hash mismatch, a bad reference
    ├── ContextError                     omp itself would throw deriving this view
    ├── StoreError                       a database or Redis store that cannot be used
    │   └── StoreMissingError            opened for reading, the store holds no sessions yet
    ├── ExportError(ValueError)          an export that cannot be made as asked
    │   ├── UnknownFormatError
    │   └── FormatNotAvailableError
    ├── RedactError                      redaction cannot be done or written
    │   ├── SecretsFileError             a --secrets-from file that cannot be read
    │   └── PatternError                 a --pattern that is not a regular expression
    ├── RepairError                      repair cannot go on
    │   ├── NotASessionError             the path is not an omp session: repair refuses it
    │   └── RepairConflictError          the file changed between plan and apply
    ├── PackError                        an archive cannot be written or read
    ├── SearchIndexError                 the search index cannot be used
    │   ├── IndexBusyError               another process held it too long
    │   └── QueryError(ValueError)       a query that cannot be searched for
    ├── StatsOptionError(ValueError)     a bad --tz/--since/--until/--by (a usage error: exit 2)
    ├── ToolArgumentError(ValueError)    an MCP tool call's argument that is missing, mistyped or out of range
    └── MissingExtraError(ImportError)   a store or .tar.zst without its optional package (.extra)

    Internal signals (caught inside the library, never raised to a caller):
    JSONSyntaxError(ValueError)          the exact JSON parser's "not JSON here" (.pos)
    JSTypeError                          where omp would throw a TypeError; becomes ContextError
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omp_session.diagnostics import Diagnostic

__all__ = [
    "AmbiguousSessionError",
    "BlobError",
    "ContextError",
    "DamagedSessionError",
    "EditError",
    "EntryNotFoundError",
    "ExportError",
    "FormatError",
    "FormatNotAvailableError",
    "IndexBusyError",
    "JSONSyntaxError",
    "JSTypeError",
    "LockError",
    "MissingExtraError",
    "NotASessionError",
    "PackError",
    "PatternError",
    "PersistenceError",
    "QueryError",
    "RedactError",
    "RepairConflictError",
    "RepairError",
    "SearchIndexError",
    "SecretsFileError",
    "SessionError",
    "SessionFileError",
    "SessionNotFoundError",
    "StatsOptionError",
    "StoreError",
    "StoreMissingError",
    "ToolArgumentError",
    "UnknownFormatError",
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


class SessionFileError(SessionError, OSError):
    """A session file that cannot be read at all: missing, a directory, no permission."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SessionNotFoundError(SessionError, LookupError):
    """Nothing matches what was asked for."""


class AmbiguousSessionError(SessionError, LookupError):
    """Several sessions match a prefix; ``candidates`` lists them."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


class WriteConflictError(SessionError):
    """The file changed under us; nothing was overwritten."""


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


class EditError(SessionError):
    """An edit that cannot be applied: unknown parent, bad title, ..."""


class EntryNotFoundError(EditError, LookupError):
    """An operation names an entry id the session does not hold."""


class BlobError(SessionError):
    """A missing blob, a hash mismatch or a malformed blob reference."""


class ContextError(SessionError):
    """omp throws while deriving a view from these entries (it reports the view as failed)."""


class StoreError(SessionError):
    """A session store cannot be used: a bad URL or table name, an unreachable server, refused
    credentials, a table of another layout. The message is one line naming the store."""


class StoreMissingError(StoreError):
    """Opened for reading, the store has no session table (or file, or directory) yet."""


class ExportError(SessionError, ValueError):
    """An export that cannot be made as asked (bad format, option that does not apply)."""


class UnknownFormatError(ExportError):
    """A format name the exporter does not know."""


class FormatNotAvailableError(ExportError):
    """A known format that this version cannot produce yet (``html``)."""


class RedactError(SessionError):
    """Redaction cannot be done or written (one-line message)."""


class SecretsFileError(RedactError):
    """A ``--secrets-from`` file that cannot be read or does not parse as a ``.env`` file."""


class PatternError(RedactError):
    """A ``--pattern`` that is not a valid regular expression."""


class RepairError(SessionError):
    """Repair cannot go on (the message is one line naming the file)."""


class NotASessionError(RepairError):
    """The path is not an omp session file: repair refuses to touch it."""


class RepairConflictError(RepairError):
    """The file changed between planning and applying: nothing was written."""


class PackError(SessionError):
    """An archive cannot be written or read: damaged, truncated, unsafe, or a target that is in the way."""


class SearchIndexError(SessionError):
    """The search index cannot be used (one line, naming the index file)."""


class IndexBusyError(SearchIndexError):
    """Another process kept the index locked for longer than we were willing to wait."""


class QueryError(SearchIndexError, ValueError):
    """The query cannot be searched for (unclosed quote, dangling operator, ...)."""


class StatsOptionError(SessionError, ValueError):
    """A bad ``--tz``, ``--since``, ``--until`` or ``--by`` value (a usage error, not a file problem)."""


class ToolArgumentError(SessionError, ValueError):
    """An MCP tool argument that is missing, of the wrong type or out of range (the server returns
    it as the tool's error result)."""


class JSONSyntaxError(ValueError):
    """Input that is not JSON; ``pos`` is the offset (in the Python string) where parsing failed."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"{message} at offset {pos}")
        self.pos = pos


class JSTypeError(Exception):
    """A TypeError omp would throw; converted to ContextError with the entry that caused it."""


class MissingExtraError(SessionError, ImportError):
    """An optional feature whose package is not installed; the message names the extra to install."""

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra
