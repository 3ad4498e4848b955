"""Time zones, date windows, grouping keys and token/cost totals for :mod:`omp_session.stats`.

Everything here is pure: it turns usage records (already deduplicated by ``stats``) into rows.
Days, weeks and months are calendar periods in one time zone (an IANA name, default the
machine's local zone), taken from each record's own timestamp, so a session that runs past
midnight counts on both days.
"""

from __future__ import annotations

import math
import os
import re
import time as _time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from omp_session.errors import StatsOptionError

__all__ = ["GROUPINGS", "TIME_GROUPINGS", "Group", "Totals", "Window", "group_rows", "local_zone", "model_key",
           "order_groups", "parse_window", "period_key", "zone", "zone_name"]

GROUPINGS: Final = ("session", "day", "week", "month", "model", "provider", "project")
TIME_GROUPINGS: Final = frozenset({"day", "week", "month"})
UNKNOWN: Final = "(unknown)"  # the key of records without a usable timestamp / model / provider

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# an age, as list/search/sync take it (cli/_options.WHEN): that long before now
_AGE = re.compile(r"(\d+)([dhm])")
_AGE_MS: Final = {"d": 86_400_000, "h": 3_600_000, "m": 60_000}


class _SystemLocal(tzinfo):
    """The C library's local time (``$TZ``, else ``/etc/localtime``), daylight saving included: a
    fixed offset taken "now" would put every record of the other half of the year an hour off."""

    def _offset(self, dt: datetime) -> timedelta:
        # the hour a change to standard time repeats is two instants: ``fold`` picks the later one
        # (PEP 495), as ``fromutc`` sets it; mktime alone picks one of the two whatever the fold
        wall = (dt.replace(tzinfo=None, fold=0) - _EPOCH) // timedelta(seconds=1)  # the wall clock read as UTC
        try:
            near = sorted({_time.localtime(wall + d).tm_gmtoff for d in (-86_400, 0, 86_400)}, reverse=True)
            fits = [o for o in near if _time.localtime(wall - o).tm_gmtoff == o]  # earliest instant first
        except (OverflowError, OSError, ValueError):
            fits = []
        if fits:
            return timedelta(seconds=fits[-1] if dt.fold else fits[0])
        # a wall time a change skipped: what the C library makes of it
        stamp = _time.mktime((dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, -1, -1, -1))
        return timedelta(seconds=_time.localtime(stamp).tm_gmtoff)

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(0) if dt is None else self._offset(dt)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "local"

    def fromutc(self, dt: datetime) -> datetime:
        stamp = (dt.replace(tzinfo=None) - _EPOCH).total_seconds()
        whole = math.floor(stamp)
        local = _time.localtime(whole)
        out = datetime(*local[:6], microsecond=dt.microsecond, tzinfo=self)
        # the second time round of an hour a change to standard time repeats is fold=1 (PEP 495):
        # the clock went back by ``back`` within the last day, and ``back`` seconds ago it read the same
        back = _time.localtime(whole - 86_400).tm_gmtoff - local.tm_gmtoff
        if back > 0 and _time.localtime(whole - back).tm_gmtoff == local.tm_gmtoff + back:
            out = out.replace(fold=1)
        return out


_EPOCH: Final = datetime(1970, 1, 1)


def local_zone() -> tzinfo:
    """The machine's zone: ``$TZ`` when it names an IANA zone, else the C library's local time."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    return _SystemLocal()


def zone(name: str | None) -> tzinfo:
    """``name`` as an IANA zone (``Europe/Berlin``, ``UTC``); None: the local zone."""
    if name is None or name == "":
        return local_zone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise StatsOptionError(f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin or UTC)") \
            from None


def zone_name(tz: tzinfo) -> str:
    return getattr(tz, "key", None) or tz.tzname(None) or str(tz)


@dataclass(frozen=True)
class Window:
    """Records with ``since <= timestamp < until`` (ms since the epoch); None: unbounded."""

    since: float | None = None
    until: float | None = None

    def __contains__(self, ms: float | None) -> bool:
        if self.since is None and self.until is None:
            return True
        if ms is None:
            return False  # a record of unknown time cannot be placed inside a window
        return (self.since is None or ms >= self.since) and (self.until is None or ms < self.until)

    @property
    def bounded(self) -> bool:
        return self.since is not None or self.until is not None


def _instant(text: str, tz: tzinfo, end_of_day: bool, what: str) -> float:
    text = text.strip()
    age = _AGE.fullmatch(text)
    if age is not None:
        return _time.time() * 1000 - int(age.group(1)) * _AGE_MS[age.group(2)]
    try:
        if _DATE.fullmatch(text):
            day = date.fromisoformat(text)
            if end_of_day and day == date.max:  # no day after it to start at: its end is 24 hours on
                return datetime.combine(day, time(0), tz).timestamp() * 1000 + 86_400_000
            if end_of_day:
                day += timedelta(days=1)
            moment = datetime.combine(day, time(0), tz)
        else:
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=tz)
    except ValueError:
        raise StatsOptionError(f"{what} {text!r} is not a date, time or age (try 2026-05-14, "
                               f"2026-05-14T10:00:00+02:00 or 7d)") from None
    return moment.timestamp() * 1000


def parse_window(since: str | None, until: str | None, tz: tzinfo) -> Window:
    """``--since``/``--until``: a date (``YYYY-MM-DD``, a calendar day in ``tz``; ``--until`` includes
    that whole day), an ISO time (without an offset: in ``tz``; ``--until`` is exclusive), or an age
    (``7d``, ``12h``, ``30m``: that long before now, whatever the zone)."""
    lo = None if since is None else _instant(since, tz, False, "--since")
    hi = None if until is None else _instant(until, tz, True, "--until")
    if lo is not None and hi is not None and hi <= lo:
        raise StatsOptionError(f"--until {until} is not after --since {since}")
    return Window(lo, hi)


_MINUTE = 60_000
_SPLIT: Final = ""  # a minute whose instants fall in two periods: each is looked up itself
# the last minute looked up: (minute, by, zone, its period once a second record confirmed it, else
# None). A report takes a session's records in time order, often seconds apart, and each look-up
# in a zone costs a few calls to the C library's localtime; records minutes apart pay one look-up.
_LAST: list[tuple[int, str, Any, str | None]] = [(0, "", None, None)]


def period_key(ms: float | None, by: str, tz: tzinfo) -> str:
    """The calendar day (``2026-03-29``), ISO week (``2026-W13``) or month (``2026-03``) of ``ms`` in ``tz``."""
    if ms is None or not math.isfinite(ms):
        return UNKNOWN
    minute = int(ms // _MINUTE)
    # the C library's zone is whatever TZ said at the last tzset(): part of what must match
    zone = (tz, _time.tzname, _time.timezone, _time.altzone) if isinstance(tz, _SystemLocal) else tz
    last_minute, last_by, last_zone, period = _LAST[0]
    if last_minute != minute or last_by != by or last_zone != zone:
        _LAST[0] = (minute, by, zone, None)
        return _period_key(ms, by, tz)
    if period is None:
        # a minute's instants share a period when its first and last millisecond do: a zone's
        # clock changes at whole seconds, and never twice within a minute
        first = _period_key(minute * _MINUTE, by, tz)
        period = first if first == _period_key(minute * _MINUTE + _MINUTE - 1, by, tz) else _SPLIT
        _LAST[0] = (minute, by, zone, period)
    return period if period != _SPLIT else _period_key(ms, by, tz)


def _period_key(ms: float, by: str, tz: tzinfo) -> str:
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz)
    except (OverflowError, OSError, ValueError):
        return UNKNOWN
    if by == "day":
        return moment.date().isoformat()
    if by == "month":
        return f"{moment.year:04d}-{moment.month:02d}"
    year, week, _ = moment.isocalendar()
    return f"{year:04d}-W{week:02d}"


@dataclass
class Totals:
    """Token and cost sums of some usage records, in the order they were added."""

    input: int | float = 0
    output: int | float = 0
    cache_read: int | float = 0
    cache_write: int | float = 0
    total_tokens: int | float = 0
    cost: float = 0.0
    requests: int = 0  # usage records summed: assistant messages, side calls, unmatched task results

    def add(self, r: Any) -> None:
        self.input += r.input
        self.output += r.output
        self.cache_read += r.cache_read
        self.cache_write += r.cache_write
        self.total_tokens += r.total_tokens
        self.cost += r.cost
        self.requests += 1

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input, "output": self.output, "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write, "totalTokens": self.total_tokens, "cost": self.cost,
                "requests": self.requests}


@dataclass
class Group:
    """One row: a key (a session path, a day, a model...) and its billed and current-branch totals."""

    key: str
    billed: Totals = field(default_factory=Totals)
    current: Totals = field(default_factory=Totals)
    extra: dict[str, Any] = field(default_factory=dict)  # by session: id, title, cwd, created, omp usage
    models: list[Group] | None = None  # by day, week or month: one row per model, costliest first

    def to_dict(self, *, models: bool = True) -> dict[str, Any]:
        d = {"key": self.key, **self.extra, "billed": self.billed.to_dict(), "current": self.current.to_dict()}
        if models and self.models is not None:
            d["models"] = [m.to_dict() for m in self.models]
        return d


def model_key(record: Any) -> str:
    """``provider/model`` of a usage record; the model alone when no provider is recorded."""
    r = record
    return f"{r.provider}/{r.model}" if r.provider and r.model else (r.model or UNKNOWN)


def group_rows(items: Iterable[Any], key: Callable[[Any], str]) -> dict[str, Group]:
    """Sum ``items`` (objects with ``record``, ``billed``, ``current``) per ``key(item)``, first-seen order."""
    groups: dict[str, Group] = {}
    for item in items:
        k = key(item)
        g = groups.get(k)
        if g is None:
            g = groups[k] = Group(k)
        if item.billed:
            g.billed.add(item.record)
        if item.current:
            g.current.add(item.record)
    return groups


def order_groups(groups: Iterable[Group], by: str) -> list[Group]:
    """Periods in time order (unknown last); everything else by billed cost, then tokens, then key."""
    rows = list(groups)
    if by in TIME_GROUPINGS:
        return sorted(rows, key=lambda g: (g.key == UNKNOWN, g.key))
    if by == "session":
        return sorted(rows, key=lambda g: (str(g.extra.get("created") or ""), g.key))
    return sorted(rows, key=lambda g: (-g.billed.cost, -g.billed.total_tokens, g.key))
