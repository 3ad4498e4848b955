"""The piecewise UTF-8 check (format/utf8.py) finds the byte ``bytes.decode`` stops at: on valid
text of every width, with damage anywhere, and with sequences cut at every piece boundary."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.format.utf8 import first_invalid_utf8, is_utf8


def _want(data: bytes) -> int | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start
    return None


_text = st.text(alphabet=st.sampled_from(["a", "\n", "{", "é", "Ľ", "中", "😀", "\u2028"]), max_size=200)
_damage = st.lists(st.tuples(st.integers(min_value=0, max_value=800),
                             st.sampled_from([b"\x80", b"\xc3", b"\xe0\x80", b"\xed\xa0\x80", b"\xf0\x9f",
                                              b"\xf4\x90\x80\x80", b"\xff", b"\xc0\xaf"])), max_size=3)


@settings(max_examples=400, deadline=None)
@given(_text, _damage, st.integers(min_value=1, max_value=9))
def test_the_first_bad_byte_is_the_one_decode_reports(text: str, damage: list[tuple[int, bytes]], piece: int) -> None:
    data = text.encode("utf-8")
    for at, bad in damage:
        at = min(at, len(data))
        data = data[:at] + bad + data[at:]
    assert first_invalid_utf8(data, piece) == _want(data)
    assert first_invalid_utf8(bytearray(data), piece) == _want(data)


def test_a_sequence_cut_by_the_end_is_invalid_where_it_starts() -> None:
    data = b"a" * 20 + "é😀".encode()[:-1]
    assert first_invalid_utf8(data, 4) == 22 == _want(data)
    assert not is_utf8(data)


def test_long_valid_text_with_wide_characters_is_utf8() -> None:
    data = ("x" * 40_000 + "😀" + "中" * 9000 + "\n").encode() * 3
    assert first_invalid_utf8(data) is None
    assert is_utf8(data)
    assert is_utf8(b"")
    bad = data[:50_001] + b"\xff" + data[50_001:]
    assert first_invalid_utf8(bad) == _want(bad) is not None
