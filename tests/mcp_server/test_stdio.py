"""``omp-session mcp`` driven by the SDK's own client over stdio: one server process for the
module, on a temp agent dir, its answers checked against the library."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_corpus import DOCS_ID, PARSER_ID, SECRET, append_message, build

from omp_session.mcp_server.server import RESOURCE_PREFIX, TOOLS
from omp_session.model.session import open_session
from omp_session.ops.stats.report import stats

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mcp")
    files = build(base / "agent" / "sessions")
    return {"base": base, **files}


def _params(base: Path, *extra: str) -> StdioServerParameters:
    env = {"PI_CODING_AGENT_DIR": str(base / "agent"), "XDG_CACHE_HOME": str(base / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return StdioServerParameters(command=sys.executable, args=["-m", "omp_session", "mcp", *extra], env=env,
                                 cwd=str(base))


@pytest.fixture(scope="module")
async def client(agent: dict[str, Path], anyio_backend: str) -> AsyncIterator[ClientSession]:
    with (agent["base"] / "server.err").open("w") as errlog:
        async with stdio_client(_params(agent["base"]), errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
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


async def test_initialize_and_list_tools(client: ClientSession) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(TOOLS) == {"list_sessions", "search_sessions", "read_session", "read_entry",
                                        "session_tree", "session_stats"}
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.description
    assert tools["search_sessions"].input_schema["required"] == ["query"]
    assert tools["read_session"].input_schema["properties"]["view"]["enum"] == ["context", "transcript", "branch"]


async def test_each_tool_answers_as_the_library(client: ClientSession, agent: dict[str, Path]) -> None:
    listed = await call(client, "list_sessions")
    assert {r["session"] for r in listed["sessions"]} == {PARSER_ID, DOCS_ID}
    hits = (await call(client, "search_sessions", query="flaky"))["hits"]
    assert [(h["session"], h["entry"]) for h in hits] == [(PARSER_ID, "u1")]
    read = await call(client, "read_session", session=DOCS_ID, view="branch")
    with open_session(agent["docs"]) as s:
        assert [i["id"] for i in read["items"]] == [s.ids[k] for k in s.branch_indices()]
        context = s.build_session_context()["messages"]
    assert (await call(client, "read_session", session=DOCS_ID))["total"] == len(context)
    entry = await call(client, "read_entry", session=PARSER_ID, entry="a2")
    assert entry["text"] == "The parser test was flaky because of dict ordering."
    tree = await call(client, "session_tree", session=DOCS_ID)
    assert [f["id"] for f in tree["forks"]] == ["u1"]
    spent = await call(client, "session_stats", session=PARSER_ID)
    assert spent["billed"] == stats([agent["parser"]], by="model", tz="UTC").total.billed.to_dict()
    assert spent["billed"]["requests"] == 3  # its subagent's turn is billed to it


@pytest.mark.parametrize(("name", "args", "says"), [
    ("read_session", {"session": "no-such-session"}, "no session matches"),
    ("read_session", {"session": "/etc/passwd"}, "outside the sessions root"),
    ("read_session", {"session": PARSER_ID, "limit": 10**12}, "limit must be between 1 and 200"),
    ("list_sessions", {"since": "not a date"}, "not a date"),
    ("search_sessions", {"query": "NOT"}, "NOT needs a term"),
    ("search_sessions", {}, "query is required"),
    ("session_tree", {"session": PARSER_ID, "depth": 2}, "unknown argument 'depth'"),
    ("no_such_tool", {}, "unknown tool"),
])
async def test_bad_arguments_are_error_results(client: ClientSession, name: str, args: dict[str, Any],
                                               says: str) -> None:
    assert says in await error(client, name, **args)
    assert (await call(client, "list_sessions", limit=1))["total"] == 2  # still serving


async def test_a_session_appended_between_calls_is_seen(client: ClientSession, agent: dict[str, Path]) -> None:
    assert (await call(client, "search_sessions", query="walrus"))["hits"] == []
    before = (await call(client, "read_session", session=PARSER_ID, view="branch"))["total"]
    append_message(agent["parser"], "w1", "l1", "the walrus test")
    assert [h["entry"] for h in (await call(client, "search_sessions", query="walrus"))["hits"]] == ["w1"]
    after = await call(client, "read_session", session=PARSER_ID, view="branch", **{"from": before})
    assert [i["id"] for i in after["items"]] == ["w1"] and after["total"] == before + 1


async def test_resources(client: ClientSession) -> None:
    resources = (await client.list_resources()).resources
    assert {str(r.uri) for r in resources} == {RESOURCE_PREFIX + PARSER_ID, RESOURCE_PREFIX + DOCS_ID}
    parser = next(r for r in resources if str(r.uri).endswith(PARSER_ID))
    assert parser.title == "Fix parser" and parser.mime_type == "text/markdown"
    text = (await client.read_resource(RESOURCE_PREFIX + PARSER_ID)).contents[0]
    assert text.mime_type == "text/markdown"
    body = getattr(text, "text", "")
    assert body.startswith("# Fix parser") and "please fix the flaky parser test" in body
    assert "characters omitted" in body  # the long tool output is cut here too
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == [RESOURCE_PREFIX + "{session}"]
    with pytest.raises(MCPError, match="no session matches"):
        await client.read_resource(RESOURCE_PREFIX + "nothing-like-it")


async def test_redact_over_stdio(agent: dict[str, Path]) -> None:
    async with stdio_client(_params(agent["base"], "--redact"), errlog=sys.stderr) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        out = await call(session, "read_entry", session=PARSER_ID, entry="t1")
        assert SECRET not in out["text"] and "[REDACTED:anthropic-api-key]" in out["text"]
        resource = (await session.read_resource(RESOURCE_PREFIX + PARSER_ID)).contents[0]
        assert SECRET[:24] not in getattr(resource, "text", "")
