"""``write_new_file(..., overlap=True)``: the writes go on in a thread while the next pieces are
made (html export, repair -o). The file must be exactly the pieces, every write done before the
call returns or raises, a failed write or a failing maker leaves nothing behind, and the thread
starts only after the first piece (a generator forks on its first step; a process with a thread
forks no child)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.errors import SessionError
from omp_session.store import atomic
from omp_session.store.atomic import write_new_file


def _left(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


class _Wrapped:
    """The temporary file ``write_new_file`` opens, its ``write`` replaced by a subclass."""

    def __init__(self, f: Any) -> None:
        self.f = f

    def __getattr__(self, name: str) -> Any:
        return getattr(self.f, name)

    def __enter__(self) -> _Wrapped:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()


def _wrap_files(monkeypatch: pytest.MonkeyPatch, kind: type[_Wrapped]) -> None:
    real_open = atomic.write_behind
    monkeypatch.setattr(atomic, "write_behind", lambda fd: kind(real_open(fd)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=3000), max_size=40))
def test_the_file_is_the_pieces(tmp_path: Path, pieces: list[bytes]) -> None:
    out = tmp_path / "out.bin"
    written = write_new_file(out, iter(pieces), force=True, error=SessionError, overlap=True)
    assert out.read_bytes() == b"".join(pieces) and written == sum(map(len, pieces))
    assert threading.active_count() == 1  # the writer is gone


def test_the_thread_starts_after_the_first_piece(tmp_path: Path) -> None:
    counts: list[int] = []

    def pieces() -> Iterator[bytes]:
        for n in range(5):
            counts.append(threading.active_count())
            yield b"%d\n" % n

    write_new_file(tmp_path / "out", pieces(), force=False, error=SessionError, overlap=True)
    assert counts[0] == 1 and (tmp_path / "out").read_bytes() == b"0\n1\n2\n3\n4\n"


def test_the_writes_go_on_while_the_next_pieces_are_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the first write waits until the maker has made every piece: without a thread of its own
    # for the writes, the maker would never get there
    made = threading.Event()

    class Slow(_Wrapped):
        first = True

        def write(self, data: bytes) -> int:
            if self.first:
                self.first = False
                assert made.wait(10), "the maker did not go on while a write was waiting"
            return int(self.f.write(data))

    _wrap_files(monkeypatch, Slow)

    def pieces() -> Iterator[bytes]:
        for n in range(8):
            yield b"x%d" % n
        made.set()

    write_new_file(tmp_path / "out", pieces(), force=False, error=SessionError, overlap=True)
    assert (tmp_path / "out").read_bytes() == b"".join(b"x%d" % n for n in range(8))


@pytest.mark.parametrize("size", [atomic._AHEAD // 2, 1, 3 * atomic._AHEAD])
def test_what_waits_is_bounded_in_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    # the first write waits while the maker makes what it may: a piece being written, what waits
    # (``_AHEAD`` bytes with each piece's overhead, or one piece bigger than that), one being made
    made: list[int] = []
    seen: list[int] = []

    class Slow(_Wrapped):
        first = True

        def write(self, data: bytes) -> int:
            if self.first:
                self.first = False
                time.sleep(0.3)
                seen.append(len(made))
            return int(self.f.write(data))

    _wrap_files(monkeypatch, Slow)
    count = 3 * atomic._AHEAD // (size + atomic._OVERHEAD) + 8

    def pieces() -> Iterator[bytes]:
        for n in range(count):
            made.append(n)
            yield b"%d" % (n % 10) * size

    write_new_file(tmp_path / "out", pieces(), force=False, error=SessionError, overlap=True)
    assert seen[0] <= 1 + max(1, atomic._AHEAD // (size + atomic._OVERHEAD)) + 1 < count
    assert (tmp_path / "out").stat().st_size == count * size


def test_a_failed_write_is_raised_stops_the_maker_and_leaves_nothing(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    class Full(_Wrapped):
        n = 0

        def write(self, data: bytes) -> int:
            self.n += 1
            if self.n == 3:
                raise OSError(28, "No space left on device")
            return int(self.f.write(data))

    _wrap_files(monkeypatch, Full)
    made: list[int] = []

    def pieces() -> Iterator[bytes]:
        for n in range(100):
            made.append(n)
            yield b"p" * (atomic._AHEAD // 4)

    with pytest.raises(SessionError, match="No space left on device"):
        write_new_file(tmp_path / "out", pieces(), force=False, error=SessionError, overlap=True)
    assert _left(tmp_path) == [] and threading.active_count() == 1
    assert len(made) < 3 + 4 + 3  # it stopped soon after the failure


def test_a_failing_maker_is_raised_after_the_writes_and_leaves_nothing(tmp_path: Path) -> None:
    def pieces() -> Iterator[bytes]:
        yield b"one"
        yield b"two"
        raise ValueError("the file changed while it was read")

    with pytest.raises(ValueError, match="changed"):
        write_new_file(tmp_path / "out", pieces(), force=False, error=SessionError, overlap=True)
    assert _left(tmp_path) == [] and threading.active_count() == 1


def test_nothing_to_write_makes_an_empty_file(tmp_path: Path) -> None:
    assert write_new_file(tmp_path / "out", iter(()), force=False, error=SessionError, overlap=True) == 0
    assert (tmp_path / "out").read_bytes() == b""
