"""The 5-hour billing blocks on /costs and /api/costs?blocks=1 are ``stats --all --blocks --json``
on the same root, at the same "now" (both clocks pinned, so the active block's time left and
projection compare exactly)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import sid

from builders import assistant, entry, header, run, usage, user, write_session
from conftest import Served
from omp_session.cli import cli
from omp_session.paths import project_dir_name
from omp_session.serve.app import start


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


NOW = _ms("2026-03-02T12:30:00")
# (session, project, request time, cost, model): two blocks on 03-01 with a gap between them, then
# the block 12:00-17:00 of 03-02 that "now" is in
REQUESTS = [
    (0, "/w/a", "2026-03-01T09:20:00", 0.5, "claude-a"),
    (0, "/w/a", "2026-03-01T10:20:00", 1.25, "claude-a"),
    (1, "/w/b", "2026-03-01T14:10:00", 0.75, "<b>gpt</b>"),  # 09:00 + 5 h: a new block at 14:00
    (1, "/w/b", "2026-03-01T20:05:00", 2.0, "claude-a"),  # and another at 20:00, after a gap
    (2, "/w/a", "2026-03-02T12:05:00", 0.3, "claude-a"),
    (2, "/w/a", "2026-03-02T12:20:00", 0.45, "<b>gpt</b>"),
]


def _build(root: Path) -> None:
    by_session: dict[int, list[tuple[str, str, float, str]]] = {}
    for n, cwd, when, cost, model in REQUESTS:
        by_session.setdefault(n, []).append((cwd, when, cost, model))
    for n, requests in by_session.items():
        cwd = requests[0][0]
        es: list[dict[str, Any]] = []
        parent = None
        for k, (_cwd, when, cost, model) in enumerate(requests):
            t = _ms(when)
            iso = when + ".000Z"
            es.append(entry(f"u{k}", parent, timestamp=iso, message=user(f"question {k}", timestamp=t - 1000)))
            es.append(entry(f"a{k}", f"u{k}", timestamp=iso,
                            message=assistant("answer", model=model, timestamp=t,
                                              usage=usage(input=100 * (k + 1), output=10, cost=cost))))
            parent = f"a{k}"
        path = root / project_dir_name(cwd) / f"2026-03-01T00-00-00-000Z_{sid(n)}.jsonl"
        write_session(path, es, head=header(sid(n), cwd=cwd, timestamp=requests[0][1] + ".000Z"))


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    root = tmp_path / "sessions"
    _build(root)
    # one "now" for the command line and the server: the active block's minutes and projection
    monkeypatch.setattr("omp_session.cli.stats.now_ms", lambda: NOW)
    monkeypatch.setattr("omp_session.serve.app.stats_now", lambda: NOW)
    with start(root) as running:
        yield Served(root, {}, running)


def _cli_blocks(root: Path, *args: str) -> dict[str, Any]:
    code, out, err = run(cli, "stats", "--all", "--root", str(root), "--blocks", "--json", *args)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_the_blocks_json_is_stats_blocks_json(served: Served) -> None:
    expected = _cli_blocks(served.root)
    got = served.get("/api/costs?blocks=1").json()
    assert got == expected
    kinds = [(b["kind"], b["start"], b["active"]) for b in got["blocks"]]
    assert kinds == [("block", "2026-03-01T09:00:00+00:00", False), ("block", "2026-03-01T14:00:00+00:00", False),
                     ("gap", "2026-03-01T19:00:00+00:00", False), ("block", "2026-03-01T20:00:00+00:00", False),
                     ("gap", "2026-03-02T01:00:00+00:00", False), ("block", "2026-03-02T12:00:00+00:00", True)]
    active = got["blocks"][-1]
    assert (active["elapsedMinutes"], active["remainingMinutes"]) == (30, 270)
    # 0.75 spent from the first request (12:05) to now (12:30): at that rate until 17:00
    assert active["projected"]["cost"] == pytest.approx(0.75 * (17 * 60 - (12 * 60 + 5)) / 25)
    # the options of the command line, passed through
    for query, args in (("tz=Europe/Paris", ("--tz", "Europe/Paris")), ("since=2026-03-01&until=2026-03-01",
                                                                        ("--since", "2026-03-01", "--until", "2026-03-01"))):
        assert served.get(f"/api/costs?blocks=1&{query}").json() == _cli_blocks(served.root, *args), query
    assert served.get("/costs?blocks=1", headers={"Accept": "application/json"}).json() == expected
    # --by and --blocks do not go together, here neither
    both = served.get("/api/costs?blocks=1&by=day")
    assert both.status == 400 and "not both" in both.json()["error"]
    # without blocks=1 the JSON stays exactly `stats --json`
    code, out, err = run(cli, "stats", "--all", "--root", str(served.root), "--json")
    assert code == 0, err
    assert served.get("/api/costs").json() == json.loads(out)


def test_the_costs_page_shows_the_blocks(served: Served) -> None:
    expected = _cli_blocks(served.root)
    page = served.get("/costs").text
    section = page[page.index('<h2 id="blocks">'):]
    blocks = [b for b in expected["blocks"] if b["kind"] == "block"]
    # the table, newest first: each block's cost and tokens are the JSON's
    rows = re.findall(r'<tr class="block[^"]*" data-start="([^"]*)">.*?<td class="tokens" data-value="([^"]*)">'
                      r'.*?<td class="cost" data-value="([^"]*)">', section)
    assert rows == [(b["start"], str(b["billed"]["totalTokens"]), repr(b["billed"]["cost"])) for b in reversed(blocks)]
    assert section.count('<tr class="gap">') == 2 and "idle 1h 00m" in section and "idle 11h 00m" in section
    # the active block: its time left and projected cost, as the JSON says
    active = blocks[-1]
    remaining = re.search(r'id="active-remaining" data-value="(\d+)">4h 30m left', section)
    assert remaining is not None and int(remaining.group(1)) == active["remainingMinutes"]
    projected = re.search(r'id="active-projected" data-value="([^"]+)">\$([0-9.,]+)<', section)
    assert projected is not None and float(projected.group(1)) == active["projected"]["cost"]
    assert projected.group(2) == f"{active['projected']['cost']:,.2f}"
    assert 'id="blocks-chart"' in section and section.count("<rect") == len(blocks) + 1  # + the projection
    # a model's name is text, never markup
    assert "<b>gpt</b>" not in page and "&lt;b&gt;gpt&lt;/b&gt;" in section
    assert 'href="/api/costs?blocks=1"' in section


def test_no_usage_no_blocks(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    write_session(root / project_dir_name("/w") / f"2026-03-01T00-00-00-000Z_{sid(1)}.jsonl",
                  [entry("u1", None, message=user("only a question"))], head=header(sid(1), cwd="/w"))
    with start(root) as running:
        served = Served(root, {}, running)
        assert served.get("/api/costs?blocks=1").json()["blocks"] == []
        assert 'id="no-blocks"' in served.get("/costs").text
