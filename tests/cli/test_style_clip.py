"""``width``, ``clip`` and ``clip_start`` measured a character at a time before; now each
character's cells are worked out once and cut by bisection: the same results."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.cli._style import clip, clip_start, width


def _cells(c: str) -> int:
    return 0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1


def _clip(text: str, cells: int) -> str:
    if sum(map(_cells, text)) <= cells:
        return text
    if cells <= 0:
        return ""
    out, used = [], 0
    for c in text:
        if used + _cells(c) > cells - 1:
            break
        out.append(c)
        used += _cells(c)
    return "".join(out) + "…"


def _clip_start(text: str, cells: int) -> str:
    if sum(map(_cells, text)) <= cells:
        return text
    if cells <= 0:
        return ""
    out, used = [], 0
    for c in reversed(text):
        if used + _cells(c) > cells - 1:
            break
        out.append(c)
        used += _cells(c)
    return "…" + "".join(reversed(out))


_TEXT = st.text(alphabet=st.one_of(st.characters(max_codepoint=0x7F), st.sampled_from("日本語…é\u0301\u3000😀\uff21\u200b"),
                                   st.characters()), max_size=40)


@settings(max_examples=1000, deadline=None)
@given(_TEXT, st.integers(-2, 45))
def test_the_same_cells_and_cuts_as_measured_a_character_at_a_time(text: str, cells: int) -> None:
    assert width(text) == sum(map(_cells, text))
    assert clip(text, cells) == _clip(text, cells)
    assert clip_start(text, cells) == _clip_start(text, cells)


def test_wide_and_combining_characters() -> None:
    assert clip("日本語のタイトル", 7) == "日本語…" and width(clip("日本語のタイトル", 7)) == 7
    assert clip("e\u0301e\u0301e\u0301", 2) == "e\u0301…"  # the mark stays with its letter
    assert clip_start("/home/日本/x.jsonl", 8) == "…x.jsonl"
    assert clip("plain text", 5) == "plai…" and clip("", 0) == ""
