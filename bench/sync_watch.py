"""Benchmark: ``omp-session sync --watch`` — how soon a write is in the store, and what it costs idle.

    python bench/sync_watch.py [--sessions 200] [--appends 20] [--gap 0.3] [--idle 10] [--poll] [--no-index] [--json]

A folder of ``--sessions`` sessions (30 entries each) is uploaded to a fresh PostgreSQL table with
its search tables (``index --store`` first; not with ``--no-index``), then the watcher runs as the command does, in its own
process. Timed:

* ``visible``: from an append (one assistant entry, ~600 bytes, to one session; ``--appends`` of
  them, ``--gap`` seconds apart) until another connection sees the session's new size in omp's
  table (polled every 2 ms);
* ``searchable``: until the search tables have derived it too;
* ``idle CPU``: the watcher's user + system time over ``--idle`` seconds without writes, as a share
  of one core (from /proc; Linux only).

Server: ``$OMP_BENCH_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``); the
tables are fresh and dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

POSTGRES = os.environ.get("OMP_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "Here is what I found: " + "x" * 300}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "m",
             "usage": {"input": 100, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 150,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.001}},
             "stopReason": "stop", "timestamp": 2}


def _line(n: int, parent: str | None) -> bytes:
    record = {"type": "message", "id": f"e{n:06d}", "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
              "message": ASSISTANT}
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def _write_sessions(root: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = root / f"--p{i % 20}--" / f"2026-01-01T00-00-00-000Z_s{i:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"type": "session", "version": 3, "id": f"s{i:05d}", "timestamp": "2026-01-01T00:00:00.000Z",
                  "cwd": f"/w/p{i % 20}"}
        body = (json.dumps(header) + "\n").encode() + b"".join(_line(n, f"e{n - 1:06d}" if n else None)
                                                               for n in range(30))
        path.write_bytes(body)
        paths.append(path)
    return paths


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait(conn: psycopg.Connection[Any], sql: str, key: str, size: int, limit: float = 60.0) -> float:
    t0 = time.perf_counter()
    while True:
        try:
            row = conn.execute(sql, (key,)).fetchone()
        except psycopg.errors.UndefinedTable:  # the watcher has not made omp's table yet
            row = None
        if row is not None and row[0] == size:
            return time.perf_counter()
        if time.perf_counter() - t0 > limit:
            raise SystemExit(f"not in the store within {limit:g} s: {key}")
        time.sleep(0.002)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.3)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--poll", action="store_true", help="the watcher polls the folder (--poll)")
    parser.add_argument("--no-index", action="store_true", help="no search tables: the copy alone")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from omp_session.catalog.derived import refresh_url
    from omp_session.store.derived import derived_names

    scratch = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    root = scratch / "sessions"
    table = f"b_{uuid.uuid4().hex[:12]}"
    url = f"{POSTGRES}?table={table}&root={root}"
    env = {**os.environ, "XDG_CACHE_HOME": str(scratch / "cache"), "PI_CODING_AGENT_DIR": str(scratch / "agent")}
    names = derived_names(table)
    proc: subprocess.Popen[bytes] | None = None
    try:
        paths = _write_sessions(root, args.sessions)
        if not args.no_index:
            refresh_url(url, create=True)
        command = [sys.executable, "-m", "omp_session", "sync", "--watch", "--from", f"file:{root}", "--to", url,
                   "-q"] + (["--poll"] if args.poll else [])
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        visible: list[float] = []
        searchable: list[float] = []
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            size_sql = f"SELECT octet_length(content) FROM {table} WHERE path = %s"
            derived_sql = f"SELECT size FROM {names.sessions} WHERE key = %s"
            for path in paths:  # the first upload, then the search tables
                _wait(conn, size_sql, str(path), path.stat().st_size, limit=600)
            if not args.no_index:
                _wait(conn, derived_sql, str(paths[-1]), paths[-1].stat().st_size, limit=600)
            time.sleep(1.0)
            for n in range(args.appends):
                path = paths[(n * 7) % len(paths)]
                with open(path, "ab") as f:
                    t0 = time.perf_counter()
                    f.write(_line(1000 + n, None))
                size = path.stat().st_size
                visible.append(_wait(conn, size_sql, str(path), size) - t0)
                if not args.no_index:
                    searchable.append(_wait(conn, derived_sql, str(path), size) - t0)
                time.sleep(args.gap)
        time.sleep(1.0)
        before, t0 = _cpu_seconds(proc.pid), time.perf_counter()
        time.sleep(args.idle)
        idle = (_cpu_seconds(proc.pid) - before) / (time.perf_counter() - t0)
        result = {
            "sessions": args.sessions, "appends": args.appends, "poll": args.poll,
            "visible_ms": {"p50": round(statistics.median(visible) * 1000, 1),
                           "max": round(max(visible) * 1000, 1), "min": round(min(visible) * 1000, 1)},
            "searchable_ms": {"p50": round(statistics.median(searchable) * 1000, 1),
                              "max": round(max(searchable) * 1000, 1)} if searchable else None,
            "idle_cpu_percent": round(idle * 100, 3),
        }
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"{args.sessions} sessions, {args.appends} appends ({'polling' if args.poll else 'file events'}):")
            print(f"  in omp's table: p50 {result['visible_ms']['p50']} ms, min {result['visible_ms']['min']} ms, "
                  f"max {result['visible_ms']['max']} ms")
            if searchable:
                print(f"  in the search tables: p50 {round(statistics.median(searchable) * 1000, 1)} ms, "
                      f"max {round(max(searchable) * 1000, 1)} ms")
            print(f"  idle CPU over {args.idle:g} s: {result['idle_cpu_percent']} % of one core")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        with psycopg.connect(POSTGRES, autocommit=True) as conn:  # omp's table and all named after it
            for (name,) in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                        "current_schema() AND starts_with(table_name, %s) ORDER BY length(table_name) "
                                        "DESC", (table,)).fetchall():
                conn.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
