"""Bugs found reviewing ``stats --blocks`` and the local zone (issue 15): shown times in the hour a
daylight-saving change repeats, blocks cut where a window starts, and an "active" block in a
window that ended before now."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import builders
from builders import usage
from omp_session.ops.stats.blocks import BLOCK_MS, HOUR_MS, billing_blocks, shown_time
from omp_session.ops.stats.group import local_zone, period_key
from omp_session.ops.stats.report import StatsItem, UsageRecord, stats

MIN = 60_000


def _ms(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp() * 1000


BERLIN = "CET-1CEST,M3.5.0,M10.5.0/3"


@pytest.fixture
def posix_tz(request: pytest.FixtureRequest) -> Iterator[None]:
    """The C library's zone from a POSIX rule (no IANA name, so ``_SystemLocal``): Berlin's rules
    unless the test names others."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = getattr(request, "param", BERLIN)
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.mark.parametrize("utc", ["2026-10-25T00:00:00+00:00", "2026-10-25T00:30:00+00:00",
                                 "2026-10-25T01:00:00+00:00", "2026-10-25T01:30:00+00:00"])
def test_a_local_time_in_the_repeated_hour_names_its_own_instant(posix_tz: None, utc: str) -> None:
    # 02:00-03:00 happens twice on 2026-10-25 in Berlin: first at +02:00, then at +01:00
    tz = local_zone()
    ms = _ms(utc)
    shown = shown_time(ms, tz)
    assert shown is not None and shown[11:13] == "02"
    assert _ms(shown) == ms, shown
    assert period_key(ms, "day", tz) == "2026-10-25"


@pytest.mark.parametrize("posix_tz", [BERLIN, "EST5EDT,M3.2.0,M11.1.0", "AEST-10AEDT,M10.1.0,M4.1.0/3",
                                      "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"], indirect=True)
def test_every_local_time_of_a_year_names_its_own_instant(posix_tz: None) -> None:
    tz = local_zone()
    start = _ms("2026-01-01T00:00:00+00:00")
    for quarter in range(0, 366 * 24 * 4):
        ms = start + quarter * 15 * MIN
        shown = shown_time(ms, tz)
        assert shown is not None and _ms(shown) == ms, shown
        assert datetime.fromtimestamp(ms / 1000, tz).timestamp() * 1000 == ms


# ----- blocks and a window --------------------------------------------------------------------------


def _session(tmp_path: Path, times: list[str]) -> Path:
    entries = []
    for n, ts in enumerate(times):
        entries.append(builders.entry(f"a{n}", f"a{n - 1}" if n else None, timestamp=ts,
                                      message=builders.assistant("ok", usage=usage(10 * (n + 1), 1, 0.25),
                                                                 timestamp=None)))
    return builders.write_session(tmp_path / "s.jsonl", entries, head=builders.header("s", cwd="/w"))


def test_a_window_does_not_move_where_blocks_start(tmp_path: Path) -> None:
    # the 15:20 request opens the 15:00 block; the 14:30 one is in the block opened at 10:00
    path = _session(tmp_path, ["2026-03-01T10:20:00.000Z", "2026-03-01T14:30:00.000Z", "2026-03-01T15:20:00.000Z"])
    now = _ms("2026-03-01T16:00:00+00:00")
    whole = stats([path], tz="UTC", cache=False).blocks(now)
    assert [(b.start, b.billed.input) for b in whole] == [(_ms("2026-03-01T10:00:00+00:00"), 30),
                                                          (_ms("2026-03-01T15:00:00+00:00"), 30)]
    windowed = stats([path], tz="UTC", since="2026-03-01T14:00", cache=False)
    blocks = windowed.blocks(now)
    # the same blocks, each counting only the requests inside the window
    assert [(b.kind, b.start, b.billed.input) for b in blocks] == [
        ("block", _ms("2026-03-01T10:00:00+00:00"), 20), ("block", _ms("2026-03-01T15:00:00+00:00"), 30)]
    active = blocks[-1]
    assert active.active and active.remaining == 4 * 60 * MIN
    assert sum(b.billed.input for b in blocks) == windowed.total.billed.input == 50
    assert windowed.blocks_dict(now)["blocks"][-1]["start"] == "2026-03-01T15:00:00+00:00"


def test_a_window_that_ended_before_now_has_no_active_block(tmp_path: Path) -> None:
    path = _session(tmp_path, ["2026-03-01T10:20:00.000Z", "2026-03-01T11:00:00.000Z", "2026-03-01T13:00:00.000Z"])
    now = _ms("2026-03-01T14:00:00+00:00")
    past = stats([path], tz="UTC", until="2026-03-01T12:00", cache=False)
    (block,) = past.blocks(now)
    # what the window holds stops at 12:00: no time left to show, no rate to project from it
    assert block.billed.input == 30 and not block.active and block.projected() is None
    doc = past.blocks_dict(now)["blocks"][0]
    assert doc["active"] is False and doc["projected"] is None and doc["remainingMinutes"] is None
    future = stats([path], tz="UTC", until="2026-03-02", cache=False)
    (live,) = future.blocks(now)
    assert live.active and live.projected() is not None


_T0 = _ms("2026-03-01T00:00:00+00:00")


def _item(ms: float, tokens: int) -> StatsItem:
    record = UsageRecord("assistant", ms, "p", "m", tokens, 0, 0, 0, tokens, 0.0, True, None, None)
    return StatsItem(record, "s.jsonl", "/w", "s.jsonl", True, True)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3 * 24 * 60), st.integers(1, 1000)), max_size=40),
       st.integers(0, 3 * 24 * 60), st.integers(1, 3 * 24 * 60))
def test_a_window_keeps_the_blocks_and_counts_what_is_inside(requests: list[tuple[int, int]], lo: int,
                                                               span: int) -> None:
    items = [_item(_T0 + m * MIN + 1000, tokens) for m, tokens in requests]
    since, until = _T0 + lo * MIN, _T0 + (lo + span) * MIN
    inside = [i for i in items if i.record.timestamp is not None and since <= i.record.timestamp < until]
    outside = [i.record.timestamp for i in items if i not in inside]
    whole = {b.start: b for b in billing_blocks(items, 0) if b.kind == "block"}
    cut = [b for b in billing_blocks(inside, 0, outside) if b.kind == "block"]
    assert sum(b.billed.requests for b in cut) == len(inside)
    for b in cut:
        assert b.start in whole and b.end == whole[b.start].end and b.start is not None
        assert b.start % HOUR_MS == 0 and b.end - b.start == BLOCK_MS
        assert b.billed.total_tokens == sum(i.record.total_tokens for i in inside
                                            if b.start <= (i.record.timestamp or 0) < b.end)
