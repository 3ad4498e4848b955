"""Benchmark: open a session for writing, append one entry, close — omp vs omp_session.

    python bench/append.py [--sizes 10M,100M,1G] [--runs N] [--seed S] [--keep-data] [--json]

Same data, isolation and round-robin scheme as ``open_context.py`` (see bench/README.md). After
every run the file is truncated back to its original size, so each run appends to the same bytes.

Contenders: ``omp`` (``SessionManager.open`` + ``appendMessage`` + ``close`` under Bun), ``ours``
(``SessionManager.open`` + ``append_message`` + ``close``), ``read`` (reading the bytes: the floor)
and ``scan`` (``omp_session.open``, the read-only envelope scan, to show that opening for writing
reads no more). ``append_ms`` is the append call alone, inside the process.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from open_context import (  # noqa: E402
    BUN,
    DATA_DIR,
    _memory,
    ensure_data,
    parse_size,
    probe_setup,
    round_robin,
    run_child,
    warm,
)

CONTENDERS = ("omp", "ours", "scan", "read")
MESSAGE = {"role": "user", "content": "one more question", "timestamp": 1767225600000}


def _child(kind: str, path: str) -> None:
    if kind == "ours":
        from omp_session.write.manager import SessionManager

        t0 = time.perf_counter()
        sm = SessionManager.open(path, initial_cwd=os.getcwd())
        a0 = time.perf_counter()
        sm.append_message(dict(MESSAGE))
        append_ms = (time.perf_counter() - a0) * 1000
        sm.close()
        result = {"seconds": time.perf_counter() - t0, "append_ms": append_ms, **_memory(),
                  "entries": len(sm.session)}
    elif kind == "scan":
        import omp_session

        t0 = time.perf_counter()
        session = omp_session.open(path)
        result = {"seconds": time.perf_counter() - t0, **_memory(), "entries": len(session)}
    elif kind == "read":
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            data = f.read()
        result = {"seconds": time.perf_counter() - t0, **_memory(), "bytes": len(data)}
    else:
        sys.exit(f"unknown contender {kind}")
    print(json.dumps(result))


def run_one(kind: str, session: Path, blobs: Path | None, scratch: Path) -> dict:
    if kind == "omp":
        cmd = [str(BUN), "--no-install", str(HERE / "omp_open_append.ts"), str(session)]
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "_child", kind, str(session)]
    size = session.stat().st_size
    try:
        return run_child(kind, cmd, session, blobs, scratch)
    finally:
        if session.stat().st_size != size:
            os.truncate(session, size)  # every run appends to the same bytes


def summarize(label: str, size: int, runs: dict[str, list[dict]]) -> dict:
    med = {k: {key: statistics.median(r[key] for r in rs) for key in rs[0] if key in ("seconds", "append_ms",
                                                                                       "peak_rss")}
           for k, rs in runs.items() if rs}

    def ratio(a: str, b: str, key: str = "seconds") -> float | None:
        x, y = med.get(a, {}).get(key), med.get(b, {}).get(key)
        return x / y if x is not None and y else None

    return {"size": label, "bytes": size, "runs": runs, "median": med,
            "ratios": {"ours_omp": ratio("ours", "omp"), "ours_scan": ratio("ours", "scan"),
                       "ours_read": ratio("ours", "read"), "append_ours_omp": ratio("ours", "omp", "append_ms"),
                       "rss_ours_omp": ratio("ours", "omp", "peak_rss")}}


def fmt(x: float | None, unit: str = "x") -> str:
    return "-" if x is None else f"{x:.2f}{unit}"


def print_table(report: dict) -> None:
    print(f"open for writing + append one entry + close: medians, contenders interleaved (seed {report['seed']})")
    print(f"omp {report['omp_version']} on Bun {report['bun_version']}; ours = {report['ours_module']}")
    print()
    print(f"{'size':>5} {'ours/omp':>9} {'ours/scan':>9} {'ours/read':>9} {'RSS ours/omp':>12} "
          f"{'append ours':>12} {'append omp':>11}")
    for s in report["sizes"]:
        r, m = s["ratios"], s["median"]
        print(f"{s['size']:>5} {fmt(r['ours_omp']):>9} {fmt(r['ours_scan']):>9} {fmt(r['ours_read']):>9} "
              f"{fmt(r['rss_ours_omp']):>12} {fmt(m.get('ours', {}).get('append_ms'), ' ms'):>12} "
              f"{fmt(m.get('omp', {}).get('append_ms'), ' ms'):>11}")
    print()
    print("ours/scan near 1: opening for writing reads no more than the read-only envelope scan.")
    print("append: the append call alone, in-process (median); only its lookup of the new id in the id column"
          " (one C-level scan) grows with the file.")


def main(argv: list[str]) -> int:
    if argv[:1] == ["_child"]:
        _child(argv[1], argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10M,100M,1G")
    ap.add_argument("--runs", type=int, help="runs per contender (default 5, 3 from 1G up)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR)
    ap.add_argument("--keep-data", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    kinds = [k for k in a.contenders.split(",") if k]
    if unknown := set(kinds) - set(CONTENDERS):
        ap.error(f"unknown contenders {sorted(unknown)}")
    report = {"seed": a.seed, **probe_setup([k for k in kinds if k in ("omp", "ours")]), "sizes": []}
    created: list[Path] = []
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-"))
    try:
        for label in [s.strip().upper().rstrip("B") for s in a.sizes.split(",") if s.strip()]:
            session, blobs, _, new = ensure_data(label, a.seed, a.data_dir)
            if new:
                created.append(session.parent)
            n = a.runs or (3 if parse_size(label) >= 2**30 else 5)
            warm(session, blobs)
            runs = round_robin(label, kinds, n, functools.partial(run_one, session=session, blobs=blobs, scratch=scratch))
            report["sizes"].append(summarize(label, session.stat().st_size, runs))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not a.keep_data:
            for folder in created:
                shutil.rmtree(folder, ignore_errors=True)
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
