"""``stats --store`` from the derived tables (ops/stats/database.py, store/derived/stats_query.py,
store/derived/trees.py): the same report as ``stats`` on the files, to the last bit, on SQLite and
PostgreSQL; kept right by appends that switch branches; filtered by namespace; and tables of an
older layout dropped and derived again (docs/stats.md, docs/team.md)."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import invoke
from omp_session.catalog.derived import refresh, refresh_url
from omp_session.cli import cli
from omp_session.cli.stats import stats_command
from omp_session.format.title import build_title_slot
from omp_session.ops.stats.database import stats_in_tables
from omp_session.ops.stats.report import stats
from omp_session.ops.sync import sync_urls
from omp_session.store import open_store
from omp_session.store.base import SessionStorage
from omp_session.store.derived import derived_names, open_derived
from omp_session.store.derived.schema import SCHEMA_VERSION
from omp_session.store.derived.trees import settle_tree
from stores.sqlutil import POSTGRES_URL
from stores.teamutil import drop_derived

DATA = Path(__file__).resolve().parents[1] / "data"
ORACLE = Path(__file__).resolve().parents[1] / "reference"
GROUPINGS = ("session", "day", "week", "month", "model", "provider", "project")
MODELS = [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5.1-codex"), ("google", "gemini-2.5-pro"),
          ("openrouter", "qwen/qwen3-coder")]
# costs whose sum depends on the order they are added in (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1)
COSTS = [0.1, 0.2, 0.3, 1 / 3, 0.000123, 2.5e-7, 0.7]
# two days around Europe/Berlin's change to summer time (2026-03-29), so that days depend on the zone
BASE = int(datetime(2026, 3, 28, 18, 0, tzinfo=UTC).timestamp() * 1000)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _line(value: Any) -> bytes:
    return (json.dumps(value) + "\n").encode()


# ----- sessions with subagents, advisors, side calls, branch switches and forks -------------------


class Conv:
    """One transcript written as omp writes it: a header, then entries chained by parentId (the
    leaf moves with every append but a side call's); ``lines`` grows as entries are added."""

    def __init__(self, rnd: random.Random, rel: str, sid: str, ms: int, cwd: str) -> None:
        self.rnd, self.rel, self.sid, self.t = rnd, rel, sid, ms
        self.lines = [_line({"type": "session", "version": 3, "id": sid, "timestamp": _iso(ms), "cwd": cwd})]
        self.ids: list[str] = []
        self.movable: list[str] = []  # entries a branch switch may go back to (not side calls)
        self.leaf: str | None = None
        self.n = 0

    @property
    def stem(self) -> str:
        return self.rel.removesuffix(".jsonl")

    def add(self, *, move: bool = True, **fields: Any) -> dict[str, Any]:
        self.n += 1
        self.t += self.rnd.choice([1_000, 60_000, 3_600_000, 4 * 3_600_000, 11 * 3_600_000])
        eid = f"{self.sid[:6]}{self.n:04d}"
        record = {"type": "message", "id": eid, "parentId": self.leaf, "timestamp": _iso(self.t), **fields}
        self.lines.append(_line(record))
        self.ids.append(eid)
        if move:
            self.leaf = eid
            self.movable.append(eid)
        return record

    def usage(self) -> dict[str, Any]:
        i, o = self.rnd.randint(1, 5000), self.rnd.randint(1, 500)
        return {"input": i, "output": o, "cacheRead": 0, "cacheWrite": 0, "totalTokens": i + o,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": self.rnd.choice(COSTS)}}

    def user(self) -> None:
        self.add(message={"role": "user", "content": "go on", "timestamp": self.t})

    def assistant(self) -> None:
        provider, model = self.rnd.choice(MODELS)
        self.add(message={"role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": provider,
                          "model": model, "usage": self.usage(), "stopReason": "stop", "timestamp": self.t + 1})

    def side(self) -> None:  # a side call (title, auto-thinking): the leaf stays (spec S3.15)
        self.add(move=False, type="model_usage", purpose="title", provider="openai", model="gpt-5-mini",
                 usage=self.usage())

    def task(self, agents: list[str]) -> None:
        results = [{"index": n, "id": a, "agent": "task", "usage": self.usage(),
                    "resolvedModel": "openai/gpt-5.1-codex:high"} for n, a in enumerate(agents)]
        total = {k: sum(r["usage"][k] for r in results) for k in ("input", "output", "cacheRead", "cacheWrite",
                                                                  "totalTokens")}
        total["cost"] = {"total": sum(r["usage"]["cost"]["total"] for r in results)}
        self.add(message={"role": "toolResult", "toolCallId": "c", "toolName": "task", "isError": False,
                          "content": [{"type": "text", "text": "done"}], "timestamp": self.t,
                          "details": {"results": results, "usage": total}})

    def switch(self) -> None:
        """Go back to an older entry (``/tree``, editing an earlier message): the next entry
        starts a branch there and the old one is abandoned."""
        if self.movable:
            self.leaf = self.rnd.choice(self.movable)

    def compaction(self) -> None:
        if self.ids:
            self.add(type="compaction", summary="so far", firstKeptEntryId=self.ids[-1], tokensBefore=1000)

    def body(self) -> bytes:
        return b"".join(self.lines)


class Team:
    """Sessions under a root, as relative path -> Conv; each step changes some and says which."""

    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.convs: dict[str, Conv] = {}
        self.families: list[Conv] = []
        self.count = 0

    def conv(self, rel: str, cwd: str) -> Conv:
        self.count += 1
        c = Conv(self.rnd, rel, f"{self.count:06x}{uuid.UUID(int=self.rnd.getrandbits(128)).hex[:10]}",
                 BASE + self.count * 1_800_000, cwd)
        self.convs[rel] = c
        return c

    def family(self) -> Conv:
        bucket = f"--work-p{len(self.families) % 3}--"
        top = self.conv(f"{bucket}/{self.count + 1:04d}_s.jsonl", f"/work/p{len(self.families) % 3}")
        self.families.append(top)
        for _ in range(self.rnd.randint(2, 6)):
            self.turn(top)
        return top

    def turn(self, c: Conv) -> list[str]:
        """A random step of conversation ``c``; the transcripts it made (new subagents)."""
        made: list[str] = []
        op = self.rnd.choice(["chat", "chat", "chat", "side", "switch", "task", "task", "compaction"])
        if op == "side":
            c.side()
        elif op == "switch":
            c.switch()
            c.user()
            c.assistant()
        elif op == "compaction":
            c.compaction()
        elif op == "task":
            agents = [f"Agent{c.n}x{k}" for k in range(self.rnd.randint(1, 2))]
            c.task(agents)
            for a in agents:
                if self.rnd.random() < 0.7:  # else the agent's transcript is gone
                    made += self.subagent(c, a)
        else:
            c.user()
            c.assistant()
        return made

    def subagent(self, parent: Conv, agent: str) -> list[str]:
        sub = self.conv(f"{parent.stem}/{agent}.jsonl", "/work/sub")
        sub.user()
        sub.assistant()
        sub.assistant()
        made = [sub.rel]
        if self.rnd.random() < 0.3:  # a nested subagent: in the agent's folder, or dotted beside it
            child = f"{agent}.N{sub.n}"
            sub.task([child])
            where = f"{sub.stem}/{child}.jsonl" if self.rnd.random() < 0.5 else f"{parent.stem}/{child}.jsonl"
            nested = self.conv(where, "/work/sub")
            nested.assistant()
            made.append(nested.rel)
        return made

    def advisor(self, top: Conv) -> str:
        adv = self.conv(f"{top.stem}/__advisor.jsonl", "/work/adv")
        adv.assistant()
        return adv.rel

    def fork(self, of: Conv, *, reset_cost: bool) -> Conv:
        """A copy of ``of``'s entries (same ids and times: fork() and createBranchedSession()),
        created later, then continued; ``reset_cost``: the copies cost nothing (resetInheritedCost)."""
        bucket = of.rel.split("/")[0]
        f = self.conv(f"{bucket}/{self.count + 1:04d}_fork.jsonl", "/work/fork")
        for raw in of.lines[1:]:
            record = json.loads(raw)
            usage = (record.get("message") or {}).get("usage") if record.get("type") == "message" else \
                record.get("usage")
            if reset_cost and isinstance(usage, dict):
                usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
            f.lines.append(_line(record))
        f.ids, f.movable, f.leaf, f.n = list(of.ids), list(of.movable), of.leaf, of.n
        f.sid = of.sid  # its entry ids continue the original's numbering, as omp's do not collide
        f.user()
        f.assistant()
        return f

    def build(self, families: int) -> None:
        for _ in range(families):
            top = self.family()
            if self.rnd.random() < 0.3:
                self.advisor(top)
            if self.rnd.random() < 0.4:
                self.fork(top, reset_cost=self.rnd.random() < 0.5)
        # a transcript in a folder whose own transcript is missing: ops/stats never reads it
        self.conv(f"{self.families[0].stem}/Ghost/Orphan.jsonl", "/work/x").assistant()

    def write(self, folder: Path) -> None:
        for rel, c in self.convs.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(c.body())


# ----- stores ------------------------------------------------------------------------------------------


def _drop(table: str) -> None:
    drop_derived(table)


def _url(kind: str, tmp: Path, root: str) -> tuple[str, str]:
    table = f"t_{uuid.uuid4().hex[:16]}"
    base = f"sqlite:{tmp / f'{table}.db'}" if kind == "sqlite" else POSTGRES_URL
    return f"{base}?table={table}&root={root}", table


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _complete(raw: bytes) -> bytes:
    """Up to the last LF: a last line without one is a write in progress to the derived tables."""
    return raw[:raw.rfind(b"\n") + 1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sessions root: generated families (subagents with and without their transcripts, nested
    ones, advisors, side calls, branch switches, compactions, forks with and without their cost),
    the generator's sessions of every kind, and every session file of the test data."""
    root = tmp_path_factory.mktemp("stats-corpus") / "sessions"
    team = Team(20260329)
    team.build(24)
    team.write(root)
    gen = tmp_path_factory.mktemp("gen")
    subprocess.run([sys.executable, str(ORACLE / "gen_sessions.py"), "--seed", "11", "--count", "80", "--kinds", "all",
                    "--out", str(gen)], check=True, capture_output=True)
    files = sorted(gen.glob("*.jsonl")) + sorted(DATA.rglob("*.jsonl"))
    for i, f in enumerate(files):
        if f.stat().st_size > 4_000_000:
            continue  # the generator's 8 MiB streaming files: the same rules, only slower
        bucket = root / f"--data{i % 7}--"
        bucket.mkdir(parents=True, exist_ok=True)
        (bucket / f"{i:04d}_{f.name.lstrip('.')}").write_bytes(_complete(f.read_bytes()))
    return root


@pytest.fixture(scope="module")
def synced(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The corpus synced into a fresh SQLite file and a fresh PostgreSQL table (the derived
    tables made by index --store first, kept by sync)."""
    tmp = tmp_path_factory.mktemp("stores")
    urls: dict[str, str] = {}
    tables: list[str] = []
    for k in ("sqlite", "postgres"):
        url, table = _url(k, tmp, f"{corpus}/")
        assert refresh_url(url) is not None
        report = sync_urls(f"file:{corpus}", url, use_state=False)
        assert report.derived is not None and "error" not in report.derived, report.derived
        urls[k] = url
        tables.append(table)
        # a session a database cannot hold (invalid UTF-8) is not copied: the files compared are the copied ones
        storage = open_store(url)
        try:
            held = {f.path for f in storage.scan(f"{corpus}/")}
        finally:
            storage.close()
        for path in corpus.rglob("*.jsonl"):
            if str(path) not in held:
                assert k == "sqlite", path
                path.unlink()
    yield urls
    _drop(tables[1])


def _cli(*args: str) -> str:
    result = invoke(cli, "stats", *args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("by", GROUPINGS)
def test_the_store_s_json_is_the_files_json(synced: dict[str, str], corpus: Path, kind: str, by: str) -> None:
    """`stats --store URL --json` prints exactly what `stats --json` prints on the same sessions:
    every grouping, in a zone with a daylight-saving change, with and without a window."""
    for window in ([], ["--since", "2026-03-29"], ["--since", "2026-03-29T03:00", "--until", "2026-04-02"]):
        args = ["--all", "--by", by, "--tz", "Europe/Berlin", "--json", *window]
        files = _cli("--root", str(corpus), *args, "--no-cache")
        assert _cli("--store", synced[kind], *args) == files
        assert json.loads(files)["sessions"] > 100


@pytest.mark.parametrize("tz", [None, "America/New_York", "EST5EDT,M3.2.0,M11.1.0"])
def test_the_local_zone(synced: dict[str, str], corpus: Path, kind: str, tz: str | None,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --tz, days are the local zone's: $TZ's IANA zone, /etc/localtime's, or a POSIX rule
    (no name PostgreSQL knows: the periods are cut from the records, here)."""
    if tz is None:
        monkeypatch.delenv("TZ", raising=False)
    else:
        monkeypatch.setenv("TZ", tz)
    args = ["--all", "--by", "day", "--json", "--since", "2026-03-29"]
    assert _cli("--store", synced[kind], *args) == _cli("--root", str(corpus), *args, "--no-cache")


def test_the_corpus_has_what_it_should(synced: dict[str, str], kind: str) -> None:
    """The families hold what the equality above is about: subagents counted from their own
    transcripts, task results counted for missing ones, nested ones, advisors, forks' copies, an
    orphan never read, and rows off the current branch."""
    with open_derived(synced[kind]) as t:
        n = t.names
        one = t.rows
        assert one(f"SELECT count(*) FROM {n.usage} WHERE matched = 1")[0][0] > 5
        assert one(f"SELECT count(*) FROM {n.usage} WHERE kind = 'task' AND matched = 0 AND agent IS NOT NULL")[0][0] > 3
        assert one(f"SELECT count(*) FROM {n.sessions} WHERE key LIKE ?", ("%/__advisor.jsonl",))[0][0] > 2
        assert one(f"SELECT count(*) FROM {n.sessions} WHERE key LIKE ?", ("%.N%.jsonl",))[0][0] > 0
        assert one(f"SELECT count(*) FROM {n.sessions} WHERE node_order IS NULL")[0][0] == 1  # the orphan
        assert one(f"SELECT count(*) FROM {n.usage} WHERE shared = 1")[0][0] > 10
        assert one(f"SELECT count(*) FROM {n.usage} WHERE on_branch = 0")[0][0] > 10
        assert one(f"SELECT count(*) FROM {n.sessions} WHERE node_current = 0 AND node_order IS NOT NULL")[0][0] > 0
        assert one(f"SELECT count(*) FROM {n.sessions} s WHERE s.key <> s.top")[0][0] > 20


def test_blocks_and_the_page_are_the_files(synced: dict[str, str], corpus: Path, kind: str, tmp_path: Path) -> None:
    """--blocks (and -o report.html) look at the records: the store hands them over in ops/stats'
    order and ops/stats' own code cuts the blocks; the requests before --since still place them."""
    for window in ([], ["--since", "2026-03-29T10:00"]):
        files = json.loads(_cli("--root", str(corpus), "--all", "--blocks", "--tz", "UTC", "--json", "--no-cache",
                                *window))
        stored = json.loads(_cli("--store", synced[kind], "--all", "--blocks", "--tz", "UTC", "--json", *window))
        files.pop("now")
        stored.pop("now")
        assert stored == files and len(files["blocks"]) > 5
    page_files, page_store = tmp_path / "f.html", tmp_path / "s.html"
    _cli("--root", str(corpus), "--all", "--tz", "UTC", "-o", str(page_files), "--no-cache")
    _cli("--store", synced[kind], "--all", "--tz", "UTC", "-o", str(page_store))
    assert page_store.read_text() == page_files.read_text()


def test_named_sessions_and_one_project(synced: dict[str, str], corpus: Path, kind: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """SESSIONs (top-level keys) and, without --all, the current project's bucket under the root."""
    tops = sorted(str(p) for p in (corpus / "--work-p1--").glob("*.jsonl"))[:3]
    args = ["--by", "session", "--tz", "UTC", "--json"]
    assert _cli("--store", synced[kind], *tops, *args) == _cli(*tops, *args, "--no-cache")
    monkeypatch.chdir("/")
    monkeypatch.setattr("omp_session.ops.stats.database.project_dir_name", lambda cwd: "--work-p2--")
    monkeypatch.setattr("omp_session.ops.stats.report.project_dir_name", lambda cwd: "--work-p2--")
    assert _cli("--store", synced[kind], "--by", "model", "--json") == \
        _cli("--root", str(corpus), "--by", "model", "--json", "--no-cache")


def test_grouped_and_placed_agree_in_a_zone_postgresql_does_not_name(synced: dict[str, str], corpus: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A local time without an IANA name: PostgreSQL cannot cut its days, so the records are cut
    here, by ops/stats' own code; the report is the same."""
    monkeypatch.setattr("omp_session.ops.stats.database.zone_sql_name", lambda tz: None)
    with open_derived(synced["postgres"]) as t:
        got = stats_in_tables(t, all_sessions=True, root=f"{corpus}/", by="day", tz="America/New_York")
        assert got.items  # placed
    assert got.to_dict() == stats(all_sessions=True, root=corpus, by="day", tz="America/New_York", cache=False).to_dict()


# ----- kept right by appends: incremental == rebuild, and == the files ---------------------------------

ROOT = "/team/sessions/"
_STEPS = st.lists(st.tuples(st.sampled_from(["turn", "turn", "turn", "switch", "side", "family", "fork", "drop",
                                             "title", "refresh"]), st.integers(0, 1_000_000)),
                  min_size=3, max_size=14)


def _snapshot(url: str) -> dict[str, list[Any]]:
    with open_derived(url) as t:
        n = t.names
        norm = (lambda r: tuple(bytes(v) if isinstance(v, memoryview) else v for v in r))  # noqa: E731
        return {name: sorted(map(norm, t.rows(f"SELECT * FROM {table}")))
                for name, table in (("sessions", n.sessions), ("usage", n.usage))}


def _same_reports(url: str, storage: SessionStorage) -> None:
    with open_derived(url) as t:
        for by, tz in (("session", "UTC"), ("day", "Europe/Berlin"), ("model", "UTC")):
            files = stats(all_sessions=True, root=ROOT, by=by, tz=tz, storage=storage).to_dict()
            assert stats_in_tables(t, all_sessions=True, root=ROOT, by=by, tz=tz).to_dict() == files


def _history(url: str, steps: list[tuple[str, int]]) -> None:
    storage = open_store(url, create=True)
    try:
        team = Team(steps[0][1])
        team.family()
        for c in team.convs.values():
            storage.replace(ROOT + c.rel, c.body(), None)
        assert refresh_url(url) is not None
        for op, n in steps:
            rnd = random.Random(n)
            tops = [c for c in team.families if ROOT + c.rel in {f.path for f in storage.scan(ROOT)}]
            if op == "refresh" or not tops:
                assert refresh_url(url) is not None
                _same_reports(url, storage)
                continue
            c = rnd.choice(tops)
            convs = [c, *[x for r, x in team.convs.items() if r.startswith(c.stem + "/")]]
            if op == "family":
                made = [team.family()]
                made += [team.convs[r] for r in team.convs if r.startswith(made[0].stem + "/")]
                for m in made:
                    storage.replace(ROOT + m.rel, m.body(), None)
            elif op == "fork":
                f = team.fork(c, reset_cost=rnd.random() < 0.5)
                storage.replace(ROOT + f.rel, f.body(), None)
            elif op == "drop":  # a subagent's transcript deleted (and what is in its folder)
                subs = [x for x in convs[1:] if storage.size(ROOT + x.rel) is not None]
                if subs:
                    storage.delete(ROOT + rnd.choice(subs).rel)
            elif op == "title":  # omp rewrites the first line: the whole transcript is derived again
                slot = build_title_slot(f"title {n}", "user", _iso(BASE))
                storage.replace(ROOT + c.rel, slot + c.body(), storage.size(ROOT + c.rel))
            else:
                target = rnd.choice([x for x in convs if storage.size(ROOT + x.rel) is not None])
                before = len(target.lines)
                if op == "switch":
                    target.switch()
                    target.user()
                    target.assistant()
                elif op == "side":
                    target.side()
                else:
                    made = team.turn(target)
                    for rel in made:
                        storage.replace(ROOT + rel, team.convs[rel].body(), None)
                size = storage.size(ROOT + target.rel)
                if size is not None:
                    storage.append(ROOT + target.rel, b"".join(target.lines[before:]))
        assert refresh_url(url) is not None
        _same_reports(url, storage)
        incremental = _snapshot(url)
        assert refresh_url(url, rebuild=True) is not None
        assert _snapshot(url) == incremental
    finally:
        storage.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS)
def test_appends_that_switch_branches_keep_the_tables_a_rebuild(kind: str, tmp_path: Path,
                                                                steps: list[tuple[str, int]]) -> None:
    """After random appends (branch switches, side calls, tasks with and without their agents'
    transcripts), new sessions and forks, deleted subagents and rewritten titles, with updates in
    between: the report equals ops/stats reading the same store, and the tables a rebuild's."""
    url, table = _url(kind, tmp_path, ROOT)
    try:
        _history(url, steps)
    finally:
        if kind == "postgres":
            _drop(table)


def test_a_branch_switch_moves_the_current_view(kind: str, tmp_path: Path) -> None:
    """Going back to an older entry and going on abandons the branch after it: its usage leaves
    the current view (its subagent's too) and stays billed."""
    url, table = _url(kind, tmp_path, ROOT)
    storage = open_store(url, create=True)
    try:
        team = Team(5)
        c = team.conv("--w--/0001_s.jsonl", "/w")
        c.user()
        c.assistant()
        fork_point = c.leaf
        c.user()
        c.task(["AgentA"])
        sub = team.subagent(c, "AgentA")
        c.assistant()
        for rel in [c.rel, *sub]:
            storage.replace(ROOT + rel, team.convs[rel].body(), None)
        assert refresh_url(url) is not None
        with open_derived(url) as t:
            before = stats_in_tables(t, all_sessions=True, root=ROOT, by="session")
        assert before.total.current.requests == before.total.billed.requests
        size = len(c.body())
        c.leaf = fork_point
        c.user()
        c.assistant()
        storage.append(ROOT + c.rel, c.body()[size:])
        report = refresh_url(url)
        assert report is not None and report.grown == [ROOT + c.rel]
        with open_derived(url) as t:
            after = stats_in_tables(t, all_sessions=True, root=ROOT, by="session")
            flags = t.rows(f"SELECT seq, on_branch FROM {t.names.usage} WHERE key = ? ORDER BY seq", (ROOT + c.rel,))
            agent_current = t.rows(f"SELECT node_current FROM {t.names.sessions} WHERE key = ?",
                                   (ROOT + sub[0],))[0][0]
        assert [f for _s, f in flags] == [1, 0, 0, 1]  # the first answer, the task, the answer after it, the new one
        assert agent_current == 0
        assert after.total.billed.requests == before.total.billed.requests + 1
        assert after.to_dict() == stats(all_sessions=True, root=ROOT, by="session", storage=storage).to_dict()
    finally:
        storage.close()
        if kind == "postgres":
            _drop(table)


def test_the_tree_of_a_session() -> None:
    """trees.settle_tree: ops/stats' walk (a folder's transcripts by name, each followed by its
    own folder's), the first transcript of an agent's name, and the current view through task
    results on the current branch only."""
    top = "/r/b/s.jsonl"
    keys = [top, "/r/b/s/B.jsonl", "/r/b/s/A.jsonl", "/r/b/s/A/C.jsonl", "/r/b/s/__advisor.jsonl",
            "/r/b/s/X/Y.jsonl", "/r/b/s/A.D.jsonl"]
    tasks = [(top, 3, 0, "A", True), (top, 4, 0, "B", False), ("/r/b/s/A.jsonl", 2, 0, "C", True),
             ("/r/b/s/A.jsonl", 3, 0, "A.D", False), (top, 5, 0, "Gone", True)]
    tree = settle_tree(top, keys, tasks)
    assert [k for k, _ in sorted(((k, o) for k, o in tree.order.items() if o is not None), key=lambda x: x[1])] == [
        top, "/r/b/s/A.D.jsonl", "/r/b/s/A.jsonl", "/r/b/s/A/C.jsonl", "/r/b/s/B.jsonl", "/r/b/s/__advisor.jsonl"]
    assert tree.order["/r/b/s/X/Y.jsonl"] is None  # X.jsonl is missing: never read
    assert tree.matched == {(top, 3, 0), (top, 4, 0), ("/r/b/s/A.jsonl", 2, 0), ("/r/b/s/A.jsonl", 3, 0)}
    assert {k for k, v in tree.current.items() if v} == {top, "/r/b/s/A.jsonl", "/r/b/s/A/C.jsonl"}
    assert settle_tree(top, keys[1:], tasks).order == dict.fromkeys(keys[1:])  # no session file: no tree


# ----- many people: --user / --machine ------------------------------------------------------------------


def test_user_and_machine_filters(kind: str, tmp_path: Path) -> None:
    """--user/--machine keep the sessions of a namespace; the report is ops/stats' on just those
    sessions, so a fork whose original is someone else's is billed to its own session."""
    url, table = _url(kind, tmp_path, ROOT)
    storage = open_store(url, create=True)
    try:
        team = Team(9)
        alice = team.family()
        bob_fork = team.fork(alice, reset_cost=False)
        carol = team.family()
        owners = {alice.rel: "alice@laptop", bob_fork.rel: "bob@desk", carol.rel: "alice@desk"}
        for rel, c in team.convs.items():
            storage.replace(ROOT + rel, c.body(), None)
        namespaces = {ROOT + r: owners[next(o for o in owners if r == o or r.startswith(o[:-6] + "/"))]
                      for r in team.convs}
        with open_derived(url) as t:
            t.create()
            refresh(t, ROOT, namespaces=namespaces)

        def only(*rels: str, **kw: str) -> dict[str, Any]:
            """The store's report of the sessions the filters ``kw`` keep (none: of ``rels``), and
            ops/stats' of ``rels`` read from the store."""
            keys = None if kw else [ROOT + r for r in rels]
            with open_derived(url) as t:
                got = stats_in_tables(t, keys, all_sessions=True, root=ROOT, by="session", **kw).to_dict()
            want = stats([ROOT + r for r in rels], root=ROOT, by="session", storage=storage).to_dict()
            assert got == want
            return got

        assert [g["key"] for g in only(alice.rel, carol.rel, user="alice")["groups"]] == [ROOT + alice.rel,
                                                                                        ROOT + carol.rel]
        bob = only(bob_fork.rel, user="bob")
        assert bob["total"]["billed"]["requests"] == bob["total"]["current"]["requests"]  # nothing billed elsewhere
        only(carol.rel, host="desk", user="alice")
        only(bob_fork.rel, carol.rel, host="desk")
        assert only(host="laptop@x")["sessions"] == 0
        assert only(user="ali")["sessions"] == 0  # whole parts only
        everyone = only(alice.rel, bob_fork.rel, carol.rel)
        assert everyone["total"]["billed"]["requests"] < sum(
            only(r)["total"]["billed"]["requests"] for r in (alice.rel, bob_fork.rel, carol.rel))  # the fork's copies
        out = _cli("--store", url, "--all", "--user", "bob", "--by", "session", "--json")
        assert [g["key"] for g in json.loads(out)["groups"]] == [ROOT + bob_fork.rel]
    finally:
        storage.close()
        if kind == "postgres":
            _drop(table)


def test_filters_need_a_store_with_tables(tmp_path: Path) -> None:
    assert "needs --store URL" in invoke(cli, "stats", "--all", "--user", "alice").output
    db = f"sqlite:{tmp_path / 'empty.db'}"
    open_store(db, create=True).close()
    result = invoke(stats_command, "--store", db, "--all", "--user", "alice")
    assert result.exit_code == 1
    assert "--user needs the search tables, and there are none yet: run omp-session index --store URL" in result.output
    assert "--machine: the host is empty" in invoke(stats_command, "--store", db, "--all", "--machine", "").output


def test_without_tables_every_session_is_read(tmp_path: Path) -> None:
    """A store nobody ran index --store on: stats reads every session, as before, and says how to
    let the database do it; MariaDB and Redis stores are read the same way, and say --user is theirs not."""
    team = Team(3)
    team.family()
    folder = tmp_path / "s"
    team.write(folder)
    db = f"sqlite:{tmp_path / 'plain.db'}?root={folder}/"
    open_store(db, create=True).close()
    sync_urls(f"file:{folder}", db, use_state=False)
    result = invoke(stats_command, "--store", db, "--all", "--json", "--tz", "UTC")
    assert result.exit_code == 0
    assert "run omp-session index --store URL to let the database add the usage up; reading every session" in \
        result.stderr
    assert json.loads(result.stdout) == json.loads(_cli("--root", str(folder), "--all", "--json", "--tz", "UTC",
                                                        "--no-cache"))
    redis = invoke(stats_command, "--store", "redis://127.0.0.1:6379/0", "--all", "--user", "x")
    assert redis.exit_code == 1
    assert "not supported: use PostgreSQL or SQLite for team search" in redis.output


# ----- an older layout ----------------------------------------------------------------------------------

_FIRST_LAYOUT = [
    "CREATE TABLE {s} (key TEXT PRIMARY KEY, id TEXT, cwd TEXT, title TEXT, created TEXT, modified BIGINT NOT NULL, "
    "size BIGINT NOT NULL, derived BIGINT NOT NULL, head {blob} NOT NULL, anchor {blob} NOT NULL, title_columns TEXT, "
    "entries INTEGER NOT NULL, messages INTEGER NOT NULL, next_seq INTEGER NOT NULL, damaged INTEGER NOT NULL, "
    "models TEXT NOT NULL, cost REAL, tokens REAL, namespace TEXT, keyed INTEGER NOT NULL)",
    "CREATE TABLE {e} (id {serial}, key TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, entry_id TEXT, "
    "type TEXT, role TEXT, ts BIGINT, target_id TEXT, text TEXT NOT NULL)",
    "CREATE TABLE {u} (key TEXT NOT NULL, seq INTEGER NOT NULL, n INTEGER NOT NULL, entry_id TEXT, ts REAL, "
    "kind TEXT NOT NULL, provider TEXT, model TEXT, input REAL NOT NULL, output REAL NOT NULL, "
    "cache_read REAL NOT NULL, cache_write REAL NOT NULL, total_tokens REAL NOT NULL, cost REAL NOT NULL, "
    "dedup TEXT, agent TEXT, PRIMARY KEY (key, seq, n))",
    "INSERT INTO {s} VALUES ('{root}--w--/0001_s.jsonl', 's', '/w', NULL, NULL, 0, 1, 1, '', '', NULL, 0, 0, 1, 0, "
    "'[]', 0, 0, 'alice@laptop', 1)",
]


def test_tables_of_an_older_layout_are_derived_again(kind: str, tmp_path: Path) -> None:
    """The first layout (no meta table, no stats columns): stats says to run index --store; the
    next index drops the tables and derives them again (one line on stderr), keeping where each
    session came from."""
    url, table = _url(kind, tmp_path, ROOT)
    storage = open_store(url, create=True)
    try:
        team = Team(4)
        c = team.conv("--w--/0001_s.jsonl", "/w")
        c.assistant()
        storage.replace(ROOT + c.rel, c.body(), None)
        n = derived_names(table)
        pg = kind == "postgres"
        names = {"s": n.sessions, "e": n.entries, "u": n.usage, "root": ROOT, "blob": "BYTEA" if pg else "BLOB",
                 "serial": "BIGSERIAL PRIMARY KEY" if pg else "INTEGER PRIMARY KEY"}
        old = [s.format(**names) for s in _FIRST_LAYOUT]
        if pg:
            with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
                for statement in old:
                    conn.execute(statement.replace("''", "'\\x'::bytea") if "INSERT" in statement else statement)
        else:
            with sqlite3.connect(url.split("?")[0].removeprefix("sqlite:")) as conn:
                for statement in old:
                    conn.execute(statement)
        with open_derived(url) as t:
            assert t.version() == 1 and t.outdated()
        stale = invoke(stats_command, "--store", url, "--all", "--user", "alice")
        assert stale.exit_code == 1 and "--user needs the search tables, and they are of an older layout (1, " in \
            stale.output and "run omp-session index --store URL" in stale.output
        result = invoke(cli, "index", "--store", url)
        assert result.exit_code == 0, result.output
        assert "the search tables were made by another omp-session (layout 1, this one's is " \
               f"{SCHEMA_VERSION}): dropped and derived again" in result.stderr
        with open_derived(url) as t:
            assert t.version() == SCHEMA_VERSION and not t.outdated()
            assert t.rows(f"SELECT namespace FROM {n.sessions}") == [("alice@laptop",)]
        assert json.loads(_cli("--store", url, "--all", "--user", "alice", "--json"))["total"]["billed"]["requests"] == 1
        assert "were made by another" not in invoke(cli, "index", "--store", url).stderr
    finally:
        storage.close()
        if kind == "postgres":
            _drop(table)


def test_an_upgrade_keeps_row_level_security(tmp_path: Path) -> None:
    """PostgreSQL: tables remade by an upgrade get the old tables' grants and policies again
    (dropping them drops both): a team member still reads only their own sessions."""
    from omp_session.store.derived.rls import apply_rls

    role = f"omp_u_{uuid.uuid4().hex[:8]}"
    url, table = _url("postgres", tmp_path, ROOT)
    storage = open_store(url, create=True)
    admin = psycopg.connect(POSTGRES_URL, autocommit=True)
    try:
        admin.execute(f"CREATE ROLE {role} NOLOGIN")
        assert refresh_url(url) is not None
        with open_derived(url) as t:
            apply_rls(t, role)
            t.rows(f"ALTER TABLE {t.names.sessions} ALTER COLUMN layout SET DEFAULT 1")  # as if made by an older build
        assert refresh_url(url) is not None
        n = derived_names(table)
        secured = admin.execute("SELECT relrowsecurity FROM pg_class WHERE oid = %s::regclass",
                                (n.usage,)).fetchone()
        grants = admin.execute("SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = %s "
                               "AND table_name IN (%s, %s)", (role, n.sessions, n.usage)).fetchone()
        assert secured == (True,) and grants is not None and grants[0] >= 8
    finally:
        storage.close()
        _drop(table)
        admin.execute(f"DROP OWNED BY {role}")
        admin.execute(f"DROP ROLE {role}")
        admin.close()


def test_counts_that_are_not_whole_numbers(kind: str, tmp_path: Path) -> None:
    """stats sums a whole JSON number as an int and anything else as a float, in file order: a
    count of 0.1 makes the sums floats, added in that order (0.1 + 0.2 + 0.3 is not 0.3 + 0.2 +
    0.1), and the rest of the report stays ints."""
    url, table = _url(kind, tmp_path, ROOT)
    storage = open_store(url, create=True)
    try:
        team = Team(12)
        for k in range(3):
            c = team.conv(f"--w--/000{k}_s.jsonl", "/w")
            for x in (0.1, 0.2, 0.3, 7, 1e-9):
                c.assistant()
                record = json.loads(c.lines[-1])
                record["message"]["usage"]["input"] = x
                record["message"]["usage"]["cacheRead"] = x if k == 1 else 3
                c.lines[-1] = _line(record)
            storage.replace(ROOT + c.rel, c.body(), None)
        assert refresh_url(url) is not None
        with open_derived(url) as t:
            for by in ("day", "model", "session"):
                got = stats_in_tables(t, all_sessions=True, root=ROOT, by=by, tz="UTC").to_dict()
                assert got == stats(all_sessions=True, root=ROOT, by=by, tz="UTC", storage=storage).to_dict()
        assert isinstance(got["total"]["billed"]["input"], float) and isinstance(got["total"]["billed"]["output"], int)
        assert [type(g["billed"]["cacheRead"]) for g in got["groups"]] == [int, float, int]
    finally:
        storage.close()
        if kind == "postgres":
            _drop(table)
