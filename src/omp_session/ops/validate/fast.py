"""The validator's fast path: strict typed decoders that prove a block of records needs no
per-entry checks.

``decode_clean(data)`` decodes a block of JSON lines into structs whose types *are* the checks of
``validate_entries`` (ids non-empty strings, parent ids strings or null, ISO timestamps, known
entry types, message roles and content block types, an assistant usage with a numeric
``cost.total``, well-formed custom messages and rule lists). When the whole block decodes, no
record in it can produce a diagnostic, so the only Python work left per record is collecting the
tool calls, tool results and id references the tree checks need. Anything the strict types refuse
(one odd record is enough) returns None and the block goes through the detailed path, which then
says exactly what is wrong. Both paths are compared on random and damaged files in
``tests/test_validate_fast.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from omp_session.js.codec import UNDEFINED

__all__ = ["ISO_TIMESTAMP", "AssistantMessage", "CompactionEntry", "LabelEntry", "MessageEntry", "ToolCallBlock",
           "ToolResultMessage", "decode_clean"]

_Id = Annotated[str, Meta(min_length=1)]
# omp writes toISOString(); other strings Date.parse accepts are left to the detailed path
ISO_TIMESTAMP = (r"^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
                 r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z\Z")
_Timestamp = Annotated[str, Meta(pattern=ISO_TIMESTAMP)]


class _Entry(Struct, tag_field="type"):
    id: _Id
    parentId: _Id | None
    timestamp: _Timestamp


# ---------------------------------------------------------------- content blocks (spec S4.7)


class _Block(Struct, tag_field="type"):
    pass


class _Text(_Block, tag="text"):
    pass


class _Thinking(_Block, tag="thinking"):
    pass


class _Redacted(_Block, tag="redactedThinking"):
    pass


class _Image(_Block, tag="image"):
    pass


class ToolCallBlock(_Block, tag="toolCall"):
    id: Any = UNDEFINED


class _Fallback(_Block, tag="fallback"):
    pass


class _ServerTool(_Block, tag="anthropicServerTool"):
    pass


_AnyBlock = _Text | _Thinking | _Redacted | _Image | ToolCallBlock | _Fallback | _ServerTool


# ---------------------------------------------------------------- messages (spec S4)


class _Cost(Struct):
    total: float  # msgspec takes JSON integers here too, and refuses booleans and strings


class _Usage(Struct):
    cost: _Cost


class _Message(Struct, tag_field="role"):
    pass


class AssistantMessage(_Message, tag="assistant"):
    content: list[_AnyBlock]
    usage: _Usage | None = UNDEFINED  # type: ignore[assignment]


class ToolResultMessage(_Message, tag="toolResult"):
    toolCallId: Any = UNDEFINED


class _User(_Message, tag="user"):
    pass


class _Developer(_Message, tag="developer"):
    pass


class _Custom(_Message, tag="custom"):
    pass


class _Hook(_Message, tag="hookMessage"):
    pass


class _Bash(_Message, tag="bashExecution"):
    pass


class _Python(_Message, tag="pythonExecution"):
    pass


class _FileMention(_Message, tag="fileMention"):
    pass


class _BranchSummary(_Message, tag="branchSummary"):
    pass


class _CompactionSummary(_Message, tag="compactionSummary"):
    pass


_AnyMessage = (AssistantMessage | ToolResultMessage | _User | _Developer | _Custom | _Hook | _Bash | _Python
               | _FileMention | _BranchSummary | _CompactionSummary)


# ---------------------------------------------------------------- entries (spec S3)


class MessageEntry(_Entry, tag="message"):
    message: _AnyMessage


class CompactionEntry(_Entry, tag="compaction"):
    firstKeptEntryId: Any = UNDEFINED
    providerReplayThroughEntryId: Any = UNDEFINED


class LabelEntry(_Entry, tag="label"):
    targetId: Any = UNDEFINED


class BranchSummaryEntry(_Entry, tag="branch_summary"):
    fromId: Any = UNDEFINED


class _TtsrEntry(_Entry, tag="ttsr_injection"):
    injectedRules: list[str]


class _CmText(Struct, tag_field="type", tag="text"):
    pass


class _CmImage(Struct, tag_field="type", tag="image"):
    pass


class _CustomMessageEntry(_Entry, tag="custom_message"):
    content: str | list[_CmText | _CmImage]
    display: bool
    attribution: Literal["user", "agent"] = "user"


class _ModelChange(_Entry, tag="model_change"):
    model: str


class _ThinkingLevel(_Entry, tag="thinking_level_change"):
    pass


class _ServiceTier(_Entry, tag="service_tier_change"):
    pass


class _CustomEntry(_Entry, tag="custom"):
    pass


class _SessionInit(_Entry, tag="session_init"):
    pass


class _ModeChange(_Entry, tag="mode_change"):
    pass


class _TitleChange(_Entry, tag="title_change"):
    pass


class _CredentialPin(_Entry, tag="credential_pin"):
    pass


class _ModelUsage(_Entry, tag="model_usage"):
    pass


class _ResetBoundary(_Entry, tag="reset_boundary"):
    pass


_DECODER = msgspec.json.Decoder(
    MessageEntry | CompactionEntry | LabelEntry | BranchSummaryEntry | _TtsrEntry | _CustomMessageEntry
    | _ModelChange | _ThinkingLevel | _ServiceTier | _CustomEntry | _SessionInit | _ModeChange | _TitleChange
    | _CredentialPin | _ModelUsage | _ResetBoundary)


def decode_clean(data: bytes, count: int) -> list[Any] | None:
    """The ``count`` records of ``data`` (JSON lines) as strict structs, or None when any record
    might need a diagnostic."""
    try:
        entries = _DECODER.decode_lines(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if len(entries) != count:
        return None
    return entries
