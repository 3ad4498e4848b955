"""Benchmark: importing Claude Code sessions, ``omp-session import claude --all`` against omp's own importer.

    python bench/import.py [--sessions 1000] [--runs 3] [--seed 3] [--small] [--mb-per-session MB] [--json]

Data: ``tests/reference/gen_foreign.py --claude N --codex 0`` (every record kind, images, damaged
lines; about one session in twenty has a 500-600 KB tool output unless ``--small``) in a stand-in
home, generated once per run of this script (untimed). ``--mb-per-session 2`` (``--claude-mb``)
grows each session to 0.6-1.4 times 2 MiB with working turns as real ones have (thinking, numbered
file reads, command outputs, edits, writes, searches, screenshots, each tool result with Claude
Code's ``toolUseResult``): 1,000 sessions come to about 2 GB (the issue's scale).

omp is found where ``tests/reference/install`` put it for the real home (``OMP_REFERENCE_HOME``,
else ``~/.cache/omp-session-reference``), not under the stand-in home: there, every timed run
would install omp anew. One untimed omp import of an empty home first installs omp if needed and
warms bun's transpiler cache.

Timed, each run into a fresh agent dir (and, for us, a fresh ledger), as whole processes:

* ``omp``: ``omp-reference import claude --no-views``: omp 18.2.3's ``ClaudeSessionStore.list()``
  then ``persistForeignSession`` of every session, one bun process (plus its start-up);
* ``ours``: ``omp-session import claude --all`` (listing, conversion, ledger, report).

Printed: median wall and CPU (user + system) time of each, ours/omp (wall), and each one's peak RSS
(``ru_maxrss`` of the child).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference"


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MB of this child, exit status)."""
    # stderr to a file, not a pipe: a child that says more than a pipe holds would block until wait4 returns
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors)
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        if status:
            errors.seek(0)
            print(errors.read().decode(errors="replace")[-2000:], file=sys.stderr)
    cpu = usage.ru_utime + usage.ru_stime
    return elapsed, cpu, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="no 500 KB+ tool outputs")
    parser.add_argument("--mb-per-session", type=float, default=0.0,
                        help="grow each session to about this many MiB (0: as generated, about 80 KB)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ompimportbench"))
    try:
        home, here = base / "home", base / "here"
        here.mkdir(parents=True)
        gen = [sys.executable, str(REFERENCE / "gen_foreign.py"), "--seed", str(args.seed), "--claude",
               str(args.sessions), "--codex", "0", "--out", str(home)] + (["--small"] if args.small else []) + (
                   ["--claude-mb", str(args.mb_per_session)] if args.mb_per_session else [])
        subprocess.run(gen, check=True)
        size = sum(p.stat().st_size for p in (home / ".claude").rglob("*.jsonl"))
        print(f"{args.sessions} Claude Code sessions, {size / 2**20:.1f} MiB", file=sys.stderr)
        env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_SESSION_DIR",
                                                                 "PYTHONDONTWRITEBYTECODE")}
        env["HOME"] = str(home)
        env["OMP_REFERENCE_HOME"] = os.environ.get("OMP_REFERENCE_HOME") or str(
            Path.home() / ".cache" / "omp-session-reference")
        empty = base / "empty-home"
        empty.mkdir()
        _seconds, _cpu, _rss, code = _timed([str(REFERENCE / "omp-reference"), "import", "claude", "--home", str(empty),
                                       "--agent-dir", str(base / "agent-warm-up"), "--cwd", str(here), "--no-views"],
                                      {**env, "HOME": str(empty)}, here)
        if code:
            raise SystemExit(f"omp's warm-up import exited with {code}")
        results: dict[str, list[tuple[float, float, int]]] = {"omp": [], "ours": []}
        for run in range(args.runs):
            for who in ("omp", "ours"):
                agent = base / f"agent-{who}-{run}"
                run_env = {**env, "PI_CODING_AGENT_DIR": str(agent), "XDG_CACHE_HOME": str(base / f"cache-{run}")}
                if who == "omp":
                    cmd = [str(REFERENCE / "omp-reference"), "import", "claude", "--home", str(home), "--agent-dir",
                           str(agent), "--cwd", str(here), "--no-views"]
                else:
                    cmd = [str(ROOT / ".venv" / "bin" / "omp-session"), "import", "claude", "--all"]
                seconds, cpu, rss, code = _timed(cmd, run_env, here)
                if code not in ((0,) if who == "omp" else (0, 1)):  # ours: 1 when some sources fail
                    raise SystemExit(f"{who} exited with {code}")
                made = sum(1 for _ in (agent / "sessions").rglob("*.jsonl"))
                print(f"run {run + 1}/{args.runs} {who}: {seconds:.2f} s ({cpu:.2f} s CPU), peak RSS {rss} MB, "
                      f"{made} sessions written", file=sys.stderr)
                results[who].append((seconds, cpu, rss))
        omp_t = statistics.median(s for s, _, _ in results["omp"])
        ours_t = statistics.median(s for s, _, _ in results["ours"])
        # CPU time too: on a shared machine the wall time of single-threaded ours and multi-threaded bun
        # suffer differently from the other load
        report = {"sessions": args.sessions, "bytes": size, "omp_s": omp_t, "ours_s": ours_t, "ratio": ours_t / omp_t,
                  "omp_cpu_s": statistics.median(c for _, c, _ in results["omp"]),
                  "ours_cpu_s": statistics.median(c for _, c, _ in results["ours"]),
                  "omp_peak_rss_mb": max(r for _, _, r in results["omp"]),
                  "ours_peak_rss_mb": max(r for _, _, r in results["ours"])}
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print(f"| contender | median s | median CPU s | peak RSS MB |\n| --- | --- | --- | --- |\n"
                  f"| omp 18.2.3 importer | {omp_t:.2f} | {report['omp_cpu_s']:.2f} | {report['omp_peak_rss_mb']} |\n"
                  f"| omp-session import | {ours_t:.2f} | {report['ours_cpu_s']:.2f} | {report['ours_peak_rss_mb']} |\n"
                  f"ours/omp = {report['ratio']:.2f}x on {args.sessions} sessions ({size / 2**20:.1f} MiB)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
