"""Benchmark: ``omp_session.validate`` on a large session against a chunked-read floor (issue 4).

    python bench/validate.py [--sizes 100M,1G] [--runs N] [--seed S] [--json]

Data comes from ``../shared/bench/gen_large.py`` and is cached like ``bench/open_context.py``
does (``$OMP_BENCH_CACHE``, default ``/tmp/omp-bench-cache/<size>-seed<S>/``). Each run is a fresh
process; contenders alternate so machine noise spreads over both. Prints, per size, the median
seconds of each contender, the median ratio validate/read and validate's peak RSS. Targets:
ratio <= 6, peak RSS <= 200 MB at 1 GB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_context import DATA_DIR, ensure_data, parse_size, warm

CHUNK = 1 << 20


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(kind: str, path: str, blobs: str) -> None:
    t0 = time.perf_counter()
    if kind == "validate":
        from omp_session.validate import validate

        found = len(validate(path, blobs_dir=blobs))
    else:
        found = 0
        with open(path, "rb") as f:
            while block := f.read(CHUNK):
                found += len(block)
    print(json.dumps({"seconds": time.perf_counter() - t0, "peak_rss": _peak_rss(), "found": found}))


def _run(kind: str, path: Path, blobs: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(path), str(blobs)],
                         check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100M,1G")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    rows = []
    for label in args.sizes.split(","):
        parse_size(label)  # rejects a malformed size early
        session, blobs, _, _ = ensure_data(label, args.seed, DATA_DIR)
        warm(session, blobs)
        runs: dict[str, list[dict[str, float]]] = {"read": [], "validate": []}
        for _ in range(args.runs):
            for kind in runs:
                runs[kind].append(_run(kind, session, blobs))
        ratios = [v["seconds"] / r["seconds"] for v, r in zip(runs["validate"], runs["read"], strict=True)]
        row = {
            "size": label,
            "bytes": session.stat().st_size,
            "read_s": statistics.median(r["seconds"] for r in runs["read"]),
            "validate_s": statistics.median(r["seconds"] for r in runs["validate"]),
            "ratio_median": statistics.median(ratios),
            "validate_peak_rss_mb": max(r["peak_rss"] for r in runs["validate"]) / 1e6,
            "diagnostics": runs["validate"][0]["found"],
        }
        rows.append(row)
        if not args.json:
            print(f"{label}: read {row['read_s']:.3f} s, validate {row['validate_s']:.3f} s, ratio "
                  f"{row['ratio_median']:.1f}x (target <= 6), peak RSS {row['validate_peak_rss_mb']:.0f} MB "
                  f"(target <= 200), {row['diagnostics']} diagnostics", flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
