"""v1 -> v2 -> v3 migration (spec S5, S15 C29-C32)."""

from __future__ import annotations

from typing import Any

import pytest

from omp_session.format.migrate import migrate, needs_migration
from omp_session.js.codec import UNDEFINED


def ids(taken: Any) -> str:
    ids.n += 1  # type: ignore[attr-defined]
    return f"id{ids.n:06d}"  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _reset() -> None:
    ids.n = 0  # type: ignore[attr-defined]


def test_v1_gets_a_linear_chain_and_trailing_version() -> None:
    header: dict[str, Any] = {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"}
    entries: list[Any] = [{"type": "message", "message": {"role": "user"}},
                          {"type": "message", "id": "keepme", "parentId": None, "message": {"role": "hookMessage"}}]
    migrated, diags = migrate(header, entries, make_id=ids)
    assert migrated and not diags
    assert list(header) == ["type", "id", "timestamp", "cwd", "version"] and header["version"] == 3
    assert [e["id"] for e in entries] == ["id000001", "id000002"]
    assert [e["parentId"] for e in entries] == [None, "id000001"]
    assert list(entries[0]) == ["type", "message", "id", "parentId"]
    assert entries[1]["message"]["role"] == "custom"


@pytest.mark.parametrize(("index", "expected"), [(1, "id000001"), (2, "id000002"), (0, None), (9, None), (1.5, None)])
def test_first_kept_entry_index_counts_the_header(index: Any, expected: str | None) -> None:
    header: dict[str, Any] = {"type": "session", "id": "s"}
    entries: list[Any] = [{"type": "message"}, {"type": "message"},
                          {"type": "compaction", "summary": "S", "firstKeptEntryIndex": index}, {"type": "message"}]
    migrate(header, entries, make_id=ids)
    compaction = entries[2]
    assert "firstKeptEntryIndex" not in compaction
    assert compaction.get("firstKeptEntryId") == expected


def test_target_after_the_compaction_has_no_id_yet() -> None:
    header: dict[str, Any] = {"type": "session", "id": "s"}
    entries: list[Any] = [{"type": "compaction", "firstKeptEntryIndex": 2}, {"type": "message"}]
    migrate(header, entries, make_id=ids)
    assert entries[0]["firstKeptEntryId"] is UNDEFINED


@pytest.mark.parametrize(("version", "migrates"), [(None, True), (1, True), (2, True), (3, False), ("3", False),
                                                   (9, False), ("abc", True), (2.5, True), (0, True)])
def test_version_comparisons_follow_javascript(version: Any, migrates: bool) -> None:
    header: dict[str, Any] = {"type": "session", "id": "s"}
    if version is not None:
        header["version"] = version
    assert needs_migration(header) is migrates


def test_string_version_flags_but_runs_no_step() -> None:
    header: dict[str, Any] = {"type": "session", "id": "s", "version": "abc"}
    entries: list[Any] = [{"type": "message", "id": "a", "parentId": None}]
    migrated, _ = migrate(header, entries, make_id=ids)
    assert migrated and header["version"] == "abc" and entries[0]["id"] == "a"


def test_v2_to_v3_only_touches_hook_messages() -> None:
    header: dict[str, Any] = {"type": "session", "id": "s", "version": 2}
    entries: list[Any] = [{"type": "message", "id": "a", "message": {"role": "hookMessage", "x": 1}},
                          {"type": "custom_message", "id": "b", "role": "hookMessage"}]
    migrate(header, entries, make_id=ids)
    assert entries[0]["message"] == {"role": "custom", "x": 1} and entries[0]["id"] == "a"
    assert entries[1]["role"] == "hookMessage"


def test_generated_ids_never_collide() -> None:
    header: dict[str, Any] = {"type": "session", "id": "s"}
    entries: list[Any] = [{"type": "message"} for _ in range(5000)]
    migrate(header, entries)
    assert len({e["id"] for e in entries}) == 5000


def test_non_object_record_in_v1_is_kept_and_reported() -> None:
    header: dict[str, Any] = {"type": "session", "id": "s"}
    entries: list[Any] = [{"type": "message"}, 42, {"type": "message"}]
    _, diags = migrate(header, entries, make_id=ids)
    assert entries[1] == 42 and [d.code for d in diags] == ["migration-non-object"]
    assert entries[2]["parentId"] == entries[0]["id"]
