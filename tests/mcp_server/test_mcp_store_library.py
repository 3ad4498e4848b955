"""mcp_server/stored.py in process, on an SQLite store: the listing from the derived tables plus
what was written since they were brought up to date, and search kept to the store's root."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_corpus import DOCS_ID, PARSER_ID, build

from builders import entry, header, jsonl, stamp, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.catalog.store_listing import list_store_sessions
from omp_session.errors import SessionNotFoundError
from omp_session.mcp_server import stored
from omp_session.mcp_server.stored import StoreLibrary
from omp_session.mcp_server.tools import Library
from omp_session.ops.sync import sync_urls
from omp_session.store import open_store, parse_store_url
from omp_session.store.derived import open_derived
from omp_session.store.derived.query import search_derived

ROOT = "/team/sessions/"
ELSEWHERE = "/elsewhere/sessions/"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[StoreLibrary, Path]]:
    """The MCP corpus in an SQLite store under ROOT, its search tables made; the files beside."""
    files = tmp_path / "sessions"
    build(files)
    url = f"sqlite:{tmp_path / 'team.db'}?root={ROOT}"
    assert sync_urls(f"file:{files}", url, use_state=False).count("copied") == 3
    assert refresh_url(url) is not None
    parsed = parse_store_url(url)
    lib = StoreLibrary(parsed, open_store(parsed, create=False))
    yield lib, files
    lib.close()


def _listing(lib: StoreLibrary) -> list[tuple[str, int, str | None]]:
    return [(r["session"], r["messages"], r["modified"]) for r in lib.list_sessions({"limit": 200})["sessions"]]


def test_the_listing_reads_rows_for_what_was_derived(store: tuple[StoreLibrary, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    lib, files = store
    on_files = Library(files, cache=False).list_sessions({})["sessions"]
    expected = [{**r, "path": ROOT + r["path"][len(f"{files}/"):]} for r in on_files]

    def unread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a derived session was read from the store")

    monkeypatch.setattr(stored, "store_session_info", unread)
    assert lib.list_sessions({})["sessions"] == expected


def test_sessions_written_since_the_last_index_are_read_from_the_store(store: tuple[StoreLibrary, Path]) -> None:
    """What omp writes to the store itself is not in the derived tables until the next index:
    the listing still shows it as it is now."""
    lib, _files = store
    before = {s: modified for s, _, modified in _listing(lib)}
    key = lib.locate(PARSER_ID)
    lib.storage.append(key, jsonl([entry("w1", "l1", timestamp=stamp(30), message=user("more"))]).encode())
    new = f"{ROOT}--work-proj--/2026-02-01T00-00-00-000Z_eeee5555-0000-4000-8000-000000000005.jsonl"
    body = (json.dumps(header("eeee5555-0000-4000-8000-000000000005", cwd="/work/proj")) + "\n"
            + jsonl([entry("u1", None, timestamp=stamp(1), message=user("brand new"))]))
    lib.storage.replace(new, body.encode(), None)
    lib.storage.delete(lib.locate(DOCS_ID))
    now = {s: modified for s, _, modified in _listing(lib)}
    assert set(now) == {PARSER_ID, "eeee5555-0000-4000-8000-000000000005"}
    assert now[PARSER_ID] != before[PARSER_ID]
    # the same as the listing that reads every session
    truth = list_store_sessions(lib.storage, ROOT, all_buckets=True).sessions
    fields = [(i.path, i.id, i.message_count, i.modified, i.title, i.first_message, i.status) for i in truth]
    assert [(i.path, i.id, i.message_count, i.modified, i.title, i.first_message, i.status)
            for i in lib.infos()] == fields
    with pytest.raises(SessionNotFoundError):
        lib.read_session({"session": DOCS_ID})


def test_search_keeps_to_the_root_when_another_ranks_first(store: tuple[StoreLibrary, Path], tmp_path: Path) -> None:
    """Another root's session that ranks first fills the page of the query without the root: the
    query is asked again under the root."""
    lib, _files = store
    other = tmp_path / "other"
    write_session(other / "--x--" / "2026-01-05T00-00-00-000Z_ffff6666.jsonl",
                  [entry("u1", None, timestamp=stamp(1), message=user("flaky flaky flaky flaky flaky parser"))],
                  head=header("ffff6666", cwd="/x"))
    url = f"sqlite:{tmp_path / 'team.db'}?root={ELSEWHERE}"
    sync_urls(f"file:{other}", url, use_state=False)
    assert refresh_url(url) is not None
    with open_derived(lib.parsed) as tables:
        first = search_derived(tables, "flaky", fts5='"flaky"', limit=1, sessions=True)
    assert first[0].key.startswith(ELSEWHERE)  # the case this test is about
    hits = lib.search_sessions({"query": "flaky", "limit": 1})["hits"]
    assert [(h["session"], h["entry"]) for h in hits] == [(PARSER_ID, "u1")]
    every = lib.search_sessions({"query": "flaky OR cache OR parser"})["hits"]
    assert {h["session"] for h in every} == {PARSER_ID, DOCS_ID}
