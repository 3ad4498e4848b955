"""``on_path`` / ``Session.is_on_path``: whether an entry is on the path to another, answered a
run at a time from the end; it must say what membership in the whole path says."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import omp_session
from builders import entry, header, user, write_jsonl
from omp_session.model.tree import nonlinear_entries, on_path, path_runs, path_to


@st.composite
def _forests(draw: st.DrawFn) -> list[int]:
    """Parent indices where each parent precedes its child (-1: a root), with long runs of single
    children and some branches, as sessions have them."""
    n = draw(st.integers(1, 60))
    parents: list[int] = []
    for k in range(n):
        kind = draw(st.sampled_from(["next", "next", "next", "back", "root"])) if k else "root"
        parents.append(k - 1 if kind == "next" else draw(st.integers(0, k - 1)) if kind == "back" else -1)
    return parents


@settings(max_examples=300, deadline=None)
@given(_forests(), st.data())
def test_on_path_is_membership_in_the_path(parents: list[int], data: st.DataObject) -> None:
    nonlinear, forward = nonlinear_entries(parents)
    assert not forward
    start = data.draw(st.integers(0, len(parents) - 1))
    path = set(path_to(start, parents))
    assert path == {k for first, last in path_runs(start, parents, nonlinear) for k in range(first, last + 1)}
    for target in range(len(parents)):
        assert on_path(target, start, parents, nonlinear) is (target in path), (target, start, parents)


def test_a_session_answers_with_and_without_runs(tmp_path: Path) -> None:
    # a branch (runs), then a tree with a parent after its child (the step-by-step walk)
    def msg(i: str, parent: str | None) -> dict[str, object]:
        return entry(i, parent, message=user(i))

    p = tmp_path / "s.jsonl"
    write_jsonl(p, [header(), msg("a", None), msg("b", "a"), msg("c", "b"), msg("d", "a"), msg("e", "d")])
    s = omp_session.open(p)
    assert s.path_runs(4) is not None
    on = {(t, k) for k in range(len(s)) for t in range(len(s)) if s.is_on_path(t, k)}
    assert on == {(t, k) for k in range(len(s)) for t in s.path_indices(k)}
    assert (0, 4) in on and (1, 4) not in on and (3, 4) in on and (2, 2) in on and (4, 3) not in on
    write_jsonl(p, [header(), msg("e", "d"), msg("a", None), msg("d", "a")])
    s = omp_session.open(p)
    assert s.path_runs(0) is None  # a parent after its child
    assert [t for t in range(3) if s.is_on_path(t, 0)] == sorted(s.path_indices(0)) == [0, 1, 2]
    assert [t for t in range(3) if s.is_on_path(t, 1)] == [1]
