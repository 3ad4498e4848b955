"""Bugs found reviewing ``omp-session mcp``: each test failed before its fix."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_corpus import DOCS_ID, PARSER_ID, SECRET, build

from builders import assistant, entry, header, stamp, user, write_session
from omp_session.mcp_server.args import ToolArgumentError
from omp_session.mcp_server.server import RESOURCE_PREFIX
from omp_session.mcp_server.snippets import redact_snippet
from omp_session.mcp_server.tools import Library
from omp_session.ops.stats.report import stats

GITHUB_TOKEN = "ghp_" + "B1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s8"
URL_PASSWORD = "hunter2secretpw"
FILLER = " ".join(f"word{i}" for i in range(60))


# ----- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize("age", ["²d", "١٢h", "7 d", "-5d", "+5d"])
def test_an_age_in_other_digits_is_an_argument_error(tmp_path: Path, age: str) -> None:
    """``"²d".isdigit()`` is true but ``int("²")`` raises: it reached the client as an internal error."""
    build(tmp_path / "s")
    with pytest.raises(ToolArgumentError, match="not a date"):
        Library(tmp_path / "s").list_sessions({"since": age})


# ----- redaction of search snippets -----------------------------------------------------------


def _secret_session(root: Path) -> None:
    write_session(root / "--p--" / "2026-01-01T00-00-00-000Z_eeee.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user(
            f"{FILLER} {SECRET} {FILLER} token {GITHUB_TOKEN} more {FILLER} "
            f"postgres://admin:{URL_PASSWORD}@db.example.com/x {FILLER}")),
    ], head=header("eeee", cwd="/p"))


@pytest.mark.parametrize("query", ["api03", "AAAA*", "ghp", "B1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s8", "admin",
                                   "postgres", URL_PASSWORD])
def test_a_match_inside_a_secret_does_not_unredact_it(tmp_path: Path, query: str) -> None:
    """The ``[`` ``]`` around a match broke the detectors' patterns: searching for part of a key
    returned the whole key."""
    _secret_session(tmp_path / "s")
    hits = Library(tmp_path / "s", redact=True).search_sessions({"query": query})["hits"]
    assert hits
    for h in hits:
        assert SECRET[13:33] not in h["snippet"] and GITHUB_TOKEN[4:24] not in h["snippet"]
        assert URL_PASSWORD not in h["snippet"]
        assert "[REDACTED:" in h["snippet"]
        assert h["snippet"].count("[") == h["snippet"].count("]")


def test_a_secret_cut_by_the_snippets_edge_is_still_redacted(tmp_path: Path) -> None:
    """A snippet starting inside a key (``…AAAA…``) no longer looks like a key to the detectors."""
    words = " ".join(f"w{i}" for i in range(7))  # the snippet starts 8 words before the match
    write_session(tmp_path / "s" / "--p--" / "2026-01-01T00-00-00-000Z_eeee.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user(f"start {SECRET} {words} needle {words} {SECRET} end")),
    ], head=header("eeee", cwd="/p"))
    lib = Library(tmp_path / "s", redact=True)
    plain = Library(tmp_path / "s").search_sessions({"query": "needle"})["hits"][0]["snippet"]
    assert "AAAAAAAAAA" in plain  # the snippet does cut into a key
    snippet = lib.search_sessions({"query": "needle"})["hits"][0]["snippet"]
    assert "AAAA" not in snippet and "[needle]" in snippet and "[REDACTED:" in snippet


def test_matches_outside_secrets_keep_their_brackets_when_redacting(tmp_path: Path) -> None:
    _secret_session(tmp_path / "s")
    hit = Library(tmp_path / "s", redact=True).search_sessions({"query": "word30"})["hits"][0]
    assert "[word30]" in hit["snippet"]


# ----- session handles --------------------------------------------------------------------------


def test_a_session_in_two_projects_has_a_handle_for_each(tmp_path: Path) -> None:
    """The same file name (a copied session) in two projects: both rows were named by the id,
    which then matched two sessions, so neither could be read."""
    root = tmp_path / "s"
    files = build(root)
    lib = Library(root)
    assert DOCS_ID in {r["session"] for r in lib.list_sessions({})["sessions"]}
    (root / "--copy--").mkdir()  # between two calls: the second sees the copy
    copy = root / "--copy--" / files["docs"].name
    shutil.copy(files["docs"], copy)
    rows = [r for r in lib.list_sessions({})["sessions"] if DOCS_ID in r["path"]]
    assert len(rows) == 2 and rows[0]["session"] != rows[1]["session"]
    for r in rows:
        assert lib.locate(r["session"]) == os.path.realpath(r["path"])
        assert lib.session_tree({"session": r["session"]})["id"] == DOCS_ID
    assert len({r["session"] for r in lib.recent(50)}) == len(lib.recent(50))
    # the id alone names two sessions: refused, naming what to use instead
    with pytest.raises(Exception, match="matches 2 sessions") as e:
        lib.locate(DOCS_ID)
    assert f"--copy--/{files['docs'].name}" in str(e.value)


def test_an_exact_id_wins_over_a_longer_id_it_starts(tmp_path: Path) -> None:
    """Ids of different lengths: the handle ``abc`` also starts ``abcdef``; it must still name
    its own session."""
    root = tmp_path / "s"
    short = write_session(root / "--p--" / "2026-01-01T00-00-00-000Z_abc.jsonl",
                          [entry("u1", None, timestamp=stamp(1), message=user("short one"))], head=header("abc"))
    write_session(root / "--q--" / "2026-01-02T00-00-00-000Z_abcdef.jsonl",
                  [entry("u1", None, timestamp=stamp(1), message=user("long one"))], head=header("abcdef"))
    lib = Library(root)
    assert lib.handle(os.path.realpath(short)) == "abc"
    assert lib.locate("abc") == os.path.realpath(short)
    assert lib.read_session({"session": "abc"})["items"][0]["text"] == "short one"


def test_an_entry_without_an_id_is_not_named_undefined(tmp_path: Path) -> None:
    root = tmp_path / "s"
    bucket = root / "--p--"
    bucket.mkdir(parents=True)
    (bucket / "2026-01-01T00-00-00-000Z_noid.jsonl").write_text(
        json.dumps(header("noid")) + "\n" + json.dumps({"type": "model_change", "model": "m"}) + "\n")
    tree = Library(root).session_tree({"session": "noid"})
    assert [t["id"] for t in tree["tips"]] == [None]


# ----- stats: nothing from outside the root ------------------------------------------------------


def test_stats_of_every_session_leave_out_sessions_linked_from_outside(tmp_path: Path) -> None:
    root = tmp_path / "s"
    files = build(root)
    outside = write_session(tmp_path / "elsewhere" / "--x--" / "2026-01-09T00-00-00-000Z_ffff.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user("outside")),
        entry("a1", "u1", timestamp=stamp(2), message=assistant("hi", model="outside-model")),
    ], head=header("ffff", cwd="/x"))
    (root / "--x--").symlink_to(outside.parent)
    (root / "--work-proj--" / "2026-01-09T00-00-00-000Z_gggg.jsonl").symlink_to(outside)
    out = Library(root).session_stats({})
    assert "outside-model" not in json.dumps(out)
    expected = stats([files["parser"], files["docs"]], by="model", tz="UTC")
    assert out["sessions"] == 2 and out["billed"] == expected.total.billed.to_dict()


# ----- over stdio -------------------------------------------------------------------------------


def _params(base: Path) -> StdioServerParameters:
    env = {"PI_CODING_AGENT_DIR": str(base / "agent"), "XDG_CACHE_HOME": str(base / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return StdioServerParameters(command=sys.executable, args=["-m", "omp_session", "mcp"], env=env, cwd=str(base))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_lone_surrogate_does_not_end_the_server(tmp_path: Path, anyio_backend: str) -> None:
    """JSON allows ``"\\ud800"``; UTF-8 does not: writing the answer raised in the SDK's stdout
    writer and the whole server died."""
    root = tmp_path / "agent" / "sessions"
    build(root)
    bucket = root / "--sur--"
    bucket.mkdir()
    line = {"type": "message", "id": "x1", "parentId": None, "timestamp": "2026-01-03T00:00:01.000Z",
            "message": {"role": "user", "content": "bad \ud800 surrogate", "timestamp": 1}}
    (bucket / "2026-01-03T00-00-00-000Z_dddd.jsonl").write_text(
        json.dumps(header("dddd", cwd="/sur \udc80")) + "\n" + json.dumps(line) + "\n")
    # a dead server leaves the client waiting for ever: fail instead
    with (tmp_path / "server.err").open("w") as errlog, anyio.fail_after(60):
        async with stdio_client(_params(tmp_path), errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            calls: list[tuple[str, dict[str, Any]]] = [
                ("read_session", {"session": "dddd"}), ("read_entry", {"session": "dddd", "entry": "x1"}),
                ("list_sessions", {}), ("search_sessions", {"query": "surrogate"})]
            for name, args in calls:
                if name == "search_sessions":
                    # the indexer cannot store the header's cwd (a bug in ops/search/index.py, reported);
                    # here it only has to leave the server running
                    with contextlib.suppress(MCPError):
                        await session.call_tool(name, args)
                    continue
                result = await session.call_tool(name, args)
                content = result.content[0]
                assert content.type == "text"
                if name == "read_session" and args["session"] == "dddd":
                    assert "bad \ufffd surrogate" in content.text
            resource = (await session.read_resource(RESOURCE_PREFIX + "dddd")).contents[0]
            assert "\ufffd" in getattr(resource, "text", "")
            assert (await session.list_resources()).resources
            still = await session.call_tool("read_session", {"session": PARSER_ID})
            assert not still.is_error


@given(st.lists(st.tuples(st.text("ab c…", max_size=6), st.booleans()), max_size=8))
def test_a_snippet_without_secrets_only_has_its_marks_shown(parts: list[tuple[str, bool]]) -> None:
    """What the redacting snippet rebuilds is the snippet itself when there is nothing to hide."""
    from omp_session.ops.redact.detectors import Matcher

    marked = "".join(f"\x02{t}\x03" if hit else t for t, hit in parts)
    expected = marked.replace("\x02", "[").replace("\x03", "]")
    assert redact_snippet(marked, ("\x02", "\x03"), Matcher()) == expected


def test_a_snippet_secret_next_to_a_match() -> None:
    from omp_session.ops.redact.detectors import Matcher

    marked = f"…\x02x\x03 {SECRET}\x02y\x03 and \x02z\x03…"
    out = redact_snippet(marked, ("\x02", "\x03"), Matcher(), [(SECRET, "anthropic-api-key")])
    assert out == "…[x] [REDACTED:anthropic-api-key] and [z]…"
