"""The derived tables' names and DDL, per dialect (docs/team.md).

They sit beside omp's session table, named after it (``<table>_sessions_derived``,
``<table>_entries_text``, ``<table>_usage_rows``), so two omp tables in one database keep two sets
and omp never meets a table or column of ours in its own. PostgreSQL searches a generated
``tsvector`` column through a GIN index; SQLite an external-content FTS5 table kept by triggers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["KINDS", "SPLIT", "TEXT_LIMIT", "DerivedNames", "derived_names", "schema"]

# the kinds of searchable text, as the file index names them (ops/search/index.py)
KINDS = ("text", "thinking", "tool_call", "tool_result", "title", "label", "summary")
# characters of one text that are stored and searched: PostgreSQL refuses a tsvector beyond 1 MB,
# and a 5 MB tool output is not what anyone searches a team's sessions for
TEXT_LIMIT = 200_000
_MAX_IDENTIFIER = 63  # PostgreSQL's NAMEDATALEN - 1
# PostgreSQL's parser keeps ``omp_session.store``, ``src/x.py`` or ``a@b.c`` as one token, where the
# file search's unicode61 sees words: these characters become spaces in the text and in the query,
# so that ``store`` finds ``omp_session.store`` in both (an SQL expression over one text argument)
SPLIT = "translate({}, '._/@:', '     ')"


@dataclass(frozen=True)
class DerivedNames:
    sessions: str
    entries: str
    usage: str
    fts: str  # SQLite only: the FTS5 table over ``entries``


def derived_names(table: str) -> DerivedNames:
    """The names for omp table ``table`` (already checked against omp's identifier rule); a long
    name is shortened with a hash so that every name stays within 63 characters."""
    base = table.lower()  # PostgreSQL folds the unquoted names anyway; SQLite does not care
    if len(base) + len("_sessions_derived") > _MAX_IDENTIFIER:
        base = base[:36] + "_" + hashlib.sha256(base.encode()).hexdigest()[:8]
    return DerivedNames(f"{base}_sessions_derived", f"{base}_entries_text", f"{base}_usage_rows",
                        f"{base}_entries_fts")


def schema(dialect: str, n: DerivedNames) -> list[str]:
    """``CREATE … IF NOT EXISTS`` statements for ``dialect`` (``postgres`` or ``sqlite``)."""
    big = "BIGINT" if dialect == "postgres" else "INTEGER"
    real = "DOUBLE PRECISION" if dialect == "postgres" else "REAL"
    blob = "BYTEA" if dialect == "postgres" else "BLOB"
    serial = "BIGSERIAL PRIMARY KEY" if dialect == "postgres" else "INTEGER PRIMARY KEY"
    sessions = (
        f"CREATE TABLE IF NOT EXISTS {n.sessions} ("
        "key TEXT PRIMARY KEY, "
        "id TEXT, cwd TEXT, title TEXT, created TEXT, "
        f"modified {big} NOT NULL, "  # omp's mtime_ms of the row when derived
        f"size {big} NOT NULL, "  # the stored body's bytes when derived
        f"derived {big} NOT NULL, "  # bytes read so far: up to the last complete line
        f"head {blob} NOT NULL, anchor {blob} NOT NULL, "  # to see a rewrite: the first and the last bytes read
        "title_columns TEXT, "  # omp's title columns when derived: a title change is a rewrite
        "entries INTEGER NOT NULL, messages INTEGER NOT NULL, next_seq INTEGER NOT NULL, damaged INTEGER NOT NULL, "
        f"models TEXT NOT NULL, cost {real}, tokens {real}, "
        "namespace TEXT, "
        "keyed INTEGER NOT NULL)"  # 0: a session omp migrates, whose usage rows ops/stats does not key
    )
    entries = (
        f"CREATE TABLE IF NOT EXISTS {n.entries} ("
        f"id {serial}, "
        "key TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, "
        f"entry_id TEXT, type TEXT, role TEXT, ts {big}, target_id TEXT, "
        "text TEXT NOT NULL"
        + (f", tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', {SPLIT.format('text')})) STORED)"
           if dialect == "postgres" else ")")
    )
    usage = (
        f"CREATE TABLE IF NOT EXISTS {n.usage} ("
        "key TEXT NOT NULL, seq INTEGER NOT NULL, n INTEGER NOT NULL, "
        f"entry_id TEXT, ts {real}, kind TEXT NOT NULL, provider TEXT, model TEXT, "
        f"input {real} NOT NULL, output {real} NOT NULL, cache_read {real} NOT NULL, cache_write {real} NOT NULL, "
        f"total_tokens {real} NOT NULL, cost {real} NOT NULL, "
        "dedup TEXT, agent TEXT, "  # what ops/stats needs to count a fork's copy and a subagent's calls once
        "PRIMARY KEY (key, seq, n))"
    )
    out = [sessions, entries, usage,
           f"CREATE INDEX IF NOT EXISTS {n.entries}_key ON {n.entries} (key, seq)",
           f"CREATE INDEX IF NOT EXISTS {n.usage}_ts ON {n.usage} (ts)",
           f"CREATE INDEX IF NOT EXISTS {n.sessions}_modified ON {n.sessions} (modified)"]
    if dialect == "postgres":
        out.append(f"CREATE INDEX IF NOT EXISTS {n.entries}_tsv ON {n.entries} USING GIN (tsv)")
    else:
        out += [
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {n.fts} USING fts5(text, content='{n.entries}', content_rowid='id', "
            "tokenize = 'unicode61 remove_diacritics 2')",
            f"CREATE TRIGGER IF NOT EXISTS {n.entries}_ai AFTER INSERT ON {n.entries} BEGIN "
            f"INSERT INTO {n.fts}(rowid, text) VALUES (new.id, new.text); END",
            f"CREATE TRIGGER IF NOT EXISTS {n.entries}_ad AFTER DELETE ON {n.entries} BEGIN "
            f"INSERT INTO {n.fts}({n.fts}, rowid, text) VALUES ('delete', old.id, old.text); END",
        ]
    return out
