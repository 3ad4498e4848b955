"""Store URLs: which backend, where, and the options (docs/stores.md).

``file:DIR`` · ``sqlite:PATH`` · ``postgresql://user:pass@host:port/db`` (``postgres://``) ·
``mysql://user:pass@host:port/db`` (``mariadb://``) · ``redis://host:port/db`` (``rediss://``,
``unix:///path/redis.sock``).

Query options understood by every SQL store: ``table`` (omp's table option, default
``omp_session_files``); by Redis: ``prefix`` (default ``omp:sessions:``); by all: ``root``, the
key prefix under which the store keeps omp's sessions root (default: for ``file:`` the DIR, else
this machine's sessions root, which is where omp's keys start). Other PostgreSQL options
(``sslmode``, ``connect_timeout`` …) go to libpq unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from omp_session.errors import StoreError

__all__ = ["SCHEMES", "StoreURL", "parse_store_url"]

SCHEMES = ("file", "sqlite", "postgresql", "postgres", "mysql", "mariadb", "redis", "rediss", "unix")
_HINT = "file:DIR, sqlite:PATH, postgresql://…, mysql://…, redis://…"
_OURS = {"table", "root", "prefix"}


@dataclass(frozen=True)
class StoreURL:
    kind: str  # file | sqlite | postgres | mysql | redis
    location: str  # file/sqlite: a path; servers: the URL without our options
    name: str  # for messages: the URL without a password
    options: dict[str, str] = field(default_factory=dict)  # our options (table, root, prefix)
    extra: dict[str, str] = field(default_factory=dict)  # the backend's own options

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


def _redacted(raw: str) -> str:
    parts = urlsplit(raw)
    if parts.password is None:
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
        options = dict(parse_qsl(query, keep_blank_values=True))
        unknown = set(options) - ({"root"} if scheme == "file" else {"table", "root"})
        if unknown:
            raise StoreError(f"{url}: unknown option {sorted(unknown)[0]!r}")
        if not path:
            if scheme == "sqlite":
                raise StoreError(f"{url}: no database file (sqlite:PATH)")
            from omp_session.paths import sessions_dir

            path = str(sessions_dir())
        if path != ":memory:":
            path = os.path.abspath(os.path.expanduser(path))
        return StoreURL(scheme, path, f"{scheme}:{path}", options)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 — raises ValueError for a port that is not a number
    except ValueError as e:
        raise StoreError(f"{_redacted(url)}: not a valid URL ({e})") from e
    if not parts.hostname and scheme not in ("postgresql", "postgres", "unix"):
        raise StoreError(f"{_redacted(url)}: no host in the URL (expected {scheme}://host[:port]/…)")
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    ours = {k: v for k, v in params.items() if k in _OURS}
    extra = {k: v for k, v in params.items() if k not in _OURS}
    kind = {"postgresql": "postgres", "postgres": "postgres", "mysql": "mysql", "mariadb": "mysql",
            "redis": "redis", "rediss": "redis", "unix": "redis"}[scheme]
    allowed = {"postgres": {"table", "root"}, "mysql": {"table", "root"}, "redis": {"prefix", "root"}}[kind]
    if set(ours) - allowed:
        raise StoreError(f"{_redacted(url)}: option {sorted(set(ours) - allowed)[0]!r} does not apply to {scheme}")
    if kind == "mysql" and set(extra) - {"unix_socket"}:
        raise StoreError(f"{_redacted(url)}: unknown option {sorted(set(extra) - {'unix_socket'})[0]!r}")
    location = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(extra), parts.fragment))
    if scheme == "unix":  # urlunsplit drops the empty authority that redis-py expects
        location = "unix://" + parts.path + (f"?{urlencode(extra)}" if extra else "")
    return StoreURL(kind, location, _redacted(urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))),
                    ours, extra)
