"""Entry kinds built from the reader's shared heads equal those built from the heads column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from omp_session.format import reader
from omp_session.model import session


def test_kinds_from_shared_heads(make_corpus: Callable[[int, int], Path]) -> None:
    for path in sorted(make_corpus(5, 60).glob("*.jsonl")):
        j = reader.scan_file(path)
        types = j.types[1:]
        plain = session.entry_kinds(types, j.heads)
        if not j.loose_heads:
            assert session.entry_kinds(types, j.heads, reader.shared_heads()) == plain, path.name
        # a head missing from ``shared`` falls back to the exact per-entry path
        assert session.entry_kinds(types, j.heads, []) == plain, path.name
