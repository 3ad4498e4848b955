"""A client that writes its requests and closes stdin (a script, a test, CI) gets every answer:
``omp-session mcp`` answers what it read before EOF, then ends with 0. The SDK alone cancelled the
requests still running at EOF, so a piped batch got the initialize reply and nothing else.

The wait after EOF is bounded: a request that never finishes is given up on after the server's
patience, said on stderr, and the process ends (those checks drive the stream wrappers in-process
with a request nobody answers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from mcp_corpus import DOCS_ID, build

from omp_session.mcp_server.server import _AnswerBeforeEOF, _Requests


def _request(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def _batch() -> str:
    messages = [
        _request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "script", "version": "1"}}),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/call", {"name": "list_sessions", "arguments": {"limit": 1}}),
        _request(3, "tools/call", {"name": "session_stats", "arguments": {}}),
        _request(4, "tools/call", {"name": "read_session", "arguments": {"session": DOCS_ID, "limit": 2}}),
    ]
    return "".join(json.dumps(m) + "\n" for m in messages)


def test_a_piped_batch_is_answered_whole_before_the_server_ends(tmp_path: Path) -> None:
    build(tmp_path / "agent" / "sessions")
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-m", "omp_session", "mcp"], input=_batch(), capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    replies = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    assert sorted(replies) == [1, 2, 3, 4], out.stdout
    assert all("result" in m for m in replies.values()), out.stdout
    listed = replies[2]["result"]["structuredContent"]
    assert len(listed["sessions"]) == 1 and listed["total"] == 2
    assert replies[3]["result"]["structuredContent"]["billed"]
    assert replies[4]["result"]["structuredContent"]["session"] == DOCS_ID
    assert out.stderr == ""


def _message(payload: dict[str, Any]) -> SessionMessage:
    return SessionMessage(types.jsonrpc_message_adapter.validate_python(payload, by_name=False))


def _tools_call(id_: int | str) -> SessionMessage:
    return _message(_request(id_, "tools/call", {"name": "list_sessions", "arguments": {}}))  # type: ignore[arg-type]


def _answer(id_: int | str) -> SessionMessage:
    return _message({"jsonrpc": "2.0", "id": id_, "result": {}})


async def _feed(*items: SessionMessage) -> Any:
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](len(items))
    for item in items:
        await send.send(item)
    await send.aclose()  # EOF
    return receive


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_eof_comes_once_every_request_read_is_answered() -> None:
    requests = _Requests(patience=60)
    read = _AnswerBeforeEOF(await _feed(_tools_call(1), _tools_call("2")), requests)
    sink, drained = anyio.create_memory_object_stream[SessionMessage](10)
    write = requests.writer(sink)
    events: list[str] = []

    async def server() -> None:
        async for item in read:
            events.append(f"read {item.message.id}")  # type: ignore[union-attr]
        events.append("EOF")

    async with anyio.create_task_group() as tg:
        tg.start_soon(server)
        await anyio.wait_all_tasks_blocked()
        assert events == ["read 1", "read 2"]  # EOF held back: two requests are not answered
        await write.send(_answer(2))  # an id echoed as its int is the same request
        await anyio.wait_all_tasks_blocked()
        assert events == ["read 1", "read 2"]
        await write.send(_answer(1))
    assert events == ["read 1", "read 2", "EOF"]
    assert not requests.gave_up
    drained.close()


@pytest.mark.anyio
async def test_a_cancelled_request_is_not_waited_for() -> None:
    cancel = _message({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    requests = _Requests(patience=60)
    read = _AnswerBeforeEOF(await _feed(_tools_call(7), cancel), requests)
    assert len([item async for item in read]) == 2
    assert not requests.gave_up


@pytest.mark.anyio
async def test_a_request_that_never_ends_is_given_up_on(capsys: pytest.CaptureFixture[str]) -> None:
    requests = _Requests(patience=0.01)
    read = _AnswerBeforeEOF(await _feed(_tools_call(5)), requests)
    assert len([item async for item in read]) == 1  # EOF comes although nobody answered
    assert requests.gave_up
    assert capsys.readouterr().err.splitlines() == [
        "omp-session mcp: stdin closed; 1 request still unanswered after 0.01 s without an answer: giving up on it"]
