#!/usr/bin/env python3
"""The long fuzz campaign (``./dev fuzz``): mutated omp files through ``open``, every view and
every CLI read command; each new distinct failure is minimised and saved under tests/data/fuzz/.

    python tests/fuzz/run.py [--cases 100000] [--cli-cases 2000] [--seed N ...] [--timeout 5] [--jobs 1]
    python tests/fuzz/run.py --show SEED:CASE -o case.jsonl    # write one case's bytes to look at

Seeds are printed (a random one when none is given); the same seed gives the same cases on the
same seed files. docs/fuzz.md has the details and the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz import campaign
from fuzz.mutate import Seed, make_case
from fuzz.views import Failure

_SEEDS: list[Seed] = []
_WORK: Path = Path()


def _init(seeds: list[Seed], work: str) -> None:
    global _SEEDS, _WORK
    _SEEDS, _WORK = seeds, Path(tempfile.mkdtemp(dir=work))


def _chunk(kind: str, seed: int, start: int, stop: int, timeout: float, ref: campaign.Reference | None
           ) -> campaign.Run:
    if kind == "cli":
        return campaign.run_cli_cases(_SEEDS, seed, range(start, stop), _WORK, timeout)
    return campaign.run_cases(_SEEDS, seed, range(start, stop), _WORK, timeout, ref)


def _campaign(kind: str, seeds: list[Seed], runs: list[tuple[int, int]], work: Path, timeout: float, jobs: int,
              ref: campaign.Reference | None, chunk: int) -> campaign.Run:
    total = campaign.Run()
    started = time.monotonic()
    todo = [(s, a, min(a + chunk, n)) for s, n in runs for a in range(0, n, chunk)]
    while todo:
        with ProcessPoolExecutor(jobs, initializer=_init, initargs=(seeds, str(work))) as pool:
            futures: list[tuple[tuple[int, int, int], Future[campaign.Run]]] = [
                (t, pool.submit(_chunk, kind, *t, timeout, ref)) for t in todo]
            todo = []
            for t, fut in futures:
                try:
                    part = fut.result()
                    for sig, f in part.found.items():
                        if sig not in total.found:
                            print(f"  new: {sig} (seed {f.case['seed']} case {f.case['case']}: {f.case['mutations']})",
                                  flush=True)
                    total.merge(part)
                except BrokenProcessPool:
                    # a worker died (a crash in C code, or the OOM killer): say which chunk, go on
                    seed, a, b = t
                    crash = Failure(f"{kind} chunk", "worker died", "", f"seed {seed} cases {a}..{b - 1}")
                    total.found.setdefault(crash.signature, campaign.Found(
                        crash, {"seed": seed, "case": a, "source": "", "mutations": []}, b""))
                    todo = [t2 for t2, f2 in futures if not f2.done()]
                    break
                elapsed = time.monotonic() - started
                print(f"  {kind}: {total.cases} cases, {total.cases / elapsed:.1f}/s wall, "
                      f"{len(total.found)} distinct failures", flush=True)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=100_000, help="library cases in all (split over the seeds)")
    ap.add_argument("--cli-cases", type=int, default=2_000, help="files through every CLI read command")
    ap.add_argument("--seed", type=int, action="append", help="run seed (repeatable; default: one random)")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds one call may take before it is 'slow'")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--corpus", type=int, default=100, help="gen_sessions.py files among the seeds")
    ap.add_argument("--large", default="1M,4M", help="gen_large.py sizes among the seeds ('' for none)")
    ap.add_argument("--save", type=Path, default=campaign.DATA, help="where new failures are saved")
    ap.add_argument("--no-save", action="store_true", help="only report")
    ap.add_argument("--show", metavar="SEED:CASE", help="write that case's bytes to -o and exit")
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="omp-fuzz-"))
    # omp's agent dir and our caches go to the temp folder: the campaign never touches ~/.omp
    os.environ["PI_CODING_AGENT_DIR"] = str(work / "agent")
    os.environ["XDG_CACHE_HOME"] = str(work / "cache")
    paths = campaign.golden_paths() + campaign.generated_paths(work / "corpus", 1, args.corpus)
    if args.large:
        paths += campaign.large_paths(work / "large", args.large.split(","))
    seeds = campaign.seeds_from(paths)
    # what --show needs to make the same case again
    seed_files = f"golden + gen_sessions seed 1 x{args.corpus}" + (f" + gen_large {args.large}" if args.large else "")
    if args.show:
        seed, _, number = args.show.partition(":")
        case = make_case(seeds, int(seed), int(number))
        print(json.dumps(case.describe()))
        if args.output:
            args.output.write_bytes(case.data)
        return 0

    run_seeds = args.seed or [random.randrange(1 << 31)]
    print(f"fuzz: {len(seeds)} seed files, run seeds {run_seeds}, timeout {args.timeout} s per call, "
          f"{args.jobs} job(s), work {work}", flush=True)
    ref = campaign.calibrate(seeds, work, args.timeout)
    print(f"fuzz: clean reference {ref.fixed * 1000:.1f} ms + {ref.per_byte * 1e9:.1f} ns/byte", flush=True)

    def split(n: int) -> list[tuple[int, int]]:
        return [(s, n // len(run_seeds) + (i < n % len(run_seeds))) for i, s in enumerate(run_seeds)]

    lib = _campaign("views", seeds, split(args.cases), work, args.timeout, args.jobs, ref, 250)
    cli = _campaign("cli", seeds, split(args.cli_cases), work, max(args.timeout, 10.0), args.jobs, None, 25)

    known = campaign.known_failures()
    already = campaign.saved_signatures(args.save) if args.save.exists() else set()
    saved: dict[str, Path] = {}
    for sig, found in {**lib.found, **cli.found}.items():
        if args.no_save or sig in already or not found.data:
            continue
        timeout = args.timeout if not found.failure.call.startswith("cli ") else max(args.timeout, 10.0)
        saved[sig] = campaign.save_failure(found, args.save, work, timeout, seed_files=seed_files)
    print("\n".join(campaign.report_lines(lib, known, saved, "views")))
    print("\n".join(campaign.report_lines(cli, known, saved, "cli")))
    new = [s for s in {**lib.found, **cli.found} if s not in known]
    print(f"fuzz: run seeds {run_seeds}; {len(new)} failure(s) not in tests/fuzz/known_failures.json")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
