"""Bugs found reviewing the derived tables (docs/team.md), each pinned by a test: text a database
cannot hold in ids and names, queries it cannot take, the sync hook failing after the copy, and
the usage rules restated from ops/stats."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from builders import assistant, entry, header, run, usage, user, write_session
from omp_session.catalog.derived import derive_whole, refresh_url
from omp_session.cli.search import search_command
from omp_session.ops.stats.report import read_file_usage
from omp_session.ops.sync import sync_urls
from omp_session.store import open_store
from omp_session.store.derived import HEAD_BYTES, derived_names, open_derived
from stores.sqlutil import POSTGRES_URL
from stores.teamutil import drop_derived

ROOT = "/team/sessions/"
KEY = ROOT + "--w--/2026-01-01T00-00-00-000Z_s.jsonl"
DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    table = f"t_{uuid.uuid4().hex[:16]}"
    base = f"sqlite:{tmp_path / 'team.db'}" if request.param == "sqlite" else POSTGRES_URL
    yield f"{base}?table={table}&root={ROOT}"
    if request.param == "postgres":  # only what this test made: omp's table and our three
        drop_derived(table)


def _store(url: str, records: list[Any]) -> None:
    """``records`` as one session, escaped as ASCII: a lone surrogate stays a valid file's ``\\ud800``."""
    s = open_store(url, create=True)
    try:
        s.replace(KEY, "".join(json.dumps(r) + "\n" for r in records).encode(), None)
    finally:
        s.close()


# ----- text a database cannot hold, outside the searched texts ---------------------------------------


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"])
def test_ids_names_and_cwd_holding_nul_or_a_lone_surrogate(url: str, bad: str) -> None:
    """PostgreSQL refuses NUL in text and no driver encodes a lone surrogate: one such id, cwd or
    model name (valid JSON escapes) stopped every update of the store (a traceback for the
    surrogate). They are stored cleaned, as the file index stores them."""
    _store(url, [header(bad, cwd="/w" + bad, timestamp=bad),
                 entry("e" + bad, None, message=user("hello")),
                 entry("f", "e" + bad, type="label", label="tag", targetId="e" + bad),
                 entry("g", "f", timestamp=bad, message=assistant("hi", provider="p" + bad, model="m" + bad,
                                                   usage=usage(1, 2, 0.5)))])
    report = refresh_url(url)
    assert report is not None and report.added == [KEY]
    with open_derived(url) as t:
        n = t.names
        (row,) = t.rows(f"SELECT id, cwd, created, models FROM {n.sessions}")
        ids = sorted(str(r[0]) for r in t.rows(f"SELECT entry_id FROM {n.entries} WHERE entry_id IS NOT NULL"))
        targets = [r[0] for r in t.rows(f"SELECT target_id FROM {n.entries} WHERE target_id IS NOT NULL")]
        (used,) = t.rows(f"SELECT entry_id, provider, model, dedup FROM {n.usage}")
    clean = "a\ufffdb"
    assert row[:3] == (clean, "/w" + clean, clean) and json.loads(row[3]) == [f"p{clean}/m{clean}"]
    assert ids == ["e" + clean, "f", "g"] and targets == ["e" + clean]
    assert used == ("g", "p" + clean, "m" + clean, f"g {clean}")
    hits = run(search_command, "hello", "--store", url, "--json")
    assert hits[0] == 0, hits[2]
    assert [(h["session_id"], h["cwd"], h["entry_id"]) for h in json.loads(hits[1])] == [(clean, "/w" + clean,
                                                                                         "e" + clean)]


# ----- queries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("\udcff",), ("hello \udcff",), ("a\x00b",), ("hello", "--cwd", "/w\udcff")])
def test_a_query_the_database_cannot_take_is_one_line(url: str, args: tuple[str, ...]) -> None:
    """A shell passes bytes that are not UTF-8 as lone surrogates (and a NUL can come from a
    script): PostgreSQL's driver raised UnicodeEncodeError, a traceback."""
    _store(url, [header("s", cwd="/w"), entry("a", None, message=user("hello a b"))])
    assert refresh_url(url) is not None
    code, out, err = run(search_command, *args, "--store", url, "--json")
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    if code == 0:  # what is left of the query is searched for
        assert isinstance(json.loads(out), list)
    else:
        assert code == 1 and err.startswith("omp-session: ") and len(err.strip().splitlines()) == 1, err


# ----- the sync hook ---------------------------------------------------------------------------------


def test_the_search_tables_failing_does_not_fail_the_sync(url: str, tmp_path: Path) -> None:
    """The copy is what matters: search tables the update cannot use are reported in the sync's
    report, and the sessions are copied all the same."""
    files = tmp_path / "sessions"
    write_session(files / "--w--" / "2026-01-01T00-00-00-000Z_s.jsonl", [entry("a", None, message=user("hello"))])
    open_store(url, create=True).close()
    table = url.split("table=")[1].split("&")[0]
    broken = f"CREATE TABLE {derived_names(table).sessions} (key TEXT)"  # not our layout: every update fails
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite:").split("?")[0]) as conn:
            conn.execute(broken)
    else:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(broken)
    report = sync_urls(f"file:{files}", url, use_state=False)
    assert report.count("copied") == 1
    assert report.derived is not None and "search tables not updated" in str(report.derived["error"])
    assert "derived" in report.to_json()
    s = open_store(url)
    try:
        assert s.size(KEY) is not None
    finally:
        s.close()


# ----- the usage rules restated from ops/stats ---------------------------------------------------------


def _complete(raw: bytes) -> bytes:
    """Up to the last LF: a last line without one is a write in progress to the derived tables (and
    to the file index), where ops/stats reads it when it parses."""
    return raw[:raw.rfind(b"\n") + 1]


@pytest.mark.parametrize("path", sorted(DATA.rglob("*.jsonl")), ids=lambda p: str(p.relative_to(DATA)))
def test_usage_rows_are_ops_stats_records(path: Path, tmp_path: Path) -> None:
    """catalog.derived restates ops/stats/report.py's rules: on every session of the test corpora
    the same usage records (kind, time, provider, model, counts, cost, the key that matches a
    fork's copy, the agent). ops/stats reads the file after the last complete line too, so both
    read the file up to it."""
    raw = _complete(path.read_bytes())
    copy = tmp_path / "s.jsonl"
    copy.write_bytes(raw)
    ref = read_file_usage(copy)
    derived = derive_whole("/r/b/s.jsonl", raw, len(raw), raw[:HEAD_BYTES], 0, None, None)
    mine = [(u.kind, u.ts, u.provider, u.model, u.input, u.output, u.cache_read, u.cache_write, u.total_tokens,
             u.cost, u.dedup, u.agent) for u in derived.usage]
    theirs = [(r.kind, r.timestamp, r.provider, r.model, r.input, r.output, r.cache_read, r.cache_write,
               r.total_tokens, r.cost, r.key, r.agent) for r in ref.records]
    assert mine == theirs


def test_usage_keys_of_a_migrated_session_stay_unkeyed_as_it_grows(url: str) -> None:
    """ops/stats keys no record of a session omp migrates (version < 3: its ids are not the ones
    a fork's copy shares); nor do the rows appended to one later."""
    _store(url, [header("s", cwd="/w", version=2), entry("a", None, message=assistant("x", usage=usage(1, 1, 0.1)))])
    assert refresh_url(url) is not None
    s = open_store(url)
    try:
        s.append(KEY, (json.dumps(entry("b", "a", message=assistant("y", usage=usage(2, 2, 0.2)))) + "\n").encode())
    finally:
        s.close()
    report = refresh_url(url)
    assert report is not None and report.grown == [KEY]
    with open_derived(url) as t:
        rows = t.rows(f"SELECT entry_id, dedup FROM {t.names.usage} ORDER BY seq")
    assert rows == [("a", None), ("b", None)]


def test_no_usage_from_a_first_line_that_is_not_a_header(tmp_path: Path) -> None:
    """ops/stats never reads the first line as an entry (it is the header's place): an assistant
    turn there is no usage record."""
    raw = "".join(json.dumps(r) + "\n" for r in [
        entry("a", None, message=assistant("x", usage=usage(1, 1, 0.1))),
        entry("b", "a", message=assistant("y", usage=usage(2, 2, 0.2)))]).encode()
    (tmp_path / "s.jsonl").write_bytes(raw)
    assert [r.key for r in read_file_usage(tmp_path / "s.jsonl").records] == [f"b {entry('b')['timestamp']}"]
    derived = derive_whole("/r/b/s.jsonl", raw, len(raw), raw[:HEAD_BYTES], 0, None, None)
    assert [u.entry_id for u in derived.usage] == ["b"]


# ----- incremental == rebuild ------------------------------------------------------------------------


def test_a_session_first_derived_shorter_than_its_head_equals_a_rebuild(url: str) -> None:
    """The head kept to see a rewritten slot or header grows with the session, as a rebuild has it."""
    _store(url, [header("s", cwd="/w")])
    assert refresh_url(url) is not None
    s = open_store(url)
    try:
        for n in range(3):
            s.append(KEY, (json.dumps(entry(f"e{n}", None, message=user(f"word {n} " * 20))) + "\n").encode())
            assert refresh_url(url) is not None
    finally:
        s.close()

    def snapshot() -> list[Any]:
        with open_derived(url) as t:
            return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
                    for r in t.rows(f"SELECT * FROM {t.names.sessions}")]

    incremental = snapshot()
    assert refresh_url(url, rebuild=True) is not None
    assert snapshot() == incremental
