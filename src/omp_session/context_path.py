"""The model context of a large session without decoding its whole path.

omp's ``buildSessionContext`` walks the entire leaf path, but the LLM context only *emits* the
entries after the latest compaction (or reset boundary); the rest of the path only feeds the
settings pass, which reads each entry's ``type`` and, for messages, ``role``/``provider``/
``model``. The reader already has those from its envelope scan, so entries outside the emitted
window are handed to the context builder as small stubs holding just those fields. The result is
identical (tests compare both ways on every generated corpus); the cost is proportional to the
window, not the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import context as _context
from .codec import UNDEFINED
from .reader import MessageHead

if TYPE_CHECKING:
    from .session import Session

__all__ = ["build_context"]

def _stub(head: MessageHead, cache: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    """A shared stand-in for a message entry outside the window: type and message head only.

    It has no id on purpose: ids outside the window are never compared with anything but the
    string ids that ``_window`` resolved to positions inside it (see ``build_context``).
    """
    stub = cache.get(id(head))
    if stub is None:
        role, provider, model = head.role, head.provider, head.model
        message: dict[str, Any] = {"role": role}
        if provider is not UNDEFINED:
            message["provider"] = provider
        if model is not UNDEFINED:
            message["model"] = model
        stub = cache[id(head)] = {"type": "message", "message": message}
    return stub


def _window(s: Session, path: Sequence[int], transcript: bool) -> set[int] | None:
    """Positions of ``path`` the builder may read beyond the settings pass; None = all of them."""
    types = s.types
    ci = ri = -1
    for pos, k in enumerate(path):
        t = types[k]
        if t == "compaction":
            ci = pos
        elif t == "reset_boundary":
            ri = pos
    n = len(path)
    if ri >= 0 and ri > ci:
        return set(range(ri + 1, n))
    if ci < 0:
        return None
    compaction = s.entry_at(path[ci])
    if not isinstance(compaction, dict):
        return None
    need = set(range(ci, n))
    ids = s.ids

    def position(target: Any, before: int) -> int:
        if type(target) is not str:
            return -1
        return next((p for p in range(before) if ids[path[p]] == target and type(ids[path[p]]) is str), -1)

    first_kept = compaction.get("firstKeptEntryId", UNDEFINED)
    through_id = compaction.get("providerReplayThroughEntryId", UNDEFINED)
    if type(first_kept) is not str or (through_id is not UNDEFINED and type(through_id) is not str):
        return None  # an absent/odd id is compared with every entry's id: decode them all
    kept = position(first_kept, ci)
    if _context._remote_compaction_payload(compaction) is None or transcript:
        if kept >= 0:
            need.update(range(kept, ci))
    else:
        through = position(through_id, ci)
        if through >= 0:
            need.update(range(through + 1, ci))
    details = compaction.get("details")
    if isinstance(details, dict) and details.get("kind") == "experimental-context-rollover":
        need.update(range(ri + 1, ci))
    if kept >= 0:
        need.add(kept)  # an Anthropic payload dates the summary from the first kept entry
    return need


def build_context(s: Session, *, transcript: bool, collapse_compacted_history: bool,
                  keep_dangling_tool_calls: bool, resolve_frame_data: Any = None) -> dict[str, Any]:
    """``buildSessionContext`` for a loaded session, decoding only what the result needs."""
    leaf = s.raw_leaf
    full = (transcript and not collapse_compacted_history) or type(leaf) is not str or not leaf
    start = None if full else s.index_of(leaf)
    if start is None:
        return _context.build_session_context(
            s.entries, leaf, s.by_id, transcript=transcript,
            collapse_compacted_history=collapse_compacted_history,
            keep_dangling_tool_calls=keep_dangling_tool_calls, resolve_frame_data=resolve_frame_data)
    path = s.path_indices(start)
    # Stand-ins carry no id, so only sessions whose ids are distinct strings use them: then no
    # id lookup of omp's can land on a stand-in (duplicates and id-less entries could).
    need = _window(s, path, transcript) if s.unique_string_ids else None
    entries = [s.entry_at(k) for k in path] if need is None else _compress(s, path, need)
    builder = _context._ContextBuilder(entries, transcript, collapse_compacted_history, keep_dangling_tool_calls,
                                       resolve_frame_data or _context._default_frame_data)
    return builder.build()


# Entry types whose fields the settings pass reads (S7.3) or the notes scan reads (S7.8).
_SETTINGS_TYPES = frozenset({"thinking_level_change", "model_change", "service_tier_change", "ttsr_injection",
                             "mode_change", "custom"})


def _type_stub(t: str, cache: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    stub = cache.get(t)
    if stub is None:
        stub = cache[t] = {"type": t}
    return stub


def _compress(s: Session, path: Sequence[int], need: set[int]) -> list[Any]:
    """The path with each run of stub-able messages reduced to its first and last assistant.

    Outside the window a user or toolResult message does nothing in the settings pass, and a run
    of assistants only sets ``models.default`` (inserted by the first, valued by the last), so the
    builder sees the same settings from the reduced path.
    """
    heads, types, decoded = s.journal.heads, s.types, s.journal.values
    cache: dict[Any, dict[str, Any]] = {}
    out: list[Any] = []
    first: MessageHead | None = None
    last: MessageHead | None = None

    def flush() -> None:
        nonlocal first, last
        if first is not None:
            out.append(_stub(first, cache))
            if last is not first and last is not None:
                out.append(_stub(last, cache))
        first = last = None

    for pos, k in enumerate(path):
        if pos not in need:
            t = types[k]
            if t == "message" and (k + 1) not in decoded:
                head = heads[k + 1]
                if head is not None:
                    role = head.role
                    if role == "assistant" and type(role) is str:
                        if first is None:
                            first = head
                        last = head
                        continue
                    if (role == "user" or role == "toolResult") and type(role) is str:
                        continue
            elif type(t) is str and t not in _SETTINGS_TYPES and t != "message":
                # read by type only outside the window (an earlier compaction also by its id)
                flush()
                out.append({"type": t, "id": s.ids[k]} if t == "compaction" else _type_stub(t, cache))
                continue
        flush()
        out.append(s.entry_at(k))
    flush()
    return out
