"""``omp-session mcp``: serve earlier sessions to coding agents over MCP (stdio; docs/mcp.md).

The SDK is the ``mcp`` extra: without it the command is one line naming the extra (exit 1).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from omp_session.errors import SessionError
from omp_session.extras import require
from omp_session.paths import sessions_dir

from ._errors import command

if TYPE_CHECKING:
    from omp_session.store import StoreURL

__all__ = ["mcp_command"]


@command("mcp")
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's).")
@click.option("--store", "store_url", metavar="URL", help="Serve the sessions of this store instead of the files: "
              "sqlite:PATH, postgresql://…, mysql://…, redis://…, file:DIR (docs/stores.md); only keys under its root.")
@click.option("--timeout", metavar="SECONDS", type=click.FloatRange(min=0, min_open=True, max=1e9),
              help="With --store: give up on a server that has not connected after SECONDS (default 10).")
@click.option("--redact", is_flag=True, help="Pass everything returned through redact's secret detectors.")
@click.option("--index", "index_path", type=click.Path(dir_okay=False), help="Search index file (default: "
              "$XDG_CACHE_HOME/omp-session/search.sqlite, shared with search).")
def mcp_command(root: str | None, store_url: str | None, timeout: float | None, redact: bool,
                index_path: str | None) -> None:
    """Serve earlier sessions to coding agents over MCP (stdio): read-only tools to list, search
    and read sessions, their trees and token stats, and recent sessions as resources.

    Nothing outside the sessions root is ever returned. Start it from an agent's MCP
    configuration (docs/mcp.md), not by hand: it speaks JSON-RPC on stdin and stdout.

    With --store URL the sessions are those of a database or Redis store (search needs its search
    tables: omp-session index --store URL).

    \b
    Examples (Claude Code):
      claude mcp add omp-session -- omp-session mcp --redact
      claude mcp add team -- omp-session mcp --store postgresql://me@db/omp
    """
    if store_url is not None and root is not None:
        raise click.UsageError("give --root DIR or --store URL, not both")
    if timeout is not None and store_url is None:
        raise click.UsageError("--timeout applies to a store's server: it needs --store URL")
    require("mcp")
    from omp_session.mcp_server.server import run_stdio
    from omp_session.mcp_server.tools import Library

    if store_url is not None:
        from omp_session.store import parse_store_url

        parsed = parse_store_url(store_url)
        if parsed.kind == "file":  # files: the file library, its caches and search index
            base = Path(parsed.root)
        else:
            if index_path is not None:
                raise click.UsageError("--index is the file search index; a store is searched in its own "
                                       "search tables")
            run_store(parsed, timeout=timeout, redact=redact)
            return
    else:
        base = Path(root) if root else sessions_dir()
    if not base.is_dir():
        raise SessionError(f"{base}: no such sessions directory")
    run_stdio(Library(os.fspath(base), redact=redact, index_path=index_path))


def run_store(parsed: StoreURL, *, timeout: float | None, redact: bool) -> None:
    """Serve the store's sessions; connected first, so a bad URL or a server that does not answer
    is one line before the server starts."""
    from omp_session.mcp_server.server import run_stdio
    from omp_session.mcp_server.stored import StoreLibrary
    from omp_session.store import open_store

    library = StoreLibrary(parsed, open_store(parsed, create=False, timeout=timeout), redact=redact, timeout=timeout)
    try:
        run_stdio(library)
    finally:
        library.close()
