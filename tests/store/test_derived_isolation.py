"""The derived tables' writes on a PostgreSQL whose default isolation is serializable (a role's or
database's setting, or ``options`` in the URL).

A write takes an advisory lock on the session's key and then reads the session's row: under
repeatable read or serializable the snapshot is the one of the lock statement, taken before the
wait, so a writer that waited for another would not see the row the other one just derived and
would derive it a second time. The transaction says read committed itself."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from omp_session.store import open_store
from omp_session.store.derived.tables import open_derived
from stores.sqlutil import POSTGRES_URL
from stores.teamutil import drop_derived

pytestmark = pytest.mark.db


def test_a_derived_write_is_read_committed_whatever_the_default(tmp_path: Path) -> None:
    table = f"t_{uuid.uuid4().hex[:16]}"
    sep = "&" if "?" in POSTGRES_URL else "?"
    url = f"{POSTGRES_URL}{sep}table={table}&root=/team/&options=-c%20default_transaction_isolation%3Dserializable"
    try:
        open_store(url, create=True).close()
        with open_derived(url) as tables:
            assert tables.rows("SHOW default_transaction_isolation") == [("serializable",)]
            with tables.transaction("checking") as conn:
                assert conn.execute("SHOW transaction_isolation").fetchone() == ("read committed",)
    finally:
        drop_derived(table)
