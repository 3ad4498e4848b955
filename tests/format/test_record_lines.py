"""``Journal.record_lines`` (every record's line, from the gaps between records) is ``line_of`` of
every record's start, which counts the line feeds themselves: on damaged files, values spanning
lines, blank and CRLF lines, a file scanned in two processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from omp_session.format import reader
from omp_session.format import split as scan_split


def _lines_by_feeds(j: reader.Journal) -> list[int]:
    return [j.line_of(j.start(i)) for i in range(len(j))]


RECORD = '{"type":"message","id":"e%d","parentId":null,"message":{"role":"user","content":"a\\nb"}}'
_kinds = st.sampled_from(["record", "record", "record", "blank", "spaces", "crlf", "garbage", "multiline",
                          "two-values", "trailing", "deep-open"])


def _line(kind: str, n: int) -> str:
    record = RECORD % n
    return {"record": record + "\n", "blank": "\n", "spaces": " \t \n", "crlf": record + "\r\n",
            "garbage": "not json at all\n", "multiline": '{"type":"custom",\n\n  "id":"m' + str(n) + '"\n}\n',
            "two-values": '{"a":1} {"b":2}\n', "trailing": record + " junk\n",
            "deep-open": "[" * 5 + "\n"}[kind]


@settings(max_examples=400, deadline=None)
@given(st.lists(_kinds, max_size=30), st.booleans(), st.booleans(), st.lists(st.integers(0, 40), max_size=5))
@example(["multiline", "record"], True, False, [1])
def test_every_records_line_is_the_line_feeds_count(tmp_path_factory: pytest.TempPathFactory, kinds: list[str],
                                                   bom: bool, final_newline: bool, decoded: list[int]) -> None:
    text = '{"type":"session","id":"s"}\n' + "".join(_line(k, n) for n, k in enumerate(kinds))
    if not final_newline:
        text = text.rstrip("\n")
    path = tmp_path_factory.mktemp("j") / "s.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    j = reader.scan_file(path)
    for i in decoded:  # records decoded since the scan are read too: the same lines
        if i < len(j):
            j.value(i)
    assert list(j.record_lines()) == _lines_by_feeds(j)


def test_a_title_slot_and_lines_before_the_header(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    slot = '{"type":"title","v":1,"title":"t","updatedAt":"x","pad":"' + " " * 40 + '"}\n'
    path.write_text("\n\n" + slot + '{"type":"session","id":"s"}\n' + (RECORD % 1) + "\n")
    j = reader.scan_file(path)
    assert list(j.record_lines()) == _lines_by_feeds(j) and j.record_lines()[-1] == 5


def test_on_a_file_scanned_in_two_processes(make_corpus: Callable[[int, int], Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_split, "MIN_SPLIT_SIZE", 0)
    monkeypatch.setenv("OMP_SESSION_WORKERS", "2")
    for path in sorted(make_corpus(5, 60).glob("*.jsonl")):
        j = reader.scan_file(path)
        assert list(j.record_lines()) == _lines_by_feeds(j), path.name
    assert len(reader.scan_file(path).record_lines()) == len(reader.scan_file(path))


def test_entries_added_in_memory_after_a_line_without_its_line_feed(tmp_path: Path) -> None:
    from omp_session.model.session import open_session

    for tail in (" ", "\r", "\t", ""):
        path = tmp_path / "s.jsonl"
        path.write_text('{"type":"session","version":3,"id":"s","cwd":"/tmp"}\n'
                        '{"type":"custom","id":"a","parentId":null}' + tail)
        s = open_session(path)
        s.append_entry({"type": "custom", "id": "b", "parentId": "a"})
        assert list(s.entry_lines()) == [s.line_of_entry(k) for k in range(len(s))] == [2, 2], repr(tail)
