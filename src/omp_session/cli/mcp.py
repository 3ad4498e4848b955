"""``omp-session mcp``: serve earlier sessions to coding agents over MCP (stdio; docs/mcp.md).

The SDK is the ``mcp`` extra: without it the command is one line naming the extra (exit 1).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from omp_session.errors import SessionError
from omp_session.extras import require
from omp_session.paths import sessions_dir

from ._errors import command

__all__ = ["mcp_command"]


@command("mcp")
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's).")
@click.option("--redact", is_flag=True, help="Pass everything returned through redact's secret detectors.")
@click.option("--index", "index_path", type=click.Path(dir_okay=False), help="Search index file (default: "
              "$XDG_CACHE_HOME/omp-session/search.sqlite, shared with search).")
def mcp_command(root: str | None, redact: bool, index_path: str | None) -> None:
    """Serve earlier sessions to coding agents over MCP (stdio): read-only tools to list, search
    and read sessions, their trees and token stats, and recent sessions as resources.

    Nothing outside the sessions root is ever returned. Start it from an agent's MCP
    configuration (docs/mcp.md), not by hand: it speaks JSON-RPC on stdin and stdout.

    \b
    Example (Claude Code):
      claude mcp add omp-session -- omp-session mcp --redact
    """
    require("mcp")
    base = Path(root) if root else sessions_dir()
    if not base.is_dir():
        raise SessionError(f"{base}: no such sessions directory")
    from omp_session.mcp_server.server import run_stdio
    from omp_session.mcp_server.tools import Library

    run_stdio(Library(os.fspath(base), redact=redact, index_path=index_path))
