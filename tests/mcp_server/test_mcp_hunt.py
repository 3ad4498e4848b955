"""Bugs found driving ``omp-session mcp`` as a client would: each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_corpus import build

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
