"""``omp-session serve --store URL``: a temp agent dir synced into SQLite and PostgreSQL (``sync
--from file:DIR --to URL``, ``index --store``), the store's app driven with Starlette's TestClient
and compared with the same sessions served from the files."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from serve_corpus import build, sid
from starlette.testclient import TestClient
from storeutil import PORT, TOKEN, client, run_cli, store_app

from omp_session.cli import cli
from omp_session.serve.app import build_app
from omp_session.serve.store_events import store_events
from omp_session.serve.store_source import StoreCatalog
from stores.sqlutil import MYSQL_URL, POSTGRES_URL, drop_table, fresh_table
from stores.teamutil import drop_derived

_BLOCK = re.compile(rb'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


@dataclass
class Both:
    files: TestClient
    store: TestClient
    url: str
    catalog: StoreCatalog


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.db)])
def both(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Both]:
    base = tmp_path_factory.mktemp("serve-store")
    root = base / "agent" / "sessions"
    build(root, 12)
    table = fresh_table()
    url = (f"sqlite:{base / 'store.db'}?table={table}" if request.param == "sqlite"
           else f"{POSTGRES_URL}?table={table}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PI_CODING_AGENT_DIR", str(base / "agent"))
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        run_cli("sync", "--from", f"file:{root}", "--to", url)
        run_cli("index", "--store", url)
        store, catalog = store_app(url)
        files = client(build_app(root, token=TOKEN, port=PORT, cache=False))
        try:
            yield Both(files, store, url, catalog)
        finally:
            catalog.close()
            catalog.storage.close()
            if request.param == "postgres":
                drop_derived(table)


def _listed(client: TestClient) -> list[tuple[str, str | None, str | None]]:
    r = client.get("/api/sessions?per_page=1000")
    assert r.status_code == 200, r.text
    return [(s["id"], s["title"], s["subagent_of"] and s["subagent_of"].rsplit("/", 1)[-1])
            for s in r.json()["sessions"]]


def test_the_sessions_page_lists_the_files_sessions(both: Both) -> None:
    stored = _listed(both.store)
    # the archived .jsonl.gz file is not a key sync copies: every other session, in the same order
    files = [s for s in _listed(both.files) if s[0] != sid(11)]
    assert stored == files
    assert len(stored) >= 11
    page = both.store.get("/")
    assert page.status_code == 200 and all(s[0] in page.text for s in stored)


def _blocks(body: bytes) -> dict[str, Any]:
    return {name.decode(): json.loads(data) for name, data in _BLOCK.findall(body)}


def test_a_session_page_has_the_files_data(both: Both) -> None:
    for i in (0, 1, 5):
        f, s = both.files.get(f"/s/{sid(i)}"), both.store.get(f"/s/{sid(i)}")
        assert f.status_code == s.status_code == 200
        fb, sb = _blocks(f.content), _blocks(s.content)
        served_f, served_s = fb.pop("omp-serve-session"), sb.pop("omp-serve-session")
        assert sb == fb and sb  # the export's data: the same entries
        assert served_s == served_f and served_s["events"] == f"/events/{sid(i)}"
        assert "content-security-policy" in s.headers


def test_unknown_ids_and_keys_outside_the_root_are_404(both: Both) -> None:
    outside = "ffffffff-0000-4000-8000-0000000000ff"
    header = {"type": "session", "version": 3, "id": outside, "timestamp": "2026-01-01T00:00:00.000Z",
              "cwd": "/elsewhere"}
    key = f"/elsewhere/sessions/--elsewhere--/2026-01-01T00-00-00-000Z_{outside}.jsonl"
    both.catalog.storage.replace(key, (json.dumps(header) + "\n").encode(), None)
    assert both.store.get(f"/s/{outside}").status_code == 404
    assert both.store.get("/s/00000000-dead-4000-8000-000000000000").status_code == 404
    assert both.store.get(f"/s/{key}").status_code == 404
    assert outside not in both.store.get("/api/sessions?per_page=1000").text
    assert both.store.get(f"/events/{outside}").status_code == 404


def test_search_finds_a_word_of_one_session(both: Both) -> None:
    r = both.store.get("/api/search?q=unique3word")
    assert r.status_code == 200, r.text
    hits = r.json()
    assert hits and {h["session_id"] for h in hits} == {sid(3)}
    assert {h["session_id"] for h in both.files.get("/api/search?q=unique3word").json()} == {sid(3)}
    page = both.store.get("/search?q=unique3word")
    assert page.status_code == 200 and f"/s/{sid(3)}" in page.text


def test_costs_are_the_files_numbers(both: Both) -> None:
    for by in ("model", "day", "project"):
        stored = both.store.get(f"/api/costs?by={by}")
        assert stored.status_code == 200, stored.text
        files = both.files.get(f"/api/costs?by={by}").json()
        assert files["total"]["billed"]["cost"] > 0 and files["groups"]
        assert stored.json() == files
    page = both.store.get("/costs")
    assert page.status_code == 200 and "anthropic/m" in page.text


def test_token_and_host_still_guard(both: Both) -> None:
    bare = TestClient(both.store.app, base_url=f"http://127.0.0.1:{PORT}")
    assert bare.get("/api/sessions").status_code in (401, 403)
    r = both.store.get("/api/sessions", headers={"Host": "evil.example"})
    assert r.status_code == 403


def test_no_tables_says_to_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "agent" / "sessions"
    build(root, 3)
    url = f"sqlite:{tmp_path / 'bare.db'}?table={fresh_table()}"
    run_cli("sync", "--from", f"file:{root}", "--to", url)
    client, catalog = store_app(url)
    try:
        assert {s[0] for s in _listed(client)} == {sid(0), sid(1)}  # read from the stored bytes
        page = client.get("/search?q=question")
        assert "omp-session index --store URL" in page.text
        api = client.get("/api/search?q=question")
        assert api.status_code == 400 and "index --store" in api.json()["error"]
        assert client.get(f"/s/{sid(0)}").status_code == 200
    finally:
        catalog.close()
        catalog.storage.close()


def test_root_and_store_are_exclusive(both: Both, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--root", str(tmp_path), "--store", both.url])
    assert result.exit_code == 2 and "not both" in result.output


def test_the_live_stream_tells_an_append_and_a_rewrite(both: Both) -> None:
    storage = both.catalog.storage
    key = next(r.path for r in both.catalog.rows() if r.id == sid(4))
    body = storage.read(key)
    line = {"type": "message", "id": "zz1", "parentId": "a1", "timestamp": "2026-01-01T09:00:00.000Z",
            "message": {"role": "user", "content": "later", "timestamp": 1}}

    def restore() -> None:
        storage.replace(key, body, storage.size(key))

    async def events() -> list[tuple[str, dict[str, Any]]]:
        stopping = threading.Event()
        got: list[tuple[str, dict[str, Any]]] = []
        stream = store_events(storage, key, interval=0.01, stopping=stopping)
        async for chunk in stream:
            if not chunk.startswith(b"event: "):
                continue
            kind, data = chunk.decode().split("\n")[:2]
            got.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
            if len(got) == 1:
                await anyio.to_thread.run_sync(storage.append, key, (json.dumps(line) + "\n").encode())
            elif len(got) == 2:
                await anyio.to_thread.run_sync(restore)
            else:
                stopping.set()
        return got

    try:
        got = anyio.run(events)
    finally:
        restore()
    ready, appended, replaced = got
    assert ready[0] == "ready" and ready[1]["leaf"] == "a1" and ready[1]["entries"] >= 2
    assert appended == ("appended", {"id": "zz1", "type": None})
    assert replaced[0] == "replaced" and replaced[1]["new_leaf"] == "a1"


@pytest.mark.db
def test_mariadb_lists_and_shows_but_search_is_not_supported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "agent" / "sessions"
    build(root, 3)
    table = fresh_table()
    url = f"{MYSQL_URL}?table={table}"
    try:
        run_cli("sync", "--from", f"file:{root}", "--to", url)
        client, catalog = store_app(url)
        try:
            assert {s[0] for s in _listed(client)} == {sid(0), sid(1)}
            assert client.get(f"/s/{sid(1)}").status_code == 200
            api = client.get("/api/search?q=question")
            assert api.status_code == 503 and "not supported" in api.json()["error"]
            assert "not supported" in client.get("/search?q=question").text
            costs = client.get("/api/costs?by=model")
            assert costs.status_code == 200 and costs.json()["total"]["billed"]["cost"] > 0
        finally:
            catalog.close()
            catalog.storage.close()
    finally:
        drop_table("mysql", table)
