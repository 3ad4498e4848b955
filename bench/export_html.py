"""Benchmark: the HTML export of a big session, and the exported page in headless chromium (issue 6).

    .venv/bin/python bench/export_html.py                       # 100M, 3 runs: ~2 min on 2 cores
    .venv/bin/python bench/export_html.py --size 10M --runs 5 --contenders ours,read
    .venv/bin/python bench/export_html.py --json > result.json     # also: --seed S, --keep-data

Data: ``bench/gen_large.py`` (cached like bench/open_context.py: ``$OMP_BENCH_CACHE``,
default ``/tmp/omp-bench-cache/<size>-seed<S>/``), copied into a scratch folder with one user
message appended at the leaf whose text, ``zqxj-end-marker``, occurs nowhere else: the search
that must cross the whole branch.

Export, each run a fresh isolated process (bench/open_context.py's ``run_child``: temporary HOME
and agent dir with the generated blobs linked in, so image references resolve), contenders
round-robin:

* ``ours``: ``omp_session.open`` + ``render_html_bytes`` + write the page (what the CLI does);
* ``omp``: omp's own ``exportFromFile`` (``src/export/html``) under omp's Bun, writing its page;
* ``read``: floor, one ``f.read()`` of the session file.

The page, each run a fresh chromium profile (tests/browser/check_viewer.mjs): load until the
branch is painted (``paint``: navigation start to the first frame after the viewer's first
render), the end-marker search (``search end``: first search, which also extracts and caches the
entries' text, and ``again``, a repeat), stepping through the hits of a word spread over the
branch (``worktree``): ``to end`` is Prev from the first hit, which wraps to the last one at the
far end of the branch, ``next`` an ordinary step. Times are measured inside the page from the
action to the next frame. Medians over the runs; the ratios are taken per run, side by side.
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
from open_context import (
    BUN,
    DATA_DIR,
    MB,
    OMP_PKG,
    ensure_data,
    log,
    parse_size,
    round_robin,
    run_child,
    warm,
)

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "tests" / "browser" / "check_viewer.mjs"
MARKER = "zqxj-end-marker"
STEP_QUERY = "worktree"
CONTENDERS = ("ours", "omp", "read")

OMP_EXPORT_TS = """\
import * as fs from "node:fs";
import * as path from "node:path";
const [file, out] = process.argv.slice(2);
const home = process.env.OMP_ORACLE_HOME;
const { exportFromFile } = await import(
  path.join(home, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "export", "html", "index.ts"));
const t0 = performance.now();
await exportFromFile(path.resolve(file), { outputPath: out });
const seconds = (performance.now() - t0) / 1000;
const m = /^VmHWM:\\s+(\\d+) kB/m.exec(fs.readFileSync("/proc/self/status", "utf8"));
process.stdout.write(JSON.stringify({ seconds, peak_rss: m ? Number(m[1]) * 1024 : 0,
  bytes: fs.statSync(out).size }) + "\\n");
"""


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(kind: str, path: str, out: str) -> None:
    if kind == "ours":
        import omp_session
        from omp_session.ops.export.html import render_html_bytes

        t0 = time.perf_counter()
        with omp_session.open(path) as session:
            page = render_html_bytes(session)  # what the CLI writes
        with open(out, "wb") as f:
            f.write(page)
        seconds = time.perf_counter() - t0
        size = len(page)
    else:
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            size = len(f.read())
        seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "peak_rss": _peak_rss(), "bytes": size}))


def marked_copy(session: Path, scratch: Path) -> Path:
    """The session plus one user message at its leaf holding the only occurrence of MARKER."""
    import omp_session

    with omp_session.open(session) as s:
        leaf = s.get_leaf_id()
    line = {"type": "message", "id": "zqxjend1", "parentId": leaf, "timestamp": "2030-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": f"The last word: {MARKER}.", "timestamp": 1893456000000}}
    target = scratch / "session.jsonl"
    with open(session, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 24)
        dst.write(json.dumps(line).encode() + b"\n")
    return target


def run_export(kind: str, session: Path, blobs: Path, scratch: Path) -> dict[str, Any]:
    out = scratch / f"{kind}.html"
    if kind == "omp":
        script = scratch / "omp_export_html.ts"
        script.write_text(OMP_EXPORT_TS, encoding="utf-8")
        cmd = [str(BUN), "--no-install", str(script), str(session), str(out)]
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "_child", kind, str(session), str(out)]
    return run_child(kind, cmd, session, blobs, scratch)


def run_browser(page: Path, scratch: Path) -> dict[str, Any]:
    cmd = ["node", str(CHECK), str(page), str(scratch / "shot.png"), "--no-branches", "--no-filters",
           "--end-query", MARKER, "--step-query", STEP_QUERY, "--steps", "5"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"check_viewer.mjs failed on {page}:\n{proc.stderr.strip()[-3000:]}")
    shown: dict[str, Any] = json.loads(proc.stdout)
    if shown["errors"] or shown["network"]:
        raise SystemExit(f"the page reported errors or network requests: {shown['errors'] + shown['network']}")
    end, steps = shown["endSearch"], shown["steps"]
    if end["first"]["count"] != "1/1" or end["first"]["entry"] != "zqxjend1":
        raise SystemExit(f"the end-marker search did not land on the last entry: {end['first']}")
    ms = statistics.median
    return {
        "paint_ms": shown["load"]["paintMs"], "ready_ms": shown["load"]["readyMs"],
        "js_heap_mb": (shown["load"]["jsHeapBytes"] or 0) / MB,
        "script_start_ms": shown["load"]["scriptStartMs"], "data_parsed_ms": shown["load"]["dataParsedMs"],
        "search_end_ms": end["first"]["frameMs"], "search_end_again_ms": end["again"]["frameMs"],
        "step_search_ms": steps["search"]["frameMs"], "step_hits": steps["search"]["count"].split("/")[-1],
        "to_end_ms": ms(s["frameMs"] for s in steps["toEnd"]), "to_start_ms": ms(s["frameMs"] for s in steps["toStart"]),
        "next_ms": ms(s["frameMs"] for s in steps["next"]),
        "tree_rows_dom": shown["treeDomRows"], "tree_rows": len(shown["tree"]),
        "entries_dom_after_search": end["first"]["entriesDom"],
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["_child"]:
        _child(*argv[1:4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="100M")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--keep-data", action="store_true", help="keep a session this run generates")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    kinds = [k for k in args.contenders.split(",") if k]
    unknown = set(kinds) - set(CONTENDERS)
    if unknown or "ours" not in kinds:
        parser.error(f"--contenders: choose from {', '.join(CONTENDERS)}, ours included (got {args.contenders})")
    if "omp" in kinds and not (BUN.exists() and OMP_PKG.is_dir()):
        raise SystemExit(f"omp is not installed under {OMP_PKG.parent.parent} (tests/reference/install)")
    parse_size(args.size)
    original, blobs, generated, created = ensure_data(args.size, args.seed, DATA_DIR)
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-html-"))
    try:
        session = marked_copy(original, scratch)
        warm(session, blobs)
        runs = round_robin(args.size, kinds, args.runs, lambda kind: run_export(kind, session, blobs, scratch))
        pages = []
        for i in range(args.runs):
            pages.append(run_browser(scratch / "ours.html", scratch))
            log(f"[{args.size}] chromium run {i + 1}/{args.runs}: paint {pages[-1]['paint_ms']:.0f} ms, "
                f"search end {pages[-1]['search_end_ms']:.0f} ms, to end {pages[-1]['to_end_ms']:.0f} ms")
        report = summarize(args.size, session, runs, pages)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if generated is not None and not args.keep_data:  # what this run generated, nothing else
            original.unlink(missing_ok=True)
            shutil.rmtree(blobs, ignore_errors=True)
            if created:
                shutil.rmtree(original.parent, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def summarize(size: str, session: Path, runs: dict[str, list[dict[str, Any]]],
              pages: list[dict[str, Any]]) -> dict[str, Any]:
    ms = statistics.median
    report: dict[str, Any] = {"size": size, "session_bytes": session.stat().st_size, "runs": runs, "pages": pages}
    export = {k: {"seconds": ms(r["seconds"] for r in v), "peak_rss": ms(r["peak_rss"] for r in v),
                  "bytes": ms(r["bytes"] for r in v)} for k, v in runs.items()}
    report["export"] = export
    for other in ("read", "omp"):
        if other in runs:
            report[f"ours_{other}"] = ms(o["seconds"] / r["seconds"] for o, r in zip(runs["ours"], runs[other],
                                                                                     strict=True))
    report["page"] = {key: ms(float(p[key]) for p in pages) for key in pages[0]}
    return report


def print_report(r: dict[str, Any]) -> None:
    print(f"HTML export of a {r['session_bytes'] / MB:.0f} MB session (medians of {len(r['pages'])} runs)")
    for kind, v in r["export"].items():
        print(f"  {kind:<5} {v['seconds']:7.3f} s  {v['peak_rss'] / MB:6.0f} MB peak  {v['bytes'] / MB:6.1f} MB written"
              if kind != "read" else f"  {kind:<5} {v['seconds']:7.3f} s  (floor: read the session's bytes)")
    for other in ("read", "omp"):
        if f"ours_{other}" in r:
            print(f"  ratio ours/{other}: {r[f'ours_{other}']:.2f}")
    p = r["page"]
    print("Our page in headless chromium (ms, inside the page, to the next frame)")
    print(f"  load to first paint of the branch   {p['paint_ms']:8.0f}   JS heap then {p['js_heap_mb']:.0f} MB")
    print(f"    of which: HTML read until the viewer's script starts {p['script_start_ms']:.0f}, "
          f"data parsed {p['data_parsed_ms'] - p['script_start_ms']:.0f}, "
          f"tree and first chunk {p['paint_ms'] - p['data_parsed_ms']:.0f}")
    print(f"  search, only hit at the end: first  {p['search_end_ms']:8.0f}   again {p['search_end_again_ms']:.0f}")
    print(f"  search '{STEP_QUERY}' ({p['step_hits']:.0f} hits)        {p['step_search_ms']:8.0f}")
    print(f"  step: first hit -> last (far end)   {p['to_end_ms']:8.1f}   back {p['to_start_ms']:.1f}")
    print(f"  step: next                          {p['next_ms']:8.1f}")
    print(f"  tree rows in the DOM / entries      {p['tree_rows_dom']:.0f} / {p['tree_rows']:.0f}")
    print(f"  entries in the DOM after the search {p['entries_dom_after_search']:.0f}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
