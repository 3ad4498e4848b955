"""Search results not padded with titles, ``--sessions``, and the FTS5-style query syntax
(issue 15, item 9)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import builders
from omp_session.cli import cli
from omp_session.errors import QueryError
from omp_session.ops.search.query import search, to_fts

CREATED = "2026-05-01T10:00:00.000Z"


def _msg(eid: str, parent: str | None, text: str, minute: int, role: str = "user") -> dict[str, Any]:
    return builders.entry(eid, parent, timestamp=f"2026-05-01T10:{minute:02d}:00.000Z",
                          message={"role": role, "content": text, "timestamp": 0})


def _titled(path: Path, sid: str, title: str, texts: list[str]) -> Path:
    """A session renamed once the way omp does it: a ``title_change`` entry, then the slot."""
    entries = [_msg(f"m{n}", f"m{n - 1}" if n else None, t, n + 1) for n, t in enumerate(texts)]
    last = entries[-1]["id"] if entries else None
    entries.append(builders.entry("tc", last, type="title_change", timestamp="2026-05-01T10:30:00.000Z",
                                  title=title, source="auto"))
    return builders.write_session(path, entries, head=builders.header(sid, timestamp=CREATED, cwd="/work/p"),
                                  slot=title, slot_timestamp=CREATED)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "sessions"
    for n in range(6):
        _titled(r / "-work-p" / f"2026-05-01T10-00-0{n}-000Z_s{n}.jsonl", f"s{n}", f"pagination fix {n}",
                [f"the cursor for pagination in part {n}", "keyset queries are faster than offsets",
                 f"more about pagination and keyset {n}"])
    return r


def _find(query: str, root: Path, tmp_path: Path, **kw: Any) -> list[Any]:
    return search(query, root=root, index_path=tmp_path / "idx.sqlite", **kw).hits


# ----- titles -----------------------------------------------------------------------------------


def test_a_title_counts_once_per_session(root: Path, tmp_path: Path) -> None:
    hits = _find("pagination", root, tmp_path, limit=10)
    titles = [h.path for h in hits if h.kind == "title"]
    assert len(titles) == len(set(titles))
    assert len(hits) == 10  # dropped duplicates leave room for other hits, not a short page
    everything = _find("pagination", root, tmp_path, limit=None)
    assert sum(h.kind == "title" for h in everything) == 6
    assert len(everything) == 6 + 12


def test_the_title_shown_is_the_sessions_title_not_its_audit_entry(root: Path, tmp_path: Path) -> None:
    hits = _find('"pagination fix 3"', root, tmp_path)
    assert [(h.session_id, h.kind, h.entry_id) for h in hits] == [("s3", "title", None)]


def test_an_old_title_only_in_a_title_change_is_still_found(tmp_path: Path) -> None:
    r = tmp_path / "sessions"
    _titled(r / "-w" / "2026-05-01T10-00-00-000Z_old.jsonl", "old", "renamed later", ["hello"])
    path = r / "-w" / "2026-05-01T10-00-00-000Z_old.jsonl"
    with path.open("a") as f:  # an earlier name, recorded only by its audit entry
        f.write(builders.line(builders.entry("tc0", "tc", type="title_change", timestamp="2026-05-01T10:31:00.000Z",
                                             title="zeppelin project", source="user")) + "\n")
    hits = _find("zeppelin", r, tmp_path)
    assert [(h.kind, h.entry_id) for h in hits] == [("title", "tc0")]


def test_title_dedup_holds_on_the_filtered_and_the_too_common_paths(root: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.ops.search import query as search_module

    filtered = _find("pagination", root, tmp_path, limit=10, cwd="/work")
    assert len(filtered) == 10
    assert len({h.path for h in filtered if h.kind == "title"}) == sum(h.kind == "title" for h in filtered)
    monkeypatch.setattr(search_module, "RANK_CAP", 5)
    common = _find("pagination", root, tmp_path, limit=10)
    assert len(common) == 10
    assert len({h.path for h in common if h.kind == "title"}) == sum(h.kind == "title" for h in common)


# ----- one hit per session ----------------------------------------------------------------------


@pytest.mark.parametrize("kw", [{}, {"cwd": "/work"}, {"current_branch": True}, {"limit": None}])
def test_sessions_gives_each_sessions_best_hit(root: Path, tmp_path: Path, kw: dict[str, Any]) -> None:
    everything = _find("keyset", root, tmp_path, limit=None)
    best: dict[str, Any] = {}
    for h in everything:
        best.setdefault(h.path, h)
    hits = _find("keyset", root, tmp_path, sessions=True, **kw)
    assert [h.path for h in hits] == list(best)
    assert [(h.entry_id, h.score) for h in hits] == [(b.entry_id, b.score) for b in best.values()]


def test_sessions_fills_the_limit_with_distinct_sessions(root: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.ops.search import query as search_module

    assert len({h.path for h in _find("pagination", root, tmp_path, limit=4, sessions=True)}) == 4
    monkeypatch.setattr(search_module, "RANK_CAP", 5)  # a too-common word: the newest matches, then every match
    hits = _find("pagination", root, tmp_path, limit=6, sessions=True)
    assert len({h.path for h in hits}) == 6


def test_cli_sessions_flag(root: Path, tmp_path: Path) -> None:
    r = builders.invoke(cli, "search", "pagination", "--sessions", "--root", str(root), "--index",
                        str(tmp_path / "idx.sqlite"), "--json")
    assert r.exit_code == 0, r.output
    paths = [h["path"] for h in json.loads(r.stdout)]
    assert len(paths) == len(set(paths)) == 6


# ----- query syntax -----------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "fts"), [
    ("keyset AND NOT pagination", '"keyset" NOT "pagination"'),
    ("keyset NOT pagination", '"keyset" NOT "pagination"'),
    ("a AND NOT (b OR c)", '"a" NOT ( "b" OR "c" )'),
    ("(a OR b) AND NOT c d", '( "a" OR "b" ) NOT "c" AND "d"'),
    ("NEAR(cursor pagination)", 'NEAR("cursor" "pagination")'),
    ("NEAR(cursor pagination, 3)", 'NEAR("cursor" "pagination", 3)'),
    ('x NEAR("the cursor" pag*,5)', '"x" AND NEAR("the cursor" "pag"*, 5)'),
    ("NEAR (a b)", '"NEAR" AND ( "a" AND "b" )'),  # NEAR( only when the parenthesis follows at once
    ("near(a b)", '"near" AND ( "a" AND "b" )'),  # operators are upper case only
])
def test_fts5_syntax_is_translated(query: str, fts: str) -> None:
    assert to_fts(query) == fts


@pytest.mark.parametrize(("query", "message"), [
    ("AND NOT a", "AND needs a term before it"),
    ("a OR NOT b", "NOT needs a term before it"),
    ("a AND NOT", "NOT needs a term after it"),
    ("NEAR(a OR b)", "NEAR(...) takes words and phrases"),
    ("NEAR(a b, x)", "NEAR(...) takes words and phrases"),
    ("NEAR(a b, 3", "unbalanced '('"),
    ("NEAR()", "nothing to search for in NEAR()"),
    ("NEAR(a (b))", "NEAR(...) takes words and phrases"),
])
def test_bad_syntax_says_why(query: str, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)):
        to_fts(query)


def test_boolean_and_near_queries_find_the_right_entries(root: Path, tmp_path: Path) -> None:
    assert {h.entry_id for h in _find("keyset AND NOT pagination", root, tmp_path, limit=None)} == {"m1"}
    assert {h.entry_id for h in _find("keyset NOT pagination", root, tmp_path, limit=None)} == {"m1"}
    assert {h.entry_id for h in _find("(cursor OR offsets) AND NOT keyset", root, tmp_path, limit=None)} == {"m0"}
    assert {h.entry_id for h in _find("NEAR(cursor pagination, 2)", root, tmp_path, limit=None)} == {"m0"}
    assert _find("NEAR(cursor part, 1)", root, tmp_path, limit=None) == []
    # the title_change entry repeats the title: the session's title stands for both
    assert {h.entry_id for h in _find('"keyset queries" OR pagin*', root, tmp_path, limit=None)} == {
        "m0", "m1", "m2", None}


def test_cli_and_not_query_and_a_bad_query(root: Path, tmp_path: Path) -> None:
    idx = str(tmp_path / "idx.sqlite")
    r = builders.invoke(cli, "search", "keyset", "AND", "NOT", "pagination", "--root", str(root), "--index", idx,
                        "--json")
    assert r.exit_code == 0, r.output
    assert {h["entry_id"] for h in json.loads(r.stdout)} == {"m1"}
    r = builders.invoke(cli, "search", "NEAR(a OR b)", "--root", str(root), "--index", idx)
    assert r.exit_code == 1 and r.stderr.strip().count("\n") == 0 and "Traceback" not in r.output
