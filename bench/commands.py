"""Benchmark: every read/export/repair command on big sessions, in time and peak memory (issues 15, 16).

    python bench/commands.py [--sizes 100M,1G] [--runs N] [--commands show,tail,...] [--json]
    python bench/commands.py --sizes tiny1M --commands repair-o,redact-o    # 1,000,000 tiny entries

Every run is a whole fresh process, exactly as a user runs it (``.venv/bin/omp-session ...``),
with ``PI_CODING_AGENT_DIR`` in a fresh temporary directory (the session's blobs linked in as its
store) and every output written into a temporary directory. Wall time includes interpreter start
and imports, for the commands and for the baseline alike.

* ``baseline``: ``python -c`` of ``omp_session.open(p)``, ``build_session_context()``, ``get_tree()``
  (what every viewer needs at least), the yardstick the issues' time targets are ratios of;
* one contender per command (``--commands``, default all; names in ``COMMANDS``);
* ``omp`` (when installed and not ``--no-omp``): omp's own open + context + tree under Bun, for
  issue 15's memory target (peak RSS <= 0.2x omp's).
* floors (unless ``--no-floors``): ``read`` (the file read in 1 MiB pieces), ``orjson`` (every
  line parsed by ``orjson.loads``), the fair yardstick of a command that must read every record,
  ``orjson2`` (the same with the file's halves in two processes, as our commands split a big
  file: the least such a command takes on two cores),
  ``roundtrip`` (every line parsed and written back with ``orjson.dumps``), the least a command
  that rewrites every record does, and ``copy`` (the bytes read and written back as they are), what
  writing a file of the session's size costs on this machine; each command's time is also printed
  as a ratio to them, and each floor's as a ratio to the baseline (a floor above a target's ratio:
  no command can meet it).

Peak RSS is the child's own ``ru_maxrss`` (``os.wait4``). A child that exceeds ``--mem-limit``
(address space, default 6G) fails instead of pushing a shared machine into the OOM killer; it is
reported as ``over limit``. Runs are round-robin with the order rotated each round, so machine
noise falls on every contender alike; read the ratios, not the absolute times.

Sizes: ``gen_large.py`` sizes (``100M``, ``1G``: K/M/G powers of 1024, data cached like
``open_context.py``), or ``tinyN`` (``tiny1M``: N tiny user/assistant entries in one chain,
generated here, ~116 bytes a line).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_context import BUN, DATA_DIR, HERE, MB, OMP_PKG, ensure_data, isolated_env, log, parse_size, warm

ROOT = HERE.parent
CLI = Path(sys.executable).parent / "omp-session"
BASELINE_CODE = (
    "import sys, omp_session as m\n"
    "s = m.open(sys.argv[1])\n"
    "s.build_session_context()\n"
    "s.get_tree()\n"
)
# floors, whole processes as well: touching the bytes, and parsing every line with orjson (what a
# command that must read every record cannot go below)
FLOOR_CODE = {
    "read": "import sys\nwith open(sys.argv[1], 'rb') as f:\n    while f.read(1 << 20):\n        pass\n",
    "orjson": ("import sys, orjson\nwith open(sys.argv[1], 'rb') as f:\n    for line in f:\n        try:\n"
               "            orjson.loads(line)\n        except orjson.JSONDecodeError:\n            pass\n"),
    # every line parsed and written back (to stdout, a file): what a command that rewrites every
    # record (export json, repair -o, redact -o) cannot go below, before any work of its own
    "roundtrip": ("import sys, orjson\nout = sys.stdout.buffer\nwith open(sys.argv[1], 'rb') as f:\n"
                  "    for line in f:\n        try:\n            out.write(orjson.dumps(orjson.loads(line)) + b'\\n')\n"
                  "        except orjson.JSONDecodeError:\n            pass\n"),
    # every line parsed with orjson, the file's halves in two processes as our commands split a
    # big file (each opens it itself: a shared offset would move under the other): the least a
    # command that must decode every record takes on two cores, before any work of its own
    "orjson2": ("import os, sys, orjson\np = sys.argv[1]\nmid = os.path.getsize(p) // 2\n"
                "def parse(lines):\n    for line in lines:\n        try:\n            orjson.loads(line)\n"
                "        except orjson.JSONDecodeError:\n            pass\n"
                "child = os.fork()\n"
                "with open(p, 'rb') as f:\n"
                "    if child == 0:\n"
                "        f.seek(max(mid - 1, 0))\n        f.readline()\n        parse(f)\n"
                "    else:\n        parse(iter(lambda: f.readline() if f.tell() < mid else b'', b''))\n"
                "if child == 0:\n    os._exit(0)\nos.waitpid(child, 0)\n"),
    # the bytes read and written (to stdout, a file) as they are: what the machine charges for
    # writing a file of the session's size, the least `cat --whole-file` and `repair -o` do (on
    # some machines here a new gigabyte of page cache costs seconds, on others a fraction of one)
    "copy": "import sys\nout = sys.stdout.buffer\nwith open(sys.argv[1], 'rb') as f:\n    while b := f.read(1 << 20):\n        out.write(b)\n",
}
# name -> (arguments after the program, output file name or None, stdout captured into a file)
# {s} is the session, {o} the output path inside the run's temporary directory
COMMANDS: dict[str, tuple[list[str], str | None]] = {
    "show": (["show", "{s}"], None),
    "tail": (["tail", "{s}"], None),
    "tree-json": (["tree", "--json", "{s}"], None),
    "tree": (["tree", "{s}"], None),  # the drawing, as piped (no width: nothing cut)
    "context": (["context", "{s}"], None),
    "export-md": (["export", "--format", "md", "{s}", "-o", "{o}"], "out.md"),
    "export-json": (["export", "--format", "json", "{s}", "-o", "{o}"], "out.json"),
    "export-html": (["export", "--format", "html", "{s}", "-o", "{o}"], "out.html"),
    "repair": (["repair", "{s}"], None),
    "repair-o": (["repair", "{s}", "-o", "{o}"], "repaired.jsonl"),
    "redact-o": (["redact", "{s}", "-o", "{o}"], "redacted.jsonl"),
    "validate": (["validate", "{s}"], None),
    "stats": (["stats", "{s}"], None),
    "size": (["size", "{s}"], None),
    "cat-whole": (["cat", "--whole-file", "{s}"], None),
}
# issue 15: these <= 1.5x the baseline; issue 16: every command <= 3x and <= 300 MB
TIGHT = {"show", "tail", "tree-json", "export-md", "export-json"}
TIME_ALL, TIME_TIGHT, RSS_LIMIT, OMP_RSS_SHARE = 3.0, 1.5, 300 * MB, 0.2
TINY_USER = ('{"type":"message","id":"u%07d","parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z",'
             '"message":{"role":"user","content":"hi %d","timestamp":1}}\n')
TINY_ASSISTANT = ('{"type":"message","id":"a%07d","parentId":"u%07d","timestamp":"2026-01-01T00:00:02.000Z",'
                  '"message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"timestamp":2}}\n')


def write_tiny(path: Path, entries: int) -> None:
    """One chain of ``entries`` tiny messages (user/assistant alternating) after a v3 header."""
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"type":"session","version":3,"id":"tiny","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}\n')
        parent = "null"
        for k in range(entries // 2):
            f.write(TINY_USER % (k, parent, k))
            f.write(TINY_ASSISTANT % (k, k))
            parent = f'"a{k:07d}"'


def ensure_session(label: str, seed: int, root: Path) -> tuple[Path, Path | None, bool]:
    """(session, blob dir or None, created by this run)."""
    if label.lower().startswith("tiny"):
        entries = parse_size(label[4:].replace("M", "000000").replace("K", "000")) if label[4:] else 1_000_000
        folder = root / f"tiny-{entries}"
        session = folder / "session.jsonl"
        if session.is_file():
            return session, None, False
        folder.mkdir(parents=True, exist_ok=True)
        log(f"[{label}] writing {entries:,} tiny entries into {folder} ...")
        part = folder / "session.jsonl.part"
        write_tiny(part, entries)
        part.rename(session)
        return session, None, True
    session, blobs, _, created = ensure_data(label, seed, root)
    return session, blobs, created


def run_process(cmd: list[str], home: Path, stdout: Path, mem_limit: int) -> dict:
    """Run ``cmd`` once; wall seconds and the child's own peak RSS (``os.wait4``)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))

    with open(stdout, "wb") as out, open(home / "stderr", "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=home,
                                env=isolated_env(home), preexec_fn=limit)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err_text = (home / "stderr").read_text(errors="replace")
    return {"seconds": seconds, "peak_rss": usage.ru_maxrss * 1024, "exit": proc.returncode,
            "over_limit": proc.returncode != 0 and ("MemoryError" in err_text or "memory" in err_text.lower()),
            "stderr": err_text[-400:]}


def run_one(name: str, session: Path, blobs: Path | None, scratch: Path, mem_limit: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
    agent = home / ".omp" / "agent"
    agent.mkdir(parents=True)
    if blobs is not None and blobs.is_dir():
        (agent / "blobs").symlink_to(blobs)
    out_dir = home / "out"
    out_dir.mkdir()
    try:
        if name == "baseline":
            cmd = [sys.executable, "-c", BASELINE_CODE, str(session)]
        elif name in FLOOR_CODE:
            cmd = [sys.executable, "-c", FLOOR_CODE[name], str(session)]
        elif name == "omp":
            cmd = [str(BUN), "--no-install", str(HERE / "omp_open_context.ts"), str(session)]
        else:
            args, out_name = COMMANDS[name]
            target = str(out_dir / (out_name or "unused"))
            cmd = [str(CLI), *(a.replace("{s}", str(session)).replace("{o}", target) for a in args)]
        result = run_process(cmd, home, out_dir / "stdout", mem_limit)
        outs = [p for p in out_dir.iterdir()]
        result["output_bytes"] = sum(p.stat().st_size for p in outs)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    # repair's dry run and validate exit 1 when they find something: that is a result, not a failure
    result["failed"] = result["exit"] not in (0, 1) or (result["exit"] == 1 and name not in ("repair", "validate"))
    return result


def summarize(label: str, size: int, runs: dict[str, list[dict]]) -> dict:
    med: dict[str, dict] = {}
    for name, rs in runs.items():
        ok = [r for r in rs if not r["failed"]]
        med[name] = {
            "seconds": statistics.median(r["seconds"] for r in ok) if ok else None,
            "peak_rss": max(r["peak_rss"] for r in rs),
            "failed": len(rs) - len(ok),
            "over_limit": any(r["over_limit"] for r in rs),
            "error": next((r["stderr"].strip().splitlines()[-1:] for r in rs if r["failed"]), None),
        }
    base = med.get("baseline", {}).get("seconds")
    floors = {f: med.get(f, {}).get("seconds") for f in FLOOR_CODE}
    omp_rss = med.get("omp", {}).get("peak_rss")
    rows = []
    for name in runs:
        if name in ("baseline", "omp", *FLOOR_CODE):
            continue
        m = med[name]
        r = m["seconds"] / base if m["seconds"] is not None and base else None
        to_floor = {f"ratio_{f}": m["seconds"] / t if m["seconds"] is not None and t else None
                    for f, t in floors.items()}
        limit = TIME_TIGHT if name in TIGHT else TIME_ALL
        checks = {
            "time": None if r is None else r <= limit,
            "rss": m["peak_rss"] <= RSS_LIMIT and not m["failed"],
        }
        if omp_rss and name in TIGHT:
            checks["rss_omp"] = m["peak_rss"] <= OMP_RSS_SHARE * omp_rss
        rows.append({"command": name, **m, "ratio": r, **to_floor, "time_limit": limit, "checks": checks,
                     "pass": all(v is True for v in checks.values())})
    return {"size": label, "bytes": size, "median": med, "rows": rows, "runs": runs}


def print_table(report: dict) -> None:
    print("whole processes, medians, contenders interleaved; ratio = time / baseline (open + context + tree); "
          "/orjson, /orjson2, /read, /roundtrip, /copy = time / floor")
    print(f"targets: peak RSS <= {RSS_LIMIT / MB:.0f} MB and time <= {TIME_ALL:g}x for every command; "
          f"<= {TIME_TIGHT:g}x and RSS <= {OMP_RSS_SHARE:g}x omp's open for {', '.join(sorted(TIGHT))}")
    for s in report["sizes"]:
        base, omp = s["median"].get("baseline", {}), s["median"].get("omp")
        print()
        line = f"{s['size']} ({s['bytes'] / MB:.0f} MB): baseline {base.get('seconds') or 0:.2f} s, " \
               f"{base.get('peak_rss', 0) / MB:.0f} MB"
        if omp:
            line += f"; omp open+context+tree {omp['seconds'] or 0:.2f} s, {omp['peak_rss'] / MB:.0f} MB"
        for f in FLOOR_CODE:
            seconds = s["median"].get(f, {}).get("seconds")
            if seconds is not None:
                line += f"; floor {f} {seconds:.2f} s"
                if base.get("seconds"):
                    line += f" ({seconds / base['seconds']:.2f}x baseline)"
        print(line)
        print(f"  {'command':<12} {'time s':>8} {'ratio':>7} {'limit':>6} {'/orjson':>8} {'/orjson2':>9} {'/read':>7} "
              f"{'/roundtrip':>10} {'/copy':>6} {'peak RSS':>10}  result")
        for r in s["rows"]:
            t = "-" if r["seconds"] is None else f"{r['seconds']:.2f}"
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
            floor = " ".join("-".rjust(w) if r.get(f"ratio_{f}") is None else f"{r[f'ratio_{f}']:.2f}x".rjust(w)
                             for f, w in (("orjson", 8), ("orjson2", 9), ("read", 7), ("roundtrip", 10), ("copy", 6)))
            rss = f"{r['peak_rss'] / MB:.0f} MB"
            verdict = "PASS" if r["pass"] else "MISS " + ",".join(k for k, v in r["checks"].items() if v is not True)
            if r["failed"]:
                verdict += " (over limit)" if r["over_limit"] else f" (failed: {' '.join(r['error'] or [])})"
            print(f"  {r['command']:<12} {t:>8} {ratio:>7} {r['time_limit']:>5g}x {floor} {rss:>10}  {verdict}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100M,1G", help="comma list: gen_large sizes (K/M/G) or tinyN (tiny1M)")
    ap.add_argument("--runs", type=int, help="runs per contender (default 3, 1 from 1G up)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--commands", default=",".join(COMMANDS), help="subset of " + ",".join(COMMANDS))
    ap.add_argument("--no-omp", action="store_true", help="leave omp's open out (no Bun needed)")
    ap.add_argument("--no-floors", action="store_true", help="leave the floors out (read, orjson, orjson2, roundtrip, copy)")
    ap.add_argument("--mem-limit", default="6G", help="address-space limit per child (default 6G)")
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"data cache (default {DATA_DIR})")
    ap.add_argument("--keep-data", action="store_true", help="keep data this run generates, for later runs")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    a = ap.parse_args(argv)
    names = [c for c in a.commands.split(",") if c]
    if unknown := set(names) - set(COMMANDS):
        ap.error(f"unknown commands {sorted(unknown)}; known: {','.join(COMMANDS)}")
    if not CLI.exists():
        raise SystemExit(f"{CLI} not found: run this with the venv's python (.venv/bin/python)")
    with_omp = not a.no_omp and BUN.is_file() and OMP_PKG.is_dir()
    kinds = ["baseline", *(["omp"] if with_omp else []), *([] if a.no_floors else FLOOR_CODE), *names]
    mem_limit = parse_size(a.mem_limit)
    report: dict = {"seed": a.seed, "mem_limit": mem_limit, "omp": with_omp, "sizes": []}
    created: list[Path] = []
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-commands-"))
    try:
        for label in (s.strip() for s in a.sizes.split(",") if s.strip()):
            session, blobs, new = ensure_session(label, a.seed, a.data_dir)
            if new:
                created.append(session.parent)
            size = session.stat().st_size
            n = a.runs or (1 if size >= 2**30 else 3)
            warm(session, blobs if blobs is not None else session.parent / "none")
            runs: dict[str, list[dict]] = {k: [] for k in kinds}
            for i in range(n):
                for kind in kinds[i % len(kinds):] + kinds[: i % len(kinds)]:
                    r = run_one(kind, session, blobs, scratch, mem_limit)
                    runs[kind].append(r)
                    note = " FAILED" if r["failed"] else ""
                    log(f"[{label}] {kind:<12} run {i + 1}/{n}: {r['seconds']:.2f} s, "
                        f"{r['peak_rss'] / MB:.0f} MB peak{note}")
            summary = summarize(label, size, runs)
            summary["path"] = str(session)
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
