"""Bugs found driving ``omp-session mcp`` as a client would: each test failed before its fix."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_corpus import PARSER, PARSER_ID, build

from builders import entry, header, stamp, user, write_session
from omp_session.mcp_server.args import ToolArgumentError
from omp_session.mcp_server.tools import Library


@pytest.mark.parametrize("tool", ["list_sessions", "search_sessions", "session_stats"])
@pytest.mark.parametrize("age", ["9" * 400 + "d", "1" * 4000 + "m"])
def test_an_age_too_long_ago_for_a_float_is_an_argument_error(tmp_path: Path, tool: str, age: str) -> None:
    """``float(now - 9…9 * day)`` raised OverflowError: a JSON-RPC error with code 0 and a
    traceback on stderr instead of the tool's one line."""
    build(tmp_path / "s")
    args = {"since": age, **({"query": "parser"} if tool == "search_sessions" else {})}
    with pytest.raises(ToolArgumentError, match="not a date"):
        getattr(Library(tmp_path / "s"), tool)(args)


def test_a_client_that_stops_reading_ends_the_server_quietly(tmp_path: Path) -> None:
    """A client that went away (its end of stdout closed) ended the server with a traceback of an
    ExceptionGroup around BrokenPipeError and status 1; every command ends quietly with 0 when
    its reader closes stdout (docs/cli.md, "Exit status")."""
    build(tmp_path / "agent" / "sessions")
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    with subprocess.Popen([sys.executable, "-m", "omp_session", "mcp"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path) as server:
        assert server.stdin is not None and server.stdout is not None and server.stderr is not None
        server.stdin.write((json.dumps(init) + "\n").encode())
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 1
        server.stdout.close()  # the client is gone: the next answers meet a closed pipe
        with contextlib.suppress(BrokenPipeError):  # the server may be gone before the last
            for n in range(2, 5):  # the first answer may still fit in the writer's buffer
                server.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}) + "\n").encode())
                server.stdin.flush()
            server.stdin.close()
        status = server.wait(timeout=60)
        err = server.stderr.read().decode()
    assert (status, err) == (0, "")


@pytest.mark.parametrize(("since", "same_as"), [("0000-06-01", "0001-01-01"), ("1000000d", "0001-01-01"),
                                                ("-000001-01-01T00:00:00Z", "0001-01-01"),
                                                ("+010000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z")])
def test_stats_take_every_since_the_other_tools_take(tmp_path: Path, since: str, same_as: str) -> None:
    """A since before year 1 or after 9999 (Date.parse and an age take them, and list_sessions and
    search_sessions did) was refused by session_stats, with a line about ``--since`` and a time the
    caller never gave (``--since '-000711-01-07T10:50:10.669Z' is not a date…`` for 1000000d)."""
    build(tmp_path / "s")
    library = Library(tmp_path / "s")
    got = library.session_stats({"since": since})
    want = library.session_stats({"since": same_as})
    assert {k: v for k, v in got.items() if k != "since"} == {k: v for k, v in want.items() if k != "since"}
    assert (got["billed"]["requests"] > 0) == same_as.startswith("0001")


def test_session_tree_shows_at_most_100_subagents(tmp_path: Path) -> None:
    """docs/mcp.md: each list of session_tree at most 100, with <name>_not_shown beyond; the
    subagents were all listed, however many (a row of up to 300 characters of first message each)."""
    build(tmp_path / "s")
    folder = tmp_path / "s" / "--work-proj--" / PARSER
    for n in range(2, 131):
        write_session(folder / f"agent-{n:03}.jsonl", [entry("s1", None, timestamp=stamp(7), message=user(f"task {n}"))],
                      head=header(f"dddd{n:04}-0000-4000-8000-000000000000", cwd="/work/proj"))
    tree = Library(tmp_path / "s").session_tree({"session": PARSER_ID})
    assert len(tree["subagents"]) == 100
    assert tree["subagents_not_shown"] == 30


@pytest.mark.parametrize("project", ["/work/./proj", "/work/proj/.", "/work/x/../proj", "/work/proj//"])
def test_a_project_is_the_same_directory_for_every_tool(tmp_path: Path, project: str) -> None:
    """search_sessions took project as os.path.abspath makes it (the search's own filter), but
    list_sessions and session_stats compared the text as given: /work/./proj found the session in
    search and nothing in the other two."""
    build(tmp_path / "s")
    library = Library(tmp_path / "s")
    assert [h["session"] for h in library.search_sessions({"query": "parser", "project": project})["hits"]] \
        == [PARSER_ID]
    assert [r["session"] for r in library.list_sessions({"project": project})["sessions"]] == [PARSER_ID]
    assert library.session_stats({"project": project})["sessions"] == 1


@pytest.mark.parametrize("session", ["a/\x00.jsonl", "\x00.jsonl", "a/" * 3000 + "x.jsonl"])
def test_a_resource_uri_is_checked_as_a_tools_session_is(tmp_path: Path, session: str) -> None:
    """resources/read passed its URI's session to locate unchecked: a NUL in a path
    (omp-session://session/a%2F%00.jsonl) raised ValueError from realpath, a JSON-RPC error with
    code 0 and a traceback on stderr, and a URI of any length came back whole in the error."""
    build(tmp_path / "s")
    with pytest.raises(ToolArgumentError, match="not a usable value"):
        Library(tmp_path / "s").session_markdown(session)


def test_a_resource_the_files_cannot_give_is_one_line_as_a_tools_session_is(tmp_path: Path) -> None:
    """resources/read let an OSError through (the tools make it their one-line error): 'latest'
    once the server's working directory was removed ended as a JSON-RPC error with code 0 and a
    traceback on stderr, where read_session(session='latest') said what went wrong in one line."""
    build(tmp_path / "agent" / "sessions")
    (tmp_path / "gone").mkdir()
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with subprocess.Popen([sys.executable, "-m", "omp_session", "mcp"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path / "gone") as server:
        assert server.stdin is not None and server.stdout is not None and server.stderr is not None

        def ask(message: dict[str, object]) -> dict[str, object]:
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write((json.dumps(message) + "\n").encode())
            server.stdin.flush()
            answer: dict[str, object] = json.loads(server.stdout.readline())
            return answer

        ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        (tmp_path / "gone").rmdir()
        tool = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "read_session", "arguments": {"session": "latest"}}})
        resource = ask({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                        "params": {"uri": "omp-session://session/latest"}})
        server.stdin.close()
        status = server.wait(timeout=60)
        err = server.stderr.read().decode()
    assert tool["result"] == {"content": [{"type": "text", "text": "read_session: [Errno 2] No such file or directory"}],
                              "isError": True}
    assert resource["error"] == {"code": -32603, "message": "resources/read: [Errno 2] No such file or directory"}
    assert (status, err) == (0, "")
