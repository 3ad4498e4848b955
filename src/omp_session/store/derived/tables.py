"""The derived tables of one SQL store: what was derived from each session, and the writes that
keep them in step with omp's table (docs/team.md).

:class:`DerivedTables` has a connection of its own (the store's URL names the database and omp's
table); it reads omp's table and writes only ours. What a session's bytes mean (its texts, its
usage, its list facts) is decided above this layer (``catalog.derived``): here are rows.

Incremental by bytes, like the file index: per session we keep how many bytes were derived
(``derived``: up to the last complete line), the first bytes and the 64 bytes before that point,
omp's title columns and the row's ``mtime_ms``. :meth:`DerivedTables.pending` lists what changed
in one query; a session that grew with the same head and anchor is read from ``derived`` on only.
Every write first checks, inside its transaction, that the session's derived state is still the
one the caller started from, so two indexers never derive the same bytes twice.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from omp_session.errors import StoreError, StoreMissingError

from ..pg_options import libpq_options
from ..sql import DEFAULT_TABLE, check_table_name, overlay_title
from ..url import StoreURL, check_timeout, parse_store_url, unanswered
from .schema import SCHEMA_VERSION, DerivedNames, derived_names, schema
from .trees import settle, settle_copies, tree_top

__all__ = ["HEAD_BYTES", "NOT_SUPPORTED", "DerivedState", "DerivedTables", "Facts", "Listed", "Pending", "StatsFacts",
           "TextRow", "UsageRow", "open_derived", "title_columns"]

# the relation of that (lower-case) name in the current schema, NULL when there is none
_REGCLASS = "to_regclass(quote_ident(current_schema()) || '.' || quote_ident(?))"
# ... that this role may use at all: what information_schema shows it (a role that may not read the
# search tables reads the sessions instead, as when there are none)
_VISIBLE = ("(pg_has_role(c.relowner, 'USAGE') OR has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE, "
            "TRUNCATE, REFERENCES, TRIGGER') OR has_any_column_privilege(c.oid, 'SELECT, INSERT, UPDATE, REFERENCES'))")

HEAD_BYTES = 259  # the 256-byte title slot and a little more: a rewritten slot or header shows here
NOT_SUPPORTED = "not supported: use PostgreSQL or SQLite for team search"


@dataclass(frozen=True, slots=True)
class TextRow:
    """One searchable text of one record (``seq`` 0 is the session's header)."""

    seq: int
    kind: str
    entry_id: str | None
    type: str | None
    role: str | None
    ts: int | None  # ms since the epoch
    target_id: str | None
    text: str


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One usage record: an assistant turn, a ``model_usage`` entry, or one agent of a ``task``
    result (``n`` numbers the agents of one entry)."""

    seq: int
    n: int
    entry_id: str | None
    ts: float | None
    kind: str
    provider: str | None
    model: str | None
    input: float
    output: float
    cache_read: float
    cache_write: float
    total_tokens: float
    cost: float
    dedup: str | None
    agent: str | None
    on_branch: bool = False  # on the transcript's current branch, or a side call hanging off it
    floats: int = 0  # bit i: count i (input … total_tokens) was not a whole number (ops/stats sums it as a float)


@dataclass(frozen=True)
class StatsFacts:
    """What ``stats`` needs of a transcript beyond its usage rows (store/derived/stats_query.py)."""

    head: str | None = None  # ASCII JSON [id, title, cwd, created] as ops/stats reads the header
    born: str = ""  # the header's creation time as ops/stats orders forks ("" when none)
    project: str | None = None  # ASCII JSON: the cwd, else the bucket's name (a top-level session's row)
    omp_usage: str | None = None  # JSON of omp's getUsageStatistics so far; None: omp throws
    links: bytes | None = None  # the entries' ids and parents (catalog/derived_usage.py); None: not kept


@dataclass(frozen=True)
class Listed:
    """What omp's listing shows of a session from its first 4 KB (spec S11.2): the fields of
    ``catalog.listing.SessionInfo`` that do not come from its stat or its last 32 KB."""

    id: str
    cwd: str
    title: str | None
    parent: str | None  # the header's parentSession
    created: int | None  # ms since the epoch; None: an Invalid Date
    messages: int
    first_message: str


@dataclass
class Facts:
    """What ``list --stats`` shows of a session, as far as it was derived."""

    id: str | None = None
    cwd: str | None = None
    title: str | None = None
    created: str | None = None
    entries: int = 0
    messages: int = 0
    next_seq: int = 0
    damaged: int = 0
    models: list[str] = field(default_factory=list)
    cost: float | None = 0.0  # None: omp's total is not a number (or omp cannot sum it)
    tokens: float | None = 0.0
    keyed: bool = True  # usage rows carry the key a fork's copy shares (False: a session omp migrates)
    listed: Listed | None = None  # None: omp's listing passes over the session
    status: str = "unknown"  # omp's listing status, from the last message line in the last 32 KB
    status_at: int | None = None  # where the last whole message line starts (None: none in reach)
    stats: StatsFacts = field(default_factory=StatsFacts)
    list_head: bytes | None = None  # the bytes so far as omp reads them, while fewer than 4 KB (list_facts)
    line_status: str | None = None  # the status of the message line at status_at


@dataclass(frozen=True)
class DerivedState:
    """What was derived from one session, and how far."""

    key: str
    modified: int
    size: int
    derived: int
    head: bytes
    anchor: bytes
    title_columns: str | None
    facts: Facts
    namespace: str | None


@dataclass(frozen=True)
class Pending:
    """A session whose row changed since it was derived (``state`` None: never derived)."""

    key: str
    size: int
    modified: int
    state: DerivedState | None


_STATE_COLUMNS = ("key", "modified", "size", "derived", "head", "anchor", "title_columns", "id", "cwd", "title",
                  "created", "entries", "messages", "next_seq", "damaged", "models", "cost", "tokens", "namespace",
                  "keyed")
_LIST_COLUMNS = ("list_id", "list_cwd", "list_title", "list_parent", "list_created", "list_messages",
                 "first_message", "status", "status_at", "list_head", "line_status")
_STATS_COLUMNS = ("stats_head", "stats_born", "project", "omp_usage", "links")
# the sessions table of the first layout (it recorded no version) holds these, among others
_FIRST_LAYOUT = frozenset({"key", "derived", "head", "anchor", "title_columns", "next_seq", "damaged", "keyed"})


def title_columns(title: Any, source: Any, updated: Any) -> str | None:
    """omp's three title columns as one comparable value (None when no title was ever set)."""
    if title is None and source is None and updated is None:
        return None
    return json.dumps([title, source, updated])


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


class DerivedTables:
    """The derived tables of omp's table ``table`` in one database (PostgreSQL or SQLite)."""

    def __init__(self, parsed: StoreURL, *, timeout: float | None = None, reading: bool = False) -> None:
        if parsed.kind not in ("postgres", "sqlite"):
            raise StoreError(f"{parsed.name}: {NOT_SUPPORTED}")
        self.name = parsed.name
        self.dialect = parsed.kind
        self.table = check_table_name(parsed.options.get("table", DEFAULT_TABLE), parsed.name)
        self.names: DerivedNames = derived_names(self.table)
        self._p = "%s" if self.dialect == "postgres" else "?"
        self._rls: dict[str, bool] = {}
        self._errors: tuple[type[BaseException], ...]
        self.conn: Any
        seconds = check_timeout(timeout, parsed.name) if timeout is not None else parsed.timeout
        if self.dialect == "postgres":
            # reading only (no COPY, no executemany): the built-in client serves when it can
            # (pg_connect.py); connect_timeout and TCP keepalives (a server gone without a word)
            from ..pg_connect import connect, driver_errors

            try:
                self.conn, self._errors = connect(parsed.location, libpq_options(parsed.location, seconds, least=2),
                                                  writes=not reading)
            except BaseException as e:
                self._errors = driver_errors()  # psycopg's too, when it was the one that failed
                if isinstance(e, self._errors):
                    raise StoreError(f"{parsed.name}: cannot connect: {unanswered(_one_line(e), seconds)}") from e
                raise
            # psycopg: no prepared statements: a generic plan cannot tell a common word from a rare
            # one and ranks a million matches (seconds) where the custom plan walks the newest rows
            # (the built-in client never prepares)
            self.conn.prepare_threshold = None
        else:
            import os
            import sqlite3  # here: a PostgreSQL store's command does without it

            self._errors = (sqlite3.Error,)
            if parsed.location != ":memory:" and not os.path.exists(parsed.location):
                raise StoreMissingError(f"{parsed.name}: no database file {parsed.location}")
            self.conn = sqlite3.connect(parsed.location, isolation_level=None, timeout=60.0, check_same_thread=False)
        if not self._has_table(self.table):
            self.close()
            raise StoreMissingError(f"{parsed.name}: there is no table {self.table} (omp creates it on first use)")
        if self.dialect == "postgres":
            # a report is one query over many rows, planned each time: compiling it (JIT) took
            # half a second, more than it saved, and sorting a month's usage rows in the default
            # 4 MB of memory spilled them to disk. For this connection only; a server without
            # these settings is read as it is
            with suppress(StoreError):
                self.rows("SELECT set_config('jit', 'off', false), set_config('work_mem', '64MB', false)")

    # ----- plumbing -----------------------------------------------------------------------------

    def sql(self, sql: str) -> str:
        """``sql`` written with ``?`` placeholders, in the driver's style."""
        return sql.replace("?", self._p) if self._p != "?" else sql

    def rows(self, sql: str, params: Sequence[Any] = (), action: str = "reading the derived tables") -> list[Any]:
        """The rows of one statement (``?`` placeholders); a driver error is one line naming the store."""
        try:
            cur = self.conn.execute(self.sql(sql), params)
            return list(cur.fetchall()) if cur.description else []
        except self._errors as e:
            raise StoreError(f"{self.name}: {action} failed: {_one_line(e)}") from e

    @contextmanager
    def transaction(self, action: str) -> Iterator[Any]:
        """One write transaction (SQLite: ``BEGIN IMMEDIATE``); a driver error rolls back and
        becomes one line naming the store."""
        try:
            # PostgreSQL: read committed whatever the default, as a write's advisory lock on a key
            # must be followed by a read that sees what the writer it waited for committed
            self.conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED" if self.dialect == "postgres" else "BEGIN IMMEDIATE")
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as e:
            with suppress(*self._errors):
                self.conn.execute("ROLLBACK")
            if isinstance(e, self._errors):
                raise StoreError(f"{self.name}: {action} failed: {_one_line(e)}; nothing was changed") from e
            raise

    def _has_table(self, name: str) -> bool:
        if self.dialect == "postgres":  # the catalog itself: information_schema's views cost a new backend ~10 ms each
            sql = f"SELECT 1 FROM pg_class c WHERE c.oid = {_REGCLASS} AND c.relkind IN ('r', 'p', 'v', 'f') AND {_VISIBLE}"
        else:
            sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self.rows(sql, (name.lower() if self.dialect == "postgres" else name,)))

    def exists(self) -> bool:
        """Whether the derived tables were made (``omp-session index --store`` makes them)."""
        return self._has_table(self.names.sessions)

    def create(self) -> None:
        with self.transaction("creating the derived tables") as conn:
            for statement in schema(self.dialect, self.names):
                conn.execute(statement)

    def version(self) -> int | None:
        """The layout of the derived tables in the database (schema.SCHEMA_VERSION when this
        omp-session made them: the default of the sessions table's ``layout`` column); None when
        there are none; 1 for the first layout, which recorded none; 0 for a table of that name
        that is not omp-session's (never dropped)."""
        columns = self._columns(self.names.sessions)  # none: no such table
        if not columns:
            return None
        if "layout" not in columns:
            return 1 if set(columns) >= _FIRST_LAYOUT else 0
        try:
            return int(str(columns["layout"]).split("::")[0].strip("'"))
        except ValueError:
            return 0

    def outdated(self) -> bool:
        """The derived tables exist but are of another layout than this omp-session's: ``index
        --store`` (or ``sync --to``) drops them and derives them again."""
        return self.version() not in (None, 0, SCHEMA_VERSION)

    def _columns(self, table: str) -> dict[str, Any]:
        """The columns of ``table`` and their defaults."""
        if self.dialect == "postgres":
            rows = self.rows("SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_class c "
                             "JOIN pg_attribute a ON a.attrelid = c.oid "
                             "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
                             f"WHERE c.oid = {_REGCLASS} AND a.attnum > 0 AND NOT a.attisdropped AND {_VISIBLE}",
                             (table.lower(),))
        else:
            rows = self.rows(f"SELECT name, dflt_value FROM pragma_table_info('{table}')")
        return {str(r[0]): r[1] for r in rows}

    def add_indexes(self) -> None:
        """Make the indexes of this layout that tables made by an earlier omp-session of the same
        layout lack (each alone; one the role may not make is left out: reports only run slower)."""
        present: set[str] = set()
        if self.dialect == "postgres":  # even IF NOT EXISTS waits for the table's writers first
            n = self.names
            present = {str(r[0]) for r in self.rows("SELECT indexname FROM pg_indexes WHERE schemaname = "
                                                    "current_schema() AND tablename IN (?, ?, ?)",
                                                    (n.sessions, n.entries, n.usage))}
        for statement in schema(self.dialect, self.names):
            if statement.startswith("CREATE INDEX") and statement.split()[5] not in present:
                with suppress(StoreError), self.transaction("adding an index") as conn:
                    conn.execute(statement)

    def drop(self) -> None:
        """Drop every derived table (an older layout's: what is derived is derived again)."""
        n = self.names
        with self.transaction("dropping the derived tables of an older layout") as conn:
            for table in ((n.fts,) if self.dialect == "sqlite" else ()) + (n.entries, n.usage, n.sessions):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        self._rls.clear()

    def grantees(self) -> tuple[bool, list[str]]:
        """PostgreSQL: whether the sessions table has row-level security, and the roles other than
        its owner that may read it (docs/team.md: what an upgrade grants again)."""
        if self.dialect != "postgres" or not self.exists():
            return False, []
        rows = self.rows("SELECT c.relrowsecurity, r.rolname FROM pg_class c LEFT JOIN LATERAL aclexplode(c.relacl) a "
                         "ON a.privilege_type = 'SELECT' AND a.grantee <> c.relowner LEFT JOIN pg_roles r "
                         "ON r.oid = a.grantee WHERE c.oid = ?::regclass", (self.names.sessions,))
        return bool(rows and rows[0][0]), sorted({str(r[1]) for r in rows if r[1] is not None})

    def sees_every_copy(self) -> bool:
        """PostgreSQL: the usage table has row-level security and this connection is exempt from
        it (the tables' owner, a superuser, a role with BYPASSRLS): it sees the rows every role
        wrote, which no role's own update does (:meth:`settle_copies`)."""
        if self.dialect != "postgres" or not self.exists():
            return False
        rows = self.rows("SELECT relrowsecurity AND NOT row_security_active(oid) FROM pg_class WHERE oid = ?::regclass",
                         (self.names.usage,))
        return bool(rows and rows[0][0])

    def settle_copies(self) -> int:
        """Which records more than one transcript holds, decided again over every row (trees.py
        ``settle_copies``); the rows whose flag changed."""
        with self.transaction("settling the copies of records") as conn:
            return settle_copies(self.names, conn)

    def close(self) -> None:
        with suppress(*self._errors):
            self.conn.close()

    def __enter__(self) -> DerivedTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- omp's table --------------------------------------------------------------------------

    @property
    def _len(self) -> str:
        return "octet_length(t.content)" if self.dialect == "postgres" else "length(cast(t.content AS blob))"

    def _bytes(self, start: str, count: str | None = None) -> str:
        """``content``'s bytes from 1-based ``start`` (``count`` of them, or to the end)."""
        if self.dialect == "postgres":
            return (f"substring(convert_to(t.content, 'UTF8') from {start}::integer"
                    + (f" for {count}::integer)" if count else ")"))
        return f"substr(cast(t.content AS blob), {start}" + (f", {count})" if count else ")")

    def _under(self, root: str) -> tuple[str, list[Any]]:
        """A condition on ``t.path``: a session key under ``root``."""
        tail = "right(t.path, 6)" if self.dialect == "postgres" else "substr(t.path, -6)"
        return f"substr(t.path, 1, ?) = ? AND {tail} = '.jsonl'", [len(root), root]

    def pending(self, root: str) -> tuple[list[Pending], list[str]]:
        """Sessions under ``root`` whose row is new or changed since derived (by byte size and
        ``mtime_ms``: omp bumps it on every write, a title change included), and the derived keys
        under ``root`` whose row is gone."""
        cond, args = self._under(root)
        d = self.names.sessions
        cols = ", ".join(f"d.{c}" for c in _STATE_COLUMNS + _LIST_COLUMNS + _STATS_COLUMNS)
        rows = self.rows(
            f"SELECT t.path, {self._len}, t.mtime_ms, {cols} FROM {self.table} t LEFT JOIN {d} d ON d.key = t.path "
            f"WHERE {cond} AND (d.key IS NULL OR d.size <> {self._len} OR d.modified <> t.mtime_ms) ORDER BY t.path",
            args, "listing the changed sessions")
        pending = [Pending(str(r[0]), int(r[1]), int(r[2]), None if r[3] is None else _state(r[3:])) for r in rows]
        gone_cond = cond.replace("t.path", "d.key")
        gone = self.rows(f"SELECT d.key FROM {d} d LEFT JOIN {self.table} t ON t.path = d.key "
                          f"WHERE t.path IS NULL AND {gone_cond} ORDER BY d.key", args, "listing deleted sessions")
        return pending, [str(r[0]) for r in gone]

    def read_body(self, key: str) -> tuple[bytes, int, bytes, int, str | None] | None:
        """The whole session as omp reads it (title overlay included), the stored body's byte size
        and first bytes (no overlay: what :meth:`read_tail` compares), its ``mtime_ms`` and title
        columns; None when the row is gone."""
        rows = self.rows(f"SELECT t.content, t.mtime_ms, t.title, t.title_source, t.title_updated_at "
                          f"FROM {self.table} t WHERE t.path = ?", (key,), "reading a session")
        if not rows:
            return None
        content, mtime, title, source, updated = rows[0]
        raw = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        return (overlay_title(raw, title, source, updated), len(raw), raw[:HEAD_BYTES], int(mtime),
                title_columns(title, source, updated))

    def read_tail(self, key: str, start: int) -> tuple[bytes, bytes, int, int, str | None] | None:
        """(raw head, the bytes from ``start`` on, size, ``mtime_ms``, title columns) of a stored
        session, in one query that moves only those bytes; None when the row is gone."""
        rows = self.rows(f"SELECT {self._bytes('1', str(HEAD_BYTES))}, {self._bytes('?')}, {self._len}, t.mtime_ms, "
                          f"t.title, t.title_source, t.title_updated_at FROM {self.table} t WHERE t.path = ?",
                          (start + 1, key), "reading a session's new bytes")
        if not rows:
            return None
        head, tail, size, mtime, title, source, updated = rows[0]
        return (bytes(head or b""), bytes(tail or b""), int(size), int(mtime),
                title_columns(title, source, updated))

    # ----- writing ours -------------------------------------------------------------------------

    def _current(self, conn: Any, key: str) -> tuple[int, int] | None:
        if self.dialect == "postgres":
            # a lock on the key, not on its row: a session derived for the first time has no row
            # yet, and two updates must not both add its texts (SQLite's BEGIN IMMEDIATE already
            # lets one writer in at a time)
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
        row = conn.execute(self.sql(f"SELECT derived, size FROM {self.names.sessions} WHERE key = ?"),
                           (key,)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def _same(self, conn: Any, key: str, expected: DerivedState | None) -> bool:
        found = self._current(conn, key)
        return found == (None if expected is None else (expected.derived, expected.size))

    def write(self, batch: Sequence[tuple[DerivedState, Sequence[TextRow], Sequence[UsageRow], DerivedState | None,
                                         bool]], *, root: str | None = None,
              flips: Mapping[str, Sequence[tuple[int, bool]]] | None = None) -> list[bool]:
        """Store what was derived from some sessions, in one transaction: per session (state,
        texts, usage, expected, whole). ``whole`` replaces the session's rows, else its texts and
        usage are added to them, and ``flips[key]`` (seq, on_branch) changes the flag of its
        earlier usage rows (the current branch moved). A session whose derived state is no longer
        ``expected`` (another indexer got there first) is left alone: False in its place.
        ``root``: the store's root, which places each transcript in its session's tree (trees.py;
        without it a transcript is in none, and ``stats`` does not see it)."""
        n = self.names
        done: list[bool] = []
        cols = ("key", "id", "cwd", "title", "created", "modified", "size", "derived", "head", "anchor",
                "title_columns", "entries", "messages", "next_seq", "damaged", "models", "cost", "tokens", "namespace",
                "keyed", "folder", "root_folder", *_LIST_COLUMNS, *_STATS_COLUMNS, "top", "node_order", "node_current")
        # a transcript's place in its tree is settled below (trees.py): a new row starts as a
        # session alone (its own tree's first node) or a transcript not placed yet; a row rewritten keeps its place
        kept = ("node_order", "node_current")
        upsert = self.sql(f"INSERT INTO {n.sessions} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
                          f"ON CONFLICT (key) DO UPDATE SET "
                          f"{', '.join(f'{c} = excluded.{c}' for c in cols[1:] if c not in kept)}")
        with self.transaction("storing what was derived") as conn:
            if self.dialect == "postgres":
                # rows anyone can derive again: a crash may lose the last commits, never mix them up
                conn.execute("SET LOCAL synchronous_commit TO OFF")
            tops: set[str] = set()
            added: set[str] = set()
            removed: set[str] = set()
            for state, texts, usage, expected, whole in batch:
                if not self._same(conn, state.key, expected):
                    done.append(False)
                    continue
                if whole:
                    if expected is not None:  # rows derived before: the records they shared may be shared no more
                        removed |= self._shared_of(conn, state.key)
                    for table in (n.entries, n.usage):
                        conn.execute(self.sql(f"DELETE FROM {table} WHERE key = ?"), (state.key,))
                # the session's row first: under row-level security (docs/team.md) its texts and
                # usage may only be added to a session of one's own namespace
                f = state.facts
                conn.execute(upsert, (state.key, f.id, f.cwd, f.title, f.created, state.modified, state.size,
                                      state.derived, state.head, state.anchor, state.title_columns, f.entries,
                                      f.messages, f.next_seq, f.damaged, json.dumps(f.models, ensure_ascii=False),
                                      _finite(f.cost), _finite(f.tokens), state.namespace, int(f.keyed),
                                      *_folders(state.key), *_list_values(f), *_stats_values(f),
                                      tree_top(state.key, root), *_unplaced(state.key, root)))
                self._insert(conn, state.key, texts, usage)
                if flips and flips.get(state.key):
                    self._flip(conn, state.key, flips[state.key])
                top = tree_top(state.key, root)
                if top is not None:
                    tops.add(top)
                added.update(u.dedup for u in usage if u.dedup is not None)
                done.append(True)
            if tops or added or removed:
                settle(self.names, self.dialect, conn, tops, added, removed)
        return done

    def _shared_of(self, conn: Any, key: str) -> set[str]:
        """The dedup keys of ``key``'s rows that another transcript shares: they may stop being shared."""
        rows = conn.execute(self.sql(f"SELECT DISTINCT dedup FROM {self.names.usage} WHERE key = ? AND shared = 1"),
                            (key,)).fetchall()
        return {str(r[0]) for r in rows if r[0] is not None}

    def _flip(self, conn: Any, key: str, flips: Sequence[tuple[int, bool]]) -> None:
        statement = self.sql(f"UPDATE {self.names.usage} SET on_branch = ? WHERE key = ? AND seq = ?")
        rows = [(int(on), key, seq) for seq, on in flips]
        if self.dialect != "postgres":
            conn.executemany(statement, rows)
        else:
            with conn.cursor() as cur:
                cur.executemany(statement, rows)

    _TEXT_COLUMNS = ("key", "seq", "kind", "entry_id", "type", "role", "ts", "target_id", "text")
    _USAGE_COLUMNS = ("key", "seq", "n", "entry_id", "ts", "kind", "provider", "model", "input", "output", "cache_read",
                      "cache_write", "total_tokens", "cost", "dedup", "agent", "on_branch", "floats")

    def _insert(self, conn: Any, key: str, texts: Sequence[TextRow], usage: Sequence[UsageRow]) -> None:
        n = self.names
        self._many(conn, n.entries, self._TEXT_COLUMNS,
                   [(key, t.seq, t.kind, t.entry_id, t.type, t.role, t.ts, t.target_id, t.text) for t in texts])
        self._many(conn, n.usage, self._USAGE_COLUMNS,
                   [(key, u.seq, u.n, u.entry_id, u.ts, u.kind, u.provider, u.model, u.input, u.output, u.cache_read,
                     u.cache_write, u.total_tokens, u.cost, u.dedup, u.agent, int(u.on_branch), u.floats)
                    for u in usage])

    def _many(self, conn: Any, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        if self.dialect != "postgres":
            conn.executemany(insert, rows)
        elif self._secured(conn, table):  # PostgreSQL refuses COPY FROM into a table with row-level security
            with conn.cursor() as cur:
                cur.executemany(self.sql(insert), rows)
        else:  # COPY: a third of the time of one INSERT per row
            with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)

    def _secured(self, conn: Any, table: str) -> bool:
        """Whether ``table`` has row-level security enabled (asked once per connection)."""
        known = self._rls.get(table)
        if known is None:
            row = conn.execute("SELECT relrowsecurity FROM pg_class WHERE oid = %s::regclass", (table,)).fetchone()
            known = self._rls[table] = bool(row and row[0])
        return known

    def delete(self, keys: Sequence[str]) -> None:
        """Forget sessions whose row is gone (their rows in every derived table; the trees they
        were in and the records they shared follow)."""
        n = self.names
        with self.transaction("removing deleted sessions") as conn:
            tops: set[str] = set()
            removed: set[str] = set()
            for key in keys:
                row = conn.execute(self.sql(f"SELECT top FROM {n.sessions} WHERE key = ?"), (key,)).fetchone()
                if row is not None and row[0] is not None:
                    tops.add(str(row[0]))
                removed |= self._shared_of(conn, key)
                for table in (n.entries, n.usage):
                    conn.execute(self.sql(f"DELETE FROM {table} WHERE key = ?"), (key,))
                conn.execute(self.sql(f"DELETE FROM {n.sessions} WHERE key = ?"), (key,))
            if tops or removed:
                settle(self.names, self.dialect, conn, tops, (), removed)

    def count(self, root: str) -> int:
        """Sessions derived under ``root``."""
        rows = self.rows(f"SELECT count(*) FROM {self.names.sessions} WHERE substr(key, 1, ?) = ?", (len(root), root))
        return int(rows[0][0])

    def namespaces(self, root: str) -> dict[str, str]:
        """The namespace of every derived session under ``root`` that has one."""
        rows = self.rows(f"SELECT key, namespace FROM {self.names.sessions} WHERE substr(key, 1, ?) = ? "
                         "AND namespace IS NOT NULL", (len(root), root))
        return {str(r[0]): str(r[1]) for r in rows}

    def analyze(self) -> None:
        """Gather the planner's statistics on the derived tables (a role that does not own them
        is passed over: PostgreSQL warns and skips)."""
        for table in (self.names.sessions, self.names.entries, self.names.usage):
            self.rows(f"ANALYZE {table}", action="analysing the derived tables")

    def merge_search_index(self) -> None:
        """PostgreSQL: move the texts added since into the full-text index's tree. GIN keeps new
        entries in a pending list that every search reads through until a vacuum merges it; after
        an upload of 100,000 sessions a search for a rare word took 5 ms there, 0.7 ms after this.
        A role that may not do it (not the index's owner) leaves it to autovacuum."""
        if self.dialect == "postgres":
            with suppress(StoreError):
                self.rows("SELECT gin_clean_pending_list(?::regclass)", (f"{self.names.entries}_tsv",),
                          "merging the search index")

    def drop_rows(self) -> None:
        """Forget everything derived (``index --rebuild``): the next update derives every session."""
        with self.transaction("emptying the derived tables") as conn:
            for table in (self.names.entries, self.names.usage, self.names.sessions):
                conn.execute(f"DELETE FROM {table}")

    def sizes(self) -> dict[str, int]:
        """Bytes each derived table (with its indexes) takes, and omp's table's session bytes."""
        n = self.names
        out: dict[str, int] = {}
        if self.dialect == "postgres":
            for name in (n.sessions, n.entries, n.usage):
                out[name] = int(self.rows("SELECT pg_total_relation_size(?::regclass)", (name,))[0][0])
            out["sessions_bytes"] = int(self.rows(f"SELECT coalesce(sum(octet_length(content)), 0) "
                                                   f"FROM {self.table}")[0][0])
            return out
        try:
            rows = self.rows("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
            sizes = {str(r[0]): int(r[1]) for r in rows}
            for name in (n.sessions, n.entries, n.usage, n.fts):
                out[name] = sum(v for k, v in sizes.items() if k == name or k.startswith(name + "_"))
        except StoreError:  # an SQLite built without dbstat
            pass
        out["sessions_bytes"] = int(self.rows(f"SELECT coalesce(sum(length(cast(content AS blob))), 0) "
                                               f"FROM {self.table}")[0][0])
        return out


def _folders(key: str) -> tuple[str, str]:
    """The key's folder, and that folder's own (with its ``/``: a sessions root, for a session
    in a bucket): what ``list`` looks sessions up by (store/derived/listing.py)."""
    folder = key.rpartition("/")[0]
    return folder, folder.rpartition("/")[0] + "/"


def _list_values(f: Facts) -> tuple[Any, ...]:
    li = f.listed
    listed = (None,) * 7 if li is None else (li.id, li.cwd, li.title, li.parent, li.created, li.messages,
                                             li.first_message)
    return (*listed, f.status, f.status_at, f.list_head, f.line_status)


def _unplaced(key: str, root: str | None) -> tuple[int | None, int]:
    """(node_order, node_current) of a row before its tree is settled: a session is its tree's
    first node and counts in the current view (most sessions have no other transcript, and then
    nothing needs settling); any other transcript is not placed yet."""
    return (0, 1) if root is not None and tree_top(key, root) == key else (None, 0)


def _stats_values(f: Facts) -> tuple[Any, ...]:
    st = f.stats
    return (st.head, st.born, st.project, st.omp_usage, st.links)


def _stats(r: Sequence[Any]) -> StatsFacts:
    head, born, project, omp_usage, links = r
    return StatsFacts(head, str(born or ""), project, omp_usage, None if links is None else bytes(links))


def _listed(r: Sequence[Any]) -> Listed | None:
    id_, cwd, title, parent, created, messages, first = r
    if id_ is None:
        return None
    return Listed(str(id_), str(cwd), title, parent, None if created is None else int(created), int(messages),
                  str(first))


def _state(r: Sequence[Any]) -> DerivedState:
    (key, modified, size, derived, head, anchor, tcols, id_, cwd, title, created, entries, messages, next_seq,
     damaged, models, cost, tokens, namespace, keyed) = r[:len(_STATE_COLUMNS)]
    listing = r[len(_STATE_COLUMNS):]
    facts = Facts(id_, cwd, title, created, int(entries), int(messages), int(next_seq), int(damaged),
                  list(json.loads(models)), None if cost is None else float(cost),
                  None if tokens is None else float(tokens), bool(keyed), _listed(listing[:7]),
                  str(listing[7]) if listing[7] is not None else "unknown",
                  None if listing[8] is None else int(listing[8]), _stats(listing[11:]),
                  None if listing[9] is None else bytes(listing[9]), listing[10])
    return DerivedState(str(key), int(modified), int(size), int(derived), bytes(head), bytes(anchor), tcols, facts,
                        namespace)


def _one_line(e: BaseException) -> str:
    lines = [" ".join(line.split()) for line in str(e).splitlines() if line.strip()]
    return "; ".join(dict.fromkeys(lines)) or type(e).__name__


def open_derived(url: str | StoreURL, *, timeout: float | None = None, reading: bool = False) -> DerivedTables:
    """The derived tables of the store ``url`` names (PostgreSQL or SQLite; any other store is
    :data:`NOT_SUPPORTED`, one line). Connects; creates nothing. ``reading``: the caller only reads
    through them (PostgreSQL: the built-in client may connect instead of psycopg, pg_connect.py)."""
    return DerivedTables(parse_store_url(url) if isinstance(url, str) else url, timeout=timeout, reading=reading)
