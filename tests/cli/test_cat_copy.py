"""``omp-session cat --all`` is a copy: the bytes of the session as stored, whatever they hold
(issue 15, item 2); ``cat`` without ``--all`` and ``--type`` keep printing records."""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import builders
from builders import assistant, entry, header, stamp, user
from omp_session.cli import cli
from omp_session.format.title import build_title_slot

ENTRIES = [
    entry("u1", None, timestamp=stamp(1), message=user("hello")),
    entry("a1", "u1", timestamp=stamp(2), message=assistant("hi")),
    entry("u2", "a1", timestamp=stamp(3), message=user("again")),
]
SLOT = build_title_slot("A titled session", "user", builders.TS)


def _lines(records: list[object]) -> list[bytes]:
    return [(r if isinstance(r, str) else builders.line(r)).encode() for r in records]


def _file(*, slot: bool = False, bom: bool = False, eol: bytes = b"\n", malformed: bool = False,
          final_newline: bool = True, blank: bool = False) -> bytes:
    lines = _lines([header(), *ENTRIES])
    if malformed:
        lines.insert(2, b'{"type":"message","id":"broken","parentId":')  # cut mid-write
        lines.insert(3, b"not json at all")
    if blank:
        lines.insert(2, b"   ")
    data = eol.join(lines) + (eol if final_newline else b"")
    return (b"\xef\xbb\xbf" if bom else b"") + (SLOT if slot else b"") + data


CASES = {
    "plain": _file(),
    "title slot": _file(slot=True),
    "bom": _file(bom=True),
    "bom and slot": _file(bom=True, slot=True),
    "crlf": _file(eol=b"\r\n"),
    "malformed lines": _file(malformed=True),
    "no final newline": _file(final_newline=False),
    "blank line": _file(blank=True),
    "everything": _file(slot=True, bom=True, eol=b"\r\n", malformed=True, final_newline=False, blank=True),
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cat(*args: str) -> tuple[int, bytes, str]:
    result = builders.invoke(cli, "cat", *args)
    return result.exit_code, result.stdout_bytes, result.stderr


@pytest.mark.parametrize("name", list(CASES))
def test_cat_all_is_byte_identical(tmp_path: Path, name: str) -> None:
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(CASES[name])
    code, out, err = _cat(str(path), "--whole-file")
    assert code == 0, err
    assert _sha(out) == _sha(CASES[name])


@pytest.mark.parametrize("name", ["title slot", "everything"])
def test_cat_all_of_an_archive_is_its_decompressed_bytes(tmp_path: Path, name: str) -> None:
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl.gz"
    path.write_bytes(gzip.compress(CASES[name]))
    code, out, err = _cat(str(path), "--whole-file")
    assert code == 0, err
    assert _sha(out) == _sha(CASES[name])


def test_cat_all_from_a_store_is_byte_identical(tmp_path: Path) -> None:
    from omp_session.store import open_store

    url = f"sqlite:{tmp_path / 'store.db'}"
    key = str(tmp_path / "sessions" / "-tmp-" / "2026-01-01T00-00-00-000Z_s.jsonl")
    storage = open_store(url)
    try:
        storage.replace(key, CASES["everything"], None)
    finally:
        storage.close()
    code, out, err = _cat(key, "--store", url, "--whole-file")
    assert code == 0, err
    assert _sha(out) == _sha(CASES["everything"])


def test_cat_all_of_a_large_file_is_byte_identical(tmp_path: Path) -> None:
    # beyond the reader's in-memory limit, records are read with pread: the copy must still be whole
    big = [entry(f"e{n}", f"e{n - 1}" if n else None, timestamp=stamp(n % 60), message=user("x" * 2000))
           for n in range(4500)]
    data = SLOT + b"\r\n".join(_lines([header(), *big]))
    path = tmp_path / "2026-01-01T00-00-00-000Z_big.jsonl"
    path.write_bytes(data)
    code, out, err = _cat(str(path), "--whole-file")
    assert code == 0, err
    assert len(out) == len(data) and _sha(out) == _sha(data)


def test_cat_without_all_prints_the_branch_as_records(tmp_path: Path) -> None:
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(CASES["everything"])
    code, out, err = _cat(str(path))
    assert code == 0, err
    assert [json.loads(x)["id"] for x in out.decode().splitlines()] == ["u1", "a1", "u2"]
    assert out.endswith(b"}\n") and b"\r" not in out


def test_cat_type_keeps_only_those_entries_even_with_all(tmp_path: Path) -> None:
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(CASES["everything"])
    code, out, err = _cat(str(path), "--whole-file", "--type", "message")
    assert code == 0, err
    assert [json.loads(x)["id"] for x in out.decode().splitlines()] == ["u1", "a1", "u2"]


# --whole-file of a plain file whose first megabyte shows it a session copies it without reading
# it as a session first (a 1 GB copy took the open's scan and then the copy: 3.8x our open)


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.cli import cat as cat_module

    def refuse(path: object) -> object:
        raise AssertionError(f"{path} was read as a session")

    monkeypatch.setattr(cat_module, "open_one", refuse)


@pytest.mark.parametrize("name", list(CASES))
def test_a_whole_file_copy_is_not_read_as_a_session_first(tmp_path: Path, name: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(CASES[name])
    _no_reading(monkeypatch)
    code, out, err = _cat(str(path), "--whole-file")
    assert code == 0, err
    assert out == CASES[name]


NOT_SESSIONS = {
    "empty": b"",
    "blank": b"\n  \n\x00\x00",
    "binary": bytes(range(256)) * 64,
    "quarantine": b'{"line":3,"offset":120,"reason":"malformed","text":"{\\"type\\":"}\n',
    "no object": b"just some text\n" * 10,
}


@pytest.mark.parametrize("name", list(NOT_SESSIONS))
def test_what_is_no_session_is_refused_as_reading_it_would(tmp_path: Path, name: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.cli import cat as cat_module

    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(NOT_SESSIONS[name])
    read = _cat(str(path), "--whole-file", "--type", "message")  # (--type: always read as a session)
    monkeypatch.setattr(cat_module, "_copied", lambda path, out: False)
    assert _cat(str(path), "--whole-file") == read
    monkeypatch.undo()
    _no_reading(monkeypatch)
    code, out, err = _cat(str(path), "--whole-file")
    assert (code, out, err) == read and code == 1 and out == b""
    assert err.count("\n") == 1 and "not an omp session file" in err


def test_a_start_that_does_not_tell_is_read_as_a_session(tmp_path: Path) -> None:
    # objects without a "type" in the first megabyte: only the records tell (here: a session whose
    # header comes after a megabyte of other objects is none, as omp reads the first record)
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    data = b'{"a":1}\n' * 140_000 + CASES["plain"]
    path.write_bytes(data)
    from omp_session.cli import cat as cat_module

    assert not cat_module._copied(path, io.BytesIO())  # (the decision, without the command)
    code, out, err = _cat(str(path), "--whole-file")
    read = _cat(str(path), "--whole-file", "--type", "message")
    assert code == read[0] and (code != 0 or out == data), err


def test_a_missing_file_and_a_folder_say_so_as_before(tmp_path: Path) -> None:
    for target in (tmp_path / "2026-01-01T00-00-00-000Z_none.jsonl", tmp_path):
        code, out, err = _cat(str(target), "--whole-file")
        assert code != 0 and out == b"" and err.count("\n") == 1 and "Traceback" not in err


# the copy of a plain file goes by sendfile where the output has a descriptor that takes it, and by
# reading and writing where it does not (a stream without one, a file opened to append, a
# terminal): the bytes are the same


def _subprocess_cat(path: Path, stdout: int, env_dir: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(env_dir), "XDG_CACHE_HOME": str(env_dir / "cache")}
    return subprocess.run([sys.executable, "-m", "omp_session", "cat", str(path), "--whole-file"], stdout=stdout,
                          stderr=subprocess.PIPE, env=env, timeout=120)


@pytest.mark.parametrize("mode", ["file", "append", "pipe"])
def test_a_copy_into_a_file_or_a_pipe_is_the_file(tmp_path: Path, mode: str) -> None:
    big = [entry(f"e{n}", f"e{n - 1}" if n else None, timestamp=stamp(n % 60), message=user("é" * 3000))
           for n in range(1500)]
    data = SLOT + b"\n".join(_lines([header(), *big])) + b"\n"
    path = tmp_path / "2026-01-01T00-00-00-000Z_big.jsonl"
    path.write_bytes(data)
    copy = tmp_path / "copy.jsonl"
    if mode == "pipe":
        done = subprocess.run(f'"{sys.executable}" -m omp_session cat "{path}" --whole-file | cat > "{copy}"',
                              shell=True, stderr=subprocess.PIPE, timeout=120,
                              env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")})
    else:
        if mode == "append":
            copy.write_bytes(b"before\n")
        with open(copy, "ab" if mode == "append" else "wb") as f:
            done = _subprocess_cat(path, f.fileno(), tmp_path / "agent")
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert copy.read_bytes() == (b"before\n" if mode == "append" else b"") + data


def test_a_copy_the_kernel_cannot_finish_is_finished_by_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.cli import cat as cat_module

    data = CASES["everything"] * 50
    calls: list[int] = []
    real = os.sendfile

    def sendfile(out: int, fd: int, offset: int, count: int) -> int:
        calls.append(offset)
        if len(calls) > 1:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(out, fd, offset, min(count, 1000))  # a first part, then it cannot

    monkeypatch.setattr(cat_module.os, "sendfile", sendfile)
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(data)
    copy = tmp_path / "copy.jsonl"
    with open(path, "rb") as src, open(copy, "wb") as out:
        pos = cat_module._sent(src.fileno(), out, len(data))
        assert pos == 1000 and calls == [0, 1000]
        out.write(data[pos:])
    assert copy.read_bytes() == data


def test_a_closed_pipe_ends_a_whole_file_copy_quietly(tmp_path: Path) -> None:
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(CASES["everything"] * 2000)
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: the first write fails with EPIPE
    try:
        done = _subprocess_cat(path, writer, tmp_path / "agent")
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (0, b"")


def test_a_start_that_cannot_be_read_is_left_to_the_reading_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the first megabyte's pread fails (EIO: a failing disk, a sysfs attribute): the copy leaves
    # what it cannot tell to the reading, which reports a read error in one line (here it works)
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    data = _file()
    path.write_bytes(data)
    real = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        if os.path.samestat(os.fstat(fd), os.stat(path)):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(fd, n, offset)

    monkeypatch.setattr(os, "pread", pread)
    result = builders.invoke(cli, "cat", str(path), "--whole-file")
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert (result.exit_code, result.stdout_bytes) == (0, data)


def test_an_output_sendfile_refuses_as_macos_does_is_copied_by_writes(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # macOS's and the BSDs' sendfile writes only to a socket (ENOTSOCK for a file or a pipe): the
    # copy goes on by reading and writing, as for the errors Linux gives
    from omp_session.cli import cat as cat_module

    def sendfile(out: int, fd: int, offset: int, count: int) -> int:
        raise OSError(errno.ENOTSOCK, os.strerror(errno.ENOTSOCK))

    monkeypatch.setattr(cat_module.os, "sendfile", sendfile)
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    data = _file()
    path.write_bytes(data)
    copy = tmp_path / "copy.jsonl"
    with open(copy, "wb") as out:
        assert cat_module._copied(path, out)
    assert copy.read_bytes() == data
