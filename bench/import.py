"""Benchmark: importing Claude Code sessions, ``omp-session import claude --all`` against omp's own importer.

    python bench/import.py [--sessions 1000] [--runs 3] [--seed 3] [--small] [--mb-per-session MB]
                           [--corpus DIR] [--workers N] [--json]

Data: ``tests/reference/gen_foreign.py --claude N --codex 0`` (every record kind, images, damaged
lines; about one session in twenty has a 500-600 KB tool output unless ``--small``) in a stand-in
home, generated (untimed) into a temporary folder, or into ``--corpus DIR`` and kept there: a later
run with the same ``--corpus`` and the same corpus options reuses it. ``--mb-per-session 2``
(``--claude-mb``) grows each session to 0.6-1.4 times 2 MiB with working turns as real ones have
(thinking, numbered file reads, command outputs, edits, writes, searches, screenshots, each tool
result with Claude Code's ``toolUseResult``): 1,000 sessions come to about 2 GB (the issue's scale).

omp is found where ``tests/reference/install`` put it for the real home (``OMP_REFERENCE_HOME``,
else ``~/.cache/omp-session-reference``), not under the stand-in home: there, every timed run
would install omp anew. One untimed omp import of an empty home first installs omp if needed and
warms bun's transpiler cache.

Timed, each run into a fresh agent dir (and, for us, a fresh ledger), as whole processes, after an
untimed ``sync`` and an untimed read of the whole corpus (the order of the two contenders turns
each round); every run's output is kept until the end, so no run creates its files just after
another run's were deleted (ext4 then looks past each recently freed inode: up to twice the
system time, whoever runs next):

* ``omp``: ``omp-reference import claude --no-views``: omp 18.2.3's ``ClaudeSessionStore.list()``
  then ``persistForeignSession`` of every session, one bun process (plus its start-up);
* ``ours``: ``omp-session import claude --all`` (listing, conversion, ledger, report), with
  ``OMP_SESSION_WORKERS=N`` when ``--workers N`` is given (else its default: two processes where
  two CPUs are free to use).

Printed: median wall and CPU (user + system, children included) time of each, ours/omp (wall),
and peak memory: ``ru_maxrss`` (the largest single process) and the peak of the whole process
tree's resident memory summed (sampled every 20 ms from /proc, on Linux; this is the figure the
200 MB bound is about, as our import runs in more than one process).
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference"


def _tree_rss_kb(root: int) -> int:
    """The resident memory (KiB) of ``root`` and all its descendants, from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        parents[int(name)] = int(fields[1])
        rss[int(name)] = int(fields[21]) * (os.sysconf("SC_PAGESIZE") // 1024)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


def _warm(home: Path) -> None:
    """Read every file under ``home`` (untimed), so that no contender reads the corpus from disk."""
    for p in sorted(home.rglob("*")):
        if p.is_file():
            with p.open("rb") as f:
                while f.read(1 << 24):
                    pass


class _TreeSampler(threading.Thread):
    """Samples the process tree of ``pid`` every 20 ms until told to stop; ``peak_kb`` is its peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kb = 0
        self.done = threading.Event()

    def run(self) -> None:
        if not os.path.isdir("/proc"):
            return
        while not self.done.wait(0.02):
            self.peak_kb = max(self.peak_kb, _tree_rss_kb(self.pid))


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, int, int]:
    """(wall seconds, CPU seconds (user + system, children included), peak RSS in MB of the largest
    process, peak RSS in MB of the whole process tree, exit status)."""
    # stderr to a file, not a pipe: a child that says more than a pipe holds would block until wait4 returns
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors)
        sampler = _TreeSampler(proc.pid)
        sampler.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        sampler.done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        if status:
            errors.seek(0)
            print(errors.read().decode(errors="replace")[-2000:], file=sys.stderr)
    cpu = usage.ru_utime + usage.ru_stime  # wait4: the child and the children it waited for
    return elapsed, cpu, usage.ru_maxrss // 1024, sampler.peak_kb // 1024, os.waitstatus_to_exitcode(status)


def _corpus(args: argparse.Namespace, base: Path) -> Path:
    """The stand-in home: generated into ``--corpus`` (kept, reused when made with the same options)
    or into ``base``."""
    home = Path(args.corpus).resolve() if args.corpus else base / "home"
    made_with = json.dumps({"sessions": args.sessions, "seed": args.seed, "small": args.small,
                            "mb": args.mb_per_session})
    marker = home / ".bench-corpus"
    if marker.exists() and marker.read_text() == made_with:
        return home
    if home.exists():
        if args.corpus and not marker.exists() and any(home.iterdir()):
            raise SystemExit(f"{home}: not empty and not a corpus this benchmark made; name another folder")
        shutil.rmtree(home)
    gen = [sys.executable, str(REFERENCE / "gen_foreign.py"), "--seed", str(args.seed), "--claude",
           str(args.sessions), "--codex", "0", "--out", str(home)] + (["--small"] if args.small else []) + (
               ["--claude-mb", str(args.mb_per_session)] if args.mb_per_session else [])
    subprocess.run(gen, check=True)
    marker.write_text(made_with)
    return home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="no 500 KB+ tool outputs")
    parser.add_argument("--mb-per-session", type=float, default=0.0,
                        help="grow each session to about this many MiB (0: as generated, about 80 KB)")
    parser.add_argument("--corpus", help="generate the stand-in home here and keep it (reused by a later run)")
    parser.add_argument("--workers", type=int, help="OMP_SESSION_WORKERS for our import (default: its own)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ompimportbench"))
    try:
        here = base / "here"
        here.mkdir(parents=True)
        home = _corpus(args, base)
        size = sum(p.stat().st_size for p in (home / ".claude").rglob("*.jsonl"))
        print(f"{args.sessions} Claude Code sessions, {size / 2**20:.1f} MiB", file=sys.stderr)
        env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_SESSION_DIR",
                                                                 "PYTHONDONTWRITEBYTECODE", "OMP_SESSION_WORKERS")}
        env["HOME"] = str(home)
        env["OMP_REFERENCE_HOME"] = os.environ.get("OMP_REFERENCE_HOME") or str(
            Path.home() / ".cache" / "omp-session-reference")
        empty = base / "empty-home"
        empty.mkdir()
        *_, code = _timed([str(REFERENCE / "omp-reference"), "import", "claude", "--home", str(empty),
                           "--agent-dir", str(base / "agent-warm-up"), "--cwd", str(here), "--no-views"],
                          {**env, "HOME": str(empty)}, here)
        if code:
            raise SystemExit(f"omp's warm-up import exited with {code}")
        results: dict[str, list[tuple[float, float, int, int]]] = {"omp": [], "ours": []}
        for run in range(args.runs):
            # the order turns each round, and every run starts with the corpus in the page cache
            # (this machine's DAMON reclaim evicts pages left cold for a while: a first run could
            # read the corpus from disk and the next one from memory)
            for who in ("omp", "ours") if run % 2 == 0 else ("ours", "omp"):
                _warm(home)
                agent = base / f"agent-{who}-{run}"
                run_env = {**env, "PI_CODING_AGENT_DIR": str(agent), "XDG_CACHE_HOME": str(base / f"cache-{run}")}
                if who == "omp":
                    cmd = [str(REFERENCE / "omp-reference"), "import", "claude", "--home", str(home), "--agent-dir",
                           str(agent), "--cwd", str(here), "--no-views"]
                else:
                    cmd = [str(ROOT / ".venv" / "bin" / "omp-session"), "import", "claude", "--all"]
                    if args.workers:
                        run_env["OMP_SESSION_WORKERS"] = str(args.workers)
                seconds, cpu, rss, tree, code = _timed(cmd, run_env, here)
                if code not in ((0,) if who == "omp" else (0, 1)):  # ours: 1 when some sources fail
                    raise SystemExit(f"{who} exited with {code}")
                made = sum(1 for _ in (agent / "sessions").rglob("*.jsonl"))
                print(f"run {run + 1}/{args.runs} {who}: {seconds:.2f} s ({cpu:.2f} s CPU), peak RSS {rss} MB "
                      f"(process tree {tree} MB), {made} sessions written", file=sys.stderr)
                results[who].append((seconds, cpu, rss, tree))
                # Each run's output stays until the end: ext4 skips inodes freed in the last minute (up
                # to six while their table is unwritten) when it allocates new ones, so a run started
                # just after deleting the previous run's files spent up to twice the system time on
                # creating its own. And every run starts with no dirty page of another run to write back.
                os.sync()
        omp_t = statistics.median(r[0] for r in results["omp"])
        ours_t = statistics.median(r[0] for r in results["ours"])
        # CPU time too: on a shared machine the wall time of ours and multi-threaded bun suffer
        # differently from the other load
        report = {"sessions": args.sessions, "bytes": size, "omp_s": omp_t, "ours_s": ours_t, "ratio": ours_t / omp_t,
                  "omp_cpu_s": statistics.median(r[1] for r in results["omp"]),
                  "ours_cpu_s": statistics.median(r[1] for r in results["ours"]),
                  "omp_peak_rss_mb": max(r[2] for r in results["omp"]),
                  "ours_peak_rss_mb": max(r[2] for r in results["ours"]),
                  "omp_peak_tree_rss_mb": max(r[3] for r in results["omp"]),
                  "ours_peak_tree_rss_mb": max(r[3] for r in results["ours"])}
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print(f"| contender | median s | median CPU s | peak RSS MB (largest process) | peak RSS MB (process tree) |\n"
                  f"| --- | --- | --- | --- | --- |\n"
                  f"| omp 18.2.3 importer | {omp_t:.2f} | {report['omp_cpu_s']:.2f} | {report['omp_peak_rss_mb']} | "
                  f"{report['omp_peak_tree_rss_mb']} |\n"
                  f"| omp-session import | {ours_t:.2f} | {report['ours_cpu_s']:.2f} | {report['ours_peak_rss_mb']} | "
                  f"{report['ours_peak_tree_rss_mb']} |\n"
                  f"ours/omp = {report['ratio']:.2f}x on {args.sessions} sessions ({size / 2**20:.1f} MiB)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
