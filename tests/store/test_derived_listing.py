"""``list --store`` from the derived tables (docs/team.md): the same output as from the stored
bytes, kept so by the incremental upkeep, reading about ``--limit`` rows; ``--user``/``--machine``
filters; and the byte-reading path where there are no tables."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from builders import TS, assistant, entry, header, jsonl, line, run, user, write_session
from omp_session.catalog import store_listing
from omp_session.catalog.derived import refresh_url
from omp_session.catalog.listing import SessionInfo
from omp_session.catalog.store_listing import StoreListing, list_derived_sessions, list_store_sessions
from omp_session.cli import cli
from omp_session.format.title import build_title_slot
from omp_session.ops.sync import sync_urls
from omp_session.paths import project_dir_name
from omp_session.store import open_store
from omp_session.store.base import SessionStorage
from omp_session.store.derived import DerivedTables, open_derived
from omp_session.store.derived.schema import SCHEMA_VERSION
from stores.sqlutil import MYSQL_URL, drop_table
from stores.teamutil import ROOT, team_url

LISTING = Path(__file__).resolve().parents[1] / "data" / "listing" / "inputs"
HAND, GEN = project_dir_name("/work/hand"), project_dir_name("/work/gen")


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with team_url(request.param, tmp_path) as made:
        yield made


def _big(n: int, role: str, chars: int, stop: str = "stop", eid: str | None = None) -> dict[str, Any]:
    body = f"{role} {n} " + "x" * chars
    message = user(body) if role == "user" else assistant(body) if role == "assistant" else \
        {"role": role, "content": [{"type": "text", "text": body}], "timestamp": 1}
    if role == "assistant":
        message["stopReason"] = stop
    return entry(eid or f"e{n}", None, message=message)


def corpus(tmp: Path) -> Path:
    """omp's listing cases (tests/data/listing: the golden inputs, with their mtimes), subagent
    transcripts beside a parent, and sessions whose status line is more or less than 32 KB back."""
    root = tmp / "sessions"
    shutil.copytree(LISTING / "hand", root / HAND)
    shutil.copytree(LISTING / "gen", root / GEN)
    for rel, ns in json.loads((LISTING / "meta.json").read_text())["mtimes"].items():
        path = root / (HAND if rel.startswith("hand/") else GEN) / rel.split("/", 1)[1]
        if path.exists():
            os.utime(path, ns=(ns, ns))
    parent = root / HAND / "2026-01-09T00-00-00-000Z_parent.jsonl"
    write_session(parent, [entry("e1", None, message=user("parent question"))], head=header("parent", cwd="/work/hand"))
    for name, words in (("agent-b", "second"), ("agent-a", "first"), ("__advisor", "advice"), (".hidden", "hidden")):
        write_session(parent.with_suffix("") / f"{name}.jsonl", [entry("e1", None, message=user(f"{words} task"))],
                      head=header(f"sub-{name}", cwd="/work/hand", parentSession=str(parent)))
    write_session(root / HAND / "orphan" / "agent.jsonl", [entry("e1", None, message=user("no parent"))],
                  head=header("orphan", cwd="/work/hand"))
    big = [_big(1, "user", 100), _big(2, "assistant", 100, "error"), _big(3, "toolResult", 40_000)]
    write_session(root / HAND / "2026-01-10T00-00-00-000Z_far.jsonl", big, head=header("far", cwd="/work/hand"))
    write_session(root / HAND / "2026-01-11T00-00-00-000Z_near.jsonl", [*big, _big(4, "assistant", 10, "aborted")],
                  head=header("near", cwd="/work/hand"))
    return root


OPTIONS = [
    ["--all", "--json"],
    ["--all", "--jsonl", "--no-subagents"],
    ["--all", "--json", "--limit", "1"],
    ["--all", "--json", "--limit", "4"],  # ties at the edge: o03 a/B/c share their time
    ["--all", "--json", "--limit", "37"],
    ["--all", "--json", "--since", "2025-12-29T09:28:20Z", "--until", "2026-01-01"],
    ["--all", "--json", "--grep", "q*"],
    ["--all", "--json", "--grep", "task", "--limit", "2"],
    ["--all", "--json", "--sort", "size", "--limit", "5"],
    ["--all", "--json", "--reverse", "--limit", "3"],
    ["--all", "--json", "--sort", "title"],
    ["--project", "/work/hand", "--json"],
    ["--project", "/work/hand", "--json", "--limit", "2"],
    ["--project", "/work/nowhere"],
    ["--all"],
]


def _outputs(url: str) -> list[tuple[int, str, str]]:
    return [run(cli, "list", "--store", url, *options) for options in OPTIONS]


def test_the_listing_from_the_tables_is_the_one_from_the_bytes(url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    report = sync_urls(f"file:{corpus(tmp_path)}", url, use_state=False)
    assert report.count("copied") > 120 and report.derived is None  # no search tables yet
    monkeypatch.setenv("COLUMNS", "150")
    before = _outputs(url)
    assert json.loads(before[0][1]) and "skipped 12 stored file(s)" in before[0][2]
    assert [r["path"].rsplit("/", 1)[1] for r in json.loads(before[0][1]) if r["subagent_of"]] == \
        ["agent-a.jsonl", "agent-b.jsonl"]
    assert run(cli, "index", "--store", url)[0] == 0

    def no_bytes(*args: Any) -> None:
        raise AssertionError("a session's bytes were read")

    monkeypatch.setattr(store_listing, "store_session_info", no_bytes)
    after = _outputs(url)
    for options, was, now in zip(OPTIONS, before, after, strict=True):
        assert now == was, options


def _library(url: str, tables: DerivedTables, **kw: Any) -> tuple[StoreListing, StoreListing]:
    storage = open_store(url)
    try:
        from_bytes = list_store_sessions(storage, ROOT, all_buckets=True)
    finally:
        storage.close()
    return from_bytes, list_derived_sessions(tables, ROOT, all_buckets=True, **kw)


def _plain(listing: StoreListing) -> Any:
    def one(info: SessionInfo) -> Any:
        return {**info.__dict__, "all_messages_text": None}

    return ([one(i) for i in listing.sessions], {k: [one(i) for i in v] for k, v in listing.subagents.items()},
            listing.skipped)


# ----- the upkeep keeps the listing: random histories of appends, cut lines and retitles ----------

KEYS = [ROOT + "--a--/2026-01-01T00-00-00-000Z_s0.jsonl", ROOT + "--a--/2026-01-02T00-00-00-000Z_s1.jsonl",
        ROOT + "--a--/2026-01-01T00-00-00-000Z_s0/agent.jsonl"]
_ROLES = ["user", "assistant", "toolResult", "developer", "label", "compaction"]
_OPS = st.lists(st.tuples(st.sampled_from(["append", "append", "append", "cut", "whole-unended", "title",
                                           "refresh"]),
                          st.integers(0, len(KEYS) - 1), st.sampled_from(_ROLES),
                          st.sampled_from([5, 700, 3500, 20_000, 34_000]),
                          st.sampled_from(["stop", "error", "aborted", "length", "toolUse"])),
                min_size=1, max_size=10)


def _record(n: int, role: str, chars: int, stop: str) -> dict[str, Any]:
    if role == "label":
        return entry(f"e{n}", None, type="label", targetId="e1", label="l" * chars)
    if role == "compaction":
        return entry(f"e{n}", None, type="compaction", summary="s" * chars, shortSummary=f"short {n}",
                     firstKeptEntryId="e1", tokensBefore=1)
    return _big(n, role, chars, stop)


def _step(storage: SessionStorage, op: str, k: int, role: str, chars: int, stop: str, n: int) -> None:
    key = KEYS[k]
    if storage.stat(key) is None:
        head = header(f"s{k}", cwd="/w") if k < 2 else header("agent", cwd="/w", parentSession=KEYS[0])
        start = build_title_slot("first", "user", TS) if k == 1 else b""
        storage.replace(key, start + jsonl([head]).encode(), None)
    text = line(_record(n, role, chars, stop)).encode()
    if op == "append":
        storage.append(key, text + b"\n")
    elif op in ("cut", "whole-unended"):  # a writer still at it: part of a line, or all of it but its LF
        storage.append(key, text[: 1 + chars // 3] if op == "cut" else text)
    elif op == "title" and k == 1:
        storage.write_title_slot(key, build_title_slot(f"title {n} " + "t" * (chars % 97), "user", TS))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
# the line that gave the status slides out of the last 32 KB, at once or over two updates
@example(ops=[("append", 0, "assistant", 5, "error"), ("refresh", 0, "user", 5, "stop"),
              ("append", 0, "label", 34_000, "stop")])
@example(ops=[("append", 0, "assistant", 5, "error"), ("refresh", 0, "user", 5, "stop"),
              ("append", 0, "label", 20_000, "stop"), ("refresh", 0, "user", 5, "stop"),
              ("append", 0, "compaction", 20_000, "stop")])
# a last line without its LF gives the status; completed, it still does, until another one comes
@example(ops=[("append", 1, "user", 5, "stop"), ("refresh", 0, "user", 5, "stop"),
              ("whole-unended", 1, "assistant", 5, "aborted"), ("refresh", 0, "user", 5, "stop"),
              ("append", 1, "label", 5, "stop")])
def test_upkeep_keeps_the_listing_of_the_bytes(url: str, ops: list[tuple[str, int, str, int, str]]) -> None:
    storage = open_store(url, create=True)
    try:
        for key in [f.path for f in storage.scan(ROOT)]:
            storage.delete(key)
        with open_derived(url) as tables:
            if tables.exists():
                tables.drop_rows()
        refresh_url(url)
        for n, (op, k, role, chars, stop) in enumerate(ops, 2):
            if op == "refresh":
                refresh_url(url)
            else:
                _step(storage, op, k, role, chars, stop, n)
    finally:
        storage.close()
    refresh_url(url)
    with open_derived(url) as tables:
        from_bytes, derived = _library(url, tables)
        assert _plain(derived) == _plain(from_bytes)
        tables.drop_rows()
    refresh_url(url)  # and a rebuild lists the same
    with open_derived(url) as tables:
        assert _plain(_library(url, tables)[1]) == _plain(from_bytes)


def test_a_long_session_grown_is_read_from_its_anchor_only(url: str) -> None:
    storage = open_store(url, create=True)
    try:
        storage.replace(KEYS[0], jsonl([header("s0"), _big(1, "user", 5000)]).encode(), None)
        refresh_url(url)
        extra = (line(_big(2, "assistant", 10, "error")) + "\n").encode()
        storage.append(KEYS[0], extra)
        report = refresh_url(url)
        assert report is not None and report.grown == [KEYS[0]] and report.bytes_read == len(extra) + 64
        with open_derived(url) as tables:
            (info,) = list_derived_sessions(tables, ROOT, all_buckets=True).sessions
        assert (info.status, info.message_count, info.first_message[:6]) == ("error", 1, "user 1")
    finally:
        storage.close()


# ----- --limit: about LIMIT rows, whatever the number of sessions ----------------------------------


def test_limit_reads_about_limit_rows(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = open_store(url, create=True)
    try:
        for s in range(240):
            # 40 times shared by 6 sessions each, whose paths differ in case: omp orders them by
            # creation time, then localeCompare on the path
            key = f"{ROOT}--p{s % 3}--/{'AbCdEf'[s % 6]}{s:03d}.jsonl"
            storage.replace(key, jsonl([header(f"id{s}", timestamp=f"2026-01-01T00:00:0{s % 2}.000Z"),
                                         entry("e1", None, message=user(f"q{s}"))]).encode(), None)
            assert storage.set_mtime(key, 1_767_000_000_000 + (s // 6) * 1000, storage.stat(key).size)  # type: ignore[union-attr]
    finally:
        storage.close()
    refresh_url(url)
    with open_derived(url) as tables:
        full = _library(url, tables)[0].sessions
        assert len(full) == 240
        if tables.dialect == "postgres":  # so many new rows: the update gathered the planner's statistics
            assert tables.rows("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = ?",
                               (tables.names.sessions,))[0][0] is not None
        fetched: list[int] = []
        rows = tables.rows

        def counted(sql: str, params: Any = (), action: str = "") -> list[Any]:
            out = rows(sql, params, action)
            fetched.append(len(out))
            return out

        monkeypatch.setattr(tables, "rows", counted)
        for limit in (1, 5, 6, 7, 100):
            fetched.clear()
            got = list_derived_sessions(tables, ROOT, all_buckets=True, limit=limit).sessions
            assert [i.path for i in got] == [i.path for i in full[:limit]]
            assert sum(fetched) <= 2 * limit + 12  # the page, its ties, and the (no) subagents
        fetched.clear()
        since = 1_767_000_000_000 + 30 * 1000
        got = list_derived_sessions(tables, ROOT, all_buckets=True, since_ms=since).sessions
        assert [i.path for i in got] == [i.path for i in full if i.modified >= since] and sum(fetched) <= 70


# ----- --user / --machine ------------------------------------------------------------------------


def _machine(folder: Path, owner: str, count: int) -> None:
    for s in range(count):
        write_session(folder / "--work-p--" / f"2026-01-01T00-00-0{s}-000Z_{owner}{s}.jsonl",
                      [entry("e0", None, message=user(f"question from {owner} {s}"))],
                      head=header(f"{owner}{s}", cwd="/work/p"))


def _ids(out: str) -> list[str]:
    return sorted(r["id"] for r in json.loads(out))


def test_user_and_machine_filters(url: str, tmp_path: Path) -> None:
    assert run(cli, "index", "--store", url)[0] == 0
    for owner, ns, count in (("alice", "alice@laptop", 2), ("bob", "bob@laptop", 1), ("carol", "carol@desk", 1)):
        _machine(tmp_path / owner, owner, count)
        sync_urls(f"file:{tmp_path / owner}", url, use_state=False, namespace=ns)
    assert _ids(run(cli, "list", "--store", url, "--all", "--json", "--user", "alice")[1]) == ["alice0", "alice1"]
    assert _ids(run(cli, "list", "--store", url, "--all", "--json", "--machine", "laptop")[1]) == \
        ["alice0", "alice1", "bob0"]
    assert _ids(run(cli, "list", "--store", url, "--all", "--json", "--user", "bob", "--machine", "laptop",
                    "--limit", "1")[1]) == ["bob0"]
    assert run(cli, "list", "--store", url, "--all", "--json", "--user", "ali")[1].strip() == "[]"
    code, _, err = run(cli, "list", "--store", url, "--all", "--user", "")
    assert code == 2 and "--user: the user is empty" in err
    code, _, err = run(cli, "list", "--all", "--machine", "laptop")
    assert code == 2 and "--machine is for a store's sessions: it needs --store URL" in err


def test_without_search_tables_the_bytes_are_read(url: str, tmp_path: Path) -> None:
    _machine(tmp_path / "m", "dana", 2)
    sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    code, out, err = run(cli, "list", "--store", url, "--all", "--json")
    assert code == 0 and _ids(out) == ["dana0", "dana1"] and err == ""
    code, _, err = run(cli, "list", "--store", url, "--all", "--user", "dana")
    assert code == 1 and "--user needs the search tables, and there are none yet: run omp-session index --store URL" in err


def test_tables_of_an_older_layout(url: str, tmp_path: Path) -> None:
    _machine(tmp_path / "m", "erin", 2)
    sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    refresh_url(url)
    with open_derived(url) as tables:
        assert tables.version() == SCHEMA_VERSION
        # the first layout: no list columns, no layout column
        for column in ("first_message", "layout"):
            tables.rows(f"ALTER TABLE {tables.names.sessions} DROP COLUMN {column}")
        assert tables.version() == 1
    code, out, err = run(cli, "list", "--store", url, "--all", "--json")
    assert code == 0 and _ids(out) == ["erin0", "erin1"]
    assert f"reading every session: the search tables of {url.split('?')[0]} are of another layout (1" in err
    code, _, err = run(cli, "list", "--store", url, "--all", "--machine", "x")
    assert code == 1 and "--machine needs the search tables, and they are of an older layout (1, " in err
    assert "run omp-session index --store URL" in err
    # --refresh derives them again in this layout, and lists from them
    code, out, err = run(cli, "list", "--store", url, "--all", "--json", "--refresh")
    assert code == 0 and _ids(out) == ["erin0", "erin1"] and "reading every session" not in err
    with open_derived(url) as tables:
        assert tables.version() == SCHEMA_VERSION


def test_mysql_has_no_search_tables(tmp_path: Path) -> None:
    table = f"t_{uuid.uuid4().hex[:16]}"
    url = f"{MYSQL_URL}?table={table}&root={ROOT}"
    try:
        _machine(tmp_path / "m", "finn", 1)
        sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
        assert _ids(run(cli, "list", "--store", url, "--all", "--json")[1]) == ["finn0"]
        code, _, err = run(cli, "list", "--store", url, "--all", "--user", "finn")
        assert code == 1 and "--user needs the search tables: not supported: use PostgreSQL or SQLite" in err
    finally:
        drop_table("mysql", table)


# ----- what the tables do not know yet ------------------------------------------------------------


def test_the_listing_is_as_of_the_last_update(url: str, tmp_path: Path) -> None:
    _machine(tmp_path / "m", "gus", 1)
    sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    refresh_url(url)
    storage = open_store(url)
    try:  # omp writes a session into the table itself: nothing tells the search tables
        storage.replace(ROOT + "--work-p--/2026-02-01T00-00-00-000Z_omp.jsonl",
                        jsonl([header("omp", cwd="/work/p"), entry("e0", None, message=user("hi"))]).encode(), None)
    finally:
        storage.close()
    assert _ids(run(cli, "list", "--store", url, "--all", "--json")[1]) == ["gus0"]
    assert _ids(run(cli, "list", "--store", url, "--all", "--json", "--refresh")[1]) == ["gus0", "omp"]
    assert _ids(run(cli, "list", "--store", url, "--all", "--json")[1]) == ["gus0", "omp"]
    code, _, err = run(cli, "list", "--all", "--refresh")
    assert code == 2 and "--refresh is for a store's sessions" in err


# ----- the status after an append, from the new bytes and what was kept ---------------------------

_LINES = st.sampled_from([line(_big(1, "assistant", 5, "error")).encode(), line(_big(2, "user", 5)).encode(),
                          line(_big(3, "toolResult", 20_000)).encode(), line(_record(4, "label", 15_000, "")).encode(),
                          b'{"type":"message","message":null}', b"not json", b""])


@settings(max_examples=300, deadline=None)
@given(kept=st.lists(_LINES, max_size=6), was=st.lists(_LINES, max_size=2), new=st.lists(_LINES, max_size=6),
       ended=st.booleans())
def test_the_status_after_an_append_is_omp_s(kept: list[bytes], was: list[bytes], new: list[bytes],
                                              ended: bool) -> None:
    """What an update keeps of the whole lines (``complete_status``) and the bytes from a line
    start on (what replaced a line being written there included) give the status omp's listing
    reads from the last 32 KB of all the bytes."""
    from omp_session.catalog.list_facts import complete_status, complete_status_after, shown_status
    from omp_session.catalog.listing import _derive_status, decode_text

    start = b"".join(x + b"\n" for x in kept)
    before = start + b"\n".join(was)  # a last line still being written, or none
    status, at = complete_status(before, len(start))
    assert shown_status(status, at, before[len(start):], len(start)) == _derive_status(decode_text(before[-32768:]))
    after = b"\n".join(new) + (b"\n" if ended and new else b"")
    cut = after.rfind(b"\n") + 1
    status, at = complete_status_after(status, at, after[:cut], len(start))
    whole = start + after
    assert shown_status(status, at, after[cut:], len(start) + cut) == _derive_status(decode_text(whole[-32768:]))


def test_reading_the_search_tables_leaves_the_session_table_unopened(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # list/stats/search --store on PostgreSQL read the search tables on a connection of their own:
    # connecting to and checking omp's table as well cost as much again (issue 20's list target)
    from omp_session.store import postgres

    with team_url("postgres", tmp_path) as url:
        sync_urls(f"file:{corpus(tmp_path)}", url, use_state=False)
        assert run(cli, "index", "--store", url)[0] == 0
        opened: list[str] = []
        real = postgres.PostgresStorage.__init__

        def counting(self: Any, *args: Any, **kw: Any) -> None:
            opened.append(args[1])
            real(self, *args, **kw)

        monkeypatch.setattr(postgres.PostgresStorage, "__init__", counting)
        code, out, err = run(cli, "list", "--store", url, "--all", "--json", "--limit", "3")
        assert code == 0 and len(json.loads(out)) == 3, err
        assert run(cli, "stats", "--store", url, "--all", "--json")[0] == 0
        assert run(cli, "search", "--store", url, "question", "--json")[0] == 0
        assert opened == []
        # a command that reads a session still opens it, once
        key = json.loads(out)[0]["path"]
        code, out, err = run(cli, "show", "--store", url, key)
        assert code == 0 and len(opened) == 1, err


def test_a_server_on_an_unreachable_store_says_so_before_it_listens() -> None:
    code, out, err = run(cli, "serve", "--store", "postgresql://postgres@127.0.0.1:1/test", "--port", "0")
    assert code == 1 and out == ""
    assert err.startswith("omp-session: postgresql://postgres@127.0.0.1:1/test: cannot connect") and \
        err.count("\n") == 1, err


def test_a_role_that_may_not_read_the_search_tables_lists_from_the_sessions(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the search tables are found in the catalog (information_schema's views cost a new backend
    # ~10 ms each), seen only where this role may use them, as information_schema shows them: a
    # role granted omp's table alone lists what the owner lists, not "permission denied"
    import psycopg

    from stores.teamutil import POSTGRES_URL, as_role, pg_roles

    role = f"omp_nogrant_{uuid.uuid4().hex[:10]}"
    with team_url("postgres", tmp_path) as url, pg_roles(role):
        sync_urls(f"file:{corpus(tmp_path)}", url, use_state=False)
        assert run(cli, "index", "--store", url)[0] == 0
        table = url.split("table=")[1].split("&")[0]
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"GRANT SELECT ON {table} TO {role}")
        monkeypatch.setenv("COLUMNS", "150")
        owner = run(cli, "list", "--store", url, "--all", "--json")
        assert owner[0] == 0 and json.loads(owner[1])
        assert run(cli, "list", "--store", as_role(role, url), "--all", "--json")[:2] == owner[:2]
