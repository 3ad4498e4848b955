"""The page's embedded JSON: "<" and the two JavaScript line separators escaped wherever they are."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.ops.export.html import _embed_bytes


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="\u2028\u2029\u2027\u202a<a\u20ac", max_size=40))
def test_every_separator_and_angle_bracket_is_escaped(text: str) -> None:
    # runs of separators side by side, and their neighbours that share two lead bytes
    want = text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()
    assert _embed_bytes(text.encode()) == want
