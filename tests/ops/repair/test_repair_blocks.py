"""Repair's block-at-a-time first pass (ops/repair/blocks.py) changes nothing repair decides: the
same output bytes, fixes and quarantine as taking every record alone and decoding each in full,
on mutated omp files; the line counts found by search equal those of a split."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.fuzz import campaign
from tests.fuzz.mutate import Seed, make_case

from omp_session.format.blobs import MemoryBlobStore
from omp_session.format.reader import Journal, scan_bytes
from omp_session.ops.repair import blocks, records
from omp_session.ops.repair.plan import plan_repair_bytes
from omp_session.ops.repair.tree import omp_crash_reason


def _outcome(data: bytes) -> Any:
    try:
        plan = plan_repair_bytes(data, blob_store=MemoryBlobStore())
    except Exception as e:  # a refusal: the same one either way
        return type(e).__name__, str(e)
    return (plan.output, [(f.code, f.message, f.line, f.offset, f.entry_id) for f in plan.fixes],
            [(q.line, q.offset, q.raw, q.reason) for q in plan.quarantined])


def _one_at_a_time(j: Journal, these: list[tuple[int, int]] | None = None) -> Iterator[blocks.Block]:
    for i, b in these if these is not None else [(0, len(j) - 1)]:
        for k in range(i, b + 1):
            yield blocks.Block(k, k, None, False)


@pytest.fixture(scope="module")
def seeds(make_corpus: Callable[[int, int], Path]) -> list[Seed]:
    return campaign.seeds_from(campaign.golden_paths() + sorted(make_corpus(5, 25).glob("*.jsonl")),
                               max_size=1 << 20)


def test_mutated_files_repair_the_same_by_blocks_and_one_by_one(seeds: list[Seed],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.ops.repair import plan

    # a rebuilt header's id and time are fresh on every plan: the same for both ways here
    monkeypatch.setattr(plan, "new_session_id", lambda: "01a23a0b-0000-7000-8000-000000000000")
    monkeypatch.setattr(plan, "iso_timestamp", lambda: "2026-01-01T00:00:00.000Z")
    proven = 0
    for number in range(150):
        data = make_case(seeds, 11, number).data
        by_blocks = _outcome(data)
        with monkeypatch.context() as m:
            m.setattr(records, "blocks", _one_at_a_time)
            assert _outcome(data) == by_blocks, number
        j = scan_bytes(data)
        proven += sum(records.read_records(j).safe)
    assert proven > 500  # the probe did prove records (most of them: 649 when written)


_NO = object()


def _record(message: Any = _NO, **entry: Any) -> bytes:
    import json

    value = {"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z", **entry}
    if message is not _NO:
        value["message"] = message
    return json.dumps(value).encode()


_ODD = [
    _record({"role": "assistant", "content": [], "usage": {"input": 1}}),
    _record({"role": "assistant", "content": [], "usage": {"cost": None}}),
    _record({"role": "assistant", "content": [], "usage": {"cost": {"total": 1}}}),
    _record({"role": "assistant", "content": [], "usage": None}),
    _record({"role": "assistant", "usage": {"cost": {"total": 1}}}),
    _record({"role": "assistant", "content": {"x": 1}}),
    _record({"role": "assistant", "content": "text", "stopReason": "error"}),
    _record({"role": "assistant", "content": "text", "stopReason": "stop"}),
    _record({"role": "toolResult", "toolName": "task", "details": {"usage": {"input": 1}}, "content": []}),
    _record({"role": "toolResult", "toolName": "read", "content": []}),
    _record({"role": "user", "content": "hi"}),
    _record(),
    _record(None),
    _record(type="model_usage", usage={"input": 1}),
    _record(type="model_usage", usage={"cost": {"total": 0}}),
    _record(type="ttsr_injection", injectedRules=["r"]),
    _record(type="ttsr_injection"),
    _record(type="ttsr_injection", injectedRules=3),
    _record(type="label", targetId="x", label="l"),
    _record(type=["message"]),
]


@pytest.mark.parametrize("raw", _ODD, ids=range(len(_ODD)))
def test_the_probe_proves_only_what_the_full_check_passes(raw: bytes) -> None:
    import orjson

    block = blocks.Block(0, 0, raw, True)
    safe = bytearray(1)
    blocks.prove_loads(block, safe)
    if safe[0]:
        assert omp_crash_reason(orjson.loads(raw)) is None


def test_the_probe_proves_the_usual_records() -> None:
    usual = [_ODD[2], _ODD[3], _ODD[7], _ODD[9], _ODD[10], _ODD[14], _ODD[15], _ODD[18]]
    block = blocks.Block(0, len(usual) - 1, b"\n".join(usual), True)
    safe = bytearray(len(usual))
    blocks.prove_loads(block, safe)
    assert list(safe) == [1] * len(usual)


def _split_stats(body: bytes) -> tuple[int, int]:
    blank = crlf = 0
    for line in body.split(b"\n"):
        blank += bool(line) and not line.strip(b" \t\r\n")
        crlf += bool(line) and line.endswith(b"\r")
    return blank, crlf


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"{}", b"a", b" ", b"\t", b"\r", b"\n", b"\n\n", b"\r\n", b" \n"]), max_size=60),
       st.integers(min_value=1, max_value=9))
def test_blank_and_crlf_lines_are_counted_as_a_split_counts_them(pieces: list[bytes], chunk: int) -> None:
    body = b"".join(pieces)
    data = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n' + body
    j = scan_bytes(data)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(records, "_CHUNK", chunk)
        got = records._line_stats(j)
    assert got == _split_stats(data[j.body_start:])
