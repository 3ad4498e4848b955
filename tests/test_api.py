"""The public API is pinned: adding or removing a name is a deliberate change."""

from __future__ import annotations

from pathlib import Path

import omp_session

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "omp_session" / "samples" / "sample.jsonl"


def test_all_is_pinned() -> None:
    assert sorted(omp_session.__all__) == sorted([
        "UNDEFINED", "BlobError", "DamagedSessionError", "Diagnostic", "EditError", "EntryNotFoundError", "ExportError",
        "FormatError", "LockError", "NotASessionError", "PersistenceError", "RepairConflictError", "RepairError",
        "RedactResult", "RedactRules", "RepairPlan", "Session", "SessionError", "SessionFileError", "SessionManager", "Severity", "Tree",
        "TreeNode", "UnsupportedVersionError", "WriteConflictError", "__version__", "apply_repair", "export", "open",
        "plan_repair", "redact", "stats", "validate", "write_redacted",
    ])
    for name in omp_session.__all__:
        assert hasattr(omp_session, name), name


def test_error_tree() -> None:
    for name in ("FormatError", "UnsupportedVersionError", "DamagedSessionError", "WriteConflictError",
                 "EditError", "BlobError", "SessionFileError", "EntryNotFoundError", "LockError",
                 "PersistenceError"):
        assert issubclass(getattr(omp_session, name), omp_session.SessionError)
    assert issubclass(omp_session.FormatError, ValueError)


def test_session_views_as_properties() -> None:
    with omp_session.open(SAMPLE) as s:
        assert s.leaf_id == "fac25287" and s.name == "Fix CSV importer quoted newlines"
        assert [e["id"] for e in s.branch][-2:] == ["7a393edb", "fac25287"]
        assert len(s.tree) == 1 and s.tree.roots[0].id == "7764fbfc"
        assert len(s.context["messages"]) == 3
        assert round(s.usage["cost"], 6) == round(0.0093 + 0.00516 + 0.00537 + 0.006975, 6)
        assert s.labels() == {"52592a2f": "diagnosis"}
        assert [e["id"] for e in s.get_children("52592a2f")] == ["bf760380", "27548602"]
