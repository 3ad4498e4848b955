"""Benchmark: a team's sessions in one PostgreSQL — search in the database vs search on files.

    python bench/team.py [--sessions 10000] [--queries 20] [--seed 1] [--scratch DIR] [--keep] [--json]
    python bench/team.py --reuse TABLE --scratch DIR    # measure again what a --keep run left

Generates ``--sessions`` sessions as files (small and large mixed: most 4-30 entries, one in 50 a
long one of 300 entries with tool outputs), then, timed:

* ``index --store`` on the empty store (makes the search tables), and ``sync`` files -> PostgreSQL,
  which copies every session and derives the tables from them (one run, as a team's first upload);
* the file index built over the same files (``omp-session index``), for the file search;
* a search for a rare word (3 sessions), a medium word (1 % of sessions) and a common word (in
  about half the texts): ``--queries`` runs each, p50 and p95, in the database (``search_derived``
  on an open connection; and the whole ``search --store`` path, connecting each time) and on files
  (FTS5: without the index update, ``search --no-update``, and with it, what plain ``search``
  does); then each as a user runs it, ``omp-session search WORD --json`` as a whole process
  (start-up, connecting or opening the index, the query, the output), the three taking turns;
* ``list --store URL --all --json --limit 100`` (median of 9): from the derived tables, in-process
  (``list_derived_sessions`` on an open connection) and as a whole process (the CLI: start-up,
  connect, list, print), beside the listing from the stored bytes that a store without derived
  tables gets (``list_store_sessions``: every session's head and tail windows);
* a second sync after 1 % of the sessions grew by one message (the incremental cost);
* the derived tables' size relative to the sessions' bytes.

PostgreSQL: ``$OMP_BENCH_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``).
The table (and the three derived tables) is fresh and dropped at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

POSTGRES = os.environ.get("OMP_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
RARE, MEDIUM, COMMON = "zyzzogeton", "quixotic", "function"
ROOT = "/bench/team/sessions/"
SPAN_DAYS = 365


def _vocabulary(rnd: random.Random, n: int = 6000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rnd.choice(letters) for _ in range(rnd.randint(3, 10))) for _ in range(n)]


def _text(rnd: random.Random, vocab: list[str], words: int, extra: list[str]) -> str:
    # Zipf-like: a few words very often, most rarely, as in prose and code
    picked = [vocab[min(len(vocab) - 1, int(rnd.paretovariate(1.1)) - 1)] for _ in range(words)]
    if rnd.random() < 0.5:
        picked.append(COMMON)
    picked += extra
    rnd.shuffle(picked)
    return " ".join(picked)


def generate(root: Path, sessions: int, seed: int) -> int:
    """Session files under ``root``; returns their bytes."""
    rnd = random.Random(seed)
    vocab = _vocabulary(rnd)
    rare = set(rnd.sample(range(sessions), min(3, sessions)))
    medium = set(rnd.sample(range(sessions), max(1, sessions // 100)))
    total = 0
    # a year of sessions up to this hour, evenly spread: "--since 30d" then holds about a twelfth
    # of the requests, as a team's month does (dated only by the run: the content is the seed's)
    end_ms = int(time.time()) // 3600 * 3_600_000
    step = SPAN_DAYS * 86_400_000 // max(sessions, 1)
    for s in range(sessions):
        long = s % 50 == 7
        entries = 300 if long else rnd.randint(4, 30)
        start = end_ms - (sessions - s) * step
        sid = f"0197{s:08x}-0000-7000-8000-000000000000"
        bucket = root / f"--work-project{s % 40}--"
        bucket.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(start / 1000))
        lines = [orjson.dumps({"type": "session", "version": 3, "id": sid, "timestamp": _iso(start),
                               "cwd": f"/work/project{s % 40}"})]
        parent = None
        for k in range(entries):
            eid = f"{k:08x}"
            extra = []
            if k == entries // 2 and s in rare:
                extra.append(RARE)
            if k == entries // 3 and s in medium:
                extra.append(MEDIUM)
            ts = start + k * 1000
            if k % 3 == 0:
                msg: dict[str, Any] = {"role": "user", "content": _text(rnd, vocab, rnd.randint(5, 40), extra),
                                       "timestamp": ts}
            elif k % 3 == 1:
                msg = {"role": "assistant", "content": [{"type": "text", "text": _text(rnd, vocab, rnd.randint(20, 120),
                                                                                        extra)}],
                       "api": "anthropic-messages", "provider": "anthropic", "model": f"claude-{k % 3}",
                       "usage": {"input": 1000 + k, "output": 200, "cacheRead": 0, "cacheWrite": 0,
                                 "totalTokens": 1200 + k, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                                   "cacheWrite": 0, "total": 0.002}},
                       "stopReason": "stop", "timestamp": ts}
            else:
                out = _text(rnd, vocab, rnd.randint(200, 600) if long else rnd.randint(10, 60), extra)
                msg = {"role": "toolResult", "toolCallId": f"c{k}", "toolName": "bash",
                       "content": [{"type": "text", "text": out}], "isError": False, "timestamp": ts}
            lines.append(orjson.dumps({"type": "message", "id": eid, "parentId": parent, "timestamp": _iso(ts),
                                       "message": msg}))
            parent = eid
        data = b"\n".join(lines) + b"\n"
        (bucket / f"{stamp}-000Z_{sid}.jsonl").write_bytes(data)
        total += len(data)
    return total


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def percentiles(fn: Callable[[], Any], runs: int) -> dict[str, float]:
    times = [timed(fn)[0] * 1000 for _ in range(runs)]
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], 2)}


def _median_ms(fn: Callable[[], Any], runs: int) -> float:
    return round(statistics.median(timed(fn)[0] * 1000 for _ in range(runs)), 1)


# the whole command through psycopg instead of the built-in client (store/pg_connect.py)
PSYCOPG_ENV = {**os.environ, "OMP_SESSION_PG_DRIVER": "psycopg"}


def measure_search_cli(url: str, word: str, index: Path, files: Path, runs: int) -> dict[str, Any]:
    """``omp-session search WORD --json`` as a user runs it, each a whole process (start-up,
    connecting or opening the index, the query, the output): on the store, on the file index as
    it is (``--no-update``), and on the files with the index brought up to date first (plain
    ``search``). Medians of ``runs``, the three taking turns so machine noise falls on each."""
    import subprocess

    exe = str(Path(sys.executable).parent / "omp-session")
    commands = {"store_ms": [exe, "search", word, "--store", url, "--json"],
                "files_ms": [exe, "search", word, "--index", str(index), "--no-update", "--json"],
                "files_update_ms": [exe, "search", word, "--index", str(index), "--root", str(files), "--json"]}
    hits = {name: len(json.loads(subprocess.run(c, check=True, capture_output=True).stdout))
            for name, c in commands.items()}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, c in commands.items():
            times[name].append(timed(lambda c=c: subprocess.run(c, check=True, capture_output=True))[0] * 1000)
    return {**{name: round(statistics.median(t), 1) for name, t in times.items()}, "hits": hits, "runs": runs}


def measure_list(url: str, tables: Any, runs: int = 9) -> dict[str, Any]:
    """``list --store URL --all --json --limit 100``: from the derived tables (in-process and as
    the CLI), and from the stored bytes as a store without derived tables is listed."""
    import subprocess

    from omp_session.catalog.store_listing import list_derived_sessions, list_store_sessions
    from omp_session.store import open_store

    exe = str(Path(sys.executable).with_name("omp-session"))
    cli = [exe, "list", "--store", url, "--all", "--json", "--limit", "100"]
    shown = json.loads(subprocess.run(cli, check=True, capture_output=True).stdout)
    got = list_derived_sessions(tables, ROOT, all_buckets=True, limit=100).sessions
    storage = open_store(url)
    try:
        t_bytes, listed = timed(lambda: list_store_sessions(storage, ROOT, all_buckets=True))
        assert [i.path for i in listed.sessions[:100]] == [i.path for i in got] == [r["path"] for r in shown]
        # every session's bytes, each run: 3 runs are plenty
        times = [t_bytes] + [timed(lambda: list_store_sessions(storage, ROOT, all_buckets=True))[0] for _ in range(2)]
        bytes_ms = round(statistics.median(times) * 1000, 1)
    finally:
        storage.close()
    return {"rows": len(shown),
            "derived_ms": _median_ms(lambda: list_derived_sessions(tables, ROOT, all_buckets=True, limit=100), runs),
            "derived_all_ms": _median_ms(lambda: list_derived_sessions(tables, ROOT, all_buckets=True), 3),
            "cli_ms": _median_ms(lambda: subprocess.run(cli, check=True, capture_output=True), runs),
            "cli_psycopg_ms": _median_ms(lambda: subprocess.run(cli, check=True, capture_output=True, env=PSYCOPG_ENV),
                                         runs),
            "cli_help_ms": _median_ms(lambda: subprocess.run([exe, "--help"], check=True, capture_output=True), runs),
            # the floor of any command on PostgreSQL: Python starting and importing the driver
            "python_psycopg_ms": _median_ms(lambda: subprocess.run([sys.executable, "-c", "import psycopg"], check=True),
                                            runs),
            "bytes_ms": bytes_ms}


def measure_stats(url: str, tables: Any, files: Path, runs: int = 7, *, files_timed: bool = True) -> dict[str, Any]:
    """``stats --by day --since WHEN``: in the database (``stats --store``: in-process on an open
    connection, and the whole command) beside ``stats`` on the same files (the whole command with
    its cache warm, and in-process). WHEN: ``30d`` as typed (the generated sessions span the year
    up to the run, so about a twelfth of the requests) and the year before the newest request
    (every request: the heaviest report)."""
    import subprocess

    from omp_session.ops.stats.database import stats_in_tables
    from omp_session.ops.stats.report import stats

    os.environ["XDG_CACHE_HOME"] = str(files.parent / "cache")  # the files' stats cache: the scratch's, not ~/.cache
    exe = str(Path(sys.executable).with_name("omp-session"))
    newest = max(int(r[0]) for r in tables.rows(f"SELECT max(ts) FROM {tables.names.usage}"))
    year = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(newest / 1000 - (SPAN_DAYS + 1) * 86_400)) + "Z"
    out: dict[str, Any] = {}
    for label, since in (("30d", "30d"), ("every_request", year)):
        args = ["--all", "--by", "day", "--since", since, "--tz", "UTC", "--json"]
        store_cli = [exe, "stats", "--store", url, *args]
        files_cli = [exe, "stats", "--root", str(files), *args]
        shown = subprocess.run(store_cli, check=True, capture_output=True).stdout
        subprocess.run(files_cli, check=True, capture_output=True)  # the files' cache, warm from here on
        files_json = json.loads(subprocess.run(files_cli, check=True, capture_output=True).stdout)
        # an age is "that long before now": the two runs' windows start a moment apart
        same = {**json.loads(shown), "since": None} == {**files_json, "since": None}
        row: dict[str, Any] = {"since": since, "same_json": same, "requests": json.loads(shown)["total"]["billed"]["requests"]}
        row["store_in_process_ms"] = _median_ms(lambda s=since: stats_in_tables(
            tables, all_sessions=True, root=ROOT, by="day", since=s, tz="UTC"), runs)
        row["store_cli_ms"] = _median_ms(lambda c=store_cli: subprocess.run(c, check=True, capture_output=True), runs)
        row["store_cli_psycopg_ms"] = _median_ms(
            lambda c=store_cli: subprocess.run(c, check=True, capture_output=True, env=PSYCOPG_ENV), runs)
        if not files_timed:  # --store-only: the files' report only to compare the JSON
            row["files_cli_ms"] = row["files_in_process_ms"] = row["files_cli_no_cache_ms"] = None
            out[label] = row
            continue
        row["files_cli_ms"] = _median_ms(lambda c=files_cli: subprocess.run(c, check=True, capture_output=True), runs)
        row["files_in_process_ms"] = _median_ms(lambda s=since: stats(all_sessions=True, root=files, by="day", since=s,
                                                                      tz="UTC"), 3)
        row["files_cli_no_cache_ms"] = _median_ms(
            lambda c=files_cli: subprocess.run([*c, "--no-cache"], check=True, capture_output=True), 3)
        out[label] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scratch", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the PostgreSQL tables and the files")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reuse", metavar="TABLE", help="the table (and files under --scratch) a --keep run left: "
                    "only the searches, stats, list and sizes are measured again (nothing written)")
    ap.add_argument("--store-only", action="store_true", help="time stats on the store only (the files' report "
                    "is still made once, to compare)")
    args = ap.parse_args()
    if args.reuse and not args.scratch:
        ap.error("--reuse needs the --scratch folder of the run that kept the table")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still drops its tables
    try:
        from omp_session.catalog.derived import refresh_url
        from omp_session.ops.search.index import SearchIndex
        from omp_session.ops.search.query import search
        from omp_session.ops.sync import sync_urls
        from omp_session.store.derived import derived_names, open_derived
        from omp_session.store.derived.query import search_derived
    except ImportError as e:
        print(f"bench/team.py: cannot import omp_session ({e}); run it with the project's venv", file=sys.stderr)
        return 1
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from omp_session.cli._store_search import search_store

    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="omp-team-bench-"))
    files = scratch / "sessions"
    table = args.reuse or f"b_{uuid.uuid4().hex[:12]}"
    url = f"{POSTGRES}?table={table}&root={ROOT}"
    out: dict[str, Any] = {"sessions": args.sessions, "queries": args.queries}

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        index = scratch / "search.sqlite"
        if args.reuse:
            paths = list(files.rglob("*.jsonl"))
            out["sessions"], out["session_bytes"] = len(paths), sum(p.stat().st_size for p in paths)
            out["sync_first_s"] = out["derive_first_s"] = out["file_index_s"] = None
        else:
            seconds, total = timed(lambda: generate(files, args.sessions, args.seed))
            out["session_bytes"] = total
            say(f"generated {args.sessions} sessions, {total / 1e6:.1f} MB, in {seconds:.1f} s")
            refresh_url(url)  # the search tables, once; from now on sync keeps them
            seconds, report = timed(lambda: sync_urls(f"file:{files}", url, use_state=False))
            assert report.count("copied") == args.sessions and report.derived is not None
            out["sync_first_s"] = round(seconds, 2)
            out["derive_first_s"] = report.derived["seconds"]
            say(f"sync into PostgreSQL (copy + derive): {seconds:.1f} s (deriving {report.derived['seconds']:.1f} s)")
            seconds, _ = timed(lambda: SearchIndex(index).update(files))
            out["file_index_s"] = round(seconds, 2)
            say(f"file index (FTS5): {seconds:.1f} s")
        with open_derived(url) as tables:
            tables.rows("ANALYZE " + tables.names.entries)
            queries: dict[str, Any] = {}
            for label, word in (("rare", RARE), ("medium", MEDIUM), ("common", COMMON)):
                row: dict[str, Any] = {"word": word}
                row["hits"] = len(search_derived(tables, word, limit=20))
                row["pg"] = percentiles(lambda w=word: search_derived(tables, w, limit=20), args.queries)
                row["pg_connect"] = percentiles(lambda w=word: search_store(url, w, role=None, cwd=None, since_ms=None,
                                                                           until_ms=None, thinking=False, limit=20,
                                                                           sessions=False, timeout=None),
                                                args.queries)
                ix = SearchIndex(index)
                try:
                    row["files_hits"] = len(search(word, index=ix, update=False, limit=20).hits)
                    row["files"] = percentiles(lambda w=word, i=ix: search(w, index=i, update=False, limit=20),
                                               args.queries)
                    row["files_update"] = percentiles(lambda w=word, i=ix: search(w, index=i, root=files, limit=20),
                                                      args.queries)
                finally:
                    ix.close()
                row["pg_vs_files"] = round(row["pg"]["p50_ms"] / max(row["files"]["p50_ms"], 1e-3), 2)
                row["cli"] = measure_search_cli(url, word, index, files, max(5, args.queries // 2))
                row["cli_pg_vs_files"] = round(row["cli"]["store_ms"] / max(row["cli"]["files_ms"], 1e-3), 2)
                queries[label] = row
                say(f"{label:6} {word!r}: pg p50 {row['pg']['p50_ms']} ms p95 {row['pg']['p95_ms']} ms "
                    f"(connecting each time: p50 {row['pg_connect']['p50_ms']} ms) | files p50 "
                    f"{row['files']['p50_ms']} ms p95 {row['files']['p95_ms']} ms (with update p50 "
                    f"{row['files_update']['p50_ms']} ms)")
                say(f"{'':6} whole processes: search --store {row['cli']['store_ms']} ms | search --no-update "
                    f"{row['cli']['files_ms']} ms | search (updating the index) {row['cli']['files_update_ms']} ms "
                    f"| store / files {row['cli_pg_vs_files']}")
            out["search"] = queries
            out["stats"] = measure_stats(url, tables, files, files_timed=not args.store_only)
            for row in out["stats"].values():
                say(f"stats --by day --since {row['since']}: store {row['store_in_process_ms']} ms in-process, "
                    f"{row['store_cli_ms']} ms whole process (psycopg: {row['store_cli_psycopg_ms']} ms) | "
                    f"files {row['files_cli_ms']} ms whole process (cache warm), "
                    f"{row['files_in_process_ms']} ms in-process, {row['files_cli_no_cache_ms']} ms --no-cache; "
                    f"{row['requests']} requests, same JSON: {row['same_json']}")
            out["list"] = measure_list(url, tables)
            say(f"list --all --json --limit 100: {out['list']['derived_ms']} ms in-process, "
                f"{out['list']['cli_ms']} ms whole process (psycopg: {out['list']['cli_psycopg_ms']} ms; "
                f"omp-session --help: {out['list']['cli_help_ms']} ms, "
                f"python -c 'import psycopg': {out['list']['python_psycopg_ms']} ms); "
                f"from the bytes: {out['list']['bytes_ms']} ms in-process")
            # 1 % of the sessions grow by one message: the incremental sync and derive
            grown = [] if args.reuse else sorted(files.rglob("*.jsonl"))[:: 100]
            for p in grown:
                with p.open("ab") as f:
                    f.write(orjson.dumps({"type": "message", "id": "ffffffff", "parentId": None,
                                          "timestamp": "2026-02-01T00:00:00.000Z",
                                          "message": {"role": "user", "content": "one more question", "timestamp": 1}})
                            + b"\n")
            if args.reuse:
                out["sync_grown"] = {"sessions": 0, "seconds": None}
            else:
                seconds, report = timed(lambda: sync_urls(f"file:{files}", url, use_state=False))
                assert report.count("appended") == len(grown) and report.derived is not None
                out["sync_grown"] = {"sessions": len(grown), "seconds": round(seconds, 2),
                                     "derive_seconds": report.derived["seconds"],
                                     "derive_bytes_read": report.derived["bytes_read"]}
                say(f"{len(grown)} sessions grown: sync {seconds:.2f} s, derive {report.derived['seconds']:.2f} s, "
                    f"{report.derived['bytes_read']:,} bytes read to derive")
            sizes = tables.sizes()
            n = derived_names(table)
            derived_bytes = sizes[n.sessions] + sizes[n.entries] + sizes[n.usage]
            out["sizes"] = {**sizes, "derived_bytes": derived_bytes,
                            "derived_vs_sessions": round(derived_bytes / max(sizes["sessions_bytes"], 1), 3),
                            "omp_table_bytes": int(tables.rows("SELECT pg_total_relation_size(?::regclass)",
                                                               (table,))[0][0])}
            say(f"derived tables {derived_bytes / 1e6:.1f} MB = {out['sizes']['derived_vs_sessions']:.2f} x the "
                f"sessions' {sizes['sessions_bytes'] / 1e6:.1f} MB (omp's table itself: "
                f"{out['sizes']['omp_table_bytes'] / 1e6:.1f} MB)")
    finally:
        if not args.keep and not args.reuse:
            import psycopg

            n = derived_names(table)
            with psycopg.connect(POSTGRES, autocommit=True) as conn:
                for name in (n.entries, n.usage, n.sessions, table):
                    conn.execute(f"DROP TABLE IF EXISTS {name}")
            if args.scratch is None:
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            say(f"kept: table {table} (and its derived tables), files under {scratch}")
    print(json.dumps(out, indent=1) if args.json else _table(out))
    return 0


def _table(out: dict[str, Any]) -> str:
    lines = [f"{out['sessions']:,} sessions, {out['session_bytes'] / 1e6:.1f} MB; {out['queries']} queries each",
             "| word | hits | pg p50 | pg p95 | pg p50 (connect) | files p50 | files p95 | files+update p50 | pg / files |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for label, r in out["search"].items():
        lines.append(f"| {label} `{r['word']}` | {r['hits']} | {r['pg']['p50_ms']} ms | {r['pg']['p95_ms']} ms | "
                     f"{r['pg_connect']['p50_ms']} ms | {r['files']['p50_ms']} ms | {r['files']['p95_ms']} ms | "
                     f"{r['files_update']['p50_ms']} ms | {r['pg_vs_files']} |")
    lines.append("whole processes (omp-session search WORD --json, medians):")
    for label, r in out["search"].items():
        c = r["cli"]
        lines.append(f"  {label}: --store {c['store_ms']} ms, --no-update {c['files_ms']} ms, updating the index "
                     f"{c['files_update_ms']} ms; store / files {r['cli_pg_vs_files']}")
    li = out["list"]
    lines.append(f"list --all --json --limit 100: {li['derived_ms']} ms in-process, {li['cli_ms']} ms whole process "
                 f"(psycopg {li['cli_psycopg_ms']} ms; omp-session --help {li['cli_help_ms']} ms, python -c 'import psycopg' {li['python_psycopg_ms']} ms); "
                 f"every row from the tables {li['derived_all_ms']} ms; "
                 f"from the stored bytes {li['bytes_ms']} ms in-process")
    for row in out["stats"].values():
        lines.append(f"stats --by day --since {row['since']}: store {row['store_in_process_ms']} ms in-process, "
                     f"{row['store_cli_ms']} ms whole process (psycopg {row['store_cli_psycopg_ms']} ms); "
                     f"files {row['files_cli_ms']} ms whole process (cache "
                     f"warm), {row['files_in_process_ms']} ms in-process, {row['files_cli_no_cache_ms']} ms --no-cache")
    s = out["sizes"]
    lines.append(f"first sync (copy + derive) {out['sync_first_s']} s (derive {out['derive_first_s']} s); file index "
                 f"{out['file_index_s']} s; {out['sync_grown']['sessions']} grown: sync {out['sync_grown']['seconds']} s")
    lines.append(f"derived tables {s['derived_bytes'] / 1e6:.1f} MB = {s['derived_vs_sessions']} x the sessions' bytes")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
