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

This module is a façade: every name is imported on first use (PEP 562), so ``import omp_session``
costs almost nothing. The layers behind it are drawn in docs/architecture.md.
"""

from ._version import __version__ as __version__

_TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing alone would double our import time
if _TYPE_CHECKING:  # what a type checker and an IDE see; at run time __getattr__ below loads them
    from typing import Any

    from .diagnostics import Diagnostic as Diagnostic
    from .diagnostics import Severity as Severity
    from .errors import (
        BlobError as BlobError,
    )
    from .errors import (
        DamagedSessionError as DamagedSessionError,
    )
    from .errors import (
        EditError as EditError,
    )
    from .errors import (
        EntryNotFoundError as EntryNotFoundError,
    )
    from .errors import (
        ExportError as ExportError,
    )
    from .errors import (
        FormatError as FormatError,
    )
    from .errors import (
        LockError as LockError,
    )
    from .errors import (
        NotASessionError as NotASessionError,
    )
    from .errors import (
        PersistenceError as PersistenceError,
    )
    from .errors import (
        RepairConflictError as RepairConflictError,
    )
    from .errors import (
        RepairError as RepairError,
    )
    from .errors import (
        SessionError as SessionError,
    )
    from .errors import (
        SessionFileError as SessionFileError,
    )
    from .errors import (
        UnsupportedVersionError as UnsupportedVersionError,
    )
    from .errors import (
        WriteConflictError as WriteConflictError,
    )
    from .js.codec import UNDEFINED as UNDEFINED
    from .model.session import Session as Session
    from .model.session import open_session
    from .model.tree import Tree as Tree
    from .model.tree import TreeNode as TreeNode
    from .ops.export.formats import export as export
    from .ops.redact.rewrite import (
        RedactResult as RedactResult,
    )
    from .ops.redact.rewrite import (
        RedactRules as RedactRules,
    )
    from .ops.redact.rewrite import (
        redact as redact,
    )
    from .ops.redact.rewrite import (
        write_redacted as write_redacted,
    )
    from .ops.repair.plan import (
        RepairPlan as RepairPlan,
    )
    from .ops.repair.plan import (
        apply_repair as apply_repair,
    )
    from .ops.repair.plan import (
        plan_repair as plan_repair,
    )
    from .ops.stats.report import stats as stats
    from .ops.validate.check import validate as validate
    from .write.manager import SessionManager as SessionManager

    open = open_session

# public name -> (module, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    "UNDEFINED": ("omp_session.js.codec", "UNDEFINED"),
    "Diagnostic": ("omp_session.diagnostics", "Diagnostic"),
    "Severity": ("omp_session.diagnostics", "Severity"),
    "Session": ("omp_session.model.session", "Session"),
    "open": ("omp_session.model.session", "open_session"),
    "Tree": ("omp_session.model.tree", "Tree"),
    "TreeNode": ("omp_session.model.tree", "TreeNode"),
    "SessionManager": ("omp_session.write.manager", "SessionManager"),
    "validate": ("omp_session.ops.validate.check", "validate"),
    "RepairPlan": ("omp_session.ops.repair.plan", "RepairPlan"),
    "plan_repair": ("omp_session.ops.repair.plan", "plan_repair"),
    "apply_repair": ("omp_session.ops.repair.plan", "apply_repair"),
    "export": ("omp_session.ops.export.formats", "export"),
    "RedactResult": ("omp_session.ops.redact.rewrite", "RedactResult"),
    "RedactRules": ("omp_session.ops.redact.rewrite", "RedactRules"),
    "redact": ("omp_session.ops.redact.rewrite", "redact"),
    "write_redacted": ("omp_session.ops.redact.rewrite", "write_redacted"),
    "stats": ("omp_session.ops.stats.report", "stats"),
}
for _name in (
    "BlobError", "DamagedSessionError", "EditError", "EntryNotFoundError", "ExportError", "FormatError",
    "LockError", "NotASessionError", "PersistenceError", "RepairConflictError", "RepairError", "SessionError",
    "SessionFileError", "UnsupportedVersionError", "WriteConflictError",
):
    _EXPORTS[_name] = ("omp_session.errors", _name)
del _name

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> "Any":
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'omp_session' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
