"""``stats`` in the database: sums of the derived usage rows (``omp-session stats --store``;
docs/stats.md, docs/team.md).

ops/stats/report.py reads every transcript and places each usage record; the derived tables hold
what that placing needs per row (trees.py: a transcript's session and place in its tree, whether
its current branch counts, whether a task result's own transcript replaces it; the row's own
current-branch flag; whether another transcript holds a copy of it). A report is then one query:

* ``sel``: the transcripts of the chosen top-level sessions that ops/stats reads;
* ``firsts``: for the few rows whose record another transcript also holds, the transcript that
  bills it: the first in ops/stats' order (the session created first, its key, the tree's walk)
  among the chosen ones (a fork's copy is billed when its original is not in the report);
* the rows, without the task results whose agents' transcripts count instead, grouped.

Sums equal ops/stats' to the last bit: a cost is summed in ops/stats' order (PostgreSQL:
``sum(… ORDER BY …)``; SQLite: an aggregate of ours, since its ``sum`` rounds differently), and
token counts, whole numbers, exactly; a group whose counts were not all whole numbers (``floats``)
is summed in order again. The caller decides what to group by: a column, or a period of the
record's time (PostgreSQL: ``to_char`` in the zone; SQLite: a function the caller gives).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .namespace import namespace_condition
from .tables import DerivedTables

if TYPE_CHECKING:
    import sqlite3

__all__ = ["FIELDS", "Grouped", "Selection", "TimeKey", "billed_times", "counts", "grouped", "placed_rows", "top_level",
           "tops"]

UNKNOWN: Final = "(unknown)"
FIELDS: Final = ("input", "output", "cache_read", "cache_write", "total_tokens")


@dataclass(frozen=True)
class Selection:
    """The top-level sessions of a report: ``keys`` (None: any), under ``prefix`` (None: any), of a
    namespace with this ``user``/``host``; and the record times ``since <= ts < until``."""

    keys: Sequence[str] | None = None
    prefix: str | None = None
    user: str | None = None
    host: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass(frozen=True)
class TimeKey:
    """Rows grouped by a calendar period of their time: PostgreSQL ``to_char`` in IANA ``zone``
    (``fmt``), for times ``lo <= ts < hi`` (the others are (unknown), as Python has no date for
    them); SQLite calls ``fn(ts)``."""

    zone: str | None
    fmt: str
    lo: float
    hi: float
    fn: Callable[[float | None], str]


@dataclass(frozen=True)
class Grouped:
    """One group's sums: per view (billed, current) requests, the five counts, cost, and the bits
    of the counts that were not whole numbers."""

    key: str
    model: str | None  # by period: the model row of that period (None: the period's own row)
    billed: tuple[Any, ...]  # (requests, input, output, cache_read, cache_write, total_tokens, cost, floats)
    current: tuple[Any, ...]


def _model_sql() -> str:
    return (f"CASE WHEN u.provider IS NOT NULL AND u.model IS NOT NULL THEN u.provider || '/' || u.model "
            f"ELSE coalesce(u.model, '{UNKNOWN}') END")


def _tops(tables: DerivedTables, sel: Selection, column: str) -> tuple[list[str], list[Any]]:
    """The conditions on the top-level session's key ``column``: one of ``sel.keys``, under
    ``sel.prefix``."""
    where: list[str] = []
    args: list[Any] = []
    if sel.keys is not None:
        if tables.dialect == "postgres":
            where.append(f"{column} = ANY(?)")
            args.append(list(sel.keys))
        else:
            where.append(f"{column} IN ({', '.join('?' * len(sel.keys))})" if sel.keys else "1 = 0")
            args += list(sel.keys)
    if sel.prefix is not None:
        where.append(f"substr({column}, 1, ?) = ?")
        args += [len(sel.prefix), sel.prefix]
    return where, args


def _with(tables: DerivedTables, sel: Selection, *, ordered: bool = True) -> tuple[str, list[Any]]:
    """The ``sel`` and ``firsts`` common table expressions, and their parameters (``ordered``
    False: ``sel`` alone, without the sessions' order, for counting)."""
    n = tables.names
    pg = tables.dialect == "postgres"
    # a top-level session is the first node of its own tree (node_order 0 and nothing else is):
    # PostgreSQL estimates that from the column's statistics, where "t.top = t.key" misleads it
    # into a nested loop over the sessions
    where, args = _tops(tables, sel, "t.key")
    where[:0] = ["d.node_order IS NOT NULL", "t.node_order = 0"]
    if sel.user is not None or sel.host is not None:
        conds, more = namespace_condition(tables.dialect, "t.namespace", user=sel.user, host=sel.host)
        where += conds
        args += more
    c = ' COLLATE "C"' if pg else ""
    source = f"{n.sessions} d JOIN {n.sessions} t ON t.key = d.top"
    if ordered and (sel.since is not None or sel.until is not None):
        # only the transcripts with a row in the window: the report's rows are theirs, and each
        # copy of a record (same dedup key: entry id and time) is in the window with it, so the
        # first of its copies is still among them; the order of those kept is unchanged, and with
        # it every sum. A month of a year's sessions then sorts a twelfth of them, not all
        span, more = _span("w", sel)
        if pg:
            # each transcript and its top looked up by key (OFFSET 0 keeps PostgreSQL from
            # turning the lookups into hash joins over every session's wide row)
            source = (f"(SELECT DISTINCT w.key FROM {n.usage} w WHERE {span}) k "
                      f"CROSS JOIN LATERAL (SELECT * FROM {n.sessions} x WHERE x.key = k.key OFFSET 0) d "
                      f"CROSS JOIN LATERAL (SELECT * FROM {n.sessions} y WHERE y.key = d.top OFFSET 0) t")
            args = more + args  # FROM comes before WHERE
        else:
            where.append(f"d.key IN (SELECT w.key FROM {n.usage} w WHERE {span})")
            args += more
    if not ordered:
        return (f"WITH sel AS (SELECT d.key, t.key AS top FROM {n.sessions} d JOIN {n.sessions} t ON t.key = d.top "
                f"WHERE {' AND '.join(where)}) "), args
    # tree: the session's place in ops/stats' order (created first, then by key), as a number: the
    # rows are sorted by it, not by two long strings each
    sql = (f"WITH sel AS (SELECT d.key, d.node_order, d.node_current, t.key AS top, t.project AS project, "
           f"dense_rank() OVER (ORDER BY coalesce(t.stats_born, ''){c}, t.key{c}) AS tree "
           f"FROM {source} WHERE {' AND '.join(where)}), "
           f"firsts AS (SELECT dedup, key FROM (SELECT u.dedup, u.key, row_number() OVER (PARTITION BY u.dedup "
           f"ORDER BY sel.tree, sel.node_order) AS r FROM {n.usage} u JOIN sel ON sel.key = u.key "
           f"WHERE u.shared = 1) x WHERE r = 1) ")
    return sql, args


_BILLED: Final = "(f.key IS NULL OR f.key = u.key)"
_CURRENT: Final = "(s.node_current = 1 AND u.on_branch = 1)"


def _span(alias: str, sel: Selection) -> tuple[str, list[Any]]:
    """``since <= ts < until`` on the usage rows ``alias``."""
    where, args = [], []
    if sel.since is not None:
        where.append(f"{alias}.ts >= ?")
        args.append(sel.since)
    if sel.until is not None:
        where.append(f"{alias}.ts < ?")
        args.append(sel.until)
    return " AND ".join(where) or "1 = 1", args


def _window(sel: Selection) -> tuple[str, list[Any]]:
    span, args = _span("u", sel)
    return f"u.matched = 0 AND {span}", args


def _order(s: str = "s", u: str = "u") -> str:
    return f"{s}.tree, {s}.node_order, {u}.seq, {u}.n"


def _sums(tables: DerivedTables, view: str, ordered_counts: bool) -> list[str]:
    """The aggregates of one view (the 0/1 column ``view`` of ``q``): requests, the five counts,
    cost, the counts' float bits."""
    pg = tables.dialect == "postgres"
    cond = f"q.{view} = 1"

    def ordered(column: str) -> str:
        if pg:
            return f"sum(q.{column} ORDER BY {_order('q', 'q')}) FILTER (WHERE {cond})"
        return f"omp_ordered_sum(q.tree, q.node_order, q.seq, q.n, CASE WHEN {cond} THEN q.{column} END)"

    def plain(column: str) -> str:
        return f"sum(q.{column}) FILTER (WHERE {cond})" if pg else f"sum(CASE WHEN {cond} THEN q.{column} END)"

    count = f"count(*) FILTER (WHERE {cond})" if pg else f"sum(CASE WHEN {cond} THEN 1 ELSE 0 END)"
    bits = " | ".join(f"coalesce(max(CASE WHEN {cond} THEN q.floats & {1 << i} END), 0)" for i in range(len(FIELDS)))
    return [count, *((ordered if ordered_counts else plain)(f) for f in FIELDS), ordered("cost"), f"({bits})"]


def _connection(tables: DerivedTables, time_key: TimeKey | None) -> None:
    """SQLite: the functions the queries call."""
    if tables.dialect != "sqlite":
        return
    conn: sqlite3.Connection = tables.conn
    conn.create_aggregate("omp_ordered_sum", 5, _OrderedSum)  # type: ignore[arg-type]
    if time_key is not None:
        conn.create_function("omp_period", 1, time_key.fn, deterministic=True)


class _OrderedSum:
    """``sum(value)`` in the order of (tree, node_order, seq, n), one float addition after
    another as Python (and ops/stats) adds them; NULL values are left out; no value: NULL."""

    def __init__(self) -> None:
        self.values: list[tuple[Any, ...]] = []

    def step(self, tree: Any, order: Any, seq: Any, n: Any, value: Any) -> None:
        if value is not None:
            self.values.append((tree, order, seq, n, value))

    def finalize(self) -> Any:
        if not self.values:
            return None
        self.values.sort(key=lambda v: v[:4])
        total: Any = 0.0
        for v in self.values:
            total += v[4]
        return total


def _period_sql(tables: DerivedTables, time_key: TimeKey) -> tuple[str, list[Any]]:
    if tables.dialect == "sqlite":
        return "omp_period(u.ts)", []
    return (f"CASE WHEN u.ts >= ? AND u.ts < ? THEN to_char(to_timestamp(u.ts / 1000.0) AT TIME ZONE ?, ?) "
            f"ELSE '{UNKNOWN}' END", [time_key.lo, time_key.hi, time_key.zone, time_key.fmt])


def grouped(tables: DerivedTables, sel: Selection, by: str, time_key: TimeKey | None = None, *,
            models: bool = False, ordered_counts: bool = False) -> tuple[list[Grouped], Grouped | None]:
    """The sums per group, and over every row (None: no row), in one pass: ``by`` is ``session``
    (the top-level session's key), ``project`` (the ASCII JSON of its project), ``provider``,
    ``model`` or ``period`` (``time_key``). ``models``: also one row per model within each group
    (by period). ``ordered_counts``: the counts too in ops/stats' order (where some were not whole)."""
    _connection(tables, time_key)
    head, args = _with(tables, sel)
    window, wargs = _window(sel)
    gargs: list[Any] = []
    if by == "period":
        assert time_key is not None
        gkey, gargs = _period_sql(tables, time_key)
    else:
        gkey = {"session": "s.top", "project": "s.project", "provider": f"coalesce(u.provider, '{UNKNOWN}')",
                "model": _model_sql()}[by]
    # one row per usage record with its group, its model, its views and its place in ops/stats' order
    rows = (f"SELECT {gkey} AS g, {_model_sql()} AS mk, CASE WHEN {_BILLED} THEN 1 ELSE 0 END AS billed, "
            f"CASE WHEN {_CURRENT} THEN 1 ELSE 0 END AS cur, {', '.join(f'u.{f}' for f in FIELDS)}, u.cost, "
            f"u.floats, s.tree, s.node_order, u.seq, u.n FROM {tables.names.usage} u JOIN sel s ON s.key = u.key "
            f"LEFT JOIN firsts f ON f.dedup = u.dedup WHERE {window}")
    params = [*args, *gargs, *wargs]
    aggs = ", ".join(_sums(tables, "billed", ordered_counts) + _sums(tables, "cur", ordered_counts))
    if tables.dialect == "postgres":
        sets = "(q.g), (q.g, q.mk), ()" if models else "(q.g), ()"
        model = "CASE WHEN grouping(q.mk) = 1 THEN NULL ELSE q.mk END" if models else "NULL"
        sql = f"{head}SELECT grouping(q.g), q.g, {model}, {aggs} FROM ({rows}) q GROUP BY GROUPING SETS ({sets})"
    else:
        sql = (f"{head}, q AS ({rows}) SELECT 0, q.g, NULL, {aggs} FROM q GROUP BY q.g "
               + (f"UNION ALL SELECT 0, q.g, q.mk, {aggs} FROM q GROUP BY q.g, q.mk " if models else "")
               + f"UNION ALL SELECT 1, NULL, NULL, {aggs} FROM q HAVING count(*) > 0")
    width = 3 + len(FIELDS)
    out: list[Grouped] = []
    total = None
    for r in tables.rows(sql, params, "adding up the usage"):
        g = Grouped("" if r[1] is None else str(r[1]), None if r[2] is None else str(r[2]), tuple(r[3:3 + width]),
                    tuple(r[3 + width:]))
        if r[0]:
            total = g
        else:
            out.append(g)
    return out, total


def placed_rows(tables: DerivedTables, sel: Selection) -> list[tuple[Any, ...]]:
    """Every row of the report in ops/stats' order: (ts, kind, provider, model, input, output,
    cache_read, cache_write, total_tokens, cost, floats, top, project, key, billed, current)."""
    _connection(tables, None)
    head, args = _with(tables, sel)
    window, wargs = _window(sel)
    sql = (f"{head}SELECT u.ts, u.kind, u.provider, u.model, u.input, u.output, u.cache_read, u.cache_write, "
           f"u.total_tokens, u.cost, u.floats, s.top, s.project, u.key, "
           f"CASE WHEN {_BILLED} THEN 1 ELSE 0 END, CASE WHEN {_CURRENT} THEN 1 ELSE 0 END "
           f"FROM {tables.names.usage} u JOIN sel s ON s.key = u.key LEFT JOIN firsts f ON f.dedup = u.dedup "
           f"WHERE {window} ORDER BY {_order()}")
    return tables.rows(sql, [*args, *wargs], "reading the usage rows")


def billed_times(tables: DerivedTables, sel: Selection, lo: float, hi: float) -> list[float]:
    """The times of the billed rows ``lo <= ts < hi``, sorted (what places the 5-hour blocks)."""
    head, args = _with(tables, Selection(sel.keys, sel.prefix, sel.user, sel.host))
    sql = (f"{head}SELECT u.ts FROM {tables.names.usage} u JOIN sel s ON s.key = u.key "
           f"LEFT JOIN firsts f ON f.dedup = u.dedup WHERE u.matched = 0 AND {_BILLED} AND u.ts >= ? AND u.ts < ? "
           "ORDER BY u.ts")
    return [float(r[0]) for r in tables.rows(sql, [*args, lo, hi], "reading the usage times")]


def counts(tables: DerivedTables, sel: Selection) -> tuple[int, int]:
    """(top-level sessions, transcripts) of the report."""
    if sel.user is None and sel.host is None:
        # one pass over the sessions, grouped by tree: only a tree's top has node_order 0 (and its
        # top is its own key), so a tree whose top is a top-level session is one holding a row
        # of node_order 0; the join of each transcript to its top read every wide row twice
        n = tables.names
        where, args = _tops(tables, sel, "top")
        where.insert(0, "node_order IS NOT NULL")
        rows = tables.rows(f"SELECT count(*), coalesce(sum(g.n), 0) FROM (SELECT top, count(*) AS n, "
                           f"max(CASE WHEN node_order = 0 THEN 1 ELSE 0 END) AS rooted FROM {n.sessions} "
                           f"WHERE {' AND '.join(where)} GROUP BY top) g WHERE g.rooted = 1", args,
                           "counting the sessions")
        return int(rows[0][0]), int(rows[0][1])
    head, args = _with(tables, sel, ordered=False)
    rows = tables.rows(f"{head}SELECT count(DISTINCT top), count(*) FROM sel", args, "counting the sessions")
    return int(rows[0][0]), int(rows[0][1])


def tops(tables: DerivedTables, sel: Selection) -> list[tuple[str, str | None, str | None]]:
    """(key, stats_head, omp_usage) of each top-level session of the report."""
    head, args = _with(tables, sel, ordered=False)
    n = tables.names
    rows = tables.rows(f"{head}SELECT t.key, t.stats_head, t.omp_usage FROM {n.sessions} t "
                       "WHERE t.key IN (SELECT top FROM sel)", args, "reading the sessions")
    return [(str(r[0]), r[1], r[2]) for r in rows]


def top_level(tables: DerivedTables, keys: Sequence[str]) -> set[str]:
    """Those of ``keys`` that are top-level sessions in the derived tables."""
    if not keys:
        return set()
    n = tables.names
    if tables.dialect == "postgres":
        rows = tables.rows(f"SELECT key FROM {n.sessions} WHERE key = ANY(?) AND top = key", (list(keys),))
    else:
        rows = tables.rows(f"SELECT key FROM {n.sessions} WHERE key IN ({', '.join('?' * len(keys))}) AND top = key",
                           list(keys))
    return {str(r[0]) for r in rows}
