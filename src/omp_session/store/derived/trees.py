"""A session's tree of transcripts in the derived tables, as ``stats`` reads it (docs/stats.md,
docs/team.md): the top-level session, its subagents and advisors (``<session>/<name>.jsonl``,
nested to :data:`MAX_DEPTH` levels), which of them count in the current view, which task
results their own transcript replaces, and which records another transcript holds a copy of.

ops/stats finds these per report by walking the files (ops/stats/report.py ``_stored_tree``,
``_place``, ``_current_nodes``); here they are kept per row, brought up to date in the same
transaction as every write (:func:`settle`), so that a report is a plain ``GROUP BY``:

* ``sessions.top``: the top-level session a transcript counts under (from the store's root: a
  key ``<root><bucket>/<session>.jsonl`` is one, everything under ``<root><bucket>/<session>/``
  counts under it);
* ``sessions.node_order``: the transcript's place in the walk ops/stats makes (the session, then
  each transcript of its folder by name, each followed by its own folder's), NULL when ops/stats
  never reads it (a parent transcript is missing, or it is nested deeper than MAX_DEPTH);
* ``sessions.node_current``: the session, and each subagent whose ``task`` result is on the
  current branch of a transcript that counts (recursively);
* ``usage.matched``: a ``task`` agent whose own transcript is in the tree (the first one of that
  name in walk order): its calls count from that transcript, not from the result;
* ``usage.shared``: the record's dedup key (entry id and time) is in another transcript too,
  any session's: which copy is billed depends on the sessions a report reads, so the query
  decides it for these rows alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .schema import DerivedNames

__all__ = ["MAX_DEPTH", "SUFFIX", "Tree", "settle", "settle_copies", "settle_tree", "tree_top"]

SUFFIX: Final = ".jsonl"
MAX_DEPTH: Final = 16  # as ops/stats/report.py: deeper folders are not followed
_CHUNK: Final = 500  # keys per IN (…) list on SQLite


def tree_top(key: str, root: str | None) -> str | None:
    """The top-level session ``key`` counts under (``key`` itself for a top-level one); None when
    ``key`` is not under ``root`` as ``<bucket>/<session>.jsonl[/…]``."""
    if root is None or not key.startswith(root):
        return None
    parts = key[len(root):].split("/")
    if len(parts) < 2:
        return None
    return key if len(parts) == 2 else root + parts[0] + "/" + parts[1] + SUFFIX


@dataclass
class Tree:
    """What :func:`settle_tree` decides for one top-level session's transcripts."""

    order: dict[str, int | None] = field(default_factory=dict)  # key -> node_order
    current: dict[str, bool] = field(default_factory=dict)  # key -> node_current
    matched: set[tuple[str, int, int]] = field(default_factory=set)  # task rows (key, seq, n)


def settle_tree(top: str, keys: Iterable[str], tasks: Sequence[tuple[str, int, int, str, bool]]) -> Tree:
    """The tree of ``top`` given the keys of its transcripts (``top`` among them when it is
    derived) and their ``task`` rows with an agent: (key, seq, n, agent, on_branch)."""
    known = set(keys)
    tree = Tree({k: None for k in known}, {k: False for k in known})
    if top not in known:
        return tree  # ops/stats reads a tree from its session file: without it, nothing
    below: dict[str, list[str]] = {}
    for k in known:
        if k != top:
            below.setdefault(k.rpartition("/")[0], []).append(k)
    walk: list[str] = []

    def visit(key: str, depth: int) -> None:
        walk.append(key)
        if depth > MAX_DEPTH or not key.endswith(SUFFIX):
            return
        for child in sorted(below.get(key[: -len(SUFFIX)], ())):
            visit(child, depth + 1)

    visit(top, 1)
    by_agent: dict[str, str] = {}
    for k in walk[1:]:
        name = k.rpartition("/")[2]
        if not name.startswith("__advisor"):
            by_agent.setdefault(name[: -len(SUFFIX)], k)
    for n, k in enumerate(walk):
        tree.order[k] = n
    spawned: dict[str, list[str]] = {}
    for key, seq, n, agent, on_branch in tasks:
        if tree.order.get(key) is None or agent not in by_agent:
            continue
        tree.matched.add((key, seq, n))
        if on_branch:
            spawned.setdefault(key, []).append(by_agent[agent])
    stack = [top]
    while stack:
        k = stack.pop()
        if tree.current[k]:
            continue
        tree.current[k] = True
        stack += spawned.get(k, [])
    return tree


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(values), _CHUNK):
        yield values[i:i + _CHUNK]


def settle(names: DerivedNames, dialect: str, conn: Any, tops: Iterable[str], added: Iterable[str],
           removed: Iterable[str]) -> None:
    """Bring the tree columns of ``tops`` and the ``shared`` flag of the dedup keys ``added`` (of
    rows just written) and ``removed`` (of shared rows just deleted) up to date, in the caller's
    transaction (after its writes). On PostgreSQL one lock per set of derived tables makes
    concurrent writers settle one after the other, each reading what the others committed: two
    copies of a record written at once by two updates are both seen as shared."""
    n = names

    def sql(statement: str) -> str:
        return statement.replace("?", "%s") if dialect == "postgres" else statement

    if dialect == "postgres":
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (n.usage,))
    for part in _chunks(sorted(set(tops))):
        marks = ", ".join("?" * len(part))
        rows = conn.execute(sql(f"SELECT key, top, node_order, node_current FROM {n.sessions} WHERE top IN ({marks})"),
                            list(part)).fetchall()
        tasks = conn.execute(sql(
            f"SELECT u.key, u.seq, u.n, u.agent, u.on_branch, u.matched, d.top FROM {n.usage} u "
            f"JOIN {n.sessions} d ON d.key = u.key WHERE d.top IN ({marks}) AND u.kind = 'task' "
            "AND u.agent IS NOT NULL"), list(part)).fetchall()
        members: dict[str, list[str]] = {}
        stored: dict[str, tuple[Any, Any]] = {}
        for key, top, order, current in rows:
            members.setdefault(top, []).append(key)
            stored[key] = (order, bool(current))
        per_top: dict[str, list[tuple[str, int, int, str, bool]]] = {}
        was_matched: dict[str, list[tuple[tuple[str, int, int], bool]]] = {}
        for key, seq, num, agent, on_branch, matched, top in tasks:
            per_top.setdefault(top, []).append((key, int(seq), int(num), agent, bool(on_branch)))
            was_matched.setdefault(top, []).append(((key, int(seq), int(num)), bool(matched)))
        node_updates: list[tuple[Any, int, str]] = []
        match_updates: list[tuple[int, str, int, int]] = []
        for top in part:
            tree = settle_tree(top, members.get(top, ()), per_top.get(top, []))
            for key, order in tree.order.items():
                current = tree.current[key]
                if stored[key] != (order, current):
                    node_updates.append((order, int(current), key))
            for row, before in was_matched.get(top, ()):
                if (row in tree.matched) != before:
                    match_updates.append((int(row in tree.matched), *row))
        if node_updates:
            _many(conn, sql(f"UPDATE {n.sessions} SET node_order = ?, node_current = ? WHERE key = ?"), node_updates)
        if match_updates:
            _many(conn, sql(f"UPDATE {n.usage} SET matched = ? WHERE key = ? AND seq = ? AND n = ?"), match_updates)
    # the keys now held by more than one transcript: written rows start unshared, removed ones were shared
    fresh, gone = set(added), set(removed)
    shared: set[str] = set()
    for part in _chunks(sorted(fresh | gone)):
        found = conn.execute(sql(f"SELECT dedup FROM {n.usage} WHERE dedup IN ({', '.join('?' * len(part))}) "
                                 "GROUP BY dedup HAVING count(DISTINCT key) > 1"), list(part)).fetchall()
        shared.update(str(r[0]) for r in found)
    for flag, keys in ((1, sorted(shared)), (0, sorted(gone - shared))):
        for part in _chunks(keys):
            conn.execute(sql(f"UPDATE {n.usage} SET shared = ? WHERE shared <> ? AND dedup IN "
                             f"({', '.join('?' * len(part))})"), [flag, flag, *part])


def settle_copies(names: DerivedNames, conn: Any) -> int:
    """PostgreSQL: the ``shared`` flag of every usage row brought up to date at once, in the
    caller's transaction; the rows changed. :func:`settle` decides it among the rows its writer
    sees: under row-level security a role sees only its own, so a record two people's transcripts
    hold (a fork of another's session) is flagged by neither's write. A writer exempt from the
    policies (the tables' owner) sees every copy: its update settles them all (docs/team.md)."""
    n = names
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (n.usage,))
    # min <> max: more than one transcript, without count(DISTINCT …)'s sort of every group; only
    # the keys whose flag is wrong are joined back (a join of every key doubled the time)
    many = "min(key) <> max(key)"
    cur = conn.execute(f"UPDATE {n.usage} u SET shared = c.flag FROM (SELECT dedup, CASE WHEN {many} THEN 1 ELSE 0 "
                       f"END AS flag FROM {n.usage} WHERE dedup IS NOT NULL GROUP BY dedup HAVING ({many} AND "
                       f"min(shared) = 0) OR (NOT {many} AND max(shared) = 1)) c "
                       "WHERE u.dedup IS NOT NULL AND u.dedup = c.dedup AND u.shared <> c.flag")
    return int(cur.rowcount)


def _many(conn: Any, statement: str, rows: list[tuple[Any, ...]]) -> None:
    if hasattr(conn, "executemany"):  # sqlite3
        conn.executemany(statement, rows)
        return
    with conn.cursor() as cur:
        cur.executemany(statement, rows)
