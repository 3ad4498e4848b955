"""What stands between the network and a user's transcripts (docs/serve.md, "Security").

Every request passes :class:`Guard`, an ASGI wrapper around the app, in this order:

1. ``Host`` must name this server (DNS rebinding: a page of another site whose name was made to
   resolve to 127.0.0.1 sends its own name). Locally: the bound address, ``localhost``,
   ``127.0.0.1`` or ``[::1]`` with the bound port. With ``--allow-remote``: an IP address or this
   machine's name, with the bound port.
2. The token, as Jupyter does: ``?token=`` on the first request (answered with a cookie, and a
   page request is sent on to the same URL without the token so it does not stay in the address
   bar), then the cookie; ``Authorization: Bearer`` for scripts. Without it: 403.
3. ``Origin``: a request another site's page makes is refused (one of a page of another port of
   this machine too, but a navigation), and so is anything but GET/HEAD without the server's own
   origin (nothing here writes, but nothing should even be asked to).

Every answer, a refusal too, gets the security headers: a Content-Security-Policy that allows
nothing but this server (pages may set a stricter or hash-bearing one of their own), no sniffing,
no referrer, no framing, no caching of transcripts.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final
from urllib.parse import parse_qsl, quote, unquote_plus

__all__ = ["DEFAULT_CSP", "Guard", "cookie_name", "new_token"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Styles may be inline: the viewer and the stats report carry their own <style>. Scripts only
# from this server (the viewer page adds the hash of its one inline script).
DEFAULT_CSP: Final = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                      "img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; "
                      "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_HEADERS: Final = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_LOCAL_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
# what may stay as it is in a Location built from the request line (all printable ASCII but the
# space, quotes, angle brackets and the backslash, which browsers read as "/")
_URL_SAFE: Final = "!#$%&'()*+,/:;=?@[]^_`{|}~-."


def new_token() -> str:
    return secrets.token_urlsafe(32)


def cookie_name(port: int) -> str:
    """Cookies are per host, not per port: two servers on one machine must not share one."""
    return f"omp_session_token_{port}"


def _split_host(value: str) -> tuple[str, str] | None:
    """``host:port`` -> (host, port); a bracketed IPv6 host keeps its brackets."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or value[end + 1: end + 2] != ":":
            return None
        return value[: end + 1], value[end + 2:]
    host, sep, port = value.rpartition(":")
    return (host, port) if sep and host else None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class Guard:
    """The ASGI wrapper described in the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str, host: str, port: int, remote: bool = False) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.remote = remote
        bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
        self.names = {bound.lower(), *_LOCAL_NAMES}
        if remote:
            name = socket.gethostname().lower()
            self.names |= {name, socket.getfqdn(name).lower()}
        self.cookie = cookie_name(port)

    # ----- the checks ----------------------------------------------------------------------

    def host_ok(self, value: str | None) -> bool:
        parts = _split_host((value or "").strip().lower())
        if parts is None or parts[1] != str(self.port):
            return False
        host = parts[0]
        return host in self.names or (self.remote and _is_ip(host))

    def _token_of(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[str | None, bool]:
        """(the token the request carries, whether it came in the query)."""
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query:
            return query["token"], True
        auth = headers.get(b"authorization", b"").decode("latin-1")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip(), False
        return _cookie(headers.get(b"cookie", b""), self.cookie, self.token), False

    def _origin_ok(self, method: str, headers: dict[bytes, bytes]) -> bool:
        site = headers.get(b"sec-fetch-site", b"")
        if site == b"cross-site":
            return False
        # another server on localhost is the same site (ports do not count), so the SameSite
        # cookie goes with its page's <script>/<img>/fetch requests: only a navigation may come
        if site == b"same-site" and headers.get(b"sec-fetch-mode", b"") != b"navigate":
            return False
        origin = headers.get(b"origin")
        own = b"http://" + headers.get(b"host", b"").lower()
        if origin is not None and origin.lower() != own:
            return False
        return method in ("GET", "HEAD") or origin is not None

    # ----- ASGI ------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            await send({"type": "websocket.close", "code": 1008})
            return
        headers: dict[bytes, bytes] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.lower(), v)
        if not self.host_ok(headers.get(b"host", b"").decode("latin-1")):
            await _refuse(send, 403, "this server answers only to its own address (Host header refused)")
            return
        token, from_query = self._token_of(scope, headers)
        if token is None or not hmac.compare_digest(token.encode("utf-8", "replace"), self.token.encode()):
            await _refuse(send, 403, "a token is needed: open the URL omp-session serve printed")
            return
        if not self._origin_ok(scope.get("method", "GET"), headers):
            await _refuse(send, 403, "cross-site request refused")
            return
        cookie = None
        if from_query:
            cookie = (f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict").encode()
            if scope.get("method") == "GET" and b"text/html" in headers.get(b"accept", b""):
                # the token leaves the address bar (and history) at once; the cookie carries it now
                location = _without_token(scope)
                await _refuse(send, 303, "", [(b"location", location.encode("ascii")), (b"set-cookie", cookie)])
                return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = _with_security_headers(list(message.get("headers", [])), cookie)
            await send(message)

        await self.app(scope, receive, guarded)


def _cookie(header: bytes, name: str, token: str) -> str | None:
    """The value of cookie ``name``: the one equal to ``token`` when several are sent (a stale one
    of an earlier server on this port), else the first. Parsed leniently, as browsers send it:
    http.cookies gives up at the first cookie it cannot parse, and other apps on localhost set
    all sorts of them."""
    found: str | None = None
    for part in header.decode("latin-1").split(";"):
        key, sep, value = part.partition("=")
        if not sep or key.strip() != name:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if hmac.compare_digest(value.encode("latin-1"), token.encode("latin-1", "replace")):
            return value
        found = found if found is not None else value
    return found


def _without_token(scope: Scope) -> str:
    """The URL of the request as it was sent (the path still percent-encoded: decoded, ``%2F``
    would be a new path segment and ``%0d%0a`` a line break in a header), without ``token=``."""
    raw = scope.get("raw_path") or quote(scope.get("path", "/"), safe="/").encode("ascii")
    path = quote(raw.decode("latin-1"), safe=_URL_SAFE.replace("?", "").replace("#", ""), encoding="latin-1")
    if not path.startswith("/"):
        path = "/" + path
    if path.startswith("//"):  # "//host" is another server's address, not a path
        path = "/%2F" + path[2:]
    rest = [item for item in scope.get("query_string", b"").decode("latin-1").split("&")
            if item and unquote_plus(item.partition("=")[0]) != "token"]
    query = quote("&".join(rest), safe=_URL_SAFE, encoding="latin-1")
    return path + ("?" + query if query else "")


def _with_security_headers(headers: list[tuple[bytes, bytes]], cookie: bytes | None) -> list[tuple[bytes, bytes]]:
    names = {k.lower() for k, _ in headers}
    if b"content-security-policy" not in names:
        headers.append((b"content-security-policy", DEFAULT_CSP.encode()))
    headers += [(k, v) for k, v in _HEADERS if k not in names]
    if cookie is not None:
        headers.append((b"set-cookie", cookie))
    return headers


async def _refuse(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode() if text else b""
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status,
                "headers": _with_security_headers(headers, None)})
    await send({"type": "http.response.body", "body": body})
