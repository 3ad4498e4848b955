#!/usr/bin/env python3
"""Re-create the bundled sample session with the real omp (through ../shared/oracle).

    python samples/make_sample.py [--oracle DIR]

Runs sample_script.json in omp 18.2.3 and writes the session file omp produced to
src/omp_session/samples/sample.jsonl, so the sample was written by omp itself.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE.parent / "src" / "omp_session" / "samples" / "sample.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--oracle", type=Path, default=HERE.parents[1] / "shared" / "oracle")
    args = parser.parse_args()
    out = subprocess.run([str(args.oracle / "omp-oracle"), "run", str(HERE / "sample_script.json")],
                         check=True, capture_output=True, text=True).stdout
    record = json.loads(out)
    failed = [s for s in record["steps"] if s["error"]]
    if record["error"] or failed:
        print(f"omp refused the script: {record['error'] or failed}", file=sys.stderr)
        return 1
    text = record["files"][0]["text"]
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET} ({len(text.encode())} bytes, {text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
