"""``stats`` reads a session one entry at a time: peak memory stays far below the session's size
(it kept every assistant message decoded: 1.6 GB on a 1 GB session)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from builders import assistant, entry, usage, user, write_session
from omp_session.ops.stats.report import read_file_usage


def test_read_file_usage_keeps_no_message_decoded(tmp_path: Path) -> None:
    entries, parent = [], None
    for n in range(600):
        entries.append(entry(f"u{n}", parent, message=user(f"question {n} " + "x" * 3000)))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n} " + "é" * 6000,
                                                                 usage=usage(n, 2 * n, 0.01))))
        parent = f"a{n}"
    path = write_session(tmp_path / "big.jsonl", entries)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        found = read_file_usage(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found.records) == 600 and found.omp_usage is not None and found.omp_usage["input"] == sum(range(600))
    assert peak < size // 4, (peak, size)


def test_records_go_on_past_where_omps_totals_throw(tmp_path: Path) -> None:
    broken = assistant("no cost", usage={"input": 5, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                         "totalTokens": 6})  # omp throws reading usage.cost.total
    entries = [entry("u0", None, message=user("q")), entry("a0", "u0", message=broken)]
    for n in range(1, 4):
        entries.append(entry(f"a{n}", f"a{n - 1}", message=assistant(f"ok {n}", usage=usage(n, n, 0.5))))
    found = read_file_usage(write_session(tmp_path / "s.jsonl", entries))
    assert found.omp_usage is None
    assert [r.input for r in found.records][-3:] == [1, 2, 3]
