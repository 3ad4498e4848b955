"""A small PostgreSQL client in the standard library: the wire protocol 3.0 over a socket, for the
connections psycopg 3 would open the same way (``import psycopg`` alone costs 0.2-0.4 s, far more
than a read command's queries).

It stands in for ``psycopg.connect(conninfo, autocommit=True, **options)`` only where it gives the
same answers: a ``postgresql://`` URL with one host, the options :mod:`.pg_options` passes and
``sslmode`` disable/allow/prefer/require. Anything libpq would read or do beyond that (another
conninfo form, a unix socket, several hosts, other URL options, a ``PG*`` environment variable, a
password file, client certificates, Kerberos, channel binding, an authentication other than trust,
password, MD5 and SCRAM-SHA-256, a retry libpq would make with or without TLS) raises
:class:`Unsupported`, before connecting or during the start-up: the caller then connects through
psycopg (:mod:`.pg_connect`).

What it returns is what psycopg 3 returns by default: parameters typed as psycopg types them
(``str`` as unknown, ``int`` as the smallest integer type, lists as arrays), results read in text
format into ``int``, ``float``, ``Decimal``, ``bool``, ``str``, ``bytes``, JSON values and lists;
error messages as libpq words them (``str(e)`` is psycopg's: the severity left out). Types psycopg
makes other objects of (dates and times, intervals, UUIDs, network addresses, ranges, records)
come back as their text: none of our reading queries returns one.

Exceptions::

    Unsupported            not an Error: connect with psycopg instead
    Error                  .sqlstate (None unless the server sent one)
    ├── OperationalError   the connection: refused, lost, closed, a peer that is not PostgreSQL
    │   └── ConnectionTimeout
    ├── DatabaseError      the server refused a statement
    └── ProgrammingError   a placeholder or a parameter this client cannot send
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "Column",
    "Connection",
    "ConnectionTimeout",
    "Cursor",
    "DatabaseError",
    "Error",
    "OperationalError",
    "ProgrammingError",
    "Unsupported",
    "connect",
]

_PROTOCOL = 196608  # 3.0
_SSL_REQUEST = 80877103
_DEFAULT_TIMEOUT = 130  # psycopg's when connect_timeout is unset or not positive
_OPTIONS = frozenset({"connect_timeout", "sslmode", "application_name", "keepalives", "keepalives_idle",
                      "keepalives_interval", "keepalives_count", "tcp_user_timeout"})  # fmt: skip
_SERVER_GONE = (
    "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n"
    "\tbefore or while processing the request."
)


class Unsupported(Exception):
    """What the connection needs is libpq's to do: connect with psycopg."""


class Error(Exception):
    """A driver error; ``str()`` is the message as psycopg gives it."""

    sqlstate: str | None = None

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class OperationalError(Error):
    pass


class ConnectionTimeout(OperationalError):
    pass


class DatabaseError(Error):
    pass


class ProgrammingError(Error):
    pass


class _Closed(ConnectionError):
    """The server closed the connection (end of file)."""


class Column(NamedTuple):
    """One column of a result, as DB-API describes it (``[0]`` is the name)."""

    name: str
    type_code: int
    display_size: int | None = None
    internal_size: int | None = None
    precision: int | None = None
    scale: int | None = None
    null_ok: bool | None = None


# ----- the connection string ------------------------------------------------------------------


class _Params:
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


def _parse(conninfo: str, options: Mapping[str, Any]) -> _Params:
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
        host, port_raw = hostport[1:close], hostport[close + 1 :]
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
    return _Params(
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


def _is_address(host: str) -> bool:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except OSError:
            pass
    return False


# ----- connecting -----------------------------------------------------------------------------


def connect(conninfo: str, *, autocommit: bool = True, **options: Any) -> Connection:
    """A connection as ``psycopg.connect(conninfo, autocommit=True, **options)`` opens it, or
    :class:`Unsupported` when only libpq can open it the same way."""
    if not autocommit:
        raise Unsupported("autocommit=False")
    params = _parse(conninfo, options)
    if _is_address(params.host):
        addresses = [params.host]
    else:
        try:  # psycopg resolves the name itself and tries each address in turn
            found = socket.getaddrinfo(
                params.host, params.port, proto=socket.IPPROTO_TCP, type=socket.SOCK_STREAM
            )
        except OSError as e:
            raise OperationalError(f"failed to resolve host {params.host!r}: {e}") from None
        addresses = [str(item[4][0]) for item in found]
    failures: list[tuple[Error, str]] = []
    for address in addresses:
        try:
            return _attempt(params, address)
        except Error as e:
            failures.append((e, f"host: {params.host!r}, port: {params.port_text!r}, hostaddr: {address!r}"))
    last = failures[-1][0]
    if len(failures) == 1:
        raise last
    lines = [str(last), "Multiple connection attempts failed. All failures were:"]
    lines += [f"- {where}: {error}" for error, where in failures]
    raise type(last)("\n".join(lines))


def _attempt(params: _Params, address: str) -> Connection:
    deadline = time.monotonic() + params.timeout
    prefix = f'connection failed: connection to server at "{address}", port {params.port} failed: '
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if params.keepalives:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for level, name, value in params.socket_options:
            sock.setsockopt(level, name, value)
        sock.settimeout(params.timeout)
        try:
            sock.connect((address, params.port))
        except TimeoutError:
            raise ConnectionTimeout("connection timeout expired") from None
        except OSError as e:
            raise OperationalError(
                f"{prefix}{os.strerror(e.errno) if e.errno else e}\n"
                "\tIs the server running on that host and accepting TCP/IP connections?"
            ) from None
        conn = Connection(sock, params, deadline, prefix)
    except BaseException:
        sock.close()
        raise
    return conn


# ----- the messages ---------------------------------------------------------------------------


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\x00"


def _fields(body: bytes) -> dict[str, str]:
    """An ErrorResponse's or NoticeResponse's fields (code letter → text)."""
    out: dict[str, str] = {}
    for part in body.split(b"\x00"):
        if part:
            out[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return out


def _error_text(fields: Mapping[str, str], query: str | None) -> str:
    """libpq's message at its default verbosity, without the severity (as psycopg's ``str``)."""
    lines = [fields.get("M", "missing error text")]
    position = fields.get("P")
    if query and position and position.isdigit():
        lines.append(_position(query, int(position)))
    elif fields.get("q") and (fields.get("p") or "").isdigit():
        lines.append(_position(fields["q"], int(fields["p"])))
    for code, label in (("D", "DETAIL"), ("H", "HINT"), ("q", "QUERY"), ("W", "CONTEXT")):
        if code in fields:
            lines.append(f"{label}:  {fields[code]}")
    return "\n".join(line for line in lines if line).strip()


def _position(query: str, position: int) -> str:
    """libpq's ``LINE n:`` and its caret under the character at ``position`` (1-based): tabs
    shown as spaces, wide characters counted as two columns, a long line cut to 60 columns
    around the caret."""
    loc = position - 1
    if loc < 0:
        return ""
    import unicodedata

    chars = list(query)
    starts: list[int] = []  # screen column where each character starts
    column = 0
    line, begin, end = 1, 0, -1
    count = 0
    for count, ch in enumerate(chars):
        starts.append(column)
        if ch == "\t":
            chars[count] = " "
        elif ch in "\r\n":
            if count < loc:
                if ch == "\r" or count == 0 or chars[count - 1] != "\r":
                    line += 1
                begin = count + 1
            else:
                end = count
                break
        column += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    else:
        count = len(chars)
    if end < 0:
        end = count
        starts.append(column)
    if loc > count:
        return ""
    cut_left = cut_right = False
    if starts[end] - starts[begin] > 60:
        if starts[begin] + 60 >= starts[loc] + 10:
            while starts[end] - starts[begin] > 60:
                end -= 1
            cut_right = True
        else:
            while starts[loc] + 10 < starts[end]:
                end -= 1
                cut_right = True
            while starts[end] - starts[begin] > 60:
                begin += 1
                cut_left = True
    lead = f"LINE {line}: " + ("..." if cut_left else "")
    text = lead + "".join(chars[begin:end]) + ("..." if cut_right else "")
    return f"{text}\n{' ' * (len(lead) + starts[loc] - starts[begin])}^"


# ----- parameters -----------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"%(.)", re.DOTALL)
_INT_TYPES = ((1 << 15, 21, 1005), (1 << 31, 23, 1007), (1 << 63, 20, 1016))


def _placeholders(sql: str, count: int) -> str:
    """``%s`` (``%b``, ``%t``) as ``$1``…, ``%%`` as ``%``, as psycopg turns them."""
    n = 0

    def turn(m: re.Match[str]) -> str:
        nonlocal n
        kind = m.group(1)
        if kind == "%":
            return "%"
        if kind in "sbt":
            n += 1
            return f"${n}"
        if kind == "(":
            raise ProgrammingError("named placeholders (%(name)s) are not supported by this client")
        raise ProgrammingError(f"only '%s', '%b', '%t' are allowed as placeholders, got '%{kind}'")

    if sql.endswith("%") and not sql.endswith("%%"):
        raise ProgrammingError("incomplete placeholder: '%'")
    out = _PLACEHOLDER.sub(turn, sql)
    if n != count:
        raise ProgrammingError(f"the query has {n} placeholders but {count} parameters were passed")
    return out


def _int_oid(value: int, array: bool) -> int:
    for limit, scalar, arr in _INT_TYPES:
        if -limit <= value < limit:
            return arr if array else scalar
    return 1231 if array else 1700


def _dump(value: Any) -> tuple[int, bytes | None]:
    """(type OID, text) of one parameter, as psycopg types it (0: unknown, the server decides)."""
    if value is None:
        return 0, None
    if isinstance(value, bool):
        return 16, b"t" if value else b"f"
    if isinstance(value, int):
        return _int_oid(value, False), str(value).encode()
    if isinstance(value, float):
        return 701, repr(value).encode()
    if isinstance(value, str):
        if "\x00" in value:
            raise ProgrammingError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
        return 0, value.encode("utf-8")
    if isinstance(value, bytes | bytearray | memoryview):
        return 17, b"\\x" + bytes(value).hex().encode()
    if isinstance(value, list):
        return _array_oid(value), _array_text(value).encode("utf-8")
    from decimal import Decimal

    if isinstance(value, Decimal):
        return 1700, str(value).encode()
    raise ProgrammingError(
        f"cannot adapt type {type(value).__name__!r} using placeholder '%s' (format: AUTO)"
    )


def _leaves(value: list[Any]) -> Iterator[Any]:
    for item in value:
        if isinstance(item, list):
            yield from _leaves(item)
        elif item is not None:
            yield item


def _array_oid(value: list[Any]) -> int:
    items = list(_leaves(value))
    kinds = {type(item) for item in items}
    if len(kinds) > 1:
        names = ", ".join(sorted(k.__name__ for k in kinds))
        raise ProgrammingError(f"cannot dump lists of mixed types; got: {names}")
    if not items:
        return 0
    first = items[0]
    if isinstance(first, bool):
        return 1000
    if isinstance(first, int):
        return max((_int_oid(i, True) for i in items), key=(1005, 1007, 1016, 1231).index)
    if isinstance(first, float):
        return 1022
    if isinstance(first, str):
        return 0
    if isinstance(first, bytes | bytearray | memoryview):
        return 1001
    from decimal import Decimal

    if isinstance(first, Decimal):
        return 1231
    raise ProgrammingError(f"cannot adapt type {type(first).__name__!r} in a list")


_QUOTE_IN_ARRAY = re.compile(r'[{}",\\\s]')


def _array_text(value: list[Any]) -> str:
    parts: list[str] = []
    for item in value:
        if item is None:
            parts.append("NULL")
        elif isinstance(item, list):
            parts.append(_array_text(item))
        else:
            _, raw = _dump(item)
            text = (raw or b"").decode("utf-8")
            if not text or text.upper() == "NULL" or _QUOTE_IN_ARRAY.search(text):
                text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
            parts.append(text)
    return "{" + ",".join(parts) + "}"


# ----- results --------------------------------------------------------------------------------


def _bool(data: bytes) -> bool:
    return data == b"t"


def _numeric(data: bytes) -> Any:
    from decimal import Decimal

    return Decimal(data.decode())


def _bytea(data: bytes) -> bytes:
    if data.startswith(b"\\x"):
        return bytes.fromhex(data[2:].decode())
    # bytea_output = escape: \\ and \ooo escapes, every other byte as itself
    return re.sub(
        rb"\\(\\|[0-7]{3})", lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 8)]), data
    )


def _json(data: bytes) -> Any:
    import json

    return json.loads(data)


# arrays of builtin types psycopg has no element loader for: lists of str
# fmt: off
_TEXTLIKE_ARRAYS = frozenset({
    143, 271, 629, 719, 775, 791, 1002, 1003, 1006, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 1015, 1017, 1018,
    1019, 1027, 1034, 1040, 1561, 1563, 2201, 2207, 2208, 2209, 2210, 2211, 2949, 3221, 3643, 3644, 3645, 3735,
    3770, 4073, 4090, 4097, 4192,
})
_SCALARS: dict[int, Callable[[bytes], Any]] = {
    16: _bool, 17: _bytea, 20: int, 21: int, 23: int, 26: int, 700: float, 701: float, 1700: _numeric,
    114: _json, 3802: _json,
}
_ARRAY_ELEMENTS: dict[int, int] = {
    1000: 16, 1001: 17, 1016: 20, 1005: 21, 1007: 23, 1028: 26, 1021: 700, 1022: 701, 1231: 1700, 199: 114,
    3807: 3802,
}
# fmt: on


def _loader(oid: int) -> Callable[[bytes], Any]:
    scalar = _SCALARS.get(oid)
    if scalar is not None:
        return scalar
    element = _ARRAY_ELEMENTS.get(oid)
    if element is not None:
        convert = _SCALARS[element]
        return lambda data: _array(data.decode("utf-8"), lambda s: convert(s.encode("utf-8")))
    if oid in _TEXTLIKE_ARRAYS:
        return lambda data: _array(data.decode("utf-8"), str)
    if oid == 1020:  # box[]: its delimiter is ';'
        return lambda data: _array(data.decode("utf-8"), str, ";")
    return bytes.decode  # UTF-8, strict: what psycopg's text loader gives


def _array(text: str, convert: Callable[[str], Any], delimiter: str = ",") -> list[Any]:
    """PostgreSQL's array text (``{1,NULL,"a b"}``, nested, with ``[lo:hi]=`` bounds) as lists."""
    pos = text.index("=") + 1 if text.startswith("[") else 0
    out, _ = _array_level(text, pos, convert, delimiter)
    return out


def _array_level(text: str, pos: int, convert: Callable[[str], Any], delimiter: str) -> tuple[list[Any], int]:
    out: list[Any] = []
    pos += 1  # past '{'
    if text[pos] == "}":
        return out, pos + 1
    stop = delimiter + "}"
    while True:
        ch = text[pos]
        if ch == "{":
            sub, pos = _array_level(text, pos, convert, delimiter)
            out.append(sub)
        elif ch == '"':
            pieces: list[str] = []
            pos += 1
            while True:
                quote = text.find('"', pos)
                slash = text.find("\\", pos, quote)
                if slash < 0:
                    pieces.append(text[pos:quote])
                    pos = quote + 1
                    break
                pieces.append(text[pos:slash])
                pieces.append(text[slash + 1])
                pos = slash + 2
            out.append(convert("".join(pieces)))
        else:
            start = pos
            while text[pos] not in stop:
                pos += 1
            token = text[start:pos]
            out.append(None if token == "NULL" else convert(token))
        if text[pos] == delimiter:
            pos += 1
            continue
        return out, pos + 1  # past '}'


def _rowcount(tag: str | None) -> int:
    """libpq's ``PQcmdTuples``: the count of the commands that report one, else -1."""
    if not tag:
        return -1
    words = tag.split()
    if (
        words[0] in ("SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "MOVE", "FETCH", "COPY")
        and words[-1].isdigit()
    ):
        return int(words[-1])
    return -1


# a statement's result: (description, rows, command tag)
_Result = tuple[list[Column] | None, list[tuple[Any, ...]], str | None]


# ----- the connection -------------------------------------------------------------------------


class _PGconn:
    """``conn.pgconn.socket``, as psycopg's connection has it (the socket's descriptor)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @property
    def socket(self) -> int:
        return int(self._conn._sock.fileno())


class _Info:
    """``conn.info`` (a part of psycopg's): the backend's pid and the server's parameters."""

    def __init__(self) -> None:
        self.backend_pid = 0
        self.parameters: dict[str, str] = {}

    def parameter_status(self, name: str) -> str | None:
        return self.parameters.get(name)

    @property
    def server_version(self) -> int:
        # as libpq computes it: 150020 for 15.20 (10 and later), 90624 for 9.6.24
        parts = [int(p) for p in re.findall(r"\d+", self.parameters.get("server_version", "0"))[:3]]
        parts += [0] * (3 - len(parts))
        return parts[0] * 10000 + parts[1] if parts[0] >= 10 else parts[0] * 10000 + parts[1] * 100 + parts[2]


class Connection:
    """One session with the server, in autocommit mode (``BEGIN``/``COMMIT`` are statements)."""

    prepare_threshold: int | None = 5  # accepted for psycopg's sake: every statement is unnamed

    def __init__(self, sock: socket.socket, params: _Params, deadline: float, prefix: str) -> None:
        self._sock: Any = sock
        self._buffer = bytearray()
        self._closed = False
        self._lock = threading.Lock()
        self.info = _Info()
        self.pgconn = _PGconn(self)
        self._start(params, deadline, prefix)

    # ----- start-up ---------------------------------------------------------------------------

    def _start(self, params: _Params, deadline: float, prefix: str) -> None:
        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectionTimeout("connection timeout expired")
            return left

        try:
            ssl_in_use = False
            if params.sslmode in ("prefer", "require"):
                self._sock.settimeout(remaining())
                self._sock.sendall(struct.pack("!ii", 8, _SSL_REQUEST))
                answer = self._sock.recv(1)
                if not answer:
                    raise OperationalError(prefix + _SERVER_GONE)
                if answer == b"S":
                    self._start_tls(params, remaining)
                    ssl_in_use = True
                elif answer == b"N":
                    if params.sslmode == "require":
                        raise OperationalError(prefix + "server does not support SSL, but SSL was required")
                elif answer == b"E":  # a server before protocol 3: libpq reads its message
                    raise Unsupported("an error answer to the SSL request")
                else:
                    shown = answer.decode("latin-1")
                    raise OperationalError(f"{prefix}received invalid response to SSL negotiation: {shown}")
            self._authenticate(params, remaining, prefix, ssl_in_use)
            self._sock.settimeout(None)
        except TimeoutError:
            self._drop()
            raise ConnectionTimeout("connection timeout expired") from None
        except _Closed:
            self._drop()
            raise OperationalError(prefix + _SERVER_GONE) from None
        except OSError as e:
            self._drop()
            raise OperationalError(f"{prefix}could not receive data from server: {_os_error(e)}") from None
        except BaseException:
            self._drop()
            raise

    def _start_tls(self, params: _Params, remaining: Callable[[], float]) -> None:
        import ssl

        # sslmode require/prefer: encrypted, the certificate not checked (libpq without a root.crt)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._sock.settimeout(remaining())
        try:
            self._sock = context.wrap_socket(
                self._sock, server_hostname=None if _is_address(params.host) else params.host
            )
        except ssl.SSLError as e:
            if params.sslmode == "prefer":  # libpq then tries again without TLS
                raise Unsupported("the TLS handshake failed under sslmode=prefer") from e
            raise
        self._buffer.clear()

    def _authenticate(
        self, params: _Params, remaining: Callable[[], float], prefix: str, ssl_in_use: bool
    ) -> None:
        startup = [("user", params.user), ("database", params.dbname), ("client_encoding", "UTF8")]
        if params.application_name is not None:
            startup.append(("application_name", params.application_name))
        body = struct.pack("!i", _PROTOCOL) + b"".join(_cstr(k) + _cstr(v) for k, v in startup) + b"\x00"
        self._sock.settimeout(remaining())
        self._sock.sendall(struct.pack("!i", len(body) + 4) + body)
        scram: _Scram | None = None
        phase = 1
        while True:
            self._sock.settimeout(remaining())
            kind, data = self._read(prefix, phase=phase)
            if kind == b"R":
                code = struct.unpack_from("!i", data)[0]
                if code == 0:
                    phase = 2
                    continue
                password = params.password
                if code in (3, 5, 10) and password is None:
                    if os.path.exists(os.path.expanduser("~/.pgpass")):
                        raise Unsupported("a password from ~/.pgpass")
                    raise OperationalError(prefix + "fe_sendauth: no password supplied")
                assert password is not None or code in (11, 12)
                if code == 3:
                    self._sock.sendall(_message(b"p", _cstr(password or "")))
                elif code == 5:
                    self._sock.sendall(_message(b"p", _cstr(_md5(params.user, password or "", data[4:8]))))
                elif code == 10:
                    mechanisms = [m.decode() for m in data[4:].split(b"\x00") if m]
                    if "SCRAM-SHA-256" not in mechanisms or (
                        ssl_in_use and "SCRAM-SHA-256-PLUS" in mechanisms
                    ):
                        raise Unsupported(f"SASL mechanisms {mechanisms}")
                    scram = _Scram(password or "")
                    first_message = scram.first().encode()
                    self._sock.sendall(
                        _message(
                            b"p",
                            _cstr("SCRAM-SHA-256") + struct.pack("!i", len(first_message)) + first_message,
                        )
                    )
                elif code == 11 and scram is not None:
                    self._sock.sendall(_message(b"p", scram.final(data[4:].decode()).encode()))
                elif code == 12 and scram is not None:
                    if not scram.verify(data[4:].decode()):
                        raise OperationalError(prefix + "incorrect server signature")
                else:
                    raise Unsupported(f"authentication request {code}")
            elif kind == b"S":
                self._parameter(data)
            elif kind == b"K":
                self.info.backend_pid = struct.unpack_from("!i", data)[0]
            elif kind == b"N":
                pass
            elif kind == b"E":
                fields = _fields(data)
                if params.sslmode == "allow" or (ssl_in_use and params.sslmode == "prefer"):
                    raise Unsupported("libpq tries again with or without TLS")
                severity = fields.get("S", "FATAL")
                raise OperationalError(prefix + f"{severity}:  {_error_text(fields, None)}", sqlstate=None)
            elif kind == b"Z":
                if self.info.parameters.get("server_encoding", "UTF8") == "SQL_ASCII":
                    raise Unsupported("a SQL_ASCII database (psycopg returns its text as bytes)")
                return
            elif kind == b"v":
                raise Unsupported("the server negotiates the protocol version")
            else:
                raise OperationalError(
                    f"{prefix}expected authentication request from server, but received "
                    f"{kind.decode('latin-1')}"
                )

    # ----- reading and writing ----------------------------------------------------------------

    def _read(self, prefix: str = "", *, phase: int = 0) -> tuple[bytes, bytes]:
        """One message: (type byte, body). ``phase`` 1: before the server accepted the login,
        2: after (libpq's checks of what a server may send then)."""
        buf = self._buffer
        while len(buf) < 5:
            self._fill()
        kind = bytes(buf[:1])
        size = struct.unpack_from("!i", buf, 1)[0]
        shown = kind.decode("utf-8", "replace")
        if phase == 1 and kind not in b"REv":
            raise OperationalError(
                f"{prefix}expected authentication request from server, but received {shown}"
            )
        if size < 4 or size > (30000 if phase and kind not in b"TDdVENA" else 0x3FFFFFFF):
            raise OperationalError(
                f'{prefix}lost synchronization with server: got message type "{shown}", length {size}'
            )
        if phase == 2 and kind not in b"RSKNEZv":
            raise OperationalError(
                f'{prefix}unexpected response from server; first received character was "{shown}"'
            )
        while len(buf) < size + 1:
            self._fill(size + 1 - len(buf))
        data = bytes(buf[5 : size + 1])
        del buf[: size + 1]
        return kind, data

    def _fill(self, wanted: int = 0) -> None:
        chunk = self._sock.recv(max(wanted, 65536))
        if not chunk:
            raise _Closed
        self._buffer += chunk

    def _parameter(self, data: bytes) -> None:
        name, value = data.split(b"\x00")[:2]
        self.info.parameters[name.decode()] = value.decode("utf-8", "replace")

    def _drop(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def autocommit(self) -> bool:
        return True

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        if not value:
            raise ProgrammingError("this client runs in autocommit mode only")

    def cursor(self) -> Cursor:
        if self._closed:
            raise OperationalError("the connection is closed")
        return Cursor(self)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        return self.cursor().execute(sql, params)

    def close(self) -> None:
        if self._closed:
            return
        with contextlib.suppress(OSError):
            self._sock.sendall(_message(b"X", b""))
        self._drop()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, sql: str, params: Sequence[Any] | None) -> _Result:
        if params is not None and isinstance(params, Mapping):
            raise ProgrammingError("named parameters are not supported by this client")
        values = None if params is None else list(params)
        query = sql if values is None else _placeholders(sql, len(values))
        with self._lock:
            if self._closed:
                raise OperationalError("the connection is closed")
            if not values:  # psycopg too sends a statement without parameters as a simple query
                out = _message(b"Q", _cstr(query))
            else:
                dumped = [_dump(v) for v in values]
                n = len(dumped)
                parse = b"\x00" + _cstr(query) + struct.pack(f"!h{n}I", n, *(oid for oid, _ in dumped))
                bind = [b"\x00\x00", struct.pack("!hh", 0, n)]
                for _, raw in dumped:
                    bind.append(b"\xff\xff\xff\xff" if raw is None else struct.pack("!i", len(raw)) + raw)
                bind.append(b"\x00\x00")
                out = b"".join(
                    (
                        _message(b"P", parse),
                        _message(b"B", b"".join(bind)),
                        _message(b"D", b"P\x00"),
                        _message(b"E", b"\x00\x00\x00\x00\x00"),
                        _message(b"S", b""),
                    )
                )
            try:
                self._pending()
                self._sock.sendall(out)
                return self._results(query)
            except OSError as e:
                self._drop()
                why = _SERVER_GONE if isinstance(e, _Closed | BrokenPipeError) else _os_error(e)
                raise OperationalError(f"consuming input failed: {why}") from None

    def _pending(self) -> None:
        """Read what the server sent while the connection was idle: a server that ends the
        session (shutdown, pg_terminate_backend) says why before it closes, and that is the
        error to give, not the reset a query sent after it would meet."""
        import select

        tls_pending = getattr(self._sock, "pending", None)  # bytes TLS decrypted and not yet read
        while self._buffer or (tls_pending and tls_pending()) or select.select([self._sock], [], [], 0)[0]:
            if not self._buffer:
                self._fill()
            kind, data = self._read()
            if kind == b"E":
                fields = _fields(data)
                self._drop()
                raise DatabaseError(_error_text(fields, None), sqlstate=fields.get("C"))
            if kind == b"S":
                self._parameter(data)
            # notices and notifications: nothing to keep

    def _data_rows(self, loaders: list[Callable[[bytes], Any]], rows: list[tuple[Any, ...]]) -> None:
        """The DataRow messages that follow a RowDescription, read in place from the buffer (a
        call per message is most of the time of a large result); the first other message is
        left in the buffer."""
        buf = self._buffer
        unpack_from = struct.unpack_from
        while True:
            data = bytes(buf)
            n = len(data)
            pos = 0
            while n - pos >= 5:
                if data[pos] != 68:  # not 'D'
                    del buf[:pos]
                    return
                end = pos + 1 + unpack_from("!i", data, pos + 1)[0]
                if end > n:
                    break
                at = pos + 7  # past the type, the length and the column count
                row: list[Any] = []
                for load in loaders:
                    size = unpack_from("!i", data, at)[0]
                    at += 4
                    if size < 0:
                        row.append(None)
                    else:
                        row.append(load(data[at : at + size]))
                        at += size
                rows.append(tuple(row))
                pos = end
            del buf[:pos]
            self._fill()

    def _results(self, query: str) -> _Result:
        first: _Result | None = None
        error: dict[str, str] | None = None
        columns: list[Column] | None = None
        loaders: list[Callable[[bytes], Any]] = []
        rows: list[tuple[Any, ...]] = []
        unpack_from = struct.unpack_from
        while True:
            try:
                kind, data = self._read()
            except _Closed:
                if error is None:
                    raise
                self._drop()  # the server said why it ended the session (psycopg says only that)
                raise DatabaseError(_error_text(error, query), sqlstate=error.get("C")) from None
            if kind == b"D":
                pos = 2
                row: list[Any] = []
                for load in loaders:
                    size = unpack_from("!i", data, pos)[0]
                    pos += 4
                    if size < 0:
                        row.append(None)
                    else:
                        row.append(load(data[pos : pos + size]))
                        pos += size
                rows.append(tuple(row))
            elif kind == b"T":
                columns, loaders, rows = [], [], []
                count = unpack_from("!h", data)[0]
                pos = 2
                for _ in range(count):
                    end = data.index(b"\x00", pos)
                    name = data[pos:end].decode("utf-8")
                    oid, size, _modifier = unpack_from("!IhI", data, end + 7)
                    pos = end + 19
                    columns.append(Column(name, oid, None, None if size < 0 else size))
                    loaders.append(_loader(oid))
                self._data_rows(loaders, rows)
            elif kind in (b"C", b"I"):
                if first is None:
                    tag = data.rstrip(b"\x00").decode() if kind == b"C" else None
                    first = (columns, rows, tag)
                columns, loaders, rows = None, [], []
            elif kind == b"E":
                error = error or _fields(data)
            elif kind == b"Z":
                break
            elif kind == b"S":
                self._parameter(data)
            elif kind == b"G":  # COPY FROM STDIN: refuse it, the server then ends the statement
                self._sock.sendall(_message(b"f", _cstr("COPY is not supported by this client")))
                error = error or {"M": "COPY is not supported by this client"}
            elif kind == b"H":
                error = error or {"M": "COPY is not supported by this client"}
            # ParseComplete, BindComplete, NoData, notices, notifications, CopyData/Done: nothing to keep
        if error is not None:
            if "C" not in error:
                raise ProgrammingError(error["M"])
            raise DatabaseError(_error_text(error, query), sqlstate=error.get("C"))
        return first or (None, [], None)


def _os_error(e: OSError) -> str:
    return os.strerror(e.errno) if e.errno else str(e)


def _md5(user: str, password: str, salt: bytes) -> str:
    import hashlib

    inner = hashlib.md5(password.encode() + user.encode()).hexdigest()
    return "md5" + hashlib.md5(inner.encode() + salt).hexdigest()


def _saslprep(password: str) -> str:
    """RFC 4013 as libpq applies it: an ASCII password as it is; a password SASLprep refuses
    is used as it is too."""
    if password.isascii():
        return password
    import stringprep
    import unicodedata

    mapped = "".join(
        " " if stringprep.in_table_c12(c) else c for c in password if not stringprep.in_table_b1(c)
    )
    text = unicodedata.normalize("NFKC", mapped)
    if not text:
        return password
    checks = (
        stringprep.in_table_c12,
        stringprep.in_table_c21_c22,
        stringprep.in_table_c3,
        stringprep.in_table_c4,
        stringprep.in_table_c5,
        stringprep.in_table_c6,
        stringprep.in_table_c7,
        stringprep.in_table_c8,
        stringprep.in_table_c9,
        stringprep.in_table_a1,
    )
    if any(check(c) for c in text for check in checks):
        return password
    bidi = any(stringprep.in_table_d1(c) for c in text)
    if bidi and (
        any(stringprep.in_table_d2(c) for c in text)
        or not (stringprep.in_table_d1(text[0]) and stringprep.in_table_d1(text[-1]))
    ):
        return password
    return text


def _nonce() -> str:
    import base64
    import secrets

    return base64.b64encode(secrets.token_bytes(18)).decode()


class _Scram:
    """SCRAM-SHA-256 (RFC 5802, 7677) as PostgreSQL runs it: no channel binding, the user name
    left empty (the server takes the start-up packet's)."""

    def __init__(self, password: str, user: str = "", nonce: str | None = None) -> None:
        self.password = _saslprep(password)
        self.user = user
        self.nonce = nonce or _nonce()
        self.bare = f"n={user},r={self.nonce}"
        self.server_signature = b""

    def first(self) -> str:
        return "n,," + self.bare

    def final(self, server_first: str) -> str:
        import base64
        import hashlib
        import hmac

        attrs = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
        if not nonce.startswith(self.nonce) or nonce == self.nonce or not iterations.isdigit():
            raise OperationalError("invalid SCRAM response (nonce mismatch)")
        salted = hashlib.pbkdf2_hmac(
            "sha256", self.password.encode(), base64.b64decode(salt), int(iterations)
        )
        without_proof = f"c=biws,r={nonce}"
        auth = f"{self.bare},{server_first},{without_proof}".encode()
        client_key = hmac.digest(salted, b"Client Key", "sha256")
        signature = hmac.digest(hashlib.sha256(client_key).digest(), auth, "sha256")
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = hmac.digest(hmac.digest(salted, b"Server Key", "sha256"), auth, "sha256")
        return f"{without_proof},p={base64.b64encode(proof).decode()}"

    def verify(self, server_final: str) -> bool:
        import base64
        import hmac

        if not server_final.startswith("v="):
            return False
        return hmac.compare_digest(base64.b64decode(server_final[2:]), self.server_signature)


class Cursor:
    """The rows of one statement at a time (all read when it ran)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.description: list[Column] | None = None
        self.rowcount = -1
        self.statusmessage: str | None = None
        self._rows: list[tuple[Any, ...]] = []
        self._pos = 0
        self._ran = False
        self.closed = False

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        if self.closed:
            raise ProgrammingError("the cursor is closed")
        self._ran = False
        self.description, self._rows, self.statusmessage = self.connection._run(sql, params)
        self.rowcount = _rowcount(self.statusmessage)
        self._pos = 0
        self._ran = True
        return self

    def _check(self) -> None:
        if self.closed:
            raise ProgrammingError("the cursor is closed")
        if not self._ran:
            raise ProgrammingError("no result available")
        if self.description is None:
            detail = f" (command status: {self.statusmessage})" if self.statusmessage else ""
            raise ProgrammingError(f"the last operation didn't produce records{detail}")

    def fetchone(self) -> tuple[Any, ...] | None:
        self._check()
        if self._pos < len(self._rows):
            self._pos += 1
            return self._rows[self._pos - 1]
        return None

    def fetchall(self) -> list[tuple[Any, ...]]:
        self._check()
        out = self._rows[self._pos :]
        self._pos = len(self._rows)
        return out

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        self._check()
        out = self._rows[self._pos : self._pos + size]
        self._pos += len(out)
        return out

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def close(self) -> None:
        self.closed = True
        self._rows = []

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
