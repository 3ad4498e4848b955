"""The derived tables' names and DDL, per dialect (docs/team.md).

They sit beside omp's session table, named after it (``<table>_sessions_derived``,
``<table>_entries_text``, ``<table>_usage_rows``), so two omp tables in one database keep two sets
and omp never meets a table or column of ours in its own. PostgreSQL searches a generated
``tsvector`` column through a GIN index; SQLite an external-content FTS5 table kept by triggers.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KINDS", "SCHEMA_VERSION", "SPLIT", "TEXT_LIMIT", "DerivedNames", "derived_names", "schema"]

# the layout of the derived tables, the default of the sessions table's `layout` column: tables of
# another layout are dropped and derived again by the next `index --store` or `sync --to` (derived
# data is disposable); bump it with every change of a column, an index or what a column means.
# 1: the first layout (no `layout` column); 2: list facts, stats (current branch, trees, forks)
SCHEMA_VERSION = 2

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
        import hashlib  # here: only a long table name needs it

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
        "keyed INTEGER NOT NULL, "  # 0: a session omp migrates, whose usage rows ops/stats does not key
        # what `list` shows, as omp's listing reads it from the first 4 KB and the last 32 KB
        # (catalog/list_facts.py); list_id NULL: omp lists the session not; status_at, line_status:
        # where the last whole message line starts, and its status (to read only appended bytes
        # after a line that was being written); list_head: while the
        # session is shorter than 4 KB, its bytes, to read those facts again after an append.
        # folder: the key without its file name (a bucket, or a subagent's parent's artifacts folder);
        # root_folder: that folder's own, with its "/" (the sessions root, for a session in a bucket)
        f"folder TEXT, root_folder TEXT, list_id TEXT, list_cwd TEXT, list_title TEXT, list_parent TEXT, list_created {big}, "
        f"list_messages INTEGER, first_message TEXT, status TEXT, status_at {big}, line_status TEXT, "
        f"list_head {blob}, "
        # what `stats` reads (store/derived/stats_query.py): the header as ops/stats reads it (ASCII
        # JSON [id, title, cwd, created]), the created time that orders forks, the project key (ASCII
        # JSON), omp's getUsageStatistics (JSON; NULL: omp throws), the entries' ids and parents (for
        # the current branch after an append; NULL: re-derived instead). top: the top-level session
        # this transcript counts under (itself, or its parent's); node_order: its place in that
        # session's tree (NULL: not read by stats: its parent transcript is missing); node_current:
        # its current branch counts in the current view (the top's, a subagent's on it)
        f"stats_head TEXT, stats_born TEXT, project TEXT, omp_usage TEXT, links {blob}, "
        "top TEXT, node_order INTEGER, node_current INTEGER NOT NULL DEFAULT 0, "
        f"layout INTEGER NOT NULL DEFAULT {SCHEMA_VERSION})"  # its default says which layout made the tables
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
        # on_branch: on its transcript's current branch (or a side call off it); floats: bit i when
        # count i (input, output, cache_read, cache_write, total_tokens) was not a whole JSON number;
        # shared: another transcript holds the same dedup key (a fork's copy: decided per report);
        # matched: a task agent whose own transcript is in the tree (its calls count from there)
        "on_branch INTEGER NOT NULL, floats INTEGER NOT NULL, shared INTEGER NOT NULL DEFAULT 0, "
        "matched INTEGER NOT NULL DEFAULT 0, "
        "PRIMARY KEY (key, seq, n))"
    )
    list_base = n.sessions.removesuffix("_sessions_derived")
    out = [sessions, entries, usage,
           f"CREATE INDEX IF NOT EXISTS {n.entries}_key ON {n.entries} (key, seq)",
           f"CREATE INDEX IF NOT EXISTS {n.usage}_ts ON {n.usage} (ts)",
           f"CREATE INDEX IF NOT EXISTS {n.sessions}_modified ON {n.sessions} (modified)",
           # a bucket's sessions, a parent's subagents and every bucket's sessions newest first; the
           # few that omp lists not
           # (named after the base: "<sessions>_…" may pass 63 characters, and PostgreSQL cuts it)
           f"CREATE INDEX IF NOT EXISTS {list_base}_list_folder ON {n.sessions} (folder, modified)",
           f"CREATE INDEX IF NOT EXISTS {list_base}_list_root ON {n.sessions} (root_folder, modified)",
           f"CREATE INDEX IF NOT EXISTS {list_base}_list_unlisted ON {n.sessions} (key) WHERE list_id IS NULL",
           # a session's tree of transcripts; the copies of one record in other transcripts
           f"CREATE INDEX IF NOT EXISTS {list_base}_stats_top ON {n.sessions} (top)",
           # every report counts its sessions and transcripts from these two columns alone: read
           # from the index, not from each session's wide row
           f"CREATE INDEX IF NOT EXISTS {list_base}_stats_tree ON {n.sessions} (top, node_order)",
           f"CREATE INDEX IF NOT EXISTS {list_base}_stats_dedup ON {n.usage} (dedup) WHERE dedup IS NOT NULL",
           # the few rows whose record another transcript holds too: every report looks them up
           f"CREATE INDEX IF NOT EXISTS {list_base}_stats_shared ON {n.usage} (dedup) WHERE shared = 1"]
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
