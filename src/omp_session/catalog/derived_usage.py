"""What ``stats`` needs of one transcript beyond its usage rows, derived with them (docs/team.md):
which rows are on the current branch, the header as ops/stats reads it, omp's
getUsageStatistics, and the entries' ids and parents that keep the current branch right as the
transcript grows.

The current branch (spec S6): from the last entry (the leaf) up through ``parentId`` links, as
ops/stats/report.py takes it from :class:`~omp_session.model.session.Session` (``branch_indices``),
plus the ``model_usage`` side calls whose parent is on it. Derived whole, it is the Session's
own. After an append it is walked again over the kept links (``links``: every entry's id and
parent, compressed), and the rows whose flag changed are listed: on a linear append none of the
old ones; when the conversation went back to an older entry (a branch switch), those of the
abandoned branch. A session whose entry ids are not distinct non-empty strings (or are made up
on every load: v1) keeps no links; it is derived again whole when it grows.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from omp_session.errors import ContextError
from omp_session.format.reader import Journal, scan_bytes
from omp_session.model.session import Session
from omp_session.model.tree import path_to
from omp_session.model.usage import usage_statistics
from omp_session.store.derived.tables import StatsFacts, UsageRow
from omp_session.store.derived.trees import MAX_DEPTH, SUFFIX

__all__ = ["Links", "TailUsage", "branch_flags", "stats_key", "tail_usage", "whole_usage"]

_UNKNOWN: Final = "(unknown)"  # ops/stats/group.py's key of a project without cwd or folder


def stats_key(key: str, root: str) -> bool:
    """A transcript ``stats`` reads under ``root``: a session ``<bucket>/<file>.jsonl``, or one
    in its artifacts folder (subagents, advisors, nested to MAX_DEPTH levels); hidden names left
    out, as the file search and ops/stats leave them out on disk."""
    if not key.startswith(root) or not key.endswith(SUFFIX):
        return False
    parts = key[len(root):].split("/")
    return 2 <= len(parts) <= MAX_DEPTH + 2 and not any(not p or p.startswith(".") for p in parts)


# ----- the links of a transcript's entries ---------------------------------------------------------


@dataclass
class Links:
    """Per entry (entry k is record k + 1): its id, its parent (``None``: none that a string id can
    name), whether it is a ``model_usage`` side call, whether it has usage rows."""

    ids: list[str]
    parents: list[str | None]
    side: set[int]
    rows: set[int]

    def encode(self) -> bytes:
        # a parent that is the entry just before (nearly all of them) is 0
        parents: list[Any] = [0 if k and p is not None and p == self.ids[k - 1] else p
                              for k, p in enumerate(self.parents)]
        # the standard json: an id may hold a lone surrogate (a valid JSON escape), which orjson refuses
        data = json.dumps([self.ids, parents, sorted(self.side), sorted(self.rows)], separators=(",", ":"))
        return zlib.compress(data.encode("ascii"), 1)

    @classmethod
    def decode(cls, data: bytes) -> Links:
        ids, parents, side, rows = json.loads(zlib.decompress(data))
        return cls(ids, [ids[k - 1] if p == 0 else p for k, p in enumerate(parents)], set(side), set(rows))


def branch_flags(links: Links) -> bytearray:
    """1 per entry on the current branch (root to the last entry) or hanging off it as a side call."""
    index = {x: k for k, x in enumerate(links.ids)}
    pidx = [index.get(p, -1) if p else -1 for p in links.parents]
    on = bytearray(len(pidx))
    for k in path_to(len(pidx) - 1 if pidx else None, pidx):
        on[k] = 1
    for k in links.side:
        if not on[k] and pidx[k] >= 0 and on[pidx[k]] == 1:
            on[k] = 2  # a side call: marked apart so that it never makes a later side call's parent
    return bytearray(1 if v else 0 for v in on)


def _plain_parent(p: Any) -> str | None:
    return p if isinstance(p, str) and p else None


# ----- omp's getUsageStatistics, summed on from where it stood --------------------------------------


def _seeded(seed: dict[str, Any], values: Sequence[Any]) -> dict[str, Any] | None:
    """getUsageStatistics of the entries summed into ``seed`` and then ``values``: a sum that is
    still a plain number seeds the next one exactly (0 + x == x), as catalog/summaries.py does."""
    orchestration = {"input": seed["orchestrationInput"], "output": seed["orchestrationOutput"],
                     "cacheRead": seed["orchestrationCacheRead"]}
    first = {"type": "model_usage", "usage": {
        **{k: seed[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")},
        "cost": {"total": seed["cost"]}, "orchestration": orchestration, "premiumRequests": seed["premiumRequests"]}}
    try:
        return usage_statistics([first, *values])
    except ContextError:
        return None


def _dump_usage(usage: dict[str, Any] | None) -> str | None:
    return None if usage is None else json.dumps(usage, ensure_ascii=True, allow_nan=True)


def _seedable(usage: dict[str, Any]) -> bool:
    return all(v.__class__ in (int, float) for v in usage.values())


# ----- a transcript derived whole ------------------------------------------------------------------


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _ascii(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True)


def whole_usage(key: str, j: Journal, body: bytes, offset: int, n: int, values: Sequence[Any],
                usage: Sequence[UsageRow], plain: Any) -> tuple[list[UsageRow], StatsFacts]:
    """The usage rows with their current-branch flags, and the stats facts, of a transcript
    derived whole: its first ``n`` records (``values``, decoded; ``j`` their journal unless it
    holds more, up to ``offset`` bytes of ``body``). ``plain`` cleans a text a database keeps.
    Call after everything else read ``j``: the Session takes over its columns."""
    s = Session(j if len(j) == n else scan_bytes(body[:offset]))
    try:
        path = set(s.branch_indices())
        pidx = s.parent_index

        def on(k: int) -> bool:
            value = values[k + 1]
            side = isinstance(value, dict) and value.get("type") == "model_usage" and pidx[k] in path
            return k in path or side

        rows = [replace(u, on_branch=on(u.seq - 1)) for u in usage]
        header = s.header if isinstance(s.header, dict) else {}
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        created = _str(header.get("timestamp"))
        project = cwd or os.path.basename(os.path.dirname(key)) or _UNKNOWN
        try:
            omp: dict[str, Any] | None = usage_statistics(s.entry_at(k) for k in range(len(s)))
        except ContextError:
            omp = None
        links = None
        if s.unique_string_ids and not s.ids_made_up:
            ids = [str(x) for x in s.ids]
            side = {k for k in range(len(ids)) if isinstance(values[k + 1], dict)
                    and values[k + 1].get("type") == "model_usage"}
            links = Links(ids, [_plain_parent(p) for p in s.parent_ids], side, {u.seq - 1 for u in usage}).encode()
        facts = StatsFacts(_ascii([_str(header.get("id")), s.get_session_name(), cwd, created]),
                           plain(created or ""), _ascii(project), _dump_usage(omp), links)
        return rows, facts
    finally:
        s.close()


# ----- what an append adds ---------------------------------------------------------------------------


@dataclass
class TailUsage:
    usage: list[UsageRow]  # the new rows, with their flags
    flips: list[tuple[int, bool]]  # (seq, on_branch) of earlier rows whose flag changed
    facts: StatsFacts


def tail_usage(facts: StatsFacts, first_seq: int, values: Sequence[Any], usage: Sequence[UsageRow]) -> TailUsage | str:
    """The flags of the rows an append adds (``values``: its records, from record ``first_seq``),
    the earlier rows whose flag changed, and the stats facts after it; or why the transcript
    must be derived again whole."""
    if facts.links is None:
        return "its entry ids are not distinct strings (or made up on every load)"
    omp: dict[str, Any] | None = None
    if facts.omp_usage is not None:
        seed = json.loads(facts.omp_usage)
        if not _seedable(seed):
            return "omp's usage totals are not numbers"
        omp = _seeded(seed, values)
    links = Links.decode(facts.links)
    if len(links.ids) != first_seq - 1:
        return "its entry links do not match"
    before = branch_flags(links)
    known = set(links.ids)
    for i, value in enumerate(values):
        eid = value.get("id") if isinstance(value, dict) else None
        if not isinstance(eid, str) or not eid or eid in known:
            return "an appended entry id is not a new distinct string"
        known.add(eid)
        links.ids.append(eid)
        links.parents.append(_plain_parent(value.get("parentId")))
        if value.get("type") == "model_usage":
            links.side.add(first_seq - 1 + i)
    after = branch_flags(links)
    flips = [(k + 1, bool(after[k])) for k in sorted(links.rows) if after[k] != before[k]]
    rows = [replace(u, on_branch=bool(after[u.seq - 1])) for u in usage]
    links.rows.update(u.seq - 1 for u in usage)
    return TailUsage(rows, flips, replace(facts, omp_usage=_dump_usage(omp), links=links.encode()))
