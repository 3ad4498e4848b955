"""One place decides what a store's derived tables are to this omp-session
(store/derived/layout.py's ``tables_layout``), and one place chooses how a store's stats are made
(ops/stats/store.py's ``stats_for_store``): the command line and ``serve --store`` word their
lines from the first and call the second."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from builders import entry, header, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.errors import SessionError, StoreError
from omp_session.ops.stats import store as stats_store
from omp_session.ops.sync import sync_urls
from omp_session.serve.store_filters import needs_tables as serve_needs_tables
from omp_session.store.derived import open_derived
from omp_session.store.derived.layout import (
    Fact,
    TablesLayout,
    needs_tables,
    newer_layout,
    not_supported,
    tables_layout,
)
from omp_session.store.derived.schema import SCHEMA_VERSION

NAME = "sqlite:/x/team.db"
SESSIONS = "omp_sessions_derived"
NEWER = SCHEMA_VERSION + 1


def _tables(version: int | None) -> Any:
    """What tables_layout reads of a DerivedTables: its name, its sessions table's, its version."""
    return SimpleNamespace(name=NAME, names=SimpleNamespace(sessions=SESSIONS), version=lambda: version)


@pytest.mark.parametrize(("version", "fact"), [(None, Fact.MISSING), (0, Fact.FOREIGN), (-3, Fact.OLDER),
                                               (1, Fact.OLDER), (SCHEMA_VERSION - 1, Fact.OLDER),
                                               (SCHEMA_VERSION, Fact.CURRENT), (NEWER, Fact.NEWER)])
def test_the_version_decides_the_fact(version: int | None, fact: Fact) -> None:
    layout = tables_layout(_tables(version))
    assert layout == TablesLayout(NAME, fact, version, SESSIONS)
    assert layout.current == (fact is Fact.CURRENT)
    assert tables_layout(_tables(999), "other", version=version) == TablesLayout("other", fact, version, SESSIONS)
    assert tables_layout(None, NAME) == TablesLayout(NAME, Fact.UNSUPPORTED)


def test_the_command_line_and_serve_word_the_same_reasons() -> None:
    older = SCHEMA_VERSION - 1
    index = "run omp-session index --store URL"
    why = {None: f"there are none yet: {index}",
           0: f"{SESSIONS} in the database is not omp-session's",
           older: f"they are of an older layout ({older}, this omp-session's: {SCHEMA_VERSION}): {index}"}
    for version, reason in why.items():
        assert tables_layout(_tables(version)).why == reason
        line = needs_tables(_tables(version), "--user", version)
        assert type(line) is StoreError and str(line) == f"{NAME}: --user needs the search tables, and {reason}"
        served = serve_needs_tables(tables_layout(_tables(version)))
        assert type(served) is SessionError  # a 400
        assert str(served) == f"{NAME}: user= and machine= read the namespaces in the search tables, and {reason}"
    newer = (f"{NAME}: the search tables are layout {NEWER}, this omp-session knows layouts up to {SCHEMA_VERSION}: "
             "upgrade omp-session")
    assert newer_layout(NAME, NEWER) == newer
    assert str(tables_layout(_tables(NEWER)).refusal("--user")) == newer
    served = serve_needs_tables(tables_layout(_tables(NEWER)))
    assert type(served) is SessionError and str(served) == newer
    unsupported = "not supported: use PostgreSQL or SQLite for team search"
    line = not_supported(NAME, "--machine")
    assert type(line) is StoreError and str(line) == f"{NAME}: --machine needs the search tables: {unsupported}"
    served = serve_needs_tables(tables_layout(None, NAME))
    assert type(served) is StoreError and str(served) == f"{NAME}: user= and machine= {unsupported}"  # a 503
    with pytest.raises(ValueError, match="current"):
        _ = tables_layout(_tables(SCHEMA_VERSION)).why


# ----- stats_for_store: the database adds up, or every session is read ---------------------------------

def _store(tmp_path: Path, *, index: bool) -> str:
    src = tmp_path / "m"
    for s in range(2):
        write_session(src / "--work-p--" / f"2026-01-01T00-00-0{s}-000Z_dana{s}.jsonl",
                      [entry("e0", None, message=user(f"question {s}"))], head=header(f"dana{s}", cwd="/work/p"))
    url = f"sqlite:{tmp_path / 'team.db'}?root=/team/sessions/"
    sync_urls(f"file:{src}", url, use_state=False)
    if index:
        refresh_url(url)
    return url


class _Seen:
    """stats_for_store's two ways, replaced: which one ran, and its refusals and notes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ways: list[str] = []
        self.refused: list[TablesLayout] = []
        self.stale: list[TablesLayout] = []
        from omp_session.ops.stats import database

        monkeypatch.setattr(database, "stats_in_tables", lambda *a, **k: self.ways.append("tables") or "tables")
        monkeypatch.setattr(stats_store, "stats", lambda *a, **k: self.ways.append("read") or "read")

    def refuse(self, layout: TablesLayout) -> Exception:
        self.refused.append(layout)
        return SessionError("refused")

    def run(self, url: str | None, paths: list[str] | None = None, **filters: str) -> Any:
        """``url``'s report (None: a store that cannot have the tables); the sessions are never
        read (``stats`` is replaced), so there is no storage to read them from."""
        tables: Any = nullcontext(None) if url is None else open_derived(url)
        return stats_store.stats_for_store(tables, NAME, None, paths, all_sessions=paths is None,  # type: ignore[arg-type]
                                           root="/team/sessions/", by="day", since=None, until=None, tz="UTC",
                                           refuse=self.refuse, stale=self.stale.append, **filters)


def test_current_tables_add_up_in_the_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = _store(tmp_path, index=True)
    seen = _Seen(monkeypatch)
    assert seen.run(url) == "tables" and seen.run(url, user="dana") == "tables"
    top = "/team/sessions/--work-p--/2026-01-01T00-00-00-000Z_dana0.jsonl"
    assert seen.run(url, [top]) == "tables"
    # keys the tables do not hold as top-level sessions: read; with a filter: refused (current)
    assert seen.run(url, ["/team/sessions/nowhere.jsonl"]) == "read"
    with pytest.raises(SessionError, match="refused"):
        seen.run(url, ["/team/sessions/nowhere.jsonl"], host="desk")
    assert seen.ways == ["tables", "tables", "tables", "read"] and not seen.stale
    assert [layout.fact for layout in seen.refused] == [Fact.CURRENT]


def test_without_current_tables_every_session_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = _store(tmp_path, index=False)
    seen = _Seen(monkeypatch)
    assert seen.run(url) == "read"
    assert [(layout.fact, layout.name) for layout in seen.stale] == [(Fact.MISSING, NAME)]
    with pytest.raises(SessionError, match="refused"):
        seen.run(url, user="dana")
    assert [layout.fact for layout in seen.refused] == [Fact.MISSING] and len(seen.stale) == 1
    # a store that cannot have them: read, and no note; the filters refused
    assert seen.run(None) == "read" and len(seen.stale) == 1
    with pytest.raises(SessionError, match="refused"):
        seen.run(None, user="dana")
    assert seen.refused[-1] == TablesLayout(NAME, Fact.UNSUPPORTED)
    assert seen.ways == ["read", "read"]
