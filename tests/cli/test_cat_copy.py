"""``omp-session cat --all`` is a copy: the bytes of the session as stored, whatever they hold
(issue 15, item 2); ``cat`` without ``--all`` and ``--type`` keep printing records."""

from __future__ import annotations

import gzip
import hashlib
import json
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
