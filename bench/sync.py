"""Benchmark: omp-session sync between stores — a first copy, an incremental run, an idempotent run.

    python bench/sync.py [--sessions 200] [--entries 30] [--grow 20] [--runs 3] [--pairs file:postgres,...] [--json]

For each (source, target) pair, every run starts from fresh stores: ``--sessions`` sessions of
``--entries`` messages each are written into the source (untimed), then timed:

* ``first``: sync into the empty target (every session copied whole);
* ``incremental``: ``--grow`` sessions get one more message in the source, then sync (only the
  appended bytes move);
* ``idempotent``: sync again (nothing moves; nothing is read but the two listings).

Floors, measured in the same run on the same stores: ``copy floor`` reads every source body through
the storage and writes it to a fresh target table/directory with the storage's plain writes (no
comparison, no record), ``list floor`` is the two ``scan()`` listings alone. Ratios are sync / floor.

Servers: ``$OMP_BENCH_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``),
``$OMP_BENCH_MYSQL_URL`` (``mysql://root@127.0.0.1:3306/test``), ``$OMP_BENCH_REDIS_URL``
(``redis://127.0.0.1:6379/0``). Tables and key prefixes are fresh and removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

SERVERS = {
    "postgres": os.environ.get("OMP_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    "mysql": os.environ.get("OMP_BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
    "redis": os.environ.get("OMP_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
}
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "Here is what I found: " + "x" * 300}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "m",
             "usage": {"input": 100, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 150,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.001}},
             "stopReason": "stop", "timestamp": 2}


class Stores:
    """Fresh stores of a kind, each with its own table / prefix / directory; all removed by close()."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.made: list[tuple[str, str]] = []

    def new(self, kind: str) -> str:
        tag = f"b_{uuid.uuid4().hex[:12]}"
        if kind == "file":
            d = self.scratch / tag
            d.mkdir()
            return f"file:{d}?root={d}"
        self.made.append((kind, tag))
        if kind == "sqlite":
            return f"sqlite:{self.scratch / (tag + '.db')}?table={tag}"
        if kind == "redis":
            return f"{SERVERS['redis']}?prefix={tag}:"
        return f"{SERVERS[kind]}?table={tag}"

    def close(self) -> None:
        for kind, tag in self.made:
            if kind == "postgres":
                import psycopg

                with psycopg.connect(SERVERS["postgres"], autocommit=True) as conn:
                    conn.execute(f"DROP TABLE IF EXISTS {tag}")
            elif kind == "mysql":
                from omp_session.store import open_store

                store: Any = open_store(f"{SERVERS['mysql']}?table={tag}")
                cur = store._conn.cursor()
                cur.execute(f"DROP TABLE IF EXISTS {tag}")
                store.close()
            elif kind == "redis":
                import redis

                client = redis.Redis.from_url(SERVERS["redis"])
                keys = list(client.scan_iter(match=f"{tag}:*", count=1000))
                if keys:
                    client.delete(*keys)
                client.close()


def fill(url: str, root: str, sessions: int, entries: int, cwd: str) -> list[str]:
    from omp_session.format.blobs import MemoryBlobStore
    from omp_session.write.manager import SessionManager

    paths = []
    for i in range(sessions):
        sm = SessionManager.create(cwd, f"{root}/--bench-{i % 10}--", storage=url, blob_store=MemoryBlobStore())
        for k in range(entries // 2):
            sm.append_message({"role": "user", "content": f"question {i}.{k} " + "y" * 200, "timestamp": 1})
            sm.append_message(dict(ASSISTANT))
        path = sm.get_session_file()
        assert path is not None
        paths.append(path)
        sm.close()
    return paths


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def one_run(pair: tuple[str, str], stores: Stores, args: argparse.Namespace) -> dict[str, float]:
    from omp_session.format.blobs import MemoryBlobStore
    from omp_session.ops.sync import sync_urls
    from omp_session.store import open_store, parse_store_url
    from omp_session.write.manager import SessionManager

    src, dst = stores.new(pair[0]), stores.new(pair[1])
    root = parse_store_url(src).root.rstrip("/")
    paths = fill(src, root, args.sessions, args.entries, str(stores.scratch))
    first, report = timed(lambda: sync_urls(src, dst, use_state=True))
    assert report.count("copied") == args.sessions, report.to_json()["counts"]
    moved_first = report.bytes_moved
    for path in paths[: args.grow]:
        sm = SessionManager.open(path, storage=src, blob_store=MemoryBlobStore())
        sm.append_message({"role": "user", "content": "one more", "timestamp": 3})
        sm.close()
    incremental, report = timed(lambda: sync_urls(src, dst))
    assert report.count("appended") == args.grow
    moved_incremental = report.bytes_moved
    idempotent, report = timed(lambda: sync_urls(src, dst))
    assert report.bytes_moved == 0 and report.count("unchanged") == args.sessions

    # floors on the same stores
    floor_dst = stores.new(pair[1])

    def copy_floor() -> None:
        a, b = open_store(src, create=False), open_store(floor_dst)
        b_root = parse_store_url(floor_dst).root
        for f in a.scan(parse_store_url(src).root):
            b.replace(b_root + f.path[len(parse_store_url(src).root):], a.read(f.path), None)
        a.close()
        b.close()

    def list_floor() -> None:
        a, b = open_store(src, create=False), open_store(dst, create=False)
        a.scan(parse_store_url(src).root)
        b.scan(parse_store_url(dst).root)
        a.close()
        b.close()

    copy, _ = timed(copy_floor)
    listing, _ = timed(list_floor)
    return {"first": first, "incremental": incremental, "idempotent": idempotent, "copy_floor": copy,
            "list_floor": listing, "bytes_first": moved_first, "bytes_incremental": moved_incremental}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--entries", type=int, default=30)
    ap.add_argument("--grow", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pairs", default="file:sqlite,file:postgres,postgres:mysql,file:redis")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-sync-"))
    os.environ["XDG_CACHE_HOME"] = str(scratch / "cache")  # the sync records of this run only
    os.environ["PI_CODING_AGENT_DIR"] = str(scratch / "agent")
    stores = Stores(scratch)
    results: dict[str, list[dict[str, float]]] = {}
    try:
        for run in range(args.runs):
            for pair in pairs[run % len(pairs):] + pairs[: run % len(pairs)]:  # rotate the order
                name = f"{pair[0]} -> {pair[1]}"
                print(f"run {run + 1}/{args.runs}: {name}", file=sys.stderr)
                results.setdefault(name, []).append(one_run(pair, stores, args))  # type: ignore[arg-type]
    finally:
        stores.close()
        shutil.rmtree(scratch, ignore_errors=True)
    report = {}
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        med["first_vs_copy_floor"] = med["first"] / med["copy_floor"]
        med["idempotent_vs_list_floor"] = med["idempotent"] / med["list_floor"]
        med["incremental_vs_first"] = med["incremental"] / med["first"]
        report[name] = med
    if args.json:
        print(json.dumps({"sessions": args.sessions, "entries": args.entries, "grow": args.grow,
                          "runs": args.runs, "pairs": report}, indent=2))
        return 0
    print(f"{args.sessions} sessions x {args.entries} entries, {args.grow} grown; medians of {args.runs} runs")
    print(f"{'pair':20} {'first s':>8} {'/copy':>6} {'incr s':>8} {'/first':>7} {'idem s':>8} {'/list':>6} "
          f"{'MB first':>9} {'KB incr':>8}")
    for name, m in report.items():
        print(f"{name:20} {m['first']:8.3f} {m['first_vs_copy_floor']:6.2f} {m['incremental']:8.3f} "
              f"{m['incremental_vs_first']:7.3f} {m['idempotent']:8.3f} {m['idempotent_vs_list_floor']:6.2f} "
              f"{m['bytes_first'] / 1e6:9.2f} {m['bytes_incremental'] / 1e3:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
