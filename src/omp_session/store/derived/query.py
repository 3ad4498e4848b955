"""Searching the derived tables (``omp-session search --store``; docs/team.md).

PostgreSQL: ``websearch_to_tsquery('simple', …)`` over the GIN-indexed ``tsvector`` column, ranked
by ``ts_rank_cd`` with newer entries first among equal ranks; snippets by ``ts_headline``, only
for the hits shown. SQLite: the FTS5 table, ranked by bm25 (the caller translates the query with
the file search's own language). Scores are "lower is better" on both (PostgreSQL's rank negated),
as the file search's bm25.

A word in more texts than :data:`RANK_CAP` is ranked among its newest RANK_CAP matches only, as
the file search does: ranking every one of a million matches costs seconds and tells nothing.
Filters (role, project, namespace, time, thinking) apply before that cut.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omp_session.errors import QueryError

from .namespace import namespace_condition
from .schema import SPLIT
from .tables import DerivedTables

__all__ = ["RANK_CAP", "StoreHit", "search_derived"]

RANK_CAP: Final = 2000
_SLACK: Final = 50
_SNIPPET_WORDS: Final = 24
_HEADLINE: Final = ("'StartSel=' || chr(2) || ', StopSel=' || chr(3) || "
                    f"', MaxWords={_SNIPPET_WORDS}, MinWords=12, ShortWord=0, MaxFragments=1, FragmentDelimiter=…'")


_TSQUERY: Final = f"websearch_to_tsquery('simple', {SPLIT.format('?')})"


@dataclass(frozen=True, slots=True)
class StoreHit:
    """One matching text; ``snippet`` marks the matches with ``\\x02`` … ``\\x03``."""

    key: str
    session_id: str | None
    title: str | None
    cwd: str | None
    seq: int
    kind: str
    entry_id: str | None
    entry_type: str | None
    role: str | None
    ts: int | None
    target_id: str | None
    snippet: str
    score: float


_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")


def _storable(text: str, nul: str) -> str:
    """``text`` as the derived tables hold it (catalog.derived): a lone surrogate (a shell's
    argument that is not UTF-8) is U+FFFD, NUL is ``nul``. No driver sends either as text."""
    return _UNSTORABLE.sub(lambda m: nul if m.group() == "\x00" else "\ufffd", text)


def search_derived(tables: DerivedTables, query: str, *, root: str | None = None, fts5: str | None = None,
                   roles: Sequence[str] | None = None, cwd: str | None = None, since_ms: int | None = None,
                   until_ms: int | None = None, thinking: bool = False, limit: int = 20,
                   sessions: bool = False, user: str | None = None, host: str | None = None) -> list[StoreHit]:
    """The best ``limit`` hits for ``query`` among every derived session (only those whose key
    starts with ``root``, when given: a condition PostgreSQL's planner cannot estimate, which
    costs a common word the fast path). PostgreSQL reads ``query`` in websearch syntax; SQLite
    needs ``fts5``, the query as an FTS5 expression. ``roles``: only these message roles;
    ``cwd``: sessions of that directory or below; ``since_ms``/``until_ms``: entry times;
    ``sessions``: one hit per session; ``user``/``host``: only sessions whose namespace has this
    user/host (store.derived.namespace). A session's title is one hit at most (its
    ``title_change`` entries repeat the header's)."""
    e, d = tables.names.entries, tables.names.sessions
    # a text's NUL is stored as a space, an id's or a path's as U+FFFD
    query = _storable(query, " ")
    fts5 = None if fts5 is None else _storable(fts5, " ")
    cwd = None if cwd is None else _storable(cwd, "\ufffd")
    roles = None if roles is None else [_storable(r, "\ufffd") for r in roles]
    where: list[str] = []
    args: list[Any] = []
    join = ""
    if root is not None:
        root = _storable(root, "\ufffd")
        where.append("substr(e.key, 1, ?) = ?")
        args += [len(root), root]
    if not thinking:
        where.append("e.kind <> 'thinking'")
    if roles:
        where.append(f"e.role IN ({', '.join('?' * len(roles))})")
        args += list(roles)
    if cwd is not None:
        base = os.path.abspath(cwd).rstrip(os.sep) or os.sep
        below = base.rstrip(os.sep) + os.sep
        join = f" JOIN {d} d ON d.key = e.key"
        where.append("(d.cwd = ? OR substr(d.cwd, 1, ?) = ?)")
        args += [base, len(below), below]
    if user is not None or host is not None:
        join = f" JOIN {d} d ON d.key = e.key"
        user = None if user is None else _storable(user, "\ufffd")
        host = None if host is None else _storable(host, "\ufffd")
        conds, more = namespace_condition(tables.dialect, "d.namespace", user=user, host=host)
        where += conds
        args += more
    if since_ms is not None:
        where.append("e.ts >= ?")
        args.append(since_ms)
    if until_ms is not None:
        where.append("e.ts < ?")
        args.append(until_ms)
    page: _Page
    if tables.dialect == "postgres":
        # the tsquery inline, not in a CTE: the planner then sees how common the words are and
        # walks the newest rows for a common word, the GIN index for a rare one
        matched = (f"SELECT e.id, e.ts, e.tsv FROM {e} e{join} WHERE "
                   + " AND ".join([f"e.tsv @@ {_TSQUERY}", *where]) + f" ORDER BY e.id DESC LIMIT {RANK_CAP}")
        ranked = (f"SELECT m.id, -ts_rank_cd(m.tsv, {_TSQUERY}) AS score, m.ts FROM ({matched}) m "
                  "ORDER BY score, m.ts DESC NULLS LAST, m.id DESC LIMIT ?")
        page = _postgres_page(tables, ranked, [query, query, *args], query, limit)
    else:
        if not fts5:
            raise QueryError("an SQLite store's search needs the query as an FTS5 expression")
        f = tables.names.fts
        conditions = " AND ".join([f"{f} MATCH ?", *where])
        cap = (f"SELECT e.id FROM {f} JOIN {e} e ON e.id = {f}.rowid{join} WHERE {conditions} "
               f"ORDER BY e.id DESC LIMIT 1 OFFSET {RANK_CAP - 1}")
        ranked = (f"SELECT e.id, bm25({f}) AS score FROM {f} JOIN {e} e ON e.id = {f}.rowid{join} "
                  f"WHERE {conditions} AND e.id >= coalesce(({cap}), 0) "
                  "ORDER BY score, e.ts DESC NULLS LAST, e.id DESC LIMIT ?")
        page = _sqlite_page(tables, ranked, [fts5, *args, fts5, *args], fts5)
    fetch = limit + _SLACK
    while True:
        rows, scores, ranked_count = page(fetch)
        kept = _keep(rows, scores, limit, sessions)
        if len(kept) >= limit or ranked_count < fetch:
            break
        fetch *= 4  # repeated titles (or one hit per session) left too few
    # PostgreSQL: hits kept from past the first `limit` ranks have no snippet yet
    missing = [int(r[0]) for r in kept if r[12] is None] if tables.dialect == "postgres" else []
    if missing:
        cut = dict(tables.rows(f"SELECT e.id, ts_headline('simple', e.text, {_TSQUERY}, {_HEADLINE}) FROM {e} e "
                               f"WHERE e.id IN ({', '.join('?' * len(missing))})", [query, *missing],
                               "cutting the snippets"))
        kept = [r if r[12] is not None else (*r[:12], cut.get(r[0])) for r in kept]
    return [_hit(row, scores) for row in kept]


_COLUMNS: Final = "e.id, e.key, d.id, d.title, d.cwd, e.seq, e.kind, e.entry_id, e.type, e.role, e.ts, e.target_id"
# fetch -> (the ranked rows' details and snippets, their scores, how many were ranked)
_Page = Callable[[int], tuple[list[tuple[Any, ...]], dict[int, float], int]]


def _postgres_page(tables: DerivedTables, ranked: str, params: list[Any], query: str, limit: int) -> _Page:
    """The best ``fetch`` hits with their details in one statement, and the snippets
    (``ts_headline``, the costly part) of the first ``limit`` only: the others are cut only for
    hits kept in their place (a repeated title, a session already shown)."""
    e, d = tables.names.entries, tables.names.sessions
    sql = (f"SELECT {_COLUMNS}, CASE WHEN r.rank <= ? THEN ts_headline('simple', e.text, {_TSQUERY}, {_HEADLINE}) END, "
           f"r.score FROM (SELECT x.id, x.score, row_number() OVER (ORDER BY x.score, x.ts DESC NULLS LAST, x.id DESC) "
           f"AS rank FROM ({ranked}) x) r JOIN {e} e ON e.id = r.id LEFT JOIN {d} d ON d.key = e.key ORDER BY r.rank")

    def page(fetch: int) -> tuple[list[tuple[Any, ...]], dict[int, float], int]:
        rows = [tuple(r) for r in tables.rows(sql, [limit, query, *params, fetch], "searching the derived tables")]
        if not rows:
            # no words at all (PostgreSQL's simple parser found none) matches nothing: say so
            empty = tables.rows(f"SELECT numnode({_TSQUERY})", (query,))
            if not empty or int(empty[0][0]) == 0:
                raise QueryError(f"nothing to search for in {query!r}: no words (PostgreSQL's simple parser found none)")
        return [r[:-1] for r in rows], {int(r[0]): float(r[-1]) for r in rows}, len(rows)

    return page


def _sqlite_page(tables: DerivedTables, ranked: str, params: list[Any], fts5: str) -> _Page:
    """The best ``fetch`` hits, then their details and snippets."""

    def page(fetch: int) -> tuple[list[tuple[Any, ...]], dict[int, float], int]:
        rows = tables.rows(ranked, [*params, fetch], "searching the derived tables")
        ids = [int(r[0]) for r in rows]
        found = _details(tables, ids, fts5)
        return [found[i] for i in ids if i in found], {int(r[0]): float(r[1]) for r in rows}, len(rows)

    return page


def _details(tables: DerivedTables, ids: list[int], fts5: str | None) -> dict[int, tuple[Any, ...]]:
    """SQLite: the details and snippets of ``ids``."""
    if not ids:
        return {}
    e, d = tables.names.entries, tables.names.sessions
    marks = ", ".join("?" * len(ids))
    f = tables.names.fts
    sql = (f"SELECT {_COLUMNS}, snippet({f}, 0, char(2), char(3), '…', {_SNIPPET_WORDS}) FROM {f} "
           f"JOIN {e} e ON e.id = {f}.rowid LEFT JOIN {d} d ON d.key = e.key "
           f"WHERE {f} MATCH ? AND {f}.rowid IN ({marks})")
    return {int(r[0]): tuple(r) for r in tables.rows(sql, [fts5, *ids], "cutting the snippets")}


def _keep(rows: list[tuple[Any, ...]], scores: dict[int, float], limit: int,
          sessions: bool) -> list[tuple[Any, ...]]:
    """The ranked rows to show: one title per session, and with ``sessions`` one hit per session."""
    kept: list[tuple[Any, ...]] = []
    shown: dict[str, int] = {}
    for row in rows:
        rid, key, seq, kind = row[0], row[1], row[5], row[6]
        if sessions or kind == "title":
            at = shown.get(key)
            if at is not None:
                other = kept[at]
                if seq == 0 and kind == "title" and other[6] == "title" and scores[other[0]] == scores[rid]:
                    kept[at] = row  # the same rank: the session's title, not an audit entry
                continue
            shown[key] = len(kept)
        kept.append(row)
        if len(kept) >= limit:
            break
    return kept


def _hit(row: tuple[Any, ...], scores: dict[int, float]) -> StoreHit:
    rid, key, sid, title, cwd, seq, kind, eid, etype, role, ts, target, snippet = row
    return StoreHit(key, sid, title, cwd, int(seq), kind, None if seq == 0 else eid, etype, role,
                    None if ts is None else int(ts), target, " ".join(str(snippet or "").split()), scores[rid])
