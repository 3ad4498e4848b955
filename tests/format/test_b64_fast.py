"""omp's lenient base64 decoding through pybase64 gives the bytes binascii gives (format/blobs.py):
on clean input of every length, partial last groups with unused bits set, and the lenient cases
(URL-safe letters, junk, an early ``=``, non-ASCII) that are cleaned first."""

from __future__ import annotations

import base64
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.format import blobs

alphabet = st.sampled_from(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_= \n.Ľ\u00e9"))


def _slow(text: str, monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as m:
        m.setattr(blobs, "_FAST", False)
        return blobs.b64decode_lenient(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(alphabet, min_size=0, max_size=3000).map("".join))
def test_lenient_decoding_is_the_same_with_pybase64(text: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        want = _slow(text, mp)
    assert blobs.b64decode_lenient(text) == want


@pytest.mark.parametrize("tail", ["QR", "QQ", "QUI", "QUJ", "Q", "QUJDRA", "Q=", "QR=="])
def test_a_long_input_with_an_odd_last_group(tail: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = base64.b64encode(os.urandom(3000)).decode() + tail
    assert blobs.b64decode_lenient(text) == _slow(text, monkeypatch)


def test_pybase64_is_the_one_used_on_long_input(monkeypatch: pytest.MonkeyPatch) -> None:
    import pybase64

    calls: list[int] = []
    real = pybase64.b64decode

    def counting(data: bytes, *args: object, **kwargs: object) -> bytes:
        calls.append(len(data))
        return real(data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(blobs, "_FAST", counting)
    data = os.urandom(5000)
    assert blobs.b64decode_lenient(base64.b64encode(data).decode()) == data
    assert calls == [len(base64.b64encode(data))]


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=768, max_size=1600), st.lists(st.tuples(st.integers(0, 10**6), alphabet), max_size=4),
       st.sampled_from(["", "=", "==", "===", "QQ==", "QUI=", "QR=="]))
def test_long_padded_input_decodes_as_the_lenient_steps_do(data: bytes, edits: list[tuple[int, str]],
                                                           tail: str) -> None:
    # the strict decoder is tried first on long input of whole groups: whatever it accepts
    # (clean base64, padded at its end only) must be what the lenient steps give
    text = list(base64.b64encode(data).decode() + tail)
    for at, char in edits:
        text[at % len(text)] = char
    joined = "".join(text)
    with pytest.MonkeyPatch.context() as mp:
        want = _slow(joined, mp)
    assert blobs.b64decode_lenient(joined) == want
