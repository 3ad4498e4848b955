"""A coarse guard that odd shapes cost work linear in their size (issue 16 item 4).

No clock: the work is the number of function calls (Python and C) the profiler sees while a file
is opened, every view is built, validated, externalized and its repair planned. Doubling a pathological shape must
not more than about double it (a quadratic step would quadruple it). bench/shapes.py measures the
time itself, against a normal file of the same size.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import omp_session
from omp_session.ops.repair.plan import plan_repair
from omp_session.ops.size.externalize import externalize

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}'
USER = ('{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1}}')
ASSISTANT = ('{"type":"message","id":"a","parentId":"x","timestamp":"2026-01-01T00:00:03.000Z","message":'
             '{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"anthropic-messages",'
             '"provider":%s,"model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,'
             '"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},'
             '"stopReason":"stop","timestamp":3}}')
IMAGE = '{"type":"image","data":"' + "QUJD" * 400 + '","mimeType":"image/png"}'


def _label(i: str, parent: str) -> str:
    return (f'{{"type":"label","id":"{i}","parentId":"{parent}","timestamp":"2026-01-01T00:00:02.000Z",'
            '"targetId":null,"label":null}')


def _lines(shape: str, n: int) -> list[str]:
    """The records after the header and a user message; ``n`` sets the size."""
    if shape == "bracket-line":  # fuzz seed 1 case 292: an unclosed line swallows the next one
        return ["[" * n, _label("x", "u")]
    if shape == "deep-provider":  # fuzz seed 2 case 1359: a field the context view stringifies
        return [_label("x", "u"), ASSISTANT % ("[" * n + '"p"' + "]" * n)]
    if shape == "deep-call-id":  # fuzz seed 1 case 166
        return ['{"type":"message","id":"x","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":'
                '{"role":"toolResult","toolCallId":' + '{"type":' * n + '"k"' + "}" * n
                + ',"toolName":"t","content":[{"type":"text","text":"r"}],"isError":false,"timestamp":2}}']
    if shape == "deep-image":  # the persistence walk (externalize) reaches it
        return ['{"type":"message","id":"x","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":'
                '{"role":"user","content":[' + "[" * n + IMAGE + "]" * n + '],"timestamp":2}}']
    if shape == "deep":
        return ['{"type":"message","id":"x","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":'
                '{"role":"user","content":' + "[" * n + "]" * n + ',"timestamp":2}}']
    if shape == "deep-object":
        return ['{"type":"message","id":"x","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":'
                '{"role":"user","content":"hi","x":' + '{"a":' * n + "1" + "}" * n + ',"timestamp":2}}']
    if shape == "torn-deep":  # the innermost value is missing: repair used to re-parse per '{"'
        return ['{"a":' * n + "}" * n, _label("x", "u")]
    if shape == "dup-chain":  # fuzz seed 1 case 1880: a chain below an id that is its own ancestor
        chain = [_label("d", "u"), _label("b", "d"), _label("d", "b")]
        parent = "d"
        for k in range(n // 20):
            chain.append(_label(f"c{k}", parent))
            parent = f"c{k}"
        return chain
    raise ValueError(shape)


def _work(fn: Callable[[], Any]) -> int:
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def _everything(path: Path) -> None:
    with omp_session.open(path) as s:
        s.get_entries()
        s.get_branch()
        sum(1 for _ in s.get_tree().walk())
        s.build_session_context()
        s.build_session_context(transcript=True)
        s.get_usage_statistics()
    omp_session.validate(path)
    externalize(path, None)
    plan_repair(path)


@pytest.mark.parametrize("shape", ["bracket-line", "deep", "deep-call-id", "deep-image", "deep-object",
                                   "deep-provider", "dup-chain", "torn-deep"])
def test_doubling_an_odd_shape_at_most_doubles_the_work(shape: str, tmp_path: Path) -> None:
    work = []
    for n in (10_000, 20_000):
        path = tmp_path / f"{shape}-{n}.jsonl"
        path.write_text("\n".join([HEADER, USER, *_lines(shape, n)]) + "\n")
        _everything(path)  # imports and first-use caches out of the count
        work.append(_work(lambda path=path: _everything(path)))  # type: ignore[misc]
    assert work[1] <= 2.5 * work[0], f"{shape}: {work[0]:,} calls at n=10,000, {work[1]:,} at n=20,000"
