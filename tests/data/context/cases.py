"""Hand-written session files for the context golden tests (spec S7, C44-C57, S13.1, odd shapes).

Each ``case_*`` function returns the records of one file (header first); ``record.py``
writes them to ``inputs/<name>.jsonl`` and asks the oracle what omp derives from them.
A record that is a ``str`` is written verbatim (for non-object lines).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Callable
from typing import Any

BASE = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=_dt.UTC)
# record.py stores this in blobs/ and gives that folder to omp's blob store.
BLOB_BYTES = b"stand-in bytes for a snapcompact frame image, kept in the blob store"
BLOB_SHA = hashlib.sha256(BLOB_BYTES).hexdigest()
LEAF = object()


def iso(seconds: float) -> str:
    return (BASE + _dt.timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def usage(i: int = 100, o: int = 20, cost: float = 0.0015, **extra: Any) -> dict[str, Any]:
    u: dict[str, Any] = {"input": i, "output": o, "cacheRead": 0, "cacheWrite": 0, "totalTokens": i + o,
                         "cost": {"input": cost / 2, "output": cost / 2, "cacheRead": 0, "cacheWrite": 0,
                                  "total": cost}}
    u.update(extra)
    return u


class S:
    """A tiny session builder: ids e0001.., timestamps one second apart."""

    def __init__(self, version: Any = 3, **header: Any) -> None:
        h: dict[str, Any] = {"type": "session"}
        if version is not None:
            h["version"] = version
        h.update({"id": "0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "timestamp": iso(0), "cwd": "/home/dev/proj"})
        h.update(header)
        self.records: list[Any] = [h]
        self.leaf: Any = None
        self.n = 0

    def add(self, etype: str, parent: Any = LEAF, eid: str | None = None, move: bool = True,
            ts: Any = LEAF, **fields: Any) -> str:
        self.n += 1
        ident = eid or f"e{self.n:04d}"
        record: dict[str, Any] = {"type": etype, "id": ident,
                                  "parentId": self.leaf if parent is LEAF else parent,
                                  "timestamp": iso(self.n) if ts is LEAF else ts}
        if ts is None:
            del record["timestamp"]
        record.update(fields)
        self.records.append(record)
        if move:
            self.leaf = ident
        return ident

    def raw(self, record: Any) -> None:
        self.records.append(record)

    def user(self, text: str = "hello", **kw: Any) -> str:
        return self.add("message", message={"role": "user", "content": text, "timestamp": 1_772_366_400_000 + self.n},
                        **kw)

    def assistant(self, text: str | None = "ok", *, provider: str = "anthropic", model: str = "claude-x",
                  blocks: list[Any] | None = None, stop: str = "stop", calls: tuple[str, ...] = (),
                  extra: dict[str, Any] | None = None, **kw: Any) -> str:
        content: list[Any] = list(blocks or [])
        if text is not None:
            content.append({"type": "text", "text": text})
        for call in calls:
            content.append({"type": "toolCall", "id": call, "name": "read", "arguments": {"path": "a.ts"}})
        message: dict[str, Any] = {"role": "assistant", "content": content, "api": "anthropic-messages",
                                   "provider": provider, "model": model, "usage": usage(),
                                   "stopReason": "toolUse" if calls and stop == "stop" else stop,
                                   "timestamp": 1_772_366_400_000 + self.n}
        message.update(extra or {})
        return self.add("message", message=message, **kw)

    def result(self, call: str, name: str = "read", **kw: Any) -> str:
        return self.add("message", message={"role": "toolResult", "toolCallId": call, "toolName": name,
                                            "content": [{"type": "text", "text": "result"}], "isError": False,
                                            "timestamp": 1_772_366_400_000 + self.n}, **kw)

    def compaction(self, first_kept: Any, summary: str = "summary of earlier work", **fields: Any) -> str:
        base: dict[str, Any] = {"summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": 12345}
        base.update(fields)
        if first_kept is None:
            del base["firstKeptEntryId"]
        return self.add("compaction", **base)


# ---------------------------------------------------------------------------
# C44-C47: compaction and reset boundaries


def case_c44_compaction_basic() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    u2 = s.user("u2")
    s.assistant("a2")
    s.compaction(u2, shortSummary="short", tokensAfter=400, method="soft", warning="careful")
    s.user("u3")
    s.assistant("a3")
    return s


def case_c45_two_compactions() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    u2 = s.user("u2")
    s.assistant("a2")
    s.compaction(u2, summary="first summary", shortSummary="first")
    s.user("u3")
    s.assistant("a3")
    u4 = s.user("u4")
    s.assistant("a4")
    s.compaction(u4, summary="second summary", shortSummary="second", details={"readFiles": ["a"]})
    s.user("u5")
    return s


def case_c46_first_kept_unknown() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.compaction("nope1234")
    s.user("u2")
    return s


def case_c46_first_kept_self() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.compaction("e0003")
    s.user("u2")
    return s


def case_c46_first_kept_after() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.compaction("e0004")
    s.user("u2")
    return s


def case_c46_first_kept_absent_noid_leaf() -> S:
    # A leaf without an id has id undefined, which equals an absent firstKeptEntryId: the
    # rollover recovery then treats every earlier user request as "before the first kept".
    s = S()
    s.user("u1")
    s.assistant("a1")
    c = s.compaction(None, details={"kind": "experimental-context-rollover"})
    s.raw({"type": "message", "parentId": c, "timestamp": iso(50),
           "message": {"role": "user", "content": "no id leaf", "timestamp": 5}})
    return s


def case_c47_reset_after_compaction() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.compaction("e0001")
    s.user("u2")
    s.assistant("a2")
    s.add("reset_boundary")
    s.user("u3")
    return s


def case_c47_compaction_after_reset() -> S:
    s = S()
    s.user("u1")
    s.compaction("e0001")
    s.user("u2")
    s.add("reset_boundary")
    s.user("u3")
    s.assistant("a3")
    s.compaction("e0006", summary="after reset")
    s.user("u4")
    return s


def case_reset_only() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.add("reset_boundary")
    s.add("custom", customType="experimental_context_notes", data={"version": 1, "text": "notes after reset"})
    s.user("u2")
    s.assistant("a2")
    s.add("reset_boundary")
    s.user("u3")
    return s


# ---------------------------------------------------------------------------
# C48-C50: provider-native compaction payloads


def _remote(valid: bool = True) -> dict[str, Any]:
    return {"openaiRemoteCompaction": {"provider": "openai" if valid else "",
                                       "replacementHistory": [{"type": "message", "role": "user"}],
                                       "compactionItem": {"id": "c1"}}}


def case_c48_remote_replay_through() -> S:
    s = S()
    s.user("u1")
    a1 = s.assistant("a1")
    s.user("u2")
    s.assistant("a2")
    s.compaction("e0003", preserveData=_remote(), providerReplayThroughEntryId=a1, method="remote")
    s.user("u3")
    return s


def case_c48_remote_without_replay() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.user("u2")
    s.assistant("a2")
    s.compaction("e0003", preserveData=_remote())
    s.user("u3")
    return s


def case_c48_remote_invalid() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.user("u2")
    s.assistant("a2")
    bad = _remote()
    bad["openaiRemoteCompaction"]["replacementHistory"] = [{"ok": 1}, "not a record"]
    s.compaction("e0003", preserveData=bad, providerReplayThroughEntryId="e0002")
    s.user("u3")
    s.compaction("e0003", summary="second", preserveData=_remote(valid=False), providerReplayThroughEntryId="e0002")
    s.user("u4")
    return s


def case_c49_rollover() -> S:
    s = S()
    s.user("old request")
    s.assistant("a1")
    a2 = s.assistant("a2")
    s.user("u2-late")  # after firstKept: not recovered separately
    s.compaction(a2, details={"kind": "experimental-context-rollover"})
    s.user("u3")
    return s


def case_c49_rollover_skill_prompt() -> S:
    s = S()
    s.user("plain request")
    s.add("custom_message", customType="skill-prompt", content="skill body", display=True, attribution="user")
    s.assistant("a1")
    a2 = s.assistant("a2")
    s.compaction(a2, details={"kind": "experimental-context-rollover"})
    s.user("u3")
    return s


def case_c49_rollover_collab_custom_role() -> S:
    s = S()
    s.user("plain request")
    s.add("message", message={"role": "custom", "customType": "collab-prompt", "content": "peer asks",
                              "display": True, "attribution": "user", "timestamp": 77})
    s.add("custom_message", customType="skill-prompt", content="agent skill", display=True)  # agent: not a request
    a = s.assistant("a1")
    s.compaction(a, details={"kind": "experimental-context-rollover"})
    s.user("u3")
    return s


def case_c49_rollover_stops_at_reset() -> S:
    s = S()
    s.user("before reset")
    s.add("reset_boundary")
    s.assistant("a1")
    a2 = s.assistant("a2")
    s.compaction(a2, details={"kind": "experimental-context-rollover"})
    s.user("u3")
    return s


def _anthropic(**extra: Any) -> dict[str, Any]:
    payload = {"provider": "anthropic", "content": "native summary", "encryptedContent": "enc==",
               "filesText": "<files/>", "model": "claude-x", "usedTokens": 5}
    payload.update(extra)
    return {"anthropicCompaction": payload}


def case_c50_anthropic_first_kept() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    u2 = s.user("u2")
    s.assistant("a2")
    s.compaction(u2, preserveData=_anthropic())
    s.user("u3")
    return s


def case_c50_anthropic_next_entry() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.compaction("unknown1", preserveData=_anthropic(encryptedContent="", filesText=7))
    s.user("u3", ts="2026-03-01 10:00:00")
    return s


def case_c50_anthropic_bad_timestamps() -> S:
    s = S()
    u1 = s.user("u1", ts="not a date")
    s.assistant("a1")
    s.compaction(u1, preserveData=_anthropic())
    s.user("u2")
    s.compaction("zzz", summary="last", preserveData={**_anthropic(), **_remote()})
    return s


def case_c50_anthropic_invalid_payloads() -> S:
    s = S()
    s.user("u1")
    s.compaction("e0001", preserveData={"anthropicCompaction": {"provider": "anthropic", "content": ""}})
    s.user("u2")
    s.compaction("e0003", summary="second", preserveData={"anthropicCompaction": ["x"]})
    s.user("u3")
    s.compaction("e0005", summary="third", preserveData="a string")
    return s


# ---------------------------------------------------------------------------
# C51-C52: branch summaries, models, thinking levels


def case_c51_branch_summary() -> S:
    s = S()
    u1 = s.user("u1")
    s.assistant("a1", eid="a0000001")
    s.add("branch_summary", parent=u1, fromId=u1, summary="went elsewhere", details={"k": 1}, fromExtension=True)
    s.add("branch_summary", fromId=u1, summary="")
    s.add("branch_summary", fromId="root", summary=0)
    s.add("branch_summary", summary="no fromId", ts=1_772_366_400_123)
    s.user("u2")
    return s


def case_c51_branch_summary_from_root() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.add("branch_summary", parent=None, fromId="root", summary="from root")
    s.user("u2")
    return s


def case_c52_models() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1", provider="p1", model="m1")
    s.add("model_change", model="p2/m2", resolvedModelIsFallback=False)
    s.assistant("a2", provider="p3", model="m3")
    s.add("model_change", model="p4/m4", role="smol", resolvedModelIsFallback=False)
    s.add("model_change", model="", role="slow")
    s.add("model_change", provider="legacy", modelId="old-shape")
    s.add("model_change", model="p5/m5", role="7")
    s.add("model_change", model="p6/m6", role=12)
    s.add("model_change", model="p7/m7", role="__proto__")
    s.add("model_change", model={"odd": True}, role=None)
    s.add("thinking_level_change", thinkingLevel="high", configured="auto")
    s.add("thinking_level_change")
    return s


def case_c52_models_inferred() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1", provider="p1", model="m1")
    s.add("model_change", model="p2/m2", role="smol")
    s.assistant("a2", provider="p3", model="m3")
    s.add("message", message={"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 1,
                              "usage": usage()})
    s.add("thinking_level_change", thinkingLevel=None, configured=None)
    s.add("thinking_level_change", thinkingLevel="low", configured=None)
    return s


def case_thinking_configured_only() -> S:
    s = S()
    s.user("u1")
    s.add("thinking_level_change", thinkingLevel=None, configured="auto")
    s.add("thinking_level_change", thinkingLevel=3, configured=False)
    return s


# ---------------------------------------------------------------------------
# C53-C54: failed turns, dangling tool calls


def case_c53_failed_turns() -> S:
    s = S()
    s.user("u")
    s.assistant("partial text", stop="error", extra={"errorMessage": "boom"})
    s.assistant(None, stop="error", blocks=[{"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}}])
    s.assistant(None, stop="aborted", calls=("t1",))
    s.result("t1")
    s.user("u2")
    s.assistant("answer", blocks=[{"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                                  {"type": "redactedThinking", "data": "opaque"}], calls=("t2", "t3"))
    s.result("t2")
    return s


def case_c54_dangling_only_and_retry() -> S:
    s = S()
    s.user("u")
    s.assistant(None, calls=("t9",))
    s.assistant("retried", extra={"retryRecovery": {"kind": "auto-retry", "status": "superseded"}})
    s.assistant("final")
    return s


def case_interrupted_thinking_pair() -> S:
    s = S()
    s.user("u")
    s.assistant(None, stop="aborted", blocks=[{"type": "thinking", "thinking": "half", "thinkingSignature": ""}])
    s.add("custom_message", customType="interrupted-thinking", content="continuity", display=False,
          details={"interruptedAt": 1})
    s.user("u2")
    s.assistant("x", stop="error", calls=("c1",))
    s.result("c1")
    s.result("c1")
    s.assistant("after", calls=("c2",))
    s.result("c2")
    return s


def case_failed_turn_results_before() -> S:
    s = S()
    s.user("u")
    s.result("k1")  # a result before the failed turn that answers one of its calls: kept
    s.assistant("x", stop="aborted", calls=("k1", "k2"))
    s.result("k2")
    s.result("k1")
    s.assistant("y", stop="error", calls=("k3",), extra={"content": "not an array"})
    return s


def case_empty_error_turn_shapes() -> S:
    s = S()
    s.user("u")
    s.assistant(" \n\u00a0\ufeff ", stop="error")
    s.assistant(None, stop="error", blocks=[{"type": "thinking", "thinking": "  ", "thinkingSignature": " sig "}])
    s.assistant(None, stop="error", blocks=[{"type": "thinking", "thinking": "", "thinkingSignature": None}])
    s.assistant(None, stop="error", blocks=[{"type": "redactedThinking", "data": "\t"}])
    s.assistant(None, stop="error", blocks=[{"type": "image", "data": "AAAA", "mimeType": "image/png"}])
    s.assistant(None, stop="error", blocks=["bare string block"])
    s.assistant(None, stop="error")
    s.user("u2")
    return s


def case_error_turn_text_not_string() -> S:
    s = S()
    s.user("u")
    s.assistant(None, stop="error", blocks=[{"type": "text", "text": 5}])
    return s


def case_error_turn_string_content() -> S:
    s = S()
    s.user("u")
    s.add("message", message={"role": "assistant", "content": "just a string", "provider": "p", "model": "m",
                              "stopReason": "error", "usage": usage(), "timestamp": 3})
    return s


def case_assistant_without_content() -> S:
    s = S()
    s.user("u")
    s.add("message", message={"role": "assistant", "provider": "p", "model": "m", "stopReason": "stop",
                              "usage": usage(), "timestamp": 3, "retryRecovery": {"kind": "auto-retry"}})
    return s


def case_thinking_signature_variants() -> S:
    s = S()
    s.user("u")
    s.assistant("t", blocks=[{"type": "thinking", "thinking": "a", "thinkingSignature": ""},
                             {"type": "thinking", "thinking": "b", "thinkingSignature": "s2", "itemId": "i"},
                             {"type": "redactedThinking", "data": "x"}, "loose", 7], calls=("d1", "d1"))
    return s


def case_tool_ids_odd() -> S:
    s = S()
    s.user("u")
    s.assistant("t", blocks=[{"type": "toolCall", "name": "n", "arguments": {}},
                             {"type": "toolCall", "id": 5, "name": "n", "arguments": {}},
                             {"type": "toolCall", "id": "5", "name": "n", "arguments": {}}])
    s.add("message", message={"role": "toolResult", "toolName": "n", "content": [], "isError": False,
                              "timestamp": 4})
    s.add("message", message={"role": "toolResult", "toolCallId": 5, "toolName": "n", "content": [],
                              "isError": False, "timestamp": 4})
    return s


# ---------------------------------------------------------------------------
# C55-C57: custom messages, service tier, context notes


def case_c55_custom_messages() -> S:
    s = S()
    s.user("u")
    s.add("custom_message", customType="prewalk-plan", content="plan", display=True)
    s.add("custom_message", customType="vibe-mode-context", content=[{"type": "text", "text": "vibe"}], display=False)
    s.add("custom_message", content="", display="yes")
    s.add("custom_message", customType="", content=[], display=1, attribution="user", details=None)
    s.add("custom_message", customType=42, content="c", display=True, attribution=None, details={"a": 1})
    s.add("custom_message", customType="x", content=5, display=True)
    s.add("custom_message", customType="x", content={"text": "obj"}, display=True)
    s.add("custom_message", customType="y", content="ts", display=False, attribution="robot", ts=1_772_366_400_999)
    s.add("custom_message", customType="z", content="null ts", display=False, ts=None)
    s.add("custom_message", customType="w", content="bad ts", display=False, ts="yesterday")
    s.add("custom_message", customType="v", content="null ts", display=False, ts=[2020])
    s.add("custom_message", customType="v", content="json null ts", display=False, ts=LEAF)
    s.records[-1]["timestamp"] = None
    s.add("message", message={"role": "hookMessage", "customType": "legacy", "content": "hook", "display": True,
                              "timestamp": 9})
    return s


def case_c56_service_tier() -> S:
    s = S()
    s.user("u")
    s.add("service_tier_change", serviceTier="priority")
    return s


def case_c56_service_tier_cleared() -> S:
    s = S()
    s.add("service_tier_change", serviceTier="priority")
    s.add("service_tier_change", serviceTier=None)
    return s


def case_c56_service_tier_forms() -> S:
    s = S()
    for i, value in enumerate(["openai-only", "claude-only", "flex", "bogus", ["priority"], 5,
                               {"google": "priority", "openai": "nope", "anthropic": "scale"}]):
        s.add("service_tier_change", serviceTier=value)
        s.add("custom", customType=f"marker{i}")
    return s


def case_c56_service_tier_object_invalid() -> S:
    s = S()
    s.add("service_tier_change", serviceTier={"openai": "fast"})
    return s


def case_c57_context_notes() -> S:
    s = S()
    s.user("u1")
    s.add("custom", customType="experimental_context_notes", data={"version": 1, "text": "old notes"})
    s.add("custom", customType="experimental_context_notes",
          data={"text": "- task: port\n\n\n| a |  b |\n|:--|--:|\n```\n  code   \n```\n  trailing   \n</x>\n",
                "version": 1})
    s.add("custom", customType="experimental_context_notes", data={"version": 1, "text": "x", "extra": 1})
    s.add("custom", customType="experimental_context_notes", data={"version": "1", "text": "string version"})
    s.add("custom", customType="experimental_context_notes", data={"version": 1, "text": "é" * 8193})
    s.assistant("a1")
    return s


def case_c57_context_notes_cleared() -> S:
    s = S()
    s.user("u1")
    s.add("custom", customType="experimental_context_notes", data={"version": 1, "text": "notes"})
    s.add("custom", customType="experimental_context_notes", data={"version": 1, "text": ""})
    return s


def case_context_notes_dup_id() -> S:
    # omp dates the notes message from the *first* path entry carrying the notes entry's id.
    s = S()
    s.add("custom", eid="dupnotes", customType="other", ts="2026-01-01T00:00:00.000Z")
    s.user("u1")
    s.add("custom", eid="dupnotes2", customType="experimental_context_notes",
          data={"version": 1, "text": "# Notes\n\n\n\n  - one  \n\t\n- two\n|x|\n<tag>\n\n</tag>"})
    return s


# ---------------------------------------------------------------------------
# transcript bookkeeping, modes, ttsr


def case_modes_and_cache_misses() -> S:
    s = S()
    s.user("u")
    s.assistant("a", provider="p1", model="m1")
    s.assistant("b", provider="p1", model="m1")
    s.assistant("c", provider="p2", model="m1")
    s.add("mode_change", mode="plan", data={"plan": "x"})
    s.assistant("d", provider="p2", model="m1")
    s.add("mode_change", mode="review")
    s.assistant("e", provider="p2", model="m1")
    s.add("mode_change", mode="plan")
    s.add("mode_change", mode="none")
    s.add("model_change", model="p2/m1")
    s.user("u2")
    s.assistant("f", provider="p2", model="m1")
    s.add("mode_change")
    return s


def case_ttsr_rules() -> S:
    s = S()
    s.add("ttsr_injection", injectedRules=["a", "b"])
    s.add("ttsr_injection", injectedRules=["b", "c", 1, "1"])
    s.add("ttsr_injection", injectedRules="xy")
    s.add("ttsr_injection", injectedRules=[])
    return s


def case_ttsr_missing_rules() -> S:
    s = S()
    s.user("u")
    s.add("ttsr_injection")
    return s


def case_collapsed_kept_region() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1", calls=("k1",))
    a = s.result("k1")
    s.assistant("a1b", provider="p2", model="m2")
    s.add("mode_change", mode="plan")
    s.add("custom_message", customType="note", content="n", display=True)
    s.assistant("a2", provider="p2", model="m2")
    s.compaction(a, shortSummary="s")
    s.assistant("a3", provider="p2", model="m2")
    return s


def case_collapsed_no_turn_start() -> S:
    s = S()
    s.user("u1")
    a = s.assistant("a1")
    s.assistant("a2", provider="p9")
    s.compaction(a)
    s.user("u2")
    return s


def case_full_transcript_snapcompact_replacement() -> S:
    s = S()
    s.user("u1")
    c1 = s.compaction("e0001", method="snapcompact", tokensBefore=5)
    s.compaction("e0001", method="snapcompact", tokensBefore=5, summary="replacement")
    s.user("u2")
    s.compaction("e0001", method="snapcompact", tokensBefore=6, parent=c1, summary="not a child")
    s.user("u3")
    return s


def _frames(n: int, legacy: bool = False, data: str = "iVBORw0KGgo=", **extra: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        frame: dict[str, Any] = {"data": f"{data}{i}", "mimeType": "image/png", "cols": 80, "rows": 40,
                                 "chars": 3200}
        if not legacy:
            frame.update({"font": "5x8", "variant": "sent"})
        frame.update(extra)
        out.append(frame)
    return out


def case_snapcompact_archive() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    archive = {"frames": [*_frames(2, detail="high"), {"data": "", "mimeType": "image/png"},
                          {"data": "blob:sha256:" + "ab" * 32, "mimeType": "image/png", "cols": 1, "rows": 1,
                           "chars": 1}, *_frames(1, detail="")],
               "totalChars": 100, "truncatedChars": 0,
               "textHead": "old \u000ehead\u000f\u2588line ![img](data:image/png;base64,AAAA) end",
               "textTail": "new tail data:text/plain;charset=utf-8;base64,SGVsbG8[…12ch elided…]=="}
    s.compaction("e0002", method="snapcompact", preserveData={"snapcompact": archive})
    s.user("u2")
    return s


def case_snapcompact_blob_frames() -> S:
    s = S()
    s.user("u1")
    frames = _frames(3)
    frames[0]["data"] = "blob:sha256:" + BLOB_SHA
    frames[1]["data"] = "blob:sha256:" + "0" * 64
    frames[2]["data"] = "blob:sha256:" + BLOB_SHA.upper()
    archive = {"frames": frames, "textHead": "head", "textTail": "tail", "truncatedChars": 0}
    s.compaction("e0001", method="snapcompact", preserveData={"snapcompact": archive})
    s.user("u2")
    return s


def case_snapcompact_text_only() -> S:
    s = S()
    s.user("u1")
    s.compaction("e0001", method="snapcompact",
                 preserveData={"snapcompact": {"frames": [], "textTail": "tail only", "truncatedChars": 3}})
    s.user("u2")
    return s


def case_snapcompact_legacy_guard() -> S:
    # 16 legacy frames: the LLM context omits every frame (byte budget 0); 1250 bytes -> "1.3 KB"
    # (toFixed rounds the exact half up).
    s = S()
    s.user("u1")
    frames = _frames(16, legacy=True)
    for i, frame in enumerate(frames):
        frame["data"] = ("Q" * (80 if i == 0 else 78))
    archive = {"frames": frames, "text": "x" * 10, "truncatedChars": 0}
    s.compaction("e0001", method="snapcompact", preserveData={"snapcompact": archive})
    s.user("u2")
    return s


def case_snapcompact_legacy_unavailable_mix() -> S:
    s = S()
    s.user("u1")
    frames = _frames(17, legacy=True)
    frames[3]["data"] = "blob:sha256:" + "cd" * 32
    frames[4]["data"] = "blob:sha256:../etc"
    archive = {"frames": frames, "textHead": "h", "textTail": "t", "truncatedChars": 2}
    s.compaction("e0001", method="snapcompact", preserveData={"snapcompact": archive})
    s.user("u2")
    return s


def case_snapcompact_empty_and_markdown() -> S:
    s = S()
    s.user("u1")
    s.compaction("e0001", preserveData={"snapcompact": {"frames": [{"data": 5}], "text": ""}})
    s.user("u2")
    text = ("a [label](data:image/png;base64,QUJD) b ![x](  data:image/jpeg;base64,"
            + "Q" * 50 + "  ) c (data:image/gif;base64,R0lG) [y](data:application/pdf;base64,)")
    s.compaction("e0003", summary="md", preserveData={"snapcompact": {"textHead": text, "frames": "nope"}})
    s.user("u3")
    return s


# ---------------------------------------------------------------------------
# leaf and path shapes


def case_leaf_no_id() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.raw({"type": "message", "parentId": "e0001", "timestamp": iso(9),
           "message": {"role": "user", "content": "no id leaf", "timestamp": 9}})
    return s


def case_leaf_null_id() -> S:
    s = S()
    s.user("u1")
    s.raw({"type": "message", "id": None, "parentId": "e0001", "timestamp": iso(9),
           "message": {"role": "user", "content": "null id leaf", "timestamp": 9}})
    return s


def case_trailing_number() -> S:
    s = S()
    s.user("u1")
    s.assistant("a1")
    s.raw("42")
    return s


def case_trailing_zero() -> S:
    s = S()
    s.user("u1")
    s.raw("0")
    return s


def case_trailing_values() -> S:
    s = S()
    s.user("u1")
    s.raw('"text"')
    s.raw("[1,2]")
    s.raw("true")
    return s


def case_trailing_false() -> S:
    s = S()
    s.user("u1")
    s.raw("false")
    return s


def case_side_branch_leaf() -> S:
    s = S()
    u1 = s.user("u1")
    s.assistant("main reply")
    s.user("main u2")
    s.add("model_usage", parent=u1, purpose="title", api="x", provider="p", model="m", usage=usage(7, 3, 0.5),
          stopReason="stop")
    return s


def case_cycle_and_missing_parent() -> S:
    s = S()
    s.add("message", eid="aa", parent="cc", message={"role": "user", "content": "A", "timestamp": 1})
    s.add("message", eid="bb", parent="aa", message={"role": "user", "content": "B", "timestamp": 2})
    s.add("message", eid="cc", parent="bb", message={"role": "user", "content": "C", "timestamp": 3})
    return s


def case_dup_ids() -> S:
    s = S()
    s.user("u1", eid="aaaaaaaa")
    s.add("compaction", eid="cmp", summary="first", firstKeptEntryId="aaaaaaaa", tokensBefore=1)
    s.user("u2", eid="bbbbbbbb")
    s.add("compaction", eid="cmp", summary="dup id", firstKeptEntryId="bbbbbbbb", tokensBefore=2)
    s.user("u3")
    return s


def case_numeric_and_odd_ids() -> S:
    # Map keys are type-sensitive in JS: true is not 1, but 1.0 is 1.
    s = S()
    s.add("message", parent=None, message={"role": "user", "content": "id 1", "timestamp": 1})
    s.records[-1]["id"] = 1
    s.add("message", parent=1, message={"role": "user", "content": "child of 1", "timestamp": 2})
    s.add("message", parent=True, message={"role": "user", "content": "child of true", "timestamp": 3})
    s.add("message", parent="", message={"role": "user", "content": "empty parent", "timestamp": 4})
    s.add("message", parent=1.5, message={"role": "user", "content": "float parent", "timestamp": 5})
    s.add("message", parent="e0003", message={"role": "user", "content": "via true child", "timestamp": 6})
    return s


def case_float_parent_id() -> S:
    s = S()
    s.add("message", parent=None, message={"role": "user", "content": "id 1", "timestamp": 1})
    s.records[-1]["id"] = 1
    s.add("message", parent=None, message={"role": "user", "content": "float parent", "timestamp": 2})
    s.records[-1]["parentId"] = 1.0
    return s


def case_unknown_types_and_roles() -> S:
    s = S()
    s.user("u")
    s.add("futuristic_entry", payload=[1, 2])
    s.add("message", message={"role": "mystery", "content": "?", "timestamp": 1})
    s.add("message", message={"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 0,
                              "cancelled": False, "truncated": False, "timestamp": 2})
    s.add("message", message=5)
    s.add("message", message="string message")
    s.add("label", targetId="e0001", label="kept")
    s.add("title_change", title="t", source="user")
    s.add("session_init", systemPrompt="p", task="t", tools=[])
    s.add("credential_pin", provider="p", hash="00")
    s.raw({"id": "notype", "parentId": "e0010", "timestamp": iso(99)})
    return s


def case_compaction_no_fields() -> S:
    s = S()
    s.user("u")
    s.add("compaction")
    s.user("u2")
    return s


# ---------------------------------------------------------------------------
# usage statistics (S13.1, C70)


def case_c70_usage() -> S:
    s = S()
    u1 = s.user("u1")
    s.assistant("a1")
    s.add("message", parent=u1, message={"role": "assistant", "content": [], "provider": "p", "model": "m",
                                         "stopReason": "stop", "timestamp": 1,
                                         "usage": usage(5, 6, 0.25, orchestration={"input": 3, "output": 4,
                                                                                   "cacheRead": 2},
                                                        premiumRequests=2)})
    s.add("message", message={"role": "toolResult", "toolCallId": "t", "toolName": "task", "content": [],
                              "isError": False, "timestamp": 2, "details": {"usage": usage(1, 1, 1.0)}})
    s.add("message", message={"role": "toolResult", "toolCallId": "t", "toolName": "task", "content": [],
                              "isError": False, "timestamp": 2, "details": {"usage": None}})
    s.add("message", message={"role": "toolResult", "toolCallId": "t", "toolName": "read", "content": [],
                              "isError": False, "timestamp": 2, "details": {"usage": usage(9, 9, 9.0)}})
    s.add("model_usage", purpose="title", api="x", provider="p", model="m", usage=usage(2, 2, 0.125),
          stopReason="stop")
    s.add("model_usage", purpose="title", api="x", provider="p", model="m", usage=None, stopReason="stop")
    return s


def case_usage_odd_values() -> S:
    s = S()
    s.user("u")
    s.add("model_usage", usage={"input": "12", "output": None, "cacheRead": True, "totalTokens": [1, 2],
                                "cacheWrite": {"x": 1}, "orchestration": 5, "premiumRequests": None,
                                "cost": {"total": "0.5"}})
    s.add("model_usage", usage={"input": 1, "output": 1, "cacheRead": 1, "cacheWrite": 1, "totalTokens": 1,
                                "cost": {"total": None}, "orchestration": {"input": None, "output": "o"}})
    s.add("model_usage", usage={"cost": 3})
    s.add("model_usage", usage=0)
    s.add("model_usage", usage="")
    return s


def case_usage_missing_cost() -> S:
    s = S()
    s.user("u")
    s.add("model_usage", usage={"input": 1, "output": 1})
    return s


def case_usage_truthy_non_object() -> S:
    s = S()
    s.add("model_usage", usage=7)
    return s


def case_usage_task_array_details() -> S:
    s = S()
    s.add("message", message={"role": "toolResult", "toolCallId": "t", "toolName": "task", "content": [],
                              "isError": False, "timestamp": 2, "details": {"usage": []}})
    return s


def case_v2_hook_message() -> S:
    s = S(version=2)
    s.user("u")
    s.add("message", message={"role": "hookMessage", "customType": "h", "content": "hook text", "display": True,
                              "timestamp": 3})
    s.add("compaction", summary="s", firstKeptEntryId="e0002", tokensBefore=3, fromHook=True)
    s.user("after")
    return s


CASES: dict[str, Callable[[], S]] = {
    name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_") and callable(fn)
}
