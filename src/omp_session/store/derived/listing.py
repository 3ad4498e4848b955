"""Listing sessions from the derived tables (``omp-session list --store``; docs/team.md).

The list facts of each session (``list_*``, ``first_message``, ``status``: what omp's listing
reads from its first 4 KB and last 32 KB) were derived with the rest (catalog/derived.py), so a
listing reads rows, never a session's bytes. Newest first, page by page on the ``root_folder,
modified`` index (``folder, modified`` for one bucket): ``list --limit 100`` reads about 100 rows
whatever the number of sessions. The exact order among equal times (omp's ``localeCompare`` on the path)
is the caller's (catalog/store_listing.py); here rows come by (``modified``, ``key``), descending.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .namespace import namespace_condition
from .tables import DerivedTables

__all__ = ["ListRow", "listed_in", "newest_first", "unlisted"]

_COLUMNS: Final = ("key", "list_id", "list_cwd", "list_title", "list_parent", "list_created", "modified",
                   "list_messages", "size", "first_message", "status")
_SELECT: Final = ", ".join(_COLUMNS)
_MAX_PAGE: Final = 5000


@dataclass(frozen=True, slots=True)
class ListRow:
    """One listed session: omp's ``SessionInfo`` fields as derived (times in ms since the epoch)."""

    key: str
    id: str
    cwd: str
    title: str | None
    parent: str | None
    created: int | None  # None: an Invalid Date
    modified: int
    messages: int
    size: int
    first_message: str
    status: str


def _row(r: Sequence[Any]) -> ListRow:
    key, id_, cwd, title, parent, created, modified, messages, size, first, status = r
    return ListRow(str(key), str(id_), str(cwd), title, parent, None if created is None else int(created),
                   int(modified), int(messages), int(size), str(first), str(status))


def _place(tables: DerivedTables, folder: str | None, root: str | None) -> tuple[list[str], list[Any]]:
    """Sessions directly in ``folder`` (one bucket), or directly in any bucket under ``root``:
    one equality on an indexed column, which the planner can estimate (a condition on a part of
    the key made PostgreSQL sort every row rather than walk the index)."""
    if folder is not None:
        return ["folder = ?"], [folder]
    assert root is not None and root.endswith("/")
    return ["root_folder = ?"], [root]


def newest_first(tables: DerivedTables, *, folder: str | None = None, root: str | None = None,
                 since_ms: int | None = None, until_ms: int | None = None, user: str | None = None,
                 host: str | None = None, page: int = 100, grow: bool = True) -> Iterator[ListRow]:
    """The sessions omp lists directly in ``folder`` (a bucket: the key up to its last ``/``), or
    in every bucket under ``root`` (a key prefix ending with ``/``), modified in [``since_ms``,
    ``until_ms``) and of the namespace's ``user``/``host`` (store.derived.namespace); newest
    first, fetched ``page`` rows at a time (``grow``: doubling up to 5,000) while the caller reads
    on."""
    where, args = _place(tables, folder, root)
    where.append("list_id IS NOT NULL")
    if since_ms is not None:
        where.append("modified >= ?")
        args.append(since_ms)
    if until_ms is not None:
        where.append("modified < ?")
        args.append(until_ms)
    ns, ns_args = namespace_condition(tables.dialect, "namespace", user=user, host=host)
    where += ns
    args += ns_args
    after: tuple[int, str] | None = None
    size = max(1, page)
    while True:
        keyset = " AND (modified < ? OR (modified = ? AND key < ?))" if after is not None else ""
        more = [after[0], after[0], after[1]] if after is not None else []
        rows = tables.rows(f"SELECT {_SELECT} FROM {tables.names.sessions} WHERE {' AND '.join(where)}{keyset} "
                           f"ORDER BY modified DESC, key DESC LIMIT {size}", [*args, *more], "listing sessions")
        for r in rows:
            yield _row(r)
        if len(rows) < size:
            return
        last = rows[-1]
        after = (int(last[6]), str(last[0]))
        if grow:
            size = min(2 * size, _MAX_PAGE)


def listed_in(tables: DerivedTables, folders: Sequence[str]) -> list[ListRow]:
    """The sessions omp lists directly in any of ``folders`` (a parent session's artifacts
    folder holds its subagents' transcripts), advisors' left out, by key."""
    d = tables.names.sessions
    # an advisor's transcript is not a subagent's (the file listing passes over it too)
    cond = "list_id IS NOT NULL AND substr(key, length(folder) + 2, 9) <> '__advisor'"
    if tables.dialect == "postgres":
        # one index lookup per folder, whatever the statistics say (before the table is first
        # analysed, PostgreSQL reads every row for an IN list of 100)
        rows = tables.rows(f"SELECT s.* FROM unnest(?::text[]) AS f(folder) CROSS JOIN LATERAL (SELECT {_SELECT} "
                           f"FROM {d} WHERE folder = f.folder AND {cond} OFFSET 0) s", [list(folders)],
                           "listing subagent sessions")
    else:
        rows = []
        for at in range(0, len(folders), 500):  # SQLite allows 999 parameters in older builds
            chunk = folders[at:at + 500]
            rows += tables.rows(f"SELECT {_SELECT} FROM {d} WHERE folder IN ({', '.join('?' * len(chunk))}) "
                                f"AND {cond}", chunk, "listing subagent sessions")
    return sorted((_row(r) for r in rows), key=lambda r: r.key)


def unlisted(tables: DerivedTables, *, folder: str | None = None, root: str | None = None) -> list[str]:
    """The derived sessions directly in ``folder`` (or in any bucket under ``root``) that omp's
    listing passes over (no session header in the first 4 KB, or a record its scan throws on)."""
    where, args = _place(tables, folder, root)
    rows = tables.rows(f"SELECT key FROM {tables.names.sessions} WHERE list_id IS NULL AND {' AND '.join(where)} "
                       "ORDER BY key", args, "listing sessions")
    return [str(r[0]) for r in rows]
