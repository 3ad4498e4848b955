"""Lenient reading (spec S1.4, S15 C12-C28)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.format import split
from omp_session.format.reader import scan_bytes, scan_file
from omp_session.js.codec import UNDEFINED

H = b'{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}'


def U(i: str, parent: str | None, text: str = "x") -> bytes:
    p = "null" if parent is None else f'"{parent}"'
    return (f'{{"type":"message","id":"{i}","parentId":{p},"timestamp":"2025-01-01T00:00:01.000Z",'
            f'"message":{{"role":"user","content":"{text}","timestamp":1}}}}').encode()


def ids(data: bytes) -> list[object]:
    j = scan_bytes(data)
    return j.ids[1:]


def test_clean_file_one_record_per_line() -> None:
    j = scan_bytes(H + b"\n" + U("a", None) + b"\n" + U("b", "a") + b"\n")
    assert len(j) == 3 and j.ids == ["s", "a", "b"] and j.parents[1:] == [None, "a"]
    assert not j.malformed and j.final_newline
    assert j.value(2)["message"]["content"] == "x"


def test_c15_open_value_swallows_the_next_line_at_end() -> None:
    data = b"\n".join([H, b"not json", U("a", None), b'{"broken":', U("b", "a")]) + b"\n"
    j = scan_bytes(data)
    assert j.ids[1:] == ["a"] and len(j.malformed) == 2


def test_c16_invalid_multiline_value_loses_only_its_first_line() -> None:
    j = scan_bytes(b"\n".join([H, b'{"x":', U("a", None), U("b", "a")]) + b"\n")
    assert j.ids[1:] == ["a", "b"] and len(j.malformed) == 1


def test_c17_incomplete_last_line() -> None:
    j = scan_bytes(H + b"\n" + U("a", None) + b'\n{"type":"message","id":"c","par')
    assert j.ids[1:] == ["a"] and len(j.malformed) == 1 and not j.final_newline


def test_c19_crlf_and_blank_lines() -> None:
    j = scan_bytes(H + b"\r\n\r\n   \r\n" + U("a", None) + b"\r\n\t\n")
    assert j.ids[1:] == ["a"] and not j.malformed
    assert j.raw(1).endswith(b"}")


def test_c20_bom_is_stripped() -> None:
    j = scan_bytes(b"\xef\xbb\xbf" + H + b"\n" + U("a", None) + b"\n")
    assert j.bom and j.ids == ["s", "a"] and j.source_size == j.size - 3


def test_c22_non_object_values_are_records() -> None:
    j = scan_bytes(b"\n".join([H, b"42", b'"s"', b"[1]", b"true", b"null", U("a", None)]) + b"\n")
    assert len(j) == 7 and j.ids[1:6] == [UNDEFINED] * 5 and j.value(5) is None


def test_c25_two_values_on_one_line_keep_the_first() -> None:
    j = scan_bytes(H + b"\n" + U("a", None) + b" " + U("b", "a") + b"\n")
    assert j.ids[1:] == ["a"] and len(j.malformed) == 1
    span = j.malformed[0]
    assert j.read(span.start, span.end).strip().startswith(b'{"type"')


def test_c26_pretty_printed_header() -> None:
    j = scan_bytes(b'{\n  "type": "session",\n  "id": "s"\n}\n' + U("a", None) + b"\n")
    assert j.ids == ["s", "a"] and not j.malformed


def test_whitespace_only_unicode_line_is_skipped_but_not_counted() -> None:
    j = scan_bytes(H + b"\n\xc2\xa0\n" + U("a", None) + b"\n")
    assert j.ids[1:] == ["a"] and not j.malformed


def test_invalid_utf8_decodes_with_replacement() -> None:
    j = scan_bytes(H + b"\n" + U("a", None, "cafX").replace(b"cafX", b"caf\xe9") + b"\n")
    assert j.invalid_utf8 and j.value(1)["message"]["content"] == "caf\ufffd"
    assert j.source_size == j.size + 2  # one bad byte became a 3-byte U+FFFD


def test_title_slot_is_peeled() -> None:
    slot = b'{"type":"title","v":1,"title":"hi","updatedAt":"t","pad":"  "}\n'
    j = scan_bytes(slot + H + b"\n")
    assert j.slot is not None and j.slot.title == "hi" and j.ids == ["s"]


@pytest.mark.parametrize("data", [b"", b"\n\n", b"\xff\xfe\x00", b"{", b"}{", b"[" * 10000, b'"' * 7])
def test_garbage_never_raises(data: bytes) -> None:
    j = scan_bytes(data)
    for span in j.malformed:
        assert 0 <= span.start < span.end <= len(data)
    for i in range(len(j)):
        assert 0 <= j.start(i) < j.end(i) <= len(data)


def test_large_file_goes_through_chunks_and_pread(tmp_path: Path) -> None:
    line = U("x", None, "z" * 3000)
    body = [H]
    for i in range(3500):  # > 8 MiB: streaming path, several 4 MiB chunks
        body.append(U(f"e{i}", f"e{i - 1}" if i else None, "z" * 3000))
    body.insert(1700, b"garbage in the middle")
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"\n".join(body) + b"\n")
    j = scan_file(path)
    try:
        assert j.streaming and len(line) > 3000
        assert len(j) == 3501 and len(j.malformed) == 1
        assert j.value(3500)["id"] == "e3499"
        assert j.line_of(j.malformed[0].start) == 1701
        assert j.source_size == path.stat().st_size
    finally:
        j.close()


@pytest.mark.parametrize("depth", [600, 1100, 5000, 100_000])
def test_deeply_nested_records_never_raise(tmp_path: Path, depth: int) -> None:
    import omp_session

    header = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
    user = (b'{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
            b'"message":{"role":"user","content":"hi","timestamp":1}}\n')
    deep = (b'{"type":"custom","id":"a","parentId":"u","timestamp":"2026-01-01T00:00:00.000Z","data":'
            + b"[" * depth + b"]" * depth + b"}\n")
    p = tmp_path / "deep.jsonl"
    p.write_bytes(header + user + deep)
    s = omp_session.open(p)
    # kept at any depth (msgspec gives up near 1,000 levels; the exact scanner does not recurse);
    # omp keeps it too, up to the depth where its own open throws (100,000 here)
    assert [e["id"] for e in s.entries] == ["u", "a"] and not s.diagnostics
    assert [m["role"] for m in s.build_session_context()["messages"]] == ["user"]


def test_a_deeply_nested_header_version_does_not_raise(tmp_path: Path) -> None:
    import omp_session

    p = tmp_path / "v.jsonl"
    p.write_bytes(b'{"type":"session","version":' + b"[" * 3000 + b"3" + b"]" * 3000
                  + b',"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n')
    s = omp_session.open(p)
    assert s.header is not None and s.migrated  # NaN is not >= 3: migrated, as omp would flag it


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"\n", b"xyz", b"\n\n", b'{"k":1}']), max_size=400),
       st.lists(st.integers(0, 3000), min_size=1, max_size=12))
def test_line_of_is_the_count_of_line_feeds_before_the_offset(parts: list[bytes], asked: list[int]) -> None:
    # the line feeds are found as far as asked (a few bytes for a finding on the header's line),
    # in any order of questions: each answer is what counting from the start gives
    import omp_session.format.reader as reader

    data = b"".join(parts)
    j = scan_bytes(data)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reader, "_CHUNK", 7)  # several blocks even for a small text
        for offset in asked:
            assert j.line_of(offset) == data.count(b"\n", 0, min(offset, len(data))) + 1


def test_a_finding_on_the_first_lines_reads_no_more_than_a_block(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
                     + b'{"type":"custom","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}\n' * 200_000)
    j = scan_file(path)
    try:
        read: list[tuple[int, int]] = []
        real = j.source.read
        j.source.read = lambda a, b: read.append((a, b)) or real(a, b)  # type: ignore[method-assign]
        assert j.line_of(100) == 2
        assert read and max(b for _, b in read) < j.size // 2
        assert j.line_of(j.size - 1) == 200_001
    finally:
        j.close()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=0, max_size=30), st.integers(1, 200), st.data())
def test_entry_pieces_cut_the_records_as_stored(lengths: list[int], limit: int, data: st.DataObject) -> None:
    # each entry weighs its record's bytes (one byte where no record of the file stands for it);
    # a run of entries in file order and any other selection are cut alike
    body = b"".join(b'{"type":"x","id":"%d","parentId":null,"t":"%s"}\n' % (k, b"a" * n)
                    for k, n in enumerate(lengths))
    j = scan_bytes(b'{"type":"session","version":3,"id":"s"}\n' + body)
    last = len(j.starts) - 1
    lo = data.draw(st.integers(0, len(lengths)))
    hi = data.draw(st.integers(lo, len(lengths) + 3))  # past the file's records: one byte each
    picked = data.draw(st.lists(st.integers(0, len(lengths) + 2), max_size=20))
    for entries in (range(lo, hi), picked, list(range(lo, hi))):
        sizes = [j.ends[k + 1] - j.starts[k + 1] if k < last else 1 for k in entries]
        # (pieces_of is held to a step per item in test_forked.py: here, the sizes it is given)
        assert j.entry_pieces(entries, limit) == split.pieces_of(len(sizes), sizes, limit)
