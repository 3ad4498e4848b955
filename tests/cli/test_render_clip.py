"""``_clip`` looks at a prefix of a long text: the same line as collapsing the whole text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.cli._render import _clip

pieces = st.sampled_from(["a", "word", " ", "  ", "\n", "\t\t", " " * 300, "x" * 90, "é", "\u3000", "\x1c"])


@settings(max_examples=500, deadline=None)
@given(st.lists(pieces, max_size=60).map("".join), st.integers(1, 100))
def test_clip_is_the_whole_text_collapsed_and_cut(text: str, width: int) -> None:
    whole = " ".join(text.split())
    want = whole if len(whole) <= width else whole[: width - 1] + "…"
    assert _clip(text, width) == want
