"""The validator's tree checks (spec S14 V6, V7, V8, V10; S1.6 and S6 for what omp does).

They work on the id/parent columns the reader already holds and on the few references the
streaming pass collected, so no entry is decoded here except the two records of a duplicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session
from omp_session.model.tree import js_key, js_truthy

from .entries import KNOWN_TYPES, Collected, call_key
from .report import Report, show

__all__ = ["check_tree"]

_ANCESTOR_STEPS = 100_000  # a tool result is normally a few entries below its call


def check_tree(s: Session, report: Report, got: Collected) -> None:
    j = s.journal
    ids, parents = s.ids, s.parent_ids

    def at(k: int) -> int:
        return j.starts[k + 1]

    # a v1 file holds no ids: the ones migration made up are random, so they name nothing on disk
    made_up = s.ids_made_up

    def add(k: int, code: str, message: str) -> None:
        report.add(code, message, offset=at(k), entry_id=None if made_up else ids[k])

    if not s.unique_string_ids:
        _duplicates(s, report)
    pidx = s.parent_index
    for k in [k for k, p in enumerate(pidx) if p < 0]:
        parent = parents[k]
        if js_truthy(parent) and (type(parent) is str or not isinstance(parent, dict | list)):
            add(k, "parent-missing", f"parentId {parent!r} names no entry: omp treats "
                "this entry as a root, cut off from the conversation before it")
    if s.unique_string_ids and not s._branch_points()[1]:
        pass  # every parent precedes its child: parent links cannot loop
    else:
        _cycles(s, pidx, add)
    _references(s, got, add)
    _tool_pairs(s, pidx, got, add)
    _leaf(s, got, add)


def _duplicates(s: Session, report: Report) -> None:
    j = s.journal
    first: dict[Any, int] = {}
    for k, entry_id in enumerate(s.ids):
        if not isinstance(entry_id, str) or not entry_id:
            continue  # reported per entry as entry-id-invalid
        key = js_key(entry_id)
        if key not in first:
            first[key] = k
            continue
        earlier = first[key]
        line = j.line_of(j.starts[earlier + 1])
        if j.raw(k + 1) == j.raw(earlier + 1):
            report.add("duplicate-record", f"the same record as line {line}, written "
                       "twice: omp resolves the id to this copy", offset=j.starts[k + 1], entry_id=entry_id)
        else:
            report.add("duplicate-id", f"id {entry_id!r} is also used at line {line}: omp's "
                       "lookups and paths resolve to this later entry and lose the earlier one",
                       offset=j.starts[k + 1], entry_id=entry_id)


def _cycles(s: Session, pidx: Sequence[int], add: Any) -> None:
    """Parent links that loop (V7): omp's path walks stop at the repeat, its tree drops the loop."""
    state = bytearray(len(pidx))  # 0 new, 1 on the current walk, 2 done
    for start in range(len(pidx)):
        if state[start]:
            continue
        walk = []
        k = start
        while k >= 0 and not state[k]:
            state[k] = 1
            walk.append(k)
            k = pidx[k]
        if k >= 0 and state[k] == 1:
            if pidx[k] == k:
                add(k, "self-parent", "the entry is its own parent: omp treats it as a root")
            else:
                add(k, "parent-cycle", "parent links loop back to this entry: omp's "
                    "branch stops at the repeat and its tree leaves the loop out")
        for w in walk:
            state[w] = 2


def _references(s: Session, got: Collected, add: Any) -> None:
    for k, name, ref in got.refs:
        target = s.index_of(ref) if ref is not UNDEFINED else None
        if name == "targetId":
            if target is None:
                add(k, "label-target-missing", f"label targetId {show(ref)} names no entry")
            continue
        if target is None:
            add(k, "compaction-ref-missing", f"compaction {name} {show(ref)} names no entry: "
                "the compaction keeps no earlier messages")
        elif not s.is_on_path(target, k):
            add(k, "compaction-ref-off-path", f"compaction {name} {show(ref)} is not on the "
                "compaction's own branch: the compaction keeps no earlier messages")


def _tool_pairs(s: Session, pidx: Sequence[int], got: Collected, add: Any) -> None:
    answered: set[Any] = set()
    targets: dict[Any, list[int] | set[int]] = {}
    calls_of = got.calls.get
    for k, call_id in got.results:
        key = call_id if type(call_id) is str else call_key(call_id)
        answered.add(key)
        calls = calls_of(key)
        if calls is not None:
            # nearly always the result's parent made the call (checked first: a step, no walk)
            if len(calls) == 1 and pidx[k] == calls[0]:
                continue
            if key not in targets:
                targets[key] = calls if len(calls) < 8 else set(calls)
        if calls is None or not _reaches(pidx, k, targets[key]):
            add(k, "tool-result-orphan", f"a toolResult for call {show(call_id)} that no "
                "toolCall on its branch made")
    children = _has_children(pidx)
    for key, calls in got.calls.items():
        if key not in answered:
            for c in calls:
                if children[c]:
                    add(c, "tool-call-dangling", f"tool call {show(key)} has no result although "
                        "the branch goes on: omp strips the call from the context")


def _reaches(pidx: Sequence[int], k: int, targets: list[int] | set[int]) -> bool:
    seen = 0
    while k >= 0 and seen < _ANCESTOR_STEPS:
        if k in targets:
            return True
        nxt = pidx[k]
        if nxt == k:
            return False
        k = nxt
        seen += 1
    return False


def _has_children(pidx: Sequence[int]) -> bytearray:
    out = bytearray(len(pidx))
    for p in pidx:
        if p >= 0:
            out[p] = 1
    return out


def _leaf(s: Session, got: Collected, add: Any) -> None:
    """V10: the last record is where omp resumes, whatever it is (S6.1)."""
    n = len(s)
    if not n or s.header is None:
        return
    k = n - 1
    kind = s.types[k]
    if not got.last_is_object:
        add(k, "leaf-not-message", "the last record is not an object: omp resumes on no "
            "entry and the context is empty")
    elif kind == "label" or (isinstance(kind, str) and kind not in KNOWN_TYPES and kind != "session"):
        add(k, "leaf-not-message", f"the last record is a {kind!r} entry: omp resumes there")
    elif kind == "model_usage" and n > 1 and s.parent_ids[k] != s.ids[k - 1]:
        add(k, "leaf-not-message", "the last record is a model_usage entry on another branch: "
            "omp resumes on that side branch and the context loses what came after its parent")
