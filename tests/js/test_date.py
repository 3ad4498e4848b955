"""jsdate against values Bun computed (tests/data/context/jsdate_vectors.json, made by record.py)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.js.date import (
    date_parse,
    js_number_string,
    js_string,
    new_date_ms,
    now_iso,
    now_ms,
    time_clip,
    to_iso,
)

VECTORS = json.loads((Path(__file__).parents[1] / "data" / "context" / "jsdate_vectors.json").read_text("utf-8"))


def _as_json(value: float) -> float | None:
    return None if value != value else value


def test_date_parse_matches_bun() -> None:
    wrong = [(text, expected, _as_json(date_parse(text))) for text, expected in VECTORS["parse"]
             if _as_json(date_parse(text)) != expected]
    assert len(VECTORS["parse"]) > 3000
    assert wrong == []


@pytest.mark.parametrize(("value", "expected"), [tuple(row) for row in VECTORS["new_date"]])
def test_new_date_matches_bun(value: Any, expected: float | None) -> None:
    assert _as_json(new_date_ms(value)) == expected


@pytest.mark.parametrize(("ms", "expected"), [tuple(row) for row in VECTORS["iso"]])
def test_to_iso_matches_bun(ms: float, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            to_iso(ms)
    else:
        assert to_iso(ms) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-01-01", 1767225600000.0),                    # date-only: UTC
    ("2026-01-01T00:00", 1767225600000.0),              # date-time without offset: local = UTC
    ("2026-01-01T01:00:00+01:00", 1767225600000.0),
    ("+002026-01-01T00:00:00.000Z", 1767225600000.0),   # expanded year
    ("2026-01-01T00:00:00.000Z ", math.nan),            # the ISO form allows nothing after it
    ("Jan 2 2026", 1767312000000.0),                    # legacy syntax Bun also accepts
])
def test_date_parse_examples(text: str, expected: float) -> None:
    got = date_parse(text)
    assert (got != got and expected != expected) or got == expected


def test_date_parse_converts_non_strings_like_string() -> None:
    assert date_parse(2026) == date_parse("2026")
    assert math.isnan(date_parse(None))  # "null"
    assert math.isnan(date_parse({"a": 1}))  # "[object Object]"
    assert date_parse(["2026-01-02"]) == date_parse("2026-01-02")


def test_to_iso_round_trips_parse() -> None:
    for ms in (0, 1, -1, 1_772_366_400_123, 253402300799999, -62198755200000):
        assert date_parse(to_iso(ms)) == ms


def test_time_clip() -> None:
    assert time_clip(1.9) == 1.0
    assert time_clip(-1.9) == -1.0
    assert math.isnan(time_clip(8.64e15 + 1))
    assert math.isnan(time_clip(math.inf))


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (-0.0, "0"), (1.0, "1"), (1.5, "1.5"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
    (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (0.000001, "0.000001"), (123456789012345680000, "123456789012345680000"),
    (12345678901234567890, "12345678901234567000"), (math.nan, "NaN"), (-math.inf, "-Infinity"),
    (10**400, "Infinity"), (0.1 + 0.2, "0.30000000000000004"), (-2.5e-10, "-2.5e-10"),
])
def test_js_number_string(value: float, text: str) -> None:
    assert js_number_string(value) == text


def test_js_string() -> None:
    assert js_string(None) == "null"
    assert js_string(True) == "true"
    assert js_string([1, None, [2, 3], {"a": 1}, "x", False]) == "1,,2,3,[object Object],x,false"
    assert js_string({"k": 1}) == "[object Object]"
    assert js_string(object()) == "undefined"


def _string_reference(value: Any) -> str:
    """String(value) by the definition: an array is the join of its elements, null ones as ""."""
    if isinstance(value, list):
        return ",".join("" if v is None else _string_reference(v) for v in value)
    return js_string(value)


_nested = st.recursive(st.none() | st.integers(-3, 3) | st.text("ab,", max_size=2) | st.just({"k": 1}),
                       lambda inner: st.lists(inner, max_size=3), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(_nested, st.integers(0, 40))
def test_js_string_of_nested_arrays_is_the_recursive_join(value: Any, wrap: int) -> None:
    for _ in range(wrap):  # chains of one-element arrays take the shortcut
        value = [value]
    assert js_string(value) == _string_reference(value)


def test_js_string_of_an_array_nested_100_000_deep() -> None:
    value: Any = [7, [None]]
    for _ in range(100_000):
        value = [value]
    assert js_string(value) == "7,"
    assert js_string([[None]]) == "" and js_string([]) == "" and js_string([[], [1]]) == ",1"


def test_date_parse_of_a_megabyte_of_words_is_nan_without_tokenizing_it() -> None:
    # fuzz seed 4 case 267: a 1 MB timestamp of "a b " took validate 12 s (a keyword table scan per word)
    assert math.isnan(date_parse("a b " * 262_144))
    assert math.isnan(date_parse("January, the first (of many)"))  # no numeral, no day
    assert date_parse("(" + "x " * 100_000 + ") Jan 2 2020 10:00 GMT") == date_parse("Jan 2 2020 10:00 GMT")
    assert date_parse("Jan 2 2020 10:00 GMT") == 1577959200000.0


def test_now() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now_iso())
    assert abs(now_ms() - date_parse(now_iso())) < 60_000
