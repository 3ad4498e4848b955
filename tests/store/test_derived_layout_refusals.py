"""What ``list``, ``search`` and ``stats --store`` say when the search tables cannot serve them:
none yet (``--user``/``--machine`` need them), a store that cannot have them, and tables of a
newer layout than this omp-session knows, which nothing reads or rewrites (docs/team.md)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import entry, header, run, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.cli import cli
from omp_session.ops.sync import sync_urls
from omp_session.store import open_store
from omp_session.store.derived import open_derived
from omp_session.store.derived.schema import SCHEMA_VERSION
from stores.sqlutil import POSTGRES_URL
from stores.teamutil import ROOT, drop_derived, team_url

NEWER = SCHEMA_VERSION + 1


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with team_url(request.param, tmp_path) as made:
        yield made


def _machine(folder: Path, owner: str, count: int, first: int = 0) -> None:
    for s in range(first, first + count):
        write_session(folder / "--work-p--" / f"2026-01-01T00-00-0{s}-000Z_{owner}{s}.jsonl",
                      [entry("e0", None, message=user(f"question from {owner} {s}"))],
                      head=header(f"{owner}{s}", cwd="/work/p"))


def _commands(url: str, *extra: str) -> dict[str, list[str]]:
    return {"list": ["list", "--store", url, "--all", *extra],
            "search": ["search", "question", "--store", url, *extra],
            "stats": ["stats", "--store", url, "--all", *extra]}


def _one_line(code: int, out: str, err: str) -> str:
    assert code == 1, (code, out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("omp-session: "), (out, err)
    return err.strip()


@pytest.mark.parametrize("flag", ["--user", "--machine"])
def test_filters_without_search_tables_are_one_runtime_error(url: str, tmp_path: Path, flag: str) -> None:
    _machine(tmp_path / "m", "dana", 2)
    sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)  # no search tables: sync makes none
    name = url.split("?")[0]
    lines = {}
    for command, args in _commands(url, flag, "dana").items():
        lines[command] = _one_line(*run(cli, *args))
    expected = f"omp-session: {name}: {flag} needs the search tables, and there are none yet: run omp-session " \
               "index --store URL"
    assert lines == {"list": expected, "search": expected, "stats": expected}


def test_filters_on_a_store_that_cannot_have_search_tables(tmp_path: Path) -> None:
    redis = "redis://127.0.0.1:6379/0"
    for command, args in _commands(f"{redis}?root={ROOT}", "--user", "dana").items():
        line = _one_line(*run(cli, *args))
        assert line.endswith("not supported: use PostgreSQL or SQLite for team search"), (command, line)


def _snapshot(url: str) -> dict[str, Any]:
    with open_derived(url) as t:
        n = t.names
        return {name: sorted(map(repr, t.rows(f"SELECT * FROM {name}"))) for name in (n.sessions, n.entries, n.usage)}


def _make_newer(url: str) -> None:
    """The tables as a newer omp-session would leave them: its layout in the layout column."""
    with open_derived(url) as t:
        s = t.names.sessions
        t.rows(f"ALTER TABLE {s} DROP COLUMN layout")
        t.rows(f"ALTER TABLE {s} ADD COLUMN layout INTEGER NOT NULL DEFAULT {NEWER}")
        assert t.version() == NEWER


def test_tables_of_a_newer_layout_are_refused_not_rebuilt(url: str, tmp_path: Path) -> None:
    _machine(tmp_path / "m", "erin", 2)
    sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    refresh_url(url)
    _make_newer(url)
    before = _snapshot(url)
    # a session the tables do not hold yet: an update that went ahead would write it
    _machine(tmp_path / "m", "erin", 1, first=2)
    name = url.split("?")[0]
    refusal = (f"omp-session: {name}: the search tables are layout {NEWER}, this omp-session knows layouts up "
               f"to {SCHEMA_VERSION}: upgrade omp-session")
    report = sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    assert report.count("copied") == 1  # the sessions are copied all the same
    assert report.derived == {"error": "search tables not updated: " + refusal.removeprefix("omp-session: ")}
    for args in (["index", "--store", url], ["index", "--store", url, "--rebuild"],
                 ["list", "--store", url, "--all", "--refresh"], *_commands(url).values(),
                 *_commands(url, "--user", "erin").values()):
        assert _one_line(*run(cli, *args)) == refusal, args
    with open_derived(url) as t:
        assert t.version() == NEWER
    assert _snapshot(url) == before


def test_row_level_security_is_not_applied_to_a_newer_layout(tmp_path: Path) -> None:
    from omp_session.errors import StoreError
    from omp_session.store.derived.rls import apply_rls

    table = f"t_{uuid.uuid4().hex[:16]}"
    url = f"{POSTGRES_URL}?table={table}&root={ROOT}"
    try:
        open_store(url, create=True).close()
        refresh_url(url)
        _make_newer(url)
        with open_derived(url) as t, pytest.raises(StoreError, match="upgrade omp-session"):
            apply_rls(t, "postgres")
        with open_derived(url) as t:
            assert not t.grantees()[0]
    finally:
        drop_derived(table)
