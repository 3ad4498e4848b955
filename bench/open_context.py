"""Benchmark: open a session + build its context + build its tree, omp vs omp_session.

    python bench/open_context.py [--sizes 10M,100M,1G] [--runs N] [--seed S] [--keep-data] [--json]

See bench/README.md. Contenders run round-robin, each run in a fresh process, so
that machine noise spreads over all of them and the ratios stay comparable.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN_LARGE = Path(os.environ.get("OMP_BENCH_GEN", Path(__file__).resolve().parent / "gen_large.py"))
ORACLE_HOME = Path(os.environ.get("OMP_ORACLE_HOME", Path.home() / ".cache" / "omp-session-reference" / "18.2.3"))
BUN = ORACLE_HOME / "node_modules" / "bun" / "bin" / "bun.exe"
OMP_PKG = ORACLE_HOME / "node_modules" / "@oh-my-pi" / "pi-coding-agent"
CONTENDERS = ("omp", "ours", "read", "orjson")
READ_MODE = "one f.read() of the whole file"
ORJSON_MODE = "orjson.loads per line, results dropped"
MB = 1_000_000
CHILD_TIMEOUT_S = 600
# omp's profile / directory overrides, removed like the oracle does
HIDDEN_ENV = (
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "OMP_PROFILE",
    "PI_PROFILE",
    "PI_CONFIG_DIR",
    "OMP_WORKTREE_DIR",
    "PI_SESSION_DIR",
    # a user's Python reads and writes its bytecode cache: without it every contender compiled
    # the package on each start (about 0.15 s, into every time and the baseline alike)
    "PYTHONDONTWRITEBYTECODE",
)
DATA_DIR = Path(os.environ.get("OMP_BENCH_CACHE", Path(tempfile.gettempdir()) / "omp-bench-cache"))

# (name, ratio key, limit, applies to files of at least this many bytes)
TARGETS = (
    ("time ours/omp", "time_ours_omp", 0.25, 100 * 2**20),
    ("time ours/read", "time_ours_read", 2.5, 100 * 2**20),
    ("peak RSS ours/omp", "rss_ours_omp", 0.5, 2**30),
    ("private ours (MB)", "private_ours_mb", 64, 2**30),
)


# ---------------------------------------------------------------- child side


def _memory() -> dict[str, int]:
    """Peak RSS, and private/anonymous memory now (call while the results are alive)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            out["peak_rss"] = int(line.split()[1]) * 1024
    rollup = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        rollup[key] = int(rest.split()[0]) * 1024
    out["private"] = rollup["Private_Clean"] + rollup["Private_Dirty"]
    out["anonymous"] = rollup["Anonymous"]
    return out


def _child(kind: str, path: str) -> None:
    if kind == "ours":
        import omp_session

        if not callable(getattr(omp_session, "open", None)):
            sys.exit(f"omp_session.open is missing (module {omp_session.__file__}): the API has not landed")
        t0 = time.perf_counter()
        session = omp_session.open(path)
        context = session.build_session_context()
        tree = session.get_tree()
        seconds = time.perf_counter() - t0
        messages = context["messages"] if isinstance(context, dict) else context.messages
        result = {"seconds": seconds, **_memory(), "messages": len(messages), "roots": len(tree)}
    elif kind == "read":
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            data = f.read()
        result = {"seconds": time.perf_counter() - t0, **_memory(), "bytes": len(data)}
    elif kind == "orjson":
        import orjson

        lines = 0
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            for line in f:
                orjson.loads(line)
                lines += 1
        result = {"seconds": time.perf_counter() - t0, **_memory(), "lines": lines}
    else:
        sys.exit(f"unknown contender {kind}")
    print(json.dumps(result))


# ---------------------------------------------------------------- parent side


def parse_size(text: str) -> int:
    s = text.strip().upper().rstrip("B")
    mult = 1024 ** ("KMGT".index(s[-1]) + 1) if s[-1:] in ("K", "M", "G", "T") else 1
    return int(float(s.rstrip("KMGT")) * mult)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ensure_data(label: str, seed: int, root: Path) -> tuple[Path, Path, float | None, bool]:
    """Session file and blob dir for (size, seed); reuses the cache. Returns generation seconds or None."""
    folder = root / f"{label}-seed{seed}"
    session, blobs = folder / "session.jsonl", folder / "blobs"
    if session.is_file():
        return session, blobs, None, False
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    log(f"[{label}] generating with {GEN_LARGE.name} (seed {seed}) into {folder} ...")
    part = folder / "session.jsonl.part"
    t0 = time.perf_counter()
    cmd = [sys.executable, GEN_LARGE, "--size", label, "--seed", str(seed), "-o", part, "--blob-dir", blobs]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    part.rename(session)  # only complete files are ever reused
    seconds = time.perf_counter() - t0
    log(f"[{label}] generated {session.stat().st_size / MB:.0f} MB in {seconds:.1f} s")
    return session, blobs, seconds, created


def warm(session: Path, blobs: Path) -> None:
    """Untimed read so every contender starts from a warm page cache."""
    for p in [session, *sorted(blobs.glob("*"))]:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def isolated_env(home: Path) -> dict[str, str]:
    """The oracle's isolation: omp must not see or write the real home."""
    env = dict(os.environ)
    for key in HIDDEN_ENV:
        env.pop(key, None)
    env.update(
        HOME=str(home),
        USERPROFILE=str(home),
        PI_CODING_AGENT_DIR=str(home / ".omp" / "agent"),
        TZ="UTC",
        NO_COLOR="1",
        OMP_ORACLE_HOME=str(ORACLE_HOME),
        BUN_RUNTIME_TRANSPILER_CACHE_PATH=str(ORACLE_HOME / ".transpiler-cache"),
    )
    return env


def run_child(kind: str, cmd: list[str], session: Path, blobs: Path | None, scratch: Path) -> dict:
    """Run one timed child in a fresh isolated home (blobs linked in) and return its JSON line."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=scratch))
    agent = home / ".omp" / "agent"
    agent.mkdir(parents=True)
    # omp resolves blob:sha256 refs from its store on open, as it would for a real user
    if blobs is not None and blobs.is_dir():
        (agent / "blobs").symlink_to(blobs)
    try:
        proc = subprocess.run(
            cmd, env=isolated_env(home), cwd=home, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(
            f"{kind} failed (exit {proc.returncode}) on {session}:\n{proc.stderr.strip()[-3000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def round_robin(label: str, kinds: list[str], n: int, run: Callable[[str], dict]) -> dict[str, list[dict]]:
    """``n`` runs of every contender, the order rotated each round so machine noise spreads."""
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    for i in range(n):
        for kind in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
            r = run(kind)
            runs[kind].append(r)
            log(f"[{label}] {kind:<6} run {i + 1}/{n}: {r['seconds']:.3f} s, {r['peak_rss'] / MB:.0f} MB peak")
    return runs


def run_one(kind: str, session: Path, blobs: Path | None, scratch: Path) -> dict:
    if kind == "omp":
        cmd = [str(BUN), "--no-install", str(HERE / "omp_open_context.ts"), str(session)]
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "_child", kind, str(session)]
    return run_child(kind, cmd, session, blobs, scratch)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def summarize(label: str, size: int, runs: dict[str, list[dict]]) -> dict:
    keys = {"ours": ("seconds", "peak_rss", "private", "anonymous")}
    med = {
        kind: {key: statistics.median(r[key] for r in rs) for key in keys.get(kind, ("seconds", "peak_rss"))}
        for kind, rs in runs.items()
    }

    def get(kind: str, key: str) -> float | None:
        return med.get(kind, {}).get(key)

    ratios = {
        "time_ours_omp": ratio(get("ours", "seconds"), get("omp", "seconds")),
        "time_ours_read": ratio(get("ours", "seconds"), get("read", "seconds")),
        "time_ours_orjson": ratio(get("ours", "seconds"), get("orjson", "seconds")),
        "rss_ours_omp": ratio(get("ours", "peak_rss"), get("omp", "peak_rss")),
        "private_ours_mb": None if get("ours", "private") is None else get("ours", "private") / MB,
    }
    checks = []
    for name, key, limit, min_size in TARGETS:
        if size >= min_size and ratios[key] is not None:
            checks.append({"name": name, "value": ratios[key], "limit": limit, "pass": ratios[key] <= limit})
    warnings = []
    if "omp" in runs and "ours" in runs:
        for key in ("messages", "roots"):
            if runs["omp"][0][key] != runs["ours"][0][key]:
                warnings.append(f"{key}: omp {runs['omp'][0][key]} vs ours {runs['ours'][0][key]}")
    return {
        "size": label,
        "bytes": size,
        "runs": runs,
        "median": med,
        "ratios": ratios,
        "checks": checks,
        "warnings": warnings,
    }


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def print_table(report: dict) -> None:
    print(f"open + buildSessionContext + getTree: medians, contenders interleaved (seed {report['seed']})")
    omp = (
        f"omp {report['omp_version']} on Bun {report['bun_version']}"
        if report["omp_version"]
        else "omp not run"
    )
    print(f"{omp}; ours = {report['ours_module'] or 'not run'}")
    print(f"read = {READ_MODE}; orjson = {ORJSON_MODE}; blob store: {report['blob_store']}")
    print()
    print(
        f"{'size':>5} {'MB':>6} {'runs':>4}" + "".join(f" {k + ' s':>9} {k + ' RSS':>10}" for k in CONTENDERS)
    )
    for s in report["sizes"]:
        row = f"{s['size']:>5} {s['bytes'] / MB:>6.0f} {max(len(r) for r in s['runs'].values()):>4}"
        for kind in CONTENDERS:
            m = s["median"].get(kind)
            row += f" {m['seconds']:>9.3f} {m['peak_rss'] / MB:>7.0f} MB" if m else f" {'-':>9} {'-':>10}"
        print(row)
    print()
    print(
        f"{'size':>5} {'ours/omp':>9} {'ours/read':>9} {'ours/orjson':>11} {'RSS ours/omp':>12} "
        f"{'private ours':>12} {'anon ours':>9}"
    )
    for s in report["sizes"]:
        r, m = s["ratios"], s["median"].get("ours", {})
        private = f"{m['private'] / MB:.0f} MB" if "private" in m else "-"
        anon = f"{m['anonymous'] / MB:.0f} MB" if "anonymous" in m else "-"
        print(
            f"{s['size']:>5} {fmt_ratio(r['time_ours_omp']):>9} {fmt_ratio(r['time_ours_read']):>9} "
            f"{fmt_ratio(r['time_ours_orjson']):>11} {fmt_ratio(r['rss_ours_omp']):>12} {private:>12} {anon:>9}"
        )
    print()
    print("targets (from the issue):")
    for s in report["sizes"]:
        if not s["checks"]:
            print(f"{s['size']:>5}  (none at this size)")
        for c in s["checks"]:
            mb = c["name"].endswith("(MB)")
            value = f"{c['value']:.0f} MB" if mb else f"{c['value']:.2f}x"
            limit = f"{c['limit']:g} MB" if mb else f"{c['limit']:g}x"
            print(
                f"{s['size']:>5}  {c['name']:<18} {value:>8}  <= {limit:<6} {'PASS' if c['pass'] else 'FAIL'}"
            )
        for w in s["warnings"]:
            print(f"{s['size']:>5}  WARNING: omp and ours disagree on {w}")
    print()
    for s in report["sizes"]:
        how = "reused" if s["generated_seconds"] is None else f"generated in {s['generated_seconds']:.1f} s"
        print(f"data {s['size']}: {how} ({s['path']})")


def probe_setup(kinds: list[str]) -> dict:
    """Fail early and clearly when a contender cannot run (before generating any data)."""
    setup = {"omp_version": None, "bun_version": None, "ours_module": None}
    if "omp" in kinds:
        if not (BUN.is_file() and OMP_PKG.is_dir()):
            raise SystemExit(f"omp is not installed in {ORACLE_HOME}: run tests/reference/install")
        setup["omp_version"] = json.loads((OMP_PKG / "package.json").read_text())["version"]
        setup["bun_version"] = subprocess.run(
            [BUN, "--version"], capture_output=True, text=True
        ).stdout.strip()
    if "ours" in kinds:
        code = "import omp_session as m; print(m.__file__, callable(getattr(m, 'open', None)))"
        probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if probe.returncode != 0:
            raise SystemExit(f"cannot import omp_session with {sys.executable}:\n{probe.stderr.strip()}")
        where, _, ok = probe.stdout.strip().rpartition(" ")
        if ok != "True":
            raise SystemExit(f"{where} has no omp_session.open(): the API has not landed")
        setup["ours_module"] = f"omp_session from {Path(where).parent}"
    return setup


def main(argv: list[str]) -> int:
    if argv[:1] == ["_child"]:
        _child(argv[1], argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10M,100M,1G", help="comma list, K/M/G = powers of 1024")
    ap.add_argument("--runs", type=int, help="runs per contender (default 5, 3 from 1G up)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--contenders", default=",".join(CONTENDERS), help="subset of " + ",".join(CONTENDERS))
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"data cache (default {DATA_DIR})")
    ap.add_argument("--keep-data", action="store_true", help="keep data this run generates, for later runs")
    ap.add_argument(
        "--no-blob-store", action="store_true", help="run without a blob store (refs stay unresolved)"
    )
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    a = ap.parse_args(argv)
    labels = [s.strip().upper().rstrip("B") for s in a.sizes.split(",") if s.strip()]
    kinds = [k for k in a.contenders.split(",") if k]
    if unknown := set(kinds) - set(CONTENDERS):
        ap.error(f"unknown contenders {sorted(unknown)}")

    report = {
        "seed": a.seed,
        **probe_setup(kinds),
        "read_mode": READ_MODE,
        "orjson_mode": ORJSON_MODE,
        "blob_store": "none" if a.no_blob_store else "the session's blobs (refs resolved)",
        "sizes": [],
    }
    created: list[Path] = []
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-"))
    try:
        for label in labels:
            session, blobs, gen_seconds, new = ensure_data(label, a.seed, a.data_dir)
            if new:
                created.append(session.parent)
            store = None if a.no_blob_store else blobs
            n = a.runs or (3 if parse_size(label) >= 2**30 else 5)
            warm(session, blobs)
            runs = round_robin(label, kinds, n, functools.partial(run_one, session=session, blobs=store, scratch=scratch))
            summary = summarize(label, session.stat().st_size, runs)
            summary.update(path=str(session), generated_seconds=gen_seconds)
            report["sizes"].append(summary)
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
