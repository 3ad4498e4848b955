"""Regressions found by using ``sync`` and the stores as a team would, and as an unlucky one would:
each test failed before its fix (docs/stores.md, "omp-session sync")."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from omp_session.errors import StoreError
from omp_session.format.title import build_title_slot
from omp_session.ops.sync import SyncState, sync, sync_urls
from omp_session.store import open_store, parse_store_url
from omp_session.store.base import FileStorage
from stores.sqlutil import SQL_BACKENDS, drop_table, fresh_table, raw_execute, store_url

SLOT = build_title_slot("hunt ✓", "auto", "2026-01-01T00:00:00.000Z")
HEADER = SLOT + b'{"type":"session","version":3,"id":"0197","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind, table = request.param, fresh_table()
    try:
        yield store_url(kind, table, tmp_path / "sessions.db")
    finally:
        drop_table(kind, table)


def _sync(source_root: Path, url: str, tmp_path: Path) -> list[tuple[str, str, str]]:
    target_root = parse_store_url(url).root.rstrip("/")
    target = open_store(url)
    try:
        report = sync(FileStorage(), target, source_root=str(source_root), target_root=target_root,
                      state=SyncState(tmp_path / "record.json"))
    finally:
        target.close()
    return [(i.source[len(str(source_root)) + 1:], i.action, i.reason) for i in report.items]


# ----- a file name that is not UTF-8 -------------------------------------------------------------


def test_a_session_whose_name_is_not_utf8_fails_alone_in_a_sync_to_sql(sql_url: str, tmp_path: Path) -> None:
    """A session file named with bytes that are not UTF-8 (os.fsdecode gives surrogates) cannot be
    a key of a text column: it used to end the whole sync with a UnicodeEncodeError traceback, the
    sessions after it never synced. Now that session is ``failed``, one line naming it."""
    source = tmp_path / "source"
    (source / "--w--").mkdir(parents=True)
    (source / "--w--" / "a.jsonl").write_bytes(HEADER)
    with open(os.path.join(os.fsencode(source), b"--w--", b"b\xff.jsonl"), "wb") as f:
        f.write(HEADER)
    (source / "--w--" / "c.jsonl").write_bytes(HEADER)
    items = _sync(source, sql_url, tmp_path)
    assert [(name, action) for name, action, _ in items] == [
        ("--w--/a.jsonl", "copied"), ("--w--/b\udcff.jsonl", "failed"), ("--w--/c.jsonl", "copied")]
    assert "not valid UTF-8" in items[1][2] and "\n" not in items[1][2]


# ----- MariaDB: a session copied whole past max_allowed_packet -------------------------------------


def _quoted_line(n: int) -> bytes:
    """One JSONL line of ``n`` bytes (LF included) of which nearly all are escaped by the driver."""
    head, tail = b'{"type":"custom","data":"', b'"}\n'
    return head + b'\\"' * ((n - len(head) - len(tail)) // 2) + tail


@pytest.mark.db
def test_a_sync_into_mysql_fails_only_the_session_too_large_to_copy(tmp_path: Path) -> None:
    """A session copied whole (``replace``) whose INSERT is longer than the server's
    ``max_allowed_packet`` made MariaDB drop the connection ("MySQL server has gone away"): the
    whole sync ended on it, and every session after it was never synced (``sync --watch``
    reconnected and failed on it again for ever). The body here is smaller than the limit, but the
    statement that carries it, escaped, is not. Now that session is ``failed`` and the rest copied."""
    limit = int(raw_execute("mysql", "SELECT @@max_allowed_packet")[0][0])
    source = tmp_path / "source"
    (source / "--w--").mkdir(parents=True)
    big = HEADER + _quoted_line(limit * 3 // 4)
    assert len(big) < limit
    (source / "--w--" / "a-big.jsonl").write_bytes(big)
    (source / "--w--" / "b-small.jsonl").write_bytes(HEADER)
    table = fresh_table()
    url = store_url("mysql", table, tmp_path / "unused.db")
    try:
        items = _sync(source, url, tmp_path)
        assert [(name, action) for name, action, _ in items] == [("--w--/a-big.jsonl", "failed"),
                                                                 ("--w--/b-small.jsonl", "copied")]
        assert "max_allowed_packet" in items[0][2]
        rows = raw_execute("mysql", f"SELECT path FROM {table}")
        assert [r[0].rsplit("/", 1)[1] for r in rows] == ["b-small.jsonl"]
    finally:
        drop_table("mysql", table)


# ----- --prefer target, then the source moves on ---------------------------------------------------


def _line_of(text: str) -> bytes:
    return b'{"type":"message","id":"m","message":{"role":"user","content":"' + text.encode() + b'"}}\n'


def _run(source: Path, target: Path, state: Path, prefer: str | None = None) -> list[tuple[str, str]]:
    report = sync(FileStorage(), FileStorage(), source_root=str(source), target_root=str(target),
                  state=SyncState(state), prefer=prefer)
    return [(i.action, i.reason) for i in report.items]


def _diverged(tmp_path: Path) -> tuple[Path, Path, Path, bytes]:
    """(source root, target root, sync record, the target's bytes): one session, different on
    each side."""
    source, target, state = tmp_path / "a", tmp_path / "b", tmp_path / "record.json"
    (source / "--p--").mkdir(parents=True)
    (target / "--p--").mkdir(parents=True)
    (source / "--p--" / "s.jsonl").write_bytes(HEADER + _line_of("source version"))
    kept = HEADER + _line_of("target version, kept on purpose")
    (target / "--p--" / "s.jsonl").write_bytes(kept)
    return source, target, state, kept


def test_a_version_kept_by_prefer_target_is_not_overwritten_when_the_source_grows(tmp_path: Path) -> None:
    """``--prefer target`` kept the target's version and recorded it as synced; the record then
    held one hash, the target's, so when omp next appended to the source the target looked
    unchanged and the source changed: the target's version was "replaced" by a plain sync,
    silently, with no backup. The two sides have diverged since that conflict: it is one again."""
    source, target, state, kept = _diverged(tmp_path)
    assert [a for a, _ in _run(source, target, state)] == ["conflict"]
    assert [a for a, _ in _run(source, target, state, prefer="target")] == ["kept"]
    assert [a for a, _ in _run(source, target, state)] == ["unchanged"]
    with (source / "--p--" / "s.jsonl").open("ab") as f:
        f.write(_line_of("one more"))
    assert [a for a, _ in _run(source, target, state)] == ["conflict"]
    assert (target / "--p--" / "s.jsonl").read_bytes() == kept
    # and --prefer source still settles it (a file target keeps the backup)
    assert [a for a, _ in _run(source, target, state, prefer="source")] == ["replaced"]
    assert (target / "--p--" / "s.jsonl").read_bytes() == (source / "--p--" / "s.jsonl").read_bytes()
    assert [a for a, _ in _run(source, target, state)] == ["unchanged"]


def test_a_version_kept_by_prefer_target_survives_a_touched_source(tmp_path: Path) -> None:
    """The source only touched (same bytes, a new time): nothing changed on either side, so the
    kept version stays — it used to be "replaced" by the source's."""
    source, target, state, kept = _diverged(tmp_path)
    assert [a for a, _ in _run(source, target, state, prefer="target")] == ["kept"]
    os.utime(source / "--p--" / "s.jsonl", ns=(1_800_000_000_000_000_000, 1_800_000_000_000_000_000))
    assert [a for a, _ in _run(source, target, state)] == ["kept"]
    assert [a for a, _ in _run(source, target, state)] == ["unchanged"]  # noted: nothing read again
    assert (target / "--p--" / "s.jsonl").read_bytes() == kept


# ----- a target inside the source ------------------------------------------------------------------


def test_sync_refuses_a_target_inside_the_source(tmp_path: Path) -> None:
    """``sync --from file:DIR --to file:DIR/backup`` copied DIR/backup's own files too, one level
    deeper each run (backup/backup/backup/…), for ever; ``sync --watch`` refused it, ``sync`` did
    not. The same for one SQL table or Redis prefix whose target root is under the source root."""
    src = tmp_path / "sessions"
    (src / "--p--").mkdir(parents=True)
    (src / "--p--" / "a.jsonl").write_bytes(HEADER)
    db = tmp_path / "s.db"
    for source, target in ((f"file:{src}", f"file:{src}/backup"),
                           (f"sqlite:{db}?root=/r", f"sqlite:{db}?root=/r/backup")):
        if source.startswith("sqlite:"):
            sync_urls(f"file:{src}", source, use_state=False)
        with pytest.raises(StoreError, match="inside the source"):
            sync_urls(source, target, use_state=False)
    assert not (src / "backup").exists()
    # beside it, or another bucket than the one synced, is fine
    assert [i.action for i in sync_urls(f"file:{src}", f"file:{tmp_path}/backup", use_state=False).items] == \
        ["copied"]
    assert [i.action for i in sync_urls(f"file:{src}", f"sqlite:{db}?root=/r/backup", use_state=False).items] == \
        ["copied"]


# ----- SQLite: reading while a writer is mid-transaction -------------------------------------------


@pytest.mark.parametrize("create", [False, True])
def test_an_sqlite_store_opens_and_reads_while_another_writer_holds_its_write_lock(
        tmp_path: Path, create: bool) -> None:
    """Opening an SQLite store checked its table inside ``BEGIN IMMEDIATE``, a write lock: a read
    command (``show --store``, sync's source) waited for any writer mid-transaction (omp appending,
    a sync copying a large session) up to 30 s, then failed with "database is locked" — where a
    plain read goes through at once (and a database file the user may only read could not be opened
    at all). The table is now checked with plain reads; only creating it takes the lock."""
    import sqlite3

    from omp_session.store.sqlite import SqliteStorage

    db = tmp_path / "s.db"
    key = "/r/--w--/a.jsonl"
    first = SqliteStorage(str(db))
    first.replace(key, HEADER, None)
    first.close()
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE omp_session_files SET mtime_ms = mtime_ms WHERE 0")
        store = SqliteStorage(str(db), create_table=create, timeout=0.5)
        try:
            assert store.read(key) == HEADER
            assert [f.path for f in store.scan("/r/")] == [key]
        finally:
            store.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


# ----- PostgreSQL: a database not in UTF8 ---------------------------------------------------------


@pytest.mark.db
def test_a_postgres_database_not_in_utf8_is_refused_at_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a LATIN1 database ``octet_length`` counts LATIN1 bytes ("é" is one): a session holding
    one was copied, then every append to it was a conflict for ever (expected 219 bytes, found 218),
    and a character LATIN1 lacks ended the whole sync. Such a database is refused when the store
    opens, in one line; a UTF8 one opens as ever (seen live on a LATIN1 database; here the server's
    reported encoding is changed, as a LATIN1 server reports it, on the built-in client)."""
    import omp_session.store.postgres as postgres_module
    from stores.sqlutil import POSTGRES_URL

    monkeypatch.setenv("OMP_SESSION_PG_DRIVER", "wire")
    table = fresh_table()
    url = f"{POSTGRES_URL}?table={table}"
    try:
        open_store(url).close()  # UTF8: fine
        real = postgres_module.connect

        def latin1(conninfo: str, options: dict[str, object]) -> tuple[object, tuple[type[BaseException], ...]]:
            conn, errors = real(conninfo, options)
            conn.info.parameters["server_encoding"] = "LATIN1"
            return conn, errors

        monkeypatch.setattr(postgres_module, "connect", latin1)
        for create in (True, False):
            with pytest.raises(StoreError, match="encoding is LATIN1: omp's session table needs a UTF8 database"):
                open_store(url, create=create)
    finally:
        drop_table("postgres", table)


# ----- MariaDB: a table not in utf8mb4 -------------------------------------------------------------


@pytest.mark.db
@pytest.mark.parametrize("charset", ["latin1", "utf8mb3"])
def test_a_mysql_table_not_in_utf8mb4_is_refused_at_open(charset: str) -> None:
    """omp makes its table utf8mb4; one made otherwise (by hand, another program, an old MySQL's
    ``utf8``) passed the column check: ``length(content)`` then counts that character set's bytes,
    so a session with an "é" was copied and every append to it after was a conflict for ever, and
    a character the set lacks ended the whole sync ("Incorrect string value"). Refused at open."""
    _refused_at_open("path VARCHAR(512) NOT NULL PRIMARY KEY, content LONGTEXT NOT NULL, mtime_ms BIGINT NOT NULL, "
                     "title TEXT NULL, title_source VARCHAR(16) NULL, title_updated_at VARCHAR(64) NULL",
                     charset, f"content is in the character set {charset}, omp")


def _refused_at_open(columns: str, charset: str, why: str) -> None:
    """A MariaDB session table of ``columns`` (default character set ``charset``) is refused at
    open, made or not, with ``<table>.<why>``."""
    table = fresh_table()
    raw_execute("mysql", f"CREATE TABLE {table} ({columns}) ENGINE=InnoDB DEFAULT CHARSET={charset}")
    try:
        url = store_url("mysql", table, Path("unused.db"))
        for create in (True, False):
            with pytest.raises(StoreError, match=f"{table}.{why}"):
                open_store(url, create=create)
    finally:
        drop_table("mysql", table)


# ----- MariaDB: a statement of exactly max_allowed_packet bytes ---------------------------------


@pytest.mark.db
def test_a_copy_whose_statement_is_exactly_max_allowed_packet_fails_alone(tmp_path: Path) -> None:
    """The statement check let through a statement of exactly ``max_allowed_packet`` bytes (its
    command byte counted), which the server refuses as it refuses a longer one ("Got a packet
    bigger than 'max_allowed_packet' bytes", error 1153): that one size still ended the whole sync
    with a StoreError. A statement one byte shorter is stored."""
    from stores.sqlutil import mysql_connect

    limit = int(raw_execute("mysql", "SELECT @@max_allowed_packet")[0][0])
    table = fresh_table()
    url = store_url("mysql", table, tmp_path / "unused.db")
    root = "/r"
    insert = (f"INSERT INTO {table} (path, content, mtime_ms, title, title_source, title_updated_at) "
              "VALUES (%s, %s, %s, %s, %s, %s)")
    conn = mysql_connect()

    def body_of(key: str, statement: int) -> bytes:
        """A session (no title slot: NULL titles) whose INSERT, as the driver escapes it, is
        ``statement`` bytes with its command byte (a 13-digit mtime, as now)."""
        head, tail = b'{"type":"custom","data":"', b'"}\n'
        with conn.cursor() as cur:
            base = len(cur.mogrify(insert, (key, (head + tail).decode(), 1_800_000_000_000, None, None, None))
                       .encode()) + 1
        return head + b"x" * (statement - base) + tail

    source = tmp_path / "source"
    (source / "--w--").mkdir(parents=True)
    try:
        exact = body_of(f"{root}/--w--/a-exact.jsonl", limit)
        below = body_of(f"{root}/--w--/b-below.jsonl", limit - 1)
        assert len(exact) < limit
        (source / "--w--" / "a-exact.jsonl").write_bytes(exact)
        (source / "--w--" / "b-below.jsonl").write_bytes(below)
        target = open_store(f"{url}&root={root}")
        try:
            report = sync(FileStorage(), target, source_root=str(source), target_root=root,
                          state=SyncState(tmp_path / "record.json"))
        finally:
            target.close()
        items = [(i.source.rsplit("/", 1)[1], i.action, i.reason) for i in report.items]
        assert [(name, action) for name, action, _ in items] == [("a-exact.jsonl", "failed"),
                                                                 ("b-below.jsonl", "copied")]
        assert "max_allowed_packet" in items[0][2]
        rows = raw_execute("mysql", f"SELECT path, length(content) FROM {table}")
        assert [(r[0].rsplit("/", 1)[1], r[1]) for r in rows] == [("b-below.jsonl", len(below))]
    finally:
        conn.close()
        drop_table("mysql", table)


# ----- PostgreSQL: a SQL_ASCII database -----------------------------------------------------------


@pytest.mark.db
@pytest.mark.parametrize("driver", ["", "psycopg"])
def test_a_postgres_sql_ascii_database_is_refused_at_open(monkeypatch: pytest.MonkeyPatch, driver: str) -> None:
    """A SQL_ASCII database passed the encoding check (documented as read and written), but no
    store of it ever opened: the built-in client leaves it to psycopg, which returns its text as
    bytes, so the column check found no column "path" — after creating the table — and said it
    was not omp's table. It is refused, before anything is created, as another encoding is."""
    import uuid

    import psycopg

    from stores.sqlutil import POSTGRES_URL

    monkeypatch.setenv("OMP_SESSION_PG_DRIVER", driver)
    name = f"review_sql_ascii_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name} ENCODING 'SQL_ASCII' TEMPLATE template0 "
                          "LC_COLLATE 'C' LC_CTYPE 'C'")
    except psycopg.Error as e:
        pytest.skip(f"cannot create a SQL_ASCII database: {e}")
    url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        for create in (True, False):
            with pytest.raises(StoreError, match="encoding is SQL_ASCII: omp's session table needs a UTF8"):
                open_store(url, create=create)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                                "current_schema()").fetchone() == (0,)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name}")


# ----- PostgreSQL: two openers making the table at once --------------------------------------------


@pytest.mark.db
def test_a_postgres_store_opens_when_another_process_makes_its_table_at_the_same_moment() -> None:
    """Two syncs (or omp and a sync) starting together on a new database both found no table and
    both ran omp's ``CREATE TABLE IF NOT EXISTS``: PostgreSQL does not make the second wait and
    skip, it fails it with a unique violation in its catalog ("duplicate key value violates unique
    constraint pg_type_typname_nsp_index"), so one of the two ended at once (seen 12 times in 15
    with two processes). Here the other creator is held mid-transaction until ours waits for it."""
    import threading
    import time

    import psycopg

    from omp_session.store.sql import Dialect
    from stores.sqlutil import POSTGRES_URL

    table = fresh_table()
    outcome: list[object] = []

    def opener() -> None:
        try:
            open_store(f"{POSTGRES_URL}?table={table}").close()
            outcome.append("opened")
        except StoreError as e:
            outcome.append(e)

    ddl = Dialect("postgres", "%s", "%s", "", "", "", "", "", "").create_table(table)[0]
    try:
        with psycopg.connect(POSTGRES_URL) as other:  # a transaction until commit
            other.execute(ddl)
            thread = threading.Thread(target=opener)
            thread.start()
            deadline = time.monotonic() + 10
            with psycopg.connect(POSTGRES_URL, autocommit=True) as watch:
                while time.monotonic() < deadline and thread.is_alive() and not watch.execute(
                        "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                        (f"CREATE TABLE IF NOT EXISTS {table} %",)).fetchall():
                    time.sleep(0.02)
            other.commit()
        thread.join(10)
        assert outcome == ["opened"]
    finally:
        drop_table("postgres", table)


@pytest.mark.db
def test_a_mysql_table_whose_title_columns_are_not_utf8mb4_is_refused_at_open() -> None:
    """Only ``path`` and ``content`` were checked: a table whose title columns are latin1 (its
    default left latin1 while those two were converted, as the refusal above asks) opened, and the
    first session titled with a character latin1 lacks ended the whole sync ("Incorrect string
    value … for column title")."""
    _refused_at_open("path VARCHAR(512) CHARACTER SET utf8mb4 NOT NULL PRIMARY KEY, content LONGTEXT CHARACTER SET "
                     "utf8mb4 NOT NULL, mtime_ms BIGINT NOT NULL, title TEXT NULL, title_source VARCHAR(16) NULL, "
                     "title_updated_at VARCHAR(64) NULL", "latin1", "title is in the character set latin1, omp")


def test_sync_refuses_a_target_inside_the_source_when_one_url_spells_out_the_default_table(
        tmp_path: Path) -> None:
    """The nested-target check compared the URLs' options as written: naming omp's default table
    (``table=omp_session_files``) or Redis prefix on one side only made the same table look like
    another, and the copies were copied again one level deeper each run."""
    src = tmp_path / "sessions"
    (src / "--p--").mkdir(parents=True)
    (src / "--p--" / "a.jsonl").write_bytes(HEADER)
    db = tmp_path / "s.db"
    sync_urls(f"file:{src}", f"sqlite:{db}?root=/r", use_state=False)
    for source, target in ((f"sqlite:{db}?root=/r", f"sqlite:{db}?root=/r/backup&table=omp_session_files"),
                           (f"sqlite:{db}?root=/r&table=omp_session_files", f"sqlite:{db}?root=/r/backup")):
        with pytest.raises(StoreError, match="inside the source"):
            sync_urls(source, target, use_state=False)
    with pytest.raises(StoreError, match="inside the source"):
        sync_urls("redis://127.0.0.1:6379/14?root=/r", "redis://127.0.0.1:6379/14?root=/r/b&prefix=omp:sessions:",
                  use_state=False)
    rows = open_store(f"sqlite:{db}?root=/r")
    try:
        assert [f.path for f in rows.scan("/r/")] == ["/r/--p--/a.jsonl"]
    finally:
        rows.close()
