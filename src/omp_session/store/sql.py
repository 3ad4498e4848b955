"""Session files in one SQL table, laid out exactly as omp 18.2.3's ``SqlSessionStorage`` (spec S12.4).

One row per file: ``path`` (the key: the absolute path the file would have on disk), ``content``
(the JSONL body as text), ``mtime_ms``, and the title metadata ``title``, ``title_source``,
``title_updated_at``. The DDL is omp's, per dialect, so omp and this library share one table.

What the layout implies, and what this module keeps:

* **Bodies are text.** A body must be valid UTF-8 (PostgreSQL also refuses NUL); sizes are the
  UTF-8 byte length the server computes (``octet_length``, MySQL ``length``,
  ``length(cast(… as blob))``), the same number omp compares.
* **Title overlay.** The slot parsed from a written body's first line goes to the title columns;
  a title change updates only those columns (the stored body keeps its old slot) and every read
  lays a freshly serialised 256-byte slot over the first 256 bytes of the body, as omp's reads do.
* **Size preconditions are atomic in the server:** insert-if-missing, replace-if-byte-length,
  so two writers never overwrite each other's rows (:class:`WriteConflictError`).
* **An append is one transaction** that locks the row, adds the missing LF of a cut last line if
  needed, and concatenates; a killed writer leaves the row as it was. Sync's size-checked append
  is one ``UPDATE … WHERE <byte length> = N``: a second writer waits for the first's row lock and
  then finds the new length, so it changes nothing.
* **Rename** deletes the destination and moves the row inside one transaction.

A dialect adapter (sqlite_store, postgres_store, mysql_store) supplies the connection and the
driver's error classes; everything else is here.
"""

from __future__ import annotations

import builtins
import fnmatch
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from omp_session.errors import PersistenceError, StoreError, StoreMissingError, WriteConflictError
from omp_session.format.title import TITLE_SLOT_BYTES, build_title_slot, parse_title_slot

from .base import StoredFile, conflict_message
from .url import DEFAULT_TIMEOUT, unanswered

__all__ = ["DEFAULT_TABLE", "IDENTIFIER", "Dialect", "SqlStorage", "check_table_name", "overlay_title"]

DEFAULT_TABLE = "omp_session_files"
# omp's rule for the table option: inlined into statements, so only plain identifiers
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# the column types omp 18.2.3 creates, per dialect (information_schema / PRAGMA spelling, lowercase)
_TEXTUAL = frozenset({"text", "varchar", "character varying", "longtext"})
_EXPECTED_TYPES = {
    "path": _TEXTUAL,
    "content": frozenset({"text", "longtext"}),
    "mtime_ms": frozenset({"bigint", "integer", "int"}),
    "title": _TEXTUAL,
    "title_source": _TEXTUAL,
    "title_updated_at": _TEXTUAL,
}
_TITLE_COLUMNS = ("title", "title_source", "title_updated_at")
# tries of sync's conditional append that PostgreSQL failed with a serialization error (40001)
_SERIALIZATION_RETRIES = 5


def check_table_name(table: str, store: str) -> str:
    if not IDENTIFIER.fullmatch(table):
        raise StoreError(f"{store}: table name {table!r} is not a safe identifier "
                         f"(omp's rule: {IDENTIFIER.pattern}, no quotes or dots)")
    return table


@dataclass(frozen=True)
class Dialect:
    """The SQL that differs between engines."""

    name: str  # "postgres" | "mysql" | "sqlite" (omp's adapter names)
    param: str  # the driver's placeholder
    int_param: str  # a placeholder compared with an integer expression
    byte_len: str  # UTF-8 byte length of ``content``
    head: str  # the first N bytes of ``content`` as a byte string (one int parameter)
    last_char: str  # the last character of ``content``
    concat: str  # ``content`` followed by one parameter
    begin: str  # a write transaction that locks what it reads
    lock: str  # suffix of a SELECT that locks the row until commit

    def statements(self, table: str) -> dict[str, str]:
        p, n = self.param, self.int_param
        cols = "path, content, mtime_ms, title, title_source, title_updated_at"
        return {
            "insert": f"INSERT INTO {table} ({cols}) VALUES ({p}, {p}, {p}, {p}, {p}, {p})"
                      + ("" if self.name == "mysql" else " ON CONFLICT (path) DO NOTHING"),
            "replace_if_size": f"UPDATE {table} SET content = {p}, mtime_ms = {p}, title = {p}, title_source = {p}, "
                               f"title_updated_at = {p} WHERE path = {p} AND {self.byte_len} = {n}",
            "tail_state": f"SELECT {self.byte_len}, {self.last_char} FROM {table} WHERE path = {p}{self.lock}",
            "append": f"UPDATE {table} SET content = {self.concat}, mtime_ms = {p} WHERE path = {p}",
            "append_if_size": f"UPDATE {table} SET content = {self.concat}, mtime_ms = {p} "
                              f"WHERE path = {p} AND {self.byte_len} = {n}",
            "head": f"SELECT {self.head} FROM {table} WHERE path = {p}{self.lock}",
            "update_title": f"UPDATE {table} SET title = {p}, title_source = {p}, title_updated_at = {p}, "
                            f"mtime_ms = {p} WHERE path = {p}",
            "read": f"SELECT content, title, title_source, title_updated_at FROM {table} WHERE path = {p}",
            "stat": f"SELECT {self.byte_len}, mtime_ms FROM {table} WHERE path = {p}",
            "scan": f"SELECT path, {self.byte_len}, mtime_ms FROM {table} WHERE substr(path, 1, {n}) = {p}",
            "delete": f"DELETE FROM {table} WHERE path = {p}",
            "delete_under": f"DELETE FROM {table} WHERE substr(path, 1, {n}) = {p}",
            "rename": f"UPDATE {table} SET path = {p} WHERE path = {p}",
            "set_mtime": f"UPDATE {table} SET mtime_ms = {p} WHERE path = {p} AND {self.byte_len} = {n}",
        }

    def create_table(self, table: str) -> list[str]:
        """omp's ``CREATE TABLE IF NOT EXISTS`` and its ``ALTER TABLE``s for tables made before
        the title columns existed (a duplicate-column error there is expected)."""
        if self.name == "mysql":
            return [f"CREATE TABLE IF NOT EXISTS {table} (path VARCHAR(512) NOT NULL PRIMARY KEY, "
                    "content LONGTEXT NOT NULL, mtime_ms BIGINT NOT NULL, title TEXT NULL, "
                    "title_source VARCHAR(16) NULL, title_updated_at VARCHAR(64) NULL"
                    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                    f"ALTER TABLE {table} ADD COLUMN title TEXT NULL",
                    f"ALTER TABLE {table} ADD COLUMN title_source VARCHAR(16) NULL",
                    f"ALTER TABLE {table} ADD COLUMN title_updated_at VARCHAR(64) NULL"]
        mtime = "BIGINT" if self.name == "postgres" else "INTEGER"
        return [f"CREATE TABLE IF NOT EXISTS {table} (path TEXT PRIMARY KEY, content TEXT NOT NULL, "
                f"mtime_ms {mtime} NOT NULL, title TEXT, title_source TEXT, title_updated_at TEXT)",
                f"ALTER TABLE {table} ADD COLUMN title TEXT",
                f"ALTER TABLE {table} ADD COLUMN title_source TEXT",
                f"ALTER TABLE {table} ADD COLUMN title_updated_at TEXT"]


def overlay_title(body: bytes, title: str | None, source: str | None, updated_at: str | None) -> bytes:
    """What omp's reads return: a slot serialised from the title columns over the first 256 bytes
    (the whole body when it is shorter). No overlay without ``title_updated_at`` (omp tests it for
    truthiness, so an empty one counts as none)."""
    if not updated_at or not _starts_with_slot(body[: TITLE_SLOT_BYTES + 3]):
        # omp lays the slot over any body, cutting into the records of one that does not start
        # with a 256-byte slot; we keep such a body as stored (docs/stores.md)
        return body
    try:
        slot = build_title_slot(title or "", source if source in ("auto", "user") else None, updated_at)
    except ValueError:  # metadata alone does not fit a slot: omp throws; the stored body is the truth
        return body
    if len(body) <= len(slot):
        return slot
    joined = slot + body[TITLE_SLOT_BYTES:]
    # omp decodes the joined bytes as a string: a character cut at byte 256 becomes U+FFFD
    try:
        joined.decode("utf-8")
    except UnicodeDecodeError:
        joined = joined.decode("utf-8", "replace").encode("utf-8")
    return joined


def _title_columns(body: bytes) -> tuple[str | None, str | None, str | None]:
    """The title metadata omp stores for a written body: its first line's slot. Only a real
    256-byte slot counts (omp takes any first-line title record; its overlay then damages the
    body, docs/stores.md)."""
    if not _starts_with_slot(body[: TITLE_SLOT_BYTES + 3]):
        return (None, None, None)
    slot = parse_title_slot(body[: TITLE_SLOT_BYTES - 1])
    return (None, None, None) if slot is None else (slot.title, slot.source, slot.updated_at)


class SqlStorage:
    """The :class:`~omp_session.storage.SessionStorage` of omp's SQL table. Subclasses connect."""

    persistent = True
    dialect: Dialect
    driver_errors: tuple[type[BaseException], ...] = ()
    timeout: float = DEFAULT_TIMEOUT  # seconds to connect and finish the handshake (adapters use it)

    def __init__(self, name: str, table: str = DEFAULT_TABLE, *, create_table: bool = True) -> None:
        self.name = name
        self.table = check_table_name(table, name)
        self._q = self.dialect.statements(self.table)
        self._last_mtime = 0
        self._packet_limit: int | None = None
        try:
            self._conn: Any = self._connect()
        except self.driver_errors as e:
            raise StoreError(f"{name}: cannot connect: {unanswered(self.reason(e), self.timeout)}") from e
        try:
            self._prepare(create_table)
        except BaseException:
            self.close()
            raise

    # ----- what a dialect adapter provides ------------------------------------------------------

    def _connect(self) -> Any:
        raise NotImplementedError

    def reason(self, error: BaseException) -> str:
        """One line for a driver error."""
        text = " ".join(str(error).split())
        return text or type(error).__name__

    def _is_duplicate_column(self, error: BaseException) -> bool:
        text = str(error).lower()
        return "duplicate column" in text or "already exists" in text

    def _is_duplicate_key(self, error: BaseException) -> bool:
        return False

    def _columns(self, cur: Any) -> dict[str, str]:
        """Column name → lowercase type of the table (empty when there is no table)."""
        raise NotImplementedError

    # ----- plumbing -----------------------------------------------------------------------------

    @contextmanager
    def _tx(self, action: str, path: str | None = None) -> Iterator[Any]:
        """One transaction; a driver error rolls back and becomes one line naming the store."""
        where = f"{self.name}: {path}" if path else self.name
        try:  # a connection the server closed fails here already
            cur = self._conn.cursor()
        except self.driver_errors as e:
            raise StoreError(f"{where}: {action} failed: {self.reason(e)}; nothing was changed") from e
        try:
            cur.execute(self.dialect.begin)
            yield cur
            cur.execute("COMMIT")
        except BaseException as e:
            with suppress(*self.driver_errors):  # a lost connection: the server dropped the transaction
                cur.execute("ROLLBACK")
            if isinstance(e, self.driver_errors):
                raise StoreError(f"{where}: {action} failed: {self.reason(e)}; nothing was changed") from e
            raise
        finally:
            cur.close()

    def _query(self, sql: str, params: Sequence[Any], action: str, path: str | None = None) -> list[Any]:
        cur = None
        try:  # the cursor too: a connection the server closed fails there already
            cur = self._conn.cursor()
            cur.execute(sql, params)
            return builtins.list(cur.fetchall())
        except self.driver_errors as e:
            where = f"{self.name}: {path}" if path else self.name
            raise StoreError(f"{where}: {action} failed: {self.reason(e)}") from e
        finally:
            if cur is not None:
                cur.close()

    def _read_columns(self) -> dict[str, str]:
        """The table's columns, read outside a transaction: SQLite's ``BEGIN IMMEDIATE`` is a write
        lock, which a reader would wait for behind any writer (and could not take at all on a
        database file it may only read)."""
        cur = None
        try:
            cur = self._conn.cursor()
            return self._columns(cur)
        except self.driver_errors as e:
            raise StoreError(f"{self.name}: checking the session table failed: {self.reason(e)}") from e
        finally:
            if cur is not None:
                cur.close()

    def _prepare(self, create_table: bool) -> None:
        if create_table:
            # a table that is there already needs no CREATE: PostgreSQL checks the schema's CREATE
            # right even for CREATE TABLE IF NOT EXISTS, which a team member's role may not have
            present = self._read_columns()
            create_table = not all(column in present for column in _EXPECTED_TYPES)
        if create_table:
            statements = self.dialect.create_table(self.table)
            try:
                with self._tx("preparing the session table") as cur:
                    cur.execute(statements[0])
            except StoreError as e:
                # another process made the table at the same moment: PostgreSQL fails the second
                # CREATE TABLE IF NOT EXISTS (a unique violation in its catalog) rather than skip it
                if e.__cause__ is None or not self._read_columns():
                    raise
            for alter in statements[1:]:
                try:
                    with self._tx("adding the title columns") as cur:
                        cur.execute(alter)
                except StoreError as e:
                    if e.__cause__ is None or not self._is_duplicate_column(e.__cause__):
                        raise
        columns = self._read_columns()
        if not columns:
            raise StoreMissingError(f"{self.name}: there is no table {self.table} (omp creates it on first use; "
                             "open the store for writing to create it)")
        for column, allowed in _EXPECTED_TYPES.items():
            found = columns.get(column)
            if found is None:
                raise StoreError(f"{self.name}: table {self.table} has no column {column}: it is not omp 18.2.3's "
                                 "session table (another omp version or another program's table)")
            if found not in allowed:
                raise StoreError(f"{self.name}: column {self.table}.{column} is {found}, omp 18.2.3 uses "
                                 f"{'/'.join(sorted(allowed))}: not omp's session table layout")

    def _mtime(self) -> int:
        # strictly increasing per process, like omp's allocator: every write gets its own mtime
        now = int(time.time() * 1000)
        self._last_mtime = now if now > self._last_mtime else self._last_mtime + 1
        return self._last_mtime

    def _text(self, path: str, data: bytes, action: str) -> str:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise PersistenceError(path, action, ValueError(
                f"byte {e.start} is not UTF-8 and an SQL store keeps text")) from e
        if self.dialect.name == "postgres" and "\x00" in text:
            raise PersistenceError(path, action, ValueError("PostgreSQL text cannot hold a NUL byte"))
        return text

    def _concat_limit(self, path: str) -> int | None:
        """MySQL's ``max_allowed_packet`` (None elsewhere), read once per connection."""
        if self.dialect.name != "mysql":
            return None
        if self._packet_limit is None:
            rows = self._query("SELECT @@max_allowed_packet", (), "reading max_allowed_packet", path)
            self._packet_limit = int(rows[0][0])
        return self._packet_limit

    def _check_fits(self, path: str, size: int, limit: int | None, action: str) -> None:
        # MySQL's CONCAT gives NULL past max_allowed_packet: a strict server fails the UPDATE, a
        # non-strict one stores '' in the NOT NULL column, the whole session gone
        if limit is not None and size > limit:
            raise PersistenceError(path, action, ValueError(
                f"the body would be {size:,} bytes, more than the server's max_allowed_packet ({limit:,})"))

    def _check_packet(self, cur: Any, path: str, sql: str, params: Sequence[Any], limit: int | None,
                      action: str) -> None:
        """MySQL: the statement carrying ``params``, as the driver escapes them, with its command
        byte, must be shorter than ``max_allowed_packet``; the server refuses one of that many
        bytes or more (error 1153, or it drops the connection: "MySQL server has gone away"),
        which ended the whole sync."""
        if limit is None:
            return
        # no value grows past 8 bytes a character once encoded and escaped: measured only when near
        if len(sql) + sum(8 * len(p) + 64 if isinstance(p, str) else 64 for p in params) < limit:
            return
        size = len(cur.mogrify(sql, params).encode("utf-8")) + 1  # the command byte
        if size >= limit:  # the server refuses a packet of exactly max_allowed_packet bytes too
            raise PersistenceError(path, action, ValueError(
                f"the statement would be {size:,} bytes, and the server takes fewer than its max_allowed_packet "
                f"({limit:,})"))

    def _check_key(self, path: str) -> None:
        try:  # a file name of bytes that are not UTF-8 (surrogates, os.fsdecode's) is no text key
            path.encode("utf-8")
        except UnicodeEncodeError as e:
            raise PersistenceError(path.encode("utf-8", "backslashreplace").decode(), "storing the session",
                                   ValueError("the key is not valid UTF-8 and an SQL store keeps text")) from e
        if self.dialect.name == "mysql" and len(path) > 512:
            raise PersistenceError(path, "storing the session", ValueError(
                "the key is longer than omp's VARCHAR(512) path column"))

    # ----- SessionStorage -----------------------------------------------------------------------

    def size(self, path: str) -> int | None:
        found = self.stat(path)
        return None if found is None else found.size

    def stat(self, path: str) -> StoredFile | None:
        rows = self._query(self._q["stat"], (path,), "reading the size", path)
        return StoredFile(path, int(rows[0][0]), float(rows[0][1])) if rows else None

    def read(self, path: str) -> bytes:
        rows = self._query(self._q["read"], (path,), "reading the session", path)
        if not rows:
            raise FileNotFoundError(path)
        content, title, source, updated = rows[0]
        body = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        return overlay_title(body, title, source, updated)

    def append(self, path: str, line: bytes) -> int:
        self._check_key(path)
        limit = self._concat_limit(path)
        with self._tx("appending an entry", path) as cur:
            cur.execute(self._q["tail_state"], (path,))
            row = cur.fetchone()
            if row is None:
                raise FileNotFoundError(path)
            if int(row[0]) and row[1] != "\n":
                line = b"\n" + line  # never glue the new line onto a cut one
            self._check_fits(path, int(row[0]) + len(line), limit, "appending an entry")
            params = (self._text(path, line, "appending an entry"), self._mtime(), path)
            self._check_packet(cur, path, self._q["append"], params, limit, "appending an entry")
            cur.execute(self._q["append"], params)
        return len(line)

    def append_if_size(self, path: str, expected_size: int, data: bytes) -> bool:
        """``append``'s columns (``content``, ``mtime_ms``; the title columns stay), written only
        while the body's byte length is ``expected_size``."""
        self._check_key(path)
        text = self._text(path, data, "appending entries")
        # only ever written at expected_size, so this is the body's size if it is written at all
        limit = self._concat_limit(path)
        self._check_fits(path, expected_size + len(data), limit, "appending entries")
        attempt = 0
        while True:
            try:
                with self._tx("appending entries", path) as cur:
                    params = (text, self._mtime(), path, expected_size)
                    self._check_packet(cur, path, self._q["append_if_size"], params, limit, "appending entries")
                    cur.execute(self._q["append_if_size"], params)
                    # MySQL counts the matched row (FOUND_ROWS) even when ``data`` is empty
                    return bool(cur.rowcount == 1)
            except StoreError as e:
                # PostgreSQL under repeatable read / serializable (a role's or database's default):
                # the UPDATE that waited for another writer's row lock fails instead of reading the
                # row again. Nothing was written; a new transaction reads it again, so the answer is
                # the one read committed gives (False only when the length changed)
                attempt += 1
                if attempt >= _SERIALIZATION_RETRIES or getattr(e.__cause__, "sqlstate", None) != "40001":
                    raise

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        self._check_key(path)
        text = self._text(path, body, "rewriting the session")
        title = _title_columns(body)
        limit = self._concat_limit(path)
        with self._tx("rewriting the session", path) as cur:
            if expected_size is None:
                params: tuple[Any, ...] = (path, text, self._mtime(), *title)
                self._check_packet(cur, path, self._q["insert"], params, limit, "rewriting the session")
                try:
                    cur.execute(self._q["insert"], params)
                    written = cur.rowcount == 1
                except self.driver_errors as e:
                    if not self._is_duplicate_key(e):
                        raise
                    written = False
            else:
                params = (text, self._mtime(), *title, path, expected_size)
                self._check_packet(cur, path, self._q["replace_if_size"], params, limit, "rewriting the session")
                cur.execute(self._q["replace_if_size"], params)
                written = cur.rowcount == 1
            if not written:
                cur.execute(self._q["stat"], (path,))
                row = cur.fetchone()
                found = None if row is None else int(row[0])
                raise WriteConflictError(conflict_message(f"{self.name}: {path}", expected_size, found))

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        assert len(slot) == TITLE_SLOT_BYTES
        parsed = parse_title_slot(slot[:-1])
        if parsed is None:
            return False
        with self._tx("writing the title", path) as cur:
            cur.execute(self._q["head"], (TITLE_SLOT_BYTES + 3, path))
            row = cur.fetchone()
            if row is None or not _starts_with_slot(bytes(row[0] or b"")):
                return False
            cur.execute(self._q["update_title"], (parsed.title, parsed.source, parsed.updated_at, self._mtime(), path))
        return True

    def list(self, directory: str, pattern: str) -> builtins.list[str]:
        prefix = directory if directory.endswith("/") else directory + "/"
        return sorted(f.path for f in self._under(prefix)
                      if "/" not in f.path[len(prefix):] and "\\" not in f.path[len(prefix):]
                      and fnmatch.fnmatchcase(f.path[len(prefix):], pattern))

    def scan(self, prefix: str) -> builtins.list[StoredFile]:
        return sorted(f for f in self._under(prefix) if f.path.endswith(".jsonl"))

    def _under(self, prefix: str) -> builtins.list[StoredFile]:
        rows = self._query(self._q["scan"], (len(prefix), prefix), "listing sessions")
        return [StoredFile(str(r[0]), int(r[1]), float(r[2])) for r in rows]

    def delete(self, path: str) -> None:
        with self._tx("deleting the session", path) as cur:
            cur.execute(self._q["delete"], (path,))
            if path.endswith(".jsonl"):
                artifacts = path[: -len(".jsonl")] + "/"
                cur.execute(self._q["delete_under"], (len(artifacts), artifacts))

    def set_mtime(self, path: str, mtime_ms: float, expected_size: int) -> bool:
        """Set the row's ``mtime_ms`` (omp orders its list by it) if the body still holds
        ``expected_size`` bytes; False otherwise."""
        with self._tx("setting the modification time", path) as cur:
            cur.execute(self._q["set_mtime"], (int(mtime_ms), path, expected_size))
            # MySQL counts a matched row with FOUND_ROWS even when the value is the same
            return bool(cur.rowcount == 1)

    def rename(self, src: str, dst: str) -> None:
        self._check_key(dst)
        with self._tx("renaming the session", src) as cur:
            if src == dst:
                cur.execute(self._q["stat"], (src,))
                if cur.fetchone() is None:
                    raise FileNotFoundError(src)
                return
            cur.execute(self._q["delete"], (dst,))
            cur.execute(self._q["rename"], (dst, src))
            if cur.rowcount != 1:
                raise FileNotFoundError(src)

    def close(self) -> None:
        with suppress(*self.driver_errors):
            self._conn.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} table={self.table}>"


def _starts_with_slot(head: bytes) -> bool:
    return (len(head) >= TITLE_SLOT_BYTES and head[TITLE_SLOT_BYTES - 1:TITLE_SLOT_BYTES] == b"\n"
            and b"\n" not in head[: TITLE_SLOT_BYTES - 1]
            and parse_title_slot(head[: TITLE_SLOT_BYTES - 1]) is not None)
