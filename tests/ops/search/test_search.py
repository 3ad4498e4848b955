"""Full-text search: the index (search_index.py), the query API (search.py) and the CLI."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import builders
import omp_session
from omp_session.cli import cli
from omp_session.errors import IndexBusyError, QueryError
from omp_session.format.title import build_title_slot
from omp_session.ops.search.index import SearchIndex, default_index_path
from omp_session.ops.search.query import search, to_fts

SID = "01a22989-1ccc-77b3-9bc9-2dc4e7a36188"


CREATED = "2026-05-01T10:00:00.000Z"


def line(value: dict[str, Any]) -> bytes:
    return builders.jsonl([value]).encode()


def header(sid: str = SID, cwd: str = "/work/proj", title: str | None = None) -> dict[str, Any]:
    return builders.header(sid, timestamp=CREATED, cwd=cwd, **({} if title is None else {"title": title}))


def msg(eid: str, parent: str | None, role: str, content: Any, ts: str = "2026-05-01T10:01:00.000Z",
        **extra: Any) -> dict[str, Any]:
    return builders.entry(eid, parent, timestamp=ts, message={"role": role, "content": content, "timestamp": 0, **extra})


def write_session(path: Path, entries: list[dict[str, Any]], *, slot: str | None = None, **head: Any) -> Path:
    return builders.write_session(path, entries, head=header(**head), slot=slot, slot_timestamp=CREATED)


def rich_session() -> list[dict[str, Any]]:
    return [
        msg("u1", None, "user", "please fix the zebrafish importer"),
        msg("a1", "u1", "assistant", [
            {"type": "thinking", "thinking": "the quokka module is involved"},
            {"type": "text", "text": "looking at the platypus code"},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "grep -rn narwhal src"}}]),
        msg("t1", "a1", "toolResult", [{"type": "text", "text": "src/x.py: axolotl found"}], toolCallId="c1",
            toolName="bash", isError=False),
        {"type": "label", "id": "l1", "parentId": "t1", "timestamp": "2026-05-01T10:02:00.000Z", "targetId": "u1",
         "label": "wombat checkpoint"},
        {"type": "compaction", "id": "k1", "parentId": "l1", "timestamp": "2026-05-01T10:03:00.000Z",
         "summary": "summary mentions capybara", "firstKeptEntryId": "u1", "tokensBefore": 10},
        {"type": "branch_summary", "id": "b1", "parentId": "k1", "timestamp": "2026-05-01T10:04:00.000Z",
         "fromId": "k1", "summary": "branch about okapi"},
    ]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    return tmp_path / "idx" / "search.sqlite"


def find(query: str, root: Path, index_path: Path, **kw: Any) -> list[Any]:
    return search(query, root=root, index_path=index_path, **kw).hits


def state(index_path: Path, path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(index_path)
    row = conn.execute("SELECT offset, size, next_seq, damaged FROM files WHERE path = ?", (str(path),)).fetchone()
    conn.close()
    return dict(zip(("offset", "size", "next_seq", "damaged"), row, strict=True))


# ----- the query language -----------------------------------------------------------------------


def test_sqlite_has_fts5() -> None:
    sqlite3.connect(":memory:").execute("create virtual table t using fts5(x)")


@pytest.mark.parametrize(("query", "fts"), [
    ("reader offset", '"reader" AND "offset"'),
    ('"title slot" pars*', '"title slot" AND "pars"*'),
    ("(tail OR follow) NOT grep", '( "tail" OR "follow" ) NOT "grep"'),
    ("a (b OR c)", '"a" AND ( "b" OR "c" )'),
    ("and or not", '"and" AND "or" AND "not"'),  # operators are upper case only
    ('say "x""y"', '"say" AND "x" AND "y"'),
    ("col:umn NEAR(x)", '"col:umn" AND NEAR("x")'),  # no column filters; NEAR( is FTS5's (issue 15)
    ("it's", '"it\'s"'),
])
def test_query_translation(query: str, fts: str) -> None:
    assert to_fts(query) == fts


@pytest.mark.parametrize(("query", "message"), [
    ('"unclosed', "unclosed quote"), ('it"s', "unclosed quote"), ("(a", "unbalanced '('"), ("a)", "unbalanced ')'"),
    ("NOT a", "NOT needs a term before it"), ("a OR", "OR needs a term after it"), ("", "empty query"),
    ("()", "empty or unfinished group"),
])
def test_bad_queries_say_why(query: str, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)):
        to_fts(query)


# ----- what is searchable -----------------------------------------------------------------------


def test_every_kind_of_text_is_found(root: Path, index_path: Path) -> None:
    p = write_session(root / "proj" / "s.jsonl", rich_session(), slot="the pangolin session")
    expect = {"zebrafish": ("u1", "user", "text"), "platypus": ("a1", "assistant", "text"),
              "narwhal": ("a1", "assistant", "tool_call"), "axolotl": ("t1", "toolResult", "tool_result"),
              "wombat": ("l1", None, "label"), "capybara": ("k1", None, "summary"),
              "okapi": ("b1", None, "summary"), "pangolin": (None, None, "title")}
    for word, (eid, role, kind) in expect.items():
        hits = find(word, root, index_path)
        assert [(h.entry_id, h.role, h.kind) for h in hits] == [(eid, role, kind)], word
        assert hits[0].path == str(p) and hits[0].session_id == SID and hits[0].title == "the pangolin session"
    assert find("wombat", root, index_path)[0].target_id == "u1"
    assert find("quokka", root, index_path) == []
    assert [h.kind for h in find("quokka", root, index_path, thinking=True)] == ["thinking"]


def test_snippet_marks_hits_and_phrases_prefixes_booleans(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [
        msg("u1", None, "user", "the quick brown fox jumps"),
        msg("u2", "u1", "user", "a brown quick fox", ts="2026-05-01T10:02:00.000Z")])
    assert [h.entry_id for h in find('"quick brown"', root, index_path)] == ["u1"]
    assert {h.entry_id for h in find("qui*", root, index_path)} == {"u1", "u2"}
    assert [h.entry_id for h in find("fox NOT jumps", root, index_path)] == ["u2"]
    assert {h.entry_id for h in find("jumps OR brown", root, index_path)} == {"u1", "u2"}
    hit = find('"quick brown"', root, index_path)[0]
    assert hit.snippet_text() == "the [quick brown] fox jumps"  # a phrase is one highlighted span
    # equal scores: the newer entry first
    assert [h.entry_id for h in find("fox", root, index_path)] == ["u2", "u1"]


def test_slot_title_overrides_header_title(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [], slot="slotname", title="headername")
    assert [h.kind for h in find("slotname", root, index_path)] == ["title"]
    assert find("headername", root, index_path) == []


# ----- incremental updates ----------------------------------------------------------------------


def test_growth_reads_only_the_appended_bytes(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", rich_session(), slot="t")
    other = write_session(root / "q" / "o.jsonl", [msg("x", None, "user", "untouched")], sid="other")
    with SearchIndex(index_path) as ix:
        first = ix.update(root)
        assert sorted(first.added) == sorted([str(p), str(other)])
        before = state(index_path, p)
        assert before["offset"] == p.stat().st_size
        added = line(msg("u9", "b1", "user", "the appended gazelle"))
        with open(p, "ab") as f:
            f.write(added)
        report = ix.update(root)
    assert report.grown == [str(p)] and report.added == [] and report.reindexed == []
    assert report.unchanged == 1  # the other file: one stat, nothing read
    assert report.bytes_parsed == len(added)
    assert report.bytes_read <= len(added) + 256 + 64  # plus the title slot and anchor checks
    assert report.entries_added == 1
    after = state(index_path, p)
    assert after["offset"] == before["offset"] + len(added) == p.stat().st_size
    assert after["next_seq"] == before["next_seq"] + 1
    assert [h.entry_id for h in find("gazelle", root, index_path)] == ["u9"]


def test_half_written_line_waits_for_its_lf(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "hello")])
    size = p.stat().st_size
    whole = line(msg("u2", "u1", "user", "a meerkat arrives"))
    with SearchIndex(index_path) as ix:
        ix.update(root)
        with open(p, "ab") as f:
            f.write(whole[:-1])  # complete JSON, but no LF yet: a write in progress
        report = ix.update(root)
        assert report.bytes_parsed == 0 and report.entries_added == 0 and report.damaged == []
        assert state(index_path, p)["offset"] == size
        assert find("meerkat", root, index_path) == []
        with open(p, "ab") as f:
            f.write(b"\n")
        report = ix.update(root)
    assert report.bytes_parsed == len(whole) and report.damaged == []
    assert [h.entry_id for h in find("meerkat", root, index_path)] == ["u2"]


def test_first_update_of_a_file_with_a_partial_tail(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "hello")])
    with open(p, "ab") as f:
        f.write(line(msg("u2", "u1", "user", "kiwi bird"))[:30])
    hits = find("kiwi", root, index_path)
    assert hits == [] and state(index_path, p)["damaged"] == 0


def _touch_later(p: Path) -> None:
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_same_size_rewrite_in_place_is_reindexed(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "x" * 300), msg("u2", "u1", "user", "lemur"),
                                               msg("u3", "u2", "user", "y" * 300)])
    ino = p.stat().st_ino
    find("lemur", root, index_path)
    data = p.read_bytes()
    with open(p, "r+b") as f:  # same inode, same size, same head and tail: only the middle differs
        f.write(data.replace(b"lemur", b"tapir"))
    _touch_later(p)
    assert p.stat().st_ino == ino
    result = search("tapir", root=root, index_path=index_path)
    assert result.report is not None and result.report.reindexed == [(str(p), "rewritten in place")]
    assert [h.entry_id for h in result.hits] == ["u2"]
    assert find("lemur", root, index_path) == []


def test_title_slot_rewrite_is_reindexed(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "hi")], slot="old heron title")
    assert len(find("heron", root, index_path)) == 1
    with open(p, "r+b") as f:  # omp's in-place slot rewrite: same inode, same size (S1.2.7)
        f.write(build_title_slot("new egret title", "user", "2026-05-02T10:00:00.000Z"))
    _touch_later(p)
    result = search("egret", root=root, index_path=index_path)
    assert result.report is not None and result.report.reindexed == [(str(p), "title slot or header rewritten")]
    assert [h.title for h in result.hits] == ["new egret title"]
    assert find("heron", root, index_path) == []


def test_replaced_file_and_shrunk_file_are_reindexed(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "bison"), msg("u2", "u1", "user", "yak")])
    find("bison", root, index_path)
    tmp = write_session(root / "p" / ".tmp", [msg("u1", None, "user", "walrus")])
    os.replace(tmp, p)  # omp's atomic rewrite (S8.4): a new inode
    result = search("walrus", root=root, index_path=index_path)
    assert result.report is not None and result.report.reindexed == [(str(p), "replaced (new inode)")]
    assert len(result.hits) == 1 and find("bison", root, index_path) == []
    data = p.read_bytes()
    with open(p, "r+b") as f:
        f.truncate(len(data) - len(line(msg("u1", None, "user", "walrus"))))
    result = search("walrus", root=root, index_path=index_path)
    assert result.report is not None and result.report.reindexed == [(str(p), "shrank")]
    assert result.hits == []


def test_deleted_sessions_leave_the_index(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "ocelot")])
    keep = write_session(root / "p" / "k.jsonl", [msg("u1", None, "user", "ocelot")], sid="keep")
    assert len(find("ocelot", root, index_path)) == 2
    p.unlink()
    result = search("ocelot", root=root, index_path=index_path)
    assert result.report is not None and result.report.removed == [str(p)]
    assert [h.path for h in result.hits] == [str(keep)]
    conn = sqlite3.connect(index_path)
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 2  # keep's header and message
    conn.close()


def test_a_session_deleted_after_an_interrupted_update_leaves_the_index(root: Path, index_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import omp_session.ops.search.index as search_index

    write_session(root / "p" / "a.jsonl", [msg("u1", None, "user", "ocelot")], sid="A")
    assert len(find("ocelot", root, index_path)) == 1
    for n, name in enumerate("bc"):
        p = write_session(root / "p" / f"{name}.jsonl", [msg("u1", None, "user", "ocelot")], sid=name.upper())
        os.utime(p, (1, 1 + n))  # b is indexed first
    monkeypatch.setattr(search_index, "_BATCH_BYTES", 1)  # every file in its own transaction

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt  # Ctrl-C once b's transaction is committed

    with SearchIndex(index_path) as ix, pytest.raises(KeyboardInterrupt):
        ix.update(root, progress=interrupt)
    (root / "p" / "b.jsonl").unlink()
    result = search("ocelot", root=root, index_path=index_path)
    assert result.report is not None and result.report.removed == [str(root / "p" / "b.jsonl")]
    assert sorted(h.session_id for h in result.hits) == ["A", "C"]


def test_a_session_another_indexer_added_leaves_the_index_when_deleted(root: Path, index_path: Path) -> None:
    a = write_session(root / "p" / "a.jsonl", [msg("u1", None, "user", "ocelot")], sid="A")
    find("ocelot", root, index_path)
    with open(a, "ab") as f:
        f.write(line(msg("u2", "u1", "user", "more")))
    g = root / "p" / "g.jsonl"
    ix = SearchIndex(index_path)
    stamps = ix._stamps

    def other_indexer_meanwhile() -> dict[str, list[int]]:
        loaded = stamps()  # this update's view: a as it was, no g
        write_session(g, [msg("u1", None, "user", "ocelot")], sid="G")
        with SearchIndex(index_path) as other:
            other.update(root)
        return loaded

    ix._stamps = other_indexer_meanwhile  # type: ignore[method-assign]
    ix.update(root)
    ix.close()
    g.unlink()
    result = search("ocelot", root=root, index_path=index_path)
    assert result.report is not None and result.report.removed == [str(g)]
    assert [h.session_id for h in result.hits] == ["A"]


def test_subagent_sessions_are_indexed(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [])
    sub = write_session(root / "p" / "s" / "agent1.jsonl", [msg("u1", None, "user", "gecko")], sid="sub")
    assert [h.path for h in find("gecko", root, index_path)] == [str(sub)]


# ----- damaged input ----------------------------------------------------------------------------


def test_damaged_file_is_indexed_partially_and_reported_once(root: Path, index_path: Path) -> None:
    p = root / "p" / "s.jsonl"
    p.parent.mkdir(parents=True)
    p.write_bytes(line(header()) + line(msg("u1", None, "user", "before")) + b'{"type":"message","id" oops}\n'
                  + line(msg("u2", "u1", "user", "after damage")))
    with SearchIndex(index_path) as ix:
        first = ix.update(root)
        assert len(first.damaged) == 1 and f"{p}:3:" in first.damaged[0]
        with open(p, "ab") as f:
            f.write(line(msg("u3", "u2", "user", "more")))
        assert ix.update(root).damaged == []
    assert len(find("before", root, index_path)) == 1 and len(find("damage", root, index_path)) == 1
    # damage in appended bytes is reported once too
    with open(p, "ab") as f:
        f.write(b"not json at all\n")
    runner = CliRunner()
    args = ["search", "more", "--root", str(root), "--index", str(index_path), "--json"]
    r1 = runner.invoke(cli, args)
    r2 = runner.invoke(cli, args)
    assert r1.exit_code == 0 and f"{p}:6:" in r1.stderr
    assert r2.exit_code == 0 and r2.stderr == ""


def test_unreadable_header_still_indexes_entries(root: Path, index_path: Path) -> None:
    p = root / "p" / "2026-05-01T10-00-00-000Z_abcd.jsonl"
    p.parent.mkdir(parents=True)
    p.write_bytes(line({"type": "nonsense"}) + line(msg("u1", None, "user", "heronry")))
    hits = find("heronry", root, index_path)
    assert [(h.session_id, h.entry_id) for h in hits] == [("abcd", "u1")]


def test_corrupt_index_is_moved_aside_and_rebuilt(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "jackal")])
    index_path.parent.mkdir(parents=True)
    index_path.write_bytes(os.urandom(8192))
    notices: list[str] = []
    result = search("jackal", root=root, index_path=index_path, on_notice=notices.append)
    assert len(result.hits) == 1
    assert len(notices) == 1 and "damaged" in notices[0] and "rebuilding" in notices[0]
    assert len(list(index_path.parent.glob("search.sqlite.corrupt-*"))) == 1


def test_locked_index_waits_with_a_message(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "dingo")])
    SearchIndex(index_path).close()
    holder = sqlite3.connect(index_path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another indexer in the middle of its work
    timer = threading.Timer(0.6, lambda: holder.execute("COMMIT"))
    timer.start()
    notices: list[str] = []
    try:
        result = search("dingo", root=root, index_path=index_path, on_notice=notices.append)
    finally:
        timer.join()
        holder.close()
    assert len(result.hits) == 1
    assert notices == [f"waiting for another indexer to finish with {index_path} ..."]


def test_index_locked_too_long_is_a_clear_error(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "dingo")])
    SearchIndex(index_path).close()
    holder = sqlite3.connect(index_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with SearchIndex(index_path, wait=0.3) as ix, pytest.raises(IndexBusyError, match="locked for more than"):
            ix.update(root)
    finally:
        holder.close()


# ----- concurrency ------------------------------------------------------------------------------


def test_appends_while_indexing_never_index_half_lines(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("e0", None, "user", "start")])
    n = 60
    lines = [line(msg(f"e{i}", f"e{i - 1}", "user", f"word{i} " + "filler " * (i * 7))) for i in range(1, n + 1)]
    done = threading.Event()

    def writer() -> None:
        with open(p, "ab", buffering=0) as f:
            for data in lines:
                half = len(data) // 2
                f.write(data[:half])  # a slow writer: the line arrives in two writes
                time.sleep(0.002)
                f.write(data[half:])
        done.set()

    thread = threading.Thread(target=writer)
    with SearchIndex(index_path) as ix:
        thread.start()
        while not done.is_set():
            report = ix.update(root)
            assert report.damaged == []
        thread.join()
        ix.update(root)
    st = state(index_path, p)
    assert st["offset"] == p.stat().st_size and st["next_seq"] == n + 2 and st["damaged"] == 0
    assert len(find("word*", root, index_path, limit=None)) == n


def test_two_indexers_at_once_index_each_line_once(root: Path, index_path: Path) -> None:
    for k in range(8):
        write_session(root / "p" / f"s{k}.jsonl", [msg(f"u{j}", None, "user", f"emu {j}") for j in range(50)],
                      sid=f"s{k}")
    SearchIndex(index_path).close()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with SearchIndex(index_path) as ix:
                ix.update(root)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(find("emu", root, index_path, limit=None)) == 8 * 50


# ----- filters ----------------------------------------------------------------------------------


def test_filters(root: Path, index_path: Path) -> None:
    a = write_session(root / "a" / "a.jsonl", [
        msg("u1", None, "user", "hyena one", ts="2026-05-01T10:00:00.000Z"),
        msg("a1", "u1", "assistant", [{"type": "text", "text": "hyena two"}], ts="2026-05-02T10:00:00.000Z"),
        msg("t1", "a1", "toolResult", [{"type": "text", "text": "hyena three"}], ts="2026-05-03T10:00:00.000Z"),
    ], sid="A", cwd="/work/alpha")
    b = write_session(root / "b" / "b.jsonl", [msg("u1", None, "user", "hyena four", ts="2026-05-04T10:00:00.000Z")],
                      sid="B", cwd="/work/alpha/sub")
    write_session(root / "c" / "c.jsonl", [msg("u1", None, "user", "hyena five")], sid="C", cwd="/work/alphabet")

    def ids(**kw: Any) -> set[tuple[str | None, str | None]]:
        return {(h.session_id, h.entry_id) for h in find("hyena", root, index_path, **kw)}

    assert ids(role="user") == {("A", "u1"), ("B", "u1"), ("C", "u1")}
    assert ids(role="assistant") == {("A", "a1")}
    assert ids(role="tool") == {("A", "t1")}
    assert ids(cwd="/work/alpha") == {("A", "u1"), ("A", "a1"), ("A", "t1"), ("B", "u1")}
    day = 86_400_000
    may2 = 1_777_716_000_000  # 2026-05-02T10:00Z
    assert ids(since_ms=may2, until_ms=may2 + 2 * day) == {("A", "a1"), ("A", "t1")}
    assert ids(session=str(b)) == {("B", "u1")}
    assert len(find("hyena", root, index_path, limit=2)) == 2
    assert ids(session=str(a), role="user") == {("A", "u1")}


def test_current_branch(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [
        msg("u1", None, "user", "lynx root"),
        msg("a1", "u1", "assistant", [{"type": "text", "text": "lynx old branch"}]),
        msg("u2", "u1", "user", "lynx new branch"),  # the leaf: omp resumes here (S6.1)
    ], slot="lynx title")
    everything = {h.entry_id for h in find("lynx", root, index_path)}
    branch = {h.entry_id for h in find("lynx", root, index_path, current_branch=True)}
    assert everything == {None, "u1", "a1", "u2"}
    assert branch == {None, "u1", "u2"}


def test_branch_matches_the_session_reader(make_corpus: Callable[[int, int], Path], tmp_path: Path) -> None:
    """The branch walked from the indexed id/parentId columns is the reader's current branch."""
    corpus = make_corpus(11, 40)
    files = sorted(corpus.rglob("*.jsonl"))
    compared = 0
    with SearchIndex(tmp_path / "i.sqlite") as ix:
        ix.update(files=[str(f) for f in files])
        for f in files:
            if not f.read_bytes().endswith(b"\n"):
                continue
            with omp_session.open(f) as s:
                if s.migrated or s.header is None:
                    continue
                expected = {k + 1 for k in s.branch_indices()}
            file_id = ix.conn.execute("SELECT id FROM files WHERE path = ?", (str(f),)).fetchone()[0]
            assert ix.branch_seqs(file_id) == expected, f
            compared += 1
    assert compared >= 20


# ----- command line -----------------------------------------------------------------------------


def test_cli_json_fields(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", rich_session(), slot="cli title")
    r = CliRunner().invoke(cli, ["search", "zebrafish", "importer", "--root", str(root), "--index",
                                 str(index_path), "--json"])
    assert r.exit_code == 0, r.output
    [hit] = json.loads(r.stdout)
    assert hit == {"session_id": SID, "title": "cli title", "path": str(root / "p" / "s.jsonl"),
                   "cwd": "/work/proj", "entry_id": "u1", "entry_type": "message", "role": "user", "kind": "text",
                   "timestamp": "2026-05-01T10:01:00.000Z", "snippet": "please fix the [zebrafish] [importer]",
                   "score": hit["score"], "target_id": None, "resume": f"omp --resume {SID}"}


def test_cli_text_output_and_default_index(root: Path) -> None:
    write_session(root / "p" / "s.jsonl", rich_session(), slot="cli title")
    r = CliRunner().invoke(cli, ["search", "platypus", "--root", str(root)])
    assert r.exit_code == 0, r.output
    assert "cli title" in r.stdout and "entry a1" in r.stdout
    # resume's line: the file is outside its project's folder (p), so omp is given its path
    assert f"cd /work/proj && omp --resume {(root / 'p' / 's.jsonl').resolve()}" in r.stdout
    assert default_index_path().is_file()  # under $XDG_CACHE_HOME (conftest points it at a temp dir)
    r = CliRunner().invoke(cli, ["search", "nothinglikethis", "--root", str(root)])
    assert r.exit_code == 0 and "no matches" in r.stdout


def test_cli_bad_query_is_one_line(root: Path, index_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [])
    r = CliRunner().invoke(cli, ["search", '"open', "--root", str(root), "--index", str(index_path)])
    assert r.exit_code == 1
    assert r.stderr.strip().count("\n") == 0 and "unclosed quote" in r.stderr and "Traceback" not in r.output


def test_cli_session_option_and_index_command(root: Path, index_path: Path) -> None:
    p = write_session(root / "p" / "2026-05-01T10-00-00-000Z_01a22989.jsonl", [msg("u1", None, "user", "okra")])
    write_session(root / "q" / "2026-05-01T10-00-00-000Z_77777777.jsonl", [msg("u1", None, "user", "okra")],
                  sid="77777777")
    runner = CliRunner()
    r = runner.invoke(cli, ["index", "--root", str(root), "--index", str(index_path), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["added"] == 2 and out["index"]["files"] == 2
    r = runner.invoke(cli, ["search", "okra", "--session", "01a22989", "--root", str(root), "--index",
                            str(index_path), "--json"])
    assert r.exit_code == 0, r.output
    assert [h["path"] for h in json.loads(r.stdout)] == [str(p)]
    r = runner.invoke(cli, ["index", "--root", str(root), "--index", str(index_path), "--rebuild"])
    assert r.exit_code == 0 and "2 added" in r.stdout
    r = runner.invoke(cli, ["search", "okra", "--session", "nosuch", "--root", str(root)])
    assert r.exit_code == 1 and "no session matches" in r.stderr


def test_equal_scores_newest_first_on_every_path(root: Path, index_path: Path) -> None:
    """Ranking alone (no filter), through the joins (a filter), and with more ties than fit in
    the ranked window: equal bm25 scores always come newest first."""
    stamps = [f"2026-05-{d:02d}T10:00:00.000Z" for d in (3, 1, 4, 2)]
    write_session(root / "p" / "s.jsonl", [msg(f"u{k}", None, "user", "same text", ts=t) for k, t in enumerate(stamps)])
    order = ["u2", "u0", "u3", "u1"]
    assert [h.entry_id for h in find("same", root, index_path)] == order
    assert [h.entry_id for h in find("same", root, index_path, role="user")] == order
    many = [msg(f"m{k:03d}", None, "user", "tied words", ts=f"2026-01-01T00:{k // 60:02d}:{k % 60:02d}.000Z")
            for k in range(120)]
    write_session(root / "q" / "t.jsonl", many[60:] + many[:60], sid="T")
    assert [h.entry_id for h in find("tied", root, index_path, limit=5)] == ["m119", "m118", "m117", "m116", "m115"]


@pytest.mark.parametrize("damage", ["DELETE FROM meta", "UPDATE meta SET value = x'7b7b7b'",
                                    "UPDATE meta SET value = '{}'"])
def test_lost_or_stale_stamp_cache_only_costs_a_check(root: Path, index_path: Path, damage: str) -> None:
    p = write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "heron")])
    find("heron", root, index_path)
    conn = sqlite3.connect(index_path)
    conn.execute(damage)
    conn.commit()
    conn.close()
    with open(p, "ab") as f:
        f.write(line(msg("u2", "u1", "user", "egret")))
    result = search("egret", root=root, index_path=index_path)
    assert [h.entry_id for h in result.hits] == ["u2"]
    assert result.report is not None and result.report.grown == [str(p)] and result.report.reindexed == []
    assert len(find("heron", root, index_path)) == 1


def test_a_session_outside_the_root_is_indexed_and_kept_current(root: Path, index_path: Path,
                                                                tmp_path: Path) -> None:
    write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "inside")])
    outside = write_session(tmp_path / "elsewhere" / "x.jsonl", [msg("u1", None, "user", "outside puffin")],
                            sid="X")
    assert [h.session_id for h in find("puffin", root, index_path, session=str(outside))] == ["X"]
    with open(outside, "ab") as f:
        f.write(line(msg("u2", "u1", "user", "later puffin")))
    assert {h.entry_id for h in find("puffin", root, index_path, session=str(outside))} == {"u1", "u2"}
    # a search over the root alone neither loses nor refreshes it
    assert len(find("puffin", root, index_path)) == 2


def _dump(index: Path) -> tuple[list[Any], list[Any], list[Any]]:
    conn = sqlite3.connect(index)
    entries = conn.execute("SELECT seq, entry_id, parent_id, type, role, ts_ms, target_id FROM entries "
                           "ORDER BY seq").fetchall()
    docs = conn.execute("SELECT rowid & ((1 << 35) - 1), body FROM docs ORDER BY 1").fetchall()
    files = conn.execute("SELECT offset, lines, head, anchor, crc, session_id, title, next_seq, damaged "
                         "FROM files").fetchall()
    conn.close()
    return entries, docs, files


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=1, max_value=4000), min_size=1, max_size=12))
def test_appending_in_any_pieces_indexes_what_one_build_does(tmp_path: Path, cuts: list[int]) -> None:
    """Bytes arriving in arbitrary pieces (cut anywhere, mid-line, mid-UTF-8 character), with an
    update after each piece, leave the index exactly as one build of the whole file does."""
    data = build_title_slot("piecewise", "user", "2026-05-01T10:00:00.000Z") + line(header()) + b"".join(
        line(e) for e in [*rich_session(), msg("u7", "b1", "user", "naïve café ünïcode " * 20),
                          msg("u8", "u7", "assistant", [{"type": "text", "text": "日本語のテキスト"}])])
    data += b"garbage that is no json\n" + line(msg("u9", "u8", "user", "after the damage"))
    base = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    piecewise = base / "a" / "p" / "s.jsonl"
    whole = base / "b" / "p" / "s.jsonl"
    piecewise.parent.mkdir(parents=True)
    whole.parent.mkdir(parents=True)
    whole.write_bytes(data)
    ends = sorted({min(c * 3, len(data)) for c in cuts} | {len(data)})
    damage_reports = 0
    with SearchIndex(base / "a.sqlite") as ix:
        start = 0
        for end in ends:
            with open(piecewise, "ab") as f:
                f.write(data[start:end])
            start = end
            damage_reports += len(ix.update(base / "a").damaged)
    with SearchIndex(base / "b.sqlite") as ix:
        ix.update(base / "b")
    assert _dump(base / "a.sqlite") == _dump(base / "b.sqlite")
    assert damage_reports == 1


def test_a_very_common_word_ranks_only_the_newest_matches(root: Path, index_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.ops.search import query as search_module

    for i in range(6):  # session i mentions the word; the oldest file also has the only toolResult
        entries = [msg(f"u{i}", None, "user", f"common word {i}")]
        if i == 0:
            entries.append(msg("t0", "u0", "toolResult", [{"type": "text", "text": "common in a result"}],
                               toolCallId="c", toolName="bash", isError=False))
        p = write_session(root / "-p" / f"s{i}.jsonl", entries, sid=f"sid{i}")
        os.utime(p, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    everything = find("common", root, index_path, limit=None)
    assert len(everything) == 7
    monkeypatch.setattr(search_module, "RANK_CAP", 3)
    newest = find("common", root, index_path, limit=2)
    assert {h.session_id for h in newest} <= {"sid3", "sid4", "sid5"}  # files indexed oldest first
    # a filter the newest matches do not meet: every match is ranked after all
    only = find("common", root, index_path, limit=2, role="tool")
    assert [h.entry_id for h in only] == ["t0"]


def test_snippets_are_cut_around_the_first_hit() -> None:
    from omp_session.ops.search.snippet import cut_snippet, hit_pattern

    marks = ("[", "]")
    p = hit_pattern(to_fts('"quick brown" jump*'))
    assert p is not None
    assert cut_snippet("The quick  brown fox jumped", p, 24, marks) == "The [quick  brown] fox [jumped]"
    long = " ".join(f"w{i}" for i in range(200)) + " quick brown " + " ".join(f"v{i}" for i in range(200))
    cut = cut_snippet(long, p, 24, marks)
    assert cut is not None and cut.startswith("…w192 ") and cut.endswith(" v14…") and "[quick brown]" in cut
    assert len(cut.split()) == 8 + 2 + 15  # a third of the words before the hit, the rest after
    word = hit_pattern(to_fts("cache"))
    assert word is not None
    assert cut_snippet("value_cache and Cache", word, 24, marks) == "value_[cache] and [Cache]"  # _ separates
    assert cut_snippet("cached", word, 24, marks) is None  # a word, not a prefix
    assert cut_snippet("İstanbul cache", word, 24, marks) == "İstanbul [cache]"  # lower() changes length
    assert hit_pattern(to_fts('"…"')) is None


def test_a_hit_only_fts5_sees_keeps_fts5_snippet(root: Path, index_path: Path) -> None:
    write_session(root / "-p" / "s.jsonl", [msg("u1", None, "user", "un café crème")])
    hit = find("cafe", root, index_path)[0]  # the tokenizer folds diacritics; a regex does not
    assert hit.snippet_text() == "un [café] crème"


def test_a_word_of_punctuation_alone_does_not_empty_the_results(root: Path, index_path: Path) -> None:
    # FTS5 finds no token in "->" or "=": kept as a term, it made every query holding it match nothing
    write_session(root / "p" / "s.jsonl", [msg("u1", None, "user", "map a -> b where x = 1")])
    for query in ("a -> b", "x = 1", "map -", "map *", "map 🙂"):
        assert [h.entry_id for h in find(query, root, index_path)] == ["u1"], query
    assert to_fts("a -> (b OR c)") == '"a" AND ( "b" OR "c" )'
    with pytest.raises(QueryError, match="nothing to search for"):
        to_fts("-> *")


def test_cwd_filter_is_case_sensitive_like_the_paths(root: Path, index_path: Path) -> None:
    write_session(root / "a" / "a.jsonl", [msg("u1", None, "user", "ocelot")], sid="A", cwd="/work/Proj")
    write_session(root / "b" / "b.jsonl", [msg("u1", None, "user", "ocelot")], sid="B", cwd="/work/proj/sub")
    write_session(root / "c" / "c.jsonl", [msg("u1", None, "user", "ocelot")], sid="C", cwd="/work/a_b%/x")
    write_session(root / "d" / "d.jsonl", [msg("u1", None, "user", "ocelot")], sid="D", cwd="/work/aXbY/x")
    assert {h.session_id for h in find("ocelot", root, index_path, cwd="/work/Proj")} == {"A"}
    assert {h.session_id for h in find("ocelot", root, index_path, cwd="/work/proj")} == {"B"}
    assert {h.session_id for h in find("ocelot", root, index_path, cwd="/work/a_b%")} == {"C"}
    assert {h.session_id for h in find("ocelot", root, index_path, cwd="/")} == {"A", "B", "C", "D"}
