"""The parser's run frames (``[[[`` and ``{"k":{"k":`` taken in one step) change nothing but speed.

The reference is the same parser with run detection switched off (its patterns replaced by one that
never matches): values, end offsets, error messages and positions, and the JSONL loop's records and
malformed spans must be identical.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.errors import JSONSyntaxError
from omp_session.js import codec

_NEVER = re.compile(r"(?!)")

_PIECES = ["[", "[", "[", "]", "]", "]", '{"a":', '{"a":', '{"b":', "}", "}", "}", ",", "1", '"x"', " ",
           "\n", "{", '"a"', ":", "x", '{"a" :', "[]", "{}", '{"a\\n":', "\r\n", "[ [", "null"]


@contextmanager
def _without_runs() -> Iterator[None]:
    saved = codec._ARRAY_RUN, codec._OBJECT_RUN
    codec._ARRAY_RUN = codec._OBJECT_RUN = _NEVER
    try:
        yield
    finally:
        codec._ARRAY_RUN, codec._OBJECT_RUN = saved


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except codec.JSONIncomplete as e:
        return "incomplete", (str(e), e.pos)
    except JSONSyntaxError as e:
        return "error", (str(e), e.pos)


def _both(fn: Callable[[], Any]) -> tuple[Any, Any]:
    got = _outcome(fn)
    with _without_runs():
        want = _outcome(fn)
    return got, want


texts = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


@settings(max_examples=600, deadline=None)
@given(texts)
def test_scan_value_and_parse_jsonl_are_unchanged_by_run_frames(text: str) -> None:
    got, want = _both(lambda: codec.scan_value(text, 0) if text.strip() else None)
    assert got == want
    got, want = _both(lambda: codec.parse_jsonl(text))
    assert got == want


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 300), st.sampled_from(["[", '{"k":', '{"":', '{"é":']), st.integers(0, 300),
       st.sampled_from(["0", "[]", "{}", '"s"', "", "1,2", "]", "}", "\n"]))
def test_deep_runs_closed_partly_or_not_at_all(depth: int, opener: str, closed: int, leaf: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * depth + leaf + closer * closed
    got, want = _both(lambda: codec.scan_value(text, 0))
    assert got == want
    lines = "\n".join([text, opener * depth, '{"type":"x"}', text + "\n" + text])
    got, want = _both(lambda: codec.parse_jsonl(lines))
    assert got == want


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_a_deep_value_and_a_megabyte_of_openers(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    depth = 100_000
    value, end = codec.scan_value(opener * depth + "0" + closer * depth, 0)
    assert end == depth * (len(opener) + 1) + 1
    for _ in range(depth):
        value = value[0] if opener == "[" else value["a"]
    assert value == 0
    size = len(opener) << 20
    text = opener * (1 << 20) + '\n{"type":"x"}\n{"type":"y"}\n'  # the open value swallows a line
    with pytest.raises(JSONSyntaxError, match=re.escape("Unexpected '{'")) as err:
        codec.scan_value(text, 0)
    assert err.value.pos == size + 14
    records, malformed = codec.parse_jsonl(text)
    assert [r[0] for r in records] == [{"type": "x"}, {"type": "y"}]
    assert malformed == [(0, size)]


# ----- JSON.stringify: chains of one-member containers are written in one step ----------------------

_plain = st.recursive(st.none() | st.booleans() | st.integers(-9, 9) | st.text("ab\"\\\n", max_size=3),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2), inner,
                                                                                 max_size=3), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(_plain, st.lists(st.sampled_from([None, "a", "", "b\"1"]), max_size=30))
def test_stringify_of_chains_matches_json_dumps(value: Any, chain: list[str | None]) -> None:
    for key in chain:  # None wraps in a one-element list, a string in a one-key object
        value = [value] if key is None else {key: value}
    assert codec._stringify_pure(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_stringify_chains_still_see_cycles_and_shared_subtrees() -> None:
    shared: Any = [[{"a": [1]}]]
    assert codec._stringify_pure([shared, {"k": shared}]) == '[[[{"a":[1]}]],{"k":[[{"a":[1]}]]}]'
    inner: list[Any] = []
    cyclic = [{"a": [inner]}]
    inner.append(cyclic)
    with pytest.raises(ValueError, match="Circular"):
        codec._stringify_pure(cyclic)
    assert codec._stringify_pure([{"a": codec.UNDEFINED}]) == "[{}]"
    with pytest.raises(TypeError):
        codec._stringify_pure([{1: "x"}])
    deep: Any = 0
    for k in range(100_000):
        deep = [deep] if k % 2 else {"a": deep}
    assert codec._stringify_pure(deep) == '[{"a":' * 50_000 + "0" + "}]" * 50_000
