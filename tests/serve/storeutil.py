"""The store mode's app driven in-process (Starlette's TestClient), as the serve --store tests use
it: the CLI run to set a store up, a client that carries the token, the app over a store URL."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner
from starlette.testclient import TestClient

from omp_session.cli import cli
from omp_session.serve.app import build_app
from omp_session.serve.store_source import StoreCatalog
from omp_session.store import open_store, parse_store_url

PORT = 8765  # (no socket is bound: the Host the guard expects)
TOKEN = "t" * 32


def run_cli(*args: str) -> str:
    """``omp-session ARGS``' output; it must succeed."""
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, (args, result.output)
    return result.output


def client(app: Any) -> TestClient:
    return TestClient(app, base_url=f"http://127.0.0.1:{PORT}", headers={"Authorization": f"Bearer {TOKEN}"})


def store_app(url: str, *, create: bool = False) -> tuple[TestClient, StoreCatalog]:
    """A client of ``serve --store URL``'s app, and its catalog (to close)."""
    parsed = parse_store_url(url)
    catalog = StoreCatalog(parsed, open_store(parsed, create=create))
    return client(build_app("/unused", token=TOKEN, port=PORT, store=catalog)), catalog
