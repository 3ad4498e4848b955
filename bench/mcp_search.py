"""Benchmark: a ``search_sessions`` call through ``omp-session mcp`` against ``search`` in-process.

    python bench/mcp_search.py                   # 2,000 small sessions (~0.1 GB), 15 runs
    python bench/mcp_search.py --sessions 500 --runs 9 --json

The corpus is bench/search.py's (``gen_large.py --many`` in 20 project buckets, generated once and
cached under $OMP_BENCH_CACHE or /tmp/omp-bench-cache); its index is built once, untimed, in a
temporary file both sides then use. For a rare, a medium and a common word (bench/search.py's
``pick_words``), round-robin ``--runs`` times:

* in-process: ``search(word, root=ROOT, sessions=True, limit=10)``: the index's stat pass and the
  query, as the tool does them;
* MCP: ``call_tool("search_sessions", {"query": word})`` through the SDK's client over stdio to one
  running server (started and initialised once, untimed): JSON-RPC both ways, argument checks, the
  same search, the root filter and the JSON answer.

Prints the medians and the ratio MCP / in-process per word (target <= 2x).

    python bench/mcp_search.py --store sqlite    # the same sessions in a store (or postgres)

``--store``: the sessions synced into an SQLite file (or a fresh table of the PostgreSQL at
$OMP_TEST_POSTGRES_URL, dropped afterwards) and its search tables made (``sync``, ``index
--store``; untimed), then ``search --store`` in-process (``search_store``: it connects, searches
the derived tables and closes, as the command does) against ``omp-session mcp --store URL``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp import ClientSession, StdioServerParameters, stdio_client
from search import build_root, pick_words

from omp_session.ops.search.query import search


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _files_search(root: Path, index: Path) -> Callable[[str], int]:
    return lambda word: len(search(word, root=root, index_path=index, sessions=True, limit=10).hits)


def _store_search(url: str) -> Callable[[str], int]:
    from omp_session.cli._store_search import search_store

    return lambda word: len(search_store(url, word, role=None, cwd=None, since_ms=None, until_ms=None,
                                         thinking=False, limit=10, sessions=True, timeout=None))


async def measure(server: list[str], inproc_search: Callable[[str], int], words: dict[str, tuple[str, int]],
                  runs: int) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "omp_session", "mcp", *server],
                                   env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    times: dict[str, dict[str, list[float]]] = {label: {"mcp": [], "inproc": []} for label in words}
    found: dict[str, int] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for word, _docs in words.values():  # one untimed call each: warm both sides alike
            await session.call_tool("search_sessions", {"query": word})
            inproc_search(word)
        for run in range(runs):
            for label, (word, _docs) in words.items():
                # each side first every other run: the second finds what the first read in the
                # page cache (a rare word right after a common one is slower for whichever goes first)
                if run % 2:
                    t0 = time.perf_counter()
                    hits = inproc_search(word)
                    times[label]["inproc"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                result = await session.call_tool("search_sessions", {"query": word})
                times[label]["mcp"].append(time.perf_counter() - t0)
                assert not result.is_error, result.content
                if not run % 2:
                    t0 = time.perf_counter()
                    hits = inproc_search(word)
                    times[label]["inproc"].append(time.perf_counter() - t0)
                assert hits == len((result.structured_content or {})["hits"])
                found[label] = hits
    out: dict[str, Any] = {}
    for label, (word, docs) in words.items():
        mcp, inproc = statistics.median(times[label]["mcp"]), statistics.median(times[label]["inproc"])
        out[label] = {"word": word, "docs": docs, "hits": found[label], "mcp_ms": mcp * 1000,
                      "inproc_ms": inproc * 1000, "ratio": mcp / inproc}
    return out


@contextmanager
def store_of(root: Path, kind: str) -> Iterator[str]:
    """The sessions of ``root`` synced into a store, its search tables made; its URL."""
    from omp_session.catalog.derived import refresh_url
    from omp_session.ops.sync import sync_urls

    # SQLite: kept beside the corpus (the next run syncs and derives nothing); PostgreSQL: a
    # fresh table, dropped afterwards
    table = "omp_session_files" if kind == "sqlite" else f"bench_mcp_{uuid.uuid4().hex[:12]}"
    base = f"sqlite:{root.parent / 'mcp-store.sqlite'}" if kind == "sqlite" else \
        os.environ.get("OMP_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    url = f"{base}?table={table}&root={root}/"
    try:
        t0 = time.perf_counter()
        report = sync_urls(f"file:{root}", url, use_state=False)
        log(f"synced into {kind} ({report.count('copied')} copied) in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        refresh_url(url)
        log(f"search tables made in {time.perf_counter() - t0:.1f} s")
        yield url
    finally:
        if kind == "postgres":
            import psycopg

            with psycopg.connect(base, autocommit=True) as conn:  # omp's table and every derived one
                for (name,) in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE %s",
                                            (table + "%",)).fetchall():
                    conn.execute(f"DROP TABLE IF EXISTS {name} CASCADE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--total-gb", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--store", choices=("sqlite", "postgres"), help="search the sessions in this store instead")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = build_root(args.sessions, args.total_gb, args.seed)
    with tempfile.TemporaryDirectory(prefix="omp-mcp-bench-") as tmp:
        index = Path(tmp) / "search.sqlite"
        t0 = time.perf_counter()
        search("warmup", root=root, index_path=index, limit=1)
        log(f"index of {args.sessions} sessions built in {time.perf_counter() - t0:.1f} s")
        words = pick_words(index)
        if args.store is None:
            results = anyio.run(measure, ["--root", str(root), "--index", str(index)], _files_search(root, index),
                                words, args.runs)
        else:
            with store_of(root, args.store) as url:
                results = anyio.run(measure, ["--store", url], _store_search(url), words, args.runs)
    if args.json:
        print(json.dumps({"sessions": args.sessions, "runs": args.runs, "store": args.store, "words": results},
                         indent=1))
        return
    print(f"search_sessions over {args.sessions} sessions{f' in {args.store}' if args.store else ''}, median of "
          f"{args.runs} (target: MCP <= 2x in-process)")
    print(f"{'word':<8} {'term':<26} {'docs':>6} {'hits':>5} {'in-process':>11} {'MCP call':>10} {'ratio':>6}")
    for label, r in results.items():
        print(f"{label:<8} {r['word']:<26} {r['docs']:>6} {r['hits']:>5} {r['inproc_ms']:>9.2f}ms {r['mcp_ms']:>8.2f}ms "
              f"{r['ratio']:>5.2f}x")


if __name__ == "__main__":
    main()
