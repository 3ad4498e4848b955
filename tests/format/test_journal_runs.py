"""``Journal.runs`` (the blocks validate and repair read at once): every record once, in order,
each run of records one LF apart, no run over the limit unless it is one record."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.format.reader import scan_bytes

_LINE = st.sampled_from([b'{"type":"x","id":"a"}', b'{"type":"y","id":"' + b"b" * 40 + b'"}', b"", b"  ", b"garbage"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=30), st.sampled_from(["\n", "\r\n"]), st.integers(1, 120))
def test_runs_cover_every_record_once_in_lines_one_lf_apart(lines: list[bytes], end: str, limit: int) -> None:
    j = scan_bytes(end.encode().join(lines) + end.encode())
    runs = list(j.runs(0, len(j), limit))
    assert [k for i, b in runs for k in range(i, b + 1)] == list(range(len(j)))
    for i, b in runs:
        assert all(j.starts[k + 1] == j.ends[k] + 1 for k in range(i, b))
        assert b == i or j.ends[b] - j.starts[i] < limit
    for (i, b), (nxt, _) in pairwise(runs):  # a run stops only where it must
        assert j.starts[nxt] != j.ends[b] + 1 or j.ends[nxt] - j.starts[i] >= limit
