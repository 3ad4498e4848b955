"""The SQL stores (SQLite, PostgreSQL, MariaDB): omp's table layout, size preconditions, title
overlay, rename, and clear errors — against the real servers, one fresh table per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from builders import ASSISTANT, user
from omp_session.catalog.stored import read_stored_session
from omp_session.errors import PersistenceError, StoreError, WriteConflictError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.format.title import build_title_slot
from omp_session.store import open_store
from omp_session.store.base import FileStorage, SessionStorage
from omp_session.write.manager import SessionManager
from stores.sqlutil import (
    SQL_BACKENDS,
    deterministic_ids,
    drop_table,
    fresh_table,
    raw_execute,
    store_url,
)

USER = user("héllo ✓ 𝄞")
KEY = "/home/u/.omp/agent/sessions/--work--/2026-01-01T00-00-00-000Z_0197.jsonl"


class Backend:
    def __init__(self, kind: str, table: str, sqlite_path: Path) -> None:
        self.kind, self.table, self.sqlite_path = kind, table, sqlite_path
        self.url = store_url(kind, table, sqlite_path)

    def open(self, **kw: Any) -> SessionStorage:
        return open_store(self.url, **kw)

    def sql(self, sql: str, *params: Any) -> list[Any]:
        return raw_execute(self.kind, sql.replace("{t}", self.table), params, self.sqlite_path)


@pytest.fixture(params=SQL_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    b = Backend(request.param, fresh_table(), tmp_path / "sessions.db")
    try:
        yield b
    finally:
        drop_table(b.kind, b.table)


@pytest.fixture
def store(backend: Backend) -> Iterator[SessionStorage]:
    s = backend.open()
    yield s
    s.close()


def slot(title: str, source: str | None = "auto", when: str = "2026-01-01T00:00:00.000Z") -> bytes:
    return build_title_slot(title, source, when)


BODY = slot("first") + b'{"type":"session","version":3,"id":"0197","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'


# ----- the manager on every backend writes what it writes to files ---------------------------------

def _script(storage: SessionStorage | str, session_dir: str, cwd: str) -> str:
    """One session's life: lazy creation, appends, a title change, a branch, a reopen."""
    sm = SessionManager.create(cwd, session_dir, storage=storage, blob_store=MemoryBlobStore())
    u = sm.append_message(USER)
    sm.append_message(ASSISTANT)
    sm.set_session_name("A title ✓", "user")
    sm.append_model_change("anthropic/claude", "smol")
    sm.branch(u)
    sm.append_message(ASSISTANT)
    sm.append_label_change(u, "start")
    path = sm.get_session_file()
    assert path is not None
    sm.close()
    again = SessionManager.open(path, session_dir, storage=storage, blob_store=MemoryBlobStore())
    again.append_message(USER)
    again.set_session_name("Second title", "user")
    again.close()
    return path


def test_the_manager_writes_the_same_bytes_as_to_files(backend: Backend, tmp_path: Path) -> None:
    cwd, sessions = str(tmp_path), str(tmp_path / "sessions")
    with deterministic_ids():
        path = _script(FileStorage(), sessions, cwd)
    expected = Path(path).read_bytes()
    Path(path).unlink()
    store = backend.open()
    with deterministic_ids():
        key = _script(store, sessions, cwd)
    assert key == path
    assert store.read(key) == expected
    assert store.size(key) == len(expected)
    # what the reader makes of it is the same session
    session = read_stored_session(store, key, blob_store=MemoryBlobStore())
    assert session.header is not None and session.get_header()["title"] == "Second title"
    assert len(session.entries) == len(expected.splitlines()) - 2
    # a store URL works as well as a storage
    sm = SessionManager.open(key, sessions, storage=backend.url, blob_store=MemoryBlobStore())
    assert sm.get_session_name() == "Second title" and sm.get_leaf_id() == session.leaf_id
    sm.close()


def test_the_table_is_omps(backend: Backend, store: SessionStorage) -> None:
    store.replace(KEY, BODY, None)
    rows = backend.sql("SELECT path, content, mtime_ms, title, title_source, title_updated_at FROM {t}")
    assert len(rows) == 1
    path, content, mtime, title, source, updated = rows[0]
    assert (path, content.encode(), title, source, updated) == (KEY, BODY, "first", "auto",
                                                              "2026-01-01T00:00:00.000Z")
    assert int(mtime) > 1_700_000_000_000
    if backend.kind == "postgres":
        types = dict(backend.sql("SELECT column_name, data_type FROM information_schema.columns "
                                 "WHERE table_name = ?", backend.table))
        assert types == {"path": "text", "content": "text", "mtime_ms": "bigint", "title": "text",
                         "title_source": "text", "title_updated_at": "text"}
    elif backend.kind == "mysql":
        types = dict(backend.sql("SELECT column_name, column_type FROM information_schema.columns "
                                 "WHERE table_schema = DATABASE() AND table_name = ?", backend.table))
        assert types == {"path": "varchar(512)", "content": "longtext", "mtime_ms": "bigint(20)",
                         "title": "text", "title_source": "varchar(16)", "title_updated_at": "varchar(64)"} \
            or types["mtime_ms"] == "bigint"  # MySQL 8 drops the display width
    else:
        info = backend.sql("PRAGMA table_info({t})")
        assert [(r[1], r[2], r[5]) for r in info] == [("path", "TEXT", 1), ("content", "TEXT", 0),
                                                      ("mtime_ms", "INTEGER", 0), ("title", "TEXT", 0),
                                                      ("title_source", "TEXT", 0),
                                                      ("title_updated_at", "TEXT", 0)]


def test_sizes_are_utf8_bytes(store: SessionStorage) -> None:
    body = BODY + '{"t":"é✓𝄞"}\n'.encode()
    store.replace(KEY, body, None)
    assert store.size(KEY) == len(body)
    added = store.append(KEY, '{"more":"𝄞"}\n'.encode())
    assert added == len('{"more":"𝄞"}\n'.encode())
    assert store.read(KEY) == body + '{"more":"𝄞"}\n'.encode()
    stat = store.stat(KEY)
    assert stat is not None and stat.size == len(body) + added


# ----- size preconditions -------------------------------------------------------------------------

def test_a_rewrite_checks_the_size_atomically(store: SessionStorage) -> None:
    store.replace(KEY, BODY, None)
    with pytest.raises(WriteConflictError, match="expected missing, found"):
        store.replace(KEY, b"other\n", None)
    with pytest.raises(WriteConflictError, match=f"expected 3 bytes, found {len(BODY)} bytes"):
        store.replace(KEY, b"other\n", 3)
    assert store.read(KEY) == BODY
    store.replace(KEY, BODY + b"{}\n", len(BODY))
    assert store.read(KEY) == BODY + b"{}\n"
    with pytest.raises(WriteConflictError, match="found missing"):
        store.replace(KEY + ".x", b"{}\n", 10)


def test_a_second_writer_is_refused_not_overwritten(backend: Backend, tmp_path: Path) -> None:
    one, two = backend.open(), backend.open()
    sm = SessionManager.create(str(tmp_path), "/s", storage=one, blob_store=MemoryBlobStore())
    sm.append_message(USER)
    sm.append_message(ASSISTANT)
    path = sm.get_session_file()
    assert path is not None
    other = SessionManager.open(path, storage=two, blob_store=MemoryBlobStore())
    other.append_message(USER)  # an append: the file grows under the first manager
    before = two.read(path)
    with pytest.raises(WriteConflictError):
        sm.rewrite_entries()
    assert two.read(path) == before


def test_an_append_needs_the_file_and_completes_a_cut_line(store: SessionStorage) -> None:
    with pytest.raises(FileNotFoundError):
        store.append(KEY, b"{}\n")
    assert store.size(KEY) is None
    store.replace(KEY, BODY + b'{"cut":', None)
    assert store.append(KEY, b"{}\n") == 4
    assert store.read(KEY) == BODY + b'{"cut":\n{}\n'


def test_bodies_that_a_text_column_cannot_hold_are_refused_whole(backend: Backend, store: SessionStorage) -> None:
    with pytest.raises(PersistenceError, match="not UTF-8"):
        store.replace(KEY, BODY + b"\xff\n", None)
    assert store.size(KEY) is None
    store.replace(KEY, BODY, None)
    with pytest.raises(PersistenceError, match="not UTF-8"):
        store.append(KEY, b"\xc3\n")
    assert store.read(KEY) == BODY


# ----- title --------------------------------------------------------------------------------------

def test_a_title_change_updates_only_the_columns_and_reads_overlay_it(backend: Backend,
                                                                      store: SessionStorage) -> None:
    store.replace(KEY, BODY, None)
    assert store.write_title_slot(KEY, slot("new ✓", "user", "2026-02-02T00:00:00.000Z"))
    content, title, source = backend.sql("SELECT content, title, title_source FROM {t}")[0]
    assert content.encode() == BODY  # the stored body keeps its old slot, as omp's does
    assert (title, source) == ("new ✓", "user")
    assert store.read(KEY) == slot("new ✓", "user", "2026-02-02T00:00:00.000Z") + BODY[256:]
    # a full write takes the title from the body again
    store.replace(KEY, slot("third", None) + BODY[256:], len(BODY))
    assert backend.sql("SELECT title, title_source FROM {t}")[0] == ("third", None)


def test_a_body_without_a_256_byte_slot_gets_no_title(backend: Backend, store: SessionStorage) -> None:
    short = b'{"type":"title","v":1,"title":"t","updatedAt":"2026","pad":""}\n{"type":"session","id":"x"}\n'
    store.replace(KEY, short, None)
    assert backend.sql("SELECT title FROM {t}")[0][0] is None
    assert not store.write_title_slot(KEY, slot("x"))
    assert store.read(KEY) == short  # omp would lay a 256-byte slot over the header; we keep it
    assert not store.write_title_slot(KEY + ".missing", slot("x"))


def test_a_table_from_before_the_title_columns_gets_them(backend: Backend) -> None:
    mtime = "BIGINT" if backend.kind != "sqlite" else "INTEGER"
    path = "VARCHAR(512) NOT NULL PRIMARY KEY" if backend.kind == "mysql" else "TEXT PRIMARY KEY"
    content = "LONGTEXT" if backend.kind == "mysql" else "TEXT"
    backend.sql(f"CREATE TABLE {{t}} (path {path}, content {content} NOT NULL, mtime_ms {mtime} NOT NULL)")
    backend.sql("INSERT INTO {t} (path, content, mtime_ms) VALUES (?, ?, ?)", KEY, BODY.decode(), 1)
    s = backend.open()
    assert s.read(KEY) == BODY
    s.replace(KEY, BODY, len(BODY))
    assert backend.sql("SELECT title FROM {t}")[0][0] == "first"
    s.close()


# ----- rename, delete, listing --------------------------------------------------------------------

def test_rename_replaces_the_destination_in_one_transaction(store: SessionStorage) -> None:
    other = KEY.replace("0197", "0198")
    store.replace(KEY, BODY, None)
    store.replace(other, b"old\n", None)
    store.rename(KEY, other)
    assert store.size(KEY) is None and store.read(other) == BODY
    with pytest.raises(FileNotFoundError):
        store.rename(KEY, other)
    assert store.read(other) == BODY  # a failed rename deleted nothing
    store.rename(other, other)
    assert store.read(other) == BODY


def test_delete_takes_the_artifacts_and_listing_is_by_directory(store: SessionStorage) -> None:
    base = KEY[: -len(".jsonl")]
    store.replace(KEY, BODY, None)
    store.replace(base + "/agent_1.jsonl", BODY, None)
    store.replace(base + "/tool.txt", b"out\n", None)
    store.replace("/home/u/.omp/agent/sessions/--other--/a_b.jsonl", BODY, None)
    bucket = KEY.rsplit("/", 1)[0]
    assert store.list(bucket, "*.jsonl") == [KEY]
    assert store.list(base, "*") == [base + "/agent_1.jsonl", base + "/tool.txt"]
    assert [f.path for f in store.scan(bucket + "/")] == [KEY, base + "/agent_1.jsonl"]
    assert len(store.scan("/home/u/")) == 3
    store.delete(KEY)
    assert [f.path for f in store.scan("/")] == ["/home/u/.omp/agent/sessions/--other--/a_b.jsonl"]
    assert store.size(base + "/tool.txt") is None


def test_keys_with_like_wildcards_are_matched_literally(store: SessionStorage) -> None:
    store.replace("/a_b/x.jsonl", BODY, None)
    store.replace("/a%b/x.jsonl", BODY, None)
    store.replace("/axb/x.jsonl", BODY, None)
    assert [f.path for f in store.scan("/a_b/")] == ["/a_b/x.jsonl"]
    assert [f.path for f in store.scan("/a%b/")] == ["/a%b/x.jsonl"]


def test_every_write_gets_a_later_mtime(store: SessionStorage) -> None:
    store.replace(KEY, BODY, None)
    seen = []
    for _ in range(5):
        store.append(KEY, b"{}\n")
        stat = store.stat(KEY)
        assert stat is not None
        seen.append(stat.mtime_ms)
    assert seen == sorted(set(seen))


# ----- bad input: one clear line naming the store, nothing written ---------------------------------

@pytest.mark.parametrize(("url", "message"), [
    ("ftp://host/db", "'ftp://host/db' is not a store URL"),
    ("nothing", "is not a store URL"),
    ("sqlite:", "no database file"),
    ("mysql:///test", "no host in the URL"),
    ("postgresql://h:notaport/db", "not a valid URL"),
    ("sqlite:/tmp/x.db?tabel=x", "unknown option 'tabel'"),
    ("redis://127.0.0.1?table=x", "option 'table' does not apply to redis"),
])
def test_a_bad_url_is_one_clear_line(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message) as e:
        open_store(url)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("table", ["drop table x", "a.b", '"q"', "1abc", "x" * 64, "t;--", ""])
@pytest.mark.parametrize("kind", SQL_BACKENDS)
def test_an_unsafe_table_name_is_refused(kind: str, table: str, tmp_path: Path) -> None:
    url = store_url(kind, "x", tmp_path / "s.db").split("?")[0] + "?table=" + quote(table)
    with pytest.raises(StoreError, match="is not a safe identifier"):
        open_store(url)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://postgres@127.0.0.1:1/test", r"postgresql://postgres@127.0.0.1:1/test: cannot connect: .*refused"),
    ("mysql://root@127.0.0.1:1/test", r"mysql://root@127.0.0.1:1/test: cannot connect: .*(refused|connect)"),
    ("postgresql://no_such_role_x@127.0.0.1:5432/test", "cannot connect: .*no_such_role_x"),
    ("mysql://root:wrong@127.0.0.1:3306/test", r"mysql://root:\*\*\*@127.0.0.1:3306/test: cannot connect: .*denied"),
    ("postgresql://postgres@127.0.0.1:5432/no_such_db_x", "cannot connect: .*no_such_db_x"),
    ("mysql://root@127.0.0.1:3306/no_such_db_x", "cannot connect: .*no_such_db_x"),
])
def test_unreachable_servers_and_refused_credentials_are_one_line(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message) as e:
        open_store(url)
    assert "\n" not in str(e.value) and "wrong" not in str(e.value)


def test_a_table_of_another_layout_is_refused(backend: Backend) -> None:
    blob = {"postgres": "BYTEA", "mysql": "LONGBLOB", "sqlite": "BLOB"}[backend.kind]
    path = "VARCHAR(512) NOT NULL PRIMARY KEY" if backend.kind == "mysql" else "TEXT PRIMARY KEY"
    backend.sql(f"CREATE TABLE {{t}} (path {path}, content {blob} NOT NULL, mtime_ms BIGINT NOT NULL)")
    with pytest.raises(StoreError, match=f"column {backend.table}.content is {blob.lower()}, omp 18.2.3 uses") as e:
        backend.open()
    assert "\n" not in str(e.value)
    backend.sql("DROP TABLE {t}")
    backend.sql(f"CREATE TABLE {{t}} (path {path}, body TEXT)")
    with pytest.raises(StoreError, match=r"has no column content: it is not omp 18\.2\.3's session table"):
        backend.open()


def test_opening_for_reading_creates_nothing(backend: Backend) -> None:
    with pytest.raises(StoreError, match=f"there is no table {backend.table}|no database file"):
        backend.open(create=False)
    assert not backend.sqlite_path.exists()
    if backend.kind == "sqlite":
        backend.sql("CREATE TABLE unrelated (x)")
        with pytest.raises(StoreError, match=f"there is no table {backend.table}"):
            backend.open(create=False)
    s = backend.open()
    s.replace(KEY, BODY, None)
    s.close()
    reader = backend.open(create=False)
    assert reader.read(KEY) == BODY
    reader.close()


def test_the_store_names_itself_in_errors_without_the_password() -> None:
    from omp_session.store import parse_store_url

    parsed = parse_store_url("postgresql://me:secret@db.example:5433/sessions?table=t&sslmode=disable")
    assert parsed.name == "postgresql://me:***@db.example:5433/sessions"
    assert parsed.options == {"table": "t"} and parsed.extra == {"sslmode": "disable"}
    assert "table=" not in parsed.location and "sslmode=disable" in parsed.location
    assert parse_store_url("mariadb://root@h/db").kind == "mysql"
    assert parse_store_url("sqlite:///tmp/a.db").location == "/tmp/a.db"
    assert parse_store_url("file:/x/sessions").root == "/x/sessions/"


# ----- the interface's newer operations on the file and memory backends too ------------------------

@pytest.mark.parametrize("kind", ["file", "memory"])
def test_stat_scan_rename_on_files_and_memory(kind: str, tmp_path: Path) -> None:
    from omp_session.store.base import MemoryStorage

    store: SessionStorage = FileStorage() if kind == "file" else MemoryStorage()
    root = str(tmp_path / "sessions")
    key = f"{root}/--p--/a_1.jsonl"
    store.replace(key, BODY, None)
    store.replace(f"{root}/--p--/a_1/sub.jsonl", BODY, None)
    store.replace(f"{root}/--q--/b_2.jsonl", BODY, None)
    stat = store.stat(key)
    assert stat is not None and stat.size == len(BODY) and stat.mtime_ms > 0
    assert store.stat(key + "x") is None
    assert [f.path for f in store.scan(root + "/")] == [key, f"{root}/--p--/a_1/sub.jsonl", f"{root}/--q--/b_2.jsonl"]
    assert [f.path for f in store.scan(f"{root}/--q--/")] == [f"{root}/--q--/b_2.jsonl"]
    store.rename(key, f"{root}/--q--/b_2.jsonl")
    assert store.size(key) is None and store.read(f"{root}/--q--/b_2.jsonl") == BODY
    with pytest.raises(FileNotFoundError):
        store.rename(key, f"{root}/x.jsonl")
    store.close()


def test_continue_recent_and_fork_work_on_a_store(backend: Backend, tmp_path: Path) -> None:
    sessions = "/team/sessions/--p--"
    made = []
    for n in range(2):
        sm = SessionManager.create(str(tmp_path), sessions, storage=backend.url, blob_store=MemoryBlobStore())
        sm.append_message({**USER, "content": f"session {n}"})
        sm.append_message(ASSISTANT)
        made.append(sm.get_session_file())
        sm.close()
    recent = SessionManager.continue_recent(str(tmp_path), sessions, storage=backend.url, blob_store=MemoryBlobStore())
    assert recent.get_session_file() == made[1]  # the newest by the store's mtime
    recent.close()
    fork = SessionManager.fork_from(made[0] or "", str(tmp_path), sessions, storage=backend.url,
                                    blob_store=MemoryBlobStore())
    forked = fork.get_session_file()
    assert forked not in made and forked is not None
    fork.close()
    store = backend.open()
    assert [f.path for f in store.scan(sessions + "/")] == sorted([*made, forked])  # type: ignore[list-item]
    assert b"session 0" in store.read(forked)
    assert not Path(sessions).exists()  # nothing on the local disk
    store.close()
