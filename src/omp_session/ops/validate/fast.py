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
# the keys omp writes that no check reads: declared (kept as raw bytes, never built) so that each entry
# type refuses any other key, and a clean block is also proof of no newer omp's fields (newer.py)
_NONE: Any = msgspec.Raw()


class _Entry(Struct, tag_field="type", forbid_unknown_fields=True):
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
    summary: msgspec.Raw = _NONE
    shortSummary: msgspec.Raw = _NONE
    tokensBefore: msgspec.Raw = _NONE
    tokensAfter: msgspec.Raw = _NONE
    method: msgspec.Raw = _NONE
    details: msgspec.Raw = _NONE
    fromExtension: msgspec.Raw = _NONE
    fromHook: msgspec.Raw = _NONE
    preserveData: msgspec.Raw = _NONE
    warning: msgspec.Raw = _NONE
    firstKeptEntryIndex: msgspec.Raw = _NONE


class LabelEntry(_Entry, tag="label"):
    targetId: Any = UNDEFINED
    label: msgspec.Raw = _NONE


class BranchSummaryEntry(_Entry, tag="branch_summary"):
    fromId: Any = UNDEFINED
    summary: msgspec.Raw = _NONE
    details: msgspec.Raw = _NONE
    fromExtension: msgspec.Raw = _NONE
    fromHook: msgspec.Raw = _NONE


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
    customType: msgspec.Raw = _NONE
    details: msgspec.Raw = _NONE


class _ModelChange(_Entry, tag="model_change"):
    model: str
    role: msgspec.Raw = _NONE
    resolvedModelIsFallback: msgspec.Raw = _NONE
    provider: msgspec.Raw = _NONE
    modelId: msgspec.Raw = _NONE


class _ThinkingLevel(_Entry, tag="thinking_level_change"):
    thinkingLevel: msgspec.Raw = _NONE
    configured: msgspec.Raw = _NONE


class _ServiceTier(_Entry, tag="service_tier_change"):
    serviceTier: msgspec.Raw = _NONE


class _CustomEntry(_Entry, tag="custom"):
    customType: msgspec.Raw = _NONE
    data: msgspec.Raw = _NONE


class _SessionInit(_Entry, tag="session_init"):
    systemPrompt: msgspec.Raw = _NONE
    task: msgspec.Raw = _NONE
    tools: msgspec.Raw = _NONE
    agent: msgspec.Raw = _NONE
    modelRole: msgspec.Raw = _NONE
    resolvedModel: msgspec.Raw = _NONE
    readOnly: msgspec.Raw = _NONE
    outputSchema: msgspec.Raw = _NONE
    outputSchemaMode: msgspec.Raw = _NONE
    restrictToolNames: msgspec.Raw = _NONE
    spawns: msgspec.Raw = _NONE
    readSummarize: msgspec.Raw = _NONE
    advisor: msgspec.Raw = _NONE
    isolated: msgspec.Raw = _NONE
    compactionThreshold: msgspec.Raw = _NONE


class _ModeChange(_Entry, tag="mode_change"):
    mode: msgspec.Raw = _NONE
    data: msgspec.Raw = _NONE


class _TitleChange(_Entry, tag="title_change"):
    title: msgspec.Raw = _NONE
    source: msgspec.Raw = _NONE
    previousTitle: msgspec.Raw = _NONE
    trigger: msgspec.Raw = _NONE


class _CredentialPin(_Entry, tag="credential_pin"):
    provider: msgspec.Raw = _NONE
    hash: msgspec.Raw = _NONE


class _ModelUsage(_Entry, tag="model_usage"):
    purpose: msgspec.Raw = _NONE
    role: msgspec.Raw = _NONE
    api: msgspec.Raw = _NONE
    provider: msgspec.Raw = _NONE
    model: msgspec.Raw = _NONE
    usage: msgspec.Raw = _NONE
    stopReason: msgspec.Raw = _NONE
    errorMessage: msgspec.Raw = _NONE


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
