"""``_clip`` looks at a prefix of a long text (the same line as collapsing the whole text), and
``context`` keeps one row per message at the terminal's width."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pytest import MonkeyPatch

from omp_session.cli._render import _clip

pieces = st.sampled_from(["a", "word", " ", "  ", "\n", "\t\t", " " * 300, "x" * 90, "é", "\u3000", "\x1c",
                          "\xa0", "\x85", "\u2028", "\x00"])


@settings(max_examples=1000, deadline=None)
@given(st.lists(pieces, max_size=60).map("".join), st.integers(0, 100))
@example("ab", 0)  # (no caller asks for a width under 1: the cut is still the definition's)
@example("a" * 70 + " ", 70)  # the prefix ends in a space the collapse drops: not cut
@example(" " + "a" * 70, 70)
@example("ab  " + "a" * 70, 70)
@example("a\xa0" + "a" * 70, 70)
@example("a" * 71, 70)
def test_clip_is_the_whole_text_collapsed_and_cut(text: str, width: int) -> None:
    whole = " ".join(text.split())
    want = whole if len(whole) <= width else whole[: width - 1] + "…"
    assert _clip(text, width) == want


def test_context_keeps_one_row_per_message_at_the_terminals_width(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    from functools import partial

    import builders
    from builders import assistant, entry, header, jsonl, stamp, user
    from omp_session.cli import cli
    from omp_session.cli._style import width

    long = "word " * 60 + "世界 " * 40
    records = [header("s1", cwd="/p"), entry("a0000001", None, timestamp=stamp(1), message=user(long)),
               entry("a0000002", "a0000001", timestamp=stamp(2), message=assistant(long))]
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(records), encoding="utf-8")
    run = partial(builders.run, cli)
    for cells in (60, 80, 200):
        monkeypatch.setenv("COLUMNS", str(cells))
        _, out, _ = run("context", str(path))
        rows = out.splitlines()[1:]
        assert len(rows) == 2 and all(width(r) <= cells for r in rows), (cells, rows)
        assert all(r.endswith("…") for r in rows)
    monkeypatch.delenv("COLUMNS")
    _, out, _ = run("context", str(path))  # not a terminal: the 100-character cut as before
    assert all(len(r.split(": ", 1)[1]) == 100 for r in out.splitlines()[1:])


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                     st.lists(st.sampled_from(["a", " ", "  ", "\n", "é", "😀", "\ud800", '"', "\\", "\x00", "x" * 50]),
                              max_size=30).map("".join))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=5), inner, max_size=5),
    st.dictionaries(st.one_of(st.integers(), st.booleans(), st.none(), st.floats()), inner, max_size=3)),
    max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(_values, st.sampled_from([1, 5, 40, 70]))
def test_a_tool_calls_arguments_are_clipped_as_their_whole_json_is(value: object, width: int) -> None:
    from omp_session.cli._render import _clip_json, _dumps

    assert _clip_json(value, width) == _clip(_dumps(value), width)


def test_only_the_start_of_long_arguments_is_written(monkeypatch: MonkeyPatch) -> None:
    from omp_session.cli import _render

    written: list[int] = []
    real = _render._encode_str
    monkeypatch.setattr(_render, "_encode_str", lambda s: written.append(len(s)) or real(s))
    args = {"path": "src/a.ts", "content": "line\n" * 200_000}
    assert _render._clip_json(args, 40) == _clip(_render._dumps(args), 40)
    assert max(written) <= 161


_flat_items = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                       st.lists(st.sampled_from(["a", " ", "\n", "é", "😀", '"', "\\", "\x00", "x" * 30]),
                                max_size=40).map("".join))


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _flat_items, max_size=12), st.one_of(st.integers(1, 60), st.integers(1, 400)))
@example({"path": "x" * 100}, 50)  # a string longer than n: cut, yet its start written to n
def test_an_object_of_scalars_is_written_an_item_at_a_time_as_json_dumps_starts(value: dict[str, object],
                                                                                 n: int) -> None:
    import json

    from omp_session.cli._render import _flat_head, _json_head

    assert _flat_head(value, n) == json.dumps(value)[:n]  # the fast path, taken for every such object
    assert _json_head(value, n) == json.dumps(value)[:n]


def test_an_object_holding_a_container_or_a_non_string_key_is_left_to_the_walk() -> None:
    from omp_session.cli._render import _flat_head, _json_head

    assert _flat_head({"a": "x", "b": [1]}, 100) is None
    assert _flat_head({1: "x"}, 100) is None
    assert _json_head({"a": "x", "b": [1, {"c": None}]}, 100) == '{"a": "x", "b": [1, {"c": null}]}'
    assert _json_head({1: "x"}, 100) is None  # json.dumps would write 1 as "1": the caller dumps it


_file_values = st.recursive(_scalars, lambda inner: st.one_of(  # what a decoded file holds: string keys
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_file_values, _file_values, st.one_of(st.none(), _file_values), _scalars)
def test_a_tree_row_is_written_as_json_stringify_writes_it(entry_id: object, kind: object, label: object,
                                                          summary: object) -> None:
    from omp_session.cli._render import _row_json
    from omp_session.js import codec

    row = {"id": entry_id, "depth": 3, "fork_depth": 0, "line": 2**40, "type": kind, "on_branch": True,
           "summary": summary if isinstance(summary, str) else "s"}
    if label is not None:
        row["label"] = label
    assert _row_json(row, entry_id, kind, label) == (codec.stringify(row) or "null")


def test_a_nested_arguments_head_leaves_no_cycle_for_the_collector() -> None:
    """tree draws its rows with cyclic collection paused: a row's summary must free all it made
    by reference counting (a walk closure calling itself was a cycle per call)."""
    import gc

    from omp_session.cli._render import _json_head

    args = {"edits": [{"old": "a" * 50, "new": ["b", {"c": 1}]}] * 5, "path": "x.py"}
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            assert _json_head(args, 161) is not None
            assert _json_head({"a": [1, 2]}, 161) == '{"a": [1, 2]}'
        assert gc.collect() == 0
    finally:
        gc.enable()
