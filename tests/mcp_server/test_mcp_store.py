"""``omp-session mcp --store URL`` driven by the SDK's own client over stdio: a temp agent dir
synced into SQLite and PostgreSQL (``sync --from file:DIR --to URL``, ``index --store``), and every
tool's answer compared with the same server's on the files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pytest
import redis
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_corpus import DOCS_ID, PARSER, PARSER_ID, SECRET, append_message, build

from builders import entry, header, run, stamp, user, write_session
from omp_session.cli.mcp import mcp_command
from omp_session.mcp_server.server import RESOURCE_PREFIX, TOOLS
from omp_session.paths import project_dir_name
from stores.sqlutil import MYSQL_URL, POSTGRES_URL
from stores.teamutil import drop_derived

pytestmark = pytest.mark.anyio

REDIS_URL = os.environ.get("OMP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ELSEWHERE = "/elsewhere/sessions/"  # another machine's sessions root, in the same table
HERE_ID = "dddd4444-0000-4000-8000-000000000004"
SUB = f"--work-proj--/{PARSER}/agent-1.jsonl"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _env(base: Path) -> dict[str, str]:
    return {"PI_CODING_AGENT_DIR": str(base / "agent"), "XDG_CACHE_HOME": str(base / "cache"),
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PATH": os.environ.get("PATH", "")}


def omp(base: Path, *args: str) -> str:
    """``omp-session ARGS`` in a process whose agent dir is ``base``'s."""
    out = subprocess.run([sys.executable, "-m", "omp_session", *args], capture_output=True, text=True, timeout=300,
                         env=_env(base), cwd=base, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


@asynccontextmanager
async def server(base: Path, *args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "omp_session", "mcp", *args],
                                   env=_env(base), cwd=str(base))
    with (base / f"server-{uuid.uuid4().hex[:6]}.err").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(client: ClientSession, name: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0]
    assert text.type == "text" and json.loads(text.text) == result.structured_content
    return result.structured_content


async def error(client: ClientSession, name: str, **args: Any) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, result
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


def _agent(base: Path) -> dict[str, Path]:
    """The corpus, and a session of the folder the servers run in (what ``latest`` finds)."""
    sessions = base / "agent" / "sessions"
    files = build(sessions)
    files["here"] = write_session(
        sessions / project_dir_name(str(base)) / f"2026-01-03T00-00-00-000Z_{HERE_ID}.jsonl",
        [entry("u1", None, timestamp=stamp(1, "2026-01-03"), message=user("a session of this folder"))],
        head=header(HERE_ID, cwd=str(base)), slot="This folder")  # a title: omp's resume passes over none
    return files


def _with(url: str, **options: str) -> str:
    return url + ("&" if "?" in url else "?") + "&".join(f"{k}={v}" for k, v in options.items())


@dataclass
class Synced:
    kind: str
    base: Path
    files: dict[str, Path]
    url: str  # the store, its root the agent dir's sessions (omp's keys: the files' paths)
    bare: str  # another table of the same database: synced, never indexed


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.db)])
def synced(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synced]:
    base = tmp_path_factory.mktemp(f"mcp-store-{request.param}")
    files = _agent(base)
    table, bare = f"t_{uuid.uuid4().hex[:16]}", f"t_{uuid.uuid4().hex[:16]}"
    db = f"sqlite:{base / 'team.db'}" if request.param == "sqlite" else POSTGRES_URL
    url = _with(db, table=table)
    # the same sessions again under another machine's root: never shown by this server
    other = base / "other"
    build(other / "sessions")
    elsewhere = _with(url, root=ELSEWHERE)
    for target in (url, elsewhere):
        omp(base, "sync", "--from", f"file:{base / 'agent' / 'sessions' if target == url else other / 'sessions'}",
            "--to", target)
        omp(base, "index", "--store", target)
    omp(base, "sync", "--from", f"file:{base / 'agent' / 'sessions'}", "--to", _with(db, table=bare))
    yield Synced(request.param, base, files, url, _with(db, table=bare))
    if request.param == "postgres":
        drop_derived(table)
        drop_derived(bare)


@pytest.fixture(scope="module")
async def clients(synced: Synced, anyio_backend: str) -> AsyncIterator[tuple[ClientSession, ClientSession]]:
    """The server on the files and the server on the store."""
    async with server(synced.base) as on_files, server(synced.base, "--store", synced.url) as on_store:
        yield on_files, on_store


async def same(clients: tuple[ClientSession, ClientSession], name: str, **args: Any) -> dict[str, Any]:
    """The store server's answer, checked equal to the file server's."""
    on_files, on_store = clients
    expected = await call(on_files, name, **args)
    got = await call(on_store, name, **args)
    assert got == expected, (name, args)
    return got


async def test_initialize_and_list_tools(clients: tuple[ClientSession, ClientSession]) -> None:
    on_files, on_store = clients
    tools = (await on_store.list_tools()).tools
    assert [t.name for t in tools] == list(TOOLS)
    assert [t.model_dump() for t in tools] == [t.model_dump() for t in (await on_files.list_tools()).tools]


async def test_list_sessions_is_the_files_listing(clients: tuple[ClientSession, ClientSession],
                                                  synced: Synced) -> None:
    listed = await same(clients, "list_sessions")
    assert {r["path"]: r["session"] for r in listed["sessions"]} == {
        str(synced.files[k]): i for k, i in (("here", HERE_ID), ("docs", DOCS_ID), ("parser", PARSER_ID))}
    assert listed["total"] == 3  # the other root's two sessions are not among them
    assert (await same(clients, "list_sessions", project="/work"))["total"] == 1
    assert (await same(clients, "list_sessions", query="CACHE docs"))["sessions"][0]["session"] == DOCS_ID
    assert (await same(clients, "list_sessions", limit=1, offset=1))["next_offset"] == 2
    assert (await same(clients, "list_sessions", since="2999-01-01"))["total"] == 0


@pytest.mark.parametrize(("query", "args"), [
    ("flaky", {}), ("cache", {}), ("cache OR flaky OR tokenizer", {}), ("cache OR flaky", {"limit": 1}),
    ("flaky", {"project": "/work"}), ("cache", {"project": "/work"}), ("cache", {"since": "2026-01-02T00:00:04Z"}),
    ("\"parser test\"", {}), ("walrusless", {}),
])
async def test_search_finds_what_the_files_search_finds(clients: tuple[ClientSession, ClientSession],
                                                        synced: Synced, query: str, args: dict[str, Any]) -> None:
    on_files, on_store = clients
    expected = (await call(on_files, "search_sessions", query=query, **args))["hits"]
    got = (await call(on_store, "search_sessions", query=query, **args))["hits"]
    for hit in got:
        assert "[" in hit["snippet"] and "]" in hit["snippet"]
    if synced.kind == "sqlite":  # FTS5 and bm25 as on the files; the snippet's cut may differ
        assert [{k: v for k, v in h.items() if k != "snippet"} for h in got] == \
            [{k: v for k, v in h.items() if k != "snippet"} for h in expected]
        return
    # PostgreSQL ranks by ts_rank_cd: the same sessions, each named and described alike, but the
    # best entry of each and their order may differ
    assert len(got) == len(expected)
    if len(expected) < args.get("limit", 10):
        assert {h["session"] for h in got} == {h["session"] for h in expected}
    described = {h["session"]: (h["title"], h["cwd"]) for h in expected}
    for hit in got:
        assert described.get(hit["session"], (hit["title"], hit["cwd"])) == (hit["title"], hit["cwd"])
        read = await call(on_store, "read_entry", session=hit["session"], entry=hit["entry"])
        assert read["time"] == hit["time"]


async def test_a_subagent_is_found_and_read(clients: tuple[ClientSession, ClientSession]) -> None:
    hits = (await call(clients[1], "search_sessions", query="tokenizer"))["hits"]
    assert [(h["session"], h["entry"]) for h in hits] == [(SUB, "s2")]
    assert (await same(clients, "read_session", session=SUB))["items"][0]["text"] == "subagent: look at the tokenizer"


@pytest.mark.parametrize("args", [
    {"session": DOCS_ID}, {"session": DOCS_ID, "view": "transcript"}, {"session": DOCS_ID, "view": "branch"},
    {"session": DOCS_ID, "leaf": "a3"}, {"session": PARSER_ID, "view": "branch", "from": 1, "limit": 2},
    {"session": PARSER_ID, "max_chars": 100}, {"session": "bbbb"}, {"session": "latest"},
    {"session": f"--work-proj--/{PARSER}.jsonl"},
])
async def test_read_session_is_the_files(clients: tuple[ClientSession, ClientSession], args: dict[str, Any]) -> None:
    out = await same(clients, "read_session", **args)
    assert out["items"] and out["total"] >= len(out["items"])


async def test_read_entry_tree_and_stats_are_the_files(clients: tuple[ClientSession, ClientSession]) -> None:
    entry_ = await same(clients, "read_entry", session=PARSER_ID, entry="t1", offset=4990, max_chars=200)
    assert entry_["text"].startswith("xxxxxxxxxx token sk-ant-") and entry_["total_chars"] > 5000
    tree = await same(clients, "session_tree", session=DOCS_ID)
    assert [f["id"] for f in tree["forks"]] == ["u1"] and tree["compactions"][0]["tokens_before"] == 1234
    parser_tree = await same(clients, "session_tree", session=PARSER_ID)
    assert [s["session"] for s in parser_tree["subagents"]] == [SUB]
    assert parser_tree["labels"] == [{"id": "a2", "label": "diagnosis"}]
    spent = await same(clients, "session_stats", session=PARSER_ID)
    assert spent["billed"]["requests"] == 3  # its subagent's turn is billed to it
    assert (await same(clients, "session_stats", project="/work"))["sessions"] == 1
    every = await same(clients, "session_stats")
    assert every["all"] is True and every["sessions"] == 3 and every["billed"]["requests"] == 5
    assert (await same(clients, "session_stats", since="1970-01-01"))["billed"]["requests"] == 5
    assert (await same(clients, "session_stats", since="2999-01-01"))["billed"]["requests"] == 0


async def test_resources_are_the_files(clients: tuple[ClientSession, ClientSession]) -> None:
    on_files, on_store = clients
    resources = (await on_store.list_resources()).resources
    assert [r.model_dump() for r in resources] == [r.model_dump() for r in (await on_files.list_resources()).resources]
    assert {str(r.uri) for r in resources} == {RESOURCE_PREFIX + i for i in (PARSER_ID, DOCS_ID, HERE_ID)}
    for session in (PARSER_ID, DOCS_ID, "latest"):
        got = (await on_store.read_resource(RESOURCE_PREFIX + session)).contents[0]
        expected = (await on_files.read_resource(RESOURCE_PREFIX + session)).contents[0]
        assert getattr(got, "text", None) == getattr(expected, "text", "")
    body = getattr((await on_store.read_resource(RESOURCE_PREFIX + PARSER_ID)).contents[0], "text", "")
    assert body.startswith("# Fix parser") and "characters omitted" in body
    with pytest.raises(MCPError, match="no session matches"):
        await on_store.read_resource(RESOURCE_PREFIX + "nothing-like-it")


@pytest.mark.parametrize(("name", "args", "says"), [
    ("read_session", {"session": "no-such-session"}, "no session matches 'no-such-session'"),
    ("read_session", {"session": "/etc/passwd"}, "outside the sessions root"),
    ("read_session", {"session": f"{ELSEWHERE}--work-proj--/{PARSER}.jsonl"}, "outside the sessions root"),
    ("read_session", {"session": f"--work-proj--/../../../other/sessions/--work-proj--/{PARSER}.jsonl"},
     "outside the sessions root"),
    ("read_session", {"session": "--work-proj--/2026-09-09T00-00-00-000Z_gone.jsonl"}, "no such session"),
    ("read_entry", {"session": PARSER_ID, "entry": "zz"}, "has no entry 'zz'"),
    ("session_tree", {"session": DOCS_ID, "leaf": "a3"}, "unknown argument 'leaf'"),
    ("session_stats", {"session": "nope"}, "no session matches 'nope'"),
    ("search_sessions", {"query": "NOT"}, "NOT needs a term"),
    ("list_sessions", {"since": "yesterday-ish"}, "not a date"),
])
async def test_bad_arguments_are_error_results(clients: tuple[ClientSession, ClientSession], name: str,
                                               args: dict[str, Any], says: str) -> None:
    on_store = clients[1]
    message = await error(on_store, name, **args)
    assert says in message and "\n" not in message
    assert (await call(on_store, "list_sessions", limit=1))["total"] == 3  # still serving


async def test_redact_over_the_store(synced: Synced) -> None:
    async with server(synced.base, "--store", synced.url, "--redact") as session:
        out = await call(session, "read_entry", session=PARSER_ID, entry="t1")
        assert SECRET not in out["text"] and "[REDACTED:anthropic-api-key]" in out["text"]
        hit = (await call(session, "search_sessions", query="token"))["hits"][0]
        assert hit["entry"] == "t1" and "AAAAAAAA" not in hit["snippet"]
        resource = (await session.read_resource(RESOURCE_PREFIX + PARSER_ID)).contents[0]
        assert SECRET[:24] not in getattr(resource, "text", "")


async def test_a_store_without_search_tables_says_how_to_make_them(synced: Synced) -> None:
    async with server(synced.base, "--store", synced.bare) as session:
        message = await error(session, "search_sessions", query="flaky")
        assert "no search tables yet: run omp-session index --store URL" in message and "\n" not in message
        assert (await call(session, "list_sessions"))["total"] == 3  # everything else works
        assert (await call(session, "read_entry", session=PARSER_ID, entry="a2"))["text"].startswith("The parser")


async def test_a_session_appended_in_the_store_is_seen_by_the_next_call(
        clients: tuple[ClientSession, ClientSession], synced: Synced) -> None:
    """Last in the module: it changes the sessions."""
    on_store = clients[1]
    assert (await call(on_store, "search_sessions", query="walrus"))["hits"] == []
    before = (await call(on_store, "read_session", session=PARSER_ID, view="branch"))["total"]
    append_message(synced.files["parser"], "w1", "l1", "the walrus test")
    assert "1 appended" in omp(synced.base, "sync", "--from", f"file:{synced.base / 'agent' / 'sessions'}",
                               "--to", synced.url)
    hits = (await call(on_store, "search_sessions", query="walrus"))["hits"]
    assert [(h["session"], h["entry"]) for h in hits] == [(PARSER_ID, "w1")]
    after = await same(clients, "read_session", session=PARSER_ID, view="branch", **{"from": before})
    assert [i["id"] for i in after["items"]] == ["w1"] and after["total"] == before + 1
    assert (await same(clients, "list_sessions"))["sessions"][0]["session"] == PARSER_ID  # now the newest


# ----- stores without search tables of their own, and the command line ----------------------------


@pytest.fixture(params=["mysql", "redis"])
def other_store(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "mysql":
        table = f"t_{uuid.uuid4().hex[:16]}"
        yield _with(MYSQL_URL, table=table)
        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", database="test")
        with conn:
            conn.cursor().execute(f"DROP TABLE IF EXISTS {table}")
    else:
        prefix = f"omp-mcp-{uuid.uuid4().hex[:12]}:"
        yield _with(REDIS_URL, prefix=prefix)
        raw = redis.Redis.from_url(REDIS_URL)
        for key in raw.scan_iter(match=prefix + "*"):
            raw.delete(key)
        raw.close()


@pytest.mark.db
async def test_mariadb_and_redis_serve_everything_but_search(other_store: str, tmp_path: Path,
                                                             anyio_backend: str) -> None:
    files = _agent(tmp_path)
    omp(tmp_path, "sync", "--from", f"file:{tmp_path / 'agent' / 'sessions'}", "--to", other_store)
    async with server(tmp_path) as on_files, server(tmp_path, "--store", other_store) as on_store:
        clients = (on_files, on_store)
        assert {r["path"] for r in (await same(clients, "list_sessions"))["sessions"]} == \
            {str(files[k]) for k in ("here", "docs", "parser")}
        await same(clients, "read_session", session=DOCS_ID, view="branch")
        await same(clients, "session_tree", session=PARSER_ID)
        await same(clients, "session_stats")
        message = await error(on_store, "search_sessions", query="flaky")
        assert message.endswith(": not supported: use PostgreSQL or SQLite for team search") and "\n" not in message


@pytest.mark.parametrize(("args", "code", "says"), [
    (["--root", "/tmp", "--store", "sqlite:/tmp/x.db"], 2, "give --root DIR or --store URL, not both"),
    (["--timeout", "3"], 2, "--timeout applies to a store's server: it needs --store URL"),
    (["--store", "postgresql://u@127.0.0.1:1/db", "--index", "i.sqlite"], 2, "--index is the file search index"),
    (["--store", "ftp://h/db"], 1, "'ftp://h/db' is not a store URL"),
])
def test_command_line_errors_are_one_line(args: list[str], code: int, says: str) -> None:
    exit_code, out, err = run(mcp_command, *args)
    assert exit_code == code and out == "" and says in err, err


def test_a_missing_database_file_is_one_line(tmp_path: Path) -> None:
    exit_code, _out, err = run(mcp_command, "--store", f"sqlite:{tmp_path / 'none.db'}")
    assert exit_code == 1
    assert err.strip().splitlines() == [f"omp-session: sqlite:{tmp_path / 'none.db'}: no database file "
                                        f"{tmp_path / 'none.db'}"]
