"""stats on a large file reads the later assistants' usage in a forked child (split.ReadAhead):
the records and omp's sums must be exactly the one-process ones, whatever shapes the usages take
(a total that turns into a string in the child's part is followed in this process, in order)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_plain_usage import _PLAIN, _PLAIN_AND, _same, _usage

from forking import dying_children, one_process, split_watched
from omp_session.format import split
from omp_session.ops.stats import report


def _both(path: Path) -> tuple[Any, Any, list[int]]:
    """(one process, read ahead in a child, one item per child asked for: this pid if the later
    part was read here after all, else 0)."""
    with one_process():
        alone = report.read_file_usage(path).to_json()
    with split_watched(split) as asked:
        two = report.read_file_usage(path).to_json()
    return alone, two, asked


def test_generated_sessions_agree(make_corpus: Callable[[int, int], Path]) -> None:
    files = sorted(make_corpus(3, 60).glob("*.jsonl"))
    split_any = 0
    for path in files:
        alone, two, asked = _both(path)
        assert _same(two, alone), path.name
        assert os.getpid() not in asked
        split_any += bool(asked)
    assert split_any >= 30


@settings(max_examples=120, deadline=None)
@given(usages=st.lists(st.one_of(_usage(), _PLAIN_AND, st.just(_PLAIN), st.just(_PLAIN)), min_size=2, max_size=14),
       models=st.lists(st.sampled_from(['"m"', '"m2"', "null", '{"x":1}', "7"]), min_size=14, max_size=14))
def test_odd_usages_agree_on_both_sides_of_the_split(usages: list[str], models: list[str],
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}']
    parent = "null"
    for n, u in enumerate(usages):
        lines.append(f'{{"type":"message","id":"u{n}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{n % 10}.000Z",'
                     f'"message":{{"role":"user","content":"q","timestamp":1}}}}')
        # every fourth assistant hangs off the one before its user: a side branch (on_branch False)
        up = f'"u{n}"' if n % 4 else parent
        lines.append(f'{{"type":"message","id":"a{n}","parentId":{up},"timestamp":"2026-01-01T00:00:0{n % 10}.500Z",'
                     f'"message":{{"role":"assistant","content":[{{"type":"text","text":"a"}}],"provider":"p",'
                     f'"model":{models[n]},"usage":{u},"stopReason":"stop","timestamp":{1784982777969 + n}}}}}')
        parent = f'"a{n}"'
    path = tmp_path_factory.mktemp("odd") / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    alone, two, asked = _both(path)
    assert asked and os.getpid() not in asked
    assert _same(two, alone)


def test_a_child_that_dies_leaves_the_records_whole(tmp_path: Path, make_corpus: Callable[[int, int], Path]) -> None:
    path = max(make_corpus(3, 60).glob("*.jsonl"), key=lambda p: p.stat().st_size)
    with one_process():
        alone = report.read_file_usage(path).to_json()
    with dying_children(split):
        assert _same(report.read_file_usage(path).to_json(), alone)
