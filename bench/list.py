"""Benchmark: ``omp-session list`` against omp's own listing and the 4 KB floor.

    python bench/list.py [--n 2000] [--runs 5] [--seed 7] [--json]

Builds (once, cached under $OMP_BENCH_CACHE or /tmp/omp-bench-cache as ``list-root-<N>/``) a
sessions root of N sessions of 50 KB to 5 MB in 20 project buckets, generated like real ones by
``gen_large.py``. Then times, each run a fresh process, round-robin so that machine noise
spreads over all contenders:

* ``ours``        ``omp-session list --all --json`` on a warm listing cache
* ``ours-nocache``  the same with ``--no-cache`` (every file's head and tail read)
* ``stats-warm``  ``omp-session list --all --json --stats`` on a warm cache
* ``stats-cold``  the same on an empty cache (every file read whole, cache written)
* ``omp``         ``SessionManager.listAll()`` under Bun (bench/omp_list.ts), JSON.stringify'd
* ``floor``       reading the first 4 KB of every session file

Each child reports ``seconds`` measured in-process after its imports; the parent also records the
wall time of the process (interpreter / Bun start included). Medians are printed, with the
ratios ours/omp and ours/floor (targets: <= 0.15x omp, <= 2x the floor, warm cache).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_context import BUN, DATA_DIR, GEN_LARGE, isolated_env

HERE = Path(__file__).resolve().parent
BUCKETS = 20
CHILD_TIMEOUT_S = 600
CONTENDERS = ("ours", "ours-nocache", "stats-warm", "stats-cold", "omp", "floor")
TARGETS = (("ours/omp (in-process)", "ours", "omp", "seconds", 0.15),
           ("ours/floor (in-process)", "ours", "floor", "seconds", 2.0))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- child side


def _child(kind: str, root: str) -> None:
    if kind == "floor":
        t0 = time.perf_counter()
        n = 0
        with os.scandir(root) as buckets:
            for bucket in buckets:
                if bucket.is_dir(follow_symlinks=False):
                    with os.scandir(bucket.path) as files:
                        for entry in files:
                            if entry.name.endswith(".jsonl"):
                                with open(entry.path, "rb") as f:
                                    f.read(4096)
                                n += 1
        print(json.dumps({"seconds": time.perf_counter() - t0, "sessions": n}))
        return
    from omp_session.cli import cli

    args = ["list", "--all", "--json", "--root", root]
    if kind.startswith("stats"):
        args.append("--stats")
    if kind == "ours-nocache":
        args.append("--no-cache")
    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        cli.main(args, standalone_mode=False)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "sessions": len(json.loads(out.getvalue()))}))


# ---------------------------------------------------------------- parent side


def build_root(n: int, seed: int) -> Path:
    """``<cache>/list-root-<n>/home/.omp/agent/sessions/<bucket>/*.jsonl``, generated once."""
    base = DATA_DIR / f"list-root-{n}"
    sessions = base / "home" / ".omp" / "agent" / "sessions"
    if (base / "done").is_file():
        return base
    shutil.rmtree(base, ignore_errors=True)
    sessions.mkdir(parents=True)
    per = [n // BUCKETS + (1 if b < n % BUCKETS else 0) for b in range(BUCKETS)]
    log(f"generating {n} sessions (50 KB..5 MB) into {sessions} with {GEN_LARGE.name} ...")
    t0 = time.perf_counter()

    def one(b: int) -> None:
        if per[b]:
            out = sessions / f"--work-project-{b:02d}--"
            cmd = [sys.executable, str(GEN_LARGE), "--many", str(per[b]), "--min-size", "50K", "--max-size", "5M",
                   "--seed", str(seed + b), "--dir", str(out)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, range(BUCKETS)))
    total = sum(f.stat().st_size for f in sessions.glob("*/*.jsonl"))
    log(f"generated {total / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s")
    (base / "done").write_text(json.dumps({"n": n, "seed": seed, "bytes": total}))
    return base


def warm_pages(root: Path) -> None:
    for p in root.glob("*/*.jsonl"):
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def run_one(kind: str, base: Path, warm_cache: Path, scratch: Path) -> dict[str, Any]:
    home = base / "home"
    root = home / ".omp" / "agent" / "sessions"
    env = isolated_env(home)
    cold: Path | None = None
    if kind == "omp":
        cmd = [str(BUN), "--no-install", str(HERE / "omp_list.ts")]
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "_child", kind, str(root)]
        if kind == "stats-cold":
            cold = Path(tempfile.mkdtemp(prefix="cold-", dir=scratch))
            env["XDG_CACHE_HOME"] = str(cold)
        else:
            env["XDG_CACHE_HOME"] = str(warm_cache)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=scratch, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    finally:
        wall = time.perf_counter() - t0
        if cold is not None:
            shutil.rmtree(cold, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed (exit {proc.returncode}):\n{proc.stderr.strip()[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        _child(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000, help="sessions in the root (default 2000)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per contender (median reported)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", help="comma-separated contenders (default: all)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args()
    kinds = tuple(a.only.split(",")) if a.only else CONTENDERS
    base = build_root(a.n, a.seed)
    root = base / "home" / ".omp" / "agent" / "sessions"
    warm_pages(root)
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-list-"))
    warm_cache = scratch / "warm-cache"
    try:
        log("warming the listing cache (untimed) ...")
        run_one("stats-warm", base, warm_cache, scratch)
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
        for i in range(a.runs):
            for kind in kinds:
                runs[kind].append(run_one(kind, base, warm_cache, scratch))
            log(f"run {i + 1}/{a.runs}: " + ", ".join(f"{k} {runs[k][-1]['seconds'] * 1000:.0f} ms" for k in kinds))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    med = {k: {key: statistics.median(r[key] for r in rs) for key in ("seconds", "wall")} for k, rs in runs.items()}
    counts = {k: rs[0]["sessions"] for k, rs in runs.items()}
    if len(set(counts.values())) > 1:
        log(f"warning: session counts differ: {counts}")
    report: dict[str, Any] = {"n": a.n, "runs": a.runs, "medians": med, "counts": counts, "ratios": {}}
    print(f"\n{a.n} sessions, median of {a.runs} fresh-process runs")
    print(f"{'contender':<14}{'in-process ms':>15}{'wall ms':>10}{'x omp':>8}{'x floor':>9}")
    for k in kinds:
        s, w = med[k]["seconds"], med[k]["wall"]
        x_omp = s / med["omp"]["seconds"] if "omp" in med else float("nan")
        x_floor = s / med["floor"]["seconds"] if "floor" in med else float("nan")
        report["ratios"][k] = {"omp": x_omp, "floor": x_floor,
                               "omp_wall": w / med["omp"]["wall"] if "omp" in med else None}
        print(f"{k:<14}{s * 1000:>15.0f}{w * 1000:>10.0f}{x_omp:>8.2f}{x_floor:>9.2f}")
    for name, mine, theirs, key, limit in TARGETS:
        if mine in med and theirs in med:
            value = med[mine][key] / med[theirs][key]
            print(f"target {name}: {value:.3f} (limit {limit}) {'PASS' if value <= limit else 'FAIL'}")
    if a.json:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
