"""``serve --store`` over a team's store: three members' sessions synced into one SQLite or
PostgreSQL store with their namespaces. A session's page embeds the same subagent transcripts as
the file page; ``user=``/``machine=`` on the list, search and costs give exactly what ``list``,
``search`` and ``stats --store --user/--machine`` give; on files they are a 400."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient
from storeutil import PORT, TOKEN, client, run_cli, store_app
from team_corpus import NAMESPACES, TASK_SESSION, build_member

from omp_session.errors import StoreError
from omp_session.serve.app import build_app
from omp_session.serve.store_source import StoreCatalog
from stores.sqlutil import MYSQL_URL, POSTGRES_URL, drop_table, fresh_table
from stores.teamutil import drop_derived

ROOT = "/team/sessions/"
_BLOCK = re.compile(rb'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)
# each filter, and the owners whose sessions it keeps
FILTERS: list[tuple[dict[str, str], set[str]]] = [
    ({"user": "alice"}, {"alice"}), ({"user": "bob"}, {"bob"}), ({"machine": "laptop"}, {"alice", "carol"}),
    ({"machine": "desk"}, {"bob"}), ({"user": "carol", "machine": "laptop"}, {"carol"}),
    ({"user": "alice", "machine": "desk"}, set()), ({"user": "nobody"}, set())]


def _flags(params: dict[str, str]) -> list[str]:
    return [x for k, v in params.items() for x in (f"--{k}", v)]


def _owner(session_id: str) -> str:
    return session_id.split("-", 1)[0]


@dataclass
class Team:
    store: TestClient
    files: TestClient  # alice's sessions root, served from the files
    url: str
    catalog: StoreCatalog
    base: Path  # each member's sessions root is base / owner


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.db)])
def team(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    base = tmp_path_factory.mktemp("serve-team")
    table = fresh_table()
    url = (f"sqlite:{base / 'team.db'}" if request.param == "sqlite" else POSTGRES_URL) + f"?table={table}&root={ROOT}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PI_CODING_AGENT_DIR", str(base / "agent"))
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        run_cli("index", "--store", url)  # the tables first: each sync then records its namespace
        for owner, namespace in NAMESPACES.items():
            build_member(base / owner, owner)
            run_cli("sync", "--from", f"file:{base / owner}", "--to", url, "--namespace", namespace)
        store, catalog = store_app(url)
        files = client(build_app(base / "alice", token=TOKEN, port=PORT, cache=False))
        try:
            yield Team(store, files, url, catalog, base)
        finally:
            catalog.close()
            catalog.storage.close()
            if request.param == "postgres":
                drop_derived(table)


def _blocks(body: bytes) -> dict[str, Any]:
    return {name.decode(): json.loads(data) for name, data in _BLOCK.findall(body)}


# ----- subagents ------------------------------------------------------------------------------------


def test_the_store_page_embeds_the_files_subagent_transcripts(team: Team) -> None:
    f, s = team.files.get(f"/s/{TASK_SESSION}"), team.store.get(f"/s/{TASK_SESSION}")
    assert f.status_code == s.status_code == 200, s.text
    fb, sb = _blocks(f.content), _blocks(s.content)
    served_f, served_s = fb.pop("omp-serve-session"), sb.pop("omp-serve-session")
    assert served_s["id"] == served_f["id"] == TASK_SESSION
    # the listing of each document, the notes and every transcript's whole data: the same
    assert sb == fb
    listing = sb["omp-session-data"]["subagents"]
    assert [a["id"] for a in listing] == ["Anna", "Bob", "../evil", "Extra", "__advisor"]
    assert listing[1]["note"] == f"2026-01-02T10-05-00-000Z_{TASK_SESSION}/Bob.jsonl: subagent transcript not found"
    embedded = {d["session_id"]: d for k, d in sb.items() if k.startswith("omp-subagent-")}
    assert set(embedded) == {"anna-session", "carl-session", "extra-session", "advisor-session"}
    anna = embedded["anna-session"]
    assert [a["id"] for a in anna["subagents"]] == ["Anna.Carl"] and anna["subagents"][0]["doc"] is not None
    assert any("annaword" in json.dumps(e) for e in anna["entries"])
    assert "</script> annaword" not in s.text  # still escaped inside its data block


def test_export_html_from_the_store_embeds_the_files_subagent_transcripts(
        team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``export --format html --store`` reads the subagents from the store's keys as serve does (it
    left them out): the page's data blocks equal the export of the file."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    [file] = (team.base / "alice").rglob(f"*_{TASK_SESSION}.jsonl")
    key = ROOT + file.relative_to(team.base / "alice").as_posix()
    from_file, from_store = tmp_path / "file.html", tmp_path / "store.html"
    run_cli("export", str(file), "--format", "html", "-o", str(from_file))
    run_cli("export", key, "--store", team.url, "--format", "html", "-o", str(from_store))
    blocks = _blocks(from_store.read_bytes())
    assert [a["id"] for a in blocks["omp-session-data"]["subagents"]] == ["Anna", "Bob", "../evil", "Extra", "__advisor"]
    assert blocks == _blocks(from_file.read_bytes())
    run_cli("export", key, "--store", team.url, "--format", "html", "--no-subagents", "-o", str(from_store),
            "--force")
    assert _blocks(from_store.read_bytes())["omp-session-data"]["subagents"] == []


def test_a_database_gone_while_reading_a_subagent_is_a_503(team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = team.catalog.storage
    read = storage.read

    def failing(key: str) -> bytes:
        if key.endswith("/Anna.jsonl"):
            raise StoreError("test store: connection lost")
        return read(key)

    monkeypatch.setattr(storage, "read", failing)
    r = team.store.get(f"/s/{TASK_SESSION}")
    # not a page that quietly leaves the transcript out as "not readable"
    assert r.status_code == 503 and "connection lost" in r.text


def test_a_session_without_subagents_is_the_same_page_too(team: Team) -> None:
    f, s = team.files.get("/s/alice-plain-0001"), team.store.get("/s/alice-plain-0001")
    fb, sb = _blocks(f.content), _blocks(s.content)
    fb.pop("omp-serve-session"), sb.pop("omp-serve-session")
    assert sb == fb and sb["omp-session-data"]["subagents"] == []


# ----- user and machine filters --------------------------------------------------------------------


@pytest.mark.parametrize(("params", "owners"), FILTERS)
def test_the_sessions_filters_are_list_stores(team: Team, params: dict[str, str], owners: set[str]) -> None:
    expected = json.loads(run_cli("list", "--store", team.url, "--all", "--json", *_flags(params)))
    r = team.store.get("/api/sessions?" + urlencode({**params, "per_page": "1000"}))
    assert r.status_code == 200, r.text
    got = r.json()["sessions"]
    assert [{k: row[k] for k in want} for row, want in zip(got, expected, strict=True)] == expected
    assert {_owner(row["id"]) for row in got if row["subagent_of"] is None} == owners
    assert r.json()["total"] == len([row for row in got if row["subagent_of"] is None])
    page = team.store.get("/?" + urlencode(params))
    assert page.status_code == 200
    shown = set(re.findall(r'data-id="([^"]+)"', page.text))
    assert shown == {row["id"] for row in got}


@pytest.mark.parametrize(("params", "owners"), FILTERS)
def test_the_costs_filters_are_stats_stores(team: Team, params: dict[str, str], owners: set[str]) -> None:
    for by in ("model", "session"):
        expected = json.loads(run_cli("stats", "--store", team.url, "--all", "--json", "--by", by, *_flags(params)))
        r = team.store.get("/api/costs?" + urlencode({**params, "by": by}))
        assert r.status_code == 200, r.text
        assert r.json() == expected
    assert (expected["total"]["billed"]["cost"] > 0) == bool(owners)
    assert {_owner(g["key"].rsplit("_", 1)[1]) for g in expected["groups"]} == owners
    page = team.store.get("/costs?" + urlencode(params))
    assert page.status_code == 200
    assert f'<dd id="sessions">{expected["sessions"]}</dd>' in page.text


@pytest.mark.parametrize(("params", "owners"), FILTERS)
def test_the_search_filters_are_search_stores(team: Team, params: dict[str, str], owners: set[str]) -> None:
    expected = json.loads(run_cli("search", "--store", team.url, "--json", *_flags(params), "shared"))
    r = team.store.get("/api/search?" + urlencode({**params, "q": "shared"}))
    assert r.status_code == 200, r.text
    assert r.json() == expected
    assert {_owner(h["session_id"]) for h in expected} == owners
    page = team.store.get("/search?" + urlencode({**params, "q": "shared"}))
    assert page.status_code == 200
    assert {_owner(s) for s in re.findall(r'href="/s/([^"#]+)"', page.text)} == owners


def test_the_sessions_page_offers_the_stores_users_and_machines(team: Team) -> None:
    page = team.store.get("/?user=bob").text
    users = re.search(r'<select name="user"[^>]*>(.*?)</select>', page, re.S)
    machines = re.search(r'<select name="machine"[^>]*>(.*?)</select>', page, re.S)
    assert users is not None and machines is not None
    assert re.findall(r'<option value="([^"]*)"', users.group(1)) == ["", "alice", "bob", "carol"]
    assert re.findall(r'<option value="([^"]*)"', machines.group(1)) == ["", "desk", "laptop"]
    assert '<option value="bob" selected>' in users.group(1)
    # the pager and the other pages keep the filter; the files have no such control
    costs = team.store.get("/costs?machine=desk").text
    assert '<option value="desk" selected>' in costs and "machine=desk" in costs
    assert '<option value="alice" selected>' in team.store.get("/search?q=shared&user=alice").text
    assert 'name="user"' not in team.files.get("/").text
    assert 'name="user"' not in team.files.get("/search?q=shared").text


def test_empty_values_are_no_filter(team: Team) -> None:
    every = team.store.get("/api/sessions?per_page=1000").json()
    assert team.store.get("/api/sessions?per_page=1000&user=&machine=").json() == every
    assert {_owner(r["id"]) for r in every["sessions"] if r["subagent_of"] is None} == {"alice", "bob", "carol"}
    assert team.files.get("/api/sessions?user=&machine=").status_code == 200


@pytest.mark.parametrize("path", ["/", "/api/sessions", "/search?q=shared", "/api/search?q=shared", "/costs",
                                  "/api/costs"])
def test_on_files_the_filters_are_a_400(team: Team, path: str) -> None:
    for name in ("user", "machine"):
        r = team.files.get(path + ("&" if "?" in path else "?") + f"{name}=alice")
        assert r.status_code == 400, (path, name, r.text)
        assert f"{name}= filters a store's sessions" in html.unescape(r.text)


@pytest.mark.parametrize("path", ["/api/sessions", "/api/search?q=shared", "/api/costs", "/"])
def test_a_bad_user_or_machine_is_a_400(team: Team, path: str) -> None:
    sep = "&" if "?" in path else "?"
    r = team.store.get(path + sep + "user=%20alice")
    assert r.status_code == 400 and "user= the user ' alice' starts or ends with a space" in html.unescape(r.text)
    r = team.store.get(path + sep + "machine=a%01b")
    assert r.status_code == 400 and "holds a control character" in r.text


def test_without_search_tables_the_filters_say_to_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    build_member(tmp_path / "bob", "bob")
    url = f"sqlite:{tmp_path / 'bare.db'}?table={fresh_table()}&root={ROOT}"
    run_cli("sync", "--from", f"file:{tmp_path / 'bob'}", "--to", url)
    client, catalog = store_app(url)
    try:
        assert client.get("/api/sessions").status_code == 200  # read from the stored bytes
        for path in ("/api/sessions?user=bob", "/?user=bob", "/api/costs?machine=desk", "/api/search?q=shared&user=bob"):
            r = client.get(path)
            assert r.status_code == 400 and "index --store" in r.text, (path, r.text)
    finally:
        catalog.close()
        catalog.storage.close()


@pytest.mark.db
def test_mariadb_has_no_namespaces_to_filter_by(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    build_member(tmp_path / "bob", "bob")
    table = fresh_table()
    url = f"{MYSQL_URL}?table={table}&root={ROOT}"
    try:
        run_cli("sync", "--from", f"file:{tmp_path / 'bob'}", "--to", url)
        client, catalog = store_app(url)
        try:
            page = client.get("/")
            assert page.status_code == 200 and 'name="user"' not in page.text  # nothing to pick from
            for path in ("/api/sessions?user=bob", "/api/costs?machine=desk"):
                r = client.get(path)
                assert r.status_code == 503 and "user= and machine= not supported" in r.json()["error"], path
        finally:
            catalog.close()
            catalog.storage.close()
    finally:
        drop_table("mysql", table)
