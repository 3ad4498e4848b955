"""Benchmark: ``omp-session serve`` against the same work done in-process by the command line.

    python bench/serve.py                     # 2,000 small sessions (~0.1 GB), 15 runs
    python bench/serve.py --sessions 500 --runs 9 --json

The corpus is bench/search.py's (generated once, cached under $OMP_BENCH_CACHE or
/tmp/omp-bench-cache). The server runs as its own process (``omp-session serve --port 0``, as a
user starts it) with a private $XDG_CACHE_HOME that the in-process side shares, so both use the
same listing cache and search index; everything is warmed once, untimed. Side by side,
round-robin ``--runs`` times:

* the sessions page: time to the first byte of ``GET /`` (one page of 100 rows, the listing
  refreshed: a directory scan and a stat per file) against ``list --all --json`` run in-process
  through click (its warm output cache: a stat per file, the stored output printed);
* a search: ``GET /api/search?q=WORD`` to the last byte against ``search(WORD, root=ROOT)``
  in-process (both bring the index up to date first: a stat per file), for a rare, a medium and
  a common word (bench/search.py's ``pick_words``).

Prints medians and the ratios serve / in-process (the issue's targets: <= 2x each).
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout, suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search import build_root, pick_words

from omp_session.ops.search.index import default_index_path
from omp_session.ops.search.query import search


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Server:
    """``omp-session serve`` in its own process; requests carry the token as a bearer header."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "omp_session", "serve", "--root", str(root)],
                                     stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        t0 = time.perf_counter()
        while True:
            text = self.proc.stdout.readline()
            if text.startswith("http://"):
                break
            if not text:
                raise SystemExit("the server did not start")
        self.started_s = time.perf_counter() - t0
        url = text.strip()
        self.port = int(url.split(":")[2].split("/")[0])
        self.token = url.split("token=")[1]

    def request(self, path: str) -> tuple[float, float, bytes]:
        """(seconds to the first byte, seconds to the last, body)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            t0 = time.perf_counter()
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            reply = conn.getresponse()
            first = time.perf_counter() - t0
            body = reply.read()
            last = time.perf_counter() - t0
            assert reply.status == 200, (path, reply.status, body[:200])
            return first, last, body
        finally:
            conn.close()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def list_in_process(root: Path) -> float:
    from omp_session.cli import cli

    out = io.StringIO()
    t0 = time.perf_counter()
    with redirect_stdout(out), suppress(SystemExit):
        cli.main(["list", "--all", "--json", "--root", str(root)], standalone_mode=False)
    took = time.perf_counter() - t0
    assert out.getvalue().startswith("["), out.getvalue()[:200]
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--total-gb", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = build_root(args.sessions, args.total_gb, args.seed)
    with tempfile.TemporaryDirectory(prefix="omp-serve-bench-") as cache:
        os.environ["XDG_CACHE_HOME"] = cache  # one cache (listing, search index) for both sides
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        t0 = time.perf_counter()
        search("warmup", root=root, limit=1)
        log(f"index of {args.sessions} sessions built in {time.perf_counter() - t0:.1f} s")
        words = pick_words(default_index_path())
        server = Server(root, env)
        try:
            # warm both sides: the listing cache, the output cache, the server's listing
            list_in_process(root)
            list_in_process(root)
            server.request("/")
            for word, _docs in words.values():
                server.request(f"/api/search?q={word}")
                search(word, root=root)
            page: dict[str, list[float]] = {"serve": [], "list": []}
            found: dict[str, dict[str, list[float]]] = {label: {"serve": [], "inproc": []} for label in words}
            for _ in range(args.runs):
                page["serve"].append(server.request("/")[0])
                page["list"].append(list_in_process(root))
                for label, (word, _docs) in words.items():
                    _first, last, body = server.request(f"/api/search?q={word}")
                    found[label]["serve"].append(last)
                    t0 = time.perf_counter()
                    hits = search(word, root=root).hits
                    found[label]["inproc"].append(time.perf_counter() - t0)
                    assert len(json.loads(body)) == len(hits)
        finally:
            server.stop()
    med = {k: statistics.median(v) for k, v in page.items()}
    result: dict[str, Any] = {
        "sessions": args.sessions, "runs": args.runs, "server_start_s": server.started_s,
        "sessions_page": {"serve_first_byte_ms": med["serve"] * 1000, "list_json_ms": med["list"] * 1000,
                          "ratio": med["serve"] / med["list"]},
        "search": {},
    }
    for label, (word, docs) in words.items():
        s, i = statistics.median(found[label]["serve"]), statistics.median(found[label]["inproc"])
        result["search"][label] = {"word": word, "docs": docs, "serve_ms": s * 1000, "inproc_ms": i * 1000,
                                   "ratio": s / i}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"omp-session serve over {args.sessions} sessions, median of {args.runs} (targets: <= 2x)")
    print(f"server ready (URL printed) {result['server_start_s'] * 1000:.0f} ms after start")
    p = result["sessions_page"]
    print(f"sessions page: first byte of / {p['serve_first_byte_ms']:.1f} ms, list --all --json in-process "
          f"{p['list_json_ms']:.1f} ms: {p['ratio']:.2f}x")
    print(f"{'search':<8} {'term':<26} {'docs':>6} {'in-process':>11} {'serve':>10} {'ratio':>6}")
    for label, r in result["search"].items():
        print(f"{label:<8} {r['word']:<26} {r['docs']:>6} {r['inproc_ms']:>9.2f}ms {r['serve_ms']:>8.2f}ms "
              f"{r['ratio']:>5.2f}x")


if __name__ == "__main__":
    main()
