#!/usr/bin/env python3
"""Random oracle ``run`` scripts that use every SessionManager operation.

    python tests/conformance/gen_scripts.py --seed N --count 100 --out DIR [--files CORPUS]

``gen_sessions.py --scripts`` covers the common calls; these scripts add the rest: appends to
other branches, model usage, every append type with and without optional arguments, unknown
parents and targets, huge strings (truncation), large images (blob store), title sources,
``newSession``, ``fork``, ``createBranchedSession``, flushes, rewrites, reopening, getters, in-memory
sessions, and sessions opened from generated files (``--files``: a ``gen_sessions.py`` corpus whose
files are copied next to the scripts). The same seed gives the same scripts.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import shutil
from pathlib import Path
from typing import Any

MODELS = ["anthropic/claude-sonnet-4-5", "openai/gpt-5", "google/gemini-2.5-pro"]
ROLES = ["default", "smol", "slow", None]
LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"]


class Script:
    def __init__(self, rng: random.Random, *, tree_views: bool = True) -> None:
        self.rng = rng
        # omp's getTree() never returns on some files with duplicate ids; a snapshot or getTree
        # there would cost the whole script (the final tree view is handled on its own)
        self.tree_views = tree_views
        self.ops: list[dict[str, Any]] = []
        self.refs: list[str] = []
        # explicit timestamps (message times, custom message entries, replicated entries) lie
        # in 2020: before every clock reading, ours and the oracle's alike, so entries sort the
        # same way in both trees
        self.clock = 1_577_836_800_000

    def ts(self) -> int:
        self.clock += self.rng.randint(1, 5000)
        return self.clock

    def ref(self) -> str:
        return "$" + self.rng.choice(self.refs) if self.refs and self.rng.random() < 0.93 else "zzzzzzzz"

    def add(self, op: dict[str, Any], *, named: bool = True) -> None:
        if named:
            name = f"r{len(self.refs)}"
            op["as"] = name
            self.refs.append(name)
        self.ops.append(op)

    def text(self) -> str:
        r = self.rng.random()
        if r < 0.02:
            return "x" * self.rng.choice([500_000, 500_001, 600_000]) + "é😀"
        if r < 0.05:
            return "ünïcødé 😀 \u2028 \x01 ctrl"
        return self.rng.choice(["hello", "fix the bug", "run the tests", "ok", ""]) + f" {self.rng.randint(0, 999)}"

    def image(self) -> dict[str, Any]:
        size = self.rng.choice([100, 1024, 3000])
        data = base64.b64encode(bytes(self.rng.randrange(256) for _ in range(size))).decode()
        return {"type": "image", "data": data, "mimeType": self.rng.choice(["image/png", "image/jpeg"])}

    def message(self) -> dict[str, Any]:
        role = self.rng.choice(["user", "user", "assistant", "assistant", "toolResult"])
        if role == "user":
            content: Any = self.text() if self.rng.random() < 0.6 else [{"type": "text", "text": self.text()}]
            if self.rng.random() < 0.1:
                content = [{"type": "text", "text": "look"}, self.image()]
            return {"role": "user", "content": content, "timestamp": self.ts()}
        if role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text()}]
            if self.rng.random() < 0.3:
                blocks.insert(0, {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"})
            if self.rng.random() < 0.4:
                blocks.append({"type": "toolCall", "id": f"t{self.rng.randint(0, 99)}", "name": "read",
                               "arguments": {"path": "a.py"}})
            provider, model = self.rng.choice(MODELS).split("/")
            cost = round(self.rng.random() / 100, 6)
            return {"role": "assistant", "content": blocks, "api": "anthropic-messages", "provider": provider,
                    "model": model,
                    "usage": {"input": self.rng.randint(0, 9999), "output": self.rng.randint(0, 999), "cacheRead": 0,
                              "cacheWrite": 0, "totalTokens": 0,
                              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}},
                    "stopReason": self.rng.choice(["stop", "toolUse", "length", "error", "aborted"]),
                    "timestamp": self.ts()}
        content = [{"type": "text", "text": self.text()}]
        if self.rng.random() < 0.1:
            content.append(self.image())
        return {"role": "toolResult", "toolCallId": f"t{self.rng.randint(0, 99)}", "toolName": "read",
                "content": content, "isError": self.rng.random() < 0.2, "timestamp": self.ts()}

    def maybe(self, op: dict[str, Any], key: str, value: Any, p: float = 0.5) -> None:
        if self.rng.random() < p:
            op[key] = value

    def step(self) -> None:
        rng = self.rng
        kind = rng.choices(
            ["message", "to_branch", "model", "thinking", "tier", "mode", "init", "compaction", "reset", "custom",
             "custom_message", "label", "ttsr", "pin", "branch", "branch_summary", "reset_leaf", "title", "usage",
             "replicate", "branched", "fork", "new", "flush", "rewrite", "reopen", "snapshot", "get"],
            weights=[30, 3, 3, 3, 2, 2, 1, 3, 1, 2, 3, 4, 1, 1, 3, 2, 1, 3, 2, 1, 1, 1, 1, 3, 1, 2, 2, 4])[0]
        op: dict[str, Any]
        if kind == "message":
            self.add({"op": "appendMessage", "message": self.message()})
        elif kind == "to_branch":
            self.add({"op": "appendMessageToBranch", "message": self.message(),
                      "parentId": None if rng.random() < 0.2 else self.ref()})
        elif kind == "model":
            op = {"op": "appendModelChange", "model": rng.choice(MODELS)}
            role = rng.choice(ROLES)
            if role is not None:
                op["role"] = role
            self.maybe(op, "resolvedModelIsFallback", rng.random() < 0.5, 0.3)
            self.add(op)
        elif kind == "thinking":
            op = {"op": "appendThinkingLevelChange"}
            self.maybe(op, "thinkingLevel", rng.choice(LEVELS), 0.8)
            self.maybe(op, "configured", rng.choice(["auto", *LEVELS, None]))
            self.add(op)
        elif kind == "tier":
            self.add({"op": "appendServiceTierChange",
                      "serviceTier": rng.choice([None, {"openai": "flex"}, {"anthropic": "priority"}])})
        elif kind == "mode":
            op = {"op": "appendModeChange", "mode": rng.choice(["plan", "none", "agent"])}
            self.maybe(op, "data", {"step": rng.randint(0, 9)})
            self.add(op)
        elif kind == "init":
            init: dict[str, Any] = {"systemPrompt": "be brief", "task": "review", "tools": ["read", "bash"]}
            if rng.random() < 0.5:
                init["agent"] = "reviewer"
                init["readOnly"] = True
            self.add({"op": "appendSessionInit", "init": init})
        elif kind == "compaction":
            op = {"op": "appendCompaction", "summary": "summary " + self.text()[:40], "firstKeptEntryId": self.ref(),
                  "tokensBefore": rng.randint(1000, 90000)}
            self.maybe(op, "shortSummary", rng.choice(["short", None]))
            if rng.random() < 0.5:
                options: dict[str, Any] = {}
                self.maybe(options, "method", rng.choice(["remote", "handoff", "soft"]))
                self.maybe(options, "tokensAfter", rng.randint(100, 900))
                self.maybe(options, "details", {"files": ["a.py"]})
                self.maybe(options, "fromExtension", True, 0.2)
                op["options"] = options
            self.add(op)
        elif kind == "reset":
            self.add({"op": "appendResetBoundary"})
        elif kind == "custom":
            op = {"op": "appendCustomEntry", "customType": rng.choice(["hud", "todo", "x"])}
            self.maybe(op, "data", {"n": rng.randint(0, 9)})
            self.add(op)
        elif kind == "custom_message":
            op = {"op": "appendCustomMessageEntry"}
            self.maybe(op, "customType", rng.choice(["ext", "", 7]), 0.9)
            self.maybe(op, "content", rng.choice(["injected", [{"type": "text", "text": "blk"}], 42]), 0.9)
            self.maybe(op, "display", rng.choice([True, False, "yes"]), 0.9)
            self.maybe(op, "details", rng.choice([{"a": 1}, {"a": 1, "__queueChipText": "q"}, None]))
            self.maybe(op, "attribution", rng.choice(["user", "agent", "robot"]))
            self.maybe(op, "timestamp", self.ts(), 0.3)
            self.add(op)
        elif kind == "label":
            op = {"op": "appendLabelChange", "targetId": self.ref()}
            self.maybe(op, "label", rng.choice(["start", "checkpoint", "", None]), 0.8)
            self.add(op)
        elif kind == "ttsr":
            self.add({"op": "appendTtsrInjection", "ruleNames": rng.sample(["a", "b", "c"], rng.randint(0, 3))})
        elif kind == "pin":
            self.add({"op": "appendCredentialPin", "provider": "anthropic", "hash": f"{rng.getrandbits(64):016x}"})
        elif kind == "branch":
            self.add({"op": "branch", "entryId": self.ref()}, named=False)
        elif kind == "branch_summary":
            op = {"op": "branchWithSummary", "entryId": None if rng.random() < 0.2 else self.ref(),
                  "summary": rng.choice(["left a branch", ""])}
            self.maybe(op, "details", {"why": "test"}, 0.3)
            self.maybe(op, "fromExtension", True, 0.2)
            self.add(op)
        elif kind == "reset_leaf":
            self.add({"op": "resetLeaf"}, named=False)
        elif kind == "title":
            op = {"op": "setSessionName", "name": rng.choice(["Fix  the\tbug", "  ", "Refactor\nparser", "x" * 300,
                                                             "ünïcødé 😀" * 20])}
            self.maybe(op, "source", rng.choice(["user", "auto"]), 0.7)
            self.maybe(op, "trigger", "auto-title", 0.2)
            self.add(op, named=False)
        elif kind == "usage":
            self.ops.append({"op": "call", "method": "getSessionId", "as": "sid"})
            owner = {"sessionId": rng.choice(["$sid", "$sid", "nope"]), "parentId": None if rng.random() < 0.2
                     else self.ref()}
            self.add({"op": "call", "method": "appendModelUsage", "args": [
                {"purpose": "title", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-haiku",
                 "usage": {"input": 5, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 7,
                           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.0001}},
                 "stopReason": "stop"}, owner]})
        elif kind == "replicate":
            self.add({"op": "call", "method": "ingestReplicatedEntry", "args": [
                {"type": "custom", "customType": "replicated", "id": f"rep{rng.randint(0, 99999)}",
                 "parentId": None, "timestamp": "2020-01-02T00:00:00.000Z"}]}, named=False)
        elif kind == "branched":
            self.add({"op": "createBranchedSession", "leafId": self.ref()}, named=False)
        elif kind == "fork":
            self.add({"op": "fork"}, named=False)
        elif kind == "new":
            op = {"op": "newSession"}
            self.maybe(op, "options", rng.choice([{"parentSession": "parent-x"},
                                                  {"additionalDirectories": ["/srv/shared", "/srv/shared", "lib"]}]),
                       0.4)
            self.add(op, named=False)
            self.refs.clear()
        elif kind == "flush":
            self.add({"op": rng.choice(["flush", "flushSync", "ensureOnDisk"])}, named=False)
        elif kind == "rewrite":
            self.add({"op": "rewriteEntries"}, named=False)
        elif kind == "reopen":
            self.add({"op": "reopen"}, named=False)
        elif kind == "snapshot" and self.tree_views:
            self.add({"op": "snapshot"}, named=False)
        else:
            getter = rng.choice(["getLeafId", "getEntry", "getChildren", "getLabel", "getBranch", "getHeader",
                                 "getEntries", "getSessionName", "getSessionFile", "buildSessionContext",
                                 *(["getTree"] if self.tree_views else [])])
            op = {"op": getter}
            if getter in ("getEntry", "getLabel"):
                op["id"] = self.ref()
            elif getter == "getChildren":
                op["parentId"] = self.ref()
            elif getter == "getBranch" and rng.random() < 0.5:
                op["fromId"] = self.ref()
            elif getter == "buildSessionContext" and rng.random() < 0.5:
                op["options"] = {"transcript": True}
            self.add(op, named=False)


def recorded_cwd(path: Path) -> str | None:
    """The header cwd of a session file, if one of its first lines has a string one."""
    with path.open("rb") as f:
        for raw in f.read(65536).splitlines()[:3]:
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict) and value.get("type") == "session":
                cwd = value.get("cwd")
                return cwd if isinstance(cwd, str) and cwd else None
    return None


def make_script(rng: random.Random, source: Path | None) -> dict[str, Any]:
    r = rng.random()
    resumed = source is not None and r < 0.3
    s = Script(rng, tree_views=not (resumed and source is not None and
                                    ("dup_ids" in source.name or "cycle" in source.name)))
    script: dict[str, Any] = {"cwd": rng.choice(["/home/dev/project", "{TMP}/work"])}
    if resumed and source is not None:
        # The recorded cwd, so that new files stay in the script's session dir. Elsewhere omp
        # puts them in the default bucket of its home, which the oracle shares between the
        # scripts of one worker while its clock and ids restart for each: names would collide.
        script["cwd"] = recorded_cwd(source) or "/home/dev/project"
        script["from_file"] = source.name
    elif r < 0.38:
        script["in_memory"] = True
    if script["cwd"].startswith("{TMP}"):
        script["create_cwd"] = True
    for _ in range(rng.randint(1, 40)):
        s.step()
    script["ops"] = s.ops
    return script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--files", type=Path, help="a gen_sessions.py corpus to open scripts from")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sources: list[Path] = []
    if args.files is not None:
        for f in sorted(args.files.glob("*.jsonl")):
            if "large_stream" in f.name:
                continue
            shutil.copyfile(f, args.out / f.name)
            sources.append(args.out / f.name)
    for i in range(args.count):
        rng = random.Random(f"{args.seed}:{i}")
        script = make_script(rng, rng.choice(sources) if sources else None)
        (args.out / f"{i:04d}_ops.json").write_text(json.dumps(script, ensure_ascii=False, indent=1))
    print(f"wrote {args.count} scripts to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
