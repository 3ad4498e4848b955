"""Session views: leaf, branch, children, labels, tree (spec S6, S15 C35-C42)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import builders
import omp_session
from omp_session import SessionFileError, SessionManager
from omp_session.errors import FormatError

H = builders.header(timestamp="2025-01-01T00:00:00.000Z")


def entry(i: Any, parent: Any, ts: str = "2025-01-01T00:00:01.000Z", **extra: Any) -> dict[str, Any]:
    """A user message whose text is its id; ``extra`` replaces or adds fields."""
    return {**builders.entry(i, parent, timestamp=ts, message=builders.user(str(i))), **extra}


def write(tmp_path: Path, *records: Any, name: str = "s.jsonl") -> Path:
    return builders.write_jsonl(tmp_path / name, records, compact=False, ensure_ascii=True)


def tree_rows(s: omp_session.Session) -> list[tuple[Any, int]]:
    return [(s.ids[n], d) for n, d in s.get_tree().walk()]


def test_leaf_branch_and_context(tmp_path: Path) -> None:
    s = omp_session.open(write(tmp_path, H, entry("a", None), entry("b", "a"), entry("c", "a")))
    assert s.get_leaf_id() == "c"
    assert [e["id"] for e in s.get_branch()] == ["a", "c"]
    assert [e["id"] for e in s.get_children("a")] == ["b", "c"]
    assert [m["content"] for m in s.build_session_context()["messages"]] == ["a", "c"]


def test_c35_duplicate_ids_resolve_to_the_last_and_the_tree_terminates(tmp_path: Path) -> None:
    s = omp_session.open(write(tmp_path, H, entry("a", None), entry("b", "a"), entry("a", "b")))
    assert s.get_leaf_id() == "a"
    assert [e["id"] for e in s.get_branch()] == ["b", "a"]
    assert s.get_entry("a") is s.entries[2]
    rows = tree_rows(s)
    assert rows and all(d < 10 for _, d in rows)
    assert any(d.code == "tree-cycle" for d in s.diagnostics)


def test_c37_missing_empty_absent_and_self_parents_are_roots(tmp_path: Path) -> None:
    e4 = entry("d", None)
    del e4["parentId"]
    s = omp_session.open(write(tmp_path, H, entry("a", "zzz"), entry("b", ""), entry("c", "c"), e4))
    assert [i for i, d in tree_rows(s) if d == 0] == ["a", "b", "c", "d"]
    assert [e["id"] for e in s.get_branch()] == ["d"]


def test_c38_pure_cycle_vanishes_from_tree(tmp_path: Path) -> None:
    s = omp_session.open(write(tmp_path, H, entry("a", "c"), entry("b", "a"), entry("c", "b")))
    assert [e["id"] for e in s.get_branch()] == ["a", "b", "c"]
    assert tree_rows(s) == []


def test_c39_children_sorted_by_timestamp_in_tree_only(tmp_path: Path) -> None:
    s = omp_session.open(write(tmp_path, H, entry("r", None),
                               entry("x9", "r", "2025-01-01T00:00:09.000Z"),
                               entry("x2", "r", "2025-01-01T00:00:02.000Z"),
                               entry("x5", "r", "2025-01-01T00:00:05.000Z")))
    assert [i for i, d in tree_rows(s) if d == 1] == ["x2", "x5", "x9"]
    assert [e["id"] for e in s.get_children("r")] == ["x9", "x2", "x5"]


def test_c40_labels_latest_wins_and_clearing(tmp_path: Path) -> None:
    def label(i: str, target: str, value: Any = None) -> dict[str, Any]:
        e: dict[str, Any] = {"type": "label", "id": i, "parentId": None, "timestamp": "t", "targetId": target}
        if value is not None:
            e["label"] = value
        return e

    s = omp_session.open(write(tmp_path, H, entry("a", None), label("l1", "a", "first"), label("l2", "a", "second"),
                               label("l3", "b", "gone"), label("l4", "b", ""), label("l5", "zz", 7)))
    assert s.get_label("a") == "second" and s.get_label("b") is None
    assert s.labels() == {"a": "second", "zz": 7}


def test_c23_trailing_non_object_empties_the_context(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(H) + "\n" + json.dumps(entry("a", None)) + "\n42\n")
    s = omp_session.open(path)
    assert s.get_leaf_id() is None and s.get_branch() == []
    assert s.build_session_context()["messages"] == []


def test_title_slot_overlays_header(tmp_path: Path) -> None:
    slot = {"type": "title", "v": 1, "title": "", "updatedAt": "t", "pad": ""}
    s = omp_session.open(write(tmp_path, slot, dict(H, title="old", titleSource="user")))
    assert "title" not in (s.header or {}) and "titleSource" not in (s.header or {})
    assert s.get_session_name() is None


def test_reading_never_writes(tmp_path: Path) -> None:
    path = write(tmp_path, {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"}, {"type": "message",
                 "message": {"role": "user", "content": "v1"}})
    before = path.read_bytes()
    s = omp_session.open(path)
    assert s.migrated and s.header is not None and s.header["version"] == 3
    s.close()
    assert path.read_bytes() == before


def test_manager_rewrites_a_migrated_file_and_keeps_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    path.write_text('{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
                    '{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}\n'
                    "not json at all\n")
    with SessionManager.open(path) as sm:
        assert sm.get_header() is not None
    assert path.read_text().startswith('{"type":"session"')  # close() never rewrites, as in omp
    with SessionManager.open(path) as sm:
        sm.flush()  # omp's flushSync(): the pending migration rewrite happens here
    lines = path.read_text().splitlines()
    assert len(lines[0].encode()) == 255 and json.loads(lines[0])["type"] == "title"
    assert json.loads(lines[1])["version"] == 3
    assert lines[3] == "not json at all"
    assert not list(tmp_path.glob(".*.tmp"))


def test_manager_creates_a_session_in_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    sm = SessionManager.open(path, initial_cwd=str(tmp_path))
    sm.close()
    header = json.loads(path.read_text().splitlines()[1])
    assert header["cwd"] == str(tmp_path) and header["version"] == 3 and len(header["id"]) == 36


def test_manager_refuses_a_file_without_header(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type":"message","id":"a"}\n')
    with pytest.raises(FormatError, match="header is missing or malformed"):
        SessionManager.open(path)
    assert path.read_text() == '{"type":"message","id":"a"}\n'


@pytest.mark.parametrize("kind", ["missing", "directory", "unreadable"])
def test_unreadable_paths_give_one_line_errors(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "unreadable":
        path.write_text("{}\n")
        path.chmod(0)
    with pytest.raises(SessionFileError) as err:
        if kind == "unreadable" and path.open("rb"):  # root reads anything: nothing to test then
            raise SessionFileError(str(path), "permission denied")
        omp_session.open(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("name", "codes"), [
    ("02_null_line", {"omp-cannot-open"}),
    ("04_message_without_message", {"omp-cannot-open"}),
    ("05_numeric_cwd", {"omp-cannot-open"}),
    ("06_dup_id_descendant", {"duplicate-id", "tree-cycle"}),
    ("07_bom_plus_malformed", {"bom", "malformed-record"}),
    ("17_truncated_mid_utf8", {"invalid-utf8", "malformed-record", "no-final-newline"}),
    ("03_trailing_number", set()),
])
def test_diagnostics_name_what_omp_trips_on(name: str, codes: set[str]) -> None:
    path = Path(__file__).parents[1] / "data" / "oracle_examples" / f"{name}.jsonl"
    with omp_session.open(path) as s:
        assert {d.code for d in s.diagnostics} == codes
        assert all(d.line is not None for d in s.diagnostics if d.code != "invalid-utf8" and d.code != "duplicate-id"
                   and d.code != "tree-cycle")


def test_a_label_whose_target_is_an_object_does_not_break_labels(tmp_path: Path) -> None:
    rows = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"},
            {"type": "message", "id": "u", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
             "message": {"role": "user", "content": "hi", "timestamp": 1}},
            {"type": "label", "id": "l", "parentId": "u", "timestamp": "2026-01-01T00:00:00.000Z",
             "targetId": {"x": [1]}, "label": "odd"}]
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = omp_session.open(p)
    assert s.labels() == {'{"x":[1]}': "odd"} and s.get_label("u") is None


_ids = st.one_of(st.sampled_from(["a", "b", "ab", "0000000a", "0000000b", "1"]), st.integers(0, 2), st.booleans(),
                 st.none(), st.just(1.0), st.just({"x": 1}))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ids, min_size=1, max_size=8),
       st.lists(st.tuples(_ids, st.one_of(st.sampled_from(["one", "two", ""]), st.integers(0, 1), st.none())), max_size=4))
def test_labels_by_entry_is_get_label_of_every_entrys_id(tmp_path_factory: pytest.TempPathFactory,
                                                         ids: list[Any], labels: list[tuple[Any, Any]]) -> None:
    records: list[Any] = [H, *(entry(i, None) for i in ids)]
    for n, (target, value) in enumerate(labels):
        records.append({"type": "label", "id": f"l{n}", "parentId": None, "timestamp": "t", "targetId": target,
                        "label": value})
    s = omp_session.open(write(tmp_path_factory.mktemp("s"), *records))
    want = {k: s.get_label(s.ids[k]) for k in range(len(s))}
    assert s.labels_by_entry() == {k: v for k, v in want.items() if v is not None}


def test_labels_by_entry_on_compact_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.format.columns import FixedWidthIds
    from omp_session.model import session

    monkeypatch.setattr(session, "_COMPACT_FROM", 10)
    ids = [f"{n:08x}" for n in range(50)]
    label = {"type": "label", "id": "zzzzzzzz", "parentId": None, "timestamp": "t", "targetId": ids[7], "label": "x"}
    s = omp_session.open(write(tmp_path, H, *(entry(i, None) for i in ids), label))
    assert isinstance(s.ids, FixedWidthIds) and s.labels_by_entry() == {7: "x"}
