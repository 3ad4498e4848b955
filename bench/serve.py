"""Benchmark: ``omp-session serve`` against the same work done by the command line.

    python bench/serve.py                     # all three parts below: ~5 min on 2 cores
    python bench/serve.py --parts big --big-runs 5 --json
    python bench/serve.py --parts list --sessions 500 --runs 9

Three parts (``--parts list,many,big``), each side by side, round-robin, medians. The server runs
as its own process (``omp-session serve --port 0``, as a user starts it) with a private
$XDG_CACHE_HOME that the in-process side shares, so both use the same listing cache and search
index; everything is warmed once, untimed.

* ``list`` (bench/search.py's corpus, ``--sessions`` realistic sessions, generated once and
  cached under $OMP_BENCH_CACHE or /tmp/omp-bench-cache): time to the first byte of ``GET /`` (one
  page of 100 rows, the listing refreshed: a directory scan and a stat per file) against
  ``list --all --json`` run in-process through click (its warm output cache: a stat per file, the
  stored output printed); and ``GET /api/search?q=WORD`` to the last byte against
  ``search(WORD, root=ROOT)`` in-process (both bring the index up to date first: a stat per
  file), for a rare, a medium and a common word (bench/search.py's ``pick_words``). Targets:
  <= 2x each.
* ``many`` (``--many`` tiny sessions, 2 entries each, in 40 project folders, written once and
  cached): the sessions page at that scale: ``GET /`` to the first and to the last byte, the JSON
  ``GET /api/sessions`` (100 rows) and a page deep in the list, a text filter; against
  ``list --all --json`` in-process on the same root (warm caches); and, once each on empty caches,
  the server's first page and ``list --all --json``.
* ``big`` (a ``--big-size`` session of bench/gen_large.py, cached like bench/export_html.py's,
  with its blobs): ``GET /s/<id>`` to the last byte (the page streams: first byte too) against
  ``omp-session export SESSION --format html -o OUT`` as a whole process (interpreter start
  included) and in-process (click, the same command). Target: serve <= 1.5x the export. Also the
  peak RSS of the server process after the runs and of the export process.

Prints medians and ratios serve / command line.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stdout, suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_context import DATA_DIR, ensure_data
from search import build_root, pick_words

from omp_session.ops.search.index import default_index_path
from omp_session.ops.search.query import search
from omp_session.paths import project_dir_name

MANY_BUCKETS = 40


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


class Server:
    """``omp-session serve`` in its own process; requests carry the token as a bearer header."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "omp_session", "serve", "--root", str(root)],
                                     stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        t0 = time.perf_counter()
        while True:
            text = self.proc.stdout.readline()
            if text.startswith("http://"):
                break
            if not text:
                raise SystemExit("the server did not start")
        self.started_s = time.perf_counter() - t0
        url = text.strip()
        self.port = int(url.split(":")[2].split("/")[0])
        self.token = url.split("token=")[1]

    def request(self, path: str) -> tuple[float, float, bytes]:
        """(seconds to the first byte, seconds to the last, body)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            t0 = time.perf_counter()
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            reply = conn.getresponse()
            reply.peek(1)  # the first byte of the body, not only the head
            first = time.perf_counter() - t0
            body = reply.read()
            last = time.perf_counter() - t0
            assert reply.status == 200, (path, reply.status, body[:200])
            return first, last, body
        finally:
            conn.close()

    def peak_rss(self) -> int:
        """The server process's peak resident memory so far (bytes; Linux)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def cli_in_process(args: list[str]) -> float:
    """``omp-session ARGS`` run in this process through click (stdout kept, then dropped)."""
    from omp_session.cli import cli

    out = io.StringIO()
    t0 = time.perf_counter()
    with redirect_stdout(out), suppress(SystemExit):
        cli.main(args, standalone_mode=False)
    return time.perf_counter() - t0


def list_in_process(root: Path) -> float:
    from omp_session.cli import cli

    out = io.StringIO()
    t0 = time.perf_counter()
    with redirect_stdout(out), suppress(SystemExit):
        cli.main(["list", "--all", "--json", "--root", str(root)], standalone_mode=False)
    took = time.perf_counter() - t0
    assert out.getvalue().startswith("["), out.getvalue()[:200]
    return took


def round_robin(runs: int, contenders: dict[str, Callable[[], Any]]) -> dict[str, list[Any]]:
    """Each contender ``runs`` times, the order rotated every round so machine noise spreads."""
    names = list(contenders)
    out: dict[str, list[Any]] = {k: [] for k in names}
    for i in range(runs):
        for name in names[i % len(names):] + names[: i % len(names)]:
            out[name].append(contenders[name]())
    return out


def server_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


# ----- list: the sessions page and a search over the realistic corpus --------------------------


def bench_list(args: argparse.Namespace) -> dict[str, Any]:
    root = build_root(args.sessions, args.total_gb, args.seed)
    t0 = time.perf_counter()
    search("warmup", root=root, limit=1)
    log(f"index of {args.sessions} sessions built in {time.perf_counter() - t0:.1f} s")
    words = pick_words(default_index_path())
    server = Server(root, server_env())
    try:
        list_in_process(root)
        list_in_process(root)
        server.request("/")
        for word, _docs in words.values():
            server.request(f"/api/search?q={word}")
            search(word, root=root)
        page: dict[str, list[float]] = {"serve": [], "list": []}
        found: dict[str, dict[str, list[float]]] = {label: {"serve": [], "inproc": []} for label in words}
        for _ in range(args.runs):
            page["serve"].append(server.request("/")[0])
            page["list"].append(list_in_process(root))
            for label, (word, _docs) in words.items():
                _first, last, body = server.request(f"/api/search?q={word}")
                found[label]["serve"].append(last)
                t0 = time.perf_counter()
                hits = search(word, root=root).hits
                found[label]["inproc"].append(time.perf_counter() - t0)
                assert len(json.loads(body)) == len(hits)
    finally:
        server.stop()
    med = {k: statistics.median(v) for k, v in page.items()}
    result: dict[str, Any] = {
        "sessions": args.sessions, "runs": args.runs, "server_start_s": server.started_s,
        "sessions_page": {"serve_first_byte_ms": med["serve"] * 1000, "list_json_ms": med["list"] * 1000,
                          "ratio": med["serve"] / med["list"]},
        "search": {},
    }
    for label, (word, docs) in words.items():
        s, i = statistics.median(found[label]["serve"]), statistics.median(found[label]["inproc"])
        result["search"][label] = {"word": word, "docs": docs, "serve_ms": s * 1000, "inproc_ms": i * 1000,
                                   "ratio": s / i}
    return result


def print_list(r: dict[str, Any]) -> None:
    print(f"omp-session serve over {r['sessions']} sessions, median of {r['runs']} (targets: <= 2x)")
    print(f"server ready (URL printed) {r['server_start_s'] * 1000:.0f} ms after start")
    p = r["sessions_page"]
    print(f"sessions page: first byte of / {p['serve_first_byte_ms']:.1f} ms, list --all --json in-process "
          f"{p['list_json_ms']:.1f} ms: {p['ratio']:.2f}x")
    print(f"{'search':<8} {'term':<26} {'docs':>6} {'in-process':>11} {'serve':>10} {'ratio':>6}")
    for label, x in r["search"].items():
        print(f"{label:<8} {x['word']:<26} {x['docs']:>6} {x['inproc_ms']:>9.2f}ms {x['serve_ms']:>8.2f}ms "
              f"{x['ratio']:>5.2f}x")


# ----- many: the sessions page over tens of thousands of small sessions ------------------------


def build_many(n: int) -> Path:
    """``<cache>/serve-many-<n>/sessions``: ``n`` sessions of a user question and an answer with
    usage (about 1 KB each) in MANY_BUCKETS projects, modified a minute apart; written once."""
    base = DATA_DIR / f"serve-many-{n}"
    root = base / "sessions"
    if (base / "done").is_file():
        return root
    shutil.rmtree(base, ignore_errors=True)
    log(f"writing {n} small sessions into {root} ...")
    t0 = time.perf_counter()
    start_s = 1_767_225_600  # 2026-01-01T00:00:00Z
    for i in range(n):
        cwd = f"/home/dev/src/project{i % MANY_BUCKETS:02d}"
        sid = f"0197{i:08x}-aaaa-7bbb-8ccc-{i:012x}"
        t = start_s + i * 60
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
        name = time.strftime("%Y-%m-%dT%H-%M-%S-000Z", time.gmtime(t)) + f"_{sid}.jsonl"
        records = [
            {"type": "session", "version": 3, "id": sid, "timestamp": f"{iso}.000Z", "cwd": cwd},
            {"type": "message", "id": "u1", "parentId": None, "timestamp": f"{iso}.100Z",
             "message": {"role": "user", "content": f"question {i}: why does the pagination cursor skip rows?",
                         "timestamp": t * 1000 + 100}},
            {"type": "message", "id": "a1", "parentId": "u1", "timestamp": f"{iso}.900Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}: the cursor "
                                                           "is taken after the sort; take it before."}],
                         "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                         "usage": {"input": 1200 + i % 300, "output": 80, "cacheRead": 0, "cacheWrite": 0,
                                   "totalTokens": 1280 + i % 300,
                                   "cost": {"input": 0.0036, "output": 0.0012, "cacheRead": 0, "cacheWrite": 0,
                                            "total": 0.0048}},
                         "stopReason": "stop", "timestamp": t * 1000 + 900}},
        ]
        path = root / project_dir_name(cwd) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records), "utf-8")
        os.utime(path, (t, t))
    (base / "done").write_text(json.dumps({"n": n}))
    log(f"written in {time.perf_counter() - t0:.1f} s")
    return root


def bench_many(args: argparse.Namespace) -> dict[str, Any]:
    n = args.many
    root = build_many(n)
    # once each, on empty caches: the server's first listing and the command's
    saved = os.environ["XDG_CACHE_HOME"]
    with tempfile.TemporaryDirectory(prefix="omp-serve-cold-") as cold:
        os.environ["XDG_CACHE_HOME"] = cold
        try:
            cold_list = list_in_process(root)
        finally:
            os.environ["XDG_CACHE_HOME"] = saved
    server = Server(root, server_env())
    deep = max(1, n // 100 // 2)  # a page in the middle of the list
    requests = {"page": "/", "api": "/api/sessions", "api_deep": f"/api/sessions?page={deep}",
                "filter": "/?text=question%201234%3A"}
    try:
        t0 = time.perf_counter()
        server.request("/")  # the server's first listing of the root (the listing cache is cold)
        first_listing = time.perf_counter() - t0
        list_in_process(root)
        list_in_process(root)
        for path in requests.values():
            server.request(path)
        contenders: dict[str, Callable[[], Any]] = {name: (lambda p=path: server.request(p))
                                                    for name, path in requests.items()}
        contenders["list"] = lambda: list_in_process(root)
        runs = round_robin(args.runs, contenders)
        rss = server.peak_rss()
    finally:
        server.stop()
    listed = median_ms(runs["list"])
    out: dict[str, Any] = {"sessions": n, "runs": args.runs, "first_listing_ms": first_listing * 1000,
                           "cold_list_json_ms": cold_list * 1000,
                           "list_json_ms": listed, "server_peak_rss_mb": rss / 1e6}
    for name, path in requests.items():
        first = median_ms([r[0] for r in runs[name]])
        last = median_ms([r[1] for r in runs[name]])
        out[name] = {"path": path, "first_byte_ms": first, "last_byte_ms": last, "bytes": len(runs[name][0][2]),
                     "first_ratio": first / listed, "last_ratio": last / listed}
    return out


def print_many(r: dict[str, Any]) -> None:
    print(f"\nthe sessions page over {r['sessions']} small sessions, median of {r['runs']}")
    print(f"list --all --json in-process: {r['list_json_ms']:.1f} ms; server peak RSS {r['server_peak_rss_mb']:.0f} MB")
    print(f"on empty caches (one run each): the server's first page {r['first_listing_ms']:.0f} ms, "
          f"list --all --json in-process {r['cold_list_json_ms']:.0f} ms")
    print(f"{'request':<32} {'first byte':>11} {'last byte':>10} {'bytes':>9} {'first/list':>10} {'last/list':>9}")
    for name in ("page", "api", "api_deep", "filter"):
        x = r[name]
        print(f"{x['path']:<32} {x['first_byte_ms']:>9.1f}ms {x['last_byte_ms']:>8.1f}ms {x['bytes']:>9} "
              f"{x['first_ratio']:>9.2f}x {x['last_ratio']:>8.2f}x")


# ----- big: the page of a big session against its HTML export -----------------------------------


def _session_id(path: Path) -> tuple[str, str]:
    """The header's id and cwd (the first line, or the second after a title slot)."""
    with open(path, "rb") as f:
        for _ in range(2):
            record = json.loads(f.readline())
            if record.get("type") == "session":
                return record["id"], record["cwd"]
    raise SystemExit(f"{path}: no session header in its first two lines")


def _export_args(session: Path, out: Path) -> list[str]:
    return ["export", str(session), "--format", "html", "-o", str(out)]


def _export_process(session: Path, out: Path, env: dict[str, str]) -> float:
    """``omp-session export SESSION --format html -o OUT`` as a process (interpreter start included)."""
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "omp_session", *_export_args(session, out)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


# the command's own peak, read by the process itself as it ends (a forked child's ru_maxrss counts
# the parent's pages it started with)
_PEAK_OF_EXPORT = """
import runpy, sys
sys.argv = ["omp-session", *sys.argv[1:]]
try:
    runpy.run_module("omp_session", run_name="__main__")
finally:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            print(int(line.split()[1]) * 1024, file=sys.stderr)
"""


def _export_peak_rss(session: Path, out: Path, env: dict[str, str]) -> int:
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", _PEAK_OF_EXPORT, *_export_args(session, out)], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(done.stderr.strip().splitlines()[-1])


def _export_in_process(session: Path, out: Path) -> float:
    out.unlink(missing_ok=True)
    took = cli_in_process(_export_args(session, out))
    assert out.stat().st_size > 0
    return took


def bench_big(args: argparse.Namespace) -> dict[str, Any]:
    source, blobs, _generated, _created = ensure_data(args.big_size, 1, DATA_DIR)
    sid, cwd = _session_id(source)
    with tempfile.TemporaryDirectory(prefix="omp-serve-big-") as scratch_name:
        scratch = Path(scratch_name)
        agent = scratch / "agent"
        agent.mkdir()
        if blobs.is_dir():
            (agent / "blobs").symlink_to(blobs)  # both sides resolve the images from the same store
        session = scratch / "sessions" / project_dir_name(cwd) / source.name.replace("session", f"big_{sid}")
        session.parent.mkdir(parents=True)
        try:
            os.link(source, session)
        except OSError:
            shutil.copyfile(source, session)
        size = session.stat().st_size
        # a cache of its own: the listing cache is one file for every root, and the other parts'
        # 20,000 rows held by this server would be counted in its peak memory
        env = {**server_env(), "PI_CODING_AGENT_DIR": str(agent), "XDG_CACHE_HOME": str(scratch / "cache")}
        saved = os.environ.get("PI_CODING_AGENT_DIR")
        os.environ["PI_CODING_AGENT_DIR"] = str(agent)  # the in-process export's blob store
        out = scratch / "export.html"
        server = Server(scratch / "sessions", env)
        try:
            # warm: the page cache, the listing, both code paths; the sizes compared once
            page = server.request(f"/s/{sid}")[2]
            _export_in_process(session, out)
            exported = out.stat().st_size
            export_rss = _export_peak_rss(session, out, env)
            log(f"[big] {session.stat().st_size / 1e6:.0f} MB session: page {len(page) / 1e6:.1f} MB, "
                f"export {exported / 1e6:.1f} MB")
            runs = round_robin(args.big_runs, {
                "serve": lambda: server.request(f"/s/{sid}")[:2],
                "export_process": lambda: _export_process(session, out, env),
                "export_in_process": lambda: _export_in_process(session, out),
            })
            rss = server.peak_rss()
        finally:
            server.stop()
            if saved is None:
                os.environ.pop("PI_CODING_AGENT_DIR", None)
            else:
                os.environ["PI_CODING_AGENT_DIR"] = saved
    serve_last = median_ms([r[1] for r in runs["serve"]])
    process = median_ms(runs["export_process"])
    in_process = median_ms(runs["export_in_process"])
    return {"size_mb": size / 1e6,
            "source": str(source), "runs": args.big_runs, "page_mb": len(page) / 1e6, "export_mb": exported / 1e6,
            "serve_first_byte_ms": median_ms([r[0] for r in runs["serve"]]), "serve_last_byte_ms": serve_last,
            "export_process_ms": process, "export_in_process_ms": in_process,
            "ratio_process": serve_last / process, "ratio_in_process": serve_last / in_process,
            "server_peak_rss_mb": rss / 1e6, "export_process_peak_rss_mb": export_rss / 1e6}


def print_big(r: dict[str, Any]) -> None:
    print(f"\nthe page of a {r['size_mb']:.0f} MB session ({r['source']}; page {r['page_mb']:.0f} MB), "
          f"median of {r['runs']} (target: <= 1.5x the export)")
    print(f"GET /s/<id>: first byte {r['serve_first_byte_ms']:.0f} ms, last byte {r['serve_last_byte_ms']:.0f} ms; "
          f"server peak RSS {r['server_peak_rss_mb']:.0f} MB")
    print(f"export --format html -o: process {r['export_process_ms']:.0f} ms (peak RSS "
          f"{r['export_process_peak_rss_mb']:.0f} MB), in-process {r['export_in_process_ms']:.0f} ms")
    print(f"serve / export: {r['ratio_process']:.2f}x the process, {r['ratio_in_process']:.2f}x in-process")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="list,many,big", help="comma list of: list, many, big")
    ap.add_argument("--sessions", type=int, default=2000, help="list: sessions of the realistic corpus")
    ap.add_argument("--total-gb", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=15, help="list and many: rounds")
    ap.add_argument("--many", type=int, default=20000, help="many: small sessions")
    ap.add_argument("--big-size", default="100M", help="big: the session's size (gen_large's K/M/G)")
    ap.add_argument("--big-runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - {"list", "many", "big"}
    if unknown:
        ap.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="omp-serve-bench-") as cache:
        os.environ["XDG_CACHE_HOME"] = cache  # one cache (listing, search index) for both sides
        for part, run in (("list", bench_list), ("many", bench_many), ("big", bench_big)):
            if part in parts:
                result[part] = run(args)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for part, show in (("list", print_list), ("many", print_many), ("big", print_big)):
        if part in result:
            show(result[part])


if __name__ == "__main__":
    main()
