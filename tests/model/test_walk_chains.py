"""``Tree.walk_chains``: the pre-order walk a chain of single children at a time. Flattened it
must be ``walk()`` exactly, and ``tree``'s rows built from it (cli/_render._Rows) the rows the
step-by-step build gives, on trees built every way the reader builds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import omp_session
from builders import entry, header, user, write_jsonl
from omp_session.cli import _render
from omp_session.model.tree import Tree


@st.composite
def _links(draw: st.DrawFn) -> tuple[list[str], list[str | None], list[int]]:
    """Ids, parent ids and timestamps: long runs, branches, roots, parents after their children,
    duplicate ids and loops (the last two: no chains)."""
    n = draw(st.integers(1, 40))
    ids = [f"e{k}" for k in range(n)]
    if draw(st.booleans()):
        for k in draw(st.lists(st.integers(1, n - 1), max_size=2)) if n > 1 else []:
            ids[k] = ids[k - 1]  # a duplicate id
    parents: list[str | None] = []
    for k in range(n):
        kind = draw(st.sampled_from(["next", "next", "next", "next", "back", "root", "later"])) if k else "root"
        if kind == "next":
            parents.append(ids[k - 1])
        elif kind == "back":
            parents.append(ids[draw(st.integers(0, k - 1))])
        elif kind == "later" and k + 1 < n:
            parents.append(ids[draw(st.integers(k, n - 1))])  # its parent comes after it (or is itself)
        else:
            parents.append(None)
    stamps = [draw(st.integers(0, 3)) for _ in range(n)]  # ties: siblings ordered by time, then file
    return ids, parents, stamps


def _session(tmp: Path, links: tuple[list[str], list[str | None], list[int]]) -> Any:
    ids, parents, stamps = links
    rows: list[Any] = [header()]
    rows += [entry(i, p, timestamp=f"2026-01-01T00:00:0{t}.000Z", message=user(i))
             for i, p, t in zip(ids, parents, stamps, strict=True)]
    path = tmp / "s.jsonl"
    write_jsonl(path, rows)
    return omp_session.open(path)


def _flat(tree: Tree) -> list[tuple[int, int]]:
    chains = tree.walk_chains()
    assert chains is not None
    out: list[tuple[int, int]] = []
    for chain, depth, above, _last in chains:
        assert -1 <= above < len(out)
        assert above == -1 or out[above][1] == depth - 1
        out += [(node, depth + k) for k, node in enumerate(chain)]
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_links())
def test_chains_flatten_to_the_walk_and_make_the_same_rows(tmp_path: Path, links: Any) -> None:
    s = _session(tmp_path, links)
    tree = s.get_tree()
    if tree.walk_chains() is None:
        assert tree.cycle_nodes or tree.shared
        return
    assert _flat(tree) == list(tree.walk())
    fast = _render._Rows(s, False)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Tree, "walk_chains", lambda self: None)
        slow = _render._Rows(s, False)
    # (a row's children are a tuple inside a chain, where nothing is added to them; the chains'
    # first rows are known, the other rows of a chain following its first one by one)
    assert {**vars(fast), "kids": [list(k) for k in fast.kids], "chain_starts": []} == vars(slow)
    assert fast.chain_starts == [i for i in range(len(fast.nodes)) if not i or type(fast.kids[i - 1]) is not tuple]
    assert all(k == (i + 1,) for i, k in enumerate(fast.kids) if type(k) is tuple)
    # and the drawing, which jumps over a chain's rows at once, is the drawing row by row
    drawn = _drawn(s)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Tree, "walk_chains", lambda self: None)
        assert _drawn(s) == drawn


def _drawn(s: Any) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _render.tree(s, False)
    return out.getvalue()


def test_a_long_session_is_a_few_chains(tmp_path: Path) -> None:
    # 1,000 entries in a line with two side branches: four chains, each a range in one piece
    ids = [f"e{k}" for k in range(1000)]
    parents: list[str | None] = [None, *ids[:-1]]
    parents[400], parents[700] = ids[100], ids[100]
    s = _session(tmp_path, (ids, parents, [0] * 1000))
    chains = list(s.get_tree().walk_chains() or [])
    assert [(c[0], c[-1], d, above, last) for c, d, above, last in chains] == [
        (0, 100, 0, -1, True), (101, 399, 101, 100, False), (400, 699, 101, 100, False), (700, 999, 101, 100, True)]
    assert all(isinstance(c, range) for c, _, _, _ in chains)


def test_rows_inside_chains_hold_nothing_a_collection_walks(tmp_path: Path) -> None:
    # a container per row would be walked by every full collection while a big tree is drawn
    import gc

    ids = [f"e{k}" for k in range(1000)]
    parents: list[str | None] = [None, *ids[:-1]]
    parents[400], parents[700] = ids[100], ids[100]
    rows = _render._Rows(_session(tmp_path, (ids, parents, [0] * 1000)), False)
    gc.collect()
    tracked = [k for k, kids in enumerate(rows.kids) if gc.is_tracked(kids)]
    assert len(tracked) == 4  # the last row of each chain (one of them the fork at e100), none inside
    assert tracked == sorted(rows.nodes.index(n) for n in (100, 399, 699, 999))
