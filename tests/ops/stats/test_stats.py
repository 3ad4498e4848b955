"""``omp_session.ops.stats.report`` and ``omp-session stats``: totals against omp's own getUsageStatistics,
subagent and fork deduplication, calendar grouping in time zones, the cache and every output."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from functools import partial
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import builders
from builders import ORACLE, usage
from omp_session.cli import cli
from omp_session.cli.stats import CSV_FIELDS
from omp_session.errors import StatsOptionError
from omp_session.model.usage import usage_statistics
from omp_session.ops.stats.group import parse_window, period_key, zone
from omp_session.ops.stats.report import CACHE_NAME, StatsCache, read_file_usage, stats

TOKENS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


# ---------------------------------------------------------------------------------------------------
# Building sessions


class Builder:
    """A v3 session written the way omp writes one: header, then entries chained by parentId."""

    def __init__(self, sid: str, created: str, cwd: str = "/work/app") -> None:
        self.header = builders.header(sid, timestamp=created, cwd=cwd)
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self.n = 0

    def add(self, ts: str, parent: str | bool | None = True, **fields: Any) -> str:
        self.n += 1
        eid = f"{self.header['id'][:4]}{self.n:04d}"
        pid = self.leaf if parent is True else (None if parent is False else parent)
        self.entries.append(builders.entry(eid, pid, timestamp=ts, **fields))
        self.leaf = eid
        return eid

    def user(self, ts: str, text: str = "hi", parent: str | bool | None = True) -> str:
        return self.add(ts, parent, message=builders.user(text, timestamp=_ms(ts)))

    def assistant(self, ts: str, usage: dict[str, Any], model: str = "claude-sonnet-4-5",
                  provider: str = "anthropic", parent: str | bool | None = True) -> str:
        return self.add(ts, parent, message=builders.assistant("ok", provider=provider, model=model, usage=usage,
                                                               timestamp=_ms(ts)))

    def task(self, ts: str, results: list[tuple[str, dict[str, Any]]]) -> str:
        total = usage(sum(u["input"] for _, u in results), sum(u["output"] for _, u in results),
                       sum(u["cost"]["total"] for _, u in results))
        details = {"projectAgentsDir": None, "totalDurationMs": 5,
                   "results": [{"index": n, "id": agent, "agent": "task", "usage": u,
                                "resolvedModel": "openai/gpt-5.1-codex:high"} for n, (agent, u) in enumerate(results)],
                   "usage": total}
        return self.add(ts, message={"role": "toolResult", "toolCallId": "call1", "toolName": "task",
                                     "content": [{"type": "text", "text": "done"}], "isError": False,
                                     "details": details, "timestamp": _ms(ts)})

    def model_usage(self, ts: str, usage: dict[str, Any]) -> str:
        # side calls hang off the branch without moving the leaf (spec S3.15)
        leaf = self.leaf
        eid = self.add(ts, type="model_usage", purpose="title", api="openai-responses", provider="openai",
                       model="gpt-5-mini", usage=usage, stopReason="stop")
        self.leaf = leaf
        return eid

    def write(self, path: Path) -> Path:
        return builders.write_jsonl(path, [self.header, *self.entries], ensure_ascii=True)


def _ms(ts: str) -> int:
    from datetime import datetime
    return int(datetime.fromisoformat(ts).timestamp() * 1000)


_cli = partial(builders.invoke, cli, "stats", catch_exceptions=False)


@pytest.fixture
def family(tmp_path: Path) -> dict[str, Path]:
    """A parent session that ran two subagents (one file kept, one gone), with an advisor, a nested
    subagent, a title side call, and an abandoned branch."""
    root = tmp_path / "sessions" / "-work-app"
    p = Builder("aaaa1111", "2026-03-01T10:00:00.000Z")
    first = p.user("2026-03-01T10:00:01.000Z")
    p.assistant("2026-03-01T10:00:02.000Z", usage(100, 10, 0.25))  # abandoned below
    p.user("2026-03-01T10:00:03.000Z", parent=first)
    p.assistant("2026-03-01T10:00:04.000Z", usage(200, 20, 0.5))
    p.model_usage("2026-03-01T10:00:05.000Z", usage(7, 3, 0.001))
    p.task("2026-03-01T10:05:00.000Z", [("AgentA", usage(1000, 100, 1.0)), ("AgentB", usage(50, 5, 0.125))])
    p.assistant("2026-03-01T10:06:00.000Z", usage(300, 30, 0.75))
    parent = p.write(root / "2026-03-01T10-00-00-000Z_aaaa1111.jsonl")
    art = root / "2026-03-01T10-00-00-000Z_aaaa1111"
    a = Builder("bbbb2222", "2026-03-01T10:01:00.000Z")
    a.user("2026-03-01T10:01:01.000Z")
    a.assistant("2026-03-01T10:01:02.000Z", usage(600, 60, 0.5), "gpt-5.1-codex", "openai")
    a.assistant("2026-03-01T10:01:03.000Z", usage(400, 40, 0.5), "gpt-5.1-codex", "openai")
    a.task("2026-03-01T10:02:30.000Z", [("Sub1", usage(5, 5, 0.0625))])
    a.write(art / "AgentA.jsonl")
    nested = Builder("cccc3333", "2026-03-01T10:02:00.000Z")
    nested.assistant("2026-03-01T10:02:01.000Z", usage(5, 5, 0.0625), "gpt-5-mini", "openai")
    nested.write(art / "AgentA" / "Sub1.jsonl")
    adv = Builder("dddd4444", "2026-03-01T10:03:00.000Z")
    adv.assistant("2026-03-01T10:03:01.000Z", usage(9, 1, 0.03125), "gemini-2.5-pro", "google")
    adv.write(art / "__advisor.jsonl")
    return {"root": tmp_path / "sessions", "parent": parent, "agent": art / "AgentA.jsonl"}


# ---------------------------------------------------------------------------------------------------
# Totals, views and deduplication


def test_single_session_billed_equals_getusagestatistics(tmp_path: Path) -> None:
    b = Builder("eeee5555", "2026-01-02T00:00:00.000Z")
    b.user("2026-01-02T00:00:01.000Z")
    for n in range(30):
        b.assistant(f"2026-01-02T00:01:{n:02d}.000Z", usage(10 + n, 3 * n, 0.1 * n + 0.007))
    b.model_usage("2026-01-02T00:02:00.000Z", usage(1, 1, 0.3))
    path = b.write(tmp_path / "s.jsonl")
    report = stats([path], tz="UTC", cache=False)
    (row,) = report.groups
    expected = usage_statistics(b.entries)
    assert row.extra["omp_usage"] == expected
    billed = row.billed.to_dict()
    assert {k: billed[k] for k in (*TOKENS, "cost")} == {k: expected[k] for k in (*TOKENS, "cost")}
    assert billed["requests"] == 31


def test_subagents_are_attributed_to_the_parent_once(family: dict[str, Path]) -> None:
    report = stats([family["parent"]], tz="UTC", cache=False)
    (row,) = report.groups
    assert report.files == 4  # parent, AgentA, AgentA/Sub1, __advisor
    # own: 100+200+7+300, AgentA's file: 600+400 (not the task's 1000 again), AgentB's file is gone:
    # its task share 50; nested Sub1: 5; advisor: 9
    assert row.billed.input == 100 + 200 + 7 + 300 + 600 + 400 + 50 + 5 + 9
    assert row.billed.cost == 0.25 + 0.5 + 0.001 + 0.75 + 0.5 + 0.5 + 0.125 + 0.0625 + 0.03125
    assert row.billed.requests == 9
    # current branch: the abandoned first answer and the advisor are out; the title call hangs off
    # the branch, so it is in; the task result is on the branch, so AgentA (and its own subagent,
    # whose task result is on AgentA's branch) and AgentB's share are in
    assert row.current.input == 200 + 7 + 300 + 600 + 400 + 50 + 5
    # omp's own number for the parent file counts the task's details.usage instead of the files
    assert row.extra["omp_usage"]["input"] == 100 + 200 + 7 + 1050 + 300
    by_model = {g.key: g.billed.input for g in stats([family["parent"]], by="model", tz="UTC", cache=False).groups}
    assert by_model == {"anthropic/claude-sonnet-4-5": 600, "openai/gpt-5.1-codex": 1050, "openai/gpt-5-mini": 12,
                        "google/gemini-2.5-pro": 9}


def test_nested_subagent_with_a_dotted_id_beside_its_parent(tmp_path: Path) -> None:
    root = tmp_path / "-w"
    p = Builder("abab0000", "2026-04-01T00:00:00.000Z")
    p.assistant("2026-04-01T00:00:01.000Z", usage(1, 0, 0.5))
    p.task("2026-04-01T00:00:09.000Z", [("Agent1", usage(10 + 100, 0, 0.75))])
    parent = p.write(root / "2026-04-01T00-00-00-000Z_abab0000.jsonl")
    art = root / "2026-04-01T00-00-00-000Z_abab0000"
    a = Builder("cdcd1111", "2026-04-01T00:00:02.000Z")
    a.assistant("2026-04-01T00:00:03.000Z", usage(10, 0, 0.25))
    a.task("2026-04-01T00:00:05.000Z", [("Agent1.Helper", usage(100, 0, 0.5))])
    a.write(art / "Agent1.jsonl")
    h = Builder("efef2222", "2026-04-01T00:00:03.500Z")
    h.assistant("2026-04-01T00:00:04.000Z", usage(100, 0, 0.5))
    h.write(art / "Agent1.Helper.jsonl")  # omp names nested agents <parent>.<child>
    (row,) = stats([parent], tz="UTC", cache=False).groups
    assert (row.billed.input, row.billed.requests, row.billed.cost) == (111, 3, 1.25)
    assert (row.current.input, row.current.requests) == (111, 3)
    assert row.extra["omp_usage"]["input"] == 111  # omp's sum takes the task result instead


def test_a_subagent_named_beside_its_parent_counts_once(family: dict[str, Path]) -> None:
    alone = stats([family["parent"]], tz="UTC", cache=False)
    both = stats([family["agent"], family["parent"]], tz="UTC", cache=False)
    assert both.total.to_dict() == alone.total.to_dict()
    rows = {Path(g.key).name: g for g in both.groups}
    assert rows["AgentA.jsonl"].billed.requests == 0 and rows[family["parent"].name].billed.requests == 9


def test_forked_copies_are_billed_to_the_original(tmp_path: Path) -> None:
    parent = Builder("ffff6666", "2026-02-01T09:00:00.000Z")
    parent.user("2026-02-01T09:00:01.000Z")
    parent.assistant("2026-02-01T09:00:02.000Z", usage(100, 10, 0.5))
    parent.user("2026-02-01T09:00:03.000Z")
    parent.assistant("2026-02-01T09:00:04.000Z", usage(200, 20, 1.0))
    p = parent.write(tmp_path / "p" / "2026-02-01T09-00-00-000Z_ffff6666.jsonl")
    fork = Builder("9999aaaa", "2026-02-02T09:00:00.000Z")
    fork.entries = json.loads(json.dumps(parent.entries))  # fork() copies the entries verbatim
    fork.leaf = parent.leaf
    fork.user("2026-02-02T09:00:01.000Z")
    fork.assistant("2026-02-02T09:00:02.000Z", usage(40, 4, 0.25))
    f = fork.write(tmp_path / "p" / "2026-02-02T09-00-00-000Z_9999aaaa.jsonl")
    for order in ([p, f], [f, p]):
        report = stats(order, tz="UTC", cache=False)
        rows = {Path(g.key).name[-14:]: g for g in report.groups}
        assert rows["ffff6666.jsonl"].billed.input == 300
        assert rows["9999aaaa.jsonl"].billed.input == 40  # only what the fork spent itself
        assert rows["9999aaaa.jsonl"].current.input == 340  # its conversation holds the copies
        assert report.total.billed.input == 340
    # alone, the fork is omp's getUsageStatistics of its file
    alone = stats([f], tz="UTC", cache=False).groups[0]
    assert alone.billed.input == alone.extra["omp_usage"]["input"] == 340


def test_all_walks_every_project_and_keeps_subagents_under_parents(family: dict[str, Path], tmp_path: Path) -> None:
    other = Builder("1234abcd", "2026-03-02T08:00:00.000Z", cwd="/work/other")
    other.assistant("2026-03-02T08:00:01.000Z", usage(1, 1, 0.5))
    other.write(family["root"] / "-work-other" / "2026-03-02T08-00-00-000Z_1234abcd.jsonl")
    report = stats(all_sessions=True, root=family["root"], by="project", tz="UTC", cache=False)
    assert [g.key for g in report.groups] == ["/work/app", "/work/other"]
    assert len(report.sessions) == 2 and report.files == 5
    here = stats(root=family["root"], cwd=str(Path.home() / "work" / "app"), tz="UTC", cache=False)
    assert [g.key for g in here.groups] == [str(family["parent"])]  # the bucket of ~/work/app is -work-app
    assert stats(root=family["root"], cwd=str(Path.home() / "elsewhere"), cache=False).groups == []


def test_all_and_a_project_skip_links_as_list_does(family: dict[str, Path], tmp_path: Path) -> None:
    # list (omp's listing) never lists a session file or a project folder that is a symlink, and
    # serve promises such a file is never served; stats counted both (its cost, its title in
    # serve's /costs)
    elsewhere = tmp_path / "elsewhere"
    other = Builder("1234abcd", "2026-03-02T08:00:00.000Z", cwd="/work/app")
    other.assistant("2026-03-02T08:00:01.000Z", usage(1, 1, 0.5))
    outside = other.write(elsewhere / "-work-other" / "2026-03-02T08-00-00-000Z_1234abcd.jsonl")
    (family["root"] / "-work-app" / "link.jsonl").symlink_to(outside)
    (family["root"] / "-work-other").symlink_to(outside.parent, target_is_directory=True)
    report = stats(all_sessions=True, root=family["root"], by="session", tz="UTC", cache=False)
    assert [g.key for g in report.groups] == [str(family["parent"])]
    here = stats(root=family["root"], cwd=str(Path.home() / "work" / "app"), by="session", tz="UTC", cache=False)
    assert [g.key for g in here.groups] == [str(family["parent"])]
    named = stats([family["root"] / "-work-app" / "link.jsonl"], tz="UTC", cache=False)  # named: read
    assert named.total.billed.input == 1


def test_cache_gives_the_same_report_and_notices_changes(family: dict[str, Path], tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    first = stats([family["parent"]], tz="UTC", cache=StatsCache(cache_dir))
    assert (cache_dir / CACHE_NAME).exists()
    store = StatsCache(cache_dir)
    again = stats([family["parent"]], tz="UTC", cache=store)
    assert store.hits == 4 and store.reads == 0
    assert again.to_dict() == first.to_dict()
    with family["agent"].open("a") as f:  # the subagent ran on
        f.write(json.dumps({"type": "message", "id": "late0001", "parentId": None,
                            "timestamp": "2026-03-01T11:00:00.000Z",
                            "message": {"role": "assistant", "content": [], "api": "x", "provider": "openai",
                                        "model": "gpt-5.1-codex", "usage": usage(11, 0, 0.0),
                                        "stopReason": "stop", "timestamp": 0}}) + "\n")
    store = StatsCache(cache_dir)
    later = stats([family["parent"]], tz="UTC", cache=store)
    assert store.reads == 1 and store.hits == 3
    assert later.total.billed.input == first.total.billed.input + 11
    (cache_dir / CACHE_NAME).write_text("{not json")
    assert stats([family["parent"]], tz="UTC", cache=StatsCache(cache_dir)).to_dict() == later.to_dict()


def test_unreadable_and_odd_usage_values(tmp_path: Path) -> None:
    b = Builder("5555eeee", "2026-01-03T00:00:00.000Z")
    b.assistant("2026-01-03T00:00:01.000Z", {**usage(10, 1, 0.5), "input": "12"})
    b.assistant("2026-01-03T00:00:02.000Z", usage(5, 1, 0.25))
    path = b.write(tmp_path / "odd.jsonl")
    (row,) = stats([path], tz="UTC", cache=False).groups
    assert row.billed.input == 5  # a string count is not a count (omp would concatenate it)
    assert row.extra["omp_usage"]["input"] == "0125"  # what omp's JavaScript `+` makes of it
    report = stats([tmp_path / "missing.jsonl"], tz="UTC", cache=False)
    assert report.groups == [] and report.problems and "missing.jsonl" in report.problems[0]


def test_v1_session_is_read_after_migration(tmp_path: Path) -> None:
    lines = [{"type": "session", "id": "v1v1v1v1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
             {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z",
              "message": {"role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
                          "usage": usage(3, 4, 0.5), "stopReason": "stop", "timestamp": 1735689601000}}]
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    fu = read_file_usage(path)
    assert [r.key for r in fu.records] == [None]  # made-up ids identify nothing across files
    assert fu.records[0].input == 3 and fu.records[0].on_branch


# ---------------------------------------------------------------------------------------------------
# Days, weeks, months and time zones (golden)


# Europe/Berlin leaves CET for CEST at 2026-03-29 01:00 UTC (that day has 23 hours)
DST_TIMES = ["2026-03-28T22:59:59.999Z", "2026-03-28T23:00:00.000Z", "2026-03-29T00:59:59.000Z",
             "2026-03-29T01:00:00.000Z", "2026-03-29T21:59:59.999Z", "2026-03-29T22:00:00.000Z"]


@pytest.fixture
def dst_session(tmp_path: Path) -> Path:
    b = Builder("d57d57d5", "2026-03-28T22:00:00.000Z")
    for n, ts in enumerate(DST_TIMES):
        b.assistant(ts, usage(10 ** n, 0, float(n + 1)))
    return b.write(tmp_path / "dst.jsonl")


@pytest.mark.parametrize(("tz", "by", "expected"), [
    ("Europe/Berlin", "day", {"2026-03-28": 1, "2026-03-29": 11110, "2026-03-30": 100000}),
    ("UTC", "day", {"2026-03-28": 11, "2026-03-29": 111100}),
    ("America/New_York", "day", {"2026-03-28": 1111, "2026-03-29": 110000}),
    ("Asia/Kolkata", "day", {"2026-03-29": 1111, "2026-03-30": 110000}),
    ("Europe/Berlin", "week", {"2026-W13": 11111, "2026-W14": 100000}),
    ("Pacific/Kiritimati", "month", {"2026-03": 111111}),
    ("Pacific/Kiritimati", "day", {"2026-03-29": 1111, "2026-03-30": 110000}),
])
def test_calendar_grouping_in_a_zone(dst_session: Path, tz: str, by: str, expected: dict[str, int]) -> None:
    report = stats([dst_session], by=by, tz=tz, cache=False)
    assert {g.key: g.billed.input for g in report.groups} == expected
    assert list(expected) == sorted(expected)  # rows come in time order


def test_default_zone_is_local_and_follows_dst(dst_session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    report = stats([dst_session], by="day", cache=False)
    assert {g.key: g.billed.input for g in report.groups} == {"2026-03-28": 1, "2026-03-29": 11110,
                                                                "2026-03-30": 100000}


def test_local_zone_without_an_iana_name_follows_the_c_library(dst_session: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    monkeypatch.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")  # POSIX rule, not an IANA name: Berlin's rules
    time.tzset()
    try:
        report = stats([dst_session], by="day", cache=False)
        day = stats([dst_session], since="2026-03-29", until="2026-03-29", cache=False)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert report.to_dict()["tz"] == "local"
    assert {g.key: g.billed.input for g in report.groups} == {"2026-03-28": 1, "2026-03-29": 11110,
                                                                "2026-03-30": 100000}
    assert day.total.billed.input == 11110


def test_window_dates_are_calendar_days_in_the_zone(dst_session: Path) -> None:
    day = stats([dst_session], since="2026-03-29", until="2026-03-29", tz="Europe/Berlin", cache=False)
    assert day.total.billed.input == 11110  # 00:00 CET to 24:00 CEST
    w = parse_window("2026-03-29", "2026-03-29", zone("Europe/Berlin"))
    assert w.until is not None and w.since is not None and w.until - w.since == 23 * 3600 * 1000
    timed = stats([dst_session], since="2026-03-29T03:00", until="2026-03-29T23:59:59.999+02:00",
                  tz="Europe/Berlin", cache=False)
    assert timed.total.billed.input == 1000  # 03:00 CEST is included, the until instant is not
    assert period_key(None, "day", zone("UTC")) == "(unknown)"


@pytest.mark.parametrize("kwargs", [{"tz": "Mars/Olympus"}, {"since": "yesterday"}, {"by": "hour"},
                                    {"since": "2026-03-02", "until": "2026-03-01"}])
def test_bad_options(dst_session: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(StatsOptionError):
        stats([dst_session], cache=False, **kwargs)


# ---------------------------------------------------------------------------------------------------
# The command line


def test_cli_table_and_chart(family: dict[str, Path]) -> None:
    r = _cli(str(family["parent"]), "--tz", "UTC", "--by", "session")
    assert r.exit_code == 0, r.output
    assert "aaaa1111" in r.output and "$2.72" in r.output and "total" in r.output
    r = _cli(str(family["parent"]), "--tz", "UTC", "--by", "model", "--chart")
    assert r.exit_code == 0
    assert "openai/gpt-5.1-codex" in r.output and "█" in r.output and "$1.12" in r.output


def test_cli_json_fields(family: dict[str, Path]) -> None:
    r = _cli(str(family["parent"]), "--tz", "UTC", "--json", "--by", "session")
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert list(doc) == ["by", "tz", "since", "until", "sessions", "files", "groups", "total", "problems"]
    (g,) = doc["groups"]
    assert list(g) == ["key", "path", "id", "title", "cwd", "created", "omp_usage", "billed", "current"]
    assert list(g["billed"]) == [*TOKENS, "cost", "requests"]
    assert g["id"] == "aaaa1111" and g["billed"]["input"] == 1671 and doc["total"]["billed"] == g["billed"]
    r = _cli(str(family["parent"]), "--by", "day", "--tz", "UTC", "--json", "--since", "2026-03-01")
    doc = json.loads(r.output)
    assert doc["since"] == "2026-03-01T00:00:00.000Z" and [g["key"] for g in doc["groups"]] == ["2026-03-01"]


def test_cli_csv(family: dict[str, Path]) -> None:
    r = _cli(str(family["parent"]), "--tz", "UTC", "--by", "provider", "--csv")
    assert r.exit_code == 0
    rows = list(csv.reader(io.StringIO(r.output)))
    assert tuple(rows[0]) == CSV_FIELDS
    body = {row[0]: dict(zip(CSV_FIELDS, row, strict=True)) for row in rows[1:]}
    assert set(body) == {"anthropic", "openai", "google"}
    assert body["openai"]["billed_input"] == "1062" and body["openai"]["path"] == ""
    assert float(body["google"]["billed_cost"]) == 0.03125 and body["google"]["current_requests"] == "0"


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action")]


def test_cli_html_page(family: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = _cli("--all", "--root", str(family["root"]), "--tz", "UTC", "--by", "session", "--html", str(out))
    assert r.exit_code == 0, r.output
    text = out.read_text()
    page = _Page()
    page.feed(text)
    page.close()
    assert page.tags.count("svg") == 2 and "rect" in page.tags and "table" in page.tags
    assert not [link for link in page.links if link.startswith(("http:", "https:", "//"))]
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert "openai/gpt-5.1-codex" in text and "/work/app" in text and "2026-03-01" in text
    r = _cli("--all", "--root", str(family["root"]), "--html", str(out))
    assert r.exit_code == 1 and "already exists" in r.output and out.read_text() == text
    r = _cli("--all", "--root", str(family["root"]), "--by", "day", "--html", str(out), "--force")
    assert r.exit_code == 0 and out.read_text() != text
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_cli_escapes_titles_in_html(tmp_path: Path) -> None:
    b = Builder("7777bbbb", "2026-01-01T00:00:00.000Z", cwd="/w/<script>")
    b.header["title"] = "<img src=http://x/a.png>"
    b.assistant("2026-01-01T00:00:01.000Z", usage(1, 1, 1.0))
    path = b.write(tmp_path / "t.jsonl")
    out = tmp_path / "t.html"
    assert _cli(str(path), "--by", "session", "--html", str(out)).exit_code == 0
    page = _Page()
    page.feed(out.read_text())
    assert "img" not in page.tags and "script" not in page.tags and not page.links


def test_cli_usage_errors(dst_session: Path) -> None:
    assert _cli(str(dst_session), "--tz", "Nowhere/Zone").exit_code == 2
    assert _cli(str(dst_session), "--since", "soon").exit_code == 2
    assert _cli(str(dst_session), "--json", "--csv").exit_code == 2
    assert _cli(str(dst_session), "--all").exit_code == 2
    r = _cli("/nonexistent/x.jsonl")
    assert r.exit_code == 1 and "no such file" in r.output


def test_cli_without_sessions_reads_the_current_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.paths import project_dir_name
    root = tmp_path / "root"
    project = tmp_path / "proj"
    project.mkdir()
    b = Builder("3333cccc", "2026-01-01T00:00:00.000Z", cwd=str(project))
    b.assistant("2026-01-01T00:00:01.000Z", usage(42, 0, 0.5))
    b.write(root / project_dir_name(str(project)) / "2026-01-01T00-00-00-000Z_3333cccc.jsonl")
    monkeypatch.chdir(project)
    r = _cli("--root", str(root), "--json", "--no-cache")
    assert r.exit_code == 0
    assert json.loads(r.output)["total"]["billed"]["input"] == 42
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "omp-session" / CACHE_NAME).exists()


# ---------------------------------------------------------------------------------------------------
# Against omp itself


def _oracle_usage(files: list[Path]) -> dict[str, dict[str, Any]]:
    listing = files[0].parent / "inputs.txt"
    listing.write_text("\n".join(map(str, files)) + "\n")
    out = subprocess.run([str(ORACLE / "omp-reference"), "load", "--timeout", "10", "--jobs", "2", "--list",
                          str(listing)], check=True, capture_output=True, text=True).stdout
    return {Path(rec["file"]).name: rec for rec in map(json.loads, out.splitlines())}


@pytest.mark.oracle
def test_per_session_totals_equal_omp_on_generated_sessions(make_corpus: Any, tmp_path: Path) -> None:
    corpus = make_corpus(8, 150)
    files = sorted(corpus.glob("*.jsonl"))
    omp = _oracle_usage(files)
    report = stats(files, tz="UTC", cache=False)
    rows = {Path(g.key).name: g for g in report.groups}
    compared = numeric = 0
    for name, rec in omp.items():
        if rec["error"] is not None or "usage" in rec["view_errors"]:
            continue
        compared += 1
        row = rows[name]
        assert row.extra["omp_usage"] == rec["usage"], name
        if all(isinstance(rec["usage"][k], int | float) for k in (*TOKENS, "cost")):
            numeric += 1
            billed = row.billed.to_dict()
            assert {k: billed[k] for k in (*TOKENS, "cost")} == {k: rec["usage"][k] for k in (*TOKENS, "cost")}, \
                name
    assert compared > 120 and numeric > 100


@pytest.mark.oracle
def test_omp_counts_task_usage_where_we_count_the_subagent_file(family: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy" / family["parent"].name
    copy.parent.mkdir()
    shutil.copy(family["parent"], copy)
    rec = _oracle_usage([copy])[copy.name]
    assert rec["error"] is None
    (row,) = stats([family["parent"]], tz="UTC", cache=False).groups
    assert row.extra["omp_usage"] == rec["usage"]
    # same tokens: AgentA's file holds exactly what the task reported for it
    nested_and_advisor = 5 + 9
    assert row.billed.input == rec["usage"]["input"] + nested_and_advisor


@pytest.mark.parametrize("by", ["session", "day", "week", "month", "model", "provider", "project"])
def test_every_grouping_partitions_the_same_records(make_corpus: Any, by: str) -> None:
    files = sorted(make_corpus(8, 150).glob("*.jsonl"))
    report = stats(files, by=by, tz="Asia/Kathmandu", cache=False)
    assert report.problems == []
    for view in ("billed", "current"):
        total = getattr(report.total, view)
        assert sum(getattr(g, view).requests for g in report.groups) == total.requests > 0
        assert sum(getattr(g, view).total_tokens for g in report.groups) == total.total_tokens
        assert sum(getattr(g, view).cost for g in report.groups) == pytest.approx(total.cost)
    for g in report.groups:
        assert g.current.requests <= g.billed.requests


def test_html_cost_chart_keeps_quiet_days_on_the_time_axis(tmp_path: Path) -> None:
    from omp_session.ops.stats.html import render_html
    b = Builder("4444dddd", "2026-03-01T00:00:00.000Z")
    b.assistant("2026-03-01T12:00:00.000Z", usage(1, 1, 2.0))
    b.assistant("2026-03-04T12:00:00.000Z", usage(1, 1, 1.0), model="gpt-5", provider="openai")
    page = render_html(stats([b.write(tmp_path / "q.jsonl")], by="day", tz="UTC", cache=False))
    assert [d for d in ("2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04") if f">{d}</text>" in page] == \
        ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04"]
    assert page.count("<rect") == 2 + 1  # one bar per active day, one project bar
    assert "2026-03-04 openai/gpt-5: $1.00" in page


def test_archived_session_counts_like_the_plain_file(tmp_path: Path) -> None:
    import gzip

    from omp_session.ops.stats.report import read_file_usage

    plain = Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" / "sample.jsonl"
    archived = tmp_path / plain.with_suffix(".jsonl.gz").name
    archived.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = read_file_usage(archived), read_file_usage(plain)
    assert a.omp_usage == b.omp_usage and a.omp_usage["cost"] > 0


def test_a_store_gives_the_same_report_as_the_files(family: dict[str, Path], tmp_path: Path) -> None:
    from omp_session.store import open_store

    root = family["root"]
    storage = open_store(f"sqlite:{tmp_path / 'store.db'}")
    try:
        for f in sorted(root.rglob("*.jsonl")):  # the same keys: omp's keys are the file paths
            storage.replace(str(f), f.read_bytes(), None)
        for by in ("session", "model", "day"):
            files = stats(all_sessions=True, root=root, by=by, tz="UTC", cache=False)
            stored = stats(all_sessions=True, root=str(root) + "/", by=by, tz="UTC", storage=storage)
            assert stored.to_dict() == files.to_dict() and stored.files == files.files == 4
        one = stats([str(family["parent"])], root=str(root) + "/", tz="UTC", storage=storage)
        assert one.to_dict() == stats([family["parent"]], root=root, tz="UTC", cache=False).to_dict()
    finally:
        storage.close()
    db = f"sqlite:{tmp_path / 'store.db'}"
    result = _cli("--store", db + f"?root={root}/", "--all", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == stats(all_sessions=True, root=root, cache=False).to_dict()["total"]


# ---------------------------------------------------------------------------------------------------
# Odd input found in review


def test_until_the_last_representable_date_is_not_a_crash(dst_session: Path) -> None:
    report = stats([dst_session], until="9999-12-31", tz="UTC", cache=False)
    assert report.total.billed.input == 111111  # every record is before the end of time
    r = _cli(str(dst_session), "--until", "9999-12-31", "--tz", "UTC", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["total"]["billed"]["input"] == 111111


def test_missing_usage_fields_give_valid_json_with_or_without_the_cache(tmp_path: Path) -> None:
    b = Builder("9999aaaa", "2026-01-04T00:00:00.000Z")
    b.assistant("2026-01-04T00:00:01.000Z", {"input": 5, "output": 1, "totalTokens": 6, "cost": {"total": 0.5}})
    path = b.write(tmp_path / "partial.jsonl")
    docs = []
    for _ in range(2):  # the first run reads the file, the second the cache
        r = _cli(str(path), "--tz", "UTC", "--json", "--by", "session")
        assert r.exit_code == 0
        docs.append(json.loads(r.output, parse_constant=lambda c: pytest.fail(f"{c} is not JSON")))
    assert docs[0] == docs[1]
    assert docs[0]["groups"][0]["omp_usage"]["cacheRead"] is None  # omp's NaN, as JSON.stringify writes it
    assert docs[0]["total"]["billed"]["input"] == 5


def test_a_count_beyond_64_bits_does_not_break_the_cache(tmp_path: Path) -> None:
    b = Builder("8888aaaa", "2026-01-05T00:00:00.000Z")
    b.assistant("2026-01-05T00:00:01.000Z", usage(10 ** 23, 1, 0.5))
    path = b.write(tmp_path / "big.jsonl")
    cache_dir = tmp_path / "cache"
    first = stats([path], tz="UTC", cache=StatsCache(cache_dir))
    assert first.total.billed.output == 1 and first.total.billed.cost == 0.5
    r = _cli(str(path), "--tz", "UTC", "--csv")
    assert r.exit_code == 0 and "Traceback" not in r.output


def test_a_task_result_with_an_agent_that_spent_nothing_is_not_counted_twice(tmp_path: Path) -> None:
    # omp leaves `usage` out of a result whose agent recorded none (failed before its first
    # request); details.usage is then the sum of the other results, whose files hold the calls
    root = tmp_path / "sessions" / "-w"
    p = Builder("aaaa9999", "2026-02-01T10:00:00.000Z")
    p.user("2026-02-01T10:00:01.000Z")
    p.task("2026-02-01T10:05:00.000Z", [("AgentA", usage(1000, 100, 1.0)), ("AgentB", usage(0, 0, 0.0))])
    del p.entries[-1]["message"]["details"]["results"][1]["usage"]
    parent = p.write(root / "2026-02-01T10-00-00-000Z_aaaa9999.jsonl")
    a = Builder("bbbb9999", "2026-02-01T10:01:00.000Z")
    a.assistant("2026-02-01T10:01:02.000Z", usage(1000, 100, 1.0), "gpt-5.1-codex", "openai")
    a.write(root / "2026-02-01T10-00-00-000Z_aaaa9999" / "AgentA.jsonl")
    (row,) = stats([parent], tz="UTC", cache=False).groups
    assert row.extra["omp_usage"]["input"] == 1000
    assert row.billed.input == row.current.input == 1000 and row.billed.requests == 1


@pytest.mark.parametrize(("field", "value"), [(1, "yesterday"), (4, "12"), (9, True), (10, 1), (2, 7), ("cwd", 5)])
def test_a_cache_entry_of_another_shape_is_read_again(tmp_path: Path, field: int | str, value: Any) -> None:
    b = Builder("7777aaaa", "2026-01-06T00:00:00.000Z")
    b.assistant("2026-01-06T00:00:01.000Z", usage(5, 1, 0.5))
    path = b.write(tmp_path / "s.jsonl")
    cache_dir = tmp_path / "cache"
    first = stats([path], by="project", tz="UTC", since="2026-01-01", cache=StatsCache(cache_dir))
    doc = json.loads((cache_dir / CACHE_NAME).read_text())
    data = doc["files"][str(path)]["data"]
    if isinstance(field, str):
        data[field] = value
    else:
        data["records"][0][field] = value
    (cache_dir / CACHE_NAME).write_text(json.dumps(doc))
    store = StatsCache(cache_dir)
    again = stats([path], by="project", tz="UTC", since="2026-01-01", cache=store)
    assert again.to_dict() == first.to_dict() and store.reads == 1


def test_a_model_id_with_a_colon_is_kept_whole_for_a_missing_subagent(tmp_path: Path) -> None:
    # resolvedModel is "provider/model" plus ":<thinking level>" only when a level was chosen
    p = Builder("6666aaaa", "2026-01-07T00:00:00.000Z")
    p.task("2026-01-07T00:00:01.000Z", [("AgentA", usage(10, 1, 0.5)), ("AgentB", usage(20, 2, 0.25))])
    results = p.entries[-1]["message"]["details"]["results"]
    results[0]["resolvedModel"] = "amazon-bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"
    results[1]["resolvedModel"] = "amazon-bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0:high"
    path = p.write(tmp_path / "colon.jsonl")
    report = stats([path], by="model", tz="UTC", cache=False)
    assert {g.key: g.billed.input for g in report.groups} == {
        "amazon-bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0": 30}


def test_a_branched_copy_of_a_task_result_is_not_billed_beside_the_subagent_file(tmp_path: Path) -> None:
    # createBranchedSession() copies the entries but not the artifacts folder: the copy's task
    # result has no subagent file beside it, while the original's calls were billed from that file
    root = tmp_path / "sessions" / "-w"
    parent = Builder("abab1212", "2026-02-03T09:00:00.000Z")
    parent.user("2026-02-03T09:00:01.000Z")
    parent.task("2026-02-03T09:05:00.000Z", [("AgentA", usage(1000, 100, 1.0))])
    p = parent.write(root / "2026-02-03T09-00-00-000Z_abab1212.jsonl")
    a = Builder("cdcd3434", "2026-02-03T09:01:00.000Z")
    a.assistant("2026-02-03T09:01:02.000Z", usage(1000, 100, 1.0), "gpt-5.1-codex", "openai")
    a.write(root / "2026-02-03T09-00-00-000Z_abab1212" / "AgentA.jsonl")
    branch = Builder("efef5656", "2026-02-04T09:00:00.000Z")
    branch.entries = json.loads(json.dumps(parent.entries))
    branch.leaf = parent.leaf
    branch.assistant("2026-02-04T09:00:02.000Z", usage(40, 4, 0.25))
    b = branch.write(root / "2026-02-04T09-00-00-000Z_efef5656.jsonl")
    report = stats([p, b], tz="UTC", cache=False)
    rows = {Path(g.key).name[-14:]: g for g in report.groups}
    assert rows["abab1212.jsonl"].billed.input == 1000
    assert rows["efef5656.jsonl"].billed.input == 40
    assert rows["efef5656.jsonl"].current.input == 1040  # its conversation holds the copied result
    assert report.total.billed.input == 1040


def test_named_sessions_need_no_current_directory(family: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    def gone() -> str:
        raise FileNotFoundError(2, "No such file or directory")  # the shell stands in a deleted folder

    monkeypatch.setattr(os, "getcwd", gone)
    assert stats([family["parent"]], root=family["root"], cache=False).files == 4
    assert stats(all_sessions=True, root=family["root"], cache=False).files == 4


def test_a_symlinked_artifacts_folder_is_not_counted(family: dict[str, Path], tmp_path: Path) -> None:
    art = family["parent"].with_suffix("")
    moved = tmp_path / "elsewhere"
    art.rename(moved)
    art.symlink_to(moved, target_is_directory=True)  # omp makes a real folder: a link is not its
    report = stats([family["parent"]], tz="UTC", cache=False)
    assert report.files == 1
    (row,) = report.groups
    assert row.billed.input == 100 + 200 + 7 + 300 + 1000 + 50  # the task results' own usage


def test_records_are_read_and_placed_without_cyclic_collection(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # every full collection walked all the records made so far: none runs while a file's records
    # are read or while they are placed and grouped; afterwards collection is on again
    import gc

    from omp_session.ops.stats import report as stats_report

    b = Builder("eeee6666", "2026-01-02T00:00:00.000Z")
    b.user("2026-01-02T00:00:01.000Z")
    b.assistant("2026-01-02T00:01:00.000Z", usage(10, 3, 0.1))
    path = b.write(tmp_path / "s.jsonl")
    seen: dict[str, bool] = {}
    for name in ("read_file_usage", "_place", "group_items"):
        real = getattr(stats_report, name)

        def watched(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            seen[_name] = gc.isenabled()
            return _real(*args, **kwargs)

        monkeypatch.setattr(stats_report, name, watched)
    (row,) = stats([path], tz="UTC", cache=False).groups
    assert row.billed.to_dict()["requests"] == 1
    assert seen == {"read_file_usage": False, "_place": False, "group_items": False}
    assert gc.isenabled()
