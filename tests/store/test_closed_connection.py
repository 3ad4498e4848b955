"""A connection the server (or anything else) closed is one ``StoreError`` line, never a driver
traceback: the cursor is opened inside the error handling (store/sql.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from omp_session.errors import StoreError
from omp_session.store import open_store, parse_store_url


def test_a_closed_connection_is_a_store_error(tmp_path: Path) -> None:
    storage = open_store(parse_store_url(f"sqlite:{tmp_path / 's.db'}"), create=True)
    key = str(tmp_path / "sessions" / "--p--" / "a.jsonl")
    storage.replace(key, b'{"type":"session"}\n', None)
    storage._conn.close()  # type: ignore[attr-defined]  # as a server restart leaves it
    for call in (lambda: storage.size(key), lambda: storage.append(key, b"{}\n"), lambda: storage.read(key)):
        with pytest.raises(StoreError, match="failed"):
            call()
