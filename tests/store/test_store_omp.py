"""Cross-check with omp itself: sessions omp-session writes into an SQL table are read by omp
18.2.3's own SqlSessionStorage (and its SessionManager) identically, and the reverse.

tests/stores/omp_sql_store.ts drives the installed omp under Bun (the oracle's install)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import ASSISTANT
from omp_session.format.blobs import MemoryBlobStore
from omp_session.store import open_store
from omp_session.write.manager import SessionManager
from stores.sqlutil import MYSQL_URL, POSTGRES_URL, drop_table, fresh_table, store_url

pytestmark = pytest.mark.oracle

ORACLE_HOME = Path(os.environ.get("OMP_ORACLE_HOME", Path.home() / ".cache" / "omp-session-reference" / "18.2.3"))
BUN = ORACLE_HOME / "node_modules" / "bun" / "bin" / "bun.exe"
SCRIPT = Path(__file__).parents[1] / "stores" / "omp_sql_store.ts"



class Target:
    def __init__(self, kind: str, tmp: Path) -> None:
        self.kind, self.table = kind, fresh_table()
        db = tmp / "omp.db"
        self.url = store_url(kind, self.table, db)  # ours
        self.bun_url = {"sqlite": f"sqlite://{db}", "postgres": POSTGRES_URL.replace("postgresql://", "postgres://"),
                        "mysql": MYSQL_URL}[kind]  # Bun.SQL's

    def omp(self, tmp: Path, *args: str) -> list[dict[str, Any]]:
        env = {**os.environ, "HOME": str(tmp), "PI_CODING_AGENT_DIR": str(tmp / "agent"),
               "OMP_ORACLE_HOME": str(ORACLE_HOME)}
        proc = subprocess.run([str(BUN), "--no-install", str(SCRIPT), args[0], self.bun_url, self.table, *args[1:]],
                              capture_output=True, text=True, env=env, timeout=300, cwd=tmp)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [json.loads(line) for line in proc.stdout.split("\n") if line]  # not splitlines: U+2028


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    assert BUN.exists(), f"no bun at {BUN}: run the oracle's install"
    t = Target(request.param, tmp_path)
    try:
        yield t
    finally:
        drop_table(t.kind, t.table)


def _write_ours(url: str, cwd: Path) -> list[str]:
    """Sessions written by omp-session: titles (metadata-only changes), branches, Unicode."""
    paths = []
    for n in range(2):
        sm = SessionManager.create(str(cwd), f"/team/sessions/--p{n}--", storage=url, blob_store=MemoryBlobStore())
        u = sm.append_message({"role": "user", "content": f"ours {n} ✓ 𝄞 \u2028", "timestamp": 1})
        sm.append_message(ASSISTANT)
        sm.set_session_name(f"Our title {n} — ✓", "user")
        sm.branch(u)
        sm.append_message({"role": "user", "content": "a branch", "timestamp": 3})
        if n:
            sm.set_session_name("long ✓ " * 50, "user")  # the slot holds a cut title; the entry the whole
        path = sm.get_session_file()
        assert path is not None
        paths.append(path)
        sm.close()
    return paths


def test_omp_reads_what_we_wrote(target: Target, tmp_path: Path) -> None:
    paths = _write_ours(target.url, tmp_path)
    ours = open_store(target.url, create=False)
    seen = target.omp(tmp_path, "read", *paths)
    for path, row in zip(paths, seen, strict=True):
        body = ours.read(path)
        assert row["exists"] and row["listed"]
        assert row["size"] == ours.size(path) == len(body)
        assert row["text"].encode("utf-8") == body  # the same bytes, title slot overlay included
        [loaded] = target.omp(tmp_path, "load", path)
        sm = SessionManager.open(path, storage=ours, blob_store=MemoryBlobStore())
        assert loaded["title"] == sm.get_session_name() == loaded["header"]["title"]
        assert loaded["leaf"] == sm.get_leaf_id()
        assert loaded["entries"] == len(sm.get_entries())
        sm.close()
    ours.close()


def test_we_read_what_omp_wrote(target: Target, tmp_path: Path) -> None:
    [written] = target.omp(tmp_path, "write", str(tmp_path), "/team/sessions/--omp--")
    path, text = written["path"], written["text"]
    ours = open_store(target.url, create=False)
    assert ours.read(path) == text.encode("utf-8")
    assert ours.size(path) == len(text.encode("utf-8"))
    assert ours.list("/team/sessions/--omp--", "*.jsonl") == [path]
    sm = SessionManager.open(path, storage=ours, blob_store=MemoryBlobStore())
    assert sm.get_session_name() == "Title from omp ✓"
    [loaded] = target.omp(tmp_path, "load", path)
    assert loaded["leaf"] == sm.get_leaf_id() and loaded["entries"] == len(sm.get_entries())
    # and we continue it: omp reads our appends and our title change
    sm.append_message({"role": "user", "content": "continued by omp-session", "timestamp": 9})
    sm.set_session_name("Retitled by us", "user")
    sm.close()
    [row] = target.omp(tmp_path, "read", path)
    assert row["text"].encode("utf-8") == ours.read(path)
    [loaded] = target.omp(tmp_path, "load", path)
    assert loaded["title"] == "Retitled by us"
    ours.close()
