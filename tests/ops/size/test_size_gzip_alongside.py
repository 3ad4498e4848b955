"""``size`` computes its archive figure in a thread alongside the analysis (issue 16 item 2, time):
the figure is zlib's exact level-6 gzip size as before, an error on either side is reported as
before, and no thread outlives the call."""

from __future__ import annotations

import gzip
import random
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

from builders import assistant, entry, tool_result, user, write_session
from omp_session.ops.size import doctor
from omp_session.ops.size.doctor import analyze_size


def _session(path: Path, turns: int = 300) -> Path:
    es: list[Any] = []
    parent = None
    for n in range(turns):
        es.append(entry(f"u{n}", parent, message=user(f"question {n} " + "words " * (n % 50))))
        es.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n} " + "é" * (n % 70))))
        es.append(entry(f"t{n}", f"a{n}", message=tool_result("output " * (n % 90))))
        parent = f"t{n}"
    return write_session(path, es)


def _gzip_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "omp-session-gzip-size"]


def _zlib_size(path: Path) -> int:
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return len(z.compress(path.read_bytes()) + z.flush())


def test_the_archive_figure_is_the_exact_gzip_size(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    r = analyze_size(path)
    assert r.archive_bytes == _zlib_size(path) and not r.archive_estimated
    assert any(s.action == "archive" and s.saves == r.bytes - _zlib_size(path) for s in r.suggestions)
    assert _gzip_threads() == []


def test_an_error_in_the_analysis_stops_the_compression(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl")
    seen: list[int] = []

    def failing(journal: Any, i: int, raw: bytes, result: Any, sink: Any, marks: Any = None) -> None:
        seen.append(i)
        if len(seen) == 50:
            raise RuntimeError("disk gone")

    monkeypatch.setattr(doctor, "externalize_record", failing)
    with pytest.raises(RuntimeError, match="disk gone"):
        analyze_size(path)
    assert _gzip_threads() == []


def test_an_error_of_the_compression_is_raised_after_the_analysis(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl")

    def unreadable(p: str, stop: threading.Event | None = None) -> int:
        raise PermissionError(13, "Permission denied", p)

    monkeypatch.setattr(doctor, "_gzip_size", unreadable)
    with pytest.raises(PermissionError):
        analyze_size(path)
    assert _gzip_threads() == []


def test_no_thread_without_the_archive_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl")
    monkeypatch.setattr(doctor, "Background", lambda *a: pytest.fail("a compression was started"))
    assert analyze_size(path, archive=False).archive_bytes is None
    archived = tmp_path / "s.jsonl.gz"
    archived.write_bytes(gzip.compress(path.read_bytes()))
    assert analyze_size(archived).archive_bytes is None  # already an archive: no figure, as before


def test_a_big_file_has_its_archive_figure_estimated_from_samples(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # text that compresses about as a real session's does (3-4x), the limit and the samples scaled
    # down with the file: 128 samples of 4 KiB over ~3 MB
    rnd = random.Random(5)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(3000)]
    es: list[Any] = []
    parent = None
    for n in range(1500):
        es.append(entry(f"u{n}", parent, message=user(" ".join(rnd.choices(words, k=60)))))
        es.append(entry(f"t{n}", f"u{n}", message=tool_result(" ".join(rnd.choices(words, k=rnd.randint(10, 600))))))
        parent = f"t{n}"
    path = write_session(tmp_path / "s.jsonl", es)
    monkeypatch.setattr(doctor, "EXACT_ARCHIVE_BYTES", 256 * 1024)
    monkeypatch.setattr(doctor, "_SAMPLE", 4096)
    r = analyze_size(path)
    exact = _zlib_size(path)
    assert r.archive_estimated and r.archive_bytes is not None
    assert abs(r.archive_bytes - exact) < 0.1 * exact, (r.archive_bytes, exact)
    assert r.to_json()["archive_estimated"] is True
    note = next(s.note for s in r.suggestions if s.action == "archive")
    assert note.startswith("about, estimated from")


def _estimate_in_one_thread(path: Path) -> int:
    """The estimate as its docstring defines it, every sample in turn."""
    data = path.read_bytes()
    size, n = len(data), 0
    for i in range(doctor._SAMPLES):
        at = (size - doctor._SAMPLE) * i // (doctor._SAMPLES - 1)
        before = min(at, doctor._WINDOW)
        primer, sample = data[at - before:at], data[at:at + doctor._SAMPLE]
        z = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=primer) if primer else zlib.compressobj(6, zlib.DEFLATED, -15)
        n += len(z.compress(sample)) + len(z.flush())
    return round(n * size / (doctor._SAMPLES * doctor._SAMPLE)) + doctor._GZIP_FRAME


def _big_file(path: Path) -> Path:
    rng = random.Random(7)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    size = doctor.EXACT_ARCHIVE_BYTES + 3 * doctor._SAMPLE + 17
    out = bytearray()
    while len(out) < size:
        out += b" ".join(rng.choice(words) for _ in range(400)) + b"\n"
    path.write_bytes(bytes(out[:size]))
    return path


def test_the_estimate_in_two_threads_is_the_estimate(tmp_path: Path) -> None:
    """A file past EXACT_ARCHIVE_BYTES is estimated from samples, half of them deflated in a
    second thread: the same figure as every sample in turn, and no thread left."""
    path = _big_file(tmp_path / "big.jsonl")
    assert doctor._gzip_size(str(path)) == (_estimate_in_one_thread(path), True)
    assert [t for t in threading.enumerate() if t.name.startswith("omp-session-gzip")] == []
    stop = threading.Event()
    stop.set()
    assert doctor._gzip_size(str(path), stop) == (0, True)


def test_an_error_of_the_second_thread_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _big_file(tmp_path / "big.jsonl")
    real = doctor._deflated_samples

    def second_fails(fd: int, size: int, which: range, *stops: threading.Event | None) -> int | None:
        if which.start:
            raise OSError(5, "Input/output error")
        return real(fd, size, which, *stops)

    monkeypatch.setattr(doctor, "_deflated_samples", second_fails)
    with pytest.raises(OSError, match="Input/output error"):
        doctor._gzip_size(str(path))
    assert [t for t in threading.enumerate() if t.name.startswith("omp-session-gzip")] == []
