"""Review of the team store (docs/team.md): ``list --store`` and ``stats --store`` from the
derived tables agree with the stored bytes for keys and roots holding unusual characters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders import assistant, entry, header, jsonl, run, user
from omp_session.cli import cli
from omp_session.store import open_store
from stores.teamutil import drop_derived

KEYS = [
    "/te_am%/sess'ions/-wörk-'q\"%_/2026-01-01T00-00-00-000Z_a.jsonl",
    "/te_am%/sess'ions/-wörk-'q\"%_/2026-01-02T00-00-00-000Z_b\nc.jsonl",
    "/te_am%/sess'ions/-🙂-x/2026-01-03T00-00-00-000Z_d.jsonl",
    "/te_am%/sess'ions/-🙂-x/2026-01-03T00-00-00-000Z_d/agent-1.jsonl",
    "/te_amX/sess'ions/-other/2026-01-04T00-00-00-000Z_e.jsonl",
]
ROOT = "/te_am%/sess'ions/"


def _fill(url: str) -> None:
    storage = open_store(url, create=True)
    try:
        for n, key in enumerate(KEYS):
            body = jsonl([header(f"s{n}", cwd=f"/wörk/'{n}"),
                          entry("e1", None, message=user(f"question {n} ü")),
                          entry("e2", "e1", message=assistant(f"answer {n}"))])
            storage.replace(key, body.encode(), None)
    finally:
        storage.close()


@pytest.fixture()
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    from urllib.parse import quote
    return f"sqlite:{tmp_path / 'team.db'}?table=t_review&root={quote(ROOT, safe='')}"


def test_list_from_tables_matches_bytes_for_odd_keys(url: str) -> None:
    _fill(url)
    before = [run(cli, "list", "--store", url, *o) for o in (["--all", "--json"], ["--all", "--json", "--limit", "1"])]
    assert run(cli, "index", "--store", url)[0] == 0
    after = [run(cli, "list", "--store", url, *o) for o in (["--all", "--json"], ["--all", "--json", "--limit", "1"])]
    assert after == before
    paths = [r["path"] for r in json.loads(after[0][1])]
    assert sorted(paths) == sorted(KEYS[:4])


def test_stats_from_tables_matches_bytes_for_odd_keys(url: str) -> None:
    _fill(url)
    before = run(cli, "stats", "--store", url, "--all", "--json", "--by", "session")
    assert run(cli, "index", "--store", url)[0] == 0
    after = run(cli, "stats", "--store", url, "--all", "--json", "--by", "session")
    assert after[1] == before[1]


def _connection(storage: object) -> object:
    """The storage that holds the connection now."""
    current = getattr(storage, "_storage", None)
    return current() if current is not None else storage


def _kill_backends(pids: list[int]) -> None:
    """What a database restart does to a client: its connections are closed by the server
    (only this test's own backends are ended)."""
    import psycopg

    from stores.sqlutil import POSTGRES_URL
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


@pytest.mark.db
def test_serve_store_pages_come_back_after_the_database_drops_the_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uuid

    from omp_session.errors import StoreError
    from omp_session.serve.store_source import StoreCatalog, store_page
    from omp_session.store.url import parse_store_url
    from stores.sqlutil import POSTGRES_URL

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    table = f"t_{uuid.uuid4().hex[:16]}"
    url = f"{POSTGRES_URL}?table={table}&root=/team/sessions/"
    key = "/team/sessions/-w/2026-01-01T00-00-00-000Z_abc.jsonl"
    storage = open_store(url, create=True)
    try:
        storage.replace(key, jsonl([header("abc", cwd="/w"), entry("e1", None, message=user("hi"))]).encode(), None)
    finally:
        storage.close()
    assert run(cli, "index", "--store", url)[0] == 0
    parsed = parse_store_url(url)
    catalog = StoreCatalog(parsed, open_store(parsed, create=False))
    try:
        row = catalog.find("abc")
        assert row is not None
        store_page(catalog, row).close()
        pids = [_connection(catalog.storage)._conn.info.backend_pid]  # type: ignore[attr-defined]
        with catalog.db_lock:
            tables = catalog.tables()
            assert tables is not None
            pids.append(tables.conn.info.backend_pid)
        _kill_backends(pids)
        outcomes = []
        for _ in range(3):  # the first request may fail; then the server is back to normal
            try:
                row = catalog.find("abc")
                assert row is not None
                store_page(catalog, row).close()
                outcomes.append("ok")
            except StoreError:
                outcomes.append("503")
        assert outcomes[-1] == "ok", outcomes
    finally:
        catalog.close()
        catalog.storage.close()
        drop_derived(table)


@pytest.mark.db
def test_mcp_store_reads_again_after_the_database_drops_the_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uuid

    from omp_session.errors import SessionError
    from omp_session.mcp_server.stored import StoreLibrary
    from omp_session.store.url import parse_store_url
    from stores.sqlutil import POSTGRES_URL

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    table = f"t_{uuid.uuid4().hex[:16]}"
    url = f"{POSTGRES_URL}?table={table}&root=/team/sessions/"
    key = "/team/sessions/-w/2026-01-01T00-00-00-000Z_abc.jsonl"
    storage = open_store(url, create=True)
    try:
        storage.replace(key, jsonl([header("abc", cwd="/w"), entry("e1", None, message=user("hi"))]).encode(), None)
    finally:
        storage.close()
    assert run(cli, "index", "--store", url)[0] == 0
    parsed = parse_store_url(url)
    lib = StoreLibrary(parsed, open_store(parsed, create=False))
    try:
        assert lib.read_session({"session": "abc"})["items"]
        pids = [_connection(lib.storage)._conn.info.backend_pid]  # type: ignore[attr-defined]
        lib.list_sessions({})
        assert lib._tables is not None
        pids.append(lib._tables.conn.info.backend_pid)
        _kill_backends(pids)
        outcomes = []
        for _ in range(3):  # the first call may fail (one line); then the tools work again
            try:
                lib.list_sessions({})
                assert lib.read_session({"session": "abc"})["items"]
                outcomes.append("ok")
            except SessionError:
                outcomes.append("error")
        assert outcomes[-1] == "ok", outcomes
    finally:
        lib.close()
        drop_derived(table)
