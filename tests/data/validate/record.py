"""Regenerates ``oracle.json``: what the real omp 18.2.3 does with each input of this folder.

    python tests/data/validate/record.py [--oracle PATH/omp-oracle]

For each file it keeps only what the validator's "what omp does" claims are about: whether
``open`` throws, which views throw, whether ``getTree()`` hangs, and whether the flush/close
(omp's rewrite) fails. ``tests/test_validate.py`` compares the validator's errors with it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = HERE.parents[2] / "reference" / "omp-reference"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--oracle", default=str(ORACLE))
    args = parser.parse_args()
    files = sorted(HERE.glob("*.jsonl"))
    out = subprocess.run([args.oracle, "load", "--timeout", "5", "--blobs", str(HERE / "blobs"),
                          *map(str, files)], check=True, capture_output=True, text=True).stdout
    golden = {}
    for text in out.splitlines():
        rec = json.loads(text)
        errors = rec["view_errors"] or {}
        golden[Path(rec["file"]).name] = {
            "open_error": rec["error"] if rec["error_stage"] == "open" else None,
            "view_errors": sorted(k for k in errors if k not in ("flush", "close", "tree")),
            "tree_hangs": "OracleTimeout" in str(errors.get("tree", "")),
            "rewrite_fails": any("SessionWriteConflictError" in str(errors.get(k, "")) for k in ("flush", "close")),
            "malformed_records": (rec["loader"] or {}).get("malformed_records"),
        }
    (HERE / "oracle.json").write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
