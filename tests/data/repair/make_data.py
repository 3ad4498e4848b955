#!/usr/bin/env python3
"""Writes the damaged inputs of tests/test_repair.py (run from anywhere; deterministic)."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SID = "019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6071"
NAME = f"2026-03-01T09-00-00-000Z_{SID}.jsonl"


def line(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def header(**extra: object) -> dict[str, object]:
    return {"type": "session", "version": 3, "id": SID, "timestamp": "2026-03-01T09:00:00.000Z",
            "cwd": "/home/dev/proj", **extra}


USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
         "cost": {"input": 0.01, "output": 0.005, "cacheRead": 0, "cacheWrite": 0, "total": 0.015}}


def user(i: str, parent: str | None, text: str, sec: int) -> dict[str, object]:
    return {"type": "message", "id": i, "parentId": parent, "timestamp": f"2026-03-01T09:00:{sec:02d}.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": sec}}


def assistant(i: str, parent: str | None, text: str, sec: int) -> dict[str, object]:
    return {"type": "message", "id": i, "parentId": parent, "timestamp": f"2026-03-01T09:00:{sec:02d}.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-6",
                        "usage": USAGE, "stopReason": "stop", "timestamp": sec}}


CHAIN = [user("aaaa0001", None, "hello", 1), assistant("aaaa0002", "aaaa0001", "hi there", 2),
         user("aaaa0003", "aaaa0002", "fix the café bug", 3), assistant("aaaa0004", "aaaa0003", "done: café", 4)]


def body(entries: list[dict[str, object]], **extra: object) -> bytes:
    return line(header(**extra)) + b"".join(line(e) for e in entries)


def write(name: str, data: bytes) -> None:
    (HERE / name).write_bytes(data)


def main() -> None:
    base = body(CHAIN)
    write("valid.jsonl", base)
    last = line(CHAIN[-1])
    write("truncated_mid_record.jsonl", base[: len(base) - len(last) // 2])
    cut = base.rindex("é".encode()) + 1  # inside the two-byte é of the last line
    write("truncated_mid_utf8.jsonl", base[:cut])
    write("no_final_newline.jsonl", base[:-1])
    lines = base.splitlines(keepends=True)
    write("duplicate_line.jsonl", b"".join([*lines[:3], lines[2], *lines[3:]]))
    # two processes resumed the same file at aaaa0002 and appended at once: their lines
    # interleave, one append tore (half a line, then the other writer's whole line), and one
    # line was written twice
    a = [user("bbbb0001", "aaaa0002", "writer A", 5), assistant("bbbb0002", "bbbb0001", "A answer", 6)]
    b = [user("cccc0001", "aaaa0002", "writer B", 7), assistant("cccc0002", "cccc0001", "B answer", 8)]
    torn = line(a[1])
    write("two_writers.jsonl", b"".join(lines[:3]) + line(a[0]) + line(b[0]) + torn[:40] + line(b[1])
          + line(b[1]) + torn[40:])
    write("nul_tail.jsonl", base[: len(base) - 30] + b"\x00" * 4096)
    write("bom.jsonl", b"\xef\xbb\xbf" + base)
    write("crlf.jsonl", base.replace(b"\n", b"\r\n"))
    slot = {"type": "title", "v": 1, "title": "café fix", "source": "user",
            "updatedAt": "2026-03-01T09:00:09.000Z", "pad": "    "}
    write("title_wrong_width.jsonl", line(slot) + body(CHAIN, title="café fix", titleSource="user"))
    write("title_invalid.jsonl", line(dict(slot, source="robot", pad=" " * 120)) + base)
    write(NAME, b"".join(lines[1:]))  # header missing: rebuilt from this file name
    write("header_not_first.jsonl", lines[1] + lines[0] + b"".join(lines[2:]))
    # aaaa0002 is reused by a later entry; the two entries after it are its children
    dup = [*CHAIN[:3], assistant("aaaa0002", "aaaa0003", "reused id", 4), user("aaaa0005", "aaaa0002", "next", 5),
           assistant("aaaa0006", "aaaa0005", "end", 6)]
    write("duplicate_ids.jsonl", body(dup))
    # the parent of aaaa0004 is a malformed line that still names its own parent (re-attached);
    # dddd0002's parent is nowhere (kept as a root)
    broken = line(CHAIN[2])[:-30] + b"\n"
    write("missing_parent.jsonl", line(header()) + line(CHAIN[0]) + line(CHAIN[1]) + broken + line(CHAIN[3])
          + line(user("dddd0002", "ffff9999", "orphan", 9)) + line(assistant("dddd0003", "dddd0002", "o", 10)))
    cyc = [CHAIN[0], dict(CHAIN[1], parentId="aaaa0004"), CHAIN[2], CHAIN[3],
           dict(user("eeee0001", "eeee0001", "self", 11))]
    write("cycle.jsonl", body([*cyc, assistant("eeee0002", "aaaa0004", "after", 12)]))
    write("malformed_middle.jsonl", b"".join(lines[:3]) + b'{"type":"message","id":"zz\n' + b"".join(lines[3:]))
    image = {"type": "image", "mimeType": "image/png", "data": "blob:sha256:" + "ab" * 32}
    write("missing_blob.jsonl", body([dict(CHAIN[0], message={"role": "user", "content": [image], "timestamp": 1}),
                                      *CHAIN[1:]]))
    write("null_record.jsonl", b"".join(lines[:3]) + b"null\n" + b"".join(lines[3:]))
    nomsg = {k: v for k, v in user("aaaa0003", "aaaa0002", "", 3).items() if k != "message"}
    write("message_without_message.jsonl", b"".join(lines[:3]) + line(nomsg) + lines[4])
    write("numeric_cwd.jsonl", line(dict(header(), cwd=42)) + b"".join(lines[1:]))
    write("not_a_session.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)


if __name__ == "__main__":
    main()
