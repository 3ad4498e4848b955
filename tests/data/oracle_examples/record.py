#!/usr/bin/env python3
"""Record the real omp's `load` output for the oracle's example files (golden data).

    python tests/data/oracle_examples/record.py [--oracle DIR]

Writes one `<example>.oracle.json` per example `*.jsonl` in this folder (omp's `load` record)
and per `run_*.json` script (omp's `run` record) next to this script and copies the inputs beside
it, so the golden tests run without the oracle.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = Path(os.environ.get("OMP_ORACLE_DIR", HERE.parents[2] / "tests" / "reference"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--oracle", type=Path, default=DEFAULT)
    args = parser.parse_args()
    inputs = sorted((args.oracle / "examples").glob("*.jsonl"))
    for src in inputs:
        shutil.copyfile(src, HERE / src.name)
    out = subprocess.run([str(args.oracle / "omp-reference"), "load", "--timeout", "5",
                          *[str(HERE / p.name) for p in inputs]], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        rec = json.loads(line)
        name = Path(rec["file"]).name
        rec["file"] = name
        (HERE / (name.removesuffix(".jsonl") + ".oracle.json")).write_text(json.dumps(rec, indent=1) + "\n")
    scripts = sorted((args.oracle / "examples").glob("run_*.json"))
    for src in scripts:
        shutil.copyfile(src, HERE / src.name)
    out = subprocess.run([str(args.oracle / "omp-reference"), "run", *[str(HERE / p.name) for p in scripts]],
                         check=True, capture_output=True, text=True).stdout
    for line in out.split("\n"):
        if not line.strip():
            continue
        rec = json.loads(line)
        name = Path(rec["file"]).name
        rec["file"] = name
        (HERE / (name.removesuffix(".json") + ".oracle.json")).write_text(json.dumps(rec, indent=1) + "\n")
    print(f"recorded {len(inputs)} examples and {len(scripts)} scripts")


if __name__ == "__main__":
    main()
