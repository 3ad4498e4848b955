"""Store URLs: which backend, where, and the options (docs/stores.md).

``file:DIR`` · ``sqlite:PATH`` · ``postgresql://user:pass@host:port/db`` (``postgres://``) ·
``mysql://user:pass@host:port/db`` (``mariadb://``) · ``redis://host:port/db`` (``rediss://``,
``unix:///path/redis.sock``).

Query options understood by every SQL store: ``table`` (omp's table option, default
``omp_session_files``); by Redis: ``prefix`` (default ``omp:sessions:``); by all: ``root``, the
key prefix under which the store keeps omp's sessions root (default: for ``file:`` the DIR, else
this machine's sessions root, which is where omp's keys start), and ``timeout``, the seconds a
server has to connect and answer the handshake (default 10; file and SQLite stores ignore it).
Other PostgreSQL options (``sslmode`` …) go to libpq unchanged; Redis takes redis-py's URL options.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit, urlunsplit

from omp_session.errors import StoreError

__all__ = ["DEFAULT_TIMEOUT", "SCHEMES", "StoreURL", "check_timeout", "parse_store_url"]

SCHEMES = ("file", "sqlite", "postgresql", "postgres", "mysql", "mariadb", "redis", "rediss", "unix")
DEFAULT_TIMEOUT = 10.0  # seconds to connect and finish the handshake; a wrong service never answers
_HINT = "file:DIR, sqlite:PATH, postgresql://…, mysql://…, redis://…"
_OURS = {"table", "root", "prefix", "timeout"}
# what redis-py's from_url parses; any other query key reaches its constructor as a keyword and
# fails there with a TypeError
_REDIS_OPTIONS = {"db", "socket_read_size", "socket_keepalive", "retry_on_timeout", "max_connections",
                  "health_check_interval", "ssl_check_hostname", "ssl_cert_reqs", "ssl_ca_certs", "ssl_certfile",
                  "ssl_keyfile", "ssl_min_version", "protocol", "client_name", "username", "password"}


@dataclass(frozen=True)
class StoreURL:
    kind: str  # file | sqlite | postgres | mysql | redis
    location: str  # file/sqlite: a path; servers: the URL without our options
    name: str  # for messages: the URL without a password
    options: dict[str, str] = field(default_factory=dict)  # our options (table, root, prefix)
    extra: dict[str, str] = field(default_factory=dict)  # the backend's own options

    @property
    def timeout(self) -> float:
        """Seconds a server has to connect and answer the handshake (``timeout``; default 10)."""
        raw = self.options.get("timeout")
        return DEFAULT_TIMEOUT if raw is None else check_timeout(raw, self.name)

    @property
    def root(self) -> str:
        """The key prefix of the sessions root in this store, ending with a separator."""
        root = self.options.get("root")
        if root is None:
            if self.kind == "file":
                root = self.location
            else:
                from omp_session.paths import sessions_dir

                root = str(sessions_dir())
        return root if root.endswith("/") else root + "/"


def check_timeout(raw: str | float, name: str) -> float:
    """A timeout in seconds: a finite number > 0, else :class:`StoreError` naming the store."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not (0 < value < 1e9):
        raise StoreError(f"{name}: timeout must be a number of seconds > 0, not {raw!r}")
    return value


def unanswered(reason: str, seconds: float) -> str:
    """A client's reason for not connecting, saying how long it waited when it gave up waiting
    (a wrong service answers nothing)."""
    if "timed out" in reason or "timeout" in reason.lower():
        return f"no answer within {seconds:g} s ({reason})"
    return reason


def _redacted(raw: str) -> str:
    try:
        parts = urlsplit(raw)
        password = parts.password
    except ValueError:  # not even a URL: hide whatever sits between "user:" and "@"
        return re.sub(r"(//[^/@:]*:)[^/@]*@", r"\1***@", raw)
    if password is None:
        return raw
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit((parts.scheme, f"{user}:***@{netloc}", parts.path, parts.query, parts.fragment))


def parse_store_url(url: str) -> StoreURL:
    """Split a store URL; :class:`StoreError` (one line, naming the URL) when it is not one."""
    scheme, sep, rest = url.partition(":")
    scheme = scheme.lower()
    if not sep or scheme not in SCHEMES:
        raise StoreError(f"{url!r} is not a store URL (expected {_HINT})")
    if scheme in ("file", "sqlite"):
        path, _, query = rest.partition("?")
        if path.startswith("//"):
            path = path[2:]
        path = unquote(path)
        if "\x00" in path:
            raise StoreError(f"{url}: the path holds a NUL byte (%00), which no file name can")
        options = dict(parse_qsl(query, keep_blank_values=True))
        unknown = set(options) - ({"root", "timeout"} if scheme == "file" else {"table", "root", "timeout"})
        if unknown:
            raise StoreError(f"{url}: unknown option {sorted(unknown)[0]!r}")
        if not path:
            if scheme == "sqlite":
                raise StoreError(f"{url}: no database file (sqlite:PATH)")
            from omp_session.paths import sessions_dir

            path = str(sessions_dir())
        if path != ":memory:":
            path = os.path.abspath(os.path.expanduser(path))
        found = StoreURL(scheme, path, f"{scheme}:{path}", options)
        found.timeout  # noqa: B018 — checked now: one line naming the store
        return found
    if "\x00" in unquote(url):
        raise StoreError(f"{_redacted(url)}: the URL holds a NUL byte (%00)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 — raises ValueError for a port that is not a number
        parts.hostname, parts.username, parts.password  # noqa: B018 — and these for a bad IPv6 address
    except ValueError as e:
        raise StoreError(f"{_redacted(url)}: not a valid URL ({e})") from None
    if not parts.hostname and scheme not in ("postgresql", "postgres", "unix"):
        raise StoreError(f"{_redacted(url)}: no host in the URL (expected {scheme}://host[:port]/…)")
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    ours = {k: v for k, v in params.items() if k in _OURS}
    extra = {k: v for k, v in params.items() if k not in _OURS}
    kind = {"postgresql": "postgres", "postgres": "postgres", "mysql": "mysql", "mariadb": "mysql",
            "redis": "redis", "rediss": "redis", "unix": "redis"}[scheme]
    allowed = {"postgres": {"table", "root"}, "mysql": {"table", "root"}, "redis": {"prefix", "root"}}[kind] | {"timeout"}
    if set(ours) - allowed:
        raise StoreError(f"{_redacted(url)}: option {sorted(set(ours) - allowed)[0]!r} does not apply to {scheme}")
    if kind == "mysql" and set(extra) - {"unix_socket"}:
        raise StoreError(f"{_redacted(url)}: unknown option {sorted(set(extra) - {'unix_socket'})[0]!r}")
    if kind == "redis" and set(extra) - _REDIS_OPTIONS:
        raise StoreError(f"{_redacted(url)}: unknown option {sorted(set(extra) - _REDIS_OPTIONS)[0]!r}")
    if scheme in ("redis", "rediss") and "db" in extra and parts.path.strip("/"):
        # redis-py takes the option over the path: the store named would not be the one written
        raise StoreError(f"{_redacted(url)}: the database twice (the path and db=): give one")
    # the driver's options as they were written: libpq reads "+" as a plus and "%20" as a space,
    # which decoding and encoding again would turn into each other
    theirs = "&".join(piece for piece in parts.query.split("&")
                      if piece and unquote_plus(piece.partition("=")[0]) not in _OURS)
    location = urlunsplit((parts.scheme, parts.netloc, parts.path, theirs, parts.fragment))
    if scheme == "unix":  # urlunsplit drops the empty authority that redis-py expects
        location = "unix://" + parts.path + (f"?{theirs}" if theirs else "")
    found = StoreURL(kind, location, _redacted(urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))),
                     ours, extra)
    found.timeout  # noqa: B018 — checked now: one line naming the store
    return found
