"""A writer process for tests/test_store_load.py.

    load_worker.py append URL PATH TAG COUNT   open PATH in the store, append COUNT user messages
                                               "TAG:k", print the new ids (one per line)
    load_worker.py hang URL PATH               append one line, then stop inside the transaction
                                               (after the UPDATE, before COMMIT): print "mid"
                                               and sleep until killed
    load_worker.py spin URL PATH SIZE          append SIZE-byte messages forever, printing "k"
                                               before each (killed at a random moment)
"""

from __future__ import annotations

import sys
import time
from typing import Any

from omp_session.format.blobs import MemoryBlobStore
from omp_session.store import open_store
from omp_session.write.manager import SessionManager


class _StopBeforeCommit:
    """A DB-API connection whose cursors stop right after an append's UPDATE."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def cursor(self) -> Any:
        return _Cursor(self._conn.cursor())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class _Cursor:
    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Any = None) -> Any:
        result = self._cur.execute(sql) if params is None else self._cur.execute(sql, params)
        if sql.startswith("UPDATE") and "mtime_ms = " in sql and ("||" in sql or "CONCAT" in sql):
            print("mid", flush=True)
            time.sleep(600)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)


def main(argv: list[str]) -> None:
    mode, url, path = argv[:3]
    if mode == "append":
        tag, count = argv[3], int(argv[4])
        sm = SessionManager.open(path, storage=url, blob_store=MemoryBlobStore(), throw_if_missing=True)
        for k in range(count):
            print(sm.append_message({"role": "user", "content": f"{tag}:{k}", "timestamp": k}), flush=True)
        sm.close()
    elif mode == "hang":
        storage = open_store(url)
        storage._conn = _StopBeforeCommit(storage._conn)  # type: ignore[attr-defined]
        storage.append(path, b'{"type":"custom","customType":"never","id":"ffffffff","parentId":null,'
                             b'"timestamp":"2026-01-01T00:00:00.000Z"}\n')
    elif mode == "spin":
        size = int(argv[3])
        sm = SessionManager.open(path, storage=url, blob_store=MemoryBlobStore(), throw_if_missing=True)
        k = 0
        while True:
            print(k, flush=True)
            sm.append_message({"role": "user", "content": f"{k}:" + "x" * size, "timestamp": k})
            k += 1
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
