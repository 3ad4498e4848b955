"""v1 -> v2 -> v3 migration of a loaded session, in memory (spec S5)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from omp_session.diagnostics import Diagnostic, Severity
from omp_session.js.number import to_number

__all__ = ["CURRENT_VERSION", "header_version", "migrate", "needs_migration", "new_entry_id"]

CURRENT_VERSION = 3


def new_entry_id(taken: Callable[[str], bool]) -> str:
    """A fresh 8-hex id like omp's, but checked against ``taken`` (omp never checks, S5.2)."""
    import secrets  # only v1 files need new ids: not worth its import on every open

    for _ in range(100):
        candidate = secrets.token_hex(4)
        if not taken(candidate):
            return candidate
    while True:  # 2^64 space: a collision here is not a practical concern
        candidate = secrets.token_hex(8)
        if not taken(candidate):
            return candidate


def header_version(header: dict[str, Any]) -> Any:
    version = header.get("version")
    return 1 if version is None else version


def needs_migration(header: dict[str, Any]) -> bool:
    """omp flags a file as migrated unless ``version >= 3`` holds in JavaScript terms."""
    return not to_number(header_version(header)) >= CURRENT_VERSION


def migrate(
    header: dict[str, Any],
    entries: list[Any],
    *,
    make_id: Callable[[Callable[[str], bool]], str] = new_entry_id,
    line_of: Callable[[int], int | None] | None = None,
) -> tuple[bool, list[Diagnostic]]:
    """Migrate ``header`` and ``entries`` in place like omp; return (migrated, diagnostics).

    ``line_of(i)`` gives the physical line of entry ``i`` for diagnostics.
    """
    if not needs_migration(header):
        return False, []
    version = to_number(header_version(header))
    diagnostics: list[Diagnostic] = []
    if version < 2:
        diagnostics += _v1_to_v2(header, entries, make_id, line_of)
    if version < 3:
        _v2_to_v3(header, entries)
    return True, diagnostics


def _v1_to_v2(
    header: dict[str, Any],
    entries: Sequence[Any],
    make_id: Callable[[Callable[[str], bool]], str],
    line_of: Callable[[int], int | None] | None,
) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    header["version"] = 2
    records: list[Any] = [header, *entries]  # firstKeptEntryIndex counts the header as 0 (S5.2)
    assigned: set[str] = set()
    prev: str | None = None
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            # omp crashes here (it assigns an id to a non-object); we keep the record untouched.
            diagnostics.append(Diagnostic(
                "migration-non-object", Severity.ERROR,
                "a non-object record in a v1 session: omp cannot open this file",
                line=line_of(i) if line_of else None))
            continue
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        new_id = make_id(assigned.__contains__)
        assigned.add(new_id)
        entry["id"] = new_id
        entry["parentId"] = prev
        prev = new_id
        if entry.get("type") == "compaction":
            index = entry.get("firstKeptEntryIndex")
            if isinstance(index, int | float) and not isinstance(index, bool):
                target = records[int(index)] if float(index).is_integer() and 0 <= index < len(records) else None
                if isinstance(target, dict) and target.get("type") != "session":
                    if "id" in target:
                        entry["firstKeptEntryId"] = target["id"]
                    else:
                        # JS assigns undefined: the key exists in memory but is never written.
                        from omp_session.js.codec import UNDEFINED
                        entry["firstKeptEntryId"] = UNDEFINED
                elif target is not None and not isinstance(target, dict):
                    from omp_session.js.codec import UNDEFINED
                    entry["firstKeptEntryId"] = UNDEFINED
                del entry["firstKeptEntryIndex"]
    return diagnostics


def _v2_to_v3(header: dict[str, Any], entries: Sequence[Any]) -> None:
    header["version"] = 3
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "session":
            entry["version"] = 3
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
