"""The built-in PostgreSQL client (store/pgwire/) gives what psycopg gives: the same values and
column names for every type our reading queries meet, the same error messages and SQLSTATEs, the
same start-up failures; and it stays out of the way (psycopg connects) wherever libpq would do
something it does not.

The machine's PostgreSQL trusts every local connection, so the password methods (cleartext, MD5,
SCRAM-SHA-256) are checked against a small fake server in a thread: psycopg logs in to it too,
which shows the fake speaks the protocol as a real server does."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import math
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from omp_session.store import pg_connect, pgwire
from stores.sqlutil import POSTGRES_URL

OPTIONS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,
}


@pytest.fixture
def both() -> Iterator[tuple[Any, pgwire.Connection]]:
    theirs = psycopg.connect(POSTGRES_URL, autocommit=True)
    ours = pgwire.connect(POSTGRES_URL, **OPTIONS)
    try:
        yield theirs, ours
    finally:
        theirs.close()
        ours.close()


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, -0.0 apart from 0.0, and of the same type."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, Decimal):
        return str(a) == str(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


BATTERY = [
    "SELECT 1::int2, '-32768'::int2, 2147483647::int4, '-9223372036854775808'::int8, 4294967295::oid",
    "SELECT 1.5::float4, 0.1::float8, 'NaN'::float8, 'Infinity'::float8, '-Infinity'::float4, '-0'::float8, 1e308::float8",
    "SELECT 1.50::numeric, 'NaN'::numeric, 'Infinity'::numeric, '-Infinity'::numeric, "
    "123456789012345678901234567890.123456789012345678901234567890::numeric, -0.000::numeric, 1e-30::numeric",
    "SELECT true, false, NULL::bool, NULL::int, NULL::text, NULL",
    "SELECT ''::text, 'a'::varchar(3), 'ab'::char(4), 'name'::name, 'unknown literal', 'é'::\"char\"",
    "SELECT 'héllo wörld ✓ 𝄞 😀'::text, E'tab\\there\\nnew line'::text, E'back\\\\slash \"quote\"'::text",
    "SELECT '\\x'::bytea, '\\x00ff10'::bytea, convert_to('𝄞', 'UTF8'), NULL::bytea",
    'SELECT \'{"a": [1, 2.5, null, true], "é": "𝄞"}\'::json, \'{"b": {"c": 1e400}}\'::jsonb, '
    "'[]'::jsonb, 'null'::json, '\"s\"'::jsonb",
    "SELECT ARRAY[1,2,NULL]::int2[], '{}'::int4[], ARRAY[[1,2],[3,4]]::int8[], '[0:1]={7,8}'::int4[], ARRAY[1]::oid[]",
    "SELECT ARRAY['a', '', NULL, 'NULL', 'null', 'x y', 'q\"q', 'b\\s', '{}', 'a,b', '𝄞']::text[], '{}'::text[], "
    "ARRAY['v']::varchar[], ARRAY['n']::name[], ARRAY['c']::bpchar[]",
    "SELECT ARRAY[1.5, 'NaN', '-0']::float8[], ARRAY[1.5]::float4[], ARRAY[1.10, NULL, 'NaN']::numeric[], "
    "ARRAY[true, false, NULL], ARRAY['\\x00ff'::bytea, NULL], ARRAY['{\"a\":1}'::jsonb, 'null'], ARRAY['[1]'::json]",
    "SELECT ARRAY['(0,0),(1,1)'::box, '(2,2),(3,3)'], ARRAY['1'::money], ARRAY['pg_class'::regclass], "
    "ARRAY['0/0'::pg_lsn], ARRAY['a b'::tsvector]",
    "SELECT 'a b'::tsvector, 'x'::xml, '1'::money, B'101', '(1,2)'::point, 'pg_class'::regclass, '0/1'::pg_lsn",
    "SELECT repeat('x', 1200000) || '✓', repeat('é', 300000)",
    "SELECT g, g * 1.5, 'row ' || g, mod(g, 3) = 0, CASE WHEN mod(g, 7) = 0 THEN NULL ELSE g END "
    "FROM generate_series(1, 5000) g",
    "SELECT 1 WHERE false",
    'SELECT 1 AS "Mixed Case", 2 AS "é 𝄞", 3 AS a, 4 AS a',
    "SELECT sum(x::bigint), avg(x), count(*), max(x::text) FROM generate_series(1, 10) x",
    "SELECT to_char(to_timestamp(0) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), numnode(to_tsquery('simple', 'a & b'))",
]


@pytest.mark.parametrize("sql", BATTERY)
def test_every_type_reads_as_psycopg_reads_it(both: tuple[Any, pgwire.Connection], sql: str) -> None:
    theirs, ours = both
    for params in (None, ()):  # a simple query either way, as psycopg sends it
        want = theirs.execute(sql, params)
        got = ours.execute(sql, params)
        assert [c.name for c in got.description or []] == [c.name for c in want.description or []]
        assert [c[0] for c in got.description or []] == [c[0] for c in want.description or []]
        assert got.rowcount == want.rowcount
        rows, expected = got.fetchall(), want.fetchall()
        assert len(rows) == len(expected)
        for row, exp in zip(rows, expected, strict=True):
            assert _same(row, exp), (row, exp)


PARAMS: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    32767,
    32768,
    -32769,
    2**31 - 1,
    2**31,
    2**63 - 1,
    -(2**63),
    2**63,
    -(2**70),
    0.0,
    -0.0,
    1.5,
    1e300,
    5e-324,
    math.nan,
    math.inf,
    -math.inf,
    Decimal("1.10"),
    Decimal("-0.000"),
    Decimal("NaN"),
    "",
    "plain",
    "é 𝄞 ✓",
    "a'b\"c\\d",
    "%s %% %",
    "x" * 100_000,
    "NULL",
    "{a,b}",
    b"",
    b"\x00\xff",
    bytearray(b"ab"),
    memoryview(b"cd"),
    [],
    [None],
    ["a", "", None, "NULL", "x y", 'q"q', "b\\s", "{}", "a,b", "é", "\t"],
    [["a"], ["b"]],
    [1, 2],
    [1, None, 2**40],
    [2**70],
    [[1, 2], [3, 4]],
    [1.5, math.nan, -0.0],
    [True, None],
    [b"\x00"],
    [Decimal("1.5")],
]


@pytest.mark.parametrize("value", PARAMS, ids=lambda v: repr(v)[:30])
def test_parameters_are_typed_and_sent_as_psycopg_sends_them(
    both: tuple[Any, pgwire.Connection], value: Any
) -> None:
    theirs, ours = both
    for sql in ("SELECT %s::text IS NULL, pg_typeof(%s)::text, %s::text", "SELECT %s", "SELECT %s = %s"):
        args = (value,) * sql.count("%s")
        try:
            want: Any = ("ok", theirs.execute(sql, args).fetchall())
        except psycopg.Error as e:
            want = ("error", e.sqlstate, str(e))
        try:
            got: Any = ("ok", ours.execute(sql, args).fetchall())
        except pgwire.Error as e:
            got = ("error", e.sqlstate, str(e))
        assert _same(list(got), list(want)), (sql, got, want)


def test_placeholders_and_percent_signs(both: tuple[Any, pgwire.Connection]) -> None:
    theirs, ours = both
    for sql, params in (
        ("SELECT '%%'", None),
        ("SELECT '%%'", ()),
        ("SELECT '%s'", None),
        ("SELECT %s || '%%'", ("a",)),
        ("SELECT %b + %t", (1, 2)),
        ("SELECT 1; SELECT 2", ()),
        ("", None),
    ):
        want = theirs.execute(sql, params)
        got = ours.execute(sql, params)
        assert (got.fetchall() if got.description else None) == (
            want.fetchall() if want.description else None
        )
        assert got.rowcount == want.rowcount
    for sql, params in (("SELECT '%'", ()), ("SELECT %s", ()), ("SELECT %x", (1,)), ("SELECT 1", (1,))):
        with pytest.raises(psycopg.ProgrammingError) as theirs_error:
            theirs.execute(sql, params)
        with pytest.raises(pgwire.ProgrammingError) as ours_error:
            ours.execute(sql, params)
        assert str(ours_error.value) == str(theirs_error.value)
    with pytest.raises(pgwire.ProgrammingError, match="mixed types"):
        ours.execute("SELECT %s", ([1, "a"],))


ERRORS = [
    "selec 1",
    "SELECT * FROM no_such_table_pgwire",
    "SELECT 1/0",
    "SELECT 'a'::int",
    "SELECT nosuchcol FROM pg_class",
    "SELECT 1,\n  2,\n\tnosuch_column_here,\r\n 3",
    "SELECT '𝄞漢字漢字', nosuch_column_after_wide_chars",
    "SELECT "
    + ", ".join(f"{i} AS column_number_{i}" for i in range(30))
    + ", nosuch_in_a_long_line, 1, 2, 3",
    "SELECT " + ", ".join(f"{i}" for i in range(3)) + ", nosuch_near_the_start" + ", 1" * 60,
    "DO $$BEGIN RAISE EXCEPTION 'boom' USING DETAIL = 'the detail', HINT = 'the hint'; END$$",
    "DO $$BEGIN RAISE EXCEPTION E'multi\\nline' USING DETAIL = E'd\\n2'; END$$",
    "DO $$BEGIN EXECUTE 'SELECT nosuch_inner FROM pg_class'; END$$",
    "SELECT 1; SELECT 1/0",
    "SELECT * FROM no_such_table_pgwire WHERE a = %s",
]


@pytest.mark.parametrize("sql", ERRORS)
def test_errors_are_psycopg_s_and_the_connection_goes_on(
    both: tuple[Any, pgwire.Connection], sql: str
) -> None:
    theirs, ours = both
    params = (1,) if "%s" in sql else None
    with pytest.raises(psycopg.Error) as want:
        theirs.execute(sql, params)
    with pytest.raises(pgwire.DatabaseError) as got:
        ours.execute(sql, params)
    assert str(got.value) == str(want.value)
    assert got.value.sqlstate == want.value.sqlstate
    assert ours.execute("SELECT 2").fetchall() == [(2,)]


def test_a_duplicate_key_shows_its_detail(both: tuple[Any, pgwire.Connection]) -> None:
    theirs, ours = both
    for conn in (theirs, ours):
        conn.execute("CREATE TEMP TABLE dup (a int PRIMARY KEY)")
        conn.execute("INSERT INTO dup VALUES (1)")
    with pytest.raises(psycopg.Error) as want:
        theirs.execute("INSERT INTO dup VALUES (%s)", (1,))
    with pytest.raises(pgwire.Error) as got:
        ours.execute("INSERT INTO dup VALUES (%s)", (1,))
    assert str(got.value) == str(want.value) and "\nDETAIL:  Key (a)=(1) already exists." in str(got.value)
    assert got.value.sqlstate == "23505"


def test_transactions_and_row_counts(both: tuple[Any, pgwire.Connection]) -> None:
    _, ours = both
    cur = ours.cursor()
    cur.execute("CREATE TEMP TABLE tx (a int)")
    assert (cur.rowcount, cur.description) == (-1, None)
    cur.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
    cur.execute("INSERT INTO tx VALUES (%s), (%s)", (1, 2))
    assert cur.rowcount == 2
    cur.execute("ROLLBACK")
    assert ours.execute("SELECT count(*) FROM tx").fetchone() == (0,)
    with ours.cursor() as c:
        c.execute("BEGIN")
        c.execute("INSERT INTO tx SELECT generate_series(1, 5)")
        c.execute("COMMIT")
        c.execute("UPDATE tx SET a = a + 1 WHERE a > %s", (2,))
        assert c.rowcount == 3
        c.execute("SELECT a FROM tx ORDER BY a")
        assert c.fetchone() == (1,) and c.fetchall() == [(2,), (4,), (5,), (6,)] and c.fetchone() is None
        c.execute("DELETE FROM tx")
        with pytest.raises(pgwire.ProgrammingError, match="didn't produce records"):
            c.fetchall()
    with pytest.raises(pgwire.ProgrammingError, match="cursor is closed"):
        c.execute("SELECT 1")
    ours.execute("BEGIN")
    with pytest.raises(pgwire.DatabaseError):
        ours.execute("SELECT 1/0")
    with pytest.raises(pgwire.DatabaseError, match="current transaction is aborted"):
        ours.execute("SELECT 1")
    ours.execute("ROLLBACK")
    assert ours.execute("SELECT 3").fetchall() == [(3,)]


def test_a_connection_the_server_ends_says_why_then_is_closed(both: tuple[Any, pgwire.Connection]) -> None:
    theirs, ours = both
    theirs.execute("SELECT pg_terminate_backend(%s)", (ours.info.backend_pid,))
    # pg_terminate_backend only signals: until the backend has said why and gone, a query sent
    # meanwhile may meet the reset of a socket closed under it instead of the message
    for _ in range(500):
        if not theirs.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (ours.info.backend_pid,)).fetchall():
            break
        time.sleep(0.01)
    with pytest.raises(pgwire.Error) as got:
        ours.execute("SELECT 1")
    assert str(got.value) == "terminating connection due to administrator command"
    assert got.value.sqlstate == "57P01" and ours.closed
    for call in (lambda: ours.execute("SELECT 1"), ours.cursor):
        with pytest.raises(pgwire.OperationalError, match=r"^the connection is closed$"):
            call()
    ours.close()
    with pytest.raises(pgwire.OperationalError, match=r"^the connection is closed$"):
        ours.cursor()


def test_the_socket_carries_the_keepalives_and_a_url_value_wins() -> None:
    conn = pgwire.connect(POSTGRES_URL + "?keepalives_idle=7", **OPTIONS)
    try:
        s = socket.socket(fileno=conn.pgconn.socket)
        try:
            assert (
                s.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                s.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
            ) == (1, 7, 10, 3, 60_000)
        finally:
            s.detach()
    finally:
        conn.close()


# ----- start-up failures, as psycopg words them ------------------------------------------------


def _both_fail(url: str, **options: Any) -> tuple[str, str]:
    with pytest.raises(psycopg.Error) as want:
        psycopg.connect(url, autocommit=True, **options)
    with pytest.raises(pgwire.Error) as got:
        pgwire.connect(url, **options)
    return str(got.value), str(want.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "url",
    [
        POSTGRES_URL.rsplit("/", 1)[0] + "/no_such_database_pgwire",
        POSTGRES_URL.replace("postgres@", "no_such_role_pgwire@"),
    ],
)
def test_a_server_refusal_is_worded_as_psycopg_words_it(url: str) -> None:
    got, want = _both_fail(url)
    assert got == want and got.startswith(
        'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:'
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_a_refused_port_is_worded_as_psycopg_words_it(host: str) -> None:
    got, want = _both_fail(f"postgresql://postgres@{host}:{_free_port()}/test")
    assert got == want and "Connection refused\n\tIs the server running" in got


def test_an_unknown_host_is_worded_as_psycopg_words_it() -> None:
    got, want = _both_fail("postgresql://postgres@no-such-host.invalid/test")
    assert got == want


class Peer:
    """A listening socket on loopback that does ``answer(conn)`` with each connection."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self.answer = answer
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    self.answer(conn)
                except OSError:
                    pass
                except BaseException as e:  # shown by the test that used the peer
                    self.errors.append(e)

    def url(self, user: str = "postgres", password: str | None = None, query: str = "") -> str:
        who = user if password is None else f"{user}:{password}"
        return f"postgresql://{who}@127.0.0.1:{self.port}/test{query}"

    def close(self) -> None:
        self.sock.close()
        self.thread.join(5)
        assert not self.errors, self.errors


def test_a_peer_that_never_answers_times_out_in_connect_timeout() -> None:
    silent = threading.Event()
    peer = Peer(lambda conn: silent.wait(10))
    try:
        for sslmode in ("prefer", "disable"):
            with pytest.raises(pgwire.ConnectionTimeout, match=r"^connection timeout expired$"):
                pgwire.connect(peer.url(query=f"?sslmode={sslmode}"), connect_timeout=2)
    finally:
        silent.set()
        peer.close()


def test_a_store_that_never_answers_is_one_line_naming_the_timeout() -> None:
    from omp_session.errors import StoreError
    from omp_session.store import open_store

    silent = threading.Event()
    peer = Peer(lambda conn: silent.wait(10))
    try:
        with pytest.raises(
            StoreError, match=r"cannot connect: no answer within 1 s \(connection timeout expired\)$"
        ):
            open_store(peer.url() + "?timeout=1", create=False)
    finally:
        silent.set()
        peer.close()


@pytest.mark.parametrize(
    ("reply", "sslmode"),
    [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "prefer"),
        (b"-ERR unknown command\r\n", "disable"),
        (b"R\x00\x00\x00\x08\x00\x00\x00\x00" + b"\xff" * 20, "disable"),  # AuthenticationOk, then nonsense
        (b"", "prefer"),
        (b"", "disable"),
    ],
)
def test_a_peer_that_is_not_postgresql_is_an_error_not_a_hang(reply: bytes, sslmode: str) -> None:
    def answer(conn: socket.socket) -> None:
        conn.recv(1024)
        conn.sendall(reply)

    peer = Peer(answer)
    try:
        got, want = _both_fail(peer.url(query=f"?sslmode={sslmode}"), connect_timeout=3)
        assert "timeout" not in got
        assert got.splitlines()[0] == want.splitlines()[0] or got.startswith(
            f'connection failed: connection to server at "127.0.0.1", port {peer.port} failed: '
        )
    finally:
        peer.close()


def test_an_ssl_demand_on_a_server_without_it(both: tuple[Any, pgwire.Connection]) -> None:
    got, want = _both_fail(POSTGRES_URL + "?sslmode=require")
    assert got == want


# ----- the password methods, against a fake server ---------------------------------------------

SALT = b"0123456789abcdef"


def _send(conn: socket.socket, kind: bytes, body: bytes) -> None:
    conn.sendall(kind + struct.pack("!i", len(body) + 4) + body)


def _exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _receive(conn: socket.socket) -> tuple[bytes, bytes]:
    kind = _exactly(conn, 1)
    size = struct.unpack("!i", _exactly(conn, 4))[0]
    return kind, _exactly(conn, size - 4)


def _startup(conn: socket.socket, tls: Any = None) -> tuple[socket.socket, dict[str, str]]:
    """The start-up packet's parameters (an SSL request answered: ``tls``, a server context, or no)."""
    while True:
        size = struct.unpack("!i", _exactly(conn, 4))[0]
        body = _exactly(conn, size - 4)
        if struct.unpack("!i", body[:4])[0] == 80877103:  # SSLRequest
            conn.sendall(b"N" if tls is None else b"S")
            if tls is not None:
                conn = tls.wrap_socket(conn, server_side=True)
            continue
        parts = body[4:].split(b"\x00")
        return conn, {parts[i].decode(): parts[i + 1].decode() for i in range(0, len(parts) - 2, 2)}


def _fatal(conn: socket.socket, message: str) -> None:
    _send(conn, b"E", b"SFATAL\x00VFATAL\x00C28P01\x00M" + message.encode() + b"\x00\x00")


def _let_in(conn: socket.socket) -> None:
    """AuthenticationOk, the parameters a server reports, a backend key, ready for a query."""
    _send(conn, b"R", struct.pack("!i", 0))
    for name, value in (
        ("server_version", "15.20"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("standard_conforming_strings", "on"),
        ("integer_datetimes", "on"),
        ("DateStyle", "ISO, MDY"),
    ):
        _send(conn, b"S", name.encode() + b"\x00" + value.encode() + b"\x00")
    _send(conn, b"K", struct.pack("!ii", 4242, 7))
    _send(conn, b"Z", b"I")


def fake_server(
    method: str, password: str, tls: Any = None, plus: bool = False
) -> Callable[[socket.socket], None]:
    """A server asking for ``method`` (``password``, ``md5`` or ``scram``; ``plus``: offering
    SCRAM-SHA-256-PLUS too), over TLS when ``tls`` (a server context) is given and the client
    asks, then answering ``SELECT`` with one row naming the user it let in."""

    def answer(conn: socket.socket) -> None:
        conn, params = _startup(conn, tls)
        user = params["user"]
        if method == "password":
            _send(conn, b"R", struct.pack("!i", 3))
            _, body = _receive(conn)
            ok = body == password.encode() + b"\x00"
        elif method == "md5":
            salt = b"\x01\x02\x03\x04"
            _send(conn, b"R", struct.pack("!i", 5) + salt)
            _, body = _receive(conn)
            inner = hashlib.md5(password.encode() + user.encode()).hexdigest().encode()
            ok = body == b"md5" + hashlib.md5(inner + salt).hexdigest().encode() + b"\x00"
        else:
            offered = b"SCRAM-SHA-256-PLUS\x00" if plus else b""
            _send(conn, b"R", struct.pack("!i", 10) + offered + b"SCRAM-SHA-256\x00\x00")
            _, body = _receive(conn)
            mechanism, rest = body.split(b"\x00", 1)
            assert mechanism == b"SCRAM-SHA-256"
            client_first = rest[4:].decode()
            bare = client_first.split(",", 2)[2]
            nonce = dict(p.split("=", 1) for p in bare.split(","))["r"] + "srv+nonce/1"
            server_first = f"r={nonce},s={base64.b64encode(SALT).decode()},i=4096"
            _send(conn, b"R", struct.pack("!i", 11) + server_first.encode())
            _, body = _receive(conn)
            final = body.decode()
            without_proof, _, proof = final.rpartition(",p=")
            salted = hashlib.pbkdf2_hmac("sha256", password.encode(), SALT, 4096)
            stored = hashlib.sha256(hmac.digest(salted, b"Client Key", "sha256")).digest()
            auth = f"{bare},{server_first},{without_proof}".encode()
            signature = hmac.digest(stored, auth, "sha256")
            client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature, strict=True))
            # libpq over TLS says "y,," (it could bind the channel; the server offered no -PLUS)
            gs2 = base64.b64encode(client_first[: len(client_first) - len(bare)].encode()).decode()
            ok = without_proof == f"c={gs2},r={nonce}" and hashlib.sha256(client_key).digest() == stored
            if ok:
                server = hmac.digest(hmac.digest(salted, b"Server Key", "sha256"), auth, "sha256")
                _send(conn, b"R", struct.pack("!i", 12) + b"v=" + base64.b64encode(server))
        if not ok:
            _fatal(conn, f'password authentication failed for user "{user}"')
            return
        _let_in(conn)
        while True:
            kind, body = _receive(conn)
            if kind == b"X":
                return
            _send(conn, b"T", struct.pack("!h", 1) + b"who\x00" + struct.pack("!ihihih", 0, 0, 25, -1, -1, 0))
            _send(conn, b"D", struct.pack("!hi", 1, len(user)) + user.encode())
            _send(conn, b"C", b"SELECT 1\x00")
            _send(conn, b"Z", b"I")

    return answer


@pytest.mark.parametrize("method", ["password", "md5", "scram"])
def test_password_methods_log_in_as_psycopg_does(method: str) -> None:
    peer = Peer(fake_server(method, "s3cret é"))
    try:
        url = peer.url("alice", "s3cret%20%C3%A9", "?sslmode=prefer")
        with psycopg.connect(url, autocommit=True) as theirs:  # the fake is a fair server
            assert theirs.execute("SELECT 1").fetchall() == [("alice",)]
        ours = pgwire.connect(url, **OPTIONS)
        try:
            assert ours.execute("SELECT 1").fetchall() == [("alice",)] and ours.info.backend_pid == 4242
        finally:
            ours.close()
        got, want = _both_fail(peer.url("alice", "wrong"))
        assert got == want and got.endswith('FATAL:  password authentication failed for user "alice"')
    finally:
        peer.close()


@pytest.fixture
def tls(tmp_path: Path) -> Any:
    """A server TLS context with a self-signed certificate (made by the openssl command)."""
    import ssl
    import subprocess

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=fake-postgres",
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


@pytest.mark.parametrize("sslmode", ["require", "prefer"])
def test_tls_without_certificate_checks_as_libpq(tls: Any, sslmode: str) -> None:
    import ssl

    peer = Peer(fake_server("scram", "pw", tls))
    try:
        url = peer.url("alice", "pw", f"?sslmode={sslmode}")
        with psycopg.connect(url, autocommit=True) as theirs:
            assert theirs.execute("SELECT 1").fetchall() == [("alice",)] and theirs.pgconn.ssl_in_use
        ours = pgwire.connect(url, **OPTIONS)
        try:
            assert ours.execute("SELECT 1").fetchall() == [("alice",)]
            assert isinstance(ours._sock, ssl.SSLSocket)
        finally:
            ours.close()
    finally:
        peer.close()


def test_a_tls_handshake_the_server_resets_under_prefer_is_left_to_psycopg() -> None:
    """sslmode=prefer: a server that says 'S' and then drops the handshake (a reset, not a TLS
    alert) is tried again without TLS by libpq; the built-in client leaves that to psycopg."""
    attempts = [0]
    plain = fake_server("password", "pw")

    def answer(conn: socket.socket) -> None:
        attempts[0] += 1
        size = struct.unpack("!i", _exactly(conn, 4))[0]
        body = _exactly(conn, size - 4)
        if struct.unpack("!i", body[:4])[0] != 80877103:  # libpq's retry without TLS: a start-up packet
            replay = socket.socket(fileno=os.dup(conn.fileno()))
            with contextlib.closing(replay):
                plain(_Replayed(replay, struct.pack("!i", size) + body))
            return
        conn.sendall(b"S")
        conn.recv(4096)  # the ClientHello
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close as a reset

    peer = Peer(answer)
    try:
        url = peer.url("alice", "pw", "?sslmode=prefer")
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as theirs:
            assert theirs.execute("SELECT 1").fetchall() == [("alice",)]
        with pytest.raises(pgwire.Unsupported, match="TLS"):
            pgwire.connect(url, connect_timeout=5)
        conn, _ = pg_connect.connect(url, {"connect_timeout": 5})
        try:
            assert conn.execute("SELECT 1").fetchall() == [("alice",)]
        finally:
            conn.close()
    finally:
        peer.close()


class _Replayed:
    """A socket whose first reads give ``head`` (bytes already taken from it) before the wire's."""

    def __init__(self, sock: socket.socket, head: bytes) -> None:
        self.sock, self.head = sock, head

    def recv(self, n: int) -> bytes:
        if self.head:
            out, self.head = self.head[:n], self.head[n:]
            return out
        return self.sock.recv(n)

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)


_SALTED = "s=" + base64.b64encode(SALT).decode() + ",i=4096"


@pytest.mark.parametrize(
    ("server_first", "server_final", "why"),
    [
        ("s=not*base64,i=4096", "", "malformed SCRAM message (invalid salt)"),
        (_SALTED, "v=not*base64", "malformed SCRAM message (invalid server signature)"),
        (_SALTED, "v=" + base64.b64encode(b"x" * 32).decode(), "incorrect server signature"),
        (_SALTED, "e=other-error", "error received from server in SCRAM exchange: other-error"),
    ],
)
def test_a_scram_server_that_cannot_prove_itself_is_refused_as_libpq_refuses_it(
    server_first: str, server_final: str, why: str
) -> None:
    """The server's signature (SCRAM's proof that it knows the password too) must be right, and
    a malformed salt or signature is libpq's error, not a Python traceback (binascii.Error)."""

    def answer(conn: socket.socket) -> None:
        conn, _ = _startup(conn)
        _send(conn, b"R", struct.pack("!i", 10) + b"SCRAM-SHA-256\x00\x00")
        _, body = _receive(conn)
        bare = body.split(b"\x00", 1)[1][4:].decode().split(",", 2)[2]
        nonce = dict(p.split("=", 1) for p in bare.split(","))["r"] + "srv"
        _send(conn, b"R", struct.pack("!i", 11) + f"r={nonce},{server_first}".encode())
        with contextlib.suppress(ConnectionError):
            _receive(conn)
            _send(conn, b"R", struct.pack("!i", 12) + server_final.encode())
            _send(conn, b"R", struct.pack("!i", 0))
            _send(conn, b"Z", b"I")
            _receive(conn)

    peer = Peer(answer)
    try:
        got, want = _both_fail(peer.url("alice", "pw", "?sslmode=disable"), connect_timeout=5)
        assert got == want and got.endswith(f"failed: {why}")
    finally:
        peer.close()


def test_channel_binding_offered_over_tls_is_left_to_psycopg(tls: Any) -> None:
    peer = Peer(fake_server("scram", "pw", tls, plus=True))
    try:
        with pytest.raises(pgwire.Unsupported, match="SCRAM-SHA-256-PLUS"):
            pgwire.connect(peer.url("alice", "pw", "?sslmode=require"))
    finally:
        peer.close()


def test_no_password_for_a_server_that_asks_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.pgpass
    peer = Peer(fake_server("scram", "s3cret"))
    try:
        got, want = _both_fail(peer.url("alice"))
        assert got == want and got.endswith("fe_sendauth: no password supplied")
        (tmp_path / ".pgpass").write_text(f"127.0.0.1:{peer.port}:*:alice:s3cret\n")
        (tmp_path / ".pgpass").chmod(0o600)
        with pytest.raises(pgwire.Unsupported):  # libpq reads it: psycopg's to do
            pgwire.connect(peer.url("alice"))
        conn, _ = pg_connect.connect(peer.url("alice"), {})
        try:
            assert isinstance(conn, psycopg.Connection) and conn.execute("SELECT 1").fetchall() == [
                ("alice",)
            ]
        finally:
            conn.close()
    finally:
        peer.close()


def test_scram_proof_of_rfc_7677() -> None:
    scram = pgwire.auth.Scram("pencil", user="user", nonce="rOprNGfwEbeRWgbNEkqO")
    assert scram.first() == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = scram.final(
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert final == (
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert scram.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert not scram.verify("v=" + base64.b64encode(b"x" * 32).decode())


def test_a_server_nonce_that_does_not_extend_ours_is_refused() -> None:
    scram = pgwire.auth.Scram("pencil", nonce="abc")
    with pytest.raises(pgwire.OperationalError, match="nonce"):
        scram.final("r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


# ----- what the built-in client leaves to psycopg ----------------------------------------------


@pytest.mark.parametrize(
    "conninfo",
    [
        "host=127.0.0.1 port=5432 user=postgres dbname=test",
        "postgresql:///test",
        "postgresql://postgres@%2Fvar%2Frun%2Fpostgresql/test",
        "postgresql://postgres@127.0.0.1:5432,127.0.0.1:5433/test",
        "postgresql://postgres@127.0.0.1/test?sslrootcert=/nowhere",
        "postgresql://postgres@127.0.0.1/test?target_session_attrs=any",
        "postgresql://postgres@127.0.0.1/test?options=-c%20search_path%3Dx",
        "postgresql://postgres@127.0.0.1/test?service=x",
        "postgresql://postgres@127.0.0.1/test?sslmode=verify-full",
        "postgresql://postgres@127.0.0.1/test?sslmode=verify-ca",
        "postgresql://postgres@127.0.0.1/test?keepalives_idle=0",
        "postgresql://postgres@127.0.0.1/test?ssl=true",
        "postgresql://postgres@127.0.0.1:port/test",
        "postgresql://postgres@127.0.0.1/test#x",
    ],
)
def test_what_only_libpq_does_is_unsupported(conninfo: str) -> None:
    with pytest.raises(pgwire.Unsupported):
        pgwire.connect(conninfo)


@pytest.mark.parametrize("variable", ["PGPASSWORD", "PGHOST", "PGSSLMODE", "PGPASSFILE", "PGOPTIONS"])
def test_a_pg_environment_variable_is_unsupported(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, "x")
    with pytest.raises(pgwire.Unsupported):
        pgwire.connect(POSTGRES_URL)


def test_certificates_in_home_are_unsupported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".postgresql").mkdir()
    with pytest.raises(pgwire.Unsupported):
        pgwire.connect(POSTGRES_URL)
    pgwire.connect(POSTGRES_URL + "?sslmode=disable").close()  # libpq reads none of them then


def test_pg_connect_takes_psycopg_for_what_the_built_in_client_cannot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(pg_connect.DRIVER_VARIABLE, raising=False)
    conn, errors = pg_connect.connect(POSTGRES_URL, OPTIONS)
    try:
        assert isinstance(conn, pgwire.Connection) and pgwire.Error in errors
    finally:
        conn.close()
    conn, errors = pg_connect.connect(POSTGRES_URL + "?target_session_attrs=any", OPTIONS)
    try:
        assert isinstance(conn, psycopg.Connection) and psycopg.Error in errors
        assert conn.execute("SELECT 1").fetchall() == [(1,)]
    finally:
        conn.close()
    monkeypatch.setenv(pg_connect.DRIVER_VARIABLE, "psycopg")
    conn, _ = pg_connect.connect(POSTGRES_URL, OPTIONS)
    try:
        assert isinstance(conn, psycopg.Connection)
    finally:
        conn.close()
    monkeypatch.setenv(pg_connect.DRIVER_VARIABLE, "wire")
    with pytest.raises(pgwire.OperationalError, match="OMP_SESSION_PG_DRIVER=wire"):
        pg_connect.connect(POSTGRES_URL + "?target_session_attrs=any", OPTIONS)


def test_user_and_database_default_as_in_libpq() -> None:
    import pwd

    me = pwd.getpwuid(os.geteuid()).pw_name
    params = pgwire.conninfo.parse_conninfo("postgresql://127.0.0.1", {})
    assert (params.user, params.dbname, params.port, params.timeout) == (me, me, 5432, 130)
    params = pgwire.conninfo.parse_conninfo(
        "postgres://a%40b:p%3Aw%2F@[::1]:6543/d%20b?connect_timeout=1&application_name=x",
        {"connect_timeout": 9, "keepalives": 1},
    )
    assert (
        params.user,
        params.password,
        params.host,
        params.port,
        params.dbname,
        params.timeout,
        params.application_name,
    ) == ("a@b", "p:w/", "::1", 6543, "d b", 2, "x")


def test_an_ipv6_zone_is_percent_decoded_as_libpq_decodes_it() -> None:
    """libpq decodes every part of the URL, a bracketed host too: ``[fe80::1%25eth0]`` is the
    link-local address on eth0 (left encoded, no resolver knows the name)."""
    params = pgwire.conninfo.parse_conninfo("postgresql://u@[fe80::1%25lo]:6543/d", {})
    assert (params.host, params.port) == ("fe80::1%lo", 6543)


def test_the_row_count_of_rows_returned_is_their_number(both: tuple[Any, pgwire.Connection]) -> None:
    """psycopg's ``rowcount`` of a statement returning rows is how many it returned, whatever its
    command tag counts (``SHOW``, ``EXPLAIN`` count nothing)."""
    theirs, ours = both
    for c in (theirs, ours):
        c.execute("CREATE TEMP TABLE rc (a int)")
    for sql in (
        "SHOW server_version_num",
        "EXPLAIN SELECT 1",
        "VALUES (1), (2), (3)",
        "INSERT INTO rc SELECT generate_series(1, 4) RETURNING a",
        "SELECT 1 WHERE false",
        "UPDATE rc SET a = a + 1",
        "CREATE TEMP TABLE rc2 AS SELECT 1",
    ):
        want, got = theirs.execute(sql), ours.execute(sql)
        assert (got.rowcount, got.statusmessage) == (want.rowcount, want.statusmessage), sql


@pytest.mark.parametrize(("sql", "params"), [("", None), ("  ;", None), ("", ())])
def test_an_empty_query_is_refused_at_fetch_as_psycopg_refuses_it(
    both: tuple[Any, pgwire.Connection], sql: str, params: tuple[()] | None
) -> None:
    theirs, ours = both
    with pytest.raises(psycopg.ProgrammingError) as want:
        theirs.execute(sql, params).fetchall()
    with pytest.raises(pgwire.ProgrammingError) as got:
        ours.execute(sql, params).fetchall()
    assert str(got.value) == str(want.value)
    assert ours.execute("SELECT 1").fetchall() == [(1,)]


def _reset_on_query(conn: socket.socket) -> None:
    """Let the client in (trust), then reset the connection (RST) on its first query."""
    conn, _ = _startup(conn)
    _let_in(conn)
    _receive(conn)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # closing sends a reset


def test_a_reset_connection_is_worded_as_psycopg_words_it() -> None:
    peer = Peer(_reset_on_query)
    try:
        with (psycopg.connect(peer.url(query="?sslmode=disable"), autocommit=True) as theirs,
              pytest.raises(psycopg.OperationalError) as want):
            theirs.execute("SELECT 1")
        ours = pgwire.connect(peer.url(query="?sslmode=disable"), **OPTIONS)
        with pytest.raises(pgwire.OperationalError) as got:
            ours.execute("SELECT 1")
        assert str(got.value) == str(want.value) and "server closed the connection unexpectedly" in str(got.value)
        assert ours.closed
    finally:
        peer.close()


def _reset_on_startup(conn: socket.socket) -> None:
    _startup(conn)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_a_connection_reset_at_start_up_is_worded_as_psycopg_words_it() -> None:
    peer = Peer(_reset_on_startup)
    try:
        got, want = _both_fail(peer.url(query="?sslmode=disable"))
        assert got == want
    finally:
        peer.close()
