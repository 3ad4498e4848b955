"""The application: routes (docs/serve.md, "URLs"), and starting it on a socket.

Handlers that read files are plain functions, which Starlette runs in its thread pool, so a big
session being rendered never holds up the event streams; a session's page is streamed, each
piece made in the thread pool too. The search index and the stats cache
are used by one request at a time (each is one file under the cache dir).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import iterate_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from omp_session.errors import IndexBusyError, SessionError, StatsOptionError, StoreError
from omp_session.js.date import now_ms as stats_now  # the clock `stats --blocks` judges the active block by
from omp_session.ops.search.query import search
from omp_session.ops.stats.html import render_html as render_stats_html
from omp_session.ops.stats.report import stats

from . import pages
from .blocks import blocks_section
from .events import session_events
from .security import ASGIApp, Guard, new_token
from .sessions import Catalog, Query, QueryError, now_ms, row_json, without_surrogates
from .store_events import store_events
from .store_filters import Namespaces, namespace_filters
from .store_source import StoreCatalog, store_page, store_report, store_search
from .viewer import SessionStream, session_stream

__all__ = ["MAX_PER_PAGE", "PER_PAGE", "Running", "build_app", "serve_forever", "start"]

PER_PAGE: Final = 100
MAX_PER_PAGE: Final = 100_000
SEARCH_LIMIT: Final = 200  # hits on the search page (the JSON API keeps the CLI's 20 unless told)
MAX_SEARCH_LIMIT: Final = pages.MAX_SEARCH_LIMIT  # more is cut to this: the limit goes to SQLite (64 bits)
_STATIC_TYPES: Final = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


class _SessionId(Convertor[str]):
    """A session's id in ``/s/<id>`` and ``/events/<id>``: the rest of the path, whatever it holds
    (an id is the file's own word: a "/" or a line break in it is only text). It is only ever
    looked up in the listing, never made a path."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("session_id", _SessionId())


def _static_files() -> dict[str, tuple[bytes, str]]:
    """The browser files shipped in the package, read once: only these names are ever served."""
    out: dict[str, tuple[bytes, str]] = {}
    folder = resources.files("omp_session.serve") / "static"
    for item in folder.iterdir():
        kind = _STATIC_TYPES.get(os.path.splitext(item.name)[1])
        if kind is not None and item.is_file():
            out[item.name] = (item.read_bytes(), kind)
    return out


def _html(text: str, status: int = 200) -> Response:
    return Response(_encode_text(text), status_code=status, media_type="text/html; charset=utf-8")


def _json(value: Any, status: int = 200, *, indent: int | None = None) -> Response:
    text = json.dumps(value, ensure_ascii=False, indent=indent, separators=None if indent else (",", ":"))
    # a lone surrogate (JavaScript strings may hold one) only ever stands inside a JSON string,
    # where backslashreplace writes it as the \udXXX escape JSON.parse reads back
    body = text.encode("utf-8", "backslashreplace") + (b"\n" if indent else b"")
    return Response(body, status_code=status, media_type="application/json")


def _encode_text(text: str) -> bytes:
    """A page as UTF-8; a lone surrogate from a damaged session becomes U+FFFD, not a 500."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return without_surrogates(text).encode("utf-8")


async def _pieces_in_threads(page: SessionStream) -> AsyncIterator[bytes]:
    """The page's pieces made in the thread pool (each one reads the session file), never on the
    event loop; closed when the reader goes away mid-page, which closes the session at once."""
    try:
        async for piece in iterate_in_threadpool(page.pieces):
            yield piece
    finally:
        page.close()


class _PageResponse(StreamingResponse):
    """A session's page, streamed; its session is closed however the response ends. A reader gone
    before the first piece cancels the response before the pieces are ever asked for, and the
    ``finally`` of a generator that never started does not run."""

    def __init__(self, page: SessionStream) -> None:
        super().__init__(_pieces_in_threads(page), media_type="text/html; charset=utf-8",
                         headers={"content-security-policy": page.csp})
        self.page = page

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            if str(scope.get("method", "")).upper() == "HEAD":
                await _headers_only(self, send)
            else:
                await super().__call__(scope, receive, send)
        finally:
            self.page.close()


class _Stream(StreamingResponse):
    """An event stream; for HEAD only its headers (the stream would run until the reader left)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if str(scope.get("method", "")).upper() == "HEAD":
            await _headers_only(self, send)
        else:
            await super().__call__(scope, receive, send)


async def _headers_only(response: Response, send: Any) -> None:
    """The answer to HEAD: Starlette's streaming response makes its whole body for HEAD too (the
    server then drops it), which for a session page is the whole page rendered for nothing."""
    await send({"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _error(request: Request, status: int, message: str) -> Response:
    if _wants_json(request) or request.url.path.startswith("/api/"):
        return _json({"error": message}, status)
    return _html(pages.error_page(status, message), status)


def _int(value: str | None, default: int, *, name: str) -> int:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise QueryError(f"{name}={value!r} is not a number") from None


_ON, _OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _flag(value: str | None, *, name: str) -> bool:
    """A yes/no query parameter in any usual spelling (``blocks=false`` is off, not on)."""
    word = (value or "").strip().lower()
    if word in _ON:
        return True
    if word in _OFF:
        return False
    raise QueryError(f"{name}={value!r}: give 1 or 0 (or true/false, yes/no, on/off)")


@dataclass
class _State:
    catalog: Catalog
    root: str
    interval: float
    static: dict[str, tuple[bytes, str]]
    search_lock: threading.Lock
    stats_lock: threading.Lock
    stopping: threading.Event  # set when the server shuts down: the event streams end


def _query(request: Request, per_page: int, *, store: bool) -> Query:
    p = request.query_params
    user, host = namespace_filters(p, store=store)
    return Query(project=p.get("project", ""), text=p.get("text", ""), model=p.get("model", ""), since=p.get("since", ""),
                 until=p.get("until", ""), sort=p.get("sort", "modified") or "modified",
                 reverse=p.get("reverse", "") not in ("", "0", "false"),
                 page=_int(p.get("page"), 1, name="page"),
                 per_page=min(MAX_PER_PAGE, _int(p.get("per_page"), per_page, name="per_page")),  # below 1: a 400
                 user=user or "", machine=host or "")


def build_app(root: str | os.PathLike[str], *, token: str, host: str = "127.0.0.1", port: int,
              remote: bool = False, interval: float = 0.25, cache: bool = True,
              stopping: threading.Event | None = None, store: StoreCatalog | None = None) -> ASGIApp:
    """The guarded application serving the sessions under ``root`` (nothing is read yet), or
    with ``store``, those under that store's root (``root`` is then not used).
    ``stopping``, once set, ends the open event streams (:func:`serve_forever` sets it)."""
    root = store.parsed.root if store is not None else os.path.abspath(root)  # search and stats name files
    state = _State(store if store is not None else Catalog(root, cache=cache), root, interval, _static_files(), threading.Lock(),
                   threading.Lock(), stopping if stopping is not None else threading.Event())

    def choices() -> Namespaces | None:
        """What the store mode's user and machine controls offer (None on the files)."""
        return None if store is None else store.namespaces()

    def sessions_json(request: Request) -> Response:
        try:
            q = _query(request, PER_PAGE, store=store is not None)
            page = state.catalog.page(q)
        except StoreError as e:
            return _error(request, 503, str(e))
        except (QueryError, SessionError) as e:  # SessionError: user= on a store without search tables
            return _error(request, 400, str(e))
        now = now_ms()
        rows = [row_json(x, now) for r in page.rows for x in (r, *r.children)]
        return _json({"total": page.total, "page": page.page, "pages": page.pages,
                      "per_page": q.per_page, "stats_pending": page.stats_pending, "sessions": rows})

    def index(request: Request) -> Response:
        if _wants_json(request):
            return sessions_json(request)
        try:
            q = _query(request, PER_PAGE, store=store is not None)
            page = state.catalog.page(q)
            namespaces = choices()
        except StoreError as e:
            return _error(request, 503, str(e))
        except (QueryError, SessionError) as e:
            return _error(request, 400, str(e))
        return _html(pages.list_page(page, q, now_ms(), namespaces))

    def session(request: Request) -> Response:
        try:
            row = state.catalog.find(request.path_params["sid"])
        except StoreError as e:
            return _error(request, 503, str(e))
        if row is None:
            return _error(request, 404, "no such session")
        if store is not None:
            try:
                return _PageResponse(store_page(store, row))
            except StoreError as e:
                return _error(request, 503, str(e))
            except SessionError as e:
                return _error(request, 404, str(e))
        try:
            # read and checked here, in the thread pool: a failure is still a status, not a cut page
            page = session_stream(state.catalog, row)
        except SessionError as e:
            # gone or unreadable since it was listed: the file's own words, never a traceback
            return _error(request, 404 if not os.path.exists(row.path) else 500, str(e))
        except OSError:
            # gone, or no longer the regular file under the root that was listed (a symlink now)
            return _error(request, 404, "no such session")
        return _PageResponse(page)

    def events(request: Request) -> Response:
        if store is not None:  # no file to follow: the key's size and time are polled
            try:
                found = store.find(request.path_params["sid"])
            except StoreError as e:
                return _error(request, 503, str(e))
            if found is None:
                return _error(request, 404, "no such session")
            return _Stream(store_events(store.storage, found.path, stopping=state.stopping),
                                     media_type="text/event-stream", headers={"x-accel-buffering": "no"})
        row = state.catalog.find(request.path_params["sid"])
        if row is None:
            return _error(request, 404, "no such session")
        stream = session_events(row.path, interval=state.interval, follow=not row.archived,
                                allowed=state.catalog.is_listed_file, stopping=state.stopping)
        return _Stream(stream, media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    def _search(request: Request, limit: int) -> tuple[str, list[Any] | None, str | None, int, bool, int]:
        """(query, hits, error, status, whether the limit cut the hits, the limit)."""
        q = request.query_params.get("q", "").strip()
        try:
            user, host = namespace_filters(request.query_params, store=store is not None)
        except QueryError as e:
            return q, None, str(e), 400, False, limit
        if not q:
            return q, None, None, 200, False, limit
        try:
            limit = min(MAX_SEARCH_LIMIT, max(1, _int(request.query_params.get("limit"), limit, name="limit")))
            role = request.query_params.get("role") or None
            whole = request.query_params.get("sessions", "") not in ("", "0")
            if store is not None:  # one hit more than shown says whether there are more
                hits = store_search(store, q, role=role, limit=limit + 1, sessions=whole, user=user, host=host)
                return q, hits[:limit], None, 200, len(hits) > limit, limit
            with state.search_lock:
                result = search(q, root=state.root, role=role, limit=limit, sessions=whole)
        except StoreError as e:  # MariaDB, Redis: no search tables; a database gone
            return q, None, str(e), 503, False, limit
        except IndexBusyError as e:
            return q, None, str(e), 503, False, limit
        except (QueryError, SessionError) as e:  # a bad limit, or a query FTS cannot take (errors.QueryError)
            return q, None, str(e), 400, False, limit
        return q, result.hits, None, 200, result.truncated, limit

    def search_html(request: Request) -> Response:
        if _wants_json(request):
            return search_api(request)
        q, hits, error, status, truncated, limit = _search(request, SEARCH_LIMIT)
        p = request.query_params
        try:
            namespaces = choices()
        except StoreError as e:
            return _error(request, 503, str(e))
        cut = pages.SearchCut(limit, p.get("role", ""), p.get("sessions", "") not in ("", "0")) if truncated else None
        return _html(pages.search_page(q, hits, error, namespaces, p.get("user", ""), p.get("machine", ""), cut), status)

    def search_api(request: Request) -> Response:
        _q, hits, error, status, truncated, limit = _search(request, 20)
        if error is not None:
            return _json({"error": error}, status)
        if hits is None:
            return _error(request, 400, "give the words to search for as ?q=")
        rows = [h.to_json() for h in hits]
        # the hits stay the array `search --json` prints; whether the limit cut them is a header,
        # and with meta=1 a field of an object around them
        meta = request.query_params.get("meta", "") not in ("", "0")
        reply = _json({"hits": rows, "truncated": truncated, "limit": limit} if meta else rows)
        reply.headers["X-Search-Truncated"] = "true" if truncated else "false"
        return reply

    def _report(request: Request) -> Any:
        p = request.query_params
        user, host = namespace_filters(p, store=store is not None)
        if store is not None:
            return store_report(store, by=p.get("by") or "day", since=p.get("since") or None,
                                until=p.get("until") or None, tz=p.get("tz") or None, user=user, host=host)
        with state.stats_lock:
            return stats(all_sessions=True, root=state.root, by=p.get("by") or "day", since=p.get("since") or None,
                         until=p.get("until") or None, tz=p.get("tz") or None)

    def costs(request: Request) -> Response:
        if _wants_json(request):
            return costs_api(request)
        try:
            report = _report(request)
            namespaces = choices()
        except StoreError as e:
            return _error(request, 503, str(e))
        except (StatsOptionError, SessionError, QueryError) as e:
            return _error(request, 400, str(e))
        p = request.query_params
        since, until, tz = p.get("since", ""), p.get("until", ""), p.get("tz", "")
        user, machine = p.get("user", ""), p.get("machine", "")
        head = pages.costs_head(report, report.by, since, until, namespaces, user, machine)
        # the blocks at one "now", as `stats --blocks` cuts them once
        blocks_query = urlencode({k: v for k, v in (("blocks", "1"), ("since", since), ("until", until), ("tz", tz),
                                                    ("user", user), ("machine", machine)) if v})
        blocks = blocks_section(report.blocks_dict(stats_now()), blocks_query)
        return _html(pages.costs_page(render_stats_html(report), head, blocks))

    def costs_api(request: Request) -> Response:
        try:
            blocks = _flag(request.query_params.get("blocks"), name="blocks")
        except QueryError as e:
            return _error(request, 400, str(e))
        if blocks and request.query_params.get("by"):
            return _error(request, 400, "give by= or blocks=1, not both (as stats --by and --blocks)")
        try:
            report = _report(request)
        except StoreError as e:
            return _error(request, 503, str(e))
        except (StatsOptionError, SessionError, QueryError) as e:
            return _error(request, 400, str(e))
        # what `stats --json` (or `stats --blocks --json`) prints: json.dumps of the report's dict
        if blocks:
            return _json(report.blocks_dict(stats_now()), indent=2)
        return _json(report.to_dict(models=True), indent=2)

    def static(request: Request) -> Response:
        found = state.static.get(request.path_params["name"])
        if found is None:
            return _error(request, 404, "no such file")
        return Response(found[0], media_type=found[1])

    def favicon(_request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", index),
        Route("/api/sessions", sessions_json),
        Route("/s/{sid:session_id}", session),
        Route("/events/{sid:session_id}", events),
        Route("/search", search_html),
        Route("/api/search", search_api),
        Route("/costs", costs),
        Route("/api/costs", costs_api),
        Route("/static/{name}", static),
        Route("/favicon.ico", favicon),
        Route("/index.html", lambda _r: RedirectResponse("/", status_code=301)),
    ]
    def not_found(request: Request, _exc: Exception) -> Response:
        """Every unknown address: the styled page (JSON under /api/, as the API's other errors)."""
        return _error(request, 404, "no such page")

    app = Starlette(routes=routes, exception_handlers={404: not_found})
    return Guard(app, token=token, host=host, port=port, remote=remote)


# ----- running ------------------------------------------------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one); connections wait in its backlog
    until the server takes them, so the URL can be printed at once."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url_for(host: str, port: int, token: str) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host and not host.startswith("[")
                                                         else host)
    if host in ("::", "[::]"):
        shown = "[::1]"
    return f"http://{shown}:{port}/?token={token}"


def _server(app: ASGIApp, stopping: threading.Event) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # an event stream never ends by itself: told to, each ends at its next poll, well
            # within the grace period, instead of being cancelled with a traceback
            stopping.set()
            await super().shutdown(sockets)

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=1, ws="none")
    return Server(config)


def serve_forever(sock: socket.socket, app: ASGIApp, stopping: threading.Event) -> None:
    """Serve on ``sock`` until interrupted (Ctrl-C: KeyboardInterrupt once it has stopped);
    ``stopping`` is the event given to :func:`build_app`."""
    _server(app, stopping).run(sockets=[sock])


@dataclass
class Running:
    url: str
    base: str  # http://host:port, no token
    token: str
    port: int
    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextlib.contextmanager
def start(root: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 0, interval: float = 0.25,
          token: str | None = None) -> Iterator[Running]:
    """The server in a thread of this process, for tests and benchmarks: yields once it answers."""
    token = token or new_token()
    sock = bind(host, port)
    port = sock.getsockname()[1]
    stopping = threading.Event()
    server = _server(build_app(root, token=token, host=host, port=port, interval=interval, stopping=stopping),
                     stopping)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    running = Running(url_for(host, port, token), f"http://{host}:{port}", token, port, server, thread)
    try:
        for _ in range(1000):
            if server.started:
                break
            threading.Event().wait(0.01)
        yield running
    finally:
        running.stop()
        sock.close()
