"""What omp derives from a session's entries: the model/transcript context and usage totals.

:func:`build_session_context` reproduces omp 18.2.3's ``buildSessionContext``
(spec S7) and :func:`usage_statistics` its ``getUsageStatistics`` (S13.1),
including how both behave on damaged or oddly typed entries: values are read
with JavaScript semantics (truthiness, ``??``, strict equality, ``String()``),
and where omp throws a ``TypeError`` we raise :class:`ContextError`.

Entries are the parsed JSON records in file order (any JSON type). They are
never mutated; stored message objects are returned as they are (shared), and
only messages omp rewrites are copied (shallowly), as omp does.

JavaScript ``undefined`` is the codec's :data:`UNDEFINED` (re-exported here): a
dict key holding it counts as absent, and a leaf that is ``UNDEFINED`` is not
the same as a ``None`` (null) leaf -- see :func:`build_session_context`.
Output dicts never contain it: keys whose value would be ``undefined`` are
left out, as ``JSON.stringify`` would. Numbers omp computes (message
timestamps, usage sums) are Python numbers; NaN stays ``float('nan')``
(``null`` in omp's JSON).

Other public helpers: :func:`leaf_after_load`, :func:`branch_path`,
:func:`build_id_index`, :data:`UNDEFINED`, :data:`FrameDataResolver`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from omp_session.errors import ContextError, JSTypeError
from omp_session.js.codec import UNDEFINED
from omp_session.js.date import to_iso
from omp_session.js.value import (
    MISSING,
    get,
    is_number,
    is_record,
    is_undef,
    iterate,
    js_key,
    ms,
    nullish,
    put,
    strict_eq,
    truthy,
    with_js_key_order,
)

from .context_messages import (
    Emitter,
    anthropic_compaction_payload,
    coerce_service_tier,
    compaction_summary,
    is_turn_start_entry,
    is_user_request_entry,
    remote_compaction_payload,
)
from .context_notes import CONTEXT_NOTES_TYPE, context_notes, render_context_notes
from .jsstring import date_ms, describe, property_key, template_string
from .omp_version import has_s20
from .snapcompact import (
    SNAP_FRAME_BUDGET,
    FrameDataResolver,
    blob_frame_resolver,
    default_frame_data,
    history_blocks,
    is_crash_risk_legacy_archive,
    preserved_archive,
)
from .usage import usage_statistics

__all__ = [
    "UNDEFINED",
    "ContextBuilder",
    "ContextError",
    "FrameDataResolver",
    "blob_frame_resolver",
    "branch_path",
    "build_id_index",
    "build_session_context",
    "default_frame_data",
    "leaf_after_load",
    "remote_compaction_payload",
    "usage_statistics",
]


# Old private names, still reached through this module (context_path.py builds the context itself).
remote_compaction_payload = remote_compaction_payload
default_frame_data = default_frame_data


# ---------------------------------------------------------------------------
# Indexes and paths


def build_id_index(entries: Iterable[Any]) -> dict[Any, Any]:
    """id -> entry like omp's index (the last entry with an id wins).

    Entries without a hashable id (non-objects, missing, list/dict ids) are
    left out: omp never looks those up by id.
    """
    index: dict[Any, Any] = {}
    for entry in entries:
        if isinstance(entry, dict):
            ident = entry.get("id", UNDEFINED)
            if nullish(ident) or isinstance(ident, dict | list):
                continue
            index[ident] = entry
    return index


def leaf_after_load(entries: Sequence[Any]) -> Any:
    """The leaf omp holds after loading ``entries``: the last record's ``id``.

    ``None`` when that id is JSON null (omp then builds an empty context) and
    for no entries; :data:`UNDEFINED` when the last record has no ``id`` or is
    not an object (omp then walks from the last record itself). A ``null``
    last record raises :class:`ContextError` (omp cannot open such a file).
    """
    if not entries:
        return None  # a fresh index holds null
    last = entries[-1]
    if last is None:
        raise ContextError("a null record cannot be loaded (omp throws reading its type)")
    ident = get(last, "id")
    return UNDEFINED if is_undef(ident) else ident


def _lookup(by_id: Mapping[Any, Any], entries: Sequence[Any], key: Any) -> Any:
    """``byId.get(key)`` with JS Map semantics on top of a Python dict."""
    try:
        found = by_id.get(key, MISSING)
    except TypeError:  # unhashable: a fresh object never equals another entry's id
        return MISSING
    if found is not MISSING:
        found_id = found.get("id", UNDEFINED) if isinstance(found, dict) else UNDEFINED
        if found_id.__class__ is str and key.__class__ is str:
            if found_id == key:
                return found
        elif js_key(found_id) == js_key(key):
            return found
    # Python merges keys JS keeps apart (True/1) and splits some it merges (ints
    # beyond 2**53 that round to the same double); resolve those by scanning.
    risky = isinstance(key, bool) or (is_number(key) and abs(key) > 2**53)
    if found is MISSING and not risky:
        return MISSING
    wanted = js_key(key)
    for entry in reversed(entries):
        if isinstance(entry, dict) and js_key(entry.get("id", UNDEFINED)) == wanted:
            return entry
    return MISSING


def branch_path(leaf: Any, by_id: Mapping[Any, Any], entries: Sequence[Any] = ()) -> list[Any]:
    """omp's ``getBranch(leaf)``: root-first path from ``leaf`` following ``parentId``.

    Stops at a null/unknown parent or a repeated id; a falsy or unknown
    ``leaf`` gives ``[]`` (no fallback to the last entry, unlike the context).
    ``entries`` is only needed to resolve ids Python and JavaScript compare
    differently (``True`` vs ``1``).
    """
    if not truthy(leaf):
        return []
    start = _lookup(by_id, entries, leaf)
    return _walk(start, by_id, entries) if start is not MISSING else []


def _walk(start: Any, by_id: Mapping[Any, Any], entries: Sequence[Any]) -> list[Any]:
    path: list[Any] = []
    seen: set[Any] = set()
    current = start
    while current is not MISSING:
        if current.__class__ is dict:  # the common case, inlined: this loop runs once per path entry
            ident = current.get("id", UNDEFINED)
            parent = current.get("parentId", UNDEFINED)
        elif truthy(current):
            ident = get(current, "id")
            parent = get(current, "parentId")
        else:
            break
        ident_key = ident if ident.__class__ is str else js_key(ident)
        if ident_key in seen:
            break
        seen.add(ident_key)
        path.append(current)
        if parent.__class__ is str:
            current = _lookup(by_id, entries, parent) if parent else MISSING
        else:
            current = _lookup(by_id, entries, parent) if truthy(parent) else MISSING
    path.reverse()
    return path


# ---------------------------------------------------------------------------
# buildSessionContext

_INTERRUPTED_THINKING: Final = "interrupted-thinking"
_SUPERSEDED_SUMMARY: Final = "[Superseded compaction summary elided after a newer compaction]"
_SUPERSEDED_SHORT: Final = "Superseded compaction elided"


def _empty_context() -> dict[str, Any]:
    return {"messages": [], "thinkingLevel": "off", "models": {}, "injectedTtsrRules": [], "mode": "none"}


def build_session_context(
    entries: Sequence[Any],
    leaf: Any,
    by_id: Mapping[Any, Any] | None,
    *,
    transcript: bool = False,
    collapse_compacted_history: bool = False,
    keep_dangling_tool_calls: bool = False,
    resolve_frame_data: FrameDataResolver | None = None,
    omp: str | None = None,
) -> dict[str, Any]:
    """omp's ``buildSessionContext(entries, leaf, byId, options)`` (spec S7).

    ``leaf``: ``None`` is JavaScript ``null`` (empty context); :data:`UNDEFINED`
    (or any falsy / unknown id) falls back to the last entry, as omp does for a
    leaf it holds as ``undefined`` -- use :func:`leaf_after_load` to get the
    value omp holds after a load. ``by_id`` maps id -> entry (last wins); if
    ``None`` it is built from ``entries``. ``resolve_frame_data`` resolves
    snapcompact frame payloads (see :data:`FrameDataResolver`). ``omp``: the release to imitate
    (S20; ``None`` derives as 18.2.3 does).

    Raises :class:`ContextError` where omp throws (e.g. an assistant message
    without ``content`` array, ``ttsr_injection`` without ``injectedRules``).
    """
    if by_id is None:
        by_id = build_id_index(entries)
    if leaf is None:
        return _empty_context()
    start = _lookup(by_id, entries, leaf) if truthy(leaf) else MISSING
    if start is MISSING:
        start = entries[-1] if entries else MISSING
    if start is MISSING or not truthy(start):
        return _empty_context()  # no entries, or a falsy last record (0, "", false, null)
    path = _walk(start, by_id, entries)
    builder = ContextBuilder(path, transcript, collapse_compacted_history, keep_dangling_tool_calls,
                              resolve_frame_data or default_frame_data, s20=omp is not None and has_s20(omp))
    return builder.build()


class ContextBuilder:
    def __init__(self, path: list[Any], transcript: bool, collapse: bool, keep_dangling: bool,
                 resolve: FrameDataResolver, *, s20: bool = False) -> None:
        self.path = path
        self.s20 = s20  # derive as omp 18.3 does (S20.1)
        self.transcript = transcript
        self.collapse = collapse
        self.keep_dangling = keep_dangling
        self.resolve = resolve
        self.current: Any = None  # the entry being processed, named when omp would throw

    def build(self) -> dict[str, Any]:
        try:
            return self._derive()
        except JSTypeError as exc:
            raise ContextError(f"{describe(self.current)}: {exc}") from None

    def _derive(self) -> dict[str, Any]:
        path = self.path
        thinking_level: Any = "off"
        configured: Any = UNDEFINED
        service_tier: Any = UNDEFINED
        models: dict[str, Any] = {}
        explicit_default = False
        compaction: Any = None
        rules: dict[Any, Any] = {}
        mode: Any = "none"
        mode_data: Any = UNDEFINED
        reset_idx = -1
        for index, entry in enumerate(path):
            self.current = entry
            kind = entry.get("type", UNDEFINED) if entry.__class__ is dict else get(entry, "type")
            if kind == "thinking_level_change":
                level = get(entry, "thinkingLevel")
                thinking_level = "off" if nullish(level) else level
                chosen = get(entry, "configured")
                configured = chosen if not nullish(chosen) else (UNDEFINED if nullish(level) else level)
            elif kind == "model_change":
                model = get(entry, "model")
                if truthy(model):
                    role = get(entry, "role")
                    role = "default" if nullish(role) else role
                    key = property_key(role)
                    if key != "__proto__":  # assigning __proto__ sets the prototype, adds no key
                        models[key] = model
                    if role == "default":
                        explicit_default = True
            elif kind == "service_tier_change":
                service_tier = coerce_service_tier(get(entry, "serviceTier"))
            elif kind == "message" and get(get(entry, "message"), "role") == "assistant":
                if not explicit_default:
                    message = entry["message"]
                    models["default"] = (f"{template_string(get(message, 'provider'))}/"
                                         f"{template_string(get(message, 'model'))}")
            elif kind == "compaction":
                compaction = entry
            elif kind == "ttsr_injection":
                for rule in iterate(get(entry, "injectedRules"), "entry.injectedRules"):
                    rules.setdefault(js_key(rule), rule)
            elif kind == "mode_change":
                mode = get(entry, "mode")
                mode_data = get(entry, "data")
            if kind == "reset_boundary":
                reset_idx = index

        emitter = Emitter(self.transcript)
        compaction_idx = -1
        if compaction is not None:
            compaction_id = get(compaction, "id")
            compaction_idx = next(i for i, e in enumerate(path)
                                  if get(e, "type") == "compaction" and strict_eq(get(e, "id"), compaction_id))

        if self.transcript and not self.collapse:
            self._emit_full_transcript(emitter, compaction)
        elif reset_idx >= 0 and reset_idx > compaction_idx:
            for entry in path[reset_idx + 1:]:
                self._append(emitter, entry)
        elif compaction is not None:
            self._emit_compacted(emitter, compaction, compaction_idx, reset_idx)
        else:
            for entry in path:
                self._append(emitter, entry)

        messages, origins = emitter.messages, emitter.origins
        if not self.transcript:
            notes = context_notes(path)
            if notes is not None and notes[0]:
                source = next((e for e in path if strict_eq(get(e, "id"), notes[1])), None)
                if source is not None:
                    rendered = render_context_notes(notes[0])
                    messages.insert(0, {"role": "custom", "customType": CONTEXT_NOTES_TYPE, "content": rendered,
                                        "display": False, "timestamp": ms(get(source, "timestamp"))})
                    origins.insert(0, source)

        if not (self.transcript and self.keep_dangling):
            messages, origins = self._strip_dangling_tool_calls(messages, origins)
        if not self.transcript:
            messages = self._drop_failed_turns(messages, origins)

        result: dict[str, Any] = {"messages": messages}
        if self.transcript:
            result["cacheMissExplainedAt"] = emitter.cache_miss
        result["thinkingLevel"] = thinking_level
        put(result, "configuredThinkingLevel", configured)
        put(result, "serviceTier", service_tier)
        result["models"] = with_js_key_order(models)
        result["injectedTtsrRules"] = list(rules.values())
        put(result, "mode", mode)
        put(result, "modeData", mode_data)
        return result

    def _snapcompact_blocks(self, compaction: Any) -> list[dict[str, Any]] | None:
        archive = preserved_archive(get(compaction, "preserveData"))
        if archive is None or (self.transcript and self.collapse):
            return None
        if self.transcript:
            max_bytes: int | None = None
        elif is_crash_risk_legacy_archive(archive, self.resolve):
            max_bytes = 0
        else:
            max_bytes = SNAP_FRAME_BUDGET
        return history_blocks(archive, max_bytes, self.resolve)

    def _emit_full_transcript(self, emitter: Emitter, compaction: Any) -> None:
        path = self.path
        active_id = get(compaction, "id") if compaction is not None else UNDEFINED
        for index, entry in enumerate(path):
            try:
                emitter.track_entry(entry)
                if get(entry, "type") != "compaction":
                    emitter.append_entry(entry)  # tracks again, as omp does; tracking is idempotent
                    continue
                replacement = path[index + 1] if index + 1 < len(path) else UNDEFINED
                if (not is_undef(replacement) and get(replacement, "type") == "compaction"
                        and get(entry, "method") == "snapcompact" and get(replacement, "method") == "snapcompact"
                        and strict_eq(get(replacement, "parentId"), get(entry, "id"))
                        and strict_eq(get(replacement, "firstKeptEntryId"), get(entry, "firstKeptEntryId"))
                        and strict_eq(get(replacement, "tokensBefore"), get(entry, "tokensBefore"))):
                    continue  # an immediate frame-rescue replacement renders instead
                active = compaction is not None and strict_eq(get(entry, "id"), active_id)
                emitter.push(compaction_summary(
                    get(entry, "summary") if active else _SUPERSEDED_SUMMARY,
                    get(entry, "tokensBefore"),
                    get(entry, "timestamp"),
                    short_summary=get(entry, "shortSummary") if active else _SUPERSEDED_SHORT,
                    blocks=self._snapcompact_blocks(entry) if active else None,
                    warning=get(entry, "warning"),
                    method=get(entry, "method"),
                    tokens_after=get(entry, "tokensAfter"),
                ), entry)
            except JSTypeError as exc:
                raise ContextError(f"{describe(entry)}: {exc}") from None

    def _emit_compacted(self, emitter: Emitter, compaction: Any, compaction_idx: int, reset_idx: int) -> None:
        path = self.path
        transcript = self.transcript
        remote = remote_compaction_payload(compaction)
        preserve = get(compaction, "preserveData")
        anthropic = anthropic_compaction_payload(preserve)
        provider_payload: Any = remote if remote is not None else (
            anthropic if anthropic is not None else UNDEFINED)
        first_kept_id = get(compaction, "firstKeptEntryId")

        summary_timestamp: Any = get(compaction, "timestamp")
        history_rewrite_at: Any = UNDEFINED
        through = -1
        if self.s20 and not transcript and remote is None and first_kept_id == "":
            replay_through = get(compaction, "providerReplayThroughEntryId")
            if truthy(replay_through):
                through = next((i for i, e in enumerate(path[:compaction_idx])
                                if strict_eq(get(e, "id"), replay_through)), -1)
        if anthropic is not None:
            # A natively replayed summary is dated just before the first retained entry
            # (18.3: that time moves to historyRewriteAt, the summary keeps its own).
            kept = next((i for i, e in enumerate(path) if strict_eq(get(e, "id"), first_kept_id)), -1)
            if through >= 0 and not 0 <= kept < compaction_idx:
                kept = through + 1
            retained: Any = path[kept] if 0 <= kept < compaction_idx else UNDEFINED
            if is_undef(retained) and compaction_idx + 1 < len(path):
                retained = path[compaction_idx + 1]
            retained_at = date_ms(get(retained, "timestamp")) if not is_undef(retained) else math.nan
            if math.isfinite(retained_at):
                if self.s20:
                    history_rewrite_at = retained_at - 1
                else:
                    try:
                        summary_timestamp = to_iso(retained_at - 1)
                    except ValueError:
                        raise JSTypeError("Invalid time value (RangeError)") from None

        summary = compaction_summary(
            get(compaction, "summary"), get(compaction, "tokensBefore"), summary_timestamp,
            short_summary=get(compaction, "shortSummary"), provider_payload=provider_payload,
            blocks=self._snapcompact_blocks(compaction), warning=get(compaction, "warning"),
            method=get(compaction, "method"), tokens_after=get(compaction, "tokensAfter"),
            history_rewrite_at=history_rewrite_at)
        if not transcript:
            emitter.push(summary, compaction)

        details = get(compaction, "details")
        if not transcript and is_record(details) and details.get("kind") == "experimental-context-rollover":
            # Notes-backed rollover: recover the latest user request before the cut.
            kept = next((i for i, e in enumerate(path) if strict_eq(get(e, "id"), first_kept_id)), -1)
            for i in range(compaction_idx - 1, reset_idx, -1):
                entry = path[i]
                self.current = entry
                if not is_user_request_entry(entry):
                    continue
                if i < kept:
                    self._append(emitter, entry)
                break

        if remote is None or transcript:
            kept = next((i for i, e in enumerate(path[:compaction_idx])
                         if strict_eq(get(e, "id"), first_kept_id)), -1)
            if kept < 0 and through >= 0:
                for entry in path[through + 1:compaction_idx]:  # S20.1.2: the provider replay tail
                    self._append(emitter, entry)
            if kept >= 0:
                display_start = kept
                if transcript:
                    # Start the visible kept region at a turn boundary when there is one.
                    for i in range(kept, compaction_idx):
                        self.current = path[i]
                        if is_turn_start_entry(path[i]):
                            display_start = i
                            break
                for i in range(kept, compaction_idx):
                    entry = path[i]
                    if i < display_start:
                        # Hidden kept entries still feed the cache-miss bookkeeping.
                        self.current = entry
                        emitter.track_entry(entry)
                        if get(entry, "type") == "message":
                            emitter.track_message(get(entry, "message"))
                        continue
                    self._append(emitter, entry)
        else:
            replay_through = get(compaction, "providerReplayThroughEntryId")
            if truthy(replay_through):
                through = next((i for i, e in enumerate(path) if strict_eq(get(e, "id"), replay_through)), -1)
                if 0 <= through < compaction_idx:
                    for entry in path[through + 1:compaction_idx]:
                        self._append(emitter, entry)

        if transcript:
            self.current = compaction
            emitter.track_entry(compaction)
            emitter.push(summary, compaction)
        for entry in path[compaction_idx + 1:]:
            self._append(emitter, entry)

    def _append(self, emitter: Emitter, entry: Any) -> None:
        self.current = entry
        emitter.append_entry(entry)

    def _strip_dangling_tool_calls(self, messages: list[Any], origins: list[Any]) -> tuple[list[Any], list[Any]]:
        """Remove tool calls with no result among the emitted messages (S7.9)."""
        paired: set[Any] = set()
        for message in messages:
            if get(message, "role") == "toolResult":
                paired.add(js_key(get(message, "toolCallId")))
        kept_messages: list[Any] = []
        kept_origins: list[Any] = []
        for message, origin in zip(messages, origins, strict=True):
            try:
                rewritten = self._strip_one(message, paired)
            except JSTypeError as exc:
                raise ContextError(f"{describe(origin)}: {exc}") from None
            if rewritten is not None:
                kept_messages.append(rewritten)
                kept_origins.append(origin)
        return kept_messages, kept_origins

    def _strip_one(self, message: Any, paired: set[Any]) -> Any:
        if get(message, "role") != "assistant":
            return message
        content = get(message, "content")
        stripped = 0
        for block in iterate(content, "message.content"):
            if get(block, "type") == "toolCall" and js_key(get(block, "id")) not in paired:
                stripped += 1
        if stripped == 0:
            return message
        normalized: list[Any] = []
        for block in content:
            kind = get(block, "type")
            if (kind == "toolCall" and js_key(get(block, "id")) not in paired) or kind == "redactedThinking":
                continue
            if kind == "thinking" and truthy(get(block, "thinkingSignature")):
                block = {k: v for k, v in block.items() if k != "thinkingSignature"}
            normalized.append(block)
        if not normalized and not self.transcript:
            return None
        rewritten = dict(message)
        rewritten["content"] = normalized
        if self.transcript:
            rewritten["strippedToolCalls"] = stripped
        return rewritten

    @staticmethod
    def _drop_failed_turns(messages: list[Any], origins: list[Any]) -> list[Any]:
        """Drop aborted/error assistant turns and their tool results (S7.10), in linear time."""
        count = len(messages)
        alive = [True] * count
        # next_alive[i]: smallest alive index >= i (union-find with path halving)
        next_alive = list(range(count + 1))

        def find(i: int) -> int:
            while next_alive[i] != i:
                next_alive[i] = next_alive[next_alive[i]]
                i = next_alive[i]
            return i

        failed = [i for i, message in enumerate(messages) if get(message, "role") == "assistant"
                  and get(message, "stopReason") in ("aborted", "error")]
        if not failed:
            return messages
        results_by_call: dict[Any, list[int]] = {}
        for index, message in enumerate(messages):
            if get(message, "role") == "toolResult":
                results_by_call.setdefault(js_key(get(message, "toolCallId")), []).append(index)

        for i in reversed(failed):
            message = messages[i]
            following = find(i + 1)
            if following < count:
                nxt = messages[following]
                if get(nxt, "role") == "custom" and get(nxt, "customType") == _INTERRUPTED_THINKING:
                    continue
            try:
                dropped = {js_key(get(block, "id")) for block in iterate(get(message, "content"), "message.content")
                           if get(block, "type") == "toolCall"}
            except JSTypeError as exc:
                raise ContextError(f"{describe(origins[i])}: {exc}") from None
            alive[i] = False
            next_alive[i] = i + 1
            for call in dropped:
                positions = results_by_call.get(call)
                while positions and positions[-1] > i:
                    position = positions.pop()
                    if alive[position]:
                        alive[position] = False
                        next_alive[position] = position + 1
        return [message for message, keep in zip(messages, alive, strict=True) if keep]
