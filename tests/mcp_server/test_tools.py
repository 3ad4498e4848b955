"""The tools as plain functions (mcp_server/tools.py), checked against the library they wrap."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp_corpus import DOCS_ID, LONG, PARSER, PARSER_ID, SECRET, append_message, build

from omp_session.catalog.listing import list_all_sessions
from omp_session.errors import AmbiguousSessionError, EntryNotFoundError, QueryError, SessionNotFoundError
from omp_session.mcp_server.args import ToolArgumentError
from omp_session.mcp_server.tools import Library
from omp_session.model.session import open_session
from omp_session.ops.search.query import search
from omp_session.ops.stats.report import stats


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Library, dict[str, Path]]:
    root = tmp_path / "sessions"
    files = build(root)
    return Library(root), files


def test_list_sessions_is_the_listing(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, _ = corpus
    out = lib.list_sessions({})
    listed = list_all_sessions(lib.root, pins=())
    assert [r["path"] for r in out["sessions"]] == [i.path for i in listed]
    assert {r["session"] for r in out["sessions"]} == {PARSER_ID, DOCS_ID}
    parser = next(r for r in out["sessions"] if r["session"] == PARSER_ID)
    assert parser["title"] == "Fix parser" and parser["cwd"] == "/work/proj"
    assert parser["first_message"] == "please fix the flaky parser test"
    assert out["total"] == 2 and out["next_offset"] is None


def test_list_sessions_filters_and_pages(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, _ = corpus
    assert [r["session"] for r in lib.list_sessions({"project": "/work"})["sessions"]] == [PARSER_ID]
    assert [r["session"] for r in lib.list_sessions({"project": "/work/proj/"})["sessions"]] == [PARSER_ID]
    assert lib.list_sessions({"project": "/wor"})["sessions"] == []  # a directory, not a string prefix
    assert [r["session"] for r in lib.list_sessions({"query": "CACHE docs"})["sessions"]] == [DOCS_ID]
    assert lib.list_sessions({"since": "2999-01-01"})["sessions"] == []
    first = lib.list_sessions({"limit": 1})
    assert len(first["sessions"]) == 1 and first["total"] == 2 and first["next_offset"] == 1
    second = lib.list_sessions({"limit": 1, "offset": 1})
    assert second["sessions"][0]["session"] != first["sessions"][0]["session"] and second["next_offset"] is None


def test_search_is_one_best_hit_per_session(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, _ = corpus
    out = lib.search_sessions({"query": "cache"})
    expected = search("cache", root=lib.root, sessions=True, limit=10).hits
    assert [(h["session"], h["entry"]) for h in out["hits"]] == \
        [(lib.handle(os.path.realpath(h.path)), h.entry_id) for h in expected]
    assert len({h["session"] for h in out["hits"]}) == len(out["hits"])
    hit = lib.search_sessions({"query": "flaky", "project": "/work/proj"})["hits"][0]
    assert hit["session"] == PARSER_ID and "[flaky]" in hit["snippet"]
    # a subagent's session is found, and named by a path the other tools take
    sub = lib.search_sessions({"query": "tokenizer"})["hits"]
    assert [h["session"] for h in sub] == [f"--work-proj--/{PARSER}/agent-1.jsonl"]
    assert lib.read_session({"session": sub[0]["session"]})["items"][0]["text"] == "subagent: look at the tokenizer"


def test_search_never_returns_another_roots_sessions(tmp_path: Path) -> None:
    """The index is shared (one file in the cache dir): hits under another root stay out."""
    build(tmp_path / "a")
    other = tmp_path / "b"
    build(other)
    index = str(tmp_path / "index.sqlite")
    a = Library(tmp_path / "a", index_path=index)
    b = Library(other, index_path=index)
    assert b.search_sessions({"query": "flaky"})["hits"]
    hits = a.search_sessions({"query": "flaky OR cache OR tokenizer", "limit": 10})["hits"]
    assert len(hits) == 3  # the three sessions of root a, none of b's
    for h in hits:
        assert str(tmp_path / "b") not in a.locate(h["session"])


def test_read_session_context_is_the_library_context(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, files = corpus
    out = lib.read_session({"session": PARSER_ID[:6], "max_chars": 300})
    with open_session(files["parser"]) as s:
        messages = s.build_session_context()["messages"]
    assert out["total"] == len(messages) == 4
    assert [i["role"] for i in out["items"]] == [m["role"] for m in messages]
    assert [i["id"] for i in out["items"]] == ["u1", "a1", "t1", "a2"]
    assert out["items"][1]["text"] == 'Running it\n→ bash(c1) {"command":"pytest"}'
    long = out["items"][2]
    assert long["tool"] == "bash" and long["omitted"] == len(LONG) - 300
    assert long["text"].startswith("x" * 200) and long["text"].endswith(" end")
    assert long["fetch"] == f"read_entry(session={PARSER_ID!r}, entry='t1')"
    full = lib.read_entry({"session": PARSER_ID, "entry": "t1", "max_chars": 100_000})
    assert full["text"] == LONG and full["next_offset"] is None


def test_read_entry_pages(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, _ = corpus
    text, offset = "", 0
    while offset is not None:
        page = lib.read_entry({"session": PARSER_ID, "entry": "t1", "offset": offset, "max_chars": 1000})
        assert page["total_chars"] == len(LONG)
        text += page["text"]
        offset = page["next_offset"]
    assert text == LONG
    with pytest.raises(EntryNotFoundError):
        lib.read_entry({"session": PARSER_ID, "entry": "nope"})


def test_read_session_views_and_paging(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, files = corpus
    with open_session(files["docs"]) as s:
        branch = [s.ids[k] for k in s.branch_indices()]
        context = s.build_session_context()["messages"]
        transcript = s.build_session_context(transcript=True)["messages"]
    view = lib.read_session({"session": DOCS_ID, "view": "branch"})
    assert [i["id"] for i in view["items"]] == branch == ["u1", "a1", "c1", "u2", "u3"]
    assert view["items"][2] == {"i": 2, "id": "c1", "type": "compaction", "time": "2026-01-02T00:00:03.000Z",
                                "text": "Cache docs were written."}
    assert lib.read_session({"session": DOCS_ID})["total"] == len(context)
    assert lib.read_session({"session": DOCS_ID, "view": "transcript"})["total"] == len(transcript)
    page = lib.read_session({"session": DOCS_ID, "view": "branch", "from": 1, "limit": 2})
    assert [i["i"] for i in page["items"]] == [1, 2] and page["next"] == 3
    last = lib.read_session({"session": DOCS_ID, "view": "branch", "from": 3, "limit": 2})
    assert last["next"] is None
    other = lib.read_session({"session": DOCS_ID, "view": "branch", "leaf": "a3"})
    assert [i["id"] for i in other["items"]] == ["u1", "a3"] and other["leaf"] == "a3"


def test_session_tree(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, _ = corpus
    tree = lib.session_tree({"session": DOCS_ID})
    assert tree["leaf"] == "u3" and tree["entries"] == 6 and tree["branch_length"] == 5
    assert [(t["id"], t["on_branch"]) for t in tree["tips"]] == [("a3", False), ("u3", True)]
    assert [(f["id"], f["branches"]) for f in tree["forks"]] == [("u1", 2)]
    assert [(c["id"], c["tokens_before"]) for c in tree["compactions"]] == [("c1", 1234)]
    parser = lib.session_tree({"session": PARSER_ID})
    assert parser["labels"] == [{"id": "a2", "label": "diagnosis"}]
    assert [s["session"] for s in parser["subagents"]] == [f"--work-proj--/{PARSER}/agent-1.jsonl"]


def test_session_stats_is_the_stats_report(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, files = corpus
    one = lib.session_stats({"session": PARSER_ID})
    report = stats([files["parser"]], by="model", tz="UTC")
    assert one["billed"] == report.total.billed.to_dict()
    assert one["sessions"] == 1 and one["by_model"][0]["model"] == "anthropic/m"
    everything = lib.session_stats({})
    assert everything["sessions"] == 2
    assert everything["billed"] == stats(all_sessions=True, root=lib.root, by="model", tz="UTC").total.billed.to_dict()
    project = lib.session_stats({"project": "/other"})
    assert project["sessions"] == 1 and project["billed"]["requests"] == 2
    assert lib.session_stats({"since": "2999-01-01"})["billed"]["requests"] == 0


def test_appended_entries_are_seen(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, files = corpus
    assert lib.search_sessions({"query": "zebra"})["hits"] == []
    before = lib.read_session({"session": PARSER_ID, "view": "branch"})["total"]
    append_message(files["parser"], "u9", "l1", "what about the zebra crossing")
    assert lib.search_sessions({"query": "zebra"})["hits"][0]["entry"] == "u9"
    assert lib.read_session({"session": PARSER_ID, "view": "branch"})["total"] == before + 1
    # the listing counts messages in a file's first 4 KB, as omp does: the small session's count moves
    counted = lib.list_sessions({"project": "/other"})["sessions"][0]["messages"]
    append_message(files["docs"], "u9", "u3", "one more")
    assert lib.list_sessions({"project": "/other"})["sessions"][0]["messages"] == counted + 1


def test_redact_scrubs_everything_returned(tmp_path: Path) -> None:
    build(tmp_path / "s")
    lib = Library(tmp_path / "s", redact=True)
    calls: list[dict[str, Any]] = [
        lib.read_session({"session": PARSER_ID, "max_chars": 300}),
        lib.read_entry({"session": PARSER_ID, "entry": "t1", "offset": 4990}),
        lib.read_session({"session": PARSER_ID, "view": "branch", "max_chars": 100_000}),
        lib.search_sessions({"query": "token"}),
    ]
    for out in calls:
        assert SECRET not in repr(out) and SECRET[:20] not in repr(out)
    assert "[REDACTED:" in calls[1]["text"]
    assert "[REDACTED:" in calls[0]["items"][2]["text"]  # redacted before it was clipped
    assert "api03-AAAA" in repr(Library(tmp_path / "s").read_entry({"session": PARSER_ID, "entry": "t1"}))


@pytest.mark.parametrize(("args", "error"), [
    ({"session": "zzzz"}, SessionNotFoundError),
    ({"session": ""}, ToolArgumentError),
    ({"session": 5}, ToolArgumentError),
    ({"session": "../../etc/passwd.jsonl"}, ToolArgumentError),
    ({"session": "/etc/passwd"}, ToolArgumentError),
    ({"session": PARSER_ID, "limit": 10**9}, ToolArgumentError),
    ({"session": PARSER_ID, "limit": 0}, ToolArgumentError),
    ({"session": PARSER_ID, "limit": True}, ToolArgumentError),
    ({"session": PARSER_ID, "view": "everything"}, ToolArgumentError),
    ({"session": PARSER_ID, "leaf": "nope"}, EntryNotFoundError),
    ({"session": PARSER_ID, "colour": "red"}, ToolArgumentError),
    ({}, ToolArgumentError),
])
def test_bad_read_arguments(corpus: tuple[Library, dict[str, Path]], args: dict[str, Any], error: type) -> None:
    lib, _ = corpus
    with pytest.raises(error):
        lib.read_session(args)


def test_bad_arguments_of_the_other_tools(corpus: tuple[Library, dict[str, Path]]) -> None:
    lib, _ = corpus
    with pytest.raises(ToolArgumentError, match="not a date"):
        lib.list_sessions({"since": "last tuesday-ish"})
    with pytest.raises(ToolArgumentError, match="between 1 and 200"):
        lib.search_sessions({"query": "x", "limit": 100_000})
    with pytest.raises(QueryError):
        lib.search_sessions({"query": "AND"})
    with pytest.raises(ToolArgumentError, match="not both"):
        lib.session_stats({"session": PARSER_ID, "project": "/work"})
    with pytest.raises(ToolArgumentError, match="not a date"):
        lib.session_stats({"since": "99999999999999999d"})


def test_paths_outside_the_root_are_refused(tmp_path: Path) -> None:
    files = build(tmp_path / "root")
    outside = tmp_path / "secret.jsonl"
    outside.write_bytes(files["parser"].read_bytes())
    (tmp_path / "root" / "--work-proj--" / "link.jsonl").symlink_to(outside)
    lib = Library(tmp_path / "root")
    for arg in (str(outside), "../secret.jsonl", "--work-proj--/link.jsonl"):
        with pytest.raises(ToolArgumentError, match="outside the sessions root"):
            lib.read_session({"session": arg})
    # a symlinked file is no session of the root's: prefixes never find it
    with pytest.raises((SessionNotFoundError, AmbiguousSessionError)):
        lib.locate("link")
    assert lib.locate(f"--work-proj--/{PARSER}.jsonl") == os.path.realpath(files["parser"])
    # nor are subagent sessions linked in from elsewhere
    (files["sub"].parent / "agent-2.jsonl").symlink_to(outside)
    assert [s["session"] for s in lib.session_tree({"session": PARSER_ID})["subagents"]] == \
        [f"--work-proj--/{PARSER}/agent-1.jsonl"]
    with pytest.raises(ToolArgumentError, match="not a session file"):
        lib.read_session({"session": "--work-proj--/notes.txt"})


def test_latest_is_the_servers_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.paths import project_dir_name

    root = tmp_path / "root"
    files = build(root)
    project = tmp_path / "proj"
    project.mkdir()
    bucket = root / project_dir_name(str(project))
    bucket.mkdir()
    target = bucket / files["docs"].name
    target.write_bytes(files["docs"].read_bytes())
    monkeypatch.chdir(project)
    assert Library(root).locate("latest") == os.path.realpath(target)
