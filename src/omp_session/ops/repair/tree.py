"""Repairs to the entries and their tree: records omp cannot load, repeated records, repeated
ids, parents that point nowhere and parent cycles (spec S1.4.6, S1.4.7, S1.6, S6, S14 V6/V7/V11/V12).

The rules, and why each is the one the evidence supports, are in ``docs/repair.md``.
"""

from __future__ import annotations

import hashlib
from itertools import repeat
from operator import ge
from typing import Any

from omp_session.js import codec

from .model import Fix
from .records import Rec, Records

__all__ = ["break_cycles", "drop_duplicates", "fresh_ids", "omp_crash_reason", "quarantine_crashers",
           "reattach_orphans", "tree_is_clean"]

# entry fields that name another entry by id: re-pointed along with parentId
_REFS = ("parentId", "targetId", "firstKeptEntryId", "providerReplayThroughEntryId")


def _js_truthy(v: Any) -> bool:
    return not (v is None or v is False or v is codec.UNDEFINED or v == "" or
                (isinstance(v, int | float) and not isinstance(v, bool) and (v == 0 or v != v)))


def _missing(v: Any) -> bool:
    return v is None or v is codec.UNDEFINED


def omp_crash_reason(value: Any) -> str | None:
    """Why omp 18.2.3 throws on this entry when opening the file or building its context, or None.

    Only shapes that make omp throw are listed: they cannot be kept, and inventing the missing
    data would put words in the session's mouth.
    """
    if value is None:
        return "a null record: omp's open() throws (TypeError on entry.type)"
    if not isinstance(value, dict):
        return "not a JSON object, so not a session record (omp keeps it as an entry without id; as the " \
               "last record it empties the resumed context)"
    kind = value.get("type")
    if kind == "message":
        message = value.get("message")
        if not isinstance(message, dict):
            return "a message entry without a message object: omp's open() throws"
        role = message.get("role")
        if role == "assistant":
            if _usage_throws(message.get("usage")):
                return "an assistant message whose usage has no cost: omp's open() throws (usage.cost.total)"
            content = message.get("content")
            if not isinstance(content, list | str):
                return "an assistant message without content: omp's buildSessionContext() throws"
            if isinstance(content, str) and message.get("stopReason") == "error":
                # an error turn's content is checked with content.some(): a string has no .some
                return "an error turn whose content is a string: omp's buildSessionContext() throws"
        elif role == "toolResult" and message.get("toolName") == "task":
            details = message.get("details")
            usage = details.get("usage") if isinstance(details, dict) else None
            if isinstance(usage, dict | list) and _usage_throws(usage):
                return "a task result whose usage has no cost: omp's open() throws (usage.cost.total)"
    elif kind == "model_usage":
        if _usage_throws(value.get("usage")):
            return "a model_usage entry whose usage has no cost: omp's open() throws (usage.cost.total)"
    elif kind == "ttsr_injection" and not isinstance(value.get("injectedRules"), list | str):
        return "a ttsr_injection without injectedRules: omp's buildSessionContext() throws"
    return None


def _usage_throws(usage: Any) -> bool:
    """``usage.cost.total`` throws when usage is truthy and its ``cost`` is null or undefined."""
    if not _js_truthy(usage) and not isinstance(usage, dict | list):
        return False
    cost = usage.get("cost", codec.UNDEFINED) if isinstance(usage, dict) else codec.UNDEFINED
    return _missing(cost)


def quarantine_crashers(rs: Records, first: int) -> None:
    """Move records omp cannot load (from index ``first`` on) to the quarantine."""
    kept: list[Rec] = rs.recs[:first]
    safe = rs.safe
    for rec in rs.recs[first:]:
        reason = None if rec.proven(safe) or rec.cannot_crash() else omp_crash_reason(rec.value)
        if reason is None:
            kept.append(rec)
            continue
        rs.quarantine(rec.line, rec.offset, rec.raw, reason)
        rs.fixes.append(Fix("quarantined-record", reason, line=rec.line, offset=rec.offset,
                            entry_id=_id(rec.value)))
    rs.recs = kept


def _id(value: Any) -> str | None:
    v = value.get("id") if isinstance(value, dict) else None
    return v if isinstance(v, str) and v else None


def drop_duplicates(rs: Records) -> None:
    """A record written twice (same id, same content) is kept once: the first copy, unless a copy
    is the file's last record, because omp resumes from the last record (S6.1)."""
    recs = rs.recs
    copies: dict[tuple[bytes, int], list[int]] = {}
    # a copy written after a different entry reused its id is not a repeat: omp's index moved to
    # that other entry in between and back to this copy after it, so fresh_ids must tell them apart
    turn: dict[str, tuple[bytes, int]] = {}
    # only a record whose id comes back can have a copy: the others are never serialised, which
    # matters for a record nested 100,000 levels deep (the exact serialiser is pure Python)
    named = [own for rec in recs[1:] if (own := rec.own_id()) is not None]
    if len(set(named)) == len(named):
        return  # no id comes back: nothing to compare (sets and lists built in C, not a step each)
    once: set[str | None] = set()
    again: set[str | None] = set()
    for own in named:
        (again if own in once else once).add(own)
    once.clear()
    for i, rec in enumerate(recs):
        own = rec.own_id()
        if i and own is not None and own in again:
            line = codec.dumps_line(rec.value)
            prev = turn.get(own)
            n = 0 if prev is None else prev[1] if prev[0] == line else prev[1] + 1
            turn[own] = (line, n)
            copies.setdefault((line, n), []).append(i)
    drop: set[int] = set()
    last = len(recs) - 1
    for where in copies.values():
        if len(where) < 2:
            continue
        keep = last if where[-1] == last else where[0]
        for i in where:
            if i != keep:
                drop.add(i)
                rec = recs[i]
                kept_line = recs[keep].line
                rs.fixes.append(Fix("duplicate-record", f"the same record is also on line {kept_line}; this "
                                    "copy was removed", line=rec.line, offset=rec.offset, entry_id=rec.own_id()))
    if drop:
        rs.recs = [rec for i, rec in enumerate(recs) if i not in drop]


def _fresh(old: str, salt: int, taken: set[str]) -> str:
    """A deterministic new 8-hex id (omp's id shape), so the same file always gets the same plan."""
    n = 0
    while True:
        candidate = hashlib.sha256(f"{old}\0{salt}\0{n}".encode()).hexdigest()[:8]
        if candidate not in taken:
            return candidate
        n += 1


def fresh_ids(rs: Records) -> None:
    """Give each later entry that reuses an id a fresh one, and re-point the references written
    after it. An append-only file was written in order, and once the later entry existed omp's
    index resolved the id to it (S1.6.1), so a reference after it meant it; one before it can
    only have meant the earlier entry."""
    recs = rs.recs
    owns = [rec.own_id() for rec in recs]
    later = [i for i in owns[1:] if i is not None]
    if len(set(later)) == len(later):
        return  # no id is reused: nothing gets a fresh id, so no reference is re-pointed
    taken = {i for i in owns if i is not None}
    current: dict[str, str] = {}  # original id -> id of the latest entry that had it so far
    for k, rec in enumerate(recs[1:], 1):
        value = rec.value
        if not isinstance(value, dict):
            continue
        for key in _REFS:
            ref = value.get(key)
            if isinstance(ref, str) and current.get(ref, ref) != ref:
                value = rec.own()
                value[key] = current[ref]
                rec.dirty = True
                rs.fixes.append(Fix("repointed-reference", f"{key} {ref!r} re-pointed to {current[ref]!r}: it was "
                                    f"written after the entry that reused id {ref!r}", line=rec.line,
                                    offset=rec.offset, entry_id=_id(value)))
        own = _id(value)
        if own is None:
            continue
        if own in current:
            new = _fresh(own, k, taken)
            taken.add(new)
            value = rec.own()
            value["id"] = new
            rec.dirty = True
            current[own] = new
            rs.fixes.append(Fix("duplicate-id", f"id {own!r} was already used by an earlier entry; this entry "
                                f"now has the fresh id {new!r}", line=rec.line, offset=rec.offset, entry_id=own))
        else:
            current[own] = own


def reattach_orphans(rs: Records) -> None:
    """A parentId that names no entry: re-attach to the removed parent's own parent when the
    removed record (quarantined, or dropped as malformed) says what that was; else keep as a
    root (omp treats it as one, S1.6.2) and report it."""
    present = {i for rec in rs.recs if (i := rec.own_id()) is not None}
    for rec in rs.recs[1:]:
        parent = rec.parent()
        if not isinstance(parent, str) or not parent or parent in present:
            continue
        value = rec.value
        if not isinstance(value, dict) or parent == value.get("id"):
            continue
        target: str | None = parent
        seen: set[str] = set()
        while isinstance(target, str) and target not in present and target in rs.evidence and target not in seen:
            seen.add(target)
            target = rs.evidence[target]
        if target is None or (isinstance(target, str) and target in present):
            value = rec.own()
            value["parentId"] = target
            rec.dirty = True
            where = "a root (its removed parent was one)" if target is None else repr(target)
            rs.fixes.append(Fix("reattached-parent", f"parent {parent!r} was removed (quarantined); re-attached "
                                f"to {where}, the removed record's own parent", line=rec.line,
                                offset=rec.offset, entry_id=_id(value)))
        else:
            rs.fixes.append(Fix("missing-parent", f"parent {parent!r} is not in the file and nothing says where "
                                "it hung; kept as a separate root (as omp treats it)", line=rec.line,
                                offset=rec.offset, entry_id=_id(value), changes=False))


def _latest(owns: list[str | None]) -> dict[str | None, int]:
    """Each id of ``owns`` (the entries' ids, the header left out) to its latest record's index in
    ``rs.recs``; no key None. (dict() from pairs keeps the last, as assigning in turn does.)"""
    pos: dict[str | None, int] = dict(zip(owns, range(1, len(owns) + 1), strict=True))
    pos.pop(None, None)
    return pos


def tree_is_clean(rs: Records) -> bool:
    """True when :func:`drop_duplicates`, :func:`fresh_ids`, :func:`reattach_orphans` and
    :func:`break_cycles` would each leave ``rs`` as it is (no id comes back, every parent named is
    an entry written before its child): what every file omp wrote looks like,
    told from one list of ids, one of parents and one map, not four passes of their own (a third
    of a second at 1 GB). False may still be such a file: the steps then look for themselves."""
    recs = rs.recs
    if len(recs) < 2:
        return False
    owns = [rec.own_id() for rec in recs[1:]]
    pos = _latest(owns)
    if len(pos) != len(owns) - owns.count(None):
        return False  # an id comes back
    # the parent each entry names (None for none: null, absent, not a string or empty)
    named = [p if isinstance(p := rec.parent(), str) and p else None for rec in recs[1:]]
    if sum(map(pos.__contains__, named)) + named.count(None) != len(named):
        return False  # a parent that is no entry (nothing, or the header: left to the steps)
    # each parent an entry before its child
    return not any(map(ge, map(pos.get, named, repeat(-1)), range(1, len(recs))))


def break_cycles(rs: Records) -> None:
    """Cut every parent cycle at the entry written first: in an append-only file a parent comes
    before its child, so the link from that entry to a later one is the wrong one (S1.6.3)."""
    recs = rs.recs
    pos = _latest([rec.own_id() for rec in recs[1:]])
    at = list(pos.values())
    # the parent each of them names (None for no string: None is no key of pos, so those are -1)
    named = [p if isinstance(p := recs[k].parent(), str) else None for k in at]
    if not any(map(ge, map(pos.get, named, repeat(-1)), at)):
        return  # every parent comes before its child: a walk up always ends, no cycle to look for
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    for start in list(pos):
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in pos and state.get(node, 0) == 0:
            state[node] = 1
            walk.append(node)
            parent = recs[pos[node]].parent()
            node = parent if isinstance(parent, str) and parent else None
        if node is not None and state.get(node) == 1:
            cycle = walk[walk.index(node):]
            cut = min(cycle, key=pos.__getitem__)
            rec = recs[pos[cut]]
            value = rec.own()
            old = value.get("parentId")
            value["parentId"] = None
            rec.dirty = True
            what = "its own parent" if old == cut else f"parent {old!r} leads back to it"
            rs.fixes.append(Fix("parent-cycle", f"{what} (a cycle of {len(cycle)}); made a root, the cycle's "
                                "first entry in the file", line=rec.line, offset=rec.offset, entry_id=cut))
        for n in walk:
            state[n] = 2
