"""A new output file asks the kernel to start writing it to disk every ``_BEHIND`` bytes (so the
``fsync`` before it takes its name waits for the tail only), and to drop from its cache what was
written more than ``_LAG`` bytes ago (so the next pages written reuse that memory): each kind of
advice covers what was written, in order, once, the drops never nearer the end than ``_LAG``;
the file is exactly the pieces whatever their sizes; a system without ``posix_fadvise``, or a
file system refusing the advice, writes the same file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.errors import SessionError
from omp_session.store import atomic
from omp_session.store.atomic import write_new_file


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 3000), max_size=40), st.sampled_from([1, 100, 4096]),
       st.sampled_from([1, 500, 5000, 1 << 30]))
def test_the_advice_covers_what_was_written_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     sizes: list[int], behind: int, lag: int) -> None:
    advised: list[tuple[int, int]] = []
    monkeypatch.setattr(atomic, "_BEHIND", behind)
    monkeypatch.setattr(atomic, "_LAG", lag)
    monkeypatch.setattr(atomic, "_FADVISE", lambda fd, start, length, advice: advised.append((start, length)))
    pieces = [bytes([n % 251]) * size for n, size in enumerate(sizes)]
    out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}.bin"
    assert write_new_file(out, pieces, force=False, error=SessionError) == sum(sizes)
    assert out.read_bytes() == b"".join(pieces)
    # two runs of ranges, each from the start, one range after another: the write-backs, and the
    # drops (a drop always follows a write-back and ends at least ``lag`` before it)
    kicked = dropped = 0
    for start, length in advised:
        assert length > 0
        if start == kicked:
            assert length >= behind
            kicked += length
        else:
            assert start == dropped and start + length <= kicked - lag
            dropped += length
    total = sum(sizes)
    assert total - kicked < behind + 8192  # what is left is the tail (and the buffer's last write)
    assert kicked - dropped <= lag + behind + 8192 or kicked <= lag  # all but the last ``lag`` dropped


def test_without_fadvise_or_when_it_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pieces = [b"x" * 5000] * 10
    monkeypatch.setattr(atomic, "_BEHIND", 1000)
    monkeypatch.setattr(atomic, "_FADVISE", None)
    write_new_file(tmp_path / "a", pieces, force=False, error=SessionError)

    def refuse(*args: int) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(atomic, "_FADVISE", refuse)
    write_new_file(tmp_path / "b", pieces, force=False, error=SessionError)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes() == b"".join(pieces)


def test_a_big_output_is_advised_for_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = atomic._FADVISE
    if real is None:  # (macOS: nothing to ask)
        assert atomic._DONTNEED == 0
        return

    def counted(fd: int, start: int, length: int, advice: int) -> None:
        calls.append(length)
        real(fd, start, length, advice)

    monkeypatch.setattr(atomic, "_FADVISE", counted)
    data = [b"y" * (1 << 20)] * 70
    write_new_file(tmp_path / "big", data, force=False, error=SessionError)
    assert calls == [atomic._BEHIND, atomic._BEHIND] and (tmp_path / "big").stat().st_size == 70 << 20


def test_what_is_far_behind_is_dropped_for_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []
    real = atomic._FADVISE
    if real is None:
        return
    monkeypatch.setattr(atomic, "_BEHIND", 1 << 20)
    monkeypatch.setattr(atomic, "_LAG", 3 << 20)

    def counted(fd: int, start: int, length: int, advice: int) -> None:
        calls.append((start, length))
        real(fd, start, length, advice)

    monkeypatch.setattr(atomic, "_FADVISE", counted)
    data = [bytes([n]) * (1 << 20) for n in range(8)]
    write_new_file(tmp_path / "big", data, force=False, error=SessionError)
    mb = 1 << 20
    assert calls == [(0, mb), (mb, mb), (2 * mb, mb), (3 * mb, mb), (0, mb), (4 * mb, mb), (mb, mb),
                     (5 * mb, mb), (2 * mb, mb), (6 * mb, mb), (3 * mb, mb), (7 * mb, mb), (4 * mb, mb)]
    assert (tmp_path / "big").read_bytes() == b"".join(data)
