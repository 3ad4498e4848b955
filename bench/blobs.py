"""Benchmark: the blob-reference scan behind ``blobs gc/verify/stats`` and the ``size`` analysis.

    python bench/blobs.py [--sessions 150] [--size 100M] [--runs 5] [--seed 7] [--json]

omp has no counterpart (it never collects blobs, has no size report), so the contenders are floors,
run round-robin in this process on a warm page cache:

* scan over a root of ``--sessions`` generated sessions (50 KB .. 3 MB each):
  ``scan``     ``blob_maint.scan_refs`` (what gc and stats run);
  ``read``     reading every file in 1 MiB chunks;
  ``count``    reading every file in 1 MiB chunks and ``bytes.count`` of the marker in each (the
               cheapest byte search; finds but does not extract);
  ``orjson``   ``orjson.loads`` of every line (what a JSON-parsing scan would at least cost);
* one ``--size`` session:
  ``size``     ``size_doctor.analyze_size(archive=False)``: the byte accounting plus the exact
               externalize and prune dry runs;
  ``orjson``   ``orjson.loads`` of every line.

Prints median seconds, MB/s and the ratios scan/read, scan/count, scan/orjson, size/orjson.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from omp_session.ops.blobs import iter_session_files, scan_refs
from omp_session.ops.size.doctor import analyze_size

GEN = Path(__file__).resolve().parent / "gen_large.py"
CHUNK = 1 << 20


def _read(files: list[str]) -> None:
    for f in files:
        with open(f, "rb") as h:
            while h.read(CHUNK):
                pass


def _count(files: list[str]) -> None:
    for f in files:
        with open(f, "rb") as h:
            while block := h.read(CHUNK):
                block.count(b"blob:sha256:")


def _orjson(files: list[str]) -> None:
    for f in files:
        with open(f, "rb") as h:
            for line in h:
                orjson.loads(line)


def _round_robin(contenders: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(runs):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=150)
    ap.add_argument("--size", default="100M")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        subprocess.run([sys.executable, str(GEN), "--many", str(args.sessions), "--min-size", "50K", "--max-size",
                        "3M", "--seed", str(args.seed), "--dir", str(root), "--blob-dir", str(Path(tmp) / "blobs")],
                       check=True, capture_output=True)
        (Path(tmp) / "blobs").mkdir(exist_ok=True)
        one = Path(tmp) / "one.jsonl"
        subprocess.run([sys.executable, str(GEN), "--size", args.size, "--seed", str(args.seed), "-o", str(one),
                        "--inline-image-share", "0.5"], check=True, capture_output=True)
        files = list(iter_session_files([root], registered=False))
        total = sum(os.path.getsize(f) for f in files)
        _read(files)
        scan = _round_robin({"scan": lambda: scan_refs([root], registered=False), "read": lambda: _read(files),
                             "count": lambda: _count(files), "orjson": lambda: _orjson(files)}, args.runs)
        size = _round_robin({"size": lambda: analyze_size(one, archive=False),
                             "orjson": lambda: _orjson([str(one)])}, args.runs)
        one_bytes = one.stat().st_size
    report = {
        "root": {"files": len(files), "bytes": total, "median_seconds": scan,
                 "scan_mb_s": total / scan["scan"] / 1e6,
                 "scan/read": scan["scan"] / scan["read"], "scan/count": scan["scan"] / scan["count"],
                 "scan/orjson": scan["scan"] / scan["orjson"]},
        "size": {"bytes": one_bytes, "median_seconds": size, "size/orjson": size["size"] / size["orjson"]},
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    r, s = report["root"], report["size"]
    print(f"scan of {r['files']} sessions, {total / 1e6:.0f} MB: scan {scan['scan'] * 1e3:.0f} ms "
          f"({r['scan_mb_s']:.0f} MB/s); read {scan['read'] * 1e3:.0f} ms, count {scan['count'] * 1e3:.0f} ms, "
          f"orjson {scan['orjson'] * 1e3:.0f} ms")
    print(f"  ratios: scan/read {r['scan/read']:.2f}x, scan/count {r['scan/count']:.2f}x, "
          f"scan/orjson {r['scan/orjson']:.2f}x")
    print(f"size of one {one_bytes / 1e6:.0f} MB session: {size['size'] * 1e3:.0f} ms; orjson every line "
          f"{size['orjson'] * 1e3:.0f} ms; size/orjson {s['size/orjson']:.2f}x")


if __name__ == "__main__":
    main()
