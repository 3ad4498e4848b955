"""``Journal.raw_in_order``: a record's bytes read through a window of the file are the record's
own, in whatever order the records are asked for (file order being the fast case), whatever
their sizes against the window's."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.format import reader


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.sampled_from([10, 300, 5_000, 40_000, 200_000]), min_size=1, max_size=40),
       asks=st.lists(st.integers(min_value=0, max_value=10_000), max_size=120), ordered=st.booleans(),
       gaps=st.booleans())
def test_the_window_gives_each_records_own_bytes(tmp_path_factory: pytest.TempPathFactory, sizes: list[int],
                                                 asks: list[int], ordered: bool, gaps: bool) -> None:
    lines = [b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}']
    for n, size in enumerate(sizes):
        lines.append(b'{"id":"%d","text":"%s"}' % (n, b"x" * size) + (b"   " if gaps and n % 3 == 0 else b""))
        if gaps and n % 4 == 1:
            lines.append(b"")  # a blank line between records
    path = tmp_path_factory.mktemp("window") / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    mp = pytest.MonkeyPatch()
    mp.setattr(reader, "_IN_MEMORY", 0)
    try:
        j = reader.scan_file(path)
    finally:
        mp.undo()
    try:
        assert not j.source.in_memory
        raw = j.raw_in_order()
        wanted = [a % len(j) for a in asks]
        for i in sorted(wanted) if ordered else wanted:
            assert raw(i) == j.raw(i)
        for i in range(len(j)):  # then every record in file order
            assert raw(i) == j.raw(i)
    finally:
        j.close()


def test_a_small_file_read_whole_is_read_from_memory(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"s"}\n{"id":"a"}\n')
    j = reader.scan_file(path)
    assert j.source.in_memory and j.raw_in_order() == j.raw and j.raw_in_order()(1) == b'{"id":"a"}'
