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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mcp import ClientSession, StdioServerParameters, stdio_client
from search import build_root, pick_words

from omp_session.ops.search.query import search


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


async def measure(root: Path, index: Path, words: dict[str, tuple[str, int]], runs: int) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "omp_session", "mcp", "--root", str(root), "--index", str(index)],
                                   env={"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    times: dict[str, dict[str, list[float]]] = {label: {"mcp": [], "inproc": []} for label in words}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for word, _docs in words.values():  # one untimed call each: warm both sides alike
            await session.call_tool("search_sessions", {"query": word})
            search(word, root=root, index_path=index, sessions=True, limit=10)
        for _ in range(runs):
            for label, (word, _docs) in words.items():
                t0 = time.perf_counter()
                result = await session.call_tool("search_sessions", {"query": word})
                times[label]["mcp"].append(time.perf_counter() - t0)
                assert not result.is_error, result.content
                t0 = time.perf_counter()
                hits = search(word, root=root, index_path=index, sessions=True, limit=10).hits
                times[label]["inproc"].append(time.perf_counter() - t0)
                assert len(hits) == len((result.structured_content or {})["hits"])
    out: dict[str, Any] = {}
    for label, (word, docs) in words.items():
        mcp, inproc = statistics.median(times[label]["mcp"]), statistics.median(times[label]["inproc"])
        out[label] = {"word": word, "docs": docs, "mcp_ms": mcp * 1000, "inproc_ms": inproc * 1000,
                      "ratio": mcp / inproc}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--total-gb", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = build_root(args.sessions, args.total_gb, args.seed)
    with tempfile.TemporaryDirectory(prefix="omp-mcp-bench-") as tmp:
        index = Path(tmp) / "search.sqlite"
        t0 = time.perf_counter()
        search("warmup", root=root, index_path=index, limit=1)
        log(f"index of {args.sessions} sessions built in {time.perf_counter() - t0:.1f} s")
        words = pick_words(index)
        results = anyio.run(measure, root, index, words, args.runs)
    if args.json:
        print(json.dumps({"sessions": args.sessions, "runs": args.runs, "words": results}, indent=1))
        return
    print(f"search_sessions over {args.sessions} sessions, median of {args.runs} (target: MCP <= 2x in-process)")
    print(f"{'word':<8} {'term':<26} {'docs':>6} {'in-process':>11} {'MCP call':>10} {'ratio':>6}")
    for label, r in results.items():
        print(f"{label:<8} {r['word']:<26} {r['docs']:>6} {r['inproc_ms']:>9.2f}ms {r['mcp_ms']:>8.2f}ms "
              f"{r['ratio']:>5.2f}x")


if __name__ == "__main__":
    main()
