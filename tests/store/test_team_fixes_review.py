"""Review of the team store's refusals (docs/team.md, "Filters" and "Layouts"): tables of an
older layout, and a table of the derived tables' name that is not omp-session's (its ``layout``
column's default NULL or not a number), as ``search``, ``index``, ``sync`` and ``list`` meet them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import entry, header, run, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.cli import cli
from omp_session.errors import StoreError
from omp_session.ops.sync import sync_urls
from omp_session.store.derived import derived_names, open_derived
from omp_session.store.derived.rls import apply_rls
from omp_session.store.derived.schema import SCHEMA_VERSION
from stores.teamutil import drop_derived, team_url


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with team_url(request.param, tmp_path) as made:
        yield made


def _machine(folder: Path, count: int, first: int = 0) -> None:
    for s in range(first, first + count):
        write_session(folder / "--work-p--" / f"2026-01-01T00-00-0{s}-000Z_dana{s}.jsonl",
                      [entry("e0", None, message=user(f"question from dana {s}"))],
                      head=header(f"dana{s}", cwd="/work/p"))


def _indexed(url: str, tmp_path: Path) -> None:
    _machine(tmp_path / "m", 2)
    sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    refresh_url(url)


def _relayout(url: str, column: str | None) -> int | None:
    """The sessions table's ``layout`` column replaced by ``column`` (None: none, the first layout)."""
    with open_derived(url) as t:
        t.rows(f"ALTER TABLE {t.names.sessions} DROP COLUMN layout")
        if column is not None:
            t.rows(f"ALTER TABLE {t.names.sessions} ADD COLUMN layout {column}")
        return t.version()


def _one_line(code: int, out: str, err: str) -> str:
    assert code == 1, (code, out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("omp-session: "), (out, err)
    return err.strip()


def _snapshot(url: str) -> dict[str, Any]:
    with open_derived(url) as t:
        n = t.names
        return {name: sorted(map(repr, t.rows(f"SELECT * FROM {name}"))) for name in (n.sessions, n.entries, n.usage)}


@pytest.mark.parametrize("flag", ["--user", "--machine"])
@pytest.mark.parametrize("column", [None, "INTEGER", "TEXT DEFAULT 'x'"], ids=["older", "null", "text"])
def test_search_filters_on_tables_not_of_this_layout_say_what_list_and_stats_say(
        url: str, tmp_path: Path, flag: str, column: str | None) -> None:
    """``search --store --user`` on tables of an older layout (or not omp-session's) answered no
    hits with exit 0, where ``list`` and ``stats`` refuse in one line: docs/team.md promises the
    same line from all three."""
    _indexed(url, tmp_path)
    version = _relayout(url, column)
    assert version == (1 if column is None else 0)
    lines = {command: _one_line(*run(cli, command, *args, "--store", url, flag, "dana"))
             for command, args in (("list", ["--all"]), ("stats", ["--all"]), ("search", ["question"]))}
    assert lines["search"] == lines["list"] == lines["stats"], lines
    assert f"{flag} needs the search tables, and " in lines["search"]


def test_search_does_not_read_a_table_that_is_not_omp_sessions(url: str, tmp_path: Path) -> None:
    """A table of the search tables' name whose layout is not omp-session's (version 0) is what
    ``list`` and ``stats`` pass over; ``search --store`` searched it as if it were ours."""
    _indexed(url, tmp_path)
    assert _relayout(url, "TEXT DEFAULT 'x'") == 0
    line = _one_line(*run(cli, "search", "question", "--store", url))
    assert line.endswith("search --store needs the search tables, and "
                         f"{derived_names(url.split('table=')[1].split('&')[0]).sessions} in the database is not "
                         "omp-session's"), line
    # an older layout's are still searched as they are (docs/team.md: until index --store)
    other = url.replace("table=", "table=o")
    try:
        _indexed(other, tmp_path)
        assert _relayout(other, None) == 1
        code, out, err = run(cli, "search", "question", "--store", other)
        assert code == 0 and "dana" in out, (code, out, err)
    finally:
        if other.startswith("postgresql"):
            drop_derived(other.split("table=")[1].split("&")[0])


@pytest.mark.parametrize("column", ["INTEGER", "TEXT DEFAULT 'x'"], ids=["null", "text"])
def test_writers_leave_a_table_that_is_not_omp_sessions_alone(url: str, tmp_path: Path, column: str) -> None:
    """The layout column's default NULL or not a number: the table is not omp-session's (version
    0, "never dropped"), yet ``index --store`` derived into it with exit 0 and ``--rebuild``
    emptied it (DELETE FROM every row), ``sync --to`` and ``list --refresh`` wrote into it."""
    _indexed(url, tmp_path)
    assert _relayout(url, column) == 0
    before = _snapshot(url)
    _machine(tmp_path / "m", 1, first=2)  # a session not derived yet: an update that went ahead writes it
    lines = {" ".join(args[:1] + args[3:]): _one_line(*run(cli, *args))
             for args in (["index", "--store", url], ["index", "--store", url, "--rebuild"],
                          ["list", "--store", url, "--all", "--refresh"])}
    assert len(set(lines.values())) == 1, lines
    assert "is not omp-session's" in next(iter(lines.values()))
    report = sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    assert report.count("copied") == 1
    assert report.derived is not None and "is not omp-session's" in report.derived["error"]
    with open_derived(url) as t:
        if t.dialect == "postgres":  # nor are rls.sql's policies put on it
            with pytest.raises(StoreError, match="is not omp-session's"):
                apply_rls(t, "postgres")
            assert not t.grantees()[0]
        assert t.version() == 0
    assert _snapshot(url) == before


def test_this_layout_is_still_derived(url: str, tmp_path: Path) -> None:
    """The refusals above leave this omp-session's own tables alone: derived, searched, listed."""
    _indexed(url, tmp_path)
    with open_derived(url) as t:
        assert t.version() == SCHEMA_VERSION
    _machine(tmp_path / "m", 1, first=2)
    sync_urls(f"file:{tmp_path / 'm'}", url, use_state=False)
    code, out, err = run(cli, "search", "question", "--store", url, "--user", "nobody")
    assert code == 0, (code, out, err)
    code, out, err = run(cli, "index", "--store", url, "--rebuild")
    assert code == 0 and err == "", err
