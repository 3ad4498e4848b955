"""The model context of a large session without decoding its whole path.

omp's ``buildSessionContext`` walks the entire leaf path, but the LLM context only *emits* the
entries after the latest compaction (or reset boundary); the rest of the path only feeds the
settings pass, which reads each entry's ``type`` and, for messages, ``role``/``provider``/
``model``. The reader already has those from its envelope scan, so entries outside the emitted
window are handed to the context builder as small shared stand-ins holding just those fields,
and a run of plain messages shrinks to the two assistants that decide ``models.default``. The
result is identical (``tests/test_context_path.py`` compares both ways on every generated
corpus kind); the cost is proportional to the window and the number of branch points.

The fast path needs: distinct string ids (a stand-in has no id, so no id lookup of omp's may land
on one), parents that precede their children (the path is then a few runs of consecutive
entries), and no migration (the envelope would be stale). Anything else decodes the whole path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from omp_session.format.reader import MessageHead
from omp_session.js.codec import UNDEFINED

from . import context as _context
from .omp_version import has_s20

__all__ = ["PathSource", "build_context"]


class PathSource(Protocol):
    """What the fast path reads of a :class:`~omp_session.model.session.Session` (which passes
    itself in; naming the protocol here, not the class, keeps the two modules out of a cycle)."""

    journal: Any
    entries: Any
    by_id: Mapping[Any, Any]
    migrated: bool

    def entry_at(self, k: int) -> Any: ...
    def index_of(self, entry_id: Any) -> int | None: ...
    def path_indices(self, start: int) -> Sequence[int]: ...
    def path_runs(self, start: int) -> list[tuple[int, int]] | None: ...

    @property
    def ids(self) -> Sequence[Any]: ...
    @property
    def kinds(self) -> bytearray: ...
    @property
    def raw_leaf(self) -> Any: ...
    @property
    def types(self) -> Sequence[Any]: ...
    @property
    def unique_string_ids(self) -> bool: ...

# Entry types whose fields the settings pass (S7.3) or the notes scan (S7.8) reads.
_SETTINGS_TYPES = frozenset({"thinking_level_change", "model_change", "service_tier_change", "ttsr_injection",
                             "mode_change", "custom"})
_NOT_PLAIN = re.compile(rb"[\x02-\x04]")  # KIND_TYPED, KIND_OTHER, KIND_ODD
_TYPED = re.compile(rb"\x02")
_ASSISTANT = b"\x01"

Runs = list[tuple[int, int]]


def _message_stub(head: MessageHead, cache: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    stub = cache.get(id(head))
    if stub is None:
        message: dict[str, Any] = {"role": head.role}
        if head.provider is not UNDEFINED:
            message["provider"] = head.provider
        if head.model is not UNDEFINED:
            message["model"] = head.model
        stub = cache[id(head)] = {"type": "message", "message": message}
    return stub


def _type_stub(t: str, cache: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    stub = cache.get(t)
    if stub is None:
        stub = cache[t] = {"type": t}
    return stub


def _on_path(runs: Runs, k: int) -> bool:
    return any(a <= k <= b for a, b in runs)


def _window(s: PathSource, runs: Runs, transcript: bool, s20: bool = False) -> tuple[int, set[int]] | None:
    """Path entries the builder may read beyond the settings pass: those with index >= the first
    value, plus the second (single entries below it); None means all of them."""
    types, kinds = s.types, s.kinds
    ci = ri = -1
    for a, b in runs:
        for m in _TYPED.finditer(kinds, a, b + 1):
            t = types[m.start()]
            if t == "compaction":
                ci = m.start()
            elif t == "reset_boundary":
                ri = m.start()
    if ri >= 0 and ri > ci:
        return ri + 1, set()
    if ci < 0:
        return None
    compaction = s.entry_at(ci)
    if not isinstance(compaction, dict):
        return None
    first_kept = compaction.get("firstKeptEntryId", UNDEFINED)
    through_id = compaction.get("providerReplayThroughEntryId", UNDEFINED)
    if type(first_kept) is not str or (through_id is not UNDEFINED and type(through_id) is not str):
        return None  # an absent/odd id is compared with every entry's id: decode them all

    def before_ci(target: Any) -> int:
        k = s.index_of(target) if type(target) is str else None
        return k if k is not None and k < ci and _on_path(runs, k) else -1

    start, extra = ci, set()
    kept = before_ci(first_kept)
    if _context.remote_compaction_payload(compaction) is None or transcript:
        if kept >= 0:
            start = kept
        elif s20 and not transcript and first_kept == "":
            through = before_ci(through_id)  # S20.1.2: the provider replay tail is kept
            if through >= 0:
                start = through + 1
                extra.add(through)  # the builder finds the tail by this entry's id
    else:
        through = before_ci(through_id)
        if through >= 0:
            start = through + 1
    details = compaction.get("details")
    if isinstance(details, dict) and details.get("kind") == "experimental-context-rollover":
        start = min(start, ri + 1)
    if 0 <= kept < start:
        extra.add(kept)  # an Anthropic payload dates the summary from the first kept entry
    return start, extra


def _compress(s: PathSource, runs: Runs, start: int, extra: set[int]) -> list[Any]:
    """The path with each stretch of plain messages below ``start`` reduced to its first and last
    assistant: outside the window a user or toolResult message does nothing in the settings pass,
    and assistants only set ``models.default`` (inserted by the first, valued by the last)."""
    heads, types, kinds = s.journal.heads, s.types, s.kinds
    cache: dict[Any, dict[str, Any]] = {}
    out: list[Any] = []
    first = last = -1

    def assistants(lo: int, hi: int) -> None:
        nonlocal first, last
        at = kinds.find(_ASSISTANT, lo, hi)
        if at >= 0:
            if first < 0:
                first = at
            last = kinds.rfind(_ASSISTANT, lo, hi)

    def flush() -> None:
        nonlocal first, last
        if first >= 0:
            out.append(_message_stub(heads[first + 1], cache))
            if last != first:
                out.append(_message_stub(heads[last + 1], cache))
        first = last = -1

    def take(k: int) -> None:
        t = types[k]
        if k in extra or kinds[k] != 2 or t in _SETTINGS_TYPES:
            out.append(s.entry_at(k))
        else:  # read by type only outside the window (an earlier compaction also by its id)
            out.append({"type": "compaction", "id": s.ids[k]} if t == "compaction" else _type_stub(t, cache))

    for a, b in runs:
        stop = min(b + 1, start)
        cursor = a
        if cursor < stop:
            marks = [m.start() for m in _NOT_PLAIN.finditer(kinds, a, stop)]
            marks.extend(k for k in extra if a <= k < stop)
            for k in sorted(set(marks)):
                assistants(cursor, k)
                flush()
                take(k)
                cursor = k + 1
            assistants(cursor, stop)
        if b + 1 > start:
            flush()
            out.extend(s.entry_at(k) for k in range(max(a, start), b + 1))
    flush()
    return out


def build_context(s: PathSource, *, transcript: bool, collapse_compacted_history: bool,
                  keep_dangling_tool_calls: bool, resolve_frame_data: Any = None,
                  omp: str | None = None) -> dict[str, Any]:
    """``buildSessionContext`` for a loaded session, decoding only what the result needs."""
    leaf = s.raw_leaf
    full = (transcript and not collapse_compacted_history) or type(leaf) is not str or not leaf
    start = None if full else s.index_of(leaf)
    if start is None:
        return _context.build_session_context(
            s.entries, leaf, s.by_id, transcript=transcript,
            collapse_compacted_history=collapse_compacted_history,
            keep_dangling_tool_calls=keep_dangling_tool_calls, resolve_frame_data=resolve_frame_data, omp=omp)
    runs = s.path_runs(start) if s.unique_string_ids and not s.migrated else None
    s20 = omp is not None and has_s20(omp)
    window = _window(s, runs, transcript, s20) if runs is not None else None
    if runs is None or window is None:
        entries = [s.entry_at(k) for k in s.path_indices(start)]
    else:
        entries = _compress(s, runs, *window)
    builder = _context.ContextBuilder(entries, transcript, collapse_compacted_history, keep_dangling_tool_calls,
                                       resolve_frame_data or _context.default_frame_data, s20=s20)
    return builder.build()
