"""Benchmark: the session stores side by side — appends per second, open + context time.

    python bench/stores.py [--appends 300] [--size 10M] [--runs 5] [--backends file,sqlite,...] [--json]

Every backend does the same work in this one process, round-robin (the order rotates every
round), and the table prints medians and ratios against the file store:

* ``append``: a session is created on the backend (header, a user and an assistant message),
  then ``--appends`` more ``append_message`` calls are timed: appends per second, and the median
  latency of one append;
* ``open+context``: a ``gen_large.py`` session of ``--size`` is stored in the backend (untimed),
  then ``SessionManager.open`` + ``build_session_context()`` are timed;
* ``read``: the floor of that: one ``storage.read`` of the stored body (for files, ``f.read()``).

Backends and where they live (the servers of tests/stores/sqlutil.py; override by env):
``file`` a temp directory; ``sqlite`` a temp database; ``postgresql`` ``$OMP_BENCH_POSTGRES_URL``
(default ``postgresql://postgres@127.0.0.1:5432/test``); ``mysql`` ``$OMP_BENCH_MYSQL_URL``
(``mysql://root@127.0.0.1:3306/test``); ``redis`` ``$OMP_BENCH_REDIS_URL``
(``redis://127.0.0.1:6379/0``). SQL backends get a fresh table, dropped at the end; Redis a fresh
key prefix, deleted at the end. A backend whose server does not answer is skipped with one line
saying why; nothing else stops the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from open_context import DATA_DIR, ensure_data, log, parse_size, warm  # noqa: E402

BACKENDS = ("file", "sqlite", "postgresql", "mysql", "redis")
SERVER_URLS = {
    "postgresql": os.environ.get("OMP_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    "mysql": os.environ.get("OMP_BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
    "redis": os.environ.get("OMP_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
}
USER = {"role": "user", "content": "one more question about the code " * 4, "timestamp": 1767225600000}
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "an answer " * 40}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "claude-bench", "stopReason": "stop",
             "timestamp": 1767225601000,
             "usage": {"input": 1000, "output": 200, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1200,
                       "cost": {"input": 0.003, "output": 0.003, "cacheRead": 0, "cacheWrite": 0, "total": 0.006}}}


class Backend:
    """One store: its storage object, how to name it, how to clean up after it."""

    def __init__(self, name: str, storage: Any, where: str, cleanup: Callable[[], None]) -> None:
        self.name, self.storage, self.where, self.cleanup = name, storage, where, cleanup
        self.opened = ""  # the key of the stored --size session


def connect(name: str, scratch: Path) -> Backend:
    """The backend, connected; raises (StoreError, ImportError, OSError) when it cannot be used."""
    from omp_session.store.base import FileStorage

    if name == "file":
        return Backend(name, FileStorage(), f"files under {scratch}", lambda: None)
    if name == "redis":
        from omp_session.store.redis import RedisStorage

        prefix = f"omp-bench:{secrets.token_hex(6)}:"
        storage = RedisStorage(SERVER_URLS["redis"], prefix=prefix)

        def drop_keys() -> None:
            client = storage._client  # the bench owns this storage: reach its client to sweep keys
            keys = list(client.scan_iter(match=prefix.encode() + b"*", count=500))
            if keys:
                client.delete(*keys)
            storage.close()

        return Backend(name, storage, f"{SERVER_URLS['redis']} prefix {prefix}", drop_keys)

    from omp_session.store import open_store

    table = f"omp_bench_{uuid.uuid4().hex[:12]}"
    if name == "sqlite":
        url = f"sqlite:{scratch / 'bench.db'}?table={table}"
        return Backend(name, open_store(url), url, lambda: None)
    base = SERVER_URLS[name]
    url = f"{base}{'&' if '?' in base else '?'}table={table}"
    storage = open_store(url)

    def drop_table() -> None:
        with contextlib.suppress(Exception):
            storage.close()
        _drop_sql_table(name, base, table)

    return Backend(name, storage, url, drop_table)


def _drop_sql_table(name: str, url: str, table: str) -> None:
    from urllib.parse import unquote, urlsplit

    try:
        if name == "postgresql":
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        else:
            import pymysql

            parts = urlsplit(url)
            conn = pymysql.connect(host=parts.hostname or "localhost", port=parts.port or 3306,
                                   user=unquote(parts.username or "root"), password=unquote(parts.password or ""),
                                   database=unquote(parts.path.lstrip("/")), autocommit=True)
            try:
                with conn.cursor() as cur:
                    cur.execute(f"DROP TABLE IF EXISTS {table}")
            finally:
                conn.close()
    except Exception as e:  # cleanup must not hide the figures
        log(f"[{name}] could not drop table {table}: {e}")


# ----- the timed work ---------------------------------------------------------------------------


def run_appends(backend: Backend, cwd: Path, directory: Path, count: int) -> dict[str, float]:
    from omp_session.write.manager import SessionManager

    sm = SessionManager.create(str(cwd), str(directory), storage=backend.storage)
    sm.append_message(dict(USER))
    sm.append_message(dict(ASSISTANT))  # the session is written from here on
    lat = []
    t0 = time.perf_counter()
    for i in range(count):
        a0 = time.perf_counter()
        sm.append_message(dict(ASSISTANT if i % 2 else USER))
        lat.append(time.perf_counter() - a0)
    seconds = time.perf_counter() - t0
    sm.close()
    path = sm.get_session_file()
    entries = len(sm.get_entries())
    if path is not None:
        backend.storage.delete(path)
    return {"seconds": seconds, "appends_per_s": count / seconds, "append_ms": statistics.median(lat) * 1000,
            "entries": entries}


def run_open(backend: Backend, path: str, blob_root: Path) -> dict[str, float]:
    from omp_session.format.blobs import BlobStore
    from omp_session.write.manager import SessionManager

    t0 = time.perf_counter()
    sm = SessionManager.open(path, storage=backend.storage, blob_store=BlobStore(blob_root), initial_cwd=os.getcwd())
    context = sm.build_session_context()
    seconds = time.perf_counter() - t0
    messages = len(context.get("messages", []))
    sm.close()
    r0 = time.perf_counter()
    if backend.name == "file":
        with open(path, "rb") as f:
            size = len(f.read())
    else:
        size = len(backend.storage.read(path))
    return {"seconds": seconds, "read_seconds": time.perf_counter() - r0, "messages": messages, "bytes": size}


# ----- report -----------------------------------------------------------------------------------


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def summarize(results: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, kinds in results.items():
        row: dict[str, Any] = {}
        if kinds["append"]:
            row["appends_per_s"] = median(kinds["append"], "appends_per_s")
            row["append_ms"] = median(kinds["append"], "append_ms")
        if kinds["open"]:
            row["open_context_s"] = median(kinds["open"], "seconds")
            row["read_s"] = median(kinds["open"], "read_seconds")
            row["messages"] = kinds["open"][0]["messages"]
        out[name] = row
    base = out.get("file", {})
    for row in out.values():
        if "appends_per_s" in row and base.get("appends_per_s"):
            row["appends_vs_file"] = row["appends_per_s"] / base["appends_per_s"]
        if "open_context_s" in row and base.get("open_context_s"):
            row["open_vs_file"] = row["open_context_s"] / base["open_context_s"]
            row["read_vs_file"] = row["read_s"] / base["read_s"]
    return out


def print_table(report: dict[str, Any]) -> None:
    print(f"stores: {report['appends']} appends per run; open+context of a {report['size_label']} session "
          f"({report['bytes'] / 1e6:.1f} MB); medians of {report['runs']} runs, round-robin")
    for name, why in report["skipped"].items():
        print(f"skipped {name}: {why}")
    head = f"{'backend':<11}{'appends/s':>11}{'vs file':>9}{'append ms':>11}{'open+ctx s':>12}{'vs file':>9}" \
           f"{'read s':>9}{'vs file':>9}"
    print(head)
    print("-" * len(head))

    def num(row: dict[str, Any], key: str, fmt: str) -> str:
        return format(row[key], fmt) if key in row else "-"

    for name, row in report["summary"].items():
        print(f"{name:<11}{num(row, 'appends_per_s', '11.0f')}{num(row, 'appends_vs_file', '8.2f')}x"
              f"{num(row, 'append_ms', '11.3f')}{num(row, 'open_context_s', '12.3f')}"
              f"{num(row, 'open_vs_file', '8.2f')}x{num(row, 'read_s', '9.4f')}{num(row, 'read_vs_file', '8.2f')}x")
    messages = {row.get("messages") for row in report["summary"].values() if "messages" in row}
    if len(messages) > 1:
        print(f"WARNING: the backends built contexts of different lengths: {sorted(messages)}")
    print("vs file: appends/s over the file store's (higher is faster); times over the file store's "
          "(lower is faster)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--appends", type=int, default=300, help="timed appends per run (default 300)")
    ap.add_argument("--size", default="10M", help="size of the opened session, K/M/G (default 10M)")
    ap.add_argument("--runs", type=int, default=5, help="runs per backend (default 5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backends", default=",".join(BACKENDS), help=f"subset of {','.join(BACKENDS)}")
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = ap.parse_args(argv)
    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in wanted if b not in BACKENDS]
    if unknown:
        ap.error(f"unknown backend(s): {', '.join(unknown)}")

    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-stores-"))
    os.environ["PI_CODING_AGENT_DIR"] = str(scratch / "agent")  # never the real ~/.omp
    os.environ.pop("PI_CODING_AGENT_SESSION_DIR", None)
    cwd = scratch / "project"
    cwd.mkdir()
    parse_size(args.size)
    source, blobs, _, created = ensure_data(args.size, args.seed, args.data_dir)
    body = source.read_bytes()
    warm(source, blobs)

    backends: list[Backend] = []
    skipped: dict[str, str] = {}
    report: dict[str, Any] = {}
    try:
        for name in wanted:
            try:
                backend = connect(name, scratch)
                backend.opened = str(scratch / "sessions" / name / "opened.jsonl")
                backend.storage.replace(backend.opened, body, None)
            except Exception as e:  # a server that does not answer: say so, go on
                skipped[name] = str(e).splitlines()[0] if str(e) else type(e).__name__
                print(f"skipped {name}: {skipped[name]}", file=sys.stderr)
                continue
            backends.append(backend)
            log(f"[{name}] {backend.where}")

        results: dict[str, dict[str, list[dict[str, float]]]] = {b.name: {"append": [], "open": []} for b in backends}
        for i in range(args.runs):
            turn = backends[i % len(backends):] + backends[: i % len(backends)] if backends else []
            for backend in turn:
                try:
                    a = run_appends(backend, cwd, scratch / "sessions" / backend.name, args.appends)
                    o = run_open(backend, backend.opened, blobs)
                except Exception as e:
                    log(f"[{backend.name}] run {i + 1} failed: {e}")
                    skipped.setdefault(backend.name, f"failed during run {i + 1}: {e}")
                    continue
                results[backend.name]["append"].append(a)
                results[backend.name]["open"].append(o)
                log(f"[{backend.name}] run {i + 1}/{args.runs}: {a['appends_per_s']:.0f} appends/s, "
                    f"open+context {o['seconds']:.3f} s")
        report = {"appends": args.appends, "size_label": args.size, "bytes": len(body), "runs": args.runs,
                  "skipped": skipped, "summary": summarize(results), "runs_detail": results}
    finally:
        for backend in backends:
            try:
                backend.storage.delete(backend.opened)
                backend.cleanup()
            except Exception as e:
                log(f"[{backend.name}] cleanup failed: {e}")
        shutil.rmtree(scratch, ignore_errors=True)
        if created:
            shutil.rmtree(source.parent, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
