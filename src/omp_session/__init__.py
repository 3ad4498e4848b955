"""omp_session: read, check and write omp (oh-my-pi) session files.

    import omp_session
    session = omp_session.open("~/.omp/agent/sessions/-src-app/2026-…_….jsonl")
    session.header, session.entries, session.get_leaf_id(), session.get_branch()
    session.build_session_context(), session.get_tree(), session.diagnostics

``open`` reads and never writes. ``SessionManager.open`` opens for writing, like omp.
``validate(path)`` lists every problem of a file (docs/diagnostics.md);
``plan = plan_repair(path); apply_repair(plan, out=...)`` saves a damaged one (docs/repair.md);
``export(session, "md"|"json")`` renders one (docs/export.md); ``write_redacted(redact(session,
RedactRules(...)), out)`` shares one safely (docs/redact.md).
"""

from __future__ import annotations

import errno
import os

from .codec import UNDEFINED
from .diagnostics import Diagnostic, Severity
from .errors import (
    BlobError,
    DamagedSessionError,
    EditError,
    EntryNotFoundError,
    FormatError,
    LockError,
    PersistenceError,
    SessionError,
    SessionFileError,
    UnsupportedVersionError,
    WriteConflictError,
)
from .export import ExportError, export
from .manager import SessionManager
from .redact import RedactResult, RedactRules, redact, write_redacted
from .repair import NotASessionError, RepairConflictError, RepairError, RepairPlan, apply_repair, plan_repair
from .session import Session, read_session
from .stats import stats
from .tree import Tree, TreeNode
from .validate import validate

__version__ = "0.1.0"

__all__ = [
    "UNDEFINED",
    "BlobError",
    "DamagedSessionError",
    "Diagnostic",
    "EditError",
    "EntryNotFoundError",
    "ExportError",
    "FormatError",
    "LockError",
    "NotASessionError",
    "PersistenceError",
    "RedactResult",
    "RedactRules",
    "RepairConflictError",
    "RepairError",
    "RepairPlan",
    "Session",
    "SessionError",
    "SessionFileError",
    "SessionManager",
    "Severity",
    "Tree",
    "TreeNode",
    "UnsupportedVersionError",
    "WriteConflictError",
    "__version__",
    "apply_repair",
    "export",
    "open",
    "plan_repair",
    "redact",
    "stats",
    "validate",
    "write_redacted",
]


def open(path: str | os.PathLike[str], *, blob_store: object = None) -> Session:
    """Read a session file, however damaged, into a :class:`Session`; never writes.

    Content problems become ``session.diagnostics``; only a file that cannot be read at all
    raises :class:`SessionFileError` (a one-line message naming the file).
    """
    path = os.path.expanduser(os.fspath(path))
    if blob_store is None:
        from .blobs import BlobStore
        from .paths import blobs_dir

        blob_store = BlobStore(blobs_dir())
    try:
        return read_session(path, blob_store=blob_store)
    except IsADirectoryError:
        raise SessionFileError(path, "is a directory, not a session file") from None
    except FileNotFoundError:
        raise SessionFileError(path, "no such file") from None
    except PermissionError:
        raise SessionFileError(path, "permission denied") from None
    except OSError as e:
        raise SessionFileError(path, os.strerror(e.errno or errno.EIO)) from None
