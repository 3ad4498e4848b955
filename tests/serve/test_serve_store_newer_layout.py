"""``serve --store`` (and ``mcp --store``'s search) over search tables of a newer layout than this omp-session knows: the pages
still list and total from the stored bytes (nothing is misread), and ``user=``/``machine=`` say to
upgrade omp-session, as the command line does, not to run ``index --store`` (which refuses)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_serve_store_team_review import _store_client

from builders import entry, header, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.ops.sync import sync_urls
from omp_session.store.derived import open_derived
from omp_session.store.derived.schema import SCHEMA_VERSION

NEWER = SCHEMA_VERSION + 1


def test_a_newer_layout_is_upgrade_advice_for_filters_and_bytes_for_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = tmp_path / "m"
    for s in range(2):
        write_session(src / "--work-p--" / f"2026-01-01T00-00-0{s}-000Z_erin{s}.jsonl",
                      [entry("e0", None, message=user(f"question {s}"))], head=header(f"erin{s}", cwd="/work/p"))
    url = f"sqlite:{tmp_path / 'team.db'}?root=/team/sessions/"
    sync_urls(f"file:{src}", url, use_state=False)
    refresh_url(url)
    with open_derived(url) as t:
        t.rows(f"ALTER TABLE {t.names.sessions} DROP COLUMN layout")
        t.rows(f"ALTER TABLE {t.names.sessions} ADD COLUMN layout INTEGER NOT NULL DEFAULT {NEWER}")
    with _store_client(url) as (client, _catalog):
        listed = client.get("/api/sessions").json()
        assert sorted(s["id"] for s in listed["sessions"]) == ["erin0", "erin1"]
        for path in ("/api/sessions?user=erin", "/api/costs?user=erin"):
            got = client.get(path)
            assert got.status_code == 400, (path, got.text)
            assert f"layout {NEWER}" in got.json()["error"] and "upgrade omp-session" in got.json()["error"]
            assert "index --store" not in got.json()["error"]
        for path in ("/api/search?q=question", "/api/search?q=question&user=erin"):  # not read, either way
            got = client.get(path)
            assert got.status_code in (400, 503) and "upgrade omp-session" in got.json()["error"], (path, got.text)
    # the MCP server's search does not read them either
    from omp_session.errors import StoreError
    from omp_session.mcp_server.stored import StoreLibrary
    from omp_session.store import open_store, parse_store_url

    parsed = parse_store_url(url)
    library = StoreLibrary(parsed, open_store(parsed, create=False))
    try:
        with pytest.raises(StoreError, match="upgrade omp-session"):
            library._search("question", None, None, 10, [])
    finally:
        library.storage.close()
