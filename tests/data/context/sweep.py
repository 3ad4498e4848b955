#!/usr/bin/env python3
"""Differential sweep: our context/transcript/usage (and option variants) vs the live oracle.

    .venv/bin/python tests/data/context/sweep.py --seed 11 --count 300 [--kinds v3] [--runs]

Generates files with gen_sessions.py, loads them with the oracle, and feeds the
entries omp holds (the oracle's ``entries``) to build_session_context /
usage_statistics; with ``--runs`` also compares the collapsed / keep-dangling
transcripts through oracle ``run`` scripts. Prints each mismatch and a count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for the comparison helpers

from test_context import OPTION_KWARGS, differences, jsonable  # noqa: E402

from omp_session.model.context import (  # noqa: E402
    ContextError,
    build_id_index,
    build_session_context,
    leaf_after_load,
    usage_statistics,
)

V3_KINDS = "v3_linear,v3_branched,v3_compaction,v3_labels,v3_custom,v3_title,v3_misc,v3_mixed"


def compare(entries: list[Any], expected: Any, error: str | None, **kwargs: Any) -> list[str]:
    try:
        ours = jsonable(build_session_context(entries, leaf_after_load(entries), build_id_index(entries), **kwargs))
    except ContextError as exc:
        return [] if error else [f"we raised {exc}"]
    return [f"omp threw {error}"] if error else differences(ours, expected)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--kinds", default="v3", help='"v3" (all v3_* kinds) or a gen_sessions --kinds value')
    parser.add_argument("--runs", action="store_true", help="also compare option variants via run scripts")
    parser.add_argument("--oracle", default=os.environ.get("OMP_ORACLE_DIR", str(HERE.parents[2] / "reference")))
    args = parser.parse_args()
    oracle = Path(args.oracle)
    kinds = V3_KINDS if args.kinds == "v3" else args.kinds
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gen"
        subprocess.run([sys.executable, str(oracle / "gen_sessions.py"), "--seed", str(args.seed), "--count",
                        str(args.count), "--kinds", kinds, "--out", str(out)], check=True, capture_output=True)
        files = sorted(out.glob("*.jsonl"))
        blobs = ["--blobs", str(out / "blobs")] if (out / "blobs").is_dir() else []
        listing = Path(tmp) / "list.txt"
        listing.write_text("\n".join(map(str, files)))
        load = subprocess.run([str(oracle / "omp-reference"), "load", "--jobs", "2", "--timeout", "10", *blobs,
                               "--list", str(listing)], check=True, capture_output=True, text=True)
        records = [json.loads(line) for line in load.stdout.splitlines()]
        runs: dict[str, Any] = {}
        if args.runs:
            scripts = []
            for rec in records:
                if rec["error"] is None:
                    script = Path(tmp) / f"{Path(rec['file']).stem}.json"
                    ops = [{"op": "buildSessionContext", "options": {
                        {"collapse_compacted_history": "collapseCompactedHistory",
                         "keep_dangling_tool_calls": "keepDanglingToolCalls"}.get(k, k): v
                        for k, v in kw.items()}} for kw in OPTION_KWARGS.values()]
                    script.write_text(json.dumps({"from_file": rec["file"], "close": False, "ops": ops}))
                    scripts.append(str(script))
            listing.write_text("\n".join(scripts))
            run = subprocess.run([str(oracle / "omp-reference"), "run", "--jobs", "2", "--timeout", "10", *blobs,
                                  "--list", str(listing)], check=True, capture_output=True, text=True)
            runs = {Path(r["file"]).stem: r for r in map(json.loads, run.stdout.splitlines())}

    checked = matched = 0
    for rec in records:
        name = Path(rec["file"]).name
        if rec["error"] is not None:
            continue
        checked += 1
        entries = rec["entries"]
        problems = [f"context: {d}" for d in compare(entries, rec["context"], rec["view_errors"].get("context"))]
        problems += [f"transcript: {d}" for d in compare(entries, rec["transcript"],
                                                         rec["view_errors"].get("transcript"), transcript=True)]
        try:
            problems += [f"usage: {d}" for d in differences(jsonable(usage_statistics(entries)), rec["usage"])]
        except ContextError as exc:
            problems.append(f"usage raised {exc}")
        run = runs.get(Path(name).stem)
        if run is not None and len(run["steps"]) != len(OPTION_KWARGS):
            problems.append(f"oracle run incomplete: {run['error']}")
        elif run is not None:
            for (label, kwargs), step in zip(OPTION_KWARGS.items(), run["steps"], strict=True):
                problems += [f"{label}: {d}" for d in compare(entries, step["result"], step["error"], **kwargs)]
        if problems:
            print(name, *problems[:6], sep="\n    ")
        else:
            matched += 1
    print(f"{matched}/{checked} files match ({len(records) - checked} not openable by omp, not compared)")


if __name__ == "__main__":
    main()
