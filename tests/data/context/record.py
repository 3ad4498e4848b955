#!/usr/bin/env python3
"""Re-create the context golden data: inputs (hand-written + generated) and the oracle's answers.

    python3 tests/data/context/record.py [--oracle DIR]

Writes ``inputs/<name>.jsonl``, ``expected/<name>.json`` and the blob store
``blobs/`` (given to omp with ``--blobs``) next to this script, removing stale
files, and ``jsdate_vectors.json`` (Bun's Date results). Each expected file holds what omp 18.2.3 derives from
the input: ``context`` (``buildSessionContext()``), ``transcript``
(``{transcript:true}``), ``usage`` (``getUsageStatistics()``), ``view_errors``
for those three, ``error`` when ``open`` threw, and ``runs``: the results of
``buildSessionContext`` with the option sets in ``RUN_OPTIONS`` (oracle ``run``
scripts), each ``{"result": ..., "error": ...}``.

Generated inputs come from ``gen_sessions.py`` with fixed seeds; a generated
file is kept only if the tests' strict loader reads it as the same entries omp
holds (so the golden test exercises this module, not the lenient reader), and
only if it is small. Needs only the standard library and the oracle.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402

RUN_OPTIONS: dict[str, dict[str, bool]] = {
    "collapsed": {"transcript": True, "collapseCompactedHistory": True},
    "keep_dangling": {"transcript": True, "keepDanglingToolCalls": True},
    "collapsed_keep_dangling": {"transcript": True, "collapseCompactedHistory": True, "keepDanglingToolCalls": True},
    "llm_collapse_flag": {"collapseCompactedHistory": True, "keepDanglingToolCalls": True},
}
GENERATED: list[tuple[int, int, str]] = [
    # (seed, count, kinds): small batches so every kind is represented
    (101, 30, "v3_compaction,v3_branched,v3_misc,v3_custom,v3_mixed"),
    (102, 12, "v1,v2"),
    (103, 36, "dmg_malformed,dmg_blank,dmg_truncated,dmg_dup_ids,dmg_missing_parent,dmg_cycle,dmg_nonobject,"
              "dmg_bom,dmg_unknown,dmg_header,dmg_encoding,dmg_entry_shape"),
]
MAX_GENERATED_BYTES = 40_000
JSDATE_SEEDS = (1, 2)
JSDATE_FUZZ_COUNT = 2500


def strict_records(data: bytes) -> list[Any] | None:
    """The tests' strict loader: one json.loads per non-blank line, title slot skipped.

    Returns None when a line does not parse (omp's lenient reader would differ).
    """
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[0].startswith('{"type":"title"'):
        lines = lines[1:]
    records = []
    for line in lines:
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            return None
    return records


def write_case(name: str, builder: cases.S, directory: Path) -> Path:
    path = directory / f"{name}.jsonl"
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for record in builder.records:
            line = record if isinstance(record, str) else json.dumps(record, ensure_ascii=False,
                                                                     separators=(",", ":"))
            out.write(line + "\n")
    return path


def oracle(oracle_dir: Path, mode: str, paths: list[Path]) -> list[dict[str, Any]]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write("\n".join(str(p) for p in paths) + "\n")
    try:
        proc = subprocess.run([str(oracle_dir / "omp-reference"), mode, "--jobs", "2", "--timeout", "10",
                               "--blobs", str(HERE / "blobs"), "--list", listing.name],
                              capture_output=True, text=True, check=True)
    finally:
        os.unlink(listing.name)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def comparable_entries(records: list[Any]) -> list[Any]:
    return json.loads(json.dumps(records[1:], allow_nan=True).replace("Infinity", "null"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", default=os.environ.get("OMP_ORACLE_DIR", str(HERE.parents[2] / "reference")))
    args = parser.parse_args()
    oracle_dir = Path(args.oracle)
    inputs, expected, blobs = HERE / "inputs", HERE / "expected", HERE / "blobs"
    for directory in (inputs, expected, blobs):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
    (blobs / cases.BLOB_SHA).write_bytes(cases.BLOB_BYTES)

    paths = [write_case(name, builder(), inputs) for name, builder in cases.CASES.items()]
    hand = set(paths)

    with tempfile.TemporaryDirectory() as tmp:
        candidates: list[Path] = []
        for seed, count, kinds in GENERATED:
            out = Path(tmp) / str(seed)
            subprocess.run([sys.executable, str(oracle_dir / "gen_sessions.py"), "--seed", str(seed), "--count",
                            str(count), "--kinds", kinds, "--out", str(out)], check=True, capture_output=True)
            for path in sorted(out.glob("*.jsonl")):
                if path.stat().st_size <= MAX_GENERATED_BYTES:
                    target = inputs / f"gen{seed}_{path.name}"
                    shutil.copyfile(path, target)
                    candidates.append(target)
        paths += candidates

    loads = {Path(rec["file"]).name: rec for rec in oracle(oracle_dir, "load", paths)}
    dropped = []
    for path in candidates:
        rec = loads[path.name]
        records = strict_records(path.read_bytes())
        ok = records is not None and rec["entries"] is not None and len(records) == len(rec["entries"]) + 1
        if ok and "_v1" not in path.name and "_v2" not in path.name:
            ok = comparable_entries(records or []) == rec["entries"]
        if not ok and rec["error"] is None:
            dropped.append(path.name)
            path.unlink()
    for path in candidates:
        error = loads[path.name]["error"]
        if path.exists() and error is not None and not error.startswith("TypeError"):
            path.unlink()  # unreadable headers etc.: nothing this module sees
    paths = [p for p in paths if p.exists()]

    with tempfile.TemporaryDirectory() as tmp:
        scripts = []
        for path in paths:
            if loads[path.name]["error"] is not None:
                continue
            script = Path(tmp) / f"{path.stem}.json"
            ops = [{"op": "buildSessionContext", "options": options} for options in RUN_OPTIONS.values()]
            script.write_text(json.dumps({"from_file": str(path), "close": False, "ops": ops}))
            scripts.append(script)
        runs = {Path(rec["file"]).stem: rec for rec in oracle(oracle_dir, "run", scripts)}

    for path in paths:
        rec = loads[path.name]
        views = ("context", "transcript", "usage")
        result: dict[str, Any] = {
            "input": path.name,
            "hand_written": path in hand,
            "error": rec["error"],
            "view_errors": {k: v for k, v in rec["view_errors"].items() if k in views},
        }
        for view in views:
            result[view] = rec[view]
        run = runs.get(path.stem)
        if run is not None:
            result["runs"] = {name: {"result": step["result"], "error": step["error"]}
                              for name, step in zip(RUN_OPTIONS, run["steps"], strict=True)}
        (expected / f"{path.stem}.json").write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n",
                                                   encoding="utf-8")
    print(f"recorded {len(paths)} inputs ({len(hand)} hand-written); dropped {len(dropped)} generated files "
          f"the strict loader reads differently: {', '.join(dropped) or '-'}")


# ---------------------------------------------------------------------------
# jsdate vectors: Date.parse / new Date(x).getTime() / toISOString as Bun computes them

_DATE_ATOMS = ["2026", "-", "01", "12", "31", "T", "00", ":", "59", "60", "24", ".", "123", "1", "5", "Z", "z",
               "+", "01:00", "0100", "  ", " ", "Jan", "january", "FEB", "pm", "AM", "UTC", "GMT", "PST", "est",
               "(x)", "(", "(a(b)c)", ")", "/", "2", "13", "99", "49", "50", "100", "1970", "000000", "+002026",
               "-000001", "275760", "9", "1234567890123", "t", "x", "foo", "\u00a0", "\t", "\n", ",", "Sat,",
               "\u0000", "ut", "ma", "1e3", "0", "07", "30", "29", "02", "2024", "\u2028", "\u3000", "\ufeff",
               "\x1c", "\x0b", "\u0100", "é", "\U0001F600", "::", "-0800", "+05:30", "GMT+0100", "GMT-8", "+1",
               "-12", "12345", "0123456789012", "99999999999", "596524:", "1193047:", "T24:00", "10:20:30."]
_DATE_FIXED = [
    "2026-01-01T00:00:00.000Z", "2026-01-01", "2026-01", "2026", "2026-01-01T00:00", "2026-01-01T00:00:00",
    "2026-01-01T00:00:00.1", "2026-01-01T00:00:00.1234Z", "2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00+0100",
    "2026-01-01 00:00:00", "2026-01-01T24:00:00Z", "2026-01-01T24:00:01Z", "+002026-01-01T00:00:00Z",
    "-000001-01-01T00:00:00Z", "-000000-01-01T00:00:00Z", "2026-13-45T99:99:99Z", "2026-02-30T00:00:00Z",
    "not a date", "", "0", "1", "12", "123", "-1", "2026/01/01", "Jan 1 2026", "1 Jan 2026 10:00 GMT+0100",
    "Thu, 01 Jan 2026 00:00:00 GMT", "2026-01-01t00:00:00z", " 2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z ",
    "+275760-09-13T00:00:00.000Z", "+275760-09-13T00:00:00.001Z", "-271821-04-20T00:00:00.000Z",
    "-271821-04-19T23:59:59.999Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "2026-01-01T00:00:60Z",
    "2026-01-01 10:00 PM", "2026-01-01 12:30 am", "13:00 PM 2026-01-01", "1/2/3", "foo 2026", "2026-01-01 UTC",
    "Thu Jan 01 2026 00:00:00 GMT+0000 (Coordinated Universal Time)", "2026-01-01\u0000junk", "1000000000",
    "Jan 1 275760", "Jan 1 275761", "2026-01-01T00:00:00.99999999999999999999Z", "2026-03-01 10:00:00",
    "10:20\x0b2026-01-01", "\u300010:20\x0b2026-01-01", "2026 GMT+010060123:", "2026 GMT+596524:",
    "2026-01-01T00:00:00.0123456789012Z", "Jan 1 0000000002026",
]


def _date_inputs() -> list[str]:
    import random

    out = list(_DATE_FIXED)
    for seed in JSDATE_SEEDS:
        rng = random.Random(seed)
        for _ in range(JSDATE_FUZZ_COUNT):
            out.append("".join(rng.choice(_DATE_ATOMS) for _ in range(rng.randint(1, 8))))
    return out


_BUN_SCRIPT = r"""
const fs = require("fs");
const inp = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const num = v => (Number.isNaN(v) ? null : v);
const iso = ms => { try { return new Date(ms).toISOString(); } catch (e) { return null; } };
fs.writeFileSync(process.argv[3], JSON.stringify({
  parse: inp.strings.map(s => [s, num(Date.parse(s))]),
  new_date: inp.values.map(v => [v, num(new Date(v).getTime())]),
  iso: inp.ms.map(m => [m, iso(m)]),
}));
"""


def record_jsdate(oracle_home: Path) -> None:
    bun = oracle_home / "node_modules" / "bun" / "bin" / "bun.exe"
    values = [None, True, False, 0, -1.7, 1.7, 1_772_366_400_123, 8.64e15, 8.64e15 + 1, -8.64e15, 1e300,
              "2026-01-01T00:00:00Z", [2020], [2020, 1], [], {}, {"a": 1}, [None], ["2026-01-02"], "", "42"]
    ms = [0, -1, 1_772_366_400_123, -62198755200000, 253402300799999, 253402300800000, 8.64e15, -8.64e15,
          -8.64e15 - 1, 8.64e15 + 1, 1.5, -1.5, -62167219200001]
    with tempfile.TemporaryDirectory() as tmp:
        script, inp, out = Path(tmp) / "d.js", Path(tmp) / "in.json", Path(tmp) / "out.json"
        script.write_text(_BUN_SCRIPT)
        inp.write_text(json.dumps({"strings": _date_inputs(), "values": values, "ms": ms}))
        subprocess.run([str(bun), str(script), str(inp), str(out)], check=True, env={**os.environ, "TZ": "UTC"})
        data = json.loads(out.read_text())
    lines = []
    for i, (section, rows) in enumerate(data.items()):
        body = ",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in rows)
        lines.append(f" {json.dumps(section)}: [\n{body}\n ]" + ("," if i < len(data) - 1 else ""))
    (HERE / "jsdate_vectors.json").write_text("{\n" + "\n".join(lines) + "\n}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
    record_jsdate(Path(os.environ.get("OMP_ORACLE_HOME", Path.home() / ".cache" / "omp-session-reference" / "18.2.3")))
