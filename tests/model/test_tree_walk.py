"""Tree.walk: the same pre-order as the path-copying walk it replaced, in time linear in the nodes."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.model.tree import Tree


def _tree(ids: list[str], parents: list[str | None]) -> Tree:
    index = {i: k for k, i in enumerate(ids)}  # duplicate ids: the last entry wins, as in a session
    return Tree(ids, parents, lambda: index, timestamp_of=lambda k: "2025-01-01T00:00:00.000Z",
                entry_of=lambda k: {}, labels={})


def _reference_walk(t: Tree) -> Iterator[tuple[int, int]]:
    """The former walk: each stack item carries a frozen copy of its path."""
    stack = [(r, 0, frozenset[int]()) for r in reversed(t.roots_idx)]
    while stack:
        node, depth, above = stack.pop()
        yield node, depth
        kids = t.child_indices(node)
        below = above | {node} if t.cycle_nodes else above
        for c in reversed(kids):
            if c not in below:
                stack.append((c, depth + 1, below))


@st.composite
def _shapes(draw: st.DrawFn) -> tuple[list[str], list[str | None]]:
    n = draw(st.integers(1, 25))
    names = [f"e{draw(st.integers(0, n))}" for _ in range(n)]  # few names: many duplicate ids
    parents = [draw(st.none() | st.sampled_from(names)) for _ in range(n)]
    return names, parents


@settings(max_examples=300, deadline=None)
@given(_shapes())
def test_walk_matches_the_path_copying_reference(shape: tuple[list[str], list[str | None]]) -> None:
    t = _tree(*shape)
    assert list(t.walk()) == list(_reference_walk(t))


def test_a_long_chain_under_a_duplicated_id_is_walked_once_per_node() -> None:
    # a -> b -> a: a cycle through a duplicated id, then a chain of 20,000 entries below it
    n = 20_000
    ids = ["a", "b", "a", *(f"c{k}" for k in range(n))]
    parents: list[str | None] = [None, "a", "b", "a", *(f"c{k}" for k in range(n - 1))]
    t = _tree(ids, parents)
    assert t.cycle_nodes
    rows = list(t.walk())
    assert len(rows) == n + 2 and len({node for node, _ in rows}) == n + 2  # a, b, then the chain
    assert [d for _, d in rows[2:]] == list(range(1, n + 1))


def _doubled_chain(levels: int, *, cycle: bool) -> Tree:
    """Each id written twice under the same parent: omp's tree lists every node twice under the
    one before it, so walking it out in full takes 2 ** levels rows."""
    ids: list[str] = []
    parents: list[str | None] = []
    for k in range(levels):
        above = f"n{k - 1}" if k else None
        ids += [f"n{k}", f"n{k}"]
        parents += [above, f"n{levels - 1}" if cycle and not k else above]  # n0 again below the last
    return _tree(ids, parents)


def test_doubled_edges_stop_repeating_past_the_row_budget() -> None:
    for cycle in (False, True):
        t = _doubled_chain(60, cycle=cycle)
        limit = 4 * len(t.ids) + 100_000 + 2 * len(t.ids)
        rows = list(islice(t.walk(), limit + 1))
        assert len(rows) <= limit, cycle
        assert bool(t.cycle_nodes) is cycle and t.shared and t.cut
        assert {node for node, _ in rows} == set(range(1, 120, 2))  # every node still shown


def test_a_shared_subtree_within_the_budget_is_repeated_as_omp_holds_it() -> None:
    t = _doubled_chain(4, cycle=False)
    rows = list(t.walk())
    assert len(rows) == 2 + 4 + 8 + 16 and not t.cut
    assert [d for _, d in rows[:4]] == [0, 1, 2, 3]
