#!/usr/bin/env python3
"""Seeded generator of omp session files (valid, legacy, damaged) and ``run`` scripts.

    python3 gen_sessions.py --seed 1 --count 200 --out /tmp/sessions [--kinds all] [--scripts 50]
    python3 gen_sessions.py --list-kinds

Writes ``OUT/NNNN_<kind>.jsonl``, ``OUT/blobs/<sha256>`` (for ``load --blobs``),
``OUT/manifest.json`` (per file: kind, size, features and, where a kind has them, its variant)
and, with ``--scripts N``, ``OUT/scripts/NNNN_script.json``. Each file depends only on
(seed, index, kind), so one file can be regenerated without the rest. ``--kinds`` takes a
comma list of kinds, or ``all``, ``valid`` (``v3_*``, ``v1``, ``v2``) or ``damaged``
(``dmg_*``); kinds are used in rotation, ``large_stream`` (>= 8 MiB) only every 4th round.

Records are shaped like the ones omp 18.2.3 writes (key order, envelopes, message shapes;
the spec's S1-S5), so that what a damaged file gets wrong is only what its kind names.
Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

STREAM_THRESHOLD = 8 * 1024 * 1024
ROUND = 24  # kinds in a round without large_stream
SLOT_WIDTH = 256
WORDS = ("session", "importer", "tool", "model", "error", "retry", "module", "result", "cache", "parse",
         "branch", "token", "buffer", "build", "test", "stream", "context", "summary", "label", "file",
         "refactor", "compaction", "thinking", "path", "schema", "loader", "writer", "index")
UNICODE_BITS = ("naïve café", "日本語のテキスト", "emoji 😀🎉", "Ελληνικά", "back\\slash", 'quote "x"',
                "tab\there", "line\nbreak", "zero\u200bwidth", "rtl \u05e9\u05dc\u05d5\u05dd")
PROVIDERS = (
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("anthropic", "claude-opus-4-1", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
    ("openrouter", "qwen/qwen3-coder", "openai-completions"),
)
TOOLS = ("read", "write", "edit", "bash", "find", "grep")
LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
FILES = ("src/model.ts", "src/loader.ts", "README.md", "package.json", "src/session/index.ts", "tests/a.test.ts")
PNG_1PX = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2"
                        "21bc330000000049454e44ae426082")


class Raw:
    """A physical line written exactly as given (bytes, no LF added by the line itself)."""

    def __init__(self, data: bytes | str) -> None:
        self.data = data.encode() if isinstance(data, str) else data


def dumps(value: Any) -> str:
    """JSON as omp's JSON.stringify writes it (no spaces, raw UTF-8, lowercase \\u escapes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def title_slot(title: str, source: str | None, updated_at: str, width: int = SLOT_WIDTH) -> str:
    """A title slot padded to ``width`` bytes including its LF (S1.2.3), title cut to fit (S1.2.4)."""
    def line(t: str, pad: str) -> str:
        slot: dict[str, Any] = {"type": "title", "v": 1, "title": t}
        if source is not None:
            slot["source"] = source
        slot["updatedAt"] = updated_at
        slot["pad"] = pad
        return dumps(slot)

    chars = list(title)
    while chars and len(line("".join(chars), "").encode()) + 1 > width:
        chars.pop()
    text = "".join(chars)
    used = len(line(text, "").encode()) + 1
    return line(text, " " * max(0, width - used))


class Session:
    """Builds one session file record by record, tracking ids, the leaf and the clock."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.clock = datetime(2026, 3, 1, 9, 0, tzinfo=UTC) + timedelta(seconds=rng.randrange(0, 86400 * 20))
        self.records: list[Any] = []
        self.ids: list[str] = []
        self.leaf: str | None = None
        self.features: set[str] = set()
        self.provider = rng.choice(PROVIDERS)
        self.cwd = rng.choice(("/home/dev/project", "/work/app", "/Users/ana/code/site", "/srv/repo"))
        self.session_id = self.uuid7()
        self.started = self.now()
        self.extra: dict[str, Any] = {}  # manifest details a kind wants to record
        self.cycle = 0  # set from the file's index: walks a kind's variants across a corpus

    def variant(self, choices: tuple[str, ...]) -> str:
        """The next variant of this kind's cycle (from a seeded start), so that a corpus of a few
        rounds holds every variant rather than a random subset."""
        return choices[self.cycle % len(choices)]

    # -- primitives -------------------------------------------------------------------------
    def tick(self, low: float = 0.05, high: float = 30.0) -> datetime:
        self.clock += timedelta(milliseconds=self.rng.randrange(int(low * 1000), int(high * 1000)))
        return self.clock

    def now(self) -> str:
        return iso(self.tick())

    def ms(self) -> int:
        return int(self.clock.timestamp() * 1000)

    def new_id(self) -> str:
        while True:
            value = f"{self.rng.getrandbits(32):08x}"
            if value not in self.ids:
                self.ids.append(value)
                return value

    def uuid7(self) -> str:
        ms = int(self.clock.timestamp() * 1000) if hasattr(self, "clock") else 0
        tail = self.rng.getrandbits(74)
        return (f"{ms >> 16:08x}-{ms & 0xFFFF:04x}-7{tail >> 62 & 0xFFF:03x}-"
                f"{0x8000 | (tail >> 48 & 0x3FFF):04x}-{tail & 0xFFFFFFFFFFFF:012x}")

    def words(self, low: int = 3, high: int = 12) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(low, high)))

    def text(self) -> str:
        body = self.words()
        if self.rng.random() < 0.15:
            body += " " + self.rng.choice(UNICODE_BITS)
            self.features.add("unicode")
        return body

    # -- records ----------------------------------------------------------------------------
    def header(self, version: Any = 3, **extra: Any) -> dict[str, Any]:
        head: dict[str, Any] = {"type": "session"}
        if version is not None:
            head["version"] = version
        head.update({"id": self.session_id, "timestamp": self.started, "cwd": self.cwd})
        head.update(extra)
        self.records.append(head)
        return head

    def slot(self, title: str = "", source: str | None = None) -> None:
        self.records.append(Raw(title_slot(title, source, self.started)))
        self.features.add("title_slot")

    def entry(self, kind: str, fields: dict[str, Any], *, parent: Any = "leaf", move_leaf: bool = True,
              front: tuple[str, ...] = ()) -> str:
        """Append an entry with omp's envelope; ``front`` keys precede it (custom, custom_message)."""
        entry_id = self.new_id()
        record: dict[str, Any] = {"type": kind}
        for key in front:
            if key in fields:
                record[key] = fields[key]
        # appended moments after the message it carries was created
        record.update({"id": entry_id, "parentId": self.leaf if parent == "leaf" else parent,
                       "timestamp": iso(self.tick(0.001, 0.4))})
        record.update({k: v for k, v in fields.items() if k not in front})
        self.records.append(record)
        self.features.add(kind)
        if move_leaf:
            self.leaf = entry_id
        return entry_id

    def message(self, message: dict[str, Any], **kw: Any) -> str:
        return self.entry("message", {"message": message}, **kw)

    def usage(self) -> dict[str, Any]:
        inp, out = self.rng.randint(200, 60000), self.rng.randint(20, 4000)
        read = self.rng.choice((0, 0, self.rng.randint(100, 40000)))
        cost = {"input": round(inp * 3e-6, 6), "output": round(out * 1.5e-5, 6), "cacheRead": round(read * 3e-7, 6),
                "cacheWrite": 0}
        cost = {k: (v if v >= 1e-4 else 0) for k, v in cost.items()}
        cost["total"] = round(sum(cost.values()), 6)
        return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": 0, "totalTokens": inp + out + read,
                "cost": cost}

    def user(self, content: Any = None, **extra: Any) -> str:
        self.tick()
        if content is None:
            content = self.text() if self.rng.random() < 0.6 else [{"type": "text", "text": self.text()}]
        return self.message({"role": "user", "content": content, "timestamp": self.ms(), **extra})

    def assistant(self, blocks: list[dict[str, Any]] | None = None, stop: str = "stop", **extra: Any) -> str:
        provider, model, api = self.provider
        self.tick(1, 20)
        if blocks is None:
            blocks = []
            if self.rng.random() < 0.4:
                blocks.append({"type": "thinking", "thinking": self.words(),
                               "thinkingSignature": base64.b64encode(self.rng.randbytes(24)).decode()})
                self.features.add("thinking")
            blocks.append({"type": "text", "text": self.text()})
        message: dict[str, Any] = {"role": "assistant", "content": blocks, "api": api, "provider": provider,
                                   "model": model, "usage": self.usage(), "stopReason": stop,
                                   "timestamp": self.ms()}
        if provider in ("anthropic", "openai") and self.rng.random() < 0.5:
            message["responseId"] = ("msg_" if provider == "anthropic" else "resp_") + f"{self.rng.getrandbits(64):016x}"
        message.update(extra)
        return self.message(message)

    def tool_call(self) -> dict[str, Any]:
        name = self.rng.choice(TOOLS)
        args: dict[str, Any] = {"path": self.rng.choice(FILES)}
        if name == "bash":
            args = {"command": self.rng.choice(("ls -la", "npm test", "git status", "rg TODO src"))}
        elif name == "edit":
            args["oldText"], args["newText"] = self.words(1, 3), self.words(1, 3)
        prefix = {"anthropic": "toolu_01", "openai": "call_", "google": "gc_"}.get(self.provider[0], "call_")
        return {"type": "toolCall", "id": f"{prefix}{self.rng.getrandbits(40):010x}", "name": name, "arguments": args}

    def tool_result(self, call: dict[str, Any], error: bool = False) -> str:
        self.tick(0.05, 3)
        return self.message({"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
                             "content": [{"type": "text", "text": self.text()}], "isError": error,
                             "timestamp": self.ms()})

    def turn(self, tools: bool | None = None) -> str:
        """user -> assistant (-> tool calls -> results -> assistant); returns the last id."""
        self.user()
        if tools is None:
            tools = self.rng.random() < 0.55
        if tools:
            calls = [self.tool_call() for _ in range(self.rng.randint(1, 3))]
            self.assistant([{"type": "text", "text": self.text()}, *calls], stop="toolUse")
            for call in calls:
                self.tool_result(call, error=self.rng.random() < 0.1)
            self.features.add("tool_calls")
        return self.assistant()

    def model_change(self) -> str:
        provider, model, _ = self.provider
        fields: dict[str, Any] = {"model": f"{provider}/{model}"}
        if self.rng.random() < 0.7:
            fields["role"] = self.rng.choice(("default", "default", "smol", "slow"))
        fields["resolvedModelIsFallback"] = False
        return self.entry("model_change", fields)

    def thinking_change(self) -> str:
        level = self.rng.choice(LEVELS)
        return self.entry("thinking_level_change",
                          {"thinkingLevel": level, "configured": self.rng.choice((level, "auto", None))})

    def opening(self) -> None:
        if self.rng.random() < 0.7:
            self.model_change()
        if self.rng.random() < 0.6:
            self.thinking_change()

    def compaction(self, first_kept: Any, **extra: Any) -> str:
        fields: dict[str, Any] = {"summary": "## Goal\n" + self.words(8, 20), "firstKeptEntryId": first_kept,
                                  "tokensBefore": self.rng.randint(50000, 190000)}
        if self.rng.random() < 0.5:
            fields = {"summary": fields["summary"], "shortSummary": self.words(2, 5), **fields}
        fields.update(extra)
        return self.entry("compaction", fields)

    def branch_summary(self, target: str | None, **extra: Any) -> str:
        fields = {"fromId": target if target is not None else "root", "summary": self.words(5, 15), **extra}
        return self.entry("branch_summary", fields, parent=target)

    def label(self, target: Any, *args: Any) -> str:
        return self.entry("label", {"targetId": target, **({"label": args[0]} if args else {})})

    def custom(self, custom_type: str, data: Any = ..., **kw: Any) -> str:
        fields = {"customType": custom_type} if data is ... else {"customType": custom_type, "data": data}
        return self.entry("custom", fields, front=("customType", "data"), **kw)

    def custom_message(self, custom_type: str, content: Any, display: bool, details: Any = None,
                       attribution: str = "agent") -> str:
        fields: dict[str, Any] = {"customType": custom_type, "content": content, "display": display}
        if details is not None:
            fields["details"] = details
        fields["attribution"] = attribution
        return self.entry("custom_message", fields, front=("customType", "content", "display", "details",
                                                          "attribution"))

    # -- output -----------------------------------------------------------------------------
    def lines(self) -> list[bytes]:
        return [r.data if isinstance(r, Raw) else dumps(r).encode() for r in self.records]

    def render(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines())


def base(s: Session, turns: tuple[int, int] = (2, 5), slot: float = 0.6) -> None:
    """Slot (sometimes) + header + a linear conversation."""
    if s.rng.random() < slot:
        s.slot()
    s.header()
    s.opening()
    for _ in range(s.rng.randint(*turns)):
        s.turn()


# -- valid kinds ----------------------------------------------------------------------------------

def gen_v3_linear(s: Session) -> None:
    base(s, (2, 7))
    if s.rng.random() < 0.3:
        s.model_change()
        s.turn()


def gen_v3_branched(s: Session) -> None:
    base(s, (2, 4))
    variants = s.rng.sample(["sibling", "summary", "summary_root", "second_root", "old_leaf"], s.rng.randint(2, 4))
    for v in variants:
        if v == "sibling":  # a sibling of an earlier user message's reply
            s.leaf = s.rng.choice(s.ids[: max(1, len(s.ids) // 2)])
            s.turn(tools=False)
        elif v == "summary":
            target = s.rng.choice(s.ids)
            s.branch_summary(target, **({"details": {"readFiles": [s.rng.choice(FILES)]}} if s.rng.random() < 0.4
                                        else {}))
            s.turn(tools=False)
        elif v == "summary_root":
            s.branch_summary(None)
            s.turn(tools=False)
        elif v == "second_root":
            s.leaf = None
            s.turn(tools=False)
        elif v == "old_leaf":  # the last record sits on an older branch, so the leaf moves back there
            s.leaf = s.rng.choice(s.ids[:-2])
            s.user()
        s.features.add(f"branch_{v}")
    s.extra["variants"] = sorted(variants)


def gen_v3_compaction(s: Session) -> None:
    base(s, (2, 4))
    for _ in range(s.rng.randint(1, 3)):
        path_ids = [i for i in s.ids if i is not None]
        choice = s.rng.random()
        if choice < 0.15:
            first_kept = "deadbeef"
            s.features.add("compaction_unknown_first_kept")
        elif choice < 0.3 and len(path_ids) > 4:
            # an id on another branch: omp still starts the kept tail there
            side_parent = s.leaf
            s.leaf = path_ids[1]
            first_kept = s.user()
            s.leaf = side_parent
            s.features.add("compaction_off_path")
        else:
            first_kept = s.rng.choice(path_ids[len(path_ids) // 2:])
        extra: dict[str, Any] = {}
        if s.rng.random() < 0.4:
            extra["tokensAfter"] = s.rng.randint(2000, 20000)
        if s.rng.random() < 0.3:
            extra["details"] = {"readFiles": list(s.rng.sample(FILES, 2)), "modifiedFiles": [s.rng.choice(FILES)]}
        if s.rng.random() < 0.2:
            extra["fromExtension"] = True
        s.compaction(first_kept, **extra)
        s.turn()
        if s.rng.random() < 0.35:  # the next compaction lives on a branch
            s.leaf = s.rng.choice(s.ids[2:-1])
            s.turn(tools=False)
            s.features.add("compaction_in_branch")


def gen_v3_labels(s: Session) -> None:
    base(s, (2, 4))
    targets = [r["id"] for r in s.records if isinstance(r, dict) and r.get("type") == "message"]
    done: list[str] = []
    for _ in range(s.rng.randint(2, 6)):
        t = s.rng.choice(targets)
        how = s.rng.choice(("set", "set", "replace", "clear_omit", "clear_empty", "clear_null", "dangling",
                            "non_string"))
        if how == "set":
            s.label(t, s.words(1, 2))
        elif how == "replace":
            s.label(t, "first")
            s.label(t, "second")
        elif how == "clear_omit":
            s.label(t, "gone")
            s.label(t)
        elif how == "clear_empty":
            s.label(t, "gone")
            s.label(t, "")
        elif how == "clear_null":
            s.label(t, "gone")
            s.label(t, None)
        elif how == "dangling":
            s.label("0badc0de", "nowhere")
        else:
            s.label(t, s.rng.choice((7, True, ["a"], {"x": 1})))
        done.append(how)
        s.features.add(f"label_{how}")
        if s.rng.random() < 0.4:
            s.turn(tools=False)
    s.extra["variants"] = sorted(set(done))


def gen_v3_custom(s: Session) -> None:
    base(s, (1, 3))
    for _ in range(s.rng.randint(2, 6)):
        pick = s.rng.randrange(7)
        if pick == 0:
            s.custom("todo-state", {"items": [{"text": s.words(2, 4), "done": s.rng.random() < 0.5}]})
        elif pick == 1:
            s.custom("session_exit")  # no data
        elif pick == 2:
            s.custom("experimental_context_notes", {"version": 1, "text": s.words(5, 15)})
            s.features.add("context_notes")
        elif pick == 3:
            s.custom_message("my-extension", s.text(), True, {"source": "hook"})
        elif pick == 4:
            s.custom_message("reminder", [{"type": "text", "text": s.text()}], s.rng.random() < 0.5,
                             attribution=s.rng.choice(("agent", "user")))
        elif pick == 5:
            s.custom_message(s.rng.choice(("prewalk-plan", "vibe-mode-context")), s.text(), True)
            s.features.add("custom_message_excluded")
        else:
            s.custom("tool_execution_start", {"toolCallId": "toolu_01x", "toolName": "bash",
                                              "args": {"command": "ls"}, "startedAt": s.ms()})
        if s.rng.random() < 0.4:
            s.turn(tools=False)


def gen_v3_title(s: Session) -> None:
    variant = s.variant(("user", "auto", "no_source", "empty", "unicode", "long", "title_change",
                         "no_slot_header_title", "bad_source", "bad_version", "narrow", "wide"))
    title = s.words(2, 6)
    if variant == "unicode":
        title = "Fix " + s.rng.choice(("日本語 ", "émoji 😀 ", "Ελληνικά ")) + title
    if variant == "long":
        title = ("very long title " + s.words(20, 40)) * 2
    source = {"user": "user", "auto": "auto", "no_source": None, "empty": None}.get(variant, s.rng.choice(("user",
                                                                                                        "auto")))
    slot_title = "" if variant == "empty" else title
    if variant == "bad_source":
        s.records.append(Raw(title_slot(slot_title, "robot", s.started)))
    elif variant == "bad_version":
        s.records.append(Raw(title_slot(slot_title, source, s.started).replace('"v":1', '"v":2', 1)))
    elif variant in ("narrow", "wide"):
        s.records.append(Raw(title_slot(slot_title[:40], source, s.started, 200 if variant == "narrow" else 300)))
    elif variant != "no_slot_header_title":
        s.records.append(Raw(title_slot(slot_title, source, s.started)))
    s.features.add(f"title_slot_{variant}")
    head: dict[str, Any] = {}
    if slot_title or variant == "no_slot_header_title":
        head = {"title": title, "titleSource": source or "auto"}
    s.header(**head)
    s.opening()
    for _ in range(s.rng.randint(1, 3)):
        s.turn()
    if variant in ("title_change", "long", "user", "auto") and s.rng.random() < 0.7:
        s.entry("title_change", {"title": title, "source": source or "auto", "previousTitle": s.words(1, 3),
                                 "trigger": s.rng.choice(("auto-title", "rename"))})
        s.turn(tools=False)
    s.extra["variant"] = variant


def gen_v3_misc(s: Session) -> None:
    base(s, (1, 2))
    ops = s.rng.sample(["tier", "mode", "reset", "ttsr", "init", "usage", "pin", "error", "aborted",
                        "empty_error", "dangling_call", "developer", "bash"], s.rng.randint(3, 6))
    provider, model, api = s.provider
    for op in ops:
        if op == "tier":
            s.entry("service_tier_change", {"serviceTier": s.rng.choice(({"openai": "priority"}, None, "priority",
                                                                         {"anthropic": "flex", "google": "bogus"},
                                                                         "claude-only", "weird"))})
        elif op == "mode":
            s.entry("mode_change", {"mode": "plan", "data": {"planFile": "PLAN.md"}})
            s.turn(tools=False)
            s.entry("mode_change", {"mode": "none"})
        elif op == "reset":
            s.entry("reset_boundary", {})
        elif op == "ttsr":
            s.entry("ttsr_injection", {"injectedRules": s.rng.sample(["no-any", "tests-first", "small-prs"], 2)})
        elif op == "init":
            s.entry("session_init", {"systemPrompt": "You are a subagent. " + s.words(), "task": s.words(),
                                     "tools": ["read", "grep"], "agent": "explore", "readOnly": True})
        elif op == "usage":  # attached to the initiating branch; the leaf does not move
            s.entry("model_usage", {"purpose": "title", "role": "smol", "api": api, "provider": provider,
                                    "model": model, "usage": s.usage(), "stopReason": "stop"}, move_leaf=False)
        elif op == "pin":
            s.entry("credential_pin", {"provider": provider,
                                       "hash": hashlib.sha256(f"{provider}\0acct\0a@b.c\0\0".encode()).hexdigest()})
        elif op == "error":
            s.user()
            s.assistant([], stop="error", errorMessage="529 overloaded_error: Overloaded", errorStatus=529)
        elif op == "aborted":
            s.user()
            s.assistant([{"type": "text", "text": "partial"}], stop="aborted", errorMessage="Request was aborted")
        elif op == "empty_error":
            s.user()
            s.assistant([], stop="error", errorMessage="")
        elif op == "dangling_call":
            s.user()
            s.assistant([s.tool_call()], stop="toolUse")
        elif op == "developer":
            s.tick()
            s.message({"role": "developer", "content": s.text(), "timestamp": s.ms()})
        elif op == "bash":
            s.tick()
            s.message({"role": "bashExecution", "command": "git status", "output": "clean", "exitCode": 0,
                       "cancelled": False, "truncated": False, "timestamp": s.ms()})
        s.features.add(op)
        if s.rng.random() < 0.4:
            s.turn(tools=False)
    s.extra["ops"] = ops


def gen_v3_mixed(s: Session) -> None:
    base(s, (1, 3))
    for _ in range(s.rng.randint(3, 8)):
        pick = s.rng.randrange(8)
        if pick == 0:
            s.compaction(s.rng.choice(s.ids))
        elif pick == 1:
            s.branch_summary(s.rng.choice(s.ids))
        elif pick == 2:
            s.label(s.rng.choice(s.ids), s.words(1, 2))
        elif pick == 3:
            s.custom("state", {"n": s.rng.randint(0, 99)})
        elif pick == 4:
            s.custom_message("ext", s.text(), s.rng.random() < 0.5)
        elif pick == 5:
            s.entry("mode_change", {"mode": s.rng.choice(("plan", "none"))})
        elif pick == 6:
            s.model_change()
        else:
            s.leaf = s.rng.choice(s.ids)
        s.turn()


def legacy_message(s: Session, role: str | None = None) -> dict[str, Any]:
    provider, model, api = s.provider
    s.tick()
    role = role or s.rng.choice(("user", "assistant"))
    if role == "user":
        return {"role": "user", "content": s.text(), "timestamp": s.ms()}
    if role == "hookMessage":
        s.features.add("hookMessage")
        return {"role": "hookMessage", "customType": "legacy-hook", "content": s.text(), "display": True,
                "timestamp": s.ms()}
    return {"role": "assistant", "content": [{"type": "text", "text": s.text()}], "api": api, "provider": provider,
            "model": model, "usage": s.usage(), "stopReason": "stop", "timestamp": s.ms()}


def gen_v1(s: Session) -> None:
    """No version, no ids; compaction points by index into the records (header = 0)."""
    if s.rng.random() < 0.3:  # v1 headers often carried the model
        s.header(version=None, provider=s.provider[0], modelId=s.provider[1])
    else:
        s.header(version=None)
    for _ in range(s.rng.randint(2, 5)):
        roles = ["user", "assistant"] + (["hookMessage"] if s.rng.random() < 0.3 else [])
        for role in roles:
            message = legacy_message(s, role)
            s.records.append({"type": "message", "timestamp": iso(s.tick(0.001, 0.4)), "message": message})
    s.features.add("message")
    if s.rng.random() < 0.4:  # ids in a v1 file are overwritten by the migration
        for r in s.records[1:3]:
            r["id"], r["parentId"] = s.new_id(), None
        s.features.add("v1_with_ids")
    for _ in range(s.rng.randint(1, 2)):
        n = len(s.records)
        index = s.rng.choice((1, s.rng.randrange(1, n), 0, n + 5, n - 1, "2", 1.5, None, -1))
        s.records.append({"type": "compaction", "timestamp": s.now(), "summary": s.words(5, 10),
                          "firstKeptEntryIndex": index, "tokensBefore": s.rng.randint(1000, 90000)})
        s.features.add("compaction")
        s.features.add("firstKeptEntryIndex")
        s.extra.setdefault("indexes", []).append(index)
        for _ in range(s.rng.randint(1, 3)):
            s.records.append({"type": "message", "timestamp": s.now(), "message": legacy_message(s)})
    if s.rng.random() < 0.3:
        s.records.append({"type": "model_change", "timestamp": s.now(), "provider": s.provider[0],
                          "modelId": s.provider[1]})
        s.features.add("model_change_legacy")


def gen_v2(s: Session) -> None:
    s.header(version=2)
    for _ in range(s.rng.randint(2, 5)):
        s.user()
        s.message(legacy_message(s, s.rng.choice(("assistant", "hookMessage"))))
    if s.rng.random() < 0.5:
        s.compaction(s.rng.choice(s.ids), fromHook=True)
        s.features.add("fromHook")
        s.message(legacy_message(s, "user"))
    if s.rng.random() < 0.5:
        s.branch_summary(s.rng.choice(s.ids), fromHook=s.rng.random() < 0.5)
        s.message(legacy_message(s, "hookMessage"))


# -- damaged kinds --------------------------------------------------------------------------------

def body_positions(s: Session) -> list[int]:
    """Indexes of the records after the header."""
    start = next(i for i, r in enumerate(s.records) if isinstance(r, dict) and r.get("type") == "session")
    return list(range(start + 1, len(s.records)))


def gen_dmg_malformed(s: Session) -> None:
    base(s, (2, 5))
    made = []
    for _ in range(s.rng.randint(1, 3)):
        pos = s.rng.choice([i for i in body_positions(s) if isinstance(s.records[i], dict)])
        how = s.rng.randrange(6)
        if how == 0:
            line = s.rng.choice(("not json", "{\"a\":1,}", "}{", "[1,2", "garbage ☃"))
            s.records.insert(pos, Raw(line))
        elif how == 1:  # half a record followed by more lines
            s.records.insert(pos, Raw(dumps(s.records[pos])[: s.rng.randint(5, 40)]))
            line = "half"
        elif how == 2:
            s.records[pos] = Raw(dumps(s.records[pos]) + " trailing")
            line = "trailing"
        elif how == 3:
            dup = dict(s.records[pos], id=s.new_id())
            s.records[pos] = Raw(dumps(s.records[pos]) + " " + dumps(dup))
            line = "two_objects"
        elif how == 4:
            s.records[pos] = Raw(json.dumps(s.records[pos], ensure_ascii=False, indent=1))
            line = "multi_line"
        else:
            s.records.insert(pos, Raw('{"type":"message","id":"' + s.new_id() + '",'))
            line = "open_object"
        made.append(line)
    s.extra["malformed"] = made


def gen_dmg_blank(s: Session) -> None:
    base(s, (2, 4))
    variant = s.variant(("plain", "crlf", "no_final_newline", "all"))
    out = []
    for line in s.lines():
        out.append(line)
        if s.rng.random() < 0.25:
            out.append(s.rng.choice((b"", b"   ", b"\t", b" \t ")))
    eol = b"\r\n" if variant in ("crlf", "all") else b"\n"
    data = eol.join(out) + eol
    if variant in ("no_final_newline", "all"):
        data = data[: -len(eol)]
    s.records = [Raw(data)]
    s.extra["variant"] = variant
    s.features.add("blank_lines")


def gen_dmg_truncated(s: Session) -> None:
    base(s, (2, 5))
    if s.rng.random() < 0.5:  # the last message ends inside a multi-byte character
        s.user("partial " + "日本語テキスト" * 3)
    data = s.render()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    end = len(data) - 1
    cut = s.rng.randrange(last + 1, end)
    text_at = data.find("日".encode(), last)
    if text_at > 0 and s.rng.random() < 0.7:
        cut = text_at + 1  # mid UTF-8 sequence
        s.features.add("mid_utf8")
    s.records = [Raw(data[:cut])]
    s.extra["cut_at"] = cut


def gen_dmg_dup_ids(s: Session) -> None:
    base(s, (2, 4), slot=0.3)
    entries = [r for r in s.records if isinstance(r, dict) and "parentId" in r]
    variant = s.variant(("same_parent", "other_parent", "cycle", "leaf_dup"))
    victim = s.rng.choice(entries[:-1])
    if variant == "same_parent":
        s.records.append(dict(victim, timestamp=s.now()))
    elif variant == "other_parent":
        s.records.append({"type": "custom", "customType": "x", "id": victim["id"], "parentId": s.leaf,
                          "timestamp": s.now()})
    elif variant == "cycle":  # a duplicate of an ancestor hung below its descendant
        s.records.append({"type": "custom", "customType": "x", "id": entries[0]["id"], "parentId": s.leaf,
                          "timestamp": s.now()})
    else:
        s.records.append(dict(entries[-1], timestamp=s.now()))
    s.extra["variant"] = variant


def gen_dmg_missing_parent(s: Session) -> None:
    base(s, (2, 4))
    made = []
    for _ in range(s.rng.randint(1, 3)):
        variant = s.rng.choice(("unknown", "absent", "number", "empty", "self"))
        s.turn(tools=False)
        record = s.records[-2]
        if variant == "unknown":
            record["parentId"] = "ffff0000"
        elif variant == "absent":
            del record["parentId"]
        elif variant == "number":
            record["parentId"] = 12345
        elif variant == "empty":
            record["parentId"] = ""
        else:
            record["parentId"] = record["id"]
        made.append(variant)
    s.extra["variants"] = made


def gen_dmg_cycle(s: Session) -> None:
    base(s, (2, 3))
    variant = s.variant(("self", "two", "long", "leaf_in_cycle"))
    ents = [r for r in s.records if isinstance(r, dict) and "parentId" in r]
    if variant == "self":
        ents[-1]["parentId"] = ents[-1]["id"]
    elif variant == "two":
        a, b = ents[1], ents[2]
        a["parentId"], b["parentId"] = b["id"], a["id"]
    elif variant == "long":
        ring = ents[1: min(len(ents), 5)]
        ring[0]["parentId"] = ring[-1]["id"]
    else:
        ents[1]["parentId"] = ents[-1]["id"]
        ents[-1]["parentId"] = ents[-2]["id"]
    s.extra["variant"] = variant


def gen_dmg_nonobject(s: Session) -> None:
    base(s, (2, 4))
    values = []
    for _ in range(s.rng.randint(1, 3)):
        value = s.rng.choice(("42", '"a string"', "[1,2,3]", "true", "false", "null", "-0.5", "[]", '""'))
        s.records.insert(s.rng.choice([*body_positions(s), len(s.records)]), Raw(value))
        values.append(value)
    s.extra["values"] = values


def gen_dmg_bom(s: Session) -> None:
    base(s, (2, 4), slot=0.5)
    where = s.variant(("start", "inside", "start"))
    if where == "start":
        first = s.records[0]
        s.records[0] = Raw(b"\xef\xbb\xbf" + (first.data if isinstance(first, Raw) else dumps(first).encode()))
    else:
        pos = s.rng.choice(body_positions(s))
        s.records[pos] = Raw(b"\xef\xbb\xbf" + dumps(s.records[pos]).encode())
    s.extra["where"] = where


def gen_dmg_unknown(s: Session) -> None:
    version = (3, 4, 99, "3", 0, 2.5, None, "abc", 3)[s.cycle % 9]
    if s.rng.random() < 0.5:
        s.slot(s.words(1, 3), "auto")
    extra = {"workspaceId": "ws_1"} if s.rng.random() < 0.5 else {}
    s.header(version=version, **extra)
    s.opening()
    s.turn()
    for _ in range(s.rng.randint(1, 4)):
        pick = s.rng.randrange(5)
        if pick == 0:
            s.entry("future_thing", {"payload": {"a": [1, 2]}})
        elif pick == 1:
            s.turn(tools=False)
            s.records[-1]["message"]["newField"] = {"x": True}
            s.records[-1]["extraEnvelope"] = 1
        elif pick == 2:
            s.records.append({"type": "title", "title": "second title record"})
        elif pick == 3:
            s.custom("proto", {"__proto__": {"polluted": True}, "constructor": 1})
            s.features.add("__proto__")
        else:
            s.records.append({"id": s.new_id(), "parentId": s.leaf, "timestamp": s.now(), "note": "no type"})
        s.turn(tools=False)
    s.extra["version"] = version


def gen_dmg_huge(s: Session) -> None:
    base(s, (1, 2))
    n = s.rng.randint(500_001, 1_200_000)
    where = s.variant(("tool_result", "custom", "user"))
    big = (s.words(40, 40) + "\n") * (n // 200 + 1)
    big = big[:n]
    if where == "tool_result":
        call = s.tool_call()
        s.user()
        s.assistant([call], stop="toolUse")
        s.message({"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
                   "content": [{"type": "text", "text": big}], "isError": False, "timestamp": s.ms()})
        s.assistant()
    elif where == "custom":
        s.custom("big-state", {"dump": big})
    else:
        s.user(big)
        s.assistant()
    s.extra["where"] = where
    s.extra["chars"] = n


def blob_image(s: Session, blobs: dict[str, bytes], state: str) -> dict[str, Any]:
    payload = PNG_1PX + s.rng.randbytes(s.rng.randint(16, 200))
    sha = hashlib.sha256(payload).hexdigest()
    if state == "present":
        blobs[sha] = payload
        data = f"blob:sha256:{sha}"
    elif state == "missing":
        data = f"blob:sha256:{hashlib.sha256(payload + b'x').hexdigest()}"
    elif state == "upper":
        data = f"blob:sha256:{sha.upper()}"
    elif state == "short":
        data = f"blob:sha256:{sha[:40]}"
    elif state == "dotdot":
        data = "blob:sha256:../../etc/passwd"
    else:  # a large inline image
        data = base64.b64encode(payload + s.rng.randbytes(s.rng.randint(20_000, 120_000))).decode()
    return {"type": "image", "data": data, "mimeType": "image/png"}


def gen_dmg_blob(s: Session, blobs: dict[str, bytes]) -> None:
    base(s, (1, 2))
    states = []
    for _ in range(s.rng.randint(1, 4)):
        state = s.rng.choice(("present", "present", "missing", "upper", "short", "dotdot", "inline", "image_url"))
        states.append(state)
        if state == "image_url":
            url = "data:image/png;base64," + base64.b64encode(PNG_1PX + s.rng.randbytes(32)).decode()
            sha = hashlib.sha256(url.encode()).hexdigest()
            blobs[sha] = url.encode()
            call = s.tool_call()
            s.user()
            s.assistant([call], stop="toolUse")
            s.message({"role": "toolResult", "toolCallId": call["id"], "toolName": "computer",
                       "content": [{"type": "text", "text": "screenshot"}], "isError": False,
                       "providerMetadata": {"screenshot": {"image_url": f"blob:sha256:{sha}"}}, "timestamp": s.ms()})
            s.assistant()
            continue
        image = blob_image(s, blobs, state)
        if s.rng.random() < 0.5:
            s.user([{"type": "text", "text": "look at this"}, image])
        else:
            call = s.tool_call()
            s.user()
            s.assistant([call], stop="toolUse")
            s.message({"role": "toolResult", "toolCallId": call["id"], "toolName": "read",
                       "content": [{"type": "text", "text": "image"}, image], "isError": False,
                       "timestamp": s.ms()})
        s.assistant()
    s.extra["variants"] = states


def gen_dmg_header(s: Session) -> None:
    variant = s.variant(("missing", "not_first", "no_id", "numeric_id", "numeric_cwd", "two_headers", "empty",
                         "title_only", "whitespace_only", "null_cwd"))
    s.extra["variant"] = variant
    if variant in ("empty", "title_only", "whitespace_only"):
        s.records = [Raw(title_slot(s.words(1, 3), "auto", s.started))] if variant == "title_only" else []
        if variant == "whitespace_only":
            s.records = [Raw(b"  \n\t\n")]
        return
    base(s, (1, 3), slot=0.3)
    head_at = next(i for i, r in enumerate(s.records) if isinstance(r, dict) and r.get("type") == "session")
    head = s.records[head_at]
    if variant == "missing":
        del s.records[head_at]
    elif variant == "not_first":
        s.records.insert(head_at + 2, s.records.pop(head_at))
    elif variant == "no_id":
        del head["id"]
    elif variant == "numeric_id":
        head["id"] = 1234
    elif variant == "numeric_cwd":
        head["cwd"] = 42
    elif variant == "null_cwd":
        head["cwd"] = None
    else:
        s.records.insert(head_at + 3, dict(head, id=s.uuid7()))


def gen_dmg_encoding(s: Session) -> None:
    base(s, (2, 3))
    made = []
    for _ in range(s.rng.randint(1, 3)):
        how = s.rng.choice(("invalid", "overlong", "surrogate", "nul", "control", "inf", "bigint", "nbsp"))
        eid, parent, now = s.new_id(), s.leaf, s.now()
        envelope = f'{{"type":"custom","customType":"enc","id":"{eid}","parentId":"{parent}","timestamp":"{now}",'
        if parent is None:
            envelope = envelope.replace('"parentId":"None"', '"parentId":null')
        payload = {"invalid": b'"data":"bad \xff\xfe bytes"}', "overlong": b'"data":"over \xc0\xaf long"}',
                   "surrogate": b'"data":"lone \\ud800 and \\udc00"}', "nul": b'"data":"nul \\u0000 char"}',
                   "control": b'"data":"raw \x01 control"}', "inf": b'"data":{"inf":1e400,"neg":-1e400}}',
                   "bigint": b'"data":{"big":12345678901234567890,"neg":-98765432109876543210}}',
                   "nbsp": '"data":"non\u00a0breaking\u00a0space"}'.encode()}[how]
        s.records.append(Raw(envelope.encode() + payload))
        s.leaf = eid
        made.append(how)
        if s.rng.random() < 0.5:
            s.turn(tools=False)
    s.extra["variants"] = made


def gen_dmg_entry_shape(s: Session) -> None:
    base(s, (2, 3))
    made = []
    for _ in range(s.rng.randint(1, 3)):
        how = s.rng.choice(("no_message", "no_role", "content_number", "numeric_id", "numeric_timestamp",
                            "label_no_target", "compaction_empty", "no_type", "assistant_no_content",
                            "usage_no_cost", "ttsr_no_rules", "error_content_string"))
        s.turn(tools=False)
        last = s.records[-1]
        msg = last["message"]
        if how == "no_message":
            del last["message"]
        elif how == "no_role":
            del msg["role"]
        elif how == "content_number":
            s.records[-2]["message"]["content"] = 7
        elif how == "numeric_id":
            last["id"] = 31337
            s.leaf = None  # nothing may hang below a number we would have to spell as a string
        elif how == "numeric_timestamp":
            last["timestamp"] = 1772355600000
        elif how == "label_no_target":
            s.entry("label", {"label": "orphan"})
        elif how == "compaction_empty":
            s.records.append({"type": "compaction", "id": s.new_id(), "parentId": s.leaf, "timestamp": s.now()})
            s.leaf = s.records[-1]["id"]
        elif how == "no_type":
            del last["type"]
        elif how == "assistant_no_content":
            del msg["content"]
        elif how == "usage_no_cost":
            del msg["usage"]["cost"]
        elif how == "ttsr_no_rules":
            s.entry("ttsr_injection", {})
        else:
            msg["stopReason"], msg["content"], msg["errorMessage"] = "error", "boom", "boom"
        made.append(how)
    s.extra["variants"] = made


def gen_large_stream(s: Session) -> None:
    """Big tool outputs (file reads, logs) rather than many turns: few records of 100-450 KB each,
    so the file is large while loading it stays quick."""
    base(s, (1, 2), slot=0.5)
    target = STREAM_THRESHOLD + s.rng.randint(0, 1 << 18)
    size = len(s.render())
    line_pool = [f"{n:5d}  " + s.words(10, 24) for n in range(400)]
    while size < target:
        done = len(s.records)
        call = s.tool_call()
        s.user()
        s.assistant([{"type": "text", "text": s.text()}, call], stop="toolUse")
        lines = s.rng.randint(1500, 3000)  # under omp's 500,000-character limit (that is dmg_huge)
        body = "\n".join(line_pool[i % 400] for i in range(s.rng.randrange(400), lines))
        s.tick(0.05, 3)
        s.message({"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
                   "content": [{"type": "text", "text": body}], "isError": False, "timestamp": s.ms()})
        s.assistant()
        size += sum(len(dumps(r).encode()) + 1 for r in s.records[done:])
    s.features.add("tool_calls")
    if s.rng.random() < 0.3:
        first = s.records[0]
        s.records[0] = Raw(b"\xef\xbb\xbf" + (first.data if isinstance(first, Raw) else dumps(first).encode()))
        s.features.add("bom")


KINDS: dict[str, tuple[str, Callable[..., None]]] = {
    "v3_linear": ("valid v3 linear conversation with tool calls, model/thinking changes", gen_v3_linear),
    "v3_branched": ("valid v3 tree: siblings, branch summaries (also from root), second roots, leaf on an old "
                    "branch", gen_v3_branched),
    "v3_compaction": ("valid v3 with 1-3 compactions, nested in branches, firstKeptEntryId unknown/off-path",
                      gen_v3_compaction),
    "v3_labels": ("labels set, replaced, cleared (omitted, empty, null), dangling, non-string", gen_v3_labels),
    "v3_custom": ("custom and custom_message entries (string/array content, display, details)", gen_v3_custom),
    "v3_title": ("title slot variants (user/auto/no source, unicode, long, bad slots), title_change", gen_v3_title),
    "v3_misc": ("service tier, mode, reset boundary, ttsr, session_init, model_usage, credential_pin, error/"
                "aborted turns, dangling tool calls", gen_v3_misc),
    "v3_mixed": ("random mix of every valid v3 construct", gen_v3_mixed),
    "v1": ("legacy v1: no version, no ids; firstKeptEntryIndex (0, out of range, odd types); hookMessage", gen_v1),
    "v2": ("legacy v2: hookMessage roles, fromHook", gen_v2),
    "dmg_malformed": ("garbage, half JSON, trailing garbage, two objects on a line, multi-line JSON",
                      gen_dmg_malformed),
    "dmg_blank": ("blank and whitespace-only lines, CRLF, no final newline", gen_dmg_blank),
    "dmg_truncated": ("file cut mid-record, possibly mid UTF-8 sequence", gen_dmg_truncated),
    "dmg_dup_ids": ("duplicate entry ids, including one that closes a cycle", gen_dmg_dup_ids),
    "dmg_missing_parent": ("parentId naming no entry, absent, numeric, empty, self", gen_dmg_missing_parent),
    "dmg_cycle": ("parent cycles: self, two, longer; leaf inside the cycle", gen_dmg_cycle),
    "dmg_nonobject": ("numbers, strings, arrays, booleans, null as records", gen_dmg_nonobject),
    "dmg_bom": ("UTF-8 BOM before the first line or inside the file", gen_dmg_bom),
    "dmg_unknown": ("unknown types and fields, versions 4/99/\"3\"/0/2.5/absent, __proto__ keys", gen_dmg_unknown),
    "dmg_huge": ("strings over 500,000 characters", gen_dmg_huge),
    "dmg_blob": ("blob refs present/missing/malformed/../, large inline images, image_url data URLs", gen_dmg_blob),
    "dmg_header": ("header missing, not first, no/numeric id, numeric cwd, two headers, empty, title-only, "
                   "whitespace-only", gen_dmg_header),
    "dmg_encoding": ("invalid/overlong UTF-8, lone surrogates, \\u0000, raw control chars, 1e400, big ints, NBSP",
                     gen_dmg_encoding),
    "dmg_entry_shape": ("entries with missing or mistyped fields", gen_dmg_entry_shape),
    "large_stream": ("files of at least 8 MiB (omp's streaming loader), with and without BOM", gen_large_stream),
}


def generate(seed: int, index: int, kind: str, blobs: dict[str, bytes] | None = None) -> tuple[bytes, dict[str, Any]]:
    """The bytes of file ``index`` of ``kind`` and its manifest entry (without the file name)."""
    rng = random.Random(f"omp-session-reference:{seed}:{index}:{kind}")
    s = Session(rng)
    # consecutive files of one kind are ROUND apart with every kind selected, 1 apart with one kind
    s.cycle = index // ROUND + index % ROUND + random.Random(f"omp-session-reference:{seed}:{kind}").randrange(997)
    fn = KINDS[kind][1]
    if kind == "dmg_blob":
        fn(s, blobs if blobs is not None else {})
    else:
        fn(s)
    data = s.render()
    if len(s.records) == 1 and isinstance(s.records[0], Raw) and kind in ("dmg_blank", "dmg_truncated"):
        data = s.records[0].data
    entry: dict[str, Any] = {"kind": kind, "size": len(data), "features": sorted(s.features)}
    entry.update(s.extra)
    return data, entry


def rotation(kinds: list[str], count: int) -> list[str]:
    """``count`` kinds in rotation; ``large_stream`` only in every 4th round (unless alone)."""
    small = [k for k in kinds if k != "large_stream"]
    out: list[str] = []
    rnd = 0
    while len(out) < count:
        out += small + (["large_stream"] if "large_stream" in kinds and (rnd % 4 == 3 or not small) else [])
        rnd += 1
    return out[:count]


GROUPS = {
    "all": lambda k: True,
    "valid": lambda k: k.startswith("v"),
    "damaged": lambda k: k.startswith("dmg_"),
}


def select_kinds(spec: str) -> list[str]:
    """Kinds by name or group (``all``, ``valid``, ``damaged``), alone or in a comma list
    (``valid,dmg_bom``), in KINDS order."""
    chosen: set[str] = set()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if part in GROUPS:
            chosen.update(k for k in KINDS if GROUPS[part](k))
        elif part in KINDS:
            chosen.add(part)
        else:
            raise ValueError(f"unknown kind {part!r} (see --list-kinds)")
    return [k for k in KINDS if k in chosen]


# -- run scripts ----------------------------------------------------------------------------------

def script(seed: int, index: int) -> dict[str, Any]:
    """A ``run`` script: build a session through SessionManager calls, branching, renaming, reopening."""
    rng = random.Random(f"omp-session-reference-script:{seed}:{index}")
    s = Session(rng)
    ops: list[dict[str, Any]] = []
    names: list[str] = []
    user_names: list[str] = []

    def add(op: dict[str, Any], ref: bool = True) -> None:
        if ref:
            op["as"] = f"e{len(names) + 1}"
            names.append(op["as"])
        ops.append(op)

    def message(msg: dict[str, Any]) -> None:
        add({"op": "appendMessage", "message": msg})
        if msg["role"] == "user":
            user_names.append(names[-1])

    def turn() -> None:
        s.records.clear()
        s.turn()
        for record in s.records:
            message(record["message"])

    provider, model, _ = s.provider
    if rng.random() < 0.7:
        add({"op": "appendModelChange", "model": f"{provider}/{model}", "role": "default"})
    if rng.random() < 0.7:
        level = rng.choice(LEVELS)
        add({"op": "appendThinkingLevelChange", "thinkingLevel": level, "configured": rng.choice((level, "auto"))})
    turn()
    for _ in range(rng.randint(3, 9)):
        pick = rng.randrange(14)
        if pick < 4:
            turn()
        elif pick == 4:
            add({"op": "appendCompaction", "summary": s.words(5, 12), "firstKeptEntryId": f"${rng.choice(names)}",
                 "tokensBefore": rng.randint(10000, 150000)})
        elif pick == 5:
            add({"op": "appendLabelChange", "targetId": f"${rng.choice(user_names)}", "label": s.words(1, 2)})
        elif pick == 6:
            add({"op": "appendCustomEntry", "customType": "state", "data": {"n": rng.randint(0, 9)}})
        elif pick == 7:
            add({"op": "appendCustomMessageEntry", "customType": "ext", "content": s.text(), "display": True,
                 "details": {"k": 1}})
        elif pick == 8:
            add({"op": "branch", "entryId": f"${rng.choice(user_names)}"}, ref=False)
            turn()
        elif pick == 9:
            add({"op": "branchWithSummary", "entryId": f"${rng.choice(names)}", "summary": s.words(4, 9)})
        elif pick == 10:
            add({"op": "setSessionName", "name": s.words(2, 4), "source": rng.choice(("user", "auto"))}, ref=False)
        elif pick == 11:
            add({"op": "reopen"}, ref=False)
        elif pick == 12:
            add({"op": rng.choice(("snapshot", "resetLeaf", "getTree", "getBranch"))}, ref=False)
            if ops[-1]["op"] == "resetLeaf":
                turn()
        else:
            add({"op": rng.choice(("fork", "createBranchedSession"))}, ref=False)
            if ops[-1]["op"] == "createBranchedSession":
                ops[-1]["leafId"] = f"${rng.choice(names)}"
            turn()
    add({"op": "flush"}, ref=False)
    return {"cwd": s.cwd, "ops": ops}


# -- command line ---------------------------------------------------------------------------------

def write_corpus(seed: int, count: int, out: Path, kinds: list[str], scripts: int) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    blobs: dict[str, bytes] = {}
    manifest: dict[str, Any] = {"seed": seed, "count": count, "kinds": kinds, "files": []}
    for index, kind in enumerate(rotation(kinds, count)):
        data, entry = generate(seed, index, kind, blobs)
        name = f"{index:04d}_{kind}.jsonl"
        (out / name).write_bytes(data)
        manifest["files"].append({"file": name, **entry})
    blob_dir = out / "blobs"
    blob_dir.mkdir(exist_ok=True)
    for sha, payload in sorted(blobs.items()):
        (blob_dir / sha).write_bytes(payload)
    if scripts:
        (out / "scripts").mkdir(exist_ok=True)
        manifest["scripts"] = []
        for index in range(scripts):
            name = f"{index:04d}_script.json"
            (out / "scripts" / name).write_text(json.dumps(script(seed, index), ensure_ascii=False, indent=1) + "\n")
            manifest["scripts"].append(name)
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--kinds", default="all", help="all, valid, damaged or a comma list of kinds")
    parser.add_argument("--list-kinds", action="store_true", help="print every kind and what it holds")
    parser.add_argument("--scripts", type=int, default=0, metavar="N", help="also write N run scripts")
    args = parser.parse_args(argv)
    if args.list_kinds:
        for name, (what, _) in KINDS.items():
            print(f"{name:20} {what}")
        return 0
    if args.out is None:
        parser.error("--out is required")
    if args.count < 0 or args.scripts < 0:
        parser.error("--count and --scripts must not be negative")
    try:
        kinds = select_kinds(args.kinds)
    except ValueError as exc:
        parser.error(str(exc))
    if not kinds:
        parser.error("no kinds selected")
    write_corpus(args.seed, args.count, args.out, kinds, args.scripts)
    print(f"wrote {args.count} session files" + (f" and {args.scripts} scripts" if args.scripts else "")
          + f" to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
