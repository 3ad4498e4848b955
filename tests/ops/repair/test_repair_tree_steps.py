"""The tree steps' quick ways out (a file with nothing for them to do is told by sets and maps built
in C, not a step per record) decide as the walks do: a lone self-parent, a first entry written
twice, and random small trees of reused ids, self-parents, later parents and missing ones, whose
repair has unique ids, parent chains that end, nothing lost, and nothing left to repair."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import entry, user
from omp_session.format.reader import scan_bytes
from omp_session.js import codec
from omp_session.ops.repair.plan import plan_repair_bytes

_H = (b'{"type":"session","version":3,"id":"019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6071",'
      b'"timestamp":"2026-03-01T09:00:00.000Z","cwd":"/p"}\n')


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))


def _line(entry_id: str, parent: str | None, text: str) -> bytes:
    return codec.dumps_line(entry(entry_id, parent, timestamp="2026-03-01T09:00:01.000Z", message=user(text)))


def _entries(output: bytes) -> list[dict[str, Any]]:
    return [codec.loads(line) for line in output.splitlines()[1:]]


def test_a_lone_self_parent_is_cut() -> None:
    data = _H + _line("a", None, "one") + _line("b", "b", "its own parent") + _line("c", "a", "three")
    plan = plan_repair_bytes(data)
    assert [f.code for f in plan.changes] == ["parent-cycle"]
    assert {e["id"]: e["parentId"] for e in _entries(plan.output)} == {"a": None, "b": None, "c": "a"}


def test_a_first_entry_written_twice_is_kept_once() -> None:
    data = _H + _line("a", None, "one") + _line("b", "a", "two") + _line("a", None, "one") + _line("c", "b", "x")
    plan = plan_repair_bytes(data)
    assert [f.code for f in plan.changes] == ["duplicate-record"]
    assert [e["id"] for e in _entries(plan.output)] == ["a", "b", "c"]


_IDS = ["a", "b", "c", "d", "e"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_IDS), st.sampled_from([None, "zz", *_IDS]), st.sampled_from(["x", "y"])),
                min_size=1, max_size=12))
def test_random_trees_are_repaired_whole(rows: list[tuple[str, str | None, str]]) -> None:
    data = _H + b"".join(_line(i, p, t) for i, p, t in rows)
    plan = plan_repair_bytes(data)
    out = _entries(plan.output)
    ids = [e["id"] for e in out]
    assert len(set(ids)) == len(ids)  # every reused id was given a fresh one
    parent = {e["id"]: e["parentId"] for e in out}
    for start in ids:  # every chain of parents ends
        seen: set[str] = set()
        node: Any = start
        while node in parent and node not in seen:
            seen.add(node)
            node = parent[node]
        assert node not in seen, (start, rows)
    # nothing lost: every record written is in the output (as it was, or renamed, re-pointed or
    # made a root: its text is kept), but for the copies of a record kept (the fixes' lines)
    texts = Counter(e["message"]["content"] for e in out)
    dropped = {f.line for f in plan.changes if f.code == "duplicate-record"}
    assert texts == Counter(t for k, (_i, _p, t) in enumerate(rows) if k + 2 not in dropped)
    assert len(out) == len(rows) - len(dropped)
    assert not plan.quarantined
    again = plan_repair_bytes(plan.output)
    assert again.is_empty, [str(f) for f in again.changes]
    assert len(scan_bytes(plan.output).ids) == len(out) + 1


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_IDS), st.sampled_from([None, "", "zz", *_IDS]),
                          st.sampled_from(["x", "y"])), min_size=0, max_size=10),
       st.sampled_from([None, "a", "s"]))
def test_a_clean_tree_is_one_no_step_would_change(rows: list[tuple[str, str | None, str]], head_id: str | None) -> None:
    # tree_is_clean lets the plan skip four steps: when it says so, each step must change nothing
    import copy

    from omp_session.ops.repair.records import read_records
    from omp_session.ops.repair.tree import (
        break_cycles,
        drop_duplicates,
        fresh_ids,
        reattach_orphans,
        tree_is_clean,
    )

    head = codec.loads(_H)
    if head_id is None:
        del head["id"]
    else:
        head["id"] = head_id
    data = codec.dumps_line(head) + b"".join(_line(i, p, t) for i, p, t in rows)
    rs = read_records(scan_bytes(data))
    clean = tree_is_clean(rs)
    before = [(rec.own_id(), rec.parent()) for rec in rs.recs]
    fixes = copy.copy(rs.fixes)
    for step in (drop_duplicates, fresh_ids, reattach_orphans, break_cycles):
        step(rs)
    unchanged = ([(rec.own_id(), rec.parent()) for rec in rs.recs] == before and rs.fixes == fixes
                 and not any(rec.dirty for rec in rs.recs))
    assert unchanged or not clean, rows
    # and it says so for the common case: a chain written in order
    if len(rows) >= 1 and len({i for i, _p, _t in rows}) == len(rows) and head_id not in {i for i, _p, _t in rows}:
        chain = [(i, rows[k - 1][0] if k else None, t) for k, (i, _p, t) in enumerate(rows)]
        chained = codec.dumps_line(head) + b"".join(_line(i, p, t) for i, p, t in chain)
        assert tree_is_clean(read_records(scan_bytes(chained)))
