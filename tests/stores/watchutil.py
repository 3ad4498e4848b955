"""Test helpers for ``sync --watch``: sessions to grow, waiting for a store to hold a file's bytes,
the search tables against a rebuild, and a private PostgreSQL server to stop and start.

The private server is never the machine's: ``initdb`` into a temp folder (as root through
``runuser -u postgres``, the folder given to postgres), ``pg_ctl start`` on a free port with its
socket in that folder, ``pg_ctl stop -m fast`` and the folder removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from builders import TS, assistant, entry, header, jsonl, usage, user
from omp_session.catalog.derived import refresh_url
from omp_session.errors import SessionError
from omp_session.format.title import build_title_slot
from omp_session.store import open_store
from omp_session.store.derived import derived_names, open_derived

PG_BIN = Path(os.environ.get("OMP_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
BUCKET = "--w--"


def session_path(root: Path, sid: str, bucket: str = BUCKET) -> Path:
    return root / bucket / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"


def lines(sid: str, start: int, count: int) -> bytes:
    """Entries ``start`` … of session ``sid``: users and assistants (with usage) in turn."""
    out = []
    for n in range(start, start + count):
        parent = f"{sid}-{n - 1}" if n > 1 else None
        message = user(f"{sid} question {n} alpha") if n % 2 else assistant(f"{sid} answer {n} bravo",
                                                                              usage=usage(n, 2 * n, 0.001 * n))
        out.append(entry(f"{sid}-{n}", parent, message=message))
    return jsonl(out).encode()


def slot(title: str) -> bytes:
    return build_title_slot(title, "user", TS)


def new_session(path: Path, sid: str, title: str, count: int) -> bytes:
    """Write a session (title slot, header, ``count`` entries) the way omp does: whole, by rename."""
    body = slot(title) + jsonl([header(sid, cwd=f"/w/{sid}")]).encode() + lines(sid, 1, count)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(body)
    os.replace(tmp, path)
    return body


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def retitle(path: Path, title: str) -> None:
    """omp's title change: the 256-byte slot rewritten in place."""
    with open(path, "r+b") as f:
        f.write(slot(title))


def stored(url: str, key: str) -> bytes | None:
    """What the store holds under ``key`` as omp reads it; None when missing or unreachable."""
    try:
        storage = open_store(url, create=False, timeout=2)
    except SessionError:
        return None
    try:
        return storage.read(key)
    except (FileNotFoundError, SessionError):
        return None
    finally:
        storage.close()


def wait_for(what: str, check: Callable[[], bool], seconds: float = 60.0) -> None:
    """Poll ``check`` until it holds; a generous limit only, nothing asserted about speed."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {seconds:g} s: {what}")
        time.sleep(0.05)


def wait_stored(url: str, path: Path, key: str | None = None, seconds: float = 60.0) -> None:
    wait_for(f"{key or path} in {url} holds the file's bytes",
             lambda: stored(url, key or str(path)) == path.read_bytes(), seconds)


def snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the three search tables, in a stable order (ids of text rows left out)."""
    table = url.split("table=", 1)[1].split("&", 1)[0]
    n = derived_names(table)
    with open_derived(url) as t:
        return {
            "sessions": sorted(tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
                               for r in t.rows(f"SELECT * FROM {n.sessions}")),
            "entries": sorted(t.rows(f"SELECT key, seq, kind, entry_id, type, role, ts, target_id, text "
                                     f"FROM {n.entries}")),
            "usage": sorted(t.rows(f"SELECT * FROM {n.usage}")),
        }


def same_as_rebuild(url: str) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[tuple[Any, ...]]]]:
    """The search tables as the watcher left them, and after ``index --store --rebuild``."""
    kept = snapshot(url)
    refresh_url(url, rebuild=True)
    return kept, snapshot(url)


def drop_tables(conninfo: str, table: str) -> None:
    """omp's table ``table`` and every table named after it (the search tables, whatever they are)."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND (table_name = %s OR starts_with(table_name, %s))", (table.lower(), table.lower() + "_"))]
        for name in sorted(names, key=len, reverse=True):  # the derived ones before omp's
            conn.execute(f"DROP TABLE IF EXISTS {name} CASCADE")


def differences(kept: dict[str, list[tuple[Any, ...]]], rebuilt: dict[str, list[tuple[Any, ...]]]) -> dict[str, Any]:
    """Per table, the rows only the kept tables have and those only the rebuild has (empty: equal)."""
    out: dict[str, Any] = {}
    for name in kept.keys() | rebuilt.keys():
        a, b = kept.get(name, []), rebuilt.get(name, [])
        only_kept = [r for r in a if r not in b]
        only_rebuilt = [r for r in b if r not in a]
        if only_kept or only_rebuilt or len(a) != len(b):
            out[name] = {"only_kept": only_kept[:5], "only_rebuilt": only_rebuilt[:5], "rows": (len(a), len(b))}
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivatePostgres:
    """A PostgreSQL server of this test alone, in a temp folder, on a free port."""

    def __init__(self) -> None:
        initdb, self.pg_ctl = PG_BIN / "initdb", PG_BIN / "pg_ctl"
        if not initdb.exists():
            found = shutil.which("initdb")
            if found is None:
                pytest.fail(f"no initdb in {PG_BIN} nor on PATH: this test starts a private PostgreSQL "
                            "(apt-get install postgresql-15, or OMP_TEST_PG_BIN=the folder of initdb and pg_ctl)")
            initdb, self.pg_ctl = Path(found), Path(found).with_name("pg_ctl")
        self.as_root = os.geteuid() == 0
        if self.as_root and shutil.which("runuser") is None:
            pytest.fail("running as root, the private PostgreSQL needs runuser (util-linux) to run as postgres")
        self.home = Path(tempfile.mkdtemp(prefix="omp-watch-pg-"))  # not under pytest's 0700 temp folders
        if self.as_root:
            shutil.chown(self.home, "postgres", "postgres")
        self.data = self.home / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.running = False
        self.initdb = initdb

    def init(self) -> None:
        self._run(str(self.initdb), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def _run(self, *args: str) -> None:
        command = (["runuser", "-u", "postgres", "--"] if self.as_root else []) + list(args)
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
        if done.returncode:
            pytest.fail(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> None:
        self._run(str(self.pg_ctl), "-D", str(self.data), "-l", str(self.home / "log"), "-w", "-t", "120",
                  "-o", f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1", "start")
        self.running = True

    def stop(self) -> None:
        self._run(str(self.pg_ctl), "-D", str(self.data), "-m", "fast", "-w", "-t", "120", "stop")
        self.running = False

    def remove(self) -> None:
        if self.running:
            with suppress(BaseException):
                self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()
