"""The Markdown export's fast paths (issue 16 item 2, time) write what model.text's helpers write.

markdown.py renders the common cases itself (plain ids and words, fences without a triple
backtick, tool arguments orjson can print, batches encoded piece by piece) and leaves every other
case to model.text; a session without side branches sums its usage once. Each shortcut is checked
against the general helper on values made to hit both paths, and whole exports against the
module with the shortcuts switched back to the helpers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assistant, entry, tool_result, usage, user, write_session
from omp_session.js.codec import UNDEFINED
from omp_session.model import text as helpers
from omp_session.model.session import open_session
from omp_session.model.text import clean_text, fence, inline, inline_code, pretty_json, usage_line
from omp_session.model.usage import usage_statistics
from omp_session.ops.export import markdown, markdown_text, markdown_usage
from omp_session.ops.export.markdown import _Renderer, markdown_chunks
from omp_session.ops.export.markdown_text import encoded_lines

_fence, _inline, _inline_code, _pretty_json = (markdown_text.fence, markdown_text.inline, markdown_text.inline_code,
                                               markdown_text.pretty_json)

# text that reaches every branch: backtick runs, whitespace of every kind, punctuation, NUL,
# lone and paired surrogates, non-ASCII
PIECES = ["a", "Z", "0", " ", "  ", "\t", "\n", "\r", "\x0b", "\x1c", "\x1f", "\x00", "\x7f", "`", "``", "```",
          "````", "*", "_", "[", "]", "<", ">", "&", "#", "|", "~", "$", "\\", "é", "\u2028", "\u00a0",
          "\ud800", "\udc00", "\ud83d\ude80", "\U0001f680", "x y", "id-1", "call_abc"]
odd_text = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), odd_text, st.just(UNDEFINED))
json_values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(odd_text, kids, max_size=4),
    st.dictionaries(st.integers(0, 9), kids, max_size=2), st.tuples(kids)), max_leaves=20)


@settings(max_examples=1500, deadline=None)
@given(json_values)
def test_pretty_json_by_orjson_is_the_helpers(value: Any) -> None:
    assert _pretty_json(value) == pretty_json(value)


def test_pretty_json_of_plain_arguments_takes_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(helpers, "pretty_json", lambda v: pytest.fail("slow path taken"))
    args = {"command": "ls -la", "n": 3, "deep": [{"x": None, "y": True}], "big": 2**63 - 1, "é": "\x1b[0m"}
    assert _pretty_json(args) == pretty_json(args)


@pytest.mark.parametrize("value", [{"f": 1.0}, {"f": 1e16}, [2**64], {"u": UNDEFINED}, ("t",), {1: "k"},
                                   "\ud800", [math.nan]])
def test_what_orjson_would_print_otherwise_takes_the_helper(value: Any) -> None:
    assert _pretty_json(value) == pretty_json(value)


def test_nesting_deeper_than_orjson_goes_takes_the_helper() -> None:
    value: Any = "x"
    for _ in range(2000):
        value = [value]
    assert _pretty_json(value) == pretty_json(value)


@settings(max_examples=1500, deadline=None)
@given(odd_text, st.sampled_from(["text", "markdown", "json", "sh"]))
def test_fence_is_the_helpers_once_the_batch_is_cleaned(text: str, info: str) -> None:
    assert clean_text(_fence(text, info)) == fence(text, info)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.text("ab\n", max_size=4), st.integers(0, 80)), max_size=6))
def test_fence_of_backtick_runs_of_any_length_is_the_helpers(parts: list[tuple[str, int]]) -> None:
    # runs up to 80 long: the fence's search for a longer run, and its listing past 64
    text = "".join(t + "`" * n for t, n in parts)
    assert _fence(text) == fence(text)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(odd_text, scalars, json_values))
def test_inline_and_inline_code_are_the_helpers(value: Any) -> None:
    assert _inline(value) == inline(value)
    assert _inline_code(value) == inline_code(value)


@settings(max_examples=500, deadline=None)
@given(st.lists(odd_text, min_size=1, max_size=8))
def test_a_batch_is_encoded_as_the_cleaned_whole(pieces: list[str]) -> None:
    assert encoded_lines(pieces) == clean_text("\n".join(pieces) + "\n").encode("utf-8")
    r = _Renderer.__new__(_Renderer)
    r.out = list(pieces)
    assert r.take() == encoded_lines(pieces)
    assert r.out == []


usage_numbers = st.one_of(scalars, st.integers(-(10**30), 10**30), st.floats(-1e30, 1e30), st.just("12"))


@settings(max_examples=1500, deadline=None)
@given(st.one_of(json_values, st.fixed_dictionaries(
    {}, optional={name: usage_numbers for name in ("input", "output", "cacheRead", "cacheWrite")}
    | {"cost": st.one_of(usage_numbers, st.fixed_dictionaries({}, optional={"total": usage_numbers}))})))
def test_usage_inline_is_the_helpers(value: Any) -> None:
    assert markdown_text.usage_inline(value) == inline(usage_line(value))


# ----- whole exports -------------------------------------------------------------------------


def _slow_take(self: _Renderer) -> bytes:
    if not self.out:
        return b""
    text = clean_text("\n".join(self.out) + "\n")
    self.out = []
    return text.encode("utf-8")


@contextmanager
def helpers_only() -> Iterator[None]:
    """markdown.py with every shortcut replaced by the model.text helper it stands for."""
    names = ("fence", "pretty_json", "inline", "inline_code", "usage_inline")
    saved = [getattr(markdown, n) for n in names] + [_Renderer.take]
    for n in names[:-1]:
        setattr(markdown, n, getattr(helpers, n))
    markdown.usage_inline = lambda u: helpers.inline(helpers.usage_line(u))
    _Renderer.take = _slow_take  # type: ignore[method-assign]
    try:
        yield
    finally:
        for n, f in zip(names, saved, strict=False):
            setattr(markdown, n, f)
        _Renderer.take = saved[-1]  # type: ignore[method-assign]


def _odd_session(path: Path, branches: bool, surrogate: bool = True) -> Path:
    ticks = "some ``` code\n````\nmore `x` and\x00 a NUL" + (" and \ud800 a lone surrogate" if surrogate else "")
    call = {"type": "toolCall", "id": "call 1`", "name": "bash",
            "arguments": {"command": "echo é", "n": 2, "f": 1.5e-7, "big": 2**70, "nested": [{"a": [1, None]}]}}
    plain = {"type": "toolCall", "id": "call_2", "name": "read", "arguments": {"path": "a.py", "limit": 10}}
    es = [
        entry("u1", None, message=user(ticks)),
        entry("a1", "u1", message=assistant([{"type": "text", "text": ticks}, call, plain],
                                            usage=usage(3, 4, 0.25), stop_reason="toolUse")),
        entry("t1", "a1", message=tool_result([{"type": "text", "text": "out\x00put ```` \U0001f680"}],
                                              call_id="call 1`")),
        entry("t2", "t1", message=tool_result("plain output", call_id="call_2", name="read")),
        entry("a2", "t2", message=assistant("done  with *stars* and _under_", model="m2", usage=usage(5, 6, 1e-5))),
        entry("l1", "a2", type="label", targetId="a1", label="see `this`  <b>"),
    ]
    if branches:
        es += [entry("u2", "u1", message=user("a side branch")),
               entry("a3", "u2", message=assistant("side answer", usage=usage(7, 8, 0.5)))]
        es.append(entry("u3", "l1", message=user("back on the first branch")))
    return write_session(path, es, ensure_ascii=True)  # (a lone surrogate is written as an escape)


@pytest.mark.parametrize("branches", [False, True])
@pytest.mark.parametrize("all_branches", [False, True])
@pytest.mark.parametrize("surrogate", [False, True])  # (one in a batch: that batch is cleaned the long way)
def test_the_export_is_the_one_the_helpers_write(tmp_path: Path, branches: bool, all_branches: bool,
                                                 surrogate: bool) -> None:
    path = _odd_session(tmp_path / "s.jsonl", branches, surrogate)
    with open_session(path) as s:
        fast = b"".join(markdown_chunks(s, all_branches=all_branches))
    with helpers_only(), open_session(path) as s:
        slow = b"".join(markdown_chunks(s, all_branches=all_branches))
    assert fast == slow
    assert b"\x00" not in fast and "\ufffd".encode() in fast


@pytest.mark.parametrize("branches", [False, True])
def test_usage_of_all_branches_is_the_sum_over_every_entry(tmp_path: Path, branches: bool) -> None:
    path = _odd_session(tmp_path / "s.jsonl", branches)
    with open_session(path) as s:
        text = b"".join(markdown_chunks(s)).decode()
        every = usage_line(usage_statistics([s.entry_at(k) for k in range(len(s))]))
    line = next(x for x in text.splitlines() if x.startswith("- **Tokens and cost (all branches):**"))
    assert line == f"- **Tokens and cost (all branches):** {inline(every)}"


# ----- the header's usage: one pass when both sums are over the same entries -------------------


def _figures_two_passes(s: Any, branch: Any, counted: Any) -> tuple[list[str], str, str]:
    models, usage = markdown_usage.branch_figures(s, branch, counted)
    return models, usage, markdown_usage.usage_text(s.peek_entry(k) for k in range(len(s)) if counted[k])


def _branched(path: Path, *, bad_usage: str | None = None, side: bool = True, side_usage: bool = True) -> Path:
    """A main branch with assistants of several models and (``side``) a side branch; ``bad_usage``
    ("main", "side") gives one assistant there a usage omp cannot sum."""
    broken = {"input": 1, "output": 1}  # no cost: omp throws while indexing
    es = [entry("u1", None, message=user("q"))]
    parent = "u1"
    for n in range(150):
        u = broken if bad_usage == "main" and n == 70 else usage(n, n + 1, n / 7)
        es.append(entry(f"a{n}", parent, message=assistant(f"answer {n}", model=f"m{n % 3}", usage=u)))
        es.append(entry(f"r{n}", f"a{n}", message=tool_result(f"out {n}")))
        parent = f"r{n}"
    if side:
        side_entry = (assistant("side", model="side-model", usage=broken if bad_usage == "side" else usage(9, 9, 0.5))
                      if side_usage else user("a side question"))
        es.insert(5, entry("s1", "u1", message=side_entry))
    return write_session(path, es)


@pytest.mark.parametrize("plain", [True, False])
@pytest.mark.parametrize(("bad_usage", "side", "side_usage"), [
    (None, True, True), ("main", True, True), ("side", True, True), (None, False, False), ("main", False, False),
    (None, True, False)])
def test_header_figures_are_those_of_two_passes(tmp_path: Path, bad_usage: str | None, side: bool,
                                                side_usage: bool, plain: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same figures with each plain assistant read from its bytes (``plain``: none decoded
    then) or every one decoded (each once, side branch or not)."""
    from omp_session.js.codec import UNDEFINED as LEAF
    from omp_session.model.session import usage_or_model_candidates

    path = _branched(tmp_path / "s.jsonl", bad_usage=bad_usage, side=side, side_usage=side_usage)
    if not plain:
        monkeypatch.setattr(markdown_usage, "usage_reader", lambda s: lambda k: None)
    with open_session(path) as s:
        branch, counted = s.branch_indices(LEAF), usage_or_model_candidates(s)
        expected = _figures_two_passes(s, branch, counted)
        decoded: list[int] = []
        peek, in_order = s.peek_entry, s.peek_in_order

        def counting_in_order() -> Any:
            read = in_order()
            return lambda k: decoded.append(k) or read(k)

        monkeypatch.setattr(s, "peek_entry", lambda k: decoded.append(k) or peek(k))
        monkeypatch.setattr(s, "peek_in_order", counting_in_order)
        assert markdown_usage.all_figures(s, branch, counted) == expected
    assert expected[0] == ["anthropic/m0", "anthropic/m1", "anthropic/m2"]
    assert ("unavailable" in expected[1]) == (bad_usage == "main")
    assert ("unavailable" in expected[2]) == (bad_usage is not None)
    if bad_usage is None:  # one pass, each counted entry decoded once at most, side branch or not
        assert len(decoded) == (0 if plain else 150 if not (side and side_usage) else 151)
        assert len(set(decoded)) == len(decoded)


def test_header_figures_of_a_branch_out_of_file_order_are_those_of_two_passes(tmp_path: Path) -> None:
    from omp_session.model.session import usage_or_model_candidates

    # the leaf's parent comes after it in the file: its branch is not in file order
    es = [entry("u1", None, message=user("q")),
          entry("a2", "a1", message=assistant("second", model="m2", usage=usage(2, 2, 0.2))),
          entry("a1", "u1", message=assistant("first", model="m1", usage=usage(1, 1, 0.1))),
          entry("s1", "u1", message=assistant("side", model="m3", usage=usage(5, 5, 0.5))),
          entry("a3", "a2", message=assistant("third", model="m1", usage=usage(3, 3, 0.3)))]
    path = write_session(tmp_path / "s.jsonl", es)
    with open_session(path) as s:
        branch, counted = s.branch_indices(UNDEFINED), usage_or_model_candidates(s)
        assert list(branch) == [0, 2, 1, 4]
        got = markdown_usage.all_figures(s, branch, counted)
        assert got == _figures_two_passes(s, branch, counted)
    assert got[0] == ["anthropic/m1", "anthropic/m2"]
    assert got[1] != got[2]
