"""``period_key`` remembers each minute's period (a report looks up every record's, and each
look-up costs a few localtime calls): what it gives is what the zone says of the instant itself,
around clock changes, in zones with half- and quarter-hour offsets and under a changed ``TZ``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.ops.stats import group
from omp_session.ops.stats.group import local_zone, period_key

# instants (ms) near midnights and clock changes: Berlin's 2026 changes, Lord Howe's half-hour
# one, Kathmandu's +05:45 midnight, Samoa's skipped day (2011-12-30), a leap-second-free UTC midnight
_NEAR = [datetime(2026, 3, 29, 1, tzinfo=UTC), datetime(2026, 10, 25, 1, tzinfo=UTC),
         datetime(2026, 4, 4, 15, tzinfo=UTC), datetime(2026, 1, 1, 18, 15, tzinfo=UTC),
         datetime(2011, 12, 30, 10, tzinfo=UTC), datetime(2026, 12, 31, 23, 59, tzinfo=UTC)]
_ZONES = ["Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Apia", "UTC", "America/St_Johns"]


def _direct(ms: float, by: str, tz: object) -> str:
    return group._period_key(ms, by, tz)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(near=st.sampled_from(_NEAR), delta=st.floats(min_value=-2 * 86_400_000, max_value=2 * 86_400_000),
       zone=st.sampled_from(_ZONES), by=st.sampled_from(["day", "week", "month"]))
def test_the_remembered_period_is_the_instants_own(near: datetime, delta: float, zone: str, by: str) -> None:
    ms = near.timestamp() * 1000 + delta
    tz = ZoneInfo(zone)
    assert period_key(ms, by, tz) == _direct(ms, by, tz)
    # a second look (from the memo) and the minute's other instants agree too
    assert period_key(ms, by, tz) == _direct(ms, by, tz)
    edge = (ms // 60_000) * 60_000
    for other in (edge, edge + 59_999, edge + 59_999.5):
        assert period_key(other, by, tz) == _direct(other, by, tz)


@pytest.fixture
def restore_tz() -> Iterator[None]:
    old = os.environ.get("TZ")
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_the_c_librarys_zone_changed_by_tz_is_not_answered_from_memory(restore_tz: None) -> None:
    ms = datetime(2026, 6, 1, 22, 30, tzinfo=UTC).timestamp() * 1000
    os.environ["TZ"] = "UTC0"
    time.tzset()
    tz = group._SystemLocal()
    assert period_key(ms, "day", tz) == "2026-06-01"
    assert period_key(ms + 1, "day", tz) == "2026-06-01"  # a second record: the minute is remembered
    os.environ["TZ"] = "CET-1CEST,M3.5.0,M10.5.0/3"  # 00:30 the next day there
    time.tzset()
    assert period_key(ms, "day", tz) == "2026-06-02" == _direct(ms, "day", tz)
    assert isinstance(local_zone(), group._SystemLocal | ZoneInfo)
