"""``serve --store``'s ``user=``/``machine=`` over search tables that cannot filter: the reason is
store/derived/layout.py's, as the command line words it after its lead ("…, and <why>"): none
yet, an older layout (run ``index --store``), a table not omp-session's (which ``index --store``
leaves alone: no advice to run it), each a 400; the list and the Costs page without filters are
read from the stored bytes all the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from storeutil import store_app

from builders import entry, header, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.ops.sync import sync_urls
from omp_session.store.derived import open_derived
from omp_session.store.derived.schema import SCHEMA_VERSION


def _relayout(url: str, column: str | None) -> tuple[int | None, str]:
    """The sessions table's ``layout`` column replaced by ``column`` (None: none, the first
    layout); the version it reads as, and the sessions table's name."""
    with open_derived(url) as t:
        t.rows(f"ALTER TABLE {t.names.sessions} DROP COLUMN layout")
        if column is not None:
            t.rows(f"ALTER TABLE {t.names.sessions} ADD COLUMN layout {column}")
        return t.version(), t.names.sessions


@pytest.mark.parametrize("column", [None, "TEXT DEFAULT 'x'"], ids=["older", "not-ours"])
def test_filters_on_tables_not_of_this_layout_say_the_command_lines_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, column: str | None) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = tmp_path / "m"
    for s in range(2):
        write_session(src / "--work-p--" / f"2026-01-01T00-00-0{s}-000Z_dana{s}.jsonl",
                      [entry("e0", None, message=user(f"question {s}"))], head=header(f"dana{s}", cwd="/work/p"))
    db = tmp_path / "team.db"
    url = f"sqlite:{db}?root=/team/sessions/"
    sync_urls(f"file:{src}", url, use_state=False)
    refresh_url(url)
    version, sessions = _relayout(url, column)
    name = f"sqlite:{db}"
    if column is None:
        assert version == 1
        why = f"they are of an older layout (1, this omp-session's: {SCHEMA_VERSION}): run omp-session index --store URL"
    else:
        assert version == 0
        why = f"{sessions} in the database is not omp-session's"
    expected = f"{name}: user= and machine= read the namespaces in the search tables, and {why}"
    made, catalog = store_app(url)
    try:
        assert sorted(s["id"] for s in made.get("/api/sessions").json()["sessions"]) == ["dana0", "dana1"]
        assert made.get("/api/costs").status_code == 200
        for path in ("/api/sessions?user=dana", "/api/costs?machine=desk", "/api/search?q=question&user=dana"):
            got = made.get(path)
            assert got.status_code == 400 and got.json()["error"] == expected, (path, got.text)
    finally:
        catalog.close()
        catalog.storage.close()
