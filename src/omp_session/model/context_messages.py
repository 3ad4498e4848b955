"""The messages omp derives from single entries, and its per-entry emission rule.

Message constructors keep omp's key order; :class:`Emitter` collects the
context's message list with omp's cache-miss bookkeeping (transcript mode).
"""

from __future__ import annotations

from typing import Any, Final

from omp_session.errors import JSTypeError
from omp_session.js.codec import UNDEFINED
from omp_session.js.value import (
    get,
    get_opt,
    is_record,
    is_undef,
    ms,
    nullish,
    put,
    trim_nonempty,
    truthy,
)

from .jsstring import template_string

__all__ = [
    "Emitter",
    "anthropic_compaction_payload",
    "coerce_service_tier",
    "compaction_summary",
    "custom_message_of",
    "is_turn_start_entry",
    "is_user_request_entry",
    "remote_compaction_payload",
]

_DEFAULT_CUSTOM_TYPE: Final = "custom-message"
_PREWALK_PLAN: Final = "prewalk-plan"
_VIBE_MODE_CONTEXT: Final = "vibe-mode-context"
_SKILL_PROMPT: Final = "skill-prompt"
_COLLAB_PROMPT: Final = "collab-prompt"


def custom_message_of(entry: Any) -> dict[str, Any] | None:
    """The message a ``custom_message`` entry replays as; None for unsendable content."""
    content = get(entry, "content")
    if not isinstance(content, str | list):
        return None
    custom_type = get(entry, "customType")
    if not (isinstance(custom_type, str) and custom_type):
        custom_type = _DEFAULT_CUSTOM_TYPE
    display = get(entry, "display")
    attribution = get(entry, "attribution")
    message: dict[str, Any] = {"role": "custom", "customType": custom_type, "content": content,
                               "display": display if isinstance(display, bool) else False}
    put(message, "details", get(entry, "details"))
    if not is_undef(attribution):
        message["attribution"] = "user" if attribution == "user" else "agent"
    message["timestamp"] = ms(get(entry, "timestamp"))
    return message


def _is_user_turn_initiator(message: Any) -> bool:
    custom_type = get(message, "customType")
    return bool(custom_type in (_SKILL_PROMPT, _COLLAB_PROMPT) and get(message, "attribution") == "user")


def is_user_request_entry(entry: Any) -> bool:
    kind = get(entry, "type")
    if kind == "message":
        message = get(entry, "message")
        role = get(message, "role")
        if role == "user":
            return True
        return role == "custom" and _is_user_turn_initiator(message)
    if kind == "custom_message":
        message = custom_message_of(entry)
        return message is not None and _is_user_turn_initiator(message)
    return False


def is_turn_start_entry(entry: Any) -> bool:
    kind = get(entry, "type")
    if kind == "branch_summary" or kind == "custom_message":
        return True
    if kind == "message":
        role = get(get(entry, "message"), "role")
        return bool(role in ("user", "bashExecution"))
    return False


def _is_empty_error_turn(message: Any) -> bool:
    if get(message, "stopReason") != "error":
        return False
    content = get(message, "content")
    if not isinstance(content, list):
        raise JSTypeError("message.content.some is not a function")
    for block in content:
        kind = get(block, "type")
        if kind == "text":
            has = trim_nonempty(get(block, "text"), "block.text")
        elif kind == "thinking":
            has = trim_nonempty(get(block, "thinking"), "block.thinking")
            if not has:
                signature = get(block, "thinkingSignature")
                has = False if nullish(signature) else trim_nonempty(signature, "block.thinkingSignature")
        elif kind == "redactedThinking":
            has = trim_nonempty(get(block, "data"), "block.data")
        elif kind == "fallback":
            has = False
        else:  # toolCall and unknown block kinds count as content
            has = True
        if has:
            return False
    return True


_TIER_VALUES: Final = frozenset(("auto", "default", "flex", "scale", "priority"))
_LEGACY_TIERS: Final[dict[str, dict[str, str]]] = {
    "priority": {"openai": "priority", "anthropic": "priority", "google": "priority"},
    "openai-only": {"openai": "priority"},
    "claude-only": {"anthropic": "priority"},
    "auto": {"openai": "auto"},
    "default": {"openai": "default"},
    "flex": {"openai": "flex"},
    "scale": {"openai": "scale"},
}


def coerce_service_tier(value: Any) -> Any:
    if nullish(value):
        return UNDEFINED
    if isinstance(value, dict | list):
        out: dict[str, str] = {}
        if isinstance(value, dict):
            for family in ("openai", "anthropic", "google"):
                tier = value.get(family)
                if isinstance(tier, str) and tier in _TIER_VALUES:
                    out[family] = tier
        return out if out else UNDEFINED
    if isinstance(value, str) and value in _LEGACY_TIERS:
        return dict(_LEGACY_TIERS[value])
    return UNDEFINED


def remote_compaction_payload(compaction: Any) -> dict[str, Any] | None:
    candidate = get_opt(get(compaction, "preserveData"), "openaiRemoteCompaction")
    if not is_record(candidate):
        return None
    provider = candidate.get("provider")
    history = candidate.get("replacementHistory")
    if not (isinstance(provider, str) and provider) or not isinstance(history, list):
        return None
    if not all(is_record(item) for item in history):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def anthropic_compaction_payload(preserve: Any) -> dict[str, Any] | None:
    candidate = get_opt(preserve, "anthropicCompaction")
    if not is_record(candidate):
        return None
    provider = candidate.get("provider")
    content = candidate.get("content")
    if not (isinstance(provider, str) and provider) or not (isinstance(content, str) and content):
        return None
    payload: dict[str, Any] = {"type": "anthropicCompaction", "provider": provider, "content": content}
    encrypted = candidate.get("encryptedContent")
    if isinstance(encrypted, str) and encrypted:
        payload["encryptedContent"] = encrypted
    files = candidate.get("filesText")
    if isinstance(files, str) and files:
        payload["filesText"] = files
    return payload


def compaction_summary(summary: Any, tokens_before: Any, timestamp: Any, *, short_summary: Any = UNDEFINED,
                       provider_payload: Any = UNDEFINED, blocks: list[Any] | None = None,
                       warning: Any = UNDEFINED, method: Any = UNDEFINED,
                       tokens_after: Any = UNDEFINED, history_rewrite_at: Any = UNDEFINED) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "compactionSummary"}
    put(message, "summary", summary)
    put(message, "shortSummary", short_summary)
    put(message, "tokensBefore", tokens_before)
    put(message, "tokensAfter", tokens_after)
    put(message, "method", method)
    put(message, "providerPayload", provider_payload)
    if blocks:
        message["blocks"] = blocks
        images = [block for block in blocks if block.get("type") == "image"]
        if images:
            message["images"] = images
    put(message, "warning", warning)
    put(message, "historyRewriteAt", history_rewrite_at)
    message["timestamp"] = ms(timestamp)
    return message


class Emitter:
    """The message list with omp's cache-miss bookkeeping (transcript mode)."""

    def __init__(self, transcript: bool) -> None:
        self.transcript = transcript
        self.messages: list[Any] = []
        self.origins: list[Any] = []  # the entry each message came from, for error reports
        self.cache_miss: list[bool] = []
        self.pending_reset = False
        self.current_mode: Any = "none"
        self.last_model: str | None = None

    def track_entry(self, entry: Any) -> None:
        kind = get(entry, "type")
        if kind == "compaction" or kind == "model_change":
            self.pending_reset = True
        elif kind == "mode_change":
            mode = get(entry, "mode")
            if (mode == "plan") != (self.current_mode == "plan"):
                self.pending_reset = True
            self.current_mode = mode

    def track_message(self, message: Any) -> bool:
        if get(message, "role") != "assistant":
            return False
        model = f"{template_string(get(message, 'provider'))}/{template_string(get(message, 'model'))}"
        changed = self.last_model is not None and self.last_model != model
        self.last_model = model
        explained = self.pending_reset or changed
        self.pending_reset = False
        return explained

    def push(self, message: Any, origin: Any) -> None:
        self.messages.append(message)
        self.origins.append(origin)
        if self.transcript:
            self.cache_miss.append(self.track_message(message))

    def append_entry(self, entry: Any) -> None:
        """omp's per-entry rule (S7.6)."""
        self.track_entry(entry)
        kind = get(entry, "type")
        if kind == "message":
            message = get(entry, "message")
            if not self.transcript and get(message, "role") == "assistant" and (
                    truthy(get(message, "retryRecovery")) or _is_empty_error_turn(message)):
                return
            self.push(message, entry)
        elif kind == "custom_message":
            if not self.transcript and get(entry, "customType") in (_PREWALK_PLAN, _VIBE_MODE_CONTEXT):
                return
            custom = custom_message_of(entry)
            if custom is not None:
                self.push(custom, entry)
        elif kind == "branch_summary":
            summary = get(entry, "summary")
            if truthy(summary):
                created: dict[str, Any] = {"role": "branchSummary", "summary": summary}
                put(created, "fromId", get(entry, "fromId"))
                created["timestamp"] = ms(get(entry, "timestamp"))
                self.push(created, entry)
