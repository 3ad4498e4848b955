"""Looking entries up by id in a big session: a few by scanning the packed ids, many through the
id -> index map (each scan reads every id: validate looks up every label and compaction target)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builders import entry, user, write_session
from omp_session.format.columns import FixedWidthIds
from omp_session.model.session import open_session


def test_many_lookups_build_the_map_once_and_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 5000
    ids = [f"{k:08x}" for k in range(n)]
    es = [entry(ids[k], ids[k - 1] if k else None, message=user(f"m{k}")) for k in range(n)]
    path = write_session(tmp_path / "big.jsonl", es)
    scans = 0
    real = FixedWidthIds.index

    def counted(self: FixedWidthIds, value: Any, start: int = 0, stop: int | None = None) -> int:
        nonlocal scans
        scans += 1
        return real(self, value, start, stop)

    monkeypatch.setattr(FixedWidthIds, "index", counted)
    with open_session(path) as s:
        assert isinstance(s.ids, FixedWidthIds)  # the packed columns this is about
        assert s.index_of(ids[10]) == 10 and s.index_of("ffffffff") is None
        for k in range(0, n, 3):
            assert s.index_of(ids[k]) == k
        assert s.index_of("zzzzzzzz") is None and s.index_of(ids[-1]) == n - 1
    assert 1 <= scans <= 256
