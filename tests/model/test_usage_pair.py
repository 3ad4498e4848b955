"""``branch_and_all_usage`` (show's two usage lines in one decode of each entry) is the two
``usage_statistics`` passes: the same totals (bit for bit, NaN and strings included) and the
same error, whatever the order of the branch and the shape of the usages."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.errors import ContextError
from omp_session.model.usage import branch_and_all_usage, usage_statistics

number = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(["3", "", None, True]))
plain_usage = st.fixed_dictionaries({
    "input": st.integers(0, 10**6), "output": st.integers(0, 10**6), "cacheRead": st.integers(0, 1000),
    "cacheWrite": st.integers(0, 1000), "totalTokens": st.integers(0, 10**6),
    "cost": st.fixed_dictionaries({"total": st.floats(0, 10, allow_nan=False)}),
})
odd_usage = st.fixed_dictionaries(
    {"input": number, "cost": st.one_of(st.fixed_dictionaries({"total": number}), st.none())},
    optional={"output": number, "premiumRequests": number, "orchestration": st.fixed_dictionaries({"input": number})})


@st.composite
def entry(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["assistant", "assistant", "odd", "model_usage", "user", "broken"]))
    if kind == "assistant":
        return {"type": "message", "message": {"role": "assistant", "usage": draw(plain_usage)}}
    if kind == "odd":
        return {"type": "message", "message": {"role": "assistant", "usage": draw(odd_usage)}}
    if kind == "model_usage":
        return {"type": "model_usage", "usage": draw(plain_usage)}
    if kind == "broken":  # omp throws on a message entry without a message
        return {"type": "message", "id": "b1"}
    return {"type": "message", "message": {"role": "user", "content": "hi"}}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _two_passes(entries: list[Any], branch: list[int]) -> Any:
    try:
        return (usage_statistics(entries[k] for k in branch),
                usage_statistics(entries[k] for k in range(len(entries))))
    except ContextError as e:
        return str(e)


@settings(max_examples=400, deadline=None)
@given(st.lists(entry(), max_size=12), st.data())
def test_one_pass_is_the_two_passes(entries: list[Any], data: st.DataObject) -> None:
    picked = data.draw(st.lists(st.sampled_from(range(len(entries))), unique=True) if entries else st.just([]))
    branch = sorted(picked) if data.draw(st.booleans()) else picked  # in file order, or not
    decoded: list[int] = []

    def peek(k: int) -> Any:
        decoded.append(k)
        return entries[k]

    try:
        got: Any = branch_and_all_usage(peek, branch, list(range(len(entries))))
    except ContextError as e:
        got = str(e)
    want = _two_passes(entries, branch)
    if isinstance(want, str):
        assert got == want
    else:
        assert _same(got[0], want[0]) and _same(got[1], want[1])


def test_an_ascending_branch_decodes_each_entry_once() -> None:
    entries = [{"type": "message", "message": {"role": "assistant", "usage": {
        "input": k, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": k + 1, "cost": {"total": 0.5}}}}
        for k in range(6)]
    decoded: list[int] = []

    def peek(k: int) -> Any:
        decoded.append(k)
        return entries[k]

    branch, every = branch_and_all_usage(peek, [0, 2, 5], list(range(6)))
    assert decoded == [0, 1, 2, 3, 4, 5]
    assert branch["input"] == 7 and every["input"] == 15 and every["cost"] == 3.0


@pytest.mark.parametrize("branch", [[3, 1], [1, 3]])
def test_the_error_is_the_one_the_branch_meets_first(branch: list[int]) -> None:
    entries: list[Any] = [{"type": "message", "id": f"e{k}"} if k in (1, 2, 3) else {"type": "label"}
                          for k in range(5)]
    with pytest.raises(ContextError) as got:
        branch_and_all_usage(lambda k: entries[k], branch, list(range(5)))
    with pytest.raises(ContextError) as want:
        usage_statistics(entries[k] for k in branch)
    assert str(got.value) == str(want.value) and f"e{branch[0]}" in str(got.value)
