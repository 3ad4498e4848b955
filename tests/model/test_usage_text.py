"""model.text's usage line: its shortcuts for plain int counts write what the general rule writes
(the count as a double, shown as an integer with thousands separators)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.js.codec import UNDEFINED
from omp_session.model.text import tokens, usage_line


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _tokens(value: Any) -> str:
    n = _finite(value)
    return f"{int(n):,}" if n is not None else "?"


def _usage_line(usage: Any) -> str:
    """The rule, written out the long way."""
    if not isinstance(usage, dict):
        return "unavailable"
    parts = [f"{_tokens(usage.get('input'))} in", f"{_tokens(usage.get('output'))} out"]
    if _finite(usage.get("cacheRead")):
        parts.append(f"{_tokens(usage.get('cacheRead'))} cache read")
    if _finite(usage.get("cacheWrite")):
        parts.append(f"{_tokens(usage.get('cacheWrite'))} cache write")
    cost = usage.get("cost")
    total = _finite(cost.get("total") if isinstance(cost, dict) else cost)
    parts.append(f"${total:.4f}" if total is not None else "?")
    return " · ".join(parts)


EDGE = 2**53
counts = st.one_of(
    st.integers(-(2**64), 2**64), st.integers(EDGE - 3, EDGE + 3), st.integers(-EDGE - 3, -EDGE + 3),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(), st.just("12"), st.just(UNDEFINED),
    st.just(0), st.just(-0.0), st.lists(st.integers(), max_size=2))
usages = st.fixed_dictionaries({}, optional={name: counts for name in ("input", "output", "cacheRead", "cacheWrite")}
                               | {"cost": st.one_of(counts, st.fixed_dictionaries({}, optional={"total": counts}))})


@settings(max_examples=3000, deadline=None)
@given(counts)
def test_tokens_is_the_rule(value: Any) -> None:
    assert tokens(value) == _tokens(value)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(usages, counts))
def test_usage_line_is_the_rule(usage: Any) -> None:
    assert usage_line(usage) == _usage_line(usage)


def test_a_count_a_double_cannot_hold_is_shown_as_the_double() -> None:
    assert tokens(2**53 + 1) == "9,007,199,254,740,992"
    assert tokens(2**53) == "9,007,199,254,740,992"
    assert tokens(-(2**53) - 1) == "-9,007,199,254,740,992"
    assert usage_line({"input": 1234, "output": 0, "cacheRead": 0, "cacheWrite": 7, "cost": {"total": 0.5}}) \
        == "1,234 in · 0 out · 7 cache write · $0.5000"
