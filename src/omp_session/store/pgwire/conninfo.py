"""The connection string: a ``postgresql://`` URL and the libpq options, read as libpq reads them,
or :class:`.Unsupported` for whatever libpq would read or do that this client does not."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from typing import Any

from .errors import Unsupported

__all__ = ["Params", "is_address", "parse_conninfo"]

_DEFAULT_TIMEOUT = 130  # psycopg's when connect_timeout is unset or not positive
_OPTIONS = frozenset({"connect_timeout", "sslmode", "application_name", "keepalives", "keepalives_idle",
                      "keepalives_interval", "keepalives_count", "tcp_user_timeout"})  # fmt: skip


class Params:
    """What a URL and the options say (a plain class: a NamedTuple costs a millisecond to import)."""

    def __init__(
        self,
        host: str,
        port: int,
        port_text: str | None,
        user: str,
        password: str | None,
        dbname: str,
        timeout: int,
        sslmode: str,
        application_name: str | None,
        keepalives: bool,
        socket_options: tuple[tuple[int, int, int], ...],
    ) -> None:
        self.host, self.port, self.user, self.password, self.dbname = host, port, user, password, dbname
        self.port_text = port_text  # as the URL gives it (psycopg's messages show None for none)
        self.timeout, self.sslmode, self.application_name = timeout, sslmode, application_name
        self.keepalives, self.socket_options = keepalives, socket_options


def _decode(text: str) -> str:
    """libpq's percent-decoding: every ``%`` starts two hex digits; NUL is refused."""
    if "%" not in text:
        return text
    from urllib.parse import unquote_to_bytes

    if re.search(r"%(?![0-9A-Fa-f]{2})|%00", text):
        raise Unsupported("a percent sign libpq refuses")
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        raise Unsupported("percent-encoded bytes that are not UTF-8") from None


def _integer(value: Any, key: str) -> int:
    text = str(value).strip()
    if not re.fullmatch(r"-?[0-9]{1,9}", text):
        raise Unsupported(f"{key}={value!r}")
    return int(text)


def parse_conninfo(conninfo: str, options: Mapping[str, Any]) -> Params:
    if any(name.startswith("PG") for name in os.environ):
        raise Unsupported("a PG* environment variable")
    scheme, sep, rest = conninfo.partition("://")
    if not sep or scheme not in ("postgresql", "postgres") or "#" in rest or any(c.isspace() for c in rest):
        raise Unsupported("not a plain postgresql:// URL")
    slash = rest.find("/")
    head_end = len(rest) if slash < 0 else slash
    query_at = rest.find("?")
    netloc_end = min(head_end, query_at) if query_at >= 0 else head_end
    if rest.count("@", 0, head_end) > 1 or "@" in rest[netloc_end:head_end]:
        raise Unsupported("an '@' libpq reads its own way")
    netloc = rest[:netloc_end]
    userinfo, at, hostport = netloc.rpartition("@")
    user_raw, colon, password_raw = userinfo.partition(":")
    user = _decode(user_raw) if at else ""
    password = _decode(password_raw) if colon else None
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise Unsupported("an unclosed IPv6 address")
        host, port_raw = _decode(hostport[1:close]), hostport[close + 1 :]  # a zone: fe80::1%25eth0
        if port_raw and not port_raw.startswith(":"):
            raise Unsupported("text after an IPv6 address")
        port_raw = port_raw[1:] if port_raw else ""
        has_port = bool(hostport[close + 1 :])
    else:
        host, has_colon, port_raw = hostport.partition(":")
        has_port = bool(has_colon)
        host = _decode(host)
    if not host or "," in hostport or host.startswith("/"):
        raise Unsupported("no host, several hosts or a unix socket")
    if has_port and not re.fullmatch(r"[0-9]{1,5}", port_raw):
        raise Unsupported("a port libpq reads its own way")
    port = int(port_raw) if has_port else 5432
    if not 1 <= port <= 65535:
        raise Unsupported("a port out of range")
    path_query = rest[netloc_end:]
    path, _, query = path_query.partition("?")
    dbname = _decode(path[1:]) if path.startswith("/") else ""
    given: dict[str, str] = {}
    for piece in query.split("&") if query else ():
        key, eq, value = piece.partition("=")
        key = _decode(key)
        if not eq or key not in _OPTIONS or key in given:
            raise Unsupported(f"the URL option {key!r}")
        given[key] = _decode(value)
    for key, value in options.items():
        if value is None:
            continue
        if key not in _OPTIONS:
            raise Unsupported(f"the option {key!r}")
        given.setdefault(key, str(value))  # the URL's own values win
    if not user:
        user = _os_user()
    timeout = _integer(given.get("connect_timeout", "0"), "connect_timeout")
    timeout = _DEFAULT_TIMEOUT if timeout <= 0 else max(timeout, 2)
    sslmode = given.get("sslmode", "prefer")
    if sslmode not in ("disable", "allow", "prefer", "require"):
        raise Unsupported(f"sslmode={sslmode}")
    if sslmode != "disable" and os.path.isdir(os.path.expanduser("~/.postgresql")):
        raise Unsupported("~/.postgresql (certificates libpq would use)")
    if os.environ.get("KRB5CCNAME") or os.path.exists(f"/tmp/krb5cc_{os.getuid()}"):
        raise Unsupported("a Kerberos credential cache (libpq tries GSSAPI encryption)")
    keepalives = _integer(given.get("keepalives", "1"), "keepalives") != 0
    sockopts: list[tuple[int, int, int]] = []
    if keepalives:
        for key, name in (
            ("keepalives_idle", "TCP_KEEPIDLE"),
            ("keepalives_interval", "TCP_KEEPINTVL"),
            ("keepalives_count", "TCP_KEEPCNT"),
        ):
            if key in given:
                seconds = _integer(given[key], key)
                if seconds <= 0 or not hasattr(socket, name):
                    raise Unsupported(f"{key}={given[key]}")
                sockopts.append((socket.IPPROTO_TCP, getattr(socket, name), seconds))
    if "tcp_user_timeout" in given:
        ms = _integer(given["tcp_user_timeout"], "tcp_user_timeout")
        if ms < 0 or not hasattr(socket, "TCP_USER_TIMEOUT"):
            raise Unsupported(f"tcp_user_timeout={ms}")
        sockopts.append((socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, ms))
    return Params(
        host,
        port,
        port_raw if has_port else None,
        user,
        password or None,
        dbname or user,
        timeout,
        sslmode,
        given.get("application_name"),
        keepalives,
        tuple(sockopts),
    )


def _os_user() -> str:
    # libpq's default user: the effective user's name, not $USER
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        raise Unsupported("no user name for the effective user") from None


def is_address(host: str) -> bool:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except OSError:
            pass
    return False
