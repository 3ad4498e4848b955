"""Big sessions keep ids and parentIds in compact columns; every view stays the same."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import omp_session
from omp_session.format.columns import FixedWidthIds
from omp_session.js import codec
from omp_session.model import session


def make(path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}]
    ids: list[str] = []
    for k in range(n):
        i = f"{k:08x}"
        roll = rng.random()
        if not ids or roll < 0.01:
            parent: Any = None
        elif roll < 0.05:
            parent = rng.choice(ids)  # a branch point
        elif roll < 0.06:
            parent = "ffffffff"  # names nothing
        else:
            parent = ids[-1]
        kind = rng.random()
        entry: dict[str, Any] = {"type": "message", "id": i, "parentId": parent,
                                 "timestamp": f"2026-01-01T00:{k // 600 % 60:02d}:{k // 10 % 60:02d}.000Z"}
        if kind < 0.4:
            entry["message"] = {"role": "assistant", "content": [{"type": "text", "text": f"a{k}"}],
                                "provider": rng.choice(["p1", "p2"]), "model": "m", "stopReason": "stop",
                                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                          "totalTokens": 2, "cost": {"total": 0.001}}, "timestamp": k}
        elif kind < 0.9:
            entry["message"] = {"role": "user", "content": f"u{k}", "timestamp": k}
        elif kind < 0.95:
            entry = {"type": "label", "id": i, "parentId": parent, "timestamp": entry["timestamp"],
                     "targetId": rng.choice(ids) if ids else i, "label": f"l{k}"}
        else:
            entry = {"type": "compaction", "id": i, "parentId": parent, "timestamp": entry["timestamp"],
                     "summary": f"c{k}", "firstKeptEntryId": rng.choice(ids) if ids else i, "tokensBefore": k}
        if rng.random() < 0.002:
            del entry["parentId"]
        lines.append(entry)
        ids.append(i)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def views(s: omp_session.Session) -> dict[str, Any]:
    return {
        "ids": list(s.ids), "parents": [None if p is codec.UNDEFINED else ("U" if p is None else p) for p in s.parent_ids],
        "leaf": s.get_leaf_id(), "branch": list(s.branch_indices()),
        "tree": list(s.get_tree().walk()), "labels": s.labels(),
        "children": [s.children_indices(p) for p in ("00000000", "00000010", None, "ffffffff")],
        "entry": s.get_entry("00000100"), "context": codec.stringify(s.build_session_context()),
        "collapsed": codec.stringify(s.build_session_context(transcript=True, collapse_compacted_history=True)),
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compact_columns_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    path = tmp_path / "big.jsonl"
    make(path, 6000, seed)
    with omp_session.open(path) as s:
        assert isinstance(s.ids, FixedWidthIds)
        compact = views(s)
    monkeypatch.setattr(session, "_COMPACT_FROM", 10**9)
    with omp_session.open(path) as s:
        assert isinstance(s.ids, list)
        plain = views(s)
    assert compact == plain


def test_fixed_width_ids() -> None:
    ids = FixedWidthIds(b"aaaaaaaabbbbbbbbabbbbbbb", 8)
    assert list(ids) == ["aaaaaaaa", "bbbbbbbb", "abbbbbbb"] and ids[-1] == "abbbbbbb"
    assert ids.index("bbbbbbbb") == 1 and ids.index("abbbbbbb") == 2  # aligned matches only
    assert "aaaabbbb" not in ids and "x" not in ids and ids[0:2] == ["aaaaaaaa", "bbbbbbbb"]


@pytest.mark.parametrize("seed", [4, 5])
def test_reader_flags_give_the_same_parent_index(tmp_path: Path, seed: int) -> None:
    from omp_session.model.tree import nonlinear_entries, parent_indices

    path = tmp_path / "s.jsonl"
    make(path, 3000, seed)
    with omp_session.open(path) as s:
        fast = list(s.parent_index)
        assert s._nonlinear is not None  # found by the flag path
        flagged = s._nonlinear
        plain = list(parent_indices(list(s.ids), list(s.parent_ids), lambda: s.index, False))
        assert fast == plain
        assert flagged == nonlinear_entries(plain)


def test_entry_kinds_table_matches_the_plain_rule() -> None:
    from omp_session.format.reader import MessageHead
    from omp_session.model.session import _kind_of, entry_kinds

    heads_pool = [None, MessageHead("user"), MessageHead("assistant", "p", "m"), MessageHead("toolResult"),
                  MessageHead("custom"), MessageHead(7)]
    rng = random.Random(9)
    types = [rng.choice(["message", "label", "compaction", "custom"]) for _ in range(500)]
    heads = [None] + [rng.choice(heads_pool) for _ in types]
    assert entry_kinds(types, heads) == bytearray(_kind_of(t, heads[k + 1]) for k, t in enumerate(types))


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 4097, 10_000])
def test_fixed_width_ids_iterate_as_they_index(n: int) -> None:
    ids = FixedWidthIds(b"".join(b"%08x" % k for k in range(n)), 8)
    assert list(ids) == [ids[k] for k in range(n)] == [f"{k:08x}" for k in range(n)]
    assert list(zip(ids, range(3), strict=False)) == [(f"{k:08x}", k) for k in range(min(n, 3))]
