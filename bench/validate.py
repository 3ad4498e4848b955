"""Benchmark: ``omp_session.ops.validate.check`` on a large session, side by side with the floors (issue 4).

    python bench/validate.py [--sizes 100M,1G] [--runs N] [--seed S] [--no-omp] [--json]

Contenders, each a fresh isolated process, run round-robin so machine noise spreads over all:

* ``read``     reading the file in 1 MiB chunks (the issue's floor);
* ``orjson``   ``orjson.loads`` of every line (the cheapest full JSON check of every record);
* ``omp``      omp 18.2.3 opening the file and building its context under Bun (omp has no
               validator; its open is what a user runs today to find out whether a file loads);
* ``validate`` ``omp_session.ops.validate.check`` with blob references checked against the store.

Data comes from ``bench/gen_large.py`` and is cached like ``bench/open_context.py``
does. Prints, per size, median seconds and the median ratios validate/read, validate/orjson and
validate/omp, and validate's peak RSS. Targets from the issue: validate/read <= 6, peak RSS <= 200
MB at 1 GB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

from open_context import BUN, DATA_DIR, HERE, MB, ensure_data, parse_size, round_robin, run_child, warm

CHUNK = 1 << 20


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(kind: str, path: str, blobs: str) -> None:
    t0 = time.perf_counter()
    if kind == "validate":
        from omp_session.ops.validate.check import validate

        found = len(validate(path, blobs_dir=blobs))
    elif kind == "orjson":
        import orjson

        found = 0
        with open(path, "rb") as f:
            for line in f:
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
                found += 1
    else:
        found = 0
        with open(path, "rb") as f:
            while block := f.read(CHUNK):
                found += len(block)
    print(json.dumps({"seconds": time.perf_counter() - t0, "peak_rss": _peak_rss(), "found": found}))


def _ratios(runs: dict[str, list[dict[str, float]]], other: str) -> float | None:
    if other not in runs:
        return None
    return statistics.median(v["seconds"] / o["seconds"] for v, o in zip(runs["validate"], runs[other], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100M,1G")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-omp", action="store_true", help="leave omp out (no Bun needed)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    kinds = ["read", "orjson", "validate"] + ([] if args.no_omp or not BUN.exists() else ["omp"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="omp-bench-validate-") as scratch:
        for label in args.sizes.split(","):
            parse_size(label)  # rejects a malformed size early
            session, blobs, _, _ = ensure_data(label, args.seed, DATA_DIR)
            warm(session, blobs)

            def one(kind: str, session: Path = session, blobs: Path = blobs) -> dict[str, float]:
                if kind == "omp":
                    cmd = [str(BUN), "--no-install", str(HERE / "omp_open_context.ts"), str(session)]
                else:
                    cmd = [sys.executable, __file__, "--child", kind, str(session), str(blobs)]
                return run_child(kind, cmd, session, blobs, Path(scratch))

            runs = round_robin(label, kinds, args.runs, one)
            row = {
                "size": label,
                "bytes": session.stat().st_size,
                "median_s": {k: statistics.median(r["seconds"] for r in rs) for k, rs in runs.items()},
                "validate_over_read": _ratios(runs, "read"),
                "validate_over_orjson": _ratios(runs, "orjson"),
                "validate_over_omp": _ratios(runs, "omp"),
                "validate_peak_rss_mb": max(r["peak_rss"] for r in runs["validate"]) / MB,
                "diagnostics": runs["validate"][0]["found"],
            }
            rows.append(row)
            if not args.json:
                def fmt(x: float | None) -> str:
                    return "-" if x is None else f"{x:.2f}x"

                print(f"{label}: validate/read {fmt(row['validate_over_read'])} (target <= 6), "
                      f"validate/orjson {fmt(row['validate_over_orjson'])}, validate/omp "
                      f"{fmt(row['validate_over_omp'])}, peak RSS {row['validate_peak_rss_mb']:.0f} MB "
                      f"(target <= 200), {row['diagnostics']} diagnostics", flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
