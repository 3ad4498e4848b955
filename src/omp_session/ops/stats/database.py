"""``stats`` of a PostgreSQL or SQLite store from its derived tables (``stats --store URL``;
docs/stats.md, docs/team.md): the database adds the usage up, no session is read.

The numbers are ops/stats/report.py's on the same sessions, to the last bit: the derived rows are
its usage records, placed by the same rules (store/derived/trees.py), summed in its order
(store/derived/stats_query.py); the rows, groups and totals are its own classes, ordered and
shown by the same code. Two ways to the same report:

* grouped: one query per report (and one for the total): the sums per day, week or month (with
  each period's models), model, provider, project or session;
* placed: every record of the window, in ops/stats' order, grouped here by ops/stats' own code:
  what ``--blocks`` and the HTML page need (they look at the records), and what a time zone
  without an IANA name needs (PostgreSQL cannot take the C library's local time).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from omp_session.errors import StatsOptionError, StoreError
from omp_session.paths import project_dir_name
from omp_session.store.derived.stats_query import (
    Grouped,
    Selection,
    TimeKey,
    billed_times,
    counts,
    grouped,
    placed_rows,
    tops,
)
from omp_session.store.derived.tables import DerivedTables

from .blocks import BLOCK_MS
from .group import GROUPINGS, TIME_GROUPINGS, Group, Totals, order_groups, parse_window, period_key, zone
from .report import FileUsage, StatsItem, StatsReport, UsageRecord, group_items, session_extra, total_of

__all__ = ["known_zone", "stats_in_tables", "zone_sql_name"]

# to_char's patterns for ops/stats' period keys (``2026-03-29``, ``2026-W13``, ``2026-03``)
_FORMATS: Final = {"day": "YYYY-MM-DD", "week": 'IYYY-"W"IW', "month": "YYYY-MM"}
# record times Python has a date for in any zone (a day inside its years 1-9999); outside them a
# period is (unknown), as period_key says for times Python cannot place
_LO: Final = datetime(1, 1, 2, tzinfo=UTC).timestamp() * 1000
_HI: Final = datetime(9999, 12, 31, tzinfo=UTC).timestamp() * 1000


def zone_sql_name(tz: tzinfo) -> str | None:
    """The IANA name PostgreSQL knows ``tz`` by: a ZoneInfo's key; for the C library's local time
    the zone /etc/localtime links to; None when there is none."""
    key = getattr(tz, "key", None)
    if isinstance(key, str):
        return key
    if os.environ.get("TZ"):  # a POSIX rule (CET-1CEST): the C library's, not /etc/localtime's
        return None
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return None
    marker = "/zoneinfo/"
    if marker not in target:
        return None
    name = target.split(marker, 1)[1]
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None
    return name


def known_zone(tables: DerivedTables, name: str) -> bool:
    """Whether PostgreSQL knows the time zone ``name``."""
    try:
        tables.rows("SELECT now() AT TIME ZONE ?", (name,), "checking the time zone")
    except StoreError:
        return False
    return True


def _number(value: Any, fractional: bool) -> int | float:
    """A sum as ops/stats holds it: an int where every count summed was a whole JSON number."""
    if value is None:
        return 0
    return float(value) if fractional else int(value)


def _totals(sums: Sequence[Any]) -> Totals:
    requests, *counts_, cost, bits = sums
    t = Totals()
    t.input, t.output, t.cache_read, t.cache_write, t.total_tokens = (
        _number(v, bool(int(bits or 0) & (1 << i))) for i, v in enumerate(counts_))
    t.cost = 0.0 if cost is None else float(cost)
    t.requests = int(requests or 0)
    return t


def _group(g: Grouped, key: str) -> Group:
    return Group(key, _totals(g.billed), _totals(g.current))


def _head(top: tuple[str, str | None, str | None]) -> FileUsage:
    key, head, omp = top
    id_, title, cwd, created = json.loads(head) if head else (None, None, None, None)
    usage = None if omp is None else {k: None if isinstance(v, float) and not math.isfinite(v) else v
                                      for k, v in json.loads(omp).items()}
    return FileUsage(key, id_, title, cwd, created, usage, [])


def _fractional(rows: list[Grouped]) -> bool:
    return any(int(g.billed[-1] or 0) or int(g.current[-1] or 0) for g in rows)


def stats_in_tables(tables: DerivedTables, sessions: Sequence[str] | None = None, *, all_sessions: bool = False,
                    root: str, cwd: str | None = None, by: str = "session", since: str | None = None,
                    until: str | None = None, tz: str | None = None, user: str | None = None,
                    host: str | None = None, placed: bool = False) -> StatsReport:
    """:func:`omp_session.ops.stats.report.stats` of a store, from its derived tables (made and
    kept by ``index --store`` and ``sync --to``; the caller checks they are of this layout).
    ``sessions``: top-level keys; else every top-level session (``all_sessions``: whichever
    machine's root it is under, as ``search --store``), or those of project ``cwd``'s bucket under
    ``root``. ``user``/``host``: only sessions whose namespace has this user/host. ``placed``:
    keep every record in ``report.items`` (for ``blocks()``, ``crosstab`` and the HTML page)."""
    if by not in GROUPINGS:
        raise StatsOptionError(f"cannot group by {by!r} (choose one of {', '.join(GROUPINGS)})")
    zone_ = zone(tz)
    window = parse_window(since, until, zone_)
    prefix = None
    if sessions is None and not all_sessions:
        prefix = root + project_dir_name(cwd if cwd is not None else os.getcwd()) + "/"
    sel = Selection(None if sessions is None else list(dict.fromkeys(sessions)), prefix, user, host,
                    window.since, window.until)
    name = zone_sql_name(zone_) if tables.dialect == "postgres" and by in TIME_GROUPINGS else None
    if name is not None and not known_zone(tables, name):
        name = None  # a zone newer than the server's time zone database
    time_key = None
    if by in TIME_GROUPINGS:
        if tables.dialect == "postgres" and name is None:
            placed = True  # no zone PostgreSQL knows: the periods are cut here
        time_key = TimeKey(name, _FORMATS[by], _LO, _HI, lambda ms: period_key(ms, by, zone_))
    if placed:
        return _placed(tables, sel, by, zone_, window)
    top_list = tops(tables, sel) if by == "session" else []
    n_sessions, n_files = counts(tables, sel)
    rows, total = grouped(tables, sel, "period" if time_key else by, time_key, models=time_key is not None)
    if total is not None and _fractional([total]):  # counts that are not whole numbers: in ops/stats' order too
        rows, total = grouped(tables, sel, "period" if time_key else by, time_key, models=time_key is not None,
                              ordered_counts=True)
    groups: dict[str, Group] = {}
    models: dict[str, list[Group]] = {}
    for g in rows:
        key = json.loads(g.key) if by == "project" else g.key
        if g.model is None:
            groups[key] = _group(g, key)
        else:
            models.setdefault(key, []).append(_group(g, g.model))
    for key, group in groups.items():
        if time_key is not None:
            group.models = order_groups(models.get(key, []), "model")
    report_sessions = [_head(t) for t in top_list]
    if by == "session":
        for fu in report_sessions:
            g_ = groups.get(fu.path)
            if g_ is None and not window.bounded:
                g_ = groups[fu.path] = Group(fu.path)
            if g_ is not None:
                g_.extra = session_extra(fu)
    else:  # only their number is shown: not read
        report_sessions = [FileUsage("", None, None, None, None, None, [])] * n_sessions
    whole = Group("total") if total is None else _group(total, "total")
    return StatsReport(by, zone_, window, order_groups(groups.values(), by), whole, [], report_sessions, n_files, [])


def _placed(tables: DerivedTables, sel: Selection, by: str, tz: tzinfo, window: Any) -> StatsReport:
    """Every record of the window placed as ops/stats places it, grouped by ops/stats' own code."""
    items: list[StatsItem] = []
    for (ts, kind, provider, model, *values, cost, bits, top, project, key, billed, current) in placed_rows(tables, sel):
        inp, out, read, write, total_ = (_number(v, bool(int(bits) & (1 << i))) for i, v in enumerate(values))
        record = UsageRecord(kind, None if ts is None else float(ts), provider, model, inp, out, read, write, total_,
                             float(cost), bool(current), None, None)
        items.append(StatsItem(record, top, json.loads(project), key, bool(billed), bool(current)))
    report_sessions = [_head(t) for t in tops(tables, sel)]
    _n, files = counts(tables, sel)
    total = total_of(items)
    groups = group_items(items, report_sessions, by, tz, window)
    return StatsReport(by, tz, window, groups, total, items, report_sessions, files, [],
                       _outside(tables, sel, window.since))


def _outside(tables: DerivedTables, sel: Selection, since: float | None) -> list[float]:
    """The times of billed records before ``since`` that place the 5-hour blocks the window's
    requests fall in: back to the first request after a 5-hour pause (the block it opens cannot
    depend on anything earlier: billing_blocks opens one at the first request past a block's end)."""
    if since is None:
        return []
    span = 24 * 3_600_000.0
    while True:
        lo = since - span
        times = billed_times(tables, sel, lo, since)
        if not times:
            return []  # nothing in the day (or more) before: the window's first request opens a block
        for i in range(len(times) - 1, -1, -1):
            if times[i] - (times[i - 1] if i else lo) >= BLOCK_MS:
                return times[i:]
        if lo < _LO:
            return times
        span *= 4
