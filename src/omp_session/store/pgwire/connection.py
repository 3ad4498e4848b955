"""The connection: the socket, the start-up (TLS, authentication), the query cycle, and the
:class:`Cursor` over its results."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .conninfo import Params, is_address, parse_conninfo
from .errors import (
    SERVER_GONE,
    Closed,
    ConnectionTimeout,
    DatabaseError,
    Error,
    OperationalError,
    ProgrammingError,
    Unsupported,
    os_error,
)
from .messages import cstr, error_text, message, parse_fields
from .params import dump, placeholders
from .results import Column, Result, command_rowcount, loader_for

if TYPE_CHECKING:  # imported where a server asks for a password
    from .auth import Scram

__all__ = ["Connection", "Cursor", "connect"]

_PROTOCOL = 196608  # 3.0
_SSL_REQUEST = 80877103
_MAX_RECV = 1 << 20  # bytes asked of one recv() for a large message


def connect(conninfo: str, *, autocommit: bool = True, **options: Any) -> Connection:
    """A connection as ``psycopg.connect(conninfo, autocommit=True, **options)`` opens it, or
    :class:`Unsupported` when only libpq can open it the same way."""
    if not autocommit:
        raise Unsupported("autocommit=False")
    params = parse_conninfo(conninfo, options)
    if is_address(params.host):
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


def _attempt(params: Params, address: str) -> Connection:
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


def _scram_step(step: Callable[[str], Any], data: bytes, prefix: str) -> Any:
    """A SCRAM step on the server's message, its refusal worded as libpq's: after the prefix."""
    try:
        return step(data[4:].decode("utf-8", "replace"))
    except OperationalError as e:
        raise OperationalError(prefix + str(e)) from None


def _row(data: bytes, at: int, loaders: list[Callable[[bytes], Any]]) -> tuple[Any, ...]:
    """The values of the DataRow whose first column starts at ``at`` in ``data``."""
    unpack_from = struct.unpack_from
    row: list[Any] = []
    for load in loaders:
        size = unpack_from("!i", data, at)[0]
        at += 4
        if size < 0:
            row.append(None)
        else:
            row.append(load(data[at : at + size]))
            at += size
    return tuple(row)


class Connection:
    """One session with the server, in autocommit mode (``BEGIN``/``COMMIT`` are statements)."""

    prepare_threshold: int | None = 5  # accepted for psycopg's sake: every statement is unnamed

    def __init__(self, sock: socket.socket, params: Params, deadline: float, prefix: str) -> None:
        self._sock: Any = sock
        self._buffer = bytearray()
        self._closed = False
        self._lock = threading.Lock()
        self.info = _Info()
        self.pgconn = _PGconn(self)
        self._start(params, deadline, prefix)

    # ----- start-up ---------------------------------------------------------------------------

    def _start(self, params: Params, deadline: float, prefix: str) -> None:
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
                    raise OperationalError(prefix + SERVER_GONE)
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
        except (Closed, ConnectionResetError):  # libpq words a reset as it words a close
            self._drop()
            raise OperationalError(prefix + SERVER_GONE) from None
        except OSError as e:
            self._drop()
            raise OperationalError(f"{prefix}could not receive data from server: {os_error(e)}") from None
        except BaseException:
            self._drop()
            raise

    def _start_tls(self, params: Params, remaining: Callable[[], float]) -> None:
        import ssl

        # sslmode require/prefer: encrypted, the certificate not checked (libpq without a root.crt)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._sock.settimeout(remaining())
        try:
            self._sock = context.wrap_socket(
                self._sock, server_hostname=None if is_address(params.host) else params.host
            )
        except TimeoutError:
            raise
        except OSError as e:  # an alert (ssl.SSLError) or the server resetting the connection
            if params.sslmode == "prefer":  # libpq then tries again without TLS
                raise Unsupported("the TLS handshake failed under sslmode=prefer") from e
            raise
        self._buffer.clear()

    def _authenticate(
        self, params: Params, remaining: Callable[[], float], prefix: str, ssl_in_use: bool
    ) -> None:
        startup = [("user", params.user), ("database", params.dbname), ("client_encoding", "UTF8")]
        if params.application_name is not None:
            startup.append(("application_name", params.application_name))
        body = struct.pack("!i", _PROTOCOL) + b"".join(cstr(k) + cstr(v) for k, v in startup) + b"\x00"
        self._sock.settimeout(remaining())
        self._sock.sendall(struct.pack("!i", len(body) + 4) + body)
        scram: Scram | None = None
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
                    self._sock.sendall(message(b"p", cstr(password or "")))
                elif code == 5:
                    from .auth import md5_password

                    self._sock.sendall(message(b"p", cstr(md5_password(params.user, password or "", data[4:8]))))
                elif code == 10:
                    mechanisms = [m.decode() for m in data[4:].split(b"\x00") if m]
                    if "SCRAM-SHA-256" not in mechanisms or (
                        ssl_in_use and "SCRAM-SHA-256-PLUS" in mechanisms
                    ):
                        raise Unsupported(f"SASL mechanisms {mechanisms}")
                    from .auth import Scram

                    scram = Scram(password or "")
                    first_message = scram.first().encode()
                    self._sock.sendall(
                        message(
                            b"p",
                            cstr("SCRAM-SHA-256") + struct.pack("!i", len(first_message)) + first_message,
                        )
                    )
                elif code == 11 and scram is not None:
                    final = _scram_step(scram.final, data, prefix)
                    self._sock.sendall(message(b"p", final.encode()))
                elif code == 12 and scram is not None:
                    if not _scram_step(scram.verify, data, prefix):
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
                fields = parse_fields(data)
                if params.sslmode == "allow" or (ssl_in_use and params.sslmode == "prefer"):
                    raise Unsupported("libpq tries again with or without TLS")
                severity = fields.get("S", "FATAL")
                raise OperationalError(prefix + f"{severity}:  {error_text(fields, None)}", sqlstate=None)
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
        if len(buf) < size + 1:
            self._fill(size + 1 - len(buf))
        with memoryview(buf) as view:  # one copy of the body, not two
            data = bytes(view[5 : size + 1])
        del buf[: size + 1]
        return kind, data

    def _fill(self, wanted: int = 0) -> None:
        """Append what the socket has (a byte at least); ``wanted``: the bytes the message being
        read still lacks, all of them read before returning. A value of many megabytes arrives in
        pieces of some 64 KB: each is appended once, never the whole buffer copied per piece."""
        buf = self._buffer
        goal = len(buf) + max(wanted, 1)
        while len(buf) < goal:
            chunk = self._sock.recv(min(max(goal - len(buf), 65536), _MAX_RECV))
            if not chunk:
                raise Closed
            buf += chunk

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
            self._sock.sendall(message(b"X", b""))
        self._drop()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, sql: str, params: Sequence[Any] | None) -> Result:
        if params is not None and isinstance(params, Mapping):
            raise ProgrammingError("named parameters are not supported by this client")
        values = None if params is None else list(params)
        query = sql if values is None else placeholders(sql, len(values))
        with self._lock:
            if self._closed:
                raise OperationalError("the connection is closed")
            if not values:  # psycopg too sends a statement without parameters as a simple query
                out = message(b"Q", cstr(query))
            else:
                dumped = [dump(v) for v in values]
                n = len(dumped)
                parse = b"\x00" + cstr(query) + struct.pack(f"!h{n}I", n, *(oid for oid, _ in dumped))
                bind = [b"\x00\x00", struct.pack("!hh", 0, n)]
                for _, raw in dumped:
                    bind.append(b"\xff\xff\xff\xff" if raw is None else struct.pack("!i", len(raw)) + raw)
                bind.append(b"\x00\x00")
                out = b"".join(
                    (
                        message(b"P", parse),
                        message(b"B", b"".join(bind)),
                        message(b"D", b"P\x00"),
                        message(b"E", b"\x00\x00\x00\x00\x00"),
                        message(b"S", b""),
                    )
                )
            try:
                self._pending()
                self._sock.sendall(out)
                return self._results(query)
            except OSError as e:
                self._drop()
                # libpq words a reset (ECONNRESET) as it words a close
                why = SERVER_GONE if isinstance(e, Closed | BrokenPipeError | ConnectionResetError) else os_error(e)
                raise OperationalError(f"consuming input failed: {why}") from None
            except Error:
                raise  # the server's answer, read to its end (or the connection already dropped)
            except BaseException:
                # interrupted (Ctrl-C) or a value that would not load, mid-answer: what the server
                # still sends would be read as the next statement's answer
                self._drop()
                raise

    def _pending(self) -> None:
        """Read what the server sent while the connection was idle: a server that ends the
        session (shutdown, pg_terminate_backend) says why before it closes, and that is the
        error to give, not the reset a query sent after it would meet."""
        tls_pending = getattr(self._sock, "pending", None)  # bytes TLS decrypted and not yet read
        while self._buffer or (tls_pending and tls_pending()) or self._readable():
            if not self._buffer:
                self._fill()
            kind, data = self._read()
            if kind == b"E":
                fields = parse_fields(data)
                self._drop()
                raise DatabaseError(error_text(fields, None), sqlstate=fields.get("C"))
            if kind == b"S":
                self._parameter(data)
            # notices and notifications: nothing to keep

    def _readable(self) -> bool:
        """Whether the socket has something to read now (or has ended): poll(), as select()
        refuses a descriptor past 1024, which a process holding many files gives a connection."""
        import select

        if not hasattr(select, "poll"):  # Windows: its select() has no such limit
            return bool(select.select([self._sock], [], [], 0)[0])
        poller = select.poll()
        poller.register(self._sock, select.POLLIN)
        return bool(poller.poll(0))

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
            missing = 0
            while n - pos >= 5:
                if data[pos] != 68:  # not 'D'
                    del buf[:pos]
                    return
                end = pos + 1 + unpack_from("!i", data, pos + 1)[0]
                if end > n:
                    missing = end - n
                    break
                rows.append(_row(data, pos + 7, loaders))  # past the type, the length and the column count
                pos = end
            del buf[:pos]
            self._fill(missing)  # the whole of a row cut short: copied once it is all here

    def _results(self, query: str) -> Result:
        first: Result | None = None
        error: dict[str, str] | None = None
        columns: list[Column] | None = None
        loaders: list[Callable[[bytes], Any]] = []
        rows: list[tuple[Any, ...]] = []
        unpack_from = struct.unpack_from
        while True:
            try:
                kind, data = self._read()
            except Closed:
                if error is None:
                    raise
                self._drop()  # the server said why it ended the session (psycopg says only that)
                raise DatabaseError(error_text(error, query), sqlstate=error.get("C")) from None
            if kind == b"D":
                rows.append(_row(data, 2, loaders))  # past the column count
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
                    loaders.append(loader_for(oid))
                self._data_rows(loaders, rows)
            elif kind in (b"C", b"I"):
                if first is None:
                    tag = data.rstrip(b"\x00").decode() if kind == b"C" else None
                    first = (columns, rows, tag)
                columns, loaders, rows = None, [], []
            elif kind == b"E":
                error = error or parse_fields(data)
            elif kind == b"Z":
                break
            elif kind == b"S":
                self._parameter(data)
            elif kind == b"G":  # COPY FROM STDIN: refuse it, the server then ends the statement
                self._sock.sendall(message(b"f", cstr("COPY is not supported by this client")))
                error = error or {"M": "COPY is not supported by this client"}
            elif kind == b"H":
                error = error or {"M": "COPY is not supported by this client"}
            # ParseComplete, BindComplete, NoData, notices, notifications, CopyData/Done: nothing to keep
        if error is not None:
            if "C" not in error:
                raise ProgrammingError(error["M"])
            raise DatabaseError(error_text(error, query), sqlstate=error.get("C"))
        return first or (None, [], None)



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
        # rows returned: their number (psycopg's, whatever the tag counts: SHOW, EXPLAIN)
        self.rowcount = command_rowcount(self.statusmessage) if self.description is None else len(self._rows)
        self._pos = 0
        self._ran = True
        return self

    def _check(self) -> None:
        if self.closed:
            raise ProgrammingError("the cursor is closed")
        if not self._ran:
            raise ProgrammingError("no result available")
        if self.description is None:
            # no command tag: the server's EmptyQueryResponse (a query of blanks or semicolons)
            status = f"command status: {self.statusmessage}" if self.statusmessage else "result status: EMPTY_QUERY"
            detail = f" ({status})"
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
