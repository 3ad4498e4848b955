"""The derived tables' indexes and connection settings: ``index --store`` adds an index this
layout defines that tables made by an earlier omp-session lack (store/derived/tables.py
``add_indexes``), and a PostgreSQL connection to them plans without JIT and sorts in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from omp_session.catalog.derived import refresh_url
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
