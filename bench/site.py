"""Benchmark: ``export --site`` (omp_session.serve.site), first run and incremental runs.

    python bench/site.py                      # 2,000 small sessions (~0.1 GB), 5 incremental runs
    python bench/site.py --sessions 500 --runs 3 --json

The corpus is bench/search.py's (generated once, cached under $OMP_BENCH_CACHE or
/tmp/omp-bench-cache), copied to a temp folder because the runs append to it. With a private
$XDG_CACHE_HOME (the listing cache starts cold, as on a first run):

* the first run: every page rendered;
* a run with nothing changed;
* ``--runs`` times: one line appended to one session (a different one each time), then a run.

Prints the times (medians for the repeated runs) and the pages each run rendered; the issue's
acceptance: a second run with one changed session re-renders one page.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search import build_root


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--gb", type=float, default=0.1, help="total size of the corpus")
    ap.add_argument("--runs", type=int, default=5, help="incremental runs, one changed session each")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    source = build_root(args.sessions, args.gb, args.seed)
    with tempfile.TemporaryDirectory(prefix="omp-site-bench-") as tmp:
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        from omp_session.serve.site import build_site  # after XDG_CACHE_HOME: the cache dir is read then

        root = Path(tmp) / "sessions"
        shutil.copytree(source, root)
        files = sorted(root.rglob("*.jsonl"))
        site = Path(tmp) / "site"
        log(f"{len(files)} sessions, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB")

        t0 = time.perf_counter()
        first = build_site(site, root)
        first_s = time.perf_counter() - t0
        log(f"first run: {first_s:.2f} s, {first.written} pages")
        t0 = time.perf_counter()
        same = build_site(site, root)
        same_s = time.perf_counter() - t0
        log(f"nothing changed: {same_s:.2f} s, {same.written} pages")

        times: list[float] = []
        written: list[int] = []
        for n in range(args.runs):
            victim = files[(n * 7919) % len(files)]
            with open(victim, "a", encoding="utf-8") as f:
                f.write(json.dumps({"type": "custom", "customType": "bench", "id": f"bench{n:04d}",
                                    "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z"}) + "\n")
            t0 = time.perf_counter()
            report = build_site(site, root)
            times.append(time.perf_counter() - t0)
            written.append(report.written)
        site_bytes = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
        out: dict[str, Any] = {
            "sessions": first.sessions, "first_run_s": round(first_s, 3), "first_run_pages": first.written,
            "unchanged_run_s": round(same_s, 3), "unchanged_run_pages": same.written,
            "one_changed_run_s_median": round(statistics.median(times), 3), "one_changed_run_pages": written,
            "search_index": first.search_index, "search_bytes": same.search_bytes, "site_mb": round(site_bytes / 1e6, 1),
            "speedup_first_over_one_changed": round(first_s / statistics.median(times), 1),
        }
    if args.json:
        print(json.dumps(out))
        return
    print(f"export --site, {out['sessions']} sessions ({out['site_mb']} MB of site)")
    print(f"  first run                {out['first_run_s']:8.2f} s   {out['first_run_pages']} pages rendered")
    print(f"  nothing changed          {out['unchanged_run_s']:8.2f} s   {out['unchanged_run_pages']} pages rendered")
    print(f"  one session changed      {out['one_changed_run_s_median']:8.2f} s   pages rendered per run: "
          f"{out['one_changed_run_pages']} (median of {args.runs})")
    print(f"  first / one changed      {out['speedup_first_over_one_changed']:8.1f}x")
    print(f"  search index: {'yes' if out['search_index'] else 'no (over the cap)'}, "
          f"{out['search_bytes'] / 1e6:.1f} MB of text")


if __name__ == "__main__":
    main()
