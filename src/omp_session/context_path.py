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

from typing import TYPE_CHECKING, Any

from . import context as _context
from .codec import UNDEFINED

if TYPE_CHECKING:
    from .session import Session

__all__ = ["build_context"]

# Message roles whose entries the builder reads only through role/provider/model outside the
# emitted window. Other roles (custom, bashExecution, ...) are decoded: they are few, and some
# are inspected (user-request detection).
_STUB_ROLES = frozenset({"user", "assistant", "toolResult"})


def _stub(s: Session, k: int) -> dict[str, Any]:
    head = s.journal.heads[k + 1]
    assert head is not None
    role, provider, model = head
    message: dict[str, Any] = {"role": role}
    if provider is not UNDEFINED:
        message["provider"] = provider
    if model is not UNDEFINED:
        message["model"] = model
    entry: dict[str, Any] = {"type": "message", "id": s.ids[k]}
    parent = s.parent_ids[k]
    if parent is not UNDEFINED:
        entry["parentId"] = parent
    entry["message"] = message
    return entry


def _stubbable(s: Session, k: int) -> bool:
    if s.journal.is_decoded(k + 1) or s.types[k] != "message":
        return False
    head = s.journal.heads[k + 1]
    return head is not None and head[0] in _STUB_ROLES and isinstance(head[0], str)


def _window(s: Session, path: list[int], transcript: bool) -> set[int] | None:
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

    kept = position(compaction.get("firstKeptEntryId", UNDEFINED), ci)
    if _context._remote_compaction_payload(compaction) is None or transcript:
        if kept >= 0:
            need.update(range(kept, ci))
    else:
        through = position(compaction.get("providerReplayThroughEntryId", UNDEFINED), ci)
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
    need = _window(s, path, transcript)
    entries = [s.entry_at(k) if need is None or pos in need or not _stubbable(s, k) else _stub(s, k)
               for pos, k in enumerate(path)]
    builder = _context._ContextBuilder(entries, transcript, collapse_compacted_history, keep_dangling_tool_calls,
                                       resolve_frame_data or _context._default_frame_data)
    return builder.build()
