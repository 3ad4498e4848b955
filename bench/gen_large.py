#!/usr/bin/env python3
"""Seeded generator of realistic omp (oh-my-pi) v3 session JSONL files.

Standard library only.  The output mirrors what omp 18.x writes
(docs: the session format spec, S1-S4):

  * a fixed-width 256-byte title record (optional, on by default),
  * a version-3 session header,
  * a tree of entries (id / parentId), journal order, last entry = leaf.

Each "turn" is a user prompt, then an agent loop of assistant messages
(thinking with signatures, text, 1-3 tool calls with real-looking
arguments), each followed by toolResult messages (long, heavy-tailed
outputs with escapes, ANSI colour codes, unicode, details objects), and a
final assistant answer.  Usage objects carry token counts and float costs.
Sprinkled through the session: model / thinking-level changes, compactions
(summary + firstKeptEntryId on the current path, details with file lists),
branch points (the leaf moves back to an earlier user turn, half of them
with a branch_summary), labels, custom / custom_message entries, a
title_change, model_usage, images (mostly blob:sha256 refs, some inline
base64), and OpenAI-style encrypted reasoning signatures.

Usage:
  gen_large.py --size 100M --seed 1 -o s100M.jsonl [--blob-dir DIR]
  gen_large.py --many 2000 --min-size 50K --max-size 5M --seed 7 --dir DIR
  gen_large.py --size 10M --stats      # prints a byte breakdown to stderr

Sizes accept K/M/G suffixes (powers of 1024).  The file is finished at the end
of the turn that crosses the target, so it overshoots by at most one turn.
The same arguments always produce the same bytes.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import hashlib
import json
import math
import os
import random
import sys
import time
from typing import Any, BinaryIO

# omp writes JSON.stringify output; Python's compact encoder with raw UTF-8
# escapes control characters the same way (short forms, lowercase \u00xx).
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

# ---------------------------------------------------------------- vocabulary

_VOCAB = (
    "session entry leaf parent branch tree compaction summary token usage cost "
    "model provider thinking signature tool call result output error stream "
    "reader writer buffer chunk line offset bytes utf8 encode decode parse "
    "stringify header title slot blob hash digest image render theme editor "
    "cursor selector component config settings path file directory worktree "
    "commit diff patch merge rebase stash checkout pull push fetch remote tag "
    "async await promise resolve reject timeout retry signal process spawn "
    "index cache lru map set array object string number boolean null undefined "
    "function class interface type extends implements import export default "
    "return const let static readonly private public new this test spacer "
    "context message assistant user key value node store queue job worker "
    "pool task handler listener emitter event loader builder format state"
)
WORDS = _VOCAB.split()
UNICODE_BITS = ("→", "✓", "✗", "…", "µs", "°", "é", "ü", "—", "–", "“", "”",
                "•", "│", "└──", "├──", "⚠️", "🚀", "🙂", "日本語", "ß", "Ω", "≥", "½")
EXTS = ("ts", "ts", "ts", "tsx", "py", "rs", "go", "json", "md", "sh")
DIRS = ("src", "src/core", "src/session", "src/tools", "src/tui", "src/utils",
        "packages/coding-agent/src", "packages/ai/src", "packages/tui/src",
        "lib", "test", "tests", "docs", "scripts", "internal/cli")
TOOLS = ("bash", "read", "edit", "write", "grep", "find", "ls", "task")
TOOL_WEIGHTS = (30, 29, 20, 5, 8, 4, 3, 1)
ANTHROPIC_MODELS = ("claude-opus-4-6", "claude-sonnet-4-5")
OPENAI_MODELS = ("gpt-5.1-codex", "gpt-5.2")
# $ per token: input, output, cacheRead, cacheWrite
PRICES = {
    "claude-opus-4-6": (5e-06, 2.5e-05, 5e-07, 6.25e-06),
    "claude-sonnet-4-5": (3e-06, 1.5e-05, 3e-07, 3.75e-06),
    "claude-haiku-4-5": (1e-06, 5e-06, 1e-07, 1.25e-06),
    "gpt-5.1-codex": (1.25e-06, 1e-05, 1.25e-07, 0.0),
    "gpt-5.2": (1.75e-06, 1.4e-05, 1.75e-07, 0.0),
}
IMAGE_MIMES = ("image/png", "image/png", "image/png", "image/jpeg", "image/webp")
MIME_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}
MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff\xe0",
         "image/webp": b"RIFF\x00\x00\x00\x00WEBPVP8 "}
MAX_OUTPUT = 300_000
B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def parse_size(text: str) -> int:
    """'5M' -> 5 * 1024**2; a plain number is bytes."""
    text = text.strip().upper().removesuffix("B")
    mult = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    if mult != 1:
        text = text[:-1]
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("size must be positive")
    return int(value * mult)


def iso(ms: int) -> str:
    d = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


# ---------------------------------------------------------------- text pools


class Pools:
    """Pre-drawn sentences and output lines: long texts are sampled from
    these, which keeps 100 MB generation in seconds while staying varied."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.paths = [self._path() for _ in range(400)]
        self.idents = [self._ident() for _ in range(600)]
        self.sentences = [self._sentence() for _ in range(3000)]
        self.code = [self._code_line() for _ in range(3000)]
        self.bash = [self._bash_line() for _ in range(3000)]
        # Most tools strip colour; test runners and compilers keep it.
        self.plain = [line for line in self.bash if "\x1b" not in line]
        self.grep = [f"{rng.choice(self.paths)}:{rng.randint(1, 3000)}:{rng.choice(self.code).strip()}"
                     for _ in range(1500)]

    def _ident(self) -> str:
        rng = self.rng
        parts = rng.sample(WORDS, rng.randint(1, 3))
        return parts[0] + "".join(p.capitalize() for p in parts[1:])

    def _path(self) -> str:
        rng = self.rng
        name = "-".join(rng.sample(WORDS, rng.randint(1, 3)))
        return f"{rng.choice(DIRS)}/{name}.{rng.choice(EXTS)}"

    def _sentence(self) -> str:
        rng = self.rng
        words = rng.choices(WORDS, k=rng.randint(4, 22))
        for _ in range(rng.randint(0, 2)):
            i = rng.randrange(len(words))
            if rng.random() < 0.5:
                words[i] = f"`{self._ident()}`"
            elif rng.random() < 0.4:
                words[i] = rng.choice(UNICODE_BITS)
        words[0] = words[0].capitalize()
        return " ".join(words) + rng.choice(".....?!:")

    def _code_line(self) -> str:
        rng = self.rng
        a, b = self._ident(), self._ident()
        ind = "\t" * rng.randint(0, 4)
        forms = (
            f'const {a} = await this.{b}("{self._path()}", {{ {b}: true }});',
            f"if ({a}.{b} === undefined || {a}.length > {rng.randint(1, 99999)}) return null;",
            f"return {a}.map(({b}) => {b}.{self._ident()}).filter(Boolean).join(\"\\n\");",
            f'import {{ {a}, {b} }} from "./{rng.choice(WORDS)}";',
            f"export function {a}({b}: {b.capitalize()}[], opts?: string): {a.capitalize()} {{",
            f'{a}["{b}"] = {{ \'x\': {rng.randint(0, 99999)}, "ok": {rng.choice(("true", "false"))} }};',
            f"// {self._sentence()}",
            f'throw new Error(`Cannot {a} "${{{b}}}": {rng.choice(WORDS)} \\\\ {rng.choice(WORDS)}`);',
            f"for (const {a} of {b}.{self._ident()}()) {{",
            f"{a} = {rng.random() * 1000:.4f}; // {rng.choice(UNICODE_BITS)} {rng.choice(WORDS)}",
            "}", "", "\t}",
        )
        return ind + rng.choice(forms)

    def _bash_line(self) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.18:
            return (f"-rw-r--r--  1 dev staff {rng.randint(100, 999999):>8} "
                    f"May {rng.randint(1, 28):>2} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {self._path()}")
        if r < 0.36:
            colour, mark = rng.choice((("32", "✓"), ("32", "✓"), ("31", "✗"), ("33", "↓")))
            return (f"  \x1b[{colour}m{mark}\x1b[0m {rng.choice(WORDS)} > {self._sentence()} "
                    f"\x1b[2m[{rng.randint(0, 900)}ms]\x1b[22m")
        if r < 0.46:
            return f"    at {self._ident()} ({self._path()}:{rng.randint(1, 900)}:{rng.randint(1, 80)})"
        if r < 0.54:
            return (f"\x1b[1m{self._path()}\x1b[22m({rng.randint(1, 400)},{rng.randint(1, 80)}): "
                    f"\x1b[31merror\x1b[39m TS{rng.randint(1000, 9999)}: {self._sentence()}")
        if r < 0.60:
            pct = rng.randint(0, 100)
            return f"\r[{'#' * (pct // 5):<20}] {pct}% {rng.choice(WORDS)}\r"
        if r < 0.68:
            return f"2026-09-05T09:19:{rng.randint(0, 59):02d}Z INFO {self._sentence()}"
        if r < 0.74:
            return f"{'+-'[rng.randint(0, 1)]}{self._code_line()}"
        return self._sentence()

    def prose(self, n_sentences: int) -> str:
        rng = self.rng
        out: list[str] = []
        sents = rng.choices(self.sentences, k=n_sentences)
        i = 0
        while i < len(sents):
            k = rng.randint(2, 6)
            out.append(" ".join(sents[i:i + k]))
            i += k
        return "\n\n".join(out)

    def lines(self, pool: list[str], n: int) -> str:
        return "\n".join(self.rng.choices(pool, k=n))


def heavy_tail(rng: random.Random, median: float, sigma: float, cap: int) -> int:
    return max(1, min(cap, int(rng.lognormvariate(math.log(median), sigma))))


# ---------------------------------------------------------------- generator


class Session:
    def __init__(self, seed: int, blob_dir: str | None, title_slot: bool,
                 inline_share: float, large_inline_share: float, pools: Pools | None = None) -> None:
        self.rng = random.Random(seed)
        self.pools = pools or Pools(random.Random(seed * 7919 + 13))
        self.blob_dir = blob_dir
        self.title_slot = title_slot
        self.inline_share = inline_share
        self.large_inline_share = large_inline_share
        rng = self.rng
        self.clock = 1_767_225_600_000 + rng.randrange(0, 300 * 86_400_000)  # 2026
        self.ids: set[str] = set()
        self.pending: list[bytes] = []     # entry lines not yet written (see run())
        self.out: BinaryIO | None = None
        self.counts: dict[str, list[int]] = {}  # kind -> [lines, bytes]
        self.entries = 0
        self.size = 0
        self.leaf: str | None = None
        self.path: list[str] = []          # current branch, root first
        self.user_turns: list[int] = []    # indexes into self.path of user messages
        self.last_compaction_at = 0        # index into self.path
        self.bytes_since_compaction = 0
        self.title = ""
        self.title_source: str | None = None
        self.title_at = self.clock
        self.labels = 0
        self.provider_is_openai = rng.random() < 0.3
        self.model = self._pick_model()
        self.thinking = rng.choice(("high", "medium", "xhigh"))
        self.files_read: list[str] = []
        self.files_modified: list[str] = []
        self.blobs_written: dict[str, bytes] = {}
        self.turn = 0
        self.cwd = "/home/dev/src/" + rng.choice(("omp", "infra", "webapp", "api", "tools"))
        self.session_id = self._uuid7(self.clock)
        self.start = self.clock
        self.first_title = ""

    # -- basics

    def _pick_model(self) -> str:
        return self.rng.choice(OPENAI_MODELS if self.provider_is_openai else ANTHROPIC_MODELS)

    def _uuid7(self, ms: int) -> str:
        rnd = self.rng.getrandbits(74)
        value = (ms << 80) | (0x7 << 76) | ((rnd >> 62) << 64) | (0b10 << 62) | (rnd & ((1 << 62) - 1))
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def tick(self, lo: int, hi: int) -> int:
        self.clock += self.rng.randint(lo, hi)
        return self.clock

    def new_id(self) -> str:
        while True:
            i = f"{self.rng.getrandbits(32):08x}"
            if i not in self.ids:
                self.ids.add(i)
                return i

    def hexid(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def b64(self, n: int) -> str:
        return "".join(self.rng.choices(B64_ALPHABET, k=n))

    def emit(self, entry: dict[str, Any], kind: str, move_leaf: bool = True) -> str:
        line = _dumps(entry).encode() + b"\n"
        if self.out is None:
            self.pending.append(line)
        else:
            self.out.write(line)
        c = self.counts.setdefault(kind, [0, 0])
        c[0] += 1
        c[1] += len(line)
        self.entries += 1
        self.size += len(line)
        self.bytes_since_compaction += len(line)
        entry_id: str = entry["id"]
        if move_leaf:
            self.leaf = entry_id
            self.path.append(entry_id)
        return entry_id

    def envelope(self, type_: str, lo: int = 200, hi: int = 3000) -> dict[str, Any]:
        return {"type": type_, "id": self.new_id(), "parentId": self.leaf, "timestamp": iso(self.tick(lo, hi))}

    def message(self, msg: dict[str, Any], lo: int = 200, hi: int = 3000) -> str:
        entry = self.envelope("message", lo, hi)
        msg["timestamp"] = self.clock - self.rng.randint(0, 150)
        entry["message"] = msg
        return self.emit(entry, msg["role"])

    # -- images

    def image(self) -> dict[str, Any]:
        rng = self.rng
        mime = rng.choice(IMAGE_MIMES)
        if rng.random() < self.inline_share:
            if rng.random() < self.large_inline_share:
                n = heavy_tail(rng, 120_000, 0.6, 400_000)
            else:
                n = rng.randint(60, 700)
            raw = MAGIC[mime] + rng.randbytes(n)
            return {"type": "image", "data": base64.b64encode(raw).decode(), "mimeType": mime}
        raw = MAGIC[mime] + rng.randbytes(heavy_tail(rng, 40_000, 0.8, 600_000))
        sha = hashlib.sha256(raw).hexdigest()
        if self.blob_dir is not None and sha not in self.blobs_written:
            self.blobs_written[sha] = raw
            target = os.path.join(self.blob_dir, sha)
            with open(target, "wb") as f:
                f.write(raw)
            # omp also links a typed sidecar next to the extensionless blob.
            sidecar = f"{target}.{MIME_EXT[mime]}"
            if not os.path.exists(sidecar):
                with contextlib.suppress(OSError):  # a copy-only filesystem: the blob is enough
                    os.link(target, sidecar)
        return {"type": "image", "data": f"blob:sha256:{sha}", "mimeType": mime}

    # -- usage

    def usage(self, model: str, out_tokens: int) -> dict[str, Any]:
        rng = self.rng
        p_in, p_out, p_cr, p_cw = PRICES[model]
        inp = heavy_tail(rng, 900, 1.2, 60_000)
        cache_read = min(1_000_000, 2_000 + self.turn * rng.randint(200, 2_000))
        cache_write = heavy_tail(rng, 1_500, 1.0, 40_000)
        total = inp + out_tokens + cache_read + cache_write
        c = [inp * p_in, out_tokens * p_out, cache_read * p_cr, cache_write * p_cw]
        # round like a provider price table would, and keep non-zero costs
        # >= 1e-4 so the float text is the same in JS and Python.
        c = [0.0 if x == 0 else max(round(x, 8), 0.0001) for x in c]
        cost = {"input": c[0], "output": c[1], "cacheRead": c[2], "cacheWrite": c[3], "total": sum(c)}
        return {"input": inp, "output": out_tokens, "cacheRead": cache_read, "cacheWrite": cache_write,
                "totalTokens": total, "cost": cost}

    # -- assistant

    def thinking_block(self) -> dict[str, Any]:
        text = self.pools.prose(heavy_tail(self.rng, 5, 0.9, 120))
        if self.provider_is_openai:
            item = {"type": "reasoning", "id": "rs_" + self.hexid(40),
                    "encrypted_content": "gAAAAA" + self.b64(heavy_tail(self.rng, 1800, 0.6, 20_000)),
                    "summary": []}
            return {"type": "thinking", "thinking": text, "thinkingSignature": _dumps(item)}
        return {"type": "thinking", "thinking": text,
                "thinkingSignature": self.b64(4 * heavy_tail(self.rng, 150, 0.5, 2_000))}

    def call_id(self) -> str:
        if self.provider_is_openai:
            return f"call_{self.hexid(24)}|fc_{self.hexid(40)}"
        return "toolu_01" + "".join(self.rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", k=22))

    def assistant(self, content: list[dict[str, Any]], stop: str, out_tokens: int) -> str:
        rng = self.rng
        api = "openai-responses" if self.provider_is_openai else "anthropic-messages"
        provider = "openai" if self.provider_is_openai else "anthropic"
        msg: dict[str, Any] = {
            "role": "assistant", "content": content, "api": api, "provider": provider,
            "model": self.model, "usage": self.usage(self.model, out_tokens), "stopReason": stop,
        }
        msg["timestamp"] = 0  # placeholder keeps omp's key order; set by message()
        msg["responseId"] = ("resp_" + self.hexid(48)) if self.provider_is_openai else (
            "msg_01" + "".join(rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", k=22)))
        msg["duration"] = heavy_tail(rng, 12_000, 1.0, 600_000)
        msg["ttft"] = rng.randint(200, 4_000)
        if stop == "aborted":
            msg["errorMessage"] = "Request was aborted"
        elif stop == "error":
            msg["errorMessage"] = rng.choice(("overloaded_error", "Connection reset by peer",
                                              "429 rate_limit_error: Number of request tokens has exceeded your per-minute rate limit"))
        return self.message(msg, 1_000, 90_000)

    # -- tools

    def tool_call(self) -> tuple[dict[str, Any], str]:
        rng, p = self.rng, self.pools
        name = rng.choices(TOOLS, weights=TOOL_WEIGHTS)[0]
        path = rng.choice(p.paths)
        args: dict[str, Any]
        if name == "bash":
            args = {"command": rng.choice((
                f"cd {self.cwd} && bun test {path} 2>&1 | tail -n 80",
                f'grep -rn "{rng.choice(p.idents)}" {rng.choice(DIRS)} | head -50',
                f"python3 -m pytest -x -q {path} 2>&1 | tail -40",
                "git status --short && git diff --stat",
                f"ls -la {rng.choice(DIRS)}",
                f"cat > /tmp/{rng.choice(WORDS)}.json <<'EOF'\n{{\"key\": \"{rng.choice(WORDS)}\", \"n\": {rng.randint(0, 99)}}}\nEOF",
            ))}
            if rng.random() < 0.3:
                args["timeout"] = rng.choice((30, 60, 120, 600))
        elif name == "read":
            args = {"path": path}
            if rng.random() < 0.3:
                args["offset"] = rng.randint(1, 800)
                args["limit"] = rng.choice((100, 200, 400))
            self.files_read.append(path)
        elif name == "edit":
            args = {"path": path, "oldText": p.lines(p.code, heavy_tail(rng, 8, 0.9, 300)),
                    "newText": p.lines(p.code, heavy_tail(rng, 12, 0.9, 400))}
            self.files_modified.append(path)
        elif name == "write":
            args = {"path": path, "content": p.lines(p.code, heavy_tail(rng, 150, 0.9, 3_000))}
            self.files_modified.append(path)
        elif name == "grep":
            args = {"pattern": rng.choice(p.idents), "path": rng.choice(DIRS)}
            if rng.random() < 0.4:
                args["glob"] = f"*.{rng.choice(EXTS)}"
        elif name == "find":
            args = {"pattern": f"**/*.{rng.choice(EXTS)}", "path": rng.choice(DIRS)}
        elif name == "ls":
            args = {"path": rng.choice(DIRS)}
        else:
            args = {"agent": "explore", "task": p.prose(rng.randint(2, 6))}
        block: dict[str, Any] = {"type": "toolCall", "id": self.call_id(), "name": name, "arguments": args}
        if rng.random() < 0.25:
            block["intent"] = p.prose(1)[:80]
        return block, name

    def tool_result(self, call: dict[str, Any], name: str) -> None:
        rng, p = self.rng, self.pools
        n = heavy_tail(rng, 14, 1.5, 6_000)
        is_error = rng.random() < 0.06
        details: dict[str, Any] | None = None
        content: list[dict[str, Any]]
        if name == "bash":
            text = p.lines(p.bash if rng.random() < 0.2 else p.plain, n)
            code = 1 if is_error else 0
            if is_error:
                text = f"{text}\n\nCommand exited with code {code}"
            details = {"exitCode": code, "durationMs": heavy_tail(rng, 3_000, 1.5, 600_000)}
            if n > 2_000:
                details["truncation"] = {"truncated": True, "truncatedBy": "lines", "totalLines": n * 3,
                                         "outputLines": n, "fullOutputPath": f"/tmp/omp-{self.hexid(8)}.log"}
        elif name == "read":
            args = call["arguments"]
            if args["path"].endswith(".png") or rng.random() < 0.025:
                content = [{"type": "text", "text": f"Read image file [{MIME_EXT['image/png']}]"}, self.image()]
                self._emit_result(call, name, content, False, {"path": args["path"]})
                return
            start = args.get("offset", 1)
            body = p.rng.choices(p.code, k=n)
            text = "\n".join(f"{start + i:>6}\t{line}" for i, line in enumerate(body))
            details = {"path": args["path"], "totalLines": start + n + rng.randint(0, 400)}
        elif name == "edit":
            first = rng.randint(1, 900)
            text = f"Successfully replaced text in {call['arguments']['path']}."
            diff = "\n".join(f"{'+-'[i % 2]}{first + i:>4} {line}"
                             for i, line in enumerate(rng.choices(p.code, k=rng.randint(2, 30))))
            details = {"diff": diff, "firstChangedLine": first}
        elif name == "write":
            text = f"Successfully wrote {len(call['arguments']['content'])} bytes to {call['arguments']['path']}"
        elif name == "grep":
            text = p.lines(p.grep, n)
            details = {"matchCount": n, "truncated": n > 200}
        elif name in ("find", "ls"):
            text = "\n".join(rng.choices(p.paths, k=n))
        else:
            text = p.prose(heavy_tail(rng, 25, 0.9, 400))
            details = {"usage": self.usage("claude-sonnet-4-5", rng.randint(200, 8_000)),
                       "agent": "explore", "durationMs": rng.randint(5_000, 400_000)}
        if is_error and name != "bash":
            text = rng.choice((f"Error: ENOENT: no such file or directory, open '{call['arguments'].get('path', 'x')}'",
                               "Error: oldText not found in file",
                               f"Error: {p.prose(1)}"))
            details = None
        # omp's tools cut their own output long before the 500,000-unit persistence limit.
        content = [{"type": "text", "text": text[:MAX_OUTPUT]}]
        self._emit_result(call, name, content, is_error, details)

    def _emit_result(self, call: dict[str, Any], name: str, content: list[dict[str, Any]],
                     is_error: bool, details: dict[str, Any] | None) -> None:
        msg: dict[str, Any] = {"role": "toolResult", "toolCallId": call["id"], "toolName": name,
                               "content": content}
        if details is not None:
            msg["details"] = details
        msg["isError"] = is_error
        self.message(msg, 100, 60_000)

    # -- turns

    def user_prompt(self) -> None:
        rng, p = self.rng, self.pools
        text = p.prose(heavy_tail(rng, 3, 1.0, 60))
        if rng.random() < 0.15:
            text += "\n\n```\n" + p.lines(p.bash, rng.randint(3, 40)) + "\n```"
        content: Any
        if rng.random() < 0.06:
            content = [{"type": "text", "text": text}, self.image()]
        elif rng.random() < 0.5:
            content = text
        else:
            content = [{"type": "text", "text": text}]
        self.user_turns.append(len(self.path))
        self.message({"role": "user", "content": content}, 20_000, 900_000)

    def agent_loop(self) -> None:
        rng, p = self.rng, self.pools
        steps = heavy_tail(rng, 5, 0.9, 60)
        for _ in range(steps):
            content: list[dict[str, Any]] = []
            if rng.random() < 0.55:
                content.append(self.thinking_block())
                if not self.provider_is_openai and rng.random() < 0.01:
                    # Anthropic's safety-redacted reasoning: opaque, kept verbatim by omp.
                    content.append({"type": "redactedThinking", "data": self.b64(4 * rng.randint(100, 1_500))})
            if rng.random() < 0.5:
                content.append({"type": "text", "text": p.prose(heavy_tail(rng, 2, 1.0, 30))})
            calls = [self.tool_call() for _ in range(rng.choices((1, 2, 3), weights=(70, 20, 10))[0])]
            content.extend(c for c, _ in calls)
            r = rng.random()
            if r < 0.006:
                self.assistant([], "aborted", rng.randint(100, 4_000))
                return
            if r < 0.012:
                self.assistant([], "error", 0)
                continue
            self.assistant(content, "toolUse", heavy_tail(rng, 600, 1.0, 30_000))
            for call, name in calls:
                self.tool_result(call, name)
        final: list[dict[str, Any]] = []
        if rng.random() < 0.5:
            final.append(self.thinking_block())
        final.append({"type": "text", "text": p.prose(heavy_tail(rng, 10, 0.9, 200))})
        self.assistant(final, "length" if rng.random() < 0.02 else "stop", heavy_tail(rng, 900, 1.0, 32_000))

    # -- sprinkles

    def model_change(self) -> None:
        self.provider_is_openai = self.rng.random() < 0.3
        self.model = self._pick_model()
        e = self.envelope("model_change")
        e["model"] = ("openai/" if self.provider_is_openai else "anthropic/") + self.model
        e["resolvedModelIsFallback"] = False
        self.emit(e, "model_change")

    def thinking_change(self) -> None:
        self.thinking = self.rng.choice(("off", "low", "medium", "high", "xhigh"))
        e = self.envelope("thinking_level_change")
        e["thinkingLevel"] = self.thinking
        e["configured"] = self.rng.choice((self.thinking, "auto"))
        self.emit(e, "thinking_level_change")

    def set_title(self, source: str) -> None:
        rng = self.rng
        title = " ".join(rng.choices(WORDS, k=rng.randint(3, 9))).capitalize()
        e = self.envelope("title_change", 100, 900)
        e["title"] = title
        e["source"] = source
        if self.title:
            e["previousTitle"] = self.title
        self.title, self.title_source, self.title_at = title, source, self.clock
        self.emit(e, "title_change")

    def model_usage(self) -> None:
        # Side call: attached to the leaf without moving it (omp's appendModelUsage).
        e = self.envelope("model_usage", 100, 600)
        e.update({"purpose": "title", "role": "tiny", "api": "anthropic-messages", "provider": "anthropic",
                  "model": "claude-haiku-4-5", "usage": self.usage("claude-haiku-4-5", self.rng.randint(5, 30)),
                  "stopReason": "stop"})
        self.emit(e, "model_usage", move_leaf=False)

    def compaction(self) -> None:
        rng, p = self.rng, self.pools
        # Keep the last few user turns that lie after the previous compaction.
        candidates = [i for i in self.user_turns if i > self.last_compaction_at and i < len(self.path)]
        if len(candidates) < 2:
            return
        keep = candidates[-rng.randint(1, min(3, len(candidates) - 1))]
        first_kept = self.path[keep]
        e = self.envelope("compaction", 5_000, 90_000)
        sections = ["## Goal\n" + p.prose(rng.randint(2, 5)),
                    "## Progress\n" + "\n".join("- " + s for s in rng.choices(p.sentences, k=rng.randint(4, 20))),
                    "## Key decisions\n" + p.prose(rng.randint(3, 12)),
                    "## Next steps\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(rng.choices(p.sentences, k=rng.randint(2, 8))))]
        e["summary"] = "\n\n".join(sections)
        e["shortSummary"] = p.prose(1)[:70]
        e["firstKeptEntryId"] = first_kept
        before = rng.randint(150_000, 200_000)
        e["tokensBefore"] = before
        e["tokensAfter"] = rng.randint(20_000, 60_000)
        e["details"] = {"readFiles": sorted(set(self.files_read[-40:])),
                        "modifiedFiles": sorted(set(self.files_modified[-20:]))}
        self.files_read.clear()
        self.files_modified.clear()
        self.emit(e, "compaction")
        self.last_compaction_at = len(self.path) - 1
        self.bytes_since_compaction = 0

    def branch_back(self) -> None:
        """Move the leaf back before an earlier user turn, as /tree does."""
        rng, p = self.rng, self.pools
        candidates = [i for i in self.user_turns if 0 < i < len(self.path) - 1 and i > self.last_compaction_at]
        if not candidates:
            return
        at = rng.choice(candidates[-6:])
        from_id = self.path[at - 1]
        abandoned = self.path[at:]
        self.path = self.path[:at]
        self.user_turns = [i for i in self.user_turns if i < at]
        self.leaf = from_id
        if rng.random() < 0.5:
            e = self.envelope("branch_summary", 2_000, 30_000)
            e["fromId"] = from_id
            e["summary"] = "## Abandoned approach\n\n" + p.prose(rng.randint(3, 15))
            e["details"] = {"readFiles": sorted(set(rng.choices(p.paths, k=rng.randint(0, 8)))),
                            "modifiedFiles": sorted(set(rng.choices(p.paths, k=rng.randint(0, 4))))}
            self.emit(e, "branch_summary")
        del abandoned

    def label(self) -> None:
        rng = self.rng
        e = self.envelope("label", 100, 5_000)
        e["targetId"] = rng.choice(self.path[-200:])
        if rng.random() < 0.85:
            self.labels += 1
            e["label"] = rng.choice(("checkpoint", "good", "before-refactor", "bisect", "wip")) + f"-{self.labels}"
        self.emit(e, "label")

    def custom(self) -> None:
        rng, p = self.rng, self.pools
        kind = rng.choice(("todo", "tool_execution_start", "notes"))
        e: dict[str, Any] = {"type": "custom"}
        if kind == "todo":
            e["customType"] = "todo-tracker"
            e["data"] = {"version": 2, "todos": [
                {"id": f"t{i}", "content": p.prose(1)[:80],
                 "status": rng.choice(("pending", "in_progress", "completed"))}
                for i in range(rng.randint(2, 12))]}
        elif kind == "tool_execution_start":
            e["customType"] = "tool_execution_start"
            e["data"] = {"toolCallId": self.call_id(), "toolName": "bash",
                         "args": {"command": "bun run build"}, "startedAt": self.clock}
        else:
            e["customType"] = "experimental_context_notes"
            e["data"] = {"version": 1, "text": p.prose(rng.randint(2, 10))}
        env = self.envelope("custom", 100, 2_000)
        del env["type"]
        e.update(env)
        self.emit(e, "custom")

    def custom_message(self) -> None:
        rng, p = self.rng, self.pools
        e: dict[str, Any] = {"type": "custom_message",
                             "customType": rng.choice(("com.example.policy", "async-result", "skill-prompt")),
                             "content": p.prose(rng.randint(2, 12)), "display": rng.random() < 0.7}
        if rng.random() < 0.6:
            e["details"] = {"policyVersion": rng.randint(1, 4)}
        e["attribution"] = rng.choice(("agent", "agent", "user"))
        env = self.envelope("custom_message", 100, 2_000)
        del env["type"]
        e.update(env)
        self.emit(e, "custom_message")

    def bash_execution(self) -> None:
        rng, p = self.rng, self.pools
        self.user_turns.append(len(self.path))
        self.message({"role": "bashExecution", "command": rng.choice(("git log --oneline -20", "ls", "bun run check")),
                      "output": p.lines(p.bash, heavy_tail(rng, 10, 1.0, 400)), "exitCode": rng.choice((0, 0, 1)),
                      "cancelled": False, "truncated": False}, 5_000, 200_000)

    # -- driver

    def header_lines(self) -> list[bytes]:
        header: dict[str, Any] = {"type": "session", "version": 3, "id": self.session_id,
                                  "timestamp": iso(self.start), "cwd": self.cwd}
        if self.title_slot and self.first_title:
            # The header got the first title when the file materialised; later
            # renames only rewrite the slot in place, so the header keeps it.
            header["title"] = self.first_title
            header["titleSource"] = "auto"
        elif self.title:
            # Without a slot omp rewrites the whole file on every rename.
            header["title"] = self.title
            header["titleSource"] = self.title_source
        out = [_dumps(header).encode() + b"\n"]
        if self.title_slot:
            out.insert(0, title_slot(self.title, self.title_source, iso(self.title_at)))
        return out

    def run(self, target: int, out_path: str) -> None:
        """Generate into ``out_path``. Lines stream to disk once the header is known (after the
        first turn names the session); the 256-byte slot is then rewritten in place at the
        end, as omp itself does on a rename, so memory stays flat for any size."""
        with open(out_path, "wb") as f:
            self.generate(target, f)
            if self.out is None:
                f.writelines(self.header_lines())
                f.writelines(self.pending)
                self.pending.clear()
            elif self.title_slot:
                f.seek(0)
                f.write(self.header_lines()[0])

    def start_streaming(self, f: BinaryIO) -> None:
        f.writelines(self.header_lines())
        f.writelines(self.pending)
        self.pending.clear()
        self.out = f

    def generate(self, target: int, f: BinaryIO) -> None:
        rng = self.rng
        self.model_change()
        self.thinking_change()
        overhead = 256 + 300
        while self.size + overhead < target or self.turn == 0:
            self.turn += 1
            if self.turn > 1:
                r = rng.random()
                if r < 0.015:
                    self.model_change()
                elif r < 0.03:
                    self.thinking_change()
                elif r < 0.055:
                    self.branch_back()
                elif r < 0.07:
                    self.custom()
                elif r < 0.08:
                    self.custom_message()
                elif r < 0.085:
                    self.bash_execution()
                if self.bytes_since_compaction > 650_000 and rng.random() < 0.5:
                    self.compaction()
            self.user_prompt()
            if self.turn == 1:
                self.model_usage()
                self.set_title("auto")
                self.first_title = self.title
                if self.title_slot:
                    # The header is final now; without a slot it carries the last title.
                    self.start_streaming(f)
            self.agent_loop()
            if rng.random() < 0.05:
                self.label()
            if self.turn > 3 and rng.random() < 0.004:
                self.set_title("user")

    def stats(self) -> str:
        counts = {k: list(v) for k, v in self.counts.items()}
        for kind, line in zip(("title", "session") if self.title_slot else ("session",), self.header_lines(),
                              strict=True):
            counts[kind] = [1, len(line)]
        total_lines = sum(c[0] for c in counts.values())
        total_bytes = sum(c[1] for c in counts.values())
        rows = [f"{'kind':<22} {'lines':>8} {'%lines':>7} {'bytes':>13} {'%bytes':>7} {'avg':>9}"]
        for kind, (n, b) in sorted(counts.items(), key=lambda kv: -kv[1][1]):
            rows.append(f"{kind:<22} {n:>8} {100 * n / total_lines:>7.1f} {b:>13} "
                        f"{100 * b / total_bytes:>7.1f} {b // n:>9}")
        return "\n".join(rows)


def title_slot(title: str, source: str | None, updated_at: str) -> bytes:
    """The 256-byte first line (spec S1.2.3/S1.2.4)."""
    def line(t: str, pad: str) -> bytes:
        slot: dict[str, Any] = {"type": "title", "v": 1, "title": t}
        if source is not None:
            slot["source"] = source
        slot["updatedAt"] = updated_at
        slot["pad"] = pad
        return _dumps(slot).encode() + b"\n"
    while len(line(title, "")) > 256:
        title = title[:-1]
    return line(title, " " * (256 - len(line(title, ""))))


# ---------------------------------------------------------------- CLI


def generate_one(size: int, seed: int, out: str, blob_dir: str | None, title_slot_on: bool,
                 inline_share: float, large_inline_share: float, pools: Pools | None = None) -> Session:
    if blob_dir is not None:
        os.makedirs(blob_dir, exist_ok=True)
    s = Session(seed, blob_dir, title_slot_on, inline_share, large_inline_share, pools)
    s.run(size, out)
    return s


def file_name(s: Session) -> str:
    stamp = iso(s.start).replace(":", "-").replace(".", "-")
    return f"{stamp}_{s.session_id}.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gen_large.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=parse_size("10M"), help="target size of one session (K/M/G)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--out", help="output file (single session)")
    ap.add_argument("--blob-dir", help="write blob store files (<sha256>) here")
    ap.add_argument("--no-title-slot", action="store_true", help="legacy layout: header is the first line")
    ap.add_argument("--inline-image-share", type=float, default=0.25,
                    help="share of images stored inline as base64 (rest are blob refs)")
    ap.add_argument("--large-inline-share", type=float, default=0.5,
                    help="share of inline images that are large (legacy, not externalised)")
    ap.add_argument("--many", type=int, help="generate this many sessions into --dir")
    ap.add_argument("--dir", help="output directory for --many")
    ap.add_argument("--min-size", type=parse_size, default=parse_size("50K"))
    ap.add_argument("--max-size", type=parse_size, default=parse_size("5M"))
    ap.add_argument("--stats", action="store_true", help="print a byte breakdown to stderr")
    a = ap.parse_args(argv)
    for share in (a.inline_image_share, a.large_inline_share):
        if not 0.0 <= share <= 1.0:
            ap.error("shares must be between 0 and 1")
    slot = not a.no_title_slot
    started = time.perf_counter()
    if a.many is not None:
        if not a.dir:
            ap.error("--many needs --dir")
        if a.many < 1 or a.min_size > a.max_size:
            ap.error("--many must be >= 1 and --min-size <= --max-size")
        os.makedirs(a.dir, exist_ok=True)
        pick = random.Random(a.seed)
        # One text pool for the batch: drawing it costs more than a small session.
        pools = Pools(random.Random(a.seed * 7919 + 13))
        lo, hi = math.log(a.min_size), math.log(a.max_size)
        total = 0
        for i in range(a.many):
            size = int(math.exp(pick.uniform(lo, hi)))
            tmp = os.path.join(a.dir, f".gen-{i}.tmp")
            s = generate_one(size, a.seed * 1_000_003 + i, tmp, a.blob_dir, slot,
                             a.inline_image_share, a.large_inline_share, pools)
            final = os.path.join(a.dir, file_name(s))
            os.replace(tmp, final)
            total += os.path.getsize(final)
        print(f"wrote {a.many} sessions, {total} bytes in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        return 0
    if not a.out:
        ap.error("-o/--out is required (or use --many)")
    s = generate_one(a.size, a.seed, a.out, a.blob_dir, slot, a.inline_image_share, a.large_inline_share)
    size = os.path.getsize(a.out)
    print(f"wrote {size} bytes, {s.entries} entries in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    if a.stats:
        print(s.stats(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        print(f"gen_large.py: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        sys.exit(1)
