#!/usr/bin/env python3
"""Generate Claude Code and Codex session folders for the import conformance tests (stdlib only).

    gen_foreign.py --seed 7 --claude 120 --codex 120 --out HOME

writes, under HOME (a stand-in home directory):

* ``.claude/projects/<encoded cwd>/<uuid>.jsonl``, ``.claude/history.jsonl``, ``.claude.json``
  (registered projects): every record kind Claude Code writes (user, assistant, tool use and
  results, thinking, images, sidechains, meta, summary, system, titles, snapshots, queue
  operations, progress), unknown kinds, records without a type or uuid, branches, duplicate uuids;
* ``.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`` and ``.codex/session_index.jsonl``:
  session_meta, turn_context, every response_item and event_msg kind omp reads, compactions,
  rollbacks, renames, unknown kinds;
* damaged lines (not JSON, a truncated last line, arrays, blank lines, a BOM, invalid UTF-8),
  huge tool outputs (past omp's 500,000-character cut), images big enough for the blob store,
  non-ASCII paths, projects that exist (``HOME/work/...``) and projects that are gone, files with
  no readable record, empty files.

Every file gets a fixed modification time (with nanoseconds), so the output depends only on the
seed. Nothing outside HOME is written.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NAMES = ["api", "web", "projé ü", "日本語プロジェクト", "data-pipeline", "a b", "emoji-🚀", "x"]
WORDS = ["fix", "the", "failing", "test", "add", "a", "feature", "refactor", "this", "module", "why", "does", "it", "crash", "explain", "the", "error", "message", "café", "naïve", "中文", "ünïcödé", "rocket", "🚀", "please"]
BASE = datetime(2025, 6, 1, tzinfo=UTC)


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


IDENTS = ["path", "data", "entry", "record", "value", "session", "parent", "line", "count", "result", "config",
          "items", "reader", "writer", "buffer", "offset", "size", "index", "name", "cwd", "handler", "cache",
          "request", "response", "token", "user", "état", "payload", "options", "store"]
TYPES = ["str", "int", "bytes", "list[str]", "dict[str, Any]", "Path", "None", "bool", "Session", "Record"]
PROSE = ["I", "need", "to", "check", "whether", "the", "function", "handles", "this", "case", "so", "let", "me",
         "look", "at", "how", "file", "is", "read", "first", "then", "test", "should", "pass", "because", "error",
         "comes", "from", "parser", "when", "input", "empty", "user", "wants", "it", "seems", "like", "we", "can",
         "just", "update", "call", "site", "and", "run", "suite", "again", "naïve", "approach", "café", "中文"]


class Corpus:
    """Lines of code, of logs and of prose to cut long tool outputs, file reads and thinking from:
    built once (from its own seed) so that megabytes of sessions cost slicing, not word-by-word draws."""

    def __init__(self, r: random.Random) -> None:
        self.code = [self._code(r) for _ in range(20_000)]
        self.log = [self._log(r) for _ in range(20_000)]
        self.prose = [self._sentence(r) for _ in range(5_000)]

    @staticmethod
    def _code(r: random.Random) -> str:
        i, j, k = r.choice(IDENTS), r.choice(IDENTS), r.choice(IDENTS)
        words = " ".join(r.choice(WORDS) for _ in range(r.randint(2, 8)))
        line = r.choice([f"def {i}_{j}({k}: {r.choice(TYPES)}, {j}: {r.choice(TYPES)}) -> {r.choice(TYPES)}:",
                         f'{i} = {j}.{k}({i}, "{words}")', f"if {i} is not None and {j}.{k}:", f"return {i}",
                         f"# {words}", f"for {i} in {j}.{k}:", f'raise ValueError(f"{words}: {{{i}!r}}")',
                         f"{i}[{j}] = {k} + {r.randrange(1000)}", "", f"class {i.title()}{j.title()}:",
                         f"    await self.{i}.{k}({j}=True)", f"{i}.append({{{j!r}: {k}, 'n': {r.randrange(99)}}})"])
        return " " * (4 * r.randrange(4)) + line if line else line

    @staticmethod
    def _log(r: random.Random) -> str:
        i, j = r.choice(IDENTS), r.choice(IDENTS)
        words = " ".join(r.choice(WORDS) for _ in range(r.randint(3, 12)))
        return r.choice([f"2025-06-{r.randint(1, 28):02d}T{r.randrange(24):02d}:{r.randrange(60):02d}:"
                         f"{r.randrange(60):02d}.{r.randrange(1000):03d}Z {r.choice(['INFO', 'DEBUG', 'WARN'])} "
                         f"{i}.{j}: {words}",
                         f"tests/test_{i}.py::test_{j}_{r.choice(WORDS)} {r.choice(['PASSED', 'PASSED', 'FAILED'])}"
                         f" [{r.randrange(101):3d}%]",
                         f"src/{i}/{j}.ts({r.randrange(1, 900)},{r.randrange(1, 80)}): error TS{r.randrange(2000, 2800)}"
                         f": {words}", f"  File \"/work/src/{i}/{j}.py\", line {r.randrange(1, 900)}, in {i}_{j}",
                         f"drwxr-xr-x  {r.randrange(2, 9)} user user {r.randrange(99999):>6} Jun {r.randint(1, 28):2d}"
                         f" 10:{r.randrange(60):02d} {i}_{j}", f"+ {words}", f"- {words}", f"@@ -{r.randrange(900)},7 "
                         f"+{r.randrange(900)},9 @@ def {i}_{j}("])

    @staticmethod
    def _sentence(r: random.Random) -> str:
        words = [r.choice(PROSE if r.random() < 0.8 else WORDS + IDENTS) for _ in range(r.randint(6, 24))]
        return " ".join(words).capitalize() + r.choice([".", ".", ".", "?", ":"])

    @staticmethod
    def cut(r: random.Random, pool: list[str], count: int) -> list[str]:
        start = r.randrange(len(pool))
        out = pool[start:start + count]
        while len(out) < count:
            out += pool[:count - len(out)]
        return out


class Gen:
    def __init__(self, seed: int, home: Path, *, huge: bool = True, claude_bytes: int = 0) -> None:
        self.r = random.Random(seed)
        self.seed = seed
        self.huge = huge
        self.claude_bytes = claude_bytes
        self.corpus: Corpus | None = None
        self.home = home
        self.clock = BASE + timedelta(days=self.r.randrange(0, 200))

    # ---------------------------------------------------------------- helpers

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def text(self, lo: int = 1, hi: int = 12) -> str:
        return " ".join(self.r.choice(WORDS) for _ in range(self.r.randint(lo, hi)))

    def tick(self) -> datetime:
        self.clock += timedelta(milliseconds=self.r.randrange(1, 90_000))
        return self.clock

    def iso(self) -> str:
        return self.tick().isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def image_b64(self) -> str:
        size = self.r.choice([12, 40, 900, 2000])  # past 1,024 base64 characters: the blob store
        return base64.b64encode(bytes(self.r.getrandbits(8) for _ in range(size))).decode()

    def mtime(self, path: Path) -> None:
        ns = int((BASE + timedelta(days=self.r.randrange(0, 300))).timestamp()) * 10**9 + self.r.randrange(10**9)
        os.utime(path, ns=(ns, ns))

    def project(self) -> tuple[str, bool]:
        """A cwd and whether it exists."""
        name = self.r.choice(NAMES) + f"-{self.r.randrange(4)}"
        if self.r.random() < 0.7:
            cwd = self.home / "work" / name
            cwd.mkdir(parents=True, exist_ok=True)
            return str(cwd), True
        return f"/nonexistent/gone/{name}", False

    def write(self, path: Path, lines: list[bytes], *, damage: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        body = b"\n".join(lines) + b"\n"
        if damage and self.r.random() < 0.25:
            parts = body.split(b"\n")
            at = self.r.randrange(len(parts))
            parts.insert(at, self.r.choice([b"{not json", b"[1,2,3]", b"", b"   ", b"\"a string\"", b"null",
                                             b"{\"type\":\"user\",\"message\":", b"\xff\xfe garbage \x80"]))
            body = b"\n".join(parts)
        if damage and self.r.random() < 0.15:
            body = body.rstrip(b"\n")
            body += b"\n" + _line({"type": "user", "message": {"content": "cut"}})[:17]  # a truncated last line
        if damage and self.r.random() < 0.05:
            body = b"\xef\xbb\xbf" + body
        path.write_bytes(body)
        self.mtime(path)

    # ---------------------------------------------------------------- Claude Code

    def claude_user_content(self, tool_ids: list[str]) -> Any:
        r = self.r
        if not tool_ids and r.random() < 0.5:
            return r.choice([self.text(), "", "  ", self.text(30, 80)])
        blocks: list[Any] = []
        for _ in range(r.randint(0, 3)):
            kind = r.random()
            if kind < 0.5:
                blocks.append({"type": "text", "text": self.text()})
            elif kind < 0.75:
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": r.choice(
                    ["image/png", "image/jpeg"]), "data": self.image_b64()}})
            elif kind < 0.85:
                blocks.append({"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}})
            else:
                blocks.append(r.choice([{"type": "document"}, "plain", 3, None, {"type": "text", "text": 5}]))
        for tid in tool_ids:
            content: Any
            pick = r.random()
            if pick < 0.4:
                content = self.text(1, 40)
            elif pick < 0.6:
                content = [{"type": "text", "text": self.text()},
                           {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                        "data": self.image_b64()}}]
            elif pick < 0.65:
                content = "x" * (r.choice([600_000, 510_000]) if self.huge else 3000)  # past omp's persistence cut
            elif pick < 0.75:
                content = None
            else:
                content = [{"type": "text", "text": self.text()}, {"type": "tool_reference", "name": "x"}]
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": content}
            if r.random() < 0.2:
                block["is_error"] = True
            if r.random() < 0.05:
                block["tool_use_id"] = ""
            blocks.insert(r.randrange(len(blocks) + 1), block)
        return blocks

    def claude_assistant(self, model: str) -> tuple[dict[str, Any], list[str]]:
        r = self.r
        content: list[Any] = []
        tool_ids: list[str] = []
        for _ in range(r.randint(0, 4)):
            kind = r.random()
            if kind < 0.35:
                content.append({"type": "text", "text": self.text(1, 30)})
            elif kind < 0.55:
                block: dict[str, Any] = {"type": "thinking", "thinking": self.text()}
                if r.random() < 0.7:
                    block["signature"] = base64.b64encode(r.randbytes(24)).decode()
                content.append(block)
            elif kind < 0.85:
                tid = "toolu_" + self.uuid().replace("-", "")[:20]
                call: dict[str, Any] = {"type": "tool_use", "id": tid, "name": r.choice(["Bash", "Read", "Edit"])}
                if r.random() < 0.9:
                    call["input"] = r.choice([{"command": self.text(1, 4)}, {"path": "/a/é.txt"}, "str", [1]])
                if r.random() < 0.05:
                    del call["id"]
                else:
                    tool_ids.append(tid)
                content.append(call)
            else:
                content.append(r.choice([{"type": "redacted_thinking", "data": "abc"}, {"type": "server_tool_use"},
                                         "loose", {"type": "text"}]))
        message: dict[str, Any] = {"id": "msg_" + self.uuid()[:12], "type": "message", "role": "assistant",
                                   "model": model, "content": content,
                                   "stop_reason": r.choice(["end_turn", "tool_use", "max_tokens", "stop_sequence",
                                                            "pause_turn", None, "refusal"]),
                                   "usage": {"input_tokens": r.randrange(5000), "output_tokens": r.randrange(900),
                                             "cache_read_input_tokens": r.randrange(9000),
                                             "cache_creation_input_tokens": r.choice([0, 12, 1.5, "x"])}}
        if r.random() < 0.1:
            del message["id"]
        if r.random() < 0.05:
            del message["usage"]
        if r.random() < 0.05:
            del message["model"]
        return message, tool_ids

    def claude_session(self, root: Path, registered: dict[str, Any], history: list[bytes], index: int) -> None:
        r = self.r
        cwd, _exists = self.project()
        sid = self.uuid()
        encoded = cwd.replace("/", "-")
        if r.random() < 0.05:
            encoded = "plainname"
        folder = root / "projects" / encoded
        path = folder / f"{sid}.jsonl"
        if r.random() < 0.5:
            registered[cwd] = {"allowedTools": []}
        if index % 40 == 7:  # an empty file, and one with nothing readable
            folder.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"" if r.random() < 0.5 else b"garbage\n{not json}\n")
            self.mtime(path)
            return
        lines: list[bytes] = []
        parent: str | None = None
        uuids: list[str] = []
        model = r.choice(["claude-sonnet-4-5", "claude-opus-4-1"])
        pending: list[str] = []
        record_cwd = cwd if r.random() < 0.9 else None
        for n in range(r.randint(1, 30)):
            u = self.uuid()
            base: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "userType": "external",
                                    "cwd": record_cwd, "sessionId": sid, "version": "2.0.14", "gitBranch": "main",
                                    "uuid": u}
            if record_cwd is None or (n > 0 and r.random() < 0.1):
                del base["cwd"]
            stamp = r.random()
            if stamp < 0.8:
                base["timestamp"] = self.iso()
            elif stamp < 0.87:
                base["timestamp"] = int(self.tick().timestamp() * 1000)
            elif stamp < 0.92:
                base["timestamp"] = r.choice(["Jan 2 2026 10:00", "not a date", "2026-02-30T00:00:00Z", ""])
            elif stamp < 0.923:
                base["timestamp"] = 1e17  # out of Date's range: omp fails the import on it
            if r.random() < 0.05:
                del base["uuid"]
            elif r.random() < 0.05 and uuids:
                base["uuid"] = r.choice(uuids)
            if r.random() < 0.08 and uuids:
                base["parentUuid"] = r.choice(uuids)  # a branch
            kind = r.random()
            if kind < 0.35 or pending:
                record = {**base, "type": "user",
                          "message": {"role": "user", "content": self.claude_user_content(pending)}}
                pending = []
                if r.random() < 0.05:
                    record["isMeta"] = True
            elif kind < 0.7:
                if r.random() < 0.15:
                    model = r.choice(["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"])
                message, pending = self.claude_assistant(model)
                record = {**base, "type": "assistant", "requestId": "req_1", "message": message}
                if r.random() < 0.05:
                    record["isApiErrorMessage"] = True
                    record["error"] = "overloaded_error"
                    record["apiErrorStatus"] = r.choice([529, 500.0, "529"])
                elif r.random() < 0.03:
                    record["error"] = "rate_limit"
            elif kind < 0.75:
                record = {**base, "type": r.choice(["user", "assistant"]), "isSidechain": True,
                          "message": {"role": "user", "content": self.text()}}
            elif kind < 0.8:
                record = {"type": "summary", "summary": self.text(), "leafUuid": r.choice(uuids or [u])}
            elif kind < 0.84:
                record = {**base, "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                          "level": "info"}
            elif kind < 0.87:
                record = {"type": "custom-title", "customTitle": r.choice([self.text(1, 5), "", "  \t", "x" * 300]),
                          "sessionId": sid}
            elif kind < 0.9:
                record = {"type": "ai-title", "aiTitle": self.text(1, 6), "sessionId": sid}
            elif kind < 0.93:
                record = {"type": "file-history-snapshot", "messageId": u, "snapshot": {"trackedFileBackups": {}},
                          "isSnapshotUpdate": False}
            elif kind < 0.95:
                record = {"type": "queue-operation", "operation": "enqueue", "timestamp": self.iso(), "sessionId": sid}
            elif kind < 0.97:
                record = {**base, "type": "progress", "data": {"type": "hook_progress"}}
            elif kind < 0.985:
                record = {**base, "type": "x-future-kind", "payload": 1}
            else:
                record = {k: v for k, v in base.items() if k != "type"}
                record["message"] = {"content": "no type"}
            if r.random() < 0.02:
                record = {**base, "type": "user", "message": "not an object"}
            lines.append(_line(record))
            if "uuid" in record and record.get("type") in ("user", "assistant", "system", "progress"):
                uuids.append(record["uuid"])
                if not record.get("isSidechain"):
                    parent = record["uuid"]
        if self.claude_bytes:
            self.claude_work(lines, index, parent=parent, sid=sid, cwd=record_cwd or cwd, model=model)
        self.write(path, lines)
        if r.random() < 0.4:
            for _ in range(r.randint(1, 3)):
                entry: dict[str, Any] = {"display": self.text() + ("\n\t  more" if r.random() < 0.3 else ""),
                                         "pastedContents": {}, "timestamp": int(self.tick().timestamp() * 1000),
                                         "project": cwd, "sessionId": sid}
                if r.random() < 0.2:
                    del entry["project"]
                history.append(_line(entry))

    def claude_work(self, lines: list[bytes], index: int, *, parent: str | None, sid: str, cwd: str,
                    model: str) -> None:
        """Append working turns until the session is about ``claude_bytes`` long (0.6-1.4 times): what
        makes real sessions megabytes, thinking, file reads (numbered, with the file again in
        ``toolUseResult``), command outputs, edits (with the original file), writes, searches and
        screenshots. Its own random stream: every other byte of the output is as without it."""
        g = random.Random(f"work-{self.seed}-{index}")
        if self.corpus is None:
            self.corpus = Corpus(random.Random(f"corpus-{self.seed}"))
        c = self.corpus
        target = int(self.claude_bytes * g.uniform(0.6, 1.4))
        size = sum(len(line) + 1 for line in lines)
        clock = self.clock

        def emit(kind: str, message: dict[str, Any], **extra: Any) -> None:
            nonlocal clock, parent, size
            clock += timedelta(milliseconds=g.randrange(200, 60_000))
            u = str(uuid.UUID(int=g.getrandbits(128), version=4))
            record = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                      "sessionId": sid, "version": "2.0.14", "gitBranch": "main", "uuid": u,
                      "timestamp": clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "type": kind,
                      "message": message, **extra}
            parent = u
            line = _line(record)
            lines.append(line)
            size += len(line) + 1

        def prose(lo: int, hi: int) -> str:
            return " ".join(Corpus.cut(g, c.prose, g.randint(lo, hi)))

        def many(scale: int, cap: int) -> int:  # long-tailed, as outputs are
            return min(cap, int(g.paretovariate(1.3) * scale))

        def numbered(body: list[str], first: int) -> str:
            return "\n".join(f"{first + n:>6}\u2192{text}" for n, text in enumerate(body))

        def screenshot() -> dict[str, Any]:
            data = base64.b64encode(g.randbytes(g.randrange(30_000, 250_000))).decode()
            return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}

        def tool() -> tuple[str, dict[str, Any], Any, Any]:
            """A tool's name, its input, its result's content and Claude Code's ``toolUseResult``."""
            path = f"{cwd}/src/{g.choice(IDENTS)}/{g.choice(IDENTS)}.py"
            pick = g.random()
            if pick < 0.4:
                first, body = g.randint(1, 400), Corpus.cut(g, c.code, many(40, 2000))
                raw = "\n".join(body)
                return ("Read", {"file_path": path, "offset": first} if first > 1 else {"file_path": path},
                        numbered(body, first), {"type": "text", "file": {
                            "filePath": path, "content": raw, "numLines": len(body), "startLine": first,
                            "totalLines": first + len(body) + g.randrange(300)}})
            if pick < 0.7:
                out = "\n".join(Corpus.cut(g, c.log, many(30, 4000)))
                command = g.choice(["pytest -q tests", "npm run build", "git log --stat -30", "ls -la src",
                                    f"rg -n {g.choice(IDENTS)} src", "git diff"])
                return "Bash", {"command": command, "description": prose(1, 1)}, out, {
                    "stdout": out, "stderr": "", "interrupted": False, "isImage": False}
            if pick < 0.85:
                old, new = Corpus.cut(g, c.code, g.randint(2, 40)), Corpus.cut(g, c.code, g.randint(2, 60))
                original = "\n".join(Corpus.cut(g, c.code, many(120, 3000)))
                first = g.randint(1, 500)
                return ("Edit", {"file_path": path, "old_string": "\n".join(old), "new_string": "\n".join(new)},
                        f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet "
                        f"of the edited file:\n" + numbered(Corpus.cut(g, c.code, g.randint(8, 20)), first),
                        {"filePath": path, "oldString": "\n".join(old), "newString": "\n".join(new),
                         "originalFile": original, "userModified": False, "replaceAll": False})
            if pick < 0.92:
                content = "\n".join(Corpus.cut(g, c.code, many(60, 1500)))
                return ("Write", {"file_path": path, "content": content}, f"File created successfully at: {path}",
                        {"type": "create", "filePath": path, "content": content, "structuredPatch": []})
            if pick < 0.97:
                hits = [f"{path}:{g.randrange(1, 900)}:{text.strip()}" for text in Corpus.cut(g, c.code, many(10, 400))]
                return ("Grep", {"pattern": g.choice(IDENTS), "path": "src", "output_mode": "content"}, "\n".join(hits),
                        {"mode": "content", "numFiles": len(hits), "filenames": [], "content": "\n".join(hits)})
            image = screenshot()
            return "Read", {"file_path": f"{cwd}/screenshot.png"}, [image], {"type": "image", "file": {
                "base64": image["source"]["data"], "type": "image/png"}}

        emit("user", {"role": "user", "content": prose(1, 5)})
        while size < target:
            content: list[dict[str, Any]] = []
            if g.random() < 0.6:
                content.append({"type": "thinking", "thinking": prose(3, 60),
                                "signature": base64.b64encode(g.randbytes(g.choice([24, 300]))).decode()})
            if g.random() < 0.4:
                content.append({"type": "text", "text": prose(1, 10)})
            calls = []
            for _ in range(g.choice([0, 1, 1, 1, 1, 2, 3])):
                tid = "toolu_" + str(uuid.UUID(int=g.getrandbits(128))).replace("-", "")[:24]
                name, args, result, detail = tool()
                content.append({"type": "tool_use", "id": tid, "name": name, "input": args})
                calls.append((tid, result, detail))
            emit("assistant", {"id": "msg_" + str(uuid.UUID(int=g.getrandbits(128)))[:24], "type": "message",
                               "role": "assistant", "model": model, "content": content,
                               "stop_reason": "tool_use" if calls else "end_turn",
                               "usage": {"input_tokens": g.randrange(9), "output_tokens": g.randrange(4000),
                                         "cache_read_input_tokens": g.randrange(150_000),
                                         "cache_creation_input_tokens": g.randrange(9000)}}, requestId="req_1")
            for tid, result, detail in calls:
                block: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": result}
                if g.random() < 0.08:
                    block["is_error"] = True
                emit("user", {"role": "user", "content": [block]}, toolUseResult=detail)
            if not calls:
                said: list[Any] = [{"type": "text", "text": prose(1, 6)}]
                if g.random() < 0.1:
                    said.append(screenshot())
                emit("user", {"role": "user", "content": said})

    def claude(self, count: int) -> None:
        root = self.home / ".claude"
        registered: dict[str, Any] = {}
        history: list[bytes] = []
        for i in range(count):
            self.claude_session(root, registered, history, i)
        (self.home / ".claude.json").write_text(json.dumps({"numStartups": 3, "projects": registered}))
        if history:
            self.r.shuffle(history)
            self.write(root / "history.jsonl", history, damage=False)

    # ---------------------------------------------------------------- Codex

    def codex_response_item(self, call_ids: list[str]) -> dict[str, Any]:
        r = self.r
        kind = r.random()
        if kind < 0.3:
            role = r.choice(["user", "assistant", "developer"])
            content: list[Any] = []
            for _ in range(r.randint(0, 3)):
                k = r.random()
                if k < 0.6:
                    content.append({"type": "input_text" if role != "assistant" else "output_text",
                                    "text": self.text()})
                elif k < 0.8:
                    content.append({"type": "input_image", "image_url": f"data:image/png;base64,{self.image_b64()}",
                                    **({"detail": r.choice(["auto", "low", "high", "original", "weird"])}
                                       if r.random() < 0.6 else {})})
                else:
                    content.append(r.choice([{"type": "input_image", "image_url": "https://x/y.png"},
                                             {"type": "text", "text": ""}, {"type": "refusal"}, 7]))
            return {"type": "message", "role": role, "content": content}
        if kind < 0.4:
            return {"type": "reasoning", "summary": [{"type": "summary_text", "text": self.text()}],
                    "content": r.choice([None, [{"type": "reasoning_text", "text": self.text()}], [{"text": ""}]]),
                    "encrypted_content": "gAAA"}
        if kind < 0.6:
            cid = "call_" + self.uuid()[:12]
            call_ids.append(cid)
            custom = r.random() < 0.3
            args = r.choice([json.dumps({"cmd": ["ls", "-la"]}), "not json {", json.dumps([1, 2]), "", "{}"])
            item: dict[str, Any] = {"type": "custom_tool_call" if custom else "function_call",
                                    "name": r.choice(["shell", "apply_patch", ""]) if r.random() < 0.1 else "shell",
                                    "call_id": cid}
            item["input" if custom else "arguments"] = args if r.random() < 0.9 else {"obj": True}
            if r.random() < 0.05:
                del item["call_id"]
                item["id"] = cid
            return item
        if kind < 0.8 and call_ids:
            cid = r.choice(call_ids)
            output = r.choice([self.text(1, 30), [{"type": "input_text", "text": self.text()}], {"exit": 0},
                               None, "y" * (600_000 if self.huge else 3000) if r.random() < 0.1 else "ok"])
            return {"type": r.choice(["function_call_output", "custom_tool_call_output"]), "call_id": cid,
                    "output": output}
        if kind < 0.87:
            cid = "ws_" + self.uuid()[:10]
            call_ids.append(cid)
            return {"type": "web_search_call", "id": cid, "status": "completed",
                    "action": r.choice([{"type": "search", "query": self.text(1, 3)}, "q", None])}
        if kind < 0.92:
            cid = "ts_" + self.uuid()[:10]
            call_ids.append(cid)
            return {"type": "tool_search_call", "call_id": cid, "arguments": r.choice(['{"q":"x"}', {"q": 1}])}
        if kind < 0.96 and call_ids:
            return {"type": "tool_search_output", "call_id": r.choice(call_ids),
                    "status": r.choice(["completed", "failed"]), "tools": r.choice([[{"name": "a"}], "text", None])}
        return {"type": r.choice(["local_shell_call", "image_generation_call", "ghost_snapshot"]), "id": "u1"}

    def codex_event(self, call_ids: list[str], said: list[str]) -> dict[str, Any]:
        r = self.r
        kind = r.random()
        if kind < 0.2:
            return {"type": "user_message", "message": r.choice(said) if said and r.random() < 0.5 else self.text(),
                    "images": []}
        if kind < 0.35:
            return {"type": "agent_message", "message": r.choice(said) if said and r.random() < 0.5 else self.text()}
        if kind < 0.45:
            return {"type": "agent_reasoning", "text": self.text()}
        if kind < 0.5:
            cid = "dyn_" + self.uuid()[:8]
            call_ids.append(cid)
            return {"type": "dynamic_tool_call_request", "callId": cid, "tool": "lookup",
                    "arguments": r.choice(['{"a":1}', {"a": 2}, "raw"])}
        if kind < 0.55:
            return {"type": "dynamic_tool_call_response", "call_id": r.choice(call_ids or ["dyn_x"]),
                    "tool": "lookup", **r.choice([{"error": "boom"}, {"error": ""}, {"success": False},
                                                  {"content_items": [{"type": "input_text", "text": "r"}]}])}
        if kind < 0.62:
            cid = r.choice(call_ids) if call_ids and r.random() < 0.4 else "ws_" + self.uuid()[:8]
            return {"type": "web_search_end", "call_id": cid, "query": self.text(1, 3),
                    **({"action": {"type": "search"}} if r.random() < 0.5 else {}),
                    **({"results": [{"type": "text", "text": "hit"}]} if r.random() < 0.3 else {})}
        if kind < 0.7:
            cid = "mcp_" + self.uuid()[:8]
            result = r.choice([{"Ok": {"content": [{"type": "text", "text": "fine"}], "isError": False}},
                               {"Ok": {"content": [{"type": "text", "text": "bad"}], "isError": True}},
                               {"Err": "tool failed"}, "plain", None])
            return {"type": "mcp_tool_call_end", "call_id": cid,
                    "invocation": {"server": r.choice(["fs", ""]) if r.random() < 0.1 else "fs", "tool": "read",
                                   "arguments": {"path": "/é"}}, "duration": {"secs": 0}, "result": result}
        if kind < 0.75:
            return {"type": "thread_name_updated", "thread_name": r.choice([self.text(1, 5), "", None])}
        if kind < 0.78:
            return {"type": "thread_rolled_back", "num_turns": r.choice([1, 2, 0, 1.5])}
        return {"type": r.choice(["token_count", "task_started", "task_complete", "exec_command_begin"]), "info": None}

    def codex_session(self, root: Path, index_lines: list[bytes], index: int) -> None:
        r = self.r
        cwd, _exists = self.project()
        sid = self.uuid()
        start = self.tick()
        folder = root / "sessions" / f"{start:%Y}" / f"{start:%m}" / f"{start:%d}"
        path = folder / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
        if index % 40 == 11:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")  # not listed: no session_meta
            self.mtime(path)
            return
        meta: dict[str, Any] = {"id": sid, "timestamp": start.isoformat().replace("+00:00", "Z"), "cwd": cwd,
                                "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None}
        if r.random() < 0.05:
            del meta["timestamp"]
        if r.random() < 0.04:
            del meta["id"]
        lines = [_line({"timestamp": self.iso(), "type": "session_meta", "payload": meta})]
        call_ids: list[str] = []
        said: list[str] = []
        for _ in range(r.randint(1, 40)):
            stamp: Any = self.iso()
            pick = r.random()
            if pick < 0.05:
                stamp = self.tick().timestamp()  # seconds
            elif pick < 0.1:
                stamp = None
            kind = r.random()
            payload: Any
            if kind < 0.08:
                rtype, payload = "turn_context", {"cwd": cwd, "model": r.choice(["gpt-5-codex", "gpt-5", "", None]),
                                                  "approval_policy": "on-request"}
            elif kind < 0.55:
                rtype, payload = "response_item", self.codex_response_item(call_ids)
                if payload.get("type") == "message":
                    said.append("".join(c.get("text", "") for c in payload["content"] if isinstance(c, dict)))
            elif kind < 0.92:
                rtype, payload = "event_msg", self.codex_event(call_ids, said)
            elif kind < 0.96:
                history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
                if r.random() < 0.5:
                    history.append({"type": "compaction", "encrypted_content": "enc"})
                rtype, payload = "compacted", r.choice([{"message": self.text(), "replacement_history": history},
                                                        {"message": "  "}, {"message": "", "replacement_history": []},
                                                        {"replacement_history": [history[0], 3]}])
            elif kind < 0.98:
                rtype, payload = r.choice(["x-unknown", "session_meta"]), {"type": "x"}
            else:
                rtype, payload = "response_item", "not an object"
            record: dict[str, Any] = {"timestamp": stamp, "type": rtype, "payload": payload}
            if stamp is None:
                del record["timestamp"]
            lines.append(_line(record))
        self.write(path, lines)
        if r.random() < 0.3:
            index_lines.append(_line({"id": sid, "thread_name": self.text(1, 4), "updated_at": self.iso()}))

    def codex(self, count: int) -> None:
        root = self.home / ".codex"
        index_lines: list[bytes] = []
        for i in range(count):
            self.codex_session(root, index_lines, i)
        if index_lines:
            self.write(root / "session_index.jsonl", index_lines, damage=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--claude", type=int, default=100, help="Claude Code sessions")
    parser.add_argument("--codex", type=int, default=100, help="Codex sessions")
    parser.add_argument("--out", type=Path, required=True, help="the stand-in home directory")
    parser.add_argument("--small", action="store_true", help="huge outputs of 3,000 characters (for fixtures)")
    parser.add_argument("--claude-mb", type=float, default=0.0,
                        help="grow each Claude Code session to about this many MiB with working turns (benchmarks)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    gen = Gen(args.seed, args.out.resolve(), huge=not args.small, claude_bytes=int(args.claude_mb * 2**20))
    gen.claude(args.claude)
    gen = Gen(args.seed + 1_000_003, args.out.resolve(), huge=not args.small)
    gen.codex(args.codex)


if __name__ == "__main__":
    main()
