"""The MCP server: the tools of :mod:`.tools` and recent sessions as resources, over stdio.

Built on the low-level ``Server`` of the official ``mcp`` SDK, so each tool's JSON schema is
written out here (stable, not derived from type hints) and ``resources/list`` can name the
sessions that exist now. A tool call runs in a worker thread, one at a time (the listing cache
is not shared between threads), so the connection keeps answering pings during a long search.

The SDK cancels the requests still running when stdin ends, so a client that writes a batch and
closes stdin (a script, a test, CI) would get the initialize reply and nothing else: the read
stream given to the SDK (:class:`_AnswerBeforeEOF`) holds stdin's end back until every request read
is answered, giving up when none has been answered for ``EOF_PATIENCE`` seconds.

A tool that cannot answer returns an error result (``isError``) with one line saying why: an
unknown session, a bad date, a limit out of range, a query that cannot be searched for. Only a
bug in this package ends as a JSON-RPC error, and the SDK keeps the server running then too.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final, Generic, TypeVar
from urllib.parse import quote, unquote

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from omp_session._version import __version__
from omp_session.errors import SessionError

from .render import utf8_safe
from .tools import DEFAULT_ITEM_CHARS, MAX_CHARS, MAX_LIMIT, VIEWS, Library

__all__ = ["EOF_PATIENCE", "RESOURCE_PREFIX", "TOOLS", "build_server", "run_stdio"]

RESOURCE_PREFIX: Final = "omp-session://session/"
RECENT_RESOURCES: Final = 50
# After stdin ends: how long to wait for the next answer before giving up on the requests left (the
# tools have no timeout of their own; a first search of a large root indexes it, a store answers
# within its connection's timeout). The wait starts again at every answer: a batch of slow requests
# that each finish is answered whole.
EOF_PATIENCE: Final = 120.0
# Then how long the SDK has to wind down: a tool running in a worker thread cannot be cancelled.
EXIT_GRACE: Final = 5.0

_T = TypeVar("_T")

_SESSION: Final = {"type": "string", "description": "A session: its id (or a unique prefix), 'latest' (the newest "
                   "session of the server's working directory), or a path under the sessions root as the "
                   "other tools return it."}
_PROJECT: Final = {"type": "string", "description": "A project directory: only sessions whose working directory "
                   "is it or below it."}
_SINCE: Final = {"type": "string", "description": "Only from this time on: a date or time (2026-05-14, "
                 "2026-05-14T10:00Z) or an age (7d, 12h, 30m)."}


def _limit(default: int, what: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": default,
            "description": f"At most this many {what}."}


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# name -> (description, input schema, the Library method)
TOOLS: Final[dict[str, tuple[str, dict[str, Any], Callable[[Library, Mapping[str, Any]], dict[str, Any]]]]] = {
    "list_sessions": (
        "List earlier omp coding-agent sessions, newest first: session id, title, working directory, times, "
        "message count, status and first message. Filter by project, time or words in the title and first "
        "messages (for full-text search use search_sessions).",
        _schema({"project": _PROJECT, "since": {**_SINCE, "description": "Only sessions modified since then: a date "
                                                 "or time, or an age (7d, 12h, 30m)."},
                 "query": {"type": "string", "description": "Words that must all appear (any case) in the title or "
                           "the first messages."},
                 "limit": _limit(20, "sessions"),
                 "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Skip this many (paging: "
                            "the answer's next_offset)."}}),
        Library.list_sessions),
    "search_sessions": (
        "Full-text search over every session (messages, tool calls and results, summaries, titles, labels): the "
        "best hit of each session, best first, with a snippet ([brackets] mark the matches) and the entry id to "
        "read it with read_session or read_entry. Query: words (all must match), \"a phrase\", prefix*, AND / OR / "
        "NOT, NEAR(a b, 5).",
        _schema({"query": {"type": "string", "description": "What to search for."}, "project": _PROJECT,
                 "since": {**_SINCE, "description": "Only entries from this time on: a date or time, or an age "
                           "(7d, 12h, 30m)."},
                 "limit": _limit(10, "sessions")}, ("query",)),
        Library.search_sessions),
    "read_session": (
        "Read a session's messages, a page at a time. view 'context' (default): what the model saw when the "
        "session would resume (after compactions); 'transcript': the whole conversation on the current branch; "
        "'branch': every entry from the root to the leaf (model changes, labels... too). Long texts are cut to "
        "max_chars, saying how much was omitted and how to read it (read_entry). Page with from/next.",
        _schema({"session": _SESSION, "view": {"type": "string", "enum": list(VIEWS), "default": "context"},
                 "leaf": {"type": "string", "description": "An entry id: read the branch ending there instead of "
                          "the session's current one (see session_tree)."},
                 "from": {"type": "integer", "minimum": 0, "default": 0, "description": "First item (the previous "
                          "answer's next)."},
                 "limit": _limit(50, "items"),
                 "max_chars": {"type": "integer", "minimum": 100, "maximum": MAX_CHARS, "default": DEFAULT_ITEM_CHARS,
                               "description": "Longest text shown whole, per item."}}, ("session",)),
        Library.read_session),
    "read_entry": (
        "Read one entry of a session in full (a long tool output read_session cut short), a page of max_chars "
        "characters at a time from offset.",
        _schema({"session": _SESSION, "entry": {"type": "string", "description": "The entry id."},
                 "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "First character (the "
                            "previous answer's next_offset)."},
                 "max_chars": {"type": "integer", "minimum": 100, "maximum": MAX_CHARS, "default": 20_000}},
                ("session", "entry")),
        Library.read_entry),
    "session_tree": (
        "The shape of a session: its leaf and current branch length, the tips of its branches, forks, labels, "
        "compactions and branch summaries (with their summaries), and its subagent sessions.",
        _schema({"session": _SESSION}, ("session",)),
        Library.session_tree),
    "session_stats": (
        "Tokens and cost, billed (every branch, subagents included) and on the current branch, per model: of one "
        "session, of a project's sessions, or of every session (neither given).",
        _schema({"session": _SESSION, "project": _PROJECT,
                 "since": {**_SINCE, "description": "Only usage from this time on: a date or time, or an age "
                           "(7d, 12h, 30m)."}}),
        Library.session_stats),
}


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=utf8_safe(message))], is_error=True)


def _invalid(message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=utf8_safe(message))


def build_server(library: Library) -> Server[Any]:
    """The low-level server answering from ``library``."""
    one_at_a_time = anyio.CapacityLimiter(1)

    async def run(fn: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(fn, limiter=one_at_a_time)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=description, input_schema=schema,
                       annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                         open_world_hint=False))
            for name, (description, schema, _fn) in TOOLS.items()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        found = TOOLS.get(params.name)
        if found is None:
            return _error(f"unknown tool {params.name!r} (tools: {', '.join(TOOLS)})")
        fn = found[2]
        arguments = params.arguments or {}
        try:
            result = await run(lambda: fn(library, arguments))
        except SessionError as e:  # what a caller can fix: one line
            return _error(str(e))
        except (OSError, RecursionError) as e:
            return _error(f"{params.name}: {e}")
        text = _text(result)
        if not _encodable(text):  # checked on the text once: walking every answer would cost more
            result = utf8_safe(result)
            text = _text(result)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=result)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        rows = utf8_safe(await run(lambda: library.recent(RECENT_RESOURCES)))
        return types.ListResourcesResult(resources=[
            types.Resource(uri=RESOURCE_PREFIX + quote(r["session"], safe=""), name=r["session"], title=r["title"] or r["first_message"][:80],
                           description=f"{r['cwd']} · modified {r['modified']} · {r['messages']} messages",
                           mime_type="text/markdown")
            for r in rows])

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=RESOURCE_PREFIX + "{session}", name="session",
                                   description="A session's model context as text (session: an id, unique prefix "
                                   "or 'latest').", mime_type="text/markdown")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if not uri.startswith(RESOURCE_PREFIX):
            raise _invalid(f"unknown resource {uri} (expected {RESOURCE_PREFIX}<id>)")
        session = unquote(uri[len(RESOURCE_PREFIX):])
        try:
            text = await run(lambda: library.session_markdown(session))
        except SessionError as e:
            raise _invalid(str(e)) from None
        except (OSError, RecursionError) as e:  # as call_tool: one line, not the SDK's code 0 and a traceback
            raise MCPError(code=types.INTERNAL_ERROR, message=utf8_safe(f"resources/read: {e}")) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=utf8_safe(text),
                                                                             mime_type="text/markdown")])

    return Server("omp-session", version=__version__,
                  instructions="Read-only access to earlier omp coding-agent sessions: list_sessions or "
                  "search_sessions to find one, read_session to read it, session_tree for its shape, "
                  "session_stats for tokens and cost.",
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_list_resource_templates=list_templates, on_read_resource=read_resource)


class _Requests:
    """The requests read from the client and not answered yet (by id, as the SDK correlates them)."""

    def __init__(self, patience: float = EOF_PATIENCE, on_give_up: Callable[[], None] | None = None) -> None:
        self.patience = patience
        self.gave_up = False
        self._on_give_up = on_give_up
        self._open: set[types.RequestId] = set()
        self._answered = anyio.Event()

    def read(self, item: SessionMessage | Exception) -> None:
        if not isinstance(item, SessionMessage):
            return
        message = item.message
        if isinstance(message, types.JSONRPCRequest):
            self._open.add(coerce_request_id(message.id))
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # the SDK never answers a request its client cancelled
            self._done(as_request_id((message.params or {}).get("requestId")))

    def sent(self, item: SessionMessage) -> None:
        if isinstance(item.message, (types.JSONRPCResponse, types.JSONRPCError)):
            self._done(item.message.id)

    def _done(self, request_id: types.RequestId | None) -> None:
        if request_id is not None and coerce_request_id(request_id) in self._open:
            self._open.discard(coerce_request_id(request_id))
            self._answered.set()

    async def wait(self) -> None:
        """Until every request read is answered, or none has been for ``patience`` seconds."""
        while self._open:
            self._answered = anyio.Event()
            with anyio.move_on_after(self.patience) as waited:
                await self._answered.wait()
            if waited.cancelled_caught:
                self.gave_up = True
                n = len(self._open)
                print(f"omp-session mcp: stdin closed; {n} request{'s' * (n != 1)} still unanswered after "
                      f"{self.patience:g} s without an answer: giving up on {'them' if n != 1 else 'it'}",
                      file=sys.stderr, flush=True)
                if self._on_give_up is not None:
                    self._on_give_up()
                return

    def writer(self, inner: Any) -> _Answers:
        return _Answers(inner, self)


class _AnswerBeforeEOF(Generic[_T]):
    """The read stream the SDK serves: stdin's messages, and its end only once the requests read are
    answered (:meth:`_Requests.wait`): at the end of its read stream the SDK cancels what still runs."""

    def __init__(self, inner: Any, requests: _Requests) -> None:
        self._inner = inner
        self._requests = requests

    @property
    def last_context(self) -> Any:  # the sender's context, which the SDK runs each handler in
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> _T:
        try:
            item: _T = await self._inner.receive()
        except anyio.EndOfStream:
            await self._requests.wait()
            raise
        self._requests.read(item)  # type: ignore[arg-type]
        return item

    def __aiter__(self) -> _AnswerBeforeEOF[_T]:
        return self

    async def __anext__(self) -> _T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnswerBeforeEOF[_T]:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class _Answers:
    """The write stream the SDK answers on: each answer sent is one request less to wait for."""

    def __init__(self, inner: Any, requests: _Requests) -> None:
        self._inner = inner
        self._requests = requests

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        self._requests.sent(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Answers:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


def _exit_soon(status: int) -> None:
    """End the process in ``EXIT_GRACE`` seconds if it has not ended by then: a worker thread stuck in
    a tool cannot be cancelled, and the interpreter would wait for it at exit."""
    def end() -> None:
        sys.stderr.flush()
        os._exit(status)

    timer = threading.Timer(EXIT_GRACE, end)
    timer.daemon = True
    timer.start()


def run_stdio(library: Library) -> None:
    """Serve on stdin/stdout until the client closes them, answering first every request read
    (:class:`_Requests`). Giving up on a request ends the process with 1, within ``EXIT_GRACE``."""
    server = build_server(library)
    requests = _Requests(on_give_up=lambda: _exit_soon(1))

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(_AnswerBeforeEOF(read, requests), requests.writer(write),
                             server.create_initialization_options())

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        # the client stopped reading (its end of stdout closed): raised as itself, the command
        # ends quietly as every command does when its reader leaves (cli/_errors.reported)
        broken, rest = group.split(BrokenPipeError)
        if broken is None or rest is not None:
            raise
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)) from None
    if requests.gave_up:
        raise SystemExit(1)
