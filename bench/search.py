"""Benchmark: the search index (``omp-session index`` / ``search``) against simple floors.

    python bench/search.py                                  # 200 sessions, ~0.2 GB: a few minutes
    python bench/search.py --sessions 2000 --total-gb 2     # the issue's setup (~2 GB)
    python bench/search.py --runs 9 --json

Builds (once, cached under $OMP_BENCH_CACHE or /tmp/omp-bench-cache as
``search-root-<N>-<GB>/``) a sessions root of N realistic sessions in up to 20 project buckets
with ``gen_large.py --many`` (sizes log-uniform over a 100x range whose mean gives the total).
The corpus is read once (untimed) so everything below runs on a warm page cache. Then, in this
process (times exclude interpreter start and imports):

* first build: a fresh index, ``SearchIndex.update(root)``; time, MB/s, index size vs corpus;
* one append: one entry appended to one session, then open the index + ``update(root)`` + close,
  against the floor "read the appended bytes + scandir/stat every session file" (target <= 2x);
* query: for a rare, a medium and a common indexed word, ``search(word, update=False)`` (the
  query alone) and ``search(word)`` (with the incremental stat pass a CLI search does), against
  ``grep -rl WORD ROOT`` (target: query median <= 0.05x grep). Words come from the index's
  vocabulary (fts5vocab) by document frequency.

Every timed step runs ``--runs`` times round-robin with its floor; medians and ratios are printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_context import DATA_DIR, GEN_LARGE

from omp_session.ops.search.index import SearchIndex, session_files
from omp_session.ops.search.query import search

BUCKETS = 20
SPREAD = 100.0  # max/min session size


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def build_root(n: int, total_gb: float, seed: int) -> Path:
    """``<cache>/search-root-<n>-<gb>/sessions/<bucket>/*.jsonl``, generated once."""
    base = DATA_DIR / f"search-root-{n}-{total_gb:g}"
    root = base / "sessions"
    if (base / "done").is_file():
        return root
    shutil.rmtree(base, ignore_errors=True)
    root.mkdir(parents=True)
    mean = total_gb * 1024**3 / n
    low = mean * math.log(SPREAD) / (SPREAD - 1)  # log-uniform on [low, 100 low] has this mean
    buckets = min(BUCKETS, n)
    per = [n // buckets + (1 if b < n % buckets else 0) for b in range(buckets)]
    log(f"generating {n} sessions ({low / 1024:.0f} KB..{low * SPREAD / 1024**2:.1f} MB) into {root} ...")
    t0 = time.perf_counter()

    def one(b: int) -> None:
        cmd = [sys.executable, str(GEN_LARGE), "--many", str(per[b]), "--min-size", str(int(low)),
               "--max-size", str(int(low * SPREAD)), "--seed", str(seed + b), "--dir",
               str(root / f"--work-project-{b:02d}--")]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, range(buckets)))
    total = sum(os.path.getsize(f) for f in session_files(root))
    log(f"generated {total / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s")
    (base / "done").write_text(json.dumps({"n": n, "seed": seed, "bytes": total}))
    return root


def warm(files: list[str]) -> int:
    total = 0
    for p in files:
        with open(p, "rb") as f:
            while block := f.read(1 << 24):
                total += len(block)
    return total


def index_bytes(path: Path) -> int:
    return sum(os.path.getsize(str(path) + s) for s in ("", "-wal") if os.path.exists(str(path) + s))


def stat_floor(root: Path) -> float:
    """scandir the root and stat every session file: what any "what changed?" check costs."""
    t0 = time.perf_counter()
    for p in session_files(root):
        os.stat(p)
    return time.perf_counter() - t0


def read_floor(path: str, start: int, end: int) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        f.seek(start)
        f.read(end - start)
    return time.perf_counter() - t0


def entry(i: int, parent: str | None) -> bytes:
    text = f"benchmark append {i}: " + "the reader keeps the offset of the last complete line " * 20
    value = {"type": "message", "id": f"b{i:07x}", "parentId": parent, "timestamp": "2026-06-01T10:00:00.000Z",
             "message": {"role": "user", "content": text, "timestamp": 1780308000000}}
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def pick_words(index: Path) -> dict[str, tuple[str, int]]:
    """A rare, a medium and a common indexed word (alphabetic, 5+ letters), by document count."""
    conn = sqlite3.connect(index)
    conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'docs', 'row')")
    rows = conn.execute("SELECT term, doc FROM temp.vocab WHERE length(term) >= 5 AND term GLOB '[a-z]*' "
                        "AND term NOT GLOB '*[^a-z]*'").fetchall()
    conn.close()
    # longest first among equals: a short rare token is often a substring of a common word,
    # which grep -rl finds at once
    rows.sort(key=lambda r: (r[1], -len(r[0]), r[0]))
    most = rows[-1][1]
    # a rare token inside a common one ("compactio" in "compaction") is no rare word to grep
    common = [t for t, d in rows if d >= 10]
    rare = next((r for r in rows if r[1] >= 2 and not any(r[0] in t for t in common if t != r[0])), rows[0])
    medium = min(rows, key=lambda r: (abs(math.log(r[1]) - math.log(max(most, 1) ** 0.5)), -len(r[0]), r[0]))
    return {"rare": (rare[0], rare[1]), "medium": (medium[0], medium[1]), "common": (rows[-1][0], most)}


def grep_time(word: str, root: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["grep", "-rl", word, str(root)], stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--total-gb", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    root = build_root(a.sessions, a.total_gb, a.seed)
    files = session_files(root)
    corpus = warm(files)
    scratch = Path(tempfile.mkdtemp(prefix="omp-bench-search-"))
    report: dict[str, Any] = {"sessions": len(files), "corpus_bytes": corpus, "runs": a.runs}
    original: tuple[str, int] | None = None
    try:
        index = scratch / "search.sqlite"
        log(f"first build over {len(files)} sessions, {corpus / 1e9:.2f} GB ...")
        t0 = time.perf_counter()
        with SearchIndex(index) as ix:
            built = ix.update(root)
            ix.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        build_s = time.perf_counter() - t0
        size = index_bytes(index)
        report["build"] = {"seconds": build_s, "mb_per_s": corpus / 1e6 / build_s, "index_bytes": size,
                           "index_per_corpus": size / corpus, "entries": built.entries_added}

        words = pick_words(index)  # before the appends, whose words are not the corpus's

        # one append, round-robin with its floor
        target = max(files, key=os.path.getsize)
        original = (target, os.path.getsize(target))
        ups: list[float] = []
        floors: list[float] = []
        parsed: list[int] = []
        parent = None
        for i in range(a.runs):
            data = entry(i, parent)
            parent = f"b{i:07x}"
            start = os.path.getsize(target)
            with open(target, "ab") as f:
                f.write(data)
            floors.append(read_floor(target, start, start + len(data)) + stat_floor(root))
            t0 = time.perf_counter()
            with SearchIndex(index) as ix:
                r = ix.update(root)
            ups.append(time.perf_counter() - t0)
            parsed.append(r.bytes_parsed)
            assert r.grown == [target] and r.bytes_parsed == len(data), r.to_json()
        report["append"] = {"update_s": statistics.median(ups), "floor_s": statistics.median(floors),
                            "ratio": statistics.median(ups) / statistics.median(floors),
                            "bytes_parsed": parsed[0], "session": target}

        report["query"] = {}
        for label, (word, docs) in words.items():
            q_only: list[float] = []
            q_full: list[float] = []
            greps: list[float] = []
            hits = 0
            for _ in range(a.runs):
                greps.append(grep_time(word, root))
                with SearchIndex(index) as ix:
                    t0 = time.perf_counter()
                    hits = len(search(word, index=ix, update=False).hits)
                    q_only.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                search(word, index_path=index, root=root)
                q_full.append(time.perf_counter() - t0)
            g = statistics.median(greps)
            report["query"][label] = {"word": word, "docs": docs, "hits": hits, "grep_s": g,
                                      "query_s": statistics.median(q_only), "search_s": statistics.median(q_full),
                                      "query_ratio": statistics.median(q_only) / g,
                                      "search_ratio": statistics.median(q_full) / g}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if original is not None:  # the appended entries stay out of later runs' corpus
            with open(original[0], "rb+") as f:
                f.truncate(original[1])
    b = report["build"]
    print(f"\n{len(files)} sessions, {corpus / 1e9:.2f} GB; medians of {a.runs} runs")
    print(f"first build: {b['seconds']:.1f} s ({b['mb_per_s']:.0f} MB/s), {b['entries']:,} records; "
          f"index {b['index_bytes'] / 1e6:.0f} MB = {b['index_per_corpus']:.2f}x the corpus")
    ap_ = report["append"]
    print(f"after one append: update {ap_['update_s'] * 1000:.1f} ms vs floor (read {ap_['bytes_parsed']} appended "
          f"bytes + stat {len(files)} files) {ap_['floor_s'] * 1000:.1f} ms = {ap_['ratio']:.2f}x "
          f"(target <= 2) {'PASS' if ap_['ratio'] <= 2 else 'FAIL'}")
    for label, q in report["query"].items():
        print(f"query {label:<6} {q['word']!r} ({q['docs']:,} docs, {q['hits']} hits shown): query "
              f"{q['query_s'] * 1000:.1f} ms, with update {q['search_s'] * 1000:.1f} ms; grep -rl "
              f"{q['grep_s'] * 1000:.0f} ms; ratio {q['query_ratio']:.3f} / {q['search_ratio']:.3f} "
              f"(target <= 0.05) {'PASS' if q['query_ratio'] <= 0.05 else 'FAIL'}")
    if a.json:
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
