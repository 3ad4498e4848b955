"""The faithful JSON export writes an entry as its line's bytes when they can be used as they are
(stored.py), and from its value otherwise: the same JSON values either way, the tree intact."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import entry, header, line, user
from omp_session.format import split
from omp_session.js import codec
from omp_session.model.session import open_session
from omp_session.ops.export import formats
from omp_session.ops.export.formats import export

HEAD = line(header("s1"))


def _entries(text: str) -> list[str]:
    """The entries' texts of a faithful export, one per line (as it writes them)."""
    body = text.split('"entries": [\n', 1)[1].split('\n],\n"malformed"', 1)[0]
    return body.split(",\n")


def _write(path: Path, body: bytes) -> Path:
    path.write_bytes(HEAD.encode() + b"\n" + body)
    return path


def _stringify(value: Any) -> str:
    out = codec.stringify(value)
    assert out is not None
    return out


ODD = [  # lines omp reads, spelled otherwise than JSON.stringify would
    '{"type": "message", "id": "a", "parentId": null, "timestamp": "2026-01-01T00:00:00.000Z", '
    '"message": {"role": "user", "content": "hi", "timestamp": 1.0}}',
    '{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:01.000Z","message":'
    '{"role":"user","content":"\\/\\u0041\\u00e9 caf\u00e9","timestamp":1},"big":123456789012345678901,'
    '"inf":1e400,"neg":-0,"dup":1,"dup":2,"exp":1E+2}',
    '{"type":"label","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:02.000Z","targetId":"a","label":"x"}',
]


@pytest.fixture(params=[False, True], ids=["one process", "forked"])
def both_ways(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """Every case with the pieces made here, and made by two processes (split.interleaved, the
    way a file with many records to write again goes); no child is left either way."""
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: request.param)
    monkeypatch.setattr(formats, "as_stored", lambda s: not request.param)
    yield request.param
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_an_entry_is_its_line_as_stored(both_ways: bool, tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", "\n".join(ODD).encode() + b"\n")
    text = export(path, "json")
    assert _entries(text) == ODD
    data = json.loads(text)
    assert data["entries"] == [json.loads(x) for x in ODD]
    assert data["leaf_id"] == "c" and data["branches"] == ["c"] and data["malformed"] == []
    assert data["header"] == json.loads(HEAD)


@pytest.mark.parametrize("after", [["\r", "", "", ""], ["", "\n", "", "\n\n"], ["  \t", "", " ", ""],
                                   ["\r", "  \t\n\n \n", "", "\n"]], ids=["CR", "blank lines", "blanks", "all"])
def test_lines_apart_or_ending_in_blanks_are_their_lines(both_ways: bool, tmp_path: Path, after: list[str]) -> None:
    """A line ending in CR, trailing blanks, blank lines between records: records the scan took
    whole, each exported as its line (without what follows it)."""
    lines = [line(entry(x, p, message=user(x))) for x, p in zip("abcde", [None, *"abcd"], strict=True)]
    body = "".join(x + tail + "\n" for x, tail in zip(lines, [*after, ""], strict=True))
    path = _write(tmp_path / "s.jsonl", body.encode())
    with open_session(path) as s:
        assert not any(s.journal.is_decoded(k + 1) for k in range(len(s)))
    assert _entries(export(path, "json")) == lines


def test_invalid_utf8_is_written_from_the_value(both_ways: bool, tmp_path: Path) -> None:
    """Invalid UTF-8 in a field the scan skips (it took the line whole): written from the value
    omp reads, the byte as U+FFFD; the export stays UTF-8."""
    lines = [line(entry("a", message=user("one"))), line(entry("b", "a", message=user("two"), note="X")),
             line(entry("c", "b", message=user("three")))]
    raw = [x.encode() for x in lines]
    raw[1] = raw[1].replace(b'"X"', b'"\xff"')
    path = _write(tmp_path / "s.jsonl", b"\n".join(raw) + b"\n")
    with open_session(path) as s:
        assert not s.journal.is_decoded(2)
    got = _entries(export(path, "json"))  # (decodes as UTF-8, or raises)
    assert got == [lines[0], lines[1].replace('"X"', '"\ufffd"'), lines[2]]


def test_a_value_spanning_lines_is_written_from_its_value(both_ways: bool, tmp_path: Path) -> None:
    """A value spanning lines is written on one line; the records the scan decoded with it (it
    reads the part of the file around a damaged line line by line), a value followed by garbage
    on its line, are their lines as stored all the same."""
    lines = [line(entry(x, p, message=user(x))) for x, p in zip("abcd", [None, *"abc"], strict=True)]
    odd = lines[3].replace('"timestamp":1}', '"timestamp": 1.0}')
    body = "\n".join([lines[0], lines[1].replace(',"parentId"', ',\n"parentId"'), lines[2] + " tail",
                      "{not json", odd, ""])
    path = _write(tmp_path / "s.jsonl", body.encode())
    with open_session(path) as s:
        assert s.journal.is_decoded(2) and s.journal.is_decoded(4)
    text = export(path, "json")
    assert _entries(text) == [*lines[:3], odd]
    assert [m["text"] for m in json.loads(text)["malformed"]] == [" tail", "{not json"]


def test_a_value_spanning_lines_among_plain_lines(both_ways: bool, tmp_path: Path) -> None:
    """(Every record one line feed after the one before: the run is taken record by record.)"""
    lines = [line(entry(x, p, message=user(x))) for x, p in zip("abc", [None, *"ab"], strict=True)]
    body = "\n".join([lines[0], lines[1].replace(',"parentId"', ',\n"parentId"'), lines[2], ""])
    assert _entries(export(_write(tmp_path / "s.jsonl", body.encode()), "json")) == lines


def test_the_export_does_not_depend_on_how_the_scan_cut_the_file(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged line makes the scan decode the lines around it: in one process, or in the half a
    forked child scans, the export is the same (found by the fuzz campaign's differential)."""
    lines = [line(entry(f"e{k}", f"e{k - 1}" if k else None, message=user(str(k)))).replace(":1}", ":1.0}")
             for k in range(40)]
    path = _write(tmp_path / "s.jsonl", ("\n".join([*lines, "{damaged"]) + "\n").encode())
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: False)
    alone = export(path, "json")
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    with open_session(path) as s:  # (the scan in two: the first half taken whole, the rest decoded)
        decoded = [s.journal.is_decoded(k + 1) for k in range(len(s))]
    assert any(decoded) and not all(decoded)
    assert export(path, "json") == alone and _entries(alone) == lines
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_only_a_file_whose_entries_are_all_written_again_is_exported_in_two_processes(tmp_path: Path) -> None:
    """(Writing records again is worth a second process; copying lines is not.)"""
    lines = [line(entry(f"e{k}", f"e{k - 1}" if k else None, message=user(str(k)))) for k in range(30)]
    clean = _write(tmp_path / "clean.jsonl", ("\n".join(lines) + "\n").encode())
    damaged = _write(tmp_path / "damaged.jsonl", ("\n".join([*lines[:20], "{not json", *lines[20:]]) + "\n").encode())
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(lines) + "\n")
    for path, alone in [(clean, True), (damaged, True), (_v1(tmp_path / "v1.jsonl"), False), (headless, False)]:
        with open_session(path) as s:
            assert formats.as_stored(s) is alone, path.name


def test_a_run_with_a_line_that_cannot_be_used_is_taken_line_by_line(both_ways: bool, tmp_path: Path) -> None:
    """Many records, one of them invalid UTF-8 in the middle of a piece: that one is written from
    its value, every other one is its line (pieces of about a megabyte: several here)."""
    lines = [line(entry(f"e{k}", f"e{k - 1}" if k else None, message=user("x" * 5000 + str(k))))
             for k in range(600)]
    raw = [x.encode() for x in lines]
    raw[300] = raw[300].replace(b'"x', b'"\xfe', 1)
    path = _write(tmp_path / "s.jsonl", b"\n".join(raw) + b"\n")
    got = _entries(export(path, "json"))
    assert got[:300] == lines[:300] and got[301:] == lines[301:]
    assert got[300].startswith('{"type":"message","id":"e300"') and "\ufffd" in got[300]


def test_an_entry_added_in_memory_is_written_from_its_value(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", "\n".join(ODD).encode() + b"\n")
    with open_session(path) as s:
        added = entry("z", "c", message=user("added"), n=1.5)
        s.append_entry(added, new_id=True)
        got = _entries(export(s, "json"))
    assert got == [*ODD, _stringify(added)]


def _v1(path: Path) -> Path:
    path.write_text(line({"type": "session", "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp"})
                    + "\n" + line({"type": "message", "timestamp": "2026-01-01T00:00:01.000Z",
                                   "message": {"role": "user", "content": "hi", "timestamp": 1.0}}) + "\n")
    return path


def test_a_migrated_file_is_written_as_omp_loads_it(tmp_path: Path) -> None:
    """A v1 file has no ids until migration: its entries are the migrated values."""
    data = json.loads(export(_v1(tmp_path / "v1.jsonl"), "json"))
    assert data["migrated"] is True
    assert isinstance(data["entries"][0]["id"], str) and data["entries"][0]["parentId"] is None


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                       max_leaves=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extras=st.lists(_VALUES, min_size=1, max_size=6), ascii_only=st.booleans(), spaced=st.booleans())
def test_every_entry_exports_to_the_value_omp_reads(tmp_path: Path, extras: list[Any], ascii_only: bool,
                                                    spaced: bool) -> None:
    """Lines written by another program (Python's json: its spacing, its escapes, its floats):
    each exported entry is the same JSON value as the line omp reads, and is the line itself."""
    sep = (", ", ": ") if spaced else (",", ":")
    lines = [json.dumps({"type": "custom", "id": f"i{k}", "parentId": f"i{k - 1}" if k else None,
                         "timestamp": "2026-01-01T00:00:00.000Z", "data": value},
                        ensure_ascii=ascii_only, separators=sep) for k, value in enumerate(extras)]
    path = _write(tmp_path / "s.jsonl", "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
    text = export(path, "json")
    got = _entries(text)
    with open_session(path) as s:
        assert len(s) == len(lines)
        for k, raw in enumerate(lines):
            assert _stringify(codec.loads(got[k])) == _stringify(codec.loads(s.journal.raw(k + 1)))
            if s.journal.is_decoded(k + 1):
                continue  # (a lone surrogate: the scan decoded it itself)
            assert got[k] == raw
