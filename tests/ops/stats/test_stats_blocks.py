"""5-hour billing blocks (``stats --blocks``, issue 15): where blocks start and end, gaps, the active
block and its projection, time zones, and (hypothesis) that every request lands in exactly one block."""

from __future__ import annotations

from datetime import datetime
from itertools import pairwise
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import builders
from builders import usage
from omp_session.ops.stats.blocks import BLOCK_MS, HOUR_MS, Block, billing_blocks, shown_time
from omp_session.ops.stats.group import zone
from omp_session.ops.stats.report import StatsItem, UsageRecord, stats

MIN = 60_000


def _ms(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp() * 1000


def _item(ts: str | float | None, cost: float = 1.0, tokens: int = 10, model: str = "m", *,
          billed: bool = True) -> StatsItem:
    ms = _ms(ts) if isinstance(ts, str) else ts
    record = UsageRecord("assistant", ms, "p", model, tokens, 0, 0, 0, tokens, cost, True, None, None)
    return StatsItem(record, "s.jsonl", "/w", "s.jsonl", billed, True)


def _shape(blocks: list[Block]) -> list[tuple[str, str | None, str | None, int]]:
    utc = zone("UTC")
    return [(b.kind, shown_time(b.start, utc), shown_time(b.end, utc), b.billed.requests) for b in blocks]


NOON = _ms("2026-03-02T00:00:00+00:00")  # a "now" after every request below


def test_a_block_starts_on_the_hour_and_the_request_at_its_end_opens_the_next() -> None:
    items = [_item(f"2026-03-01T{t}:00+00:00") for t in ("10:20", "11:00", "14:59", "15:00", "15:10")]
    blocks = billing_blocks(items, NOON)
    assert _shape(blocks) == [("block", "2026-03-01T10:00:00+00:00", "2026-03-01T15:00:00+00:00", 3),
                              ("block", "2026-03-01T15:00:00+00:00", "2026-03-01T20:00:00+00:00", 2)]
    first = blocks[0]
    assert first.first == _ms("2026-03-01T10:20:00+00:00") and first.last == _ms("2026-03-01T14:59:00+00:00")
    assert not any(b.active for b in blocks)


def test_an_idle_stretch_is_a_gap_between_blocks() -> None:
    items = [_item("2026-03-01T10:20:00+00:00"), _item("2026-03-01T20:45:00+00:00")]
    assert _shape(billing_blocks(items, NOON)) == [
        ("block", "2026-03-01T10:00:00+00:00", "2026-03-01T15:00:00+00:00", 1),
        ("gap", "2026-03-01T15:00:00+00:00", "2026-03-01T20:00:00+00:00", 0),
        ("block", "2026-03-01T20:00:00+00:00", "2026-03-02T01:00:00+00:00", 1)]


def test_requests_out_of_order_are_placed_by_time() -> None:
    items = [_item("2026-03-01T20:45:00+00:00", cost=2), _item("2026-03-01T10:20:00+00:00", cost=1)]
    blocks = [b for b in billing_blocks(items, NOON) if b.kind == "block"]
    assert [b.billed.cost for b in blocks] == [1, 2]


def test_only_billed_usage_counts_and_untimed_requests_come_last() -> None:
    items = [_item("2026-03-01T10:20:00+00:00", cost=1), _item("2026-03-01T10:30:00+00:00", cost=4, billed=False),
             _item(None, cost=8, model="x")]
    blocks = billing_blocks(items, NOON)
    assert [(b.kind, b.billed.cost) for b in blocks] == [("block", 1), ("unknown", 8)]
    assert blocks[1].start is None and [m.key for m in blocks[1].models] == ["p/x"]


def test_models_of_a_block_costliest_first() -> None:
    items = [_item("2026-03-01T10:20:00+00:00", cost=1, model="cheap"),
             _item("2026-03-01T10:21:00+00:00", cost=3, model="dear"),
             _item("2026-03-01T10:22:00+00:00", cost=1, model="cheap")]
    (block,) = billing_blocks(items, NOON)
    assert [(m.key, m.billed.cost, m.billed.requests) for m in block.models] == [("p/dear", 3, 1), ("p/cheap", 2, 2)]
    assert block.to_dict(zone("UTC"))["models"][0] == {"key": "p/dear", "billed": block.models[0].billed.to_dict()}


def test_the_active_block_shows_time_elapsed_and_left_and_a_projection() -> None:
    items = [_item("2026-03-01T10:20:00+00:00", cost=1.5, tokens=300), _item("2026-03-01T11:00:00+00:00", cost=0.5,
                                                                                 tokens=100)]
    now = _ms("2026-03-01T12:00:00+00:00")
    (block,) = billing_blocks(items, now)
    assert block.active and block.elapsed == 120 * MIN and block.remaining == 180 * MIN
    # 2.00 spent in the 100 minutes since the first request: 280 minutes at that rate by 15:00
    projected = block.projected()
    assert projected is not None
    assert abs(projected[1] - 2.0 * 280 / 100) < 1e-9 and abs(projected[0] - 400 * 280 / 100) < 1e-6
    d = block.to_dict(zone("Europe/Berlin"))
    assert d["active"] is True and d["elapsedMinutes"] == 120 and d["remainingMinutes"] == 180
    assert d["projected"] == {"totalTokens": 1120, "cost": projected[1]}
    assert d["start"] == "2026-03-01T11:00:00+01:00" and d["end"] == "2026-03-01T16:00:00+01:00"


def test_a_projection_past_what_a_float_holds_is_null_not_an_overflow() -> None:
    # a damaged usage of 1e308 tokens: the projection is infinite; round() of it raised
    # OverflowError and `stats --blocks --json` (and serve's /costs) ended in a traceback
    items = [_item("2026-03-01T10:20:00+00:00", cost=1.5, tokens=10), _item("2026-03-01T11:00:00+00:00")]
    items[1].record.total_tokens = 1e308
    (block,) = billing_blocks(items, _ms("2026-03-01T12:00:00+00:00"))
    d = block.to_dict(zone("UTC"))
    assert d["projected"] == {"totalTokens": None, "cost": block.projected()[1]}  # type: ignore[index]


def test_token_counts_past_a_quadrillion_are_short_in_the_table() -> None:
    from omp_session.cli.stats import _short

    assert [_short(x) for x in (999.0, 1500.0, 2.5e6, 3.25e9, 4.5e12)] == ["999", "1.5k", "2.5M", "3.2B", "4.5T"]
    assert [_short(x) for x in (1e308, -2e20, float("inf"), float("-inf"), float("nan"))] == \
        ["1.0e+308", "-2.0e+20", "inf", "-inf", "?"]


def test_a_block_is_not_active_at_its_end_nor_before_it() -> None:
    items = [_item("2026-03-01T10:20:00+00:00")]
    for now in (_ms("2026-03-01T15:00:00+00:00"), _ms("2026-03-01T09:00:00+00:00")):
        (block,) = billing_blocks(items, now)
        assert not block.active and block.projected() is None and block.to_dict(zone("UTC"))["elapsedMinutes"] is None
    # at its first request there is no rate to project from yet
    (block,) = billing_blocks(items, _ms("2026-03-01T10:20:00+00:00"))
    assert block.active and block.projected() is None


def test_blocks_are_utc_hours_whatever_zone_shows_them() -> None:
    items = [_item("2026-03-01T10:20:00+00:00")]
    (block,) = billing_blocks(items, NOON)
    assert block.start == _ms("2026-03-01T10:00:00+00:00")
    assert shown_time(block.start, zone("Asia/Kolkata")) == "2026-03-01T15:30:00+05:30"
    assert shown_time(None, zone("UTC")) is None
    assert shown_time(8e15, zone("UTC")) == "+255479-11-28T14:13:20.000Z"  # beyond Python's dates: UTC ISO
    assert shown_time(1e16, zone("UTC")) is None  # beyond a JavaScript Date's


def test_a_time_no_date_can_hold_is_an_unknown_time() -> None:
    items = [_item("2026-03-01T10:20:00+00:00"), _item(1e20), _item(-1e20), _item(8.64e15)]
    assert [(b.kind, b.billed.requests) for b in billing_blocks(items, NOON)] == [("block", 1), ("unknown", 3)]


def test_the_report_builds_blocks_from_billed_usage_in_the_window(tmp_path: Path) -> None:
    entries = []
    for n, ts in enumerate(("2026-03-01T10:20:00.000Z", "2026-03-01T11:00:00.000Z", "2026-03-01T18:00:00.000Z")):
        entries.append(builders.entry(f"a{n}", f"a{n - 1}" if n else None, timestamp=ts,
                                      message=builders.assistant("ok", usage=usage(10 * (n + 1), 1, 0.25),
                                                                 timestamp=None)))
    path = builders.write_session(tmp_path / "s.jsonl", entries, head=builders.header("s", cwd="/w"))
    report = stats([path], tz="UTC", cache=False)
    assert [(b.kind, b.billed.input) for b in report.blocks(NOON)] == [("block", 30), ("gap", 0), ("block", 30)]
    doc = report.blocks_dict(NOON)
    assert list(doc) == ["tz", "now", "since", "until", "sessions", "files", "blocks", "total", "problems"]
    assert doc["now"] == "2026-03-02T00:00:00+00:00" and doc["total"]["billed"]["input"] == 60
    windowed = stats([path], tz="UTC", since="2026-03-01T11:00", cache=False)
    assert [b.billed.input for b in windowed.blocks(NOON)] == [20, 0, 30]
    # the window chooses what counts, not where blocks start: the 10:20 request opened this one
    assert windowed.blocks(NOON)[0].start == _ms("2026-03-01T10:00:00+00:00")
    assert windowed.blocks(NOON)[0].first == _ms("2026-03-01T11:00:00+00:00")


# ----- every request in exactly one block ----------------------------------------------------------

_T0 = _ms("2026-03-01T00:00:00+00:00")
_requests = st.lists(st.tuples(st.integers(0, 4 * 24 * 60), st.integers(0, 1000), st.integers(0, 500)),
                     max_size=60)


@settings(max_examples=300, deadline=None)
@given(_requests, st.integers(-60, 5 * 24 * 60))
def test_blocks_partition_the_requests(requests: list[tuple[int, int, int]], now_minute: int) -> None:
    items = [_item(_T0 + m * MIN + 7 * 1000, cost=cents / 100, tokens=tokens) for m, tokens, cents in requests]
    now = _T0 + now_minute * MIN
    out = billing_blocks(items, now)
    blocks = [b for b in out if b.kind == "block"]
    for item in items:
        t = item.record.timestamp
        assert t is not None
        assert sum(1 for b in blocks if b.start is not None and b.end is not None and b.start <= t < b.end) == 1
    assert sum(b.billed.requests for b in blocks) == len(items)
    assert sum(b.billed.total_tokens for b in blocks) == sum(tokens for _, tokens, _ in requests)
    assert abs(sum(b.billed.cost for b in blocks) - sum(c / 100 for _, _, c in requests)) < 1e-6
    for b in blocks:
        assert b.start is not None and b.end is not None and b.first is not None and b.last is not None
        assert b.start % HOUR_MS == 0 and b.end - b.start == BLOCK_MS <= 5 * HOUR_MS
        assert b.start <= b.first <= b.last < b.end
        assert sum(m.billed.requests for m in b.models) == b.billed.requests
    assert sum(1 for b in blocks if b.active) <= 1
    # in time order, blocks and gaps tile the time from the first block's start to the last one's
    # end without overlap, and a new block opens only when the request falls outside the last one
    for a, b in pairwise(out):
        assert a.end is not None and a.end == b.start
        assert "block" in (a.kind, b.kind)
        if b.kind == "block":
            assert b.first is not None and b.first >= a.end
    if out:
        assert out[0].kind == out[-1].kind == "block"
