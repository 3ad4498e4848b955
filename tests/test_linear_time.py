"""A coarse guard that odd shapes cost time linear in their bytes (issue 16 item 4).

``repair`` re-parsed a torn, deeply nested line once per ``{"`` on it (0.8 s at 6 KB, 34 s at
50 KB), and the exact parser's containers made every garbage collection walk the whole value
again. Each case times a task on a file and on one four times larger, and asserts the ratio is
below 8 (linear gives about 4, quadratic about 16); no absolute times. ``bench/shapes.py``
prints the full picture against normal files of the same size.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import omp_session
from omp_session.ops.repair.plan import plan_repair

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}'
USER = ('{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":%s,"timestamp":1}}')


def _deep(size: int) -> str:
    d = size // 2
    return USER % ("x", '"u"', "[" * d + "]" * d)


def _deep_object(size: int) -> str:
    d = size // 6
    return USER % ("x", '"u"', '"hi","x":' + '{"a":' * d + "1" + "}" * d)


def _torn_deep(size: int) -> str:
    d = size // 6
    return '{"a":' * d + "}" * d  # the innermost value is missing: no record ends on this line


def _view(path: Path) -> None:
    with omp_session.open(path) as s:
        s.build_session_context()
        s.build_session_context(transcript=True)
        for node in s.get_tree():
            node.children  # noqa: B018 - walk every node
        s.get_usage_statistics()


SHAPES: dict[str, Callable[[int], str]] = {"deep": _deep, "deep-object": _deep_object, "torn-deep": _torn_deep}
TASKS: dict[str, Callable[[Path], Any]] = {"view": _view, "repair": plan_repair, "validate": omp_session.validate}
# sizes where a quadratic cost shows clearly and a linear one stays well below a second
SIZES = {"repair": 20_000, "view": 100_000, "validate": 100_000}


def _seconds(task: Callable[[Path], Any], path: Path) -> float:
    best = float("inf")
    for _ in range(3):  # the fastest run: the least disturbed by other work on the machine
        t = time.perf_counter()
        task(path)
        best = min(best, time.perf_counter() - t)
    return best


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_four_times_the_bytes_cost_about_four_times_the_time(tmp_path: Path, shape: str, task: str) -> None:
    times = []
    for size in (SIZES[task], 4 * SIZES[task]):
        path = tmp_path / f"{shape}-{size}.jsonl"
        path.write_text(f"{HEADER}\n{USER % ('u', 'null', chr(34) + 'hi' + chr(34))}\n{SHAPES[shape](size)}\n")
        TASKS[task](path)  # warm: imports and caches are not the shape's cost
        times.append(_seconds(TASKS[task], path))
    assert times[1] / times[0] < 8, f"{shape} {task}: {times[0]:.3f}s -> {times[1]:.3f}s for 4x the bytes"
