"""The derived tables' indexes and connection settings: ``index --store`` adds an index this
layout defines that tables made by an earlier omp-session lack (store/derived/tables.py
``add_indexes``), and a PostgreSQL connection to them plans without JIT and sorts in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import entry, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.ops.sync import sync_urls
from omp_session.store.derived import open_derived
from stores.teamutil import team_url


def _indexes(url: str) -> set[str]:
    with open_derived(url) as tables:
        n = tables.names
        if tables.dialect == "postgres":
            rows = tables.rows("SELECT indexname FROM pg_indexes WHERE tablename = ?", (n.sessions,))
        else:
            rows = tables.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (n.sessions,))
    return {str(r[0]) for r in rows}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_index_store_adds_an_index_the_tables_lack(kind: str, tmp_path: Path) -> None:
    with team_url(kind, tmp_path) as url:
        refresh_url(url)  # omp's table and the derived tables, with every index
        made = _indexes(url)
        [tree] = [name for name in made if name.endswith("_stats_tree")]
        with open_derived(url) as tables:
            tables.rows(f"DROP INDEX {tree}")  # as tables made before the index existed
        assert tree not in _indexes(url)
        refresh_url(url, create=False)  # a sync's update: adds nothing
        assert tree not in _indexes(url)
        refresh_url(url)  # index --store
        assert _indexes(url) == made


def test_a_postgres_connection_plans_without_jit(tmp_path: Path) -> None:
    with team_url("postgres", tmp_path) as url:
        refresh_url(url)
        for reading in (False, True):
            with open_derived(url, reading=reading) as tables:
                assert [tuple(r) for r in tables.rows("SELECT current_setting('jit'), current_setting('work_mem')")] \
                    == [("off", "64MB")]


def test_an_update_leaves_no_pending_search_entries(tmp_path: Path) -> None:
    """GIN's pending list (read through by every search until merged) is merged by the update
    that filled it: merging again finds no page to move."""
    files = tmp_path / "files"
    entries, parent = [], None
    for i in range(40):
        entries.append(entry(f"e{i}", parent, message=user(f"zyzzogeton quixotic number {i}")))
        parent = f"e{i}"
    write_session(files / "--p--" / "2026-01-01T00-00-00-000Z_s.jsonl", entries)
    with team_url("postgres", tmp_path) as url:
        refresh_url(url)
        sync_urls(f"file:{files}", url, use_state=False)
        with open_derived(url) as tables:
            [(pages,)] = tables.rows("SELECT gin_clean_pending_list(?::regclass)", (f"{tables.names.entries}_tsv",))
        assert pages == 0


def test_the_writers_connection_is_psycopg_and_the_readers_the_built_in_client(tmp_path: Path) -> None:
    """Updates write with COPY (psycopg's); a reading command takes the built-in client."""
    import psycopg

    from omp_session.store import pgwire

    with team_url("postgres", tmp_path) as url:
        refresh_url(url)
        with open_derived(url) as tables:
            assert isinstance(tables.conn, psycopg.Connection)
        with open_derived(url, reading=True) as tables:
            assert isinstance(tables.conn, pgwire.Connection)
