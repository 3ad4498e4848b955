"""5-hour billing blocks (``omp-session stats --blocks``), as ccusage's ``blocks`` report shows them.

A block opens at its first request's time floored to the whole hour (UTC hours, so a block is the
same whatever ``--tz`` shows it in) and lasts five hours; the first request at or after its end
opens the next block. Uncovered time between two blocks is a gap. Only billed usage counts: every
request once, subagents and side calls included (what ``stats`` places as billed). A window
(``--since``/``--until``) chooses which requests count, not where blocks start: the requests it
leaves out still place the blocks, as they did on the bill.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any, Final

from omp_session.js.date import to_iso

from .group import Group, Totals, group_rows, model_key, order_groups

__all__ = ["BLOCK_MS", "HOUR_MS", "Block", "billing_blocks", "shown_time"]

HOUR_MS: Final = 3_600_000
BLOCK_MS: Final = 5 * HOUR_MS
# a time a JavaScript Date can hold, block end included; beyond it a "time" tells nothing (as a
# day, such a record is "(unknown)" too)
_LIMIT: Final = 8.64e15 - BLOCK_MS


@dataclass
class Block:
    """A 5-hour block of requests, a gap between two blocks, or the requests without a usable time."""

    kind: str  # "block" | "gap" | "unknown"
    start: float | None = None  # ms since the epoch; None for the requests without a time
    end: float | None = None  # a block: start + 5 h; a gap: the next block's start
    first: float | None = None  # the block's first and last request
    last: float | None = None
    billed: Totals = field(default_factory=Totals)
    models: list[Group] = field(default_factory=list)  # costliest first
    active: bool = False  # "now" is inside the block
    now: float | None = None  # the "now" the block was judged active at

    @property
    def elapsed(self) -> float | None:
        return None if not self.active or self.start is None or self.now is None else self.now - self.start

    @property
    def remaining(self) -> float | None:
        return None if not self.active or self.end is None or self.now is None else self.end - self.now

    def projected(self) -> tuple[float, float] | None:
        """Total tokens and cost at the block's end if spending goes on at the rate seen from its
        first request to now; None for a block that is not active or has no time behind it yet."""
        if not self.active or self.first is None or self.now is None or self.end is None or self.now <= self.first:
            return None
        scale = (self.end - self.first) / (self.now - self.first)
        return self.billed.total_tokens * scale, self.billed.cost * scale

    def to_dict(self, tz: tzinfo) -> dict[str, Any]:
        elapsed, remaining, projected = self.elapsed, self.remaining, self.projected()
        return {
            "kind": self.kind, "start": shown_time(self.start, tz), "end": shown_time(self.end, tz),
            "firstRequest": shown_time(self.first, tz), "lastRequest": shown_time(self.last, tz),
            "active": self.active,
            "elapsedMinutes": None if elapsed is None else int(elapsed // 60_000),
            "remainingMinutes": None if remaining is None else -int(-remaining // 60_000),
            "billed": self.billed.to_dict(),
            "projected": None if projected is None else {
                # (a damaged usage may make it infinite, which no integer is)
                "totalTokens": round(projected[0]) if math.isfinite(projected[0]) else None, "cost": projected[1]},
            "models": [{"key": m.key, "billed": m.billed.to_dict()} for m in self.models],
        }


def shown_time(ms: float | None, tz: tzinfo) -> str | None:
    """``ms`` as an ISO time with ``tz``'s offset (``2026-03-01T10:00:00+01:00``); UTC ISO where
    Python's dates end (years beyond 9999); None stays None."""
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return to_iso(ms) if abs(ms) <= 8.64e15 else None


def _timed(t: float | None) -> bool:
    return t is not None and abs(t) <= _LIMIT


def _close(items: list[Any], start: float, now: float | None) -> Block:
    times = [item.record.timestamp for item in items]
    block = Block("block", start, start + BLOCK_MS, times[0], times[-1], now=now)
    for item in items:
        block.billed.add(item.record)
    block.models = order_groups(group_rows(items, lambda item: model_key(item.record)).values(), "model")
    block.active = now is not None and start <= now < start + BLOCK_MS
    return block


def billing_blocks(items: Iterable[Any], now: float | None, others: Iterable[float | None] = ()) -> list[Block]:
    """The blocks (with gaps between them) of the billed ``items`` (objects with ``record`` and
    ``billed``, as :class:`StatsItem`), in time order; requests without a time last, as one
    ``unknown`` block. ``now`` (ms) decides which block is active (None: none is). ``others``: the
    times of billed requests that do not count here (outside a window); they place the blocks
    as they did on the bill, and a block with only such requests is not shown."""
    timed: list[tuple[float, Any]] = []
    untimed: list[Any] = []
    for item in items:
        if item.billed:
            t = item.record.timestamp
            if _timed(t):
                timed.append((t, item))
            else:
                untimed.append(item)
    timed += [(t, None) for t in others if t is not None and _timed(t)]
    timed.sort(key=lambda pair: pair[0])  # stable: equal times keep the files' order
    blocks: list[Block] = []
    run: list[Any] = []
    start: float | None = None
    for t, item in timed:
        if start is not None and t >= start + BLOCK_MS:
            if run:
                blocks.append(_close(run, start, now))
            run, start = [], None
        if start is None:
            start = t - t % HOUR_MS
        if item is not None:
            run.append(item)
    if run and start is not None:
        blocks.append(_close(run, start, now))
    out: list[Block] = []
    for block in blocks:
        if out and out[-1].end is not None and block.start is not None and block.start > out[-1].end:
            out.append(Block("gap", out[-1].end, block.start))
        out.append(block)
    if untimed:
        rest = Block("unknown")
        for item in untimed:
            rest.billed.add(item.record)
        rest.models = order_groups(group_rows(untimed, lambda item: model_key(item.record)).values(), "model")
        out.append(rest)
    return out
