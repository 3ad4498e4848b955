"""Benchmark: what a command costs before and around its work, as whole processes (issue 14).

    python bench/startup.py [--runs 15] [--n 2000] [--json]

Every contender is a fresh process, timed from fork to exit by the parent; contenders run
round-robin so that machine noise spreads over all of them; medians are printed with the ratio to
the floor ``python -c pass`` (and, for ``list``, to omp's own listing as a whole Bun process):

* ``pass``        ``python -c pass`` (the floor every Python tool pays)
* ``import``      ``python -c "import omp_session"``                (target <= 2x pass)
* ``version``     ``omp-session --version``                          (target <= 4x pass)
* ``help``        ``omp-session --help``                             (target <= 4x pass)
* ``show``/``tree``/``context``  of the bundled sample session       (target <= 5x pass)
* ``list``        ``omp-session list --all --json`` over the ``bench/list.py`` root of N
                  sessions, warm listing cache                       (target <= 0.12x omp)
* ``omp-list``    omp's ``SessionManager.listAll()`` under Bun (bench/omp_list.ts), whole process

It also prints how many of our modules (``omp_session*``) each command imports, counted in a
separate untimed run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from list import build_root, warm_pages
from open_context import BUN, isolated_env

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "src" / "omp_session" / "samples" / "sample.jsonl"
PY = sys.executable
SCRIPT = str(Path(PY).with_name("omp-session"))  # the console script a user runs

# name -> (command after the interpreter or script, target ratio, against)
TARGETS: dict[str, tuple[float, str]] = {
    "import": (2.0, "pass"), "version": (4.0, "pass"), "help": (4.0, "pass"),
    "show": (5.0, "pass"), "tree": (5.0, "pass"), "context": (5.0, "pass"), "list": (0.12, "omp-list"),
}
COUNT_MODULES = ("import atexit, sys\n"
                 "atexit.register(lambda: print('MODULES', sum(m == 'omp_session' or m.startswith('omp_session.')"
                 " for m in sys.modules), file=sys.stderr))\n")


def commands(root: Path | None) -> dict[str, list[str]]:
    cmds = {
        "pass": [PY, "-c", "pass"],
        "import": [PY, "-c", "import omp_session"],
        "version": [SCRIPT, "--version"],
        "help": [SCRIPT, "--help"],
        "show": [SCRIPT, "show", str(SAMPLE)],
        "tree": [SCRIPT, "tree", str(SAMPLE)],
        "context": [SCRIPT, "context", str(SAMPLE)],
    }
    if root is not None:
        cmds["list"] = [SCRIPT, "list", "--all", "--json", "--root", str(root)]
        if BUN.exists():
            cmds["omp-list"] = [str(BUN), "--no-install", str(HERE / "omp_list.ts")]
    return cmds


def module_count(name: str, cmd: list[str], env: dict[str, str], cwd: Path) -> int | None:
    """Our modules the command imports (the console script's work, replayed under ``-c``)."""
    if name in ("pass", "omp-list"):
        return None
    if name == "import":
        code = COUNT_MODULES + "import omp_session\n"
    else:
        code = COUNT_MODULES + f"sys.argv = {['omp-session', *cmd[1:]]!r}\nfrom omp_session.cli import main\nmain()\n"
    out = subprocess.run([PY, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    for line in out.stderr.splitlines():
        if line.startswith("MODULES "):
            return int(line.split()[1])
    raise SystemExit(f"{name}: no module count\n{out.stderr[-2000:]}")


def time_one(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="timed runs per contender (median reported)")
    ap.add_argument("--n", type=int, default=2000, help="sessions in the list root (0: skip list)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    a = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-startup-"))
    try:
        if a.n:
            base = build_root(a.n, a.seed)
            home = base / "home"
            root: Path | None = home / ".omp" / "agent" / "sessions"
            assert root is not None
            warm_pages(root)
        else:
            home, root = scratch / "home", None
            home.mkdir()
        env = isolated_env(home)
        env["XDG_CACHE_HOME"] = str(scratch / "cache")  # list's cache: warmed below, then reused
        # An installed package runs from bytecode (pip compiles it); the untimed warm-up writes it here
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cmds = commands(root)
        for cmd in cmds.values():  # untimed: warms the page cache and the listing cache
            time_one(cmd, env, scratch)
        counts = {name: module_count(name, cmd, env, scratch) for name, cmd in cmds.items()}
        walls: dict[str, list[float]] = {name: [] for name in cmds}
        for i in range(a.runs):
            for name, cmd in cmds.items():
                walls[name].append(time_one(cmd, env, scratch))
            print(f"run {i + 1}/{a.runs}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    med = {name: statistics.median(ws) for name, ws in walls.items()}
    report: dict[str, Any] = {"runs": a.runs, "n": a.n, "median_ms": {k: v * 1000 for k, v in med.items()},
                              "modules": counts, "targets": {}}
    print(f"\nwhole processes, median of {a.runs} runs (list: {a.n} sessions, warm cache)")
    print(f"{'command':<10}{'ms':>7}{'x pass':>8}{'x target':>10}{'limit':>7}{'modules':>9}")
    for name in cmds:
        x_pass = med[name] / med["pass"]
        target = TARGETS.get(name)
        ratio = limit = None
        if target is not None and target[1] in med:
            limit, against = target
            ratio = med[name] / med[against]
        verdict = "" if ratio is None else ("PASS" if ratio <= (limit or 0) else "FAIL")
        mods = "" if counts[name] is None else str(counts[name])
        print(f"{name:<10}{med[name] * 1000:>7.0f}{x_pass:>8.2f}{'' if ratio is None else f'{ratio:.3f}':>10}"
              f"{'' if limit is None else f'{limit:g}':>7}{mods:>9} {verdict}")
        if ratio is not None:
            report["targets"][name] = {"ratio": ratio, "limit": limit, "against": TARGETS[name][1]}
    if a.json:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
