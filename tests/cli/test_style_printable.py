"""``inert`` and ``harmless`` skip their search when a text is printable (tree asks it of every
row): the result must be the search's for every text, controls, escapes and surrogates included."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from omp_session.cli._style import _CONTENT_CONTROL, _CONTROL, harmless, inert

# every kind of character the classes and str.isprintable() tell apart, most of them printable
_TEXT = st.text(st.one_of(
    st.characters(codec=None), st.sampled_from("\x00\t\n\x0b\x1b\x1f\x7f\x85\x9f\xa0\u2028\u200b\ud800\udfff[m0;"),
    st.sampled_from("abc …")), max_size=40)


@settings(max_examples=1500)
@given(_TEXT)
@example("plain text")
@example("tab\there")
@example("line\nbreak")
@example("\x1b[1mbold\x1b[0m")
@example("\x1b]0;title\x07")
@example("lone \ud800 surrogate")
@example("nbsp\xa0and\u2028separator")
def test_the_fast_path_gives_what_the_search_gives(text: str) -> None:
    assert inert(text) == _CONTENT_CONTROL.sub("\ufffd", text)
    assert harmless(text) == _CONTROL.sub("\ufffd", text)


@settings(max_examples=1000, deadline=None)
@given(_TEXT)
def test_one_line_is_inert_text_with_newlines_and_tabs_as_spaces(text: str) -> None:
    from omp_session.cli._render import _one_line

    assert _one_line(text) == inert(text).replace("\n", " ").replace("\t", " ")
