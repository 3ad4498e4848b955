"""Writes the small validator inputs of this folder (one per check); run it after changing them.

    python tests/data/validate/make.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TS = "2026-01-01T00:00:0{}.000Z"
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": TS.format(0), "cwd": "/p"}


def line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def user(i: str, parent: str | None, text: str = "hi", n: int = 1) -> dict[str, Any]:
    return {"type": "message", "id": i, "parentId": parent, "timestamp": TS.format(n),
            "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant(i: str, parent: str | None, content: Any = None, n: int = 2, **extra: Any) -> dict[str, Any]:
    msg = {"role": "assistant", "content": [{"type": "text", "text": "ok"}] if content is None else content,
           "api": "anthropic-messages", "provider": "anthropic", "model": "m",
           "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
           "stopReason": "stop", "timestamp": 2, **extra}
    return {"type": "message", "id": i, "parentId": parent, "timestamp": TS.format(n), "message": msg}


def entry(kind: str, i: str, parent: str | None, n: int = 3, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": i, "parentId": parent, "timestamp": TS.format(n), **fields}


def slot(width: int = 256, title: str = "t", **over: Any) -> bytes:
    obj = {"type": "title", "v": 1, "title": title, "source": "user", "updatedAt": TS.format(0), "pad": ""}
    obj.update(over)
    base = len(line(obj))
    obj["pad"] = " " * max(0, width - base)
    return line(obj)


def session(*records: Any, header: Any = HEADER) -> bytes:
    return line(header) + b"".join(r if isinstance(r, bytes) else line(r) for r in records)


U = user("aaaaaaaa", None)
A = assistant("bbbbbbbb", "aaaaaaaa")
BLOB = hashlib.sha256(b"png").hexdigest()
BAD_BLOB = hashlib.sha256(b"other").hexdigest()
MISSING = "0" * 64


def image_entry(ref: str) -> dict[str, Any]:
    return {"type": "message", "id": "cccccccc", "parentId": "aaaaaaaa", "timestamp": TS.format(2),
            "message": {"role": "user", "content": [{"type": "image", "data": ref, "mimeType": "image/png"}],
                        "timestamp": 2}}


FILES: dict[str, bytes] = {
    "clean.jsonl": slot() + session(U, A),
    "title_short.jsonl": slot(200) + session(U),
    "title_long.jsonl": slot(300) + session(U),
    "title_pad.jsonl": slot().replace(b'  "}', b'xx"}'),
    "title_bad_source.jsonl": slot(source="robot") + session(U),
    "title_mismatch.jsonl": slot(title="slot") + session(U, header={**HEADER, "title": "header"}),
    "null_record.jsonl": session(U, b"null\n", A),
    "message_without_message.jsonl": session(U, {"type": "message", "id": "cccccccc", "parentId": "aaaaaaaa",
                                                 "timestamp": TS.format(2)}),
    "numeric_cwd.jsonl": session(U, header={**HEADER, "cwd": 7}),
    "usage_no_cost.jsonl": session(U, assistant("bbbbbbbb", "aaaaaaaa", usage={"input": 1, "output": 1})),
    "role_missing.jsonl": session(U, {**user("cccccccc", "aaaaaaaa"), "message": {"content": "x", "timestamp": 1}}),
    "assistant_string_content.jsonl": session(U, assistant("bbbbbbbb", "aaaaaaaa", content="text")),
    "assistant_no_content.jsonl": session(U, {**A, "message": {k: v for k, v in A["message"].items()
                                                               if k != "content"}}),
    "assistant_error_string.jsonl": session(U, assistant("bbbbbbbb", "aaaaaaaa", content="x", stopReason="error")),
    "ttsr_number.jsonl": session(U, entry("ttsr_injection", "cccccccc", "aaaaaaaa", injectedRules=5)),
    "ttsr_mixed.jsonl": session(U, entry("ttsr_injection", "cccccccc", "aaaaaaaa", injectedRules=["a", 1])),
    "dup_cycle.jsonl": session(U, user("bbbbbbbb", "aaaaaaaa", n=2), user("aaaaaaaa", "bbbbbbbb", n=3)),
    "duplicate_record.jsonl": session(U, A, A),
    "bom_malformed.jsonl": b"\xef\xbb\xbf" + session(U, b"not json\n"),
    "invalid_utf8.jsonl": session(U, entry("custom", "cccccccc", "aaaaaaaa", customType="x", data="@@FF@@")
                                  ).replace(b"@@FF@@", b"\xff"),
    "truncated_mid_utf8.jsonl": session(U) + line(user("cccccccc", "aaaaaaaa", "h\u00e9llo")).split(b"\xa9")[0],
    "truncated.jsonl": session(U) + b'{"type":"message","id":"ccc',
    "no_final_newline.jsonl": session(U)[:-1],
    "nul_tail.jsonl": session(U) + b"\x00" * 300,
    "glued.jsonl": session(U)[:-1] + line(A),
    "trailing_garbage.jsonl": session(U)[:-1] + b" trailing\n",
    "malformed.jsonl": session(U, b"not json at all\n", A),
    "crlf.jsonl": session(U, A).replace(b"\n", b"\r\n"),
    "multiline.jsonl": session(U, json.dumps(A, indent=1).encode() + b"\n"),
    "non_object.jsonl": session(U, b"42\n", A),
    "leaf_non_object.jsonl": session(U, A, b"[1]\n"),
    "leaf_label.jsonl": session(U, A, entry("label", "cccccccc", "bbbbbbbb", targetId="aaaaaaaa", label="x")),
    "leaf_model_usage.jsonl": session(U, A, entry("model_usage", "cccccccc", "aaaaaaaa", purpose="title")),
    "envelope.jsonl": session(U, {"type": 5, "parentId": "aaaaaaaa", "timestamp": "yesterday"}),
    "parent_empty.jsonl": session(U, user("cccccccc", "", n=2)),
    "parent_missing.jsonl": session(U, user("cccccccc", "zzzzzzzz", n=2)),
    "self_parent.jsonl": session(U, user("cccccccc", "cccccccc", n=2)),
    "parent_cycle.jsonl": session(U, user("cccccccc", "dddddddd", n=2), user("dddddddd", "cccccccc", n=3)),
    "label_missing.jsonl": session(U, entry("label", "cccccccc", "aaaaaaaa", targetId="zzzzzzzz", label="x"), A),
    "compaction_missing.jsonl": session(U, entry("compaction", "cccccccc", "aaaaaaaa", summary="s",
                                                 firstKeptEntryId="zzzzzzzz", tokensBefore=1)),
    "compaction_off_path.jsonl": session(U, user("dddddddd", None, n=2), entry(
        "compaction", "cccccccc", "aaaaaaaa", summary="s", firstKeptEntryId="dddddddd", tokensBefore=1)),
    "branch_summary_from.jsonl": session(U, entry("branch_summary", "cccccccc", "aaaaaaaa", fromId="zz",
                                                  summary="s")),
    "tool_orphan.jsonl": session(U, {**user("cccccccc", "aaaaaaaa"), "message": {
        "role": "toolResult", "toolCallId": "call9", "toolName": "read", "content": [], "isError": False,
        "timestamp": 3}}),
    "tool_dangling.jsonl": session(U, assistant("bbbbbbbb", "aaaaaaaa", content=[
        {"type": "toolCall", "id": "call1", "name": "read", "arguments": {}}]), user("cccccccc", "bbbbbbbb", n=4)),
    "custom_message.jsonl": session(U, entry("custom_message", "cccccccc", "aaaaaaaa", customType="x", content=5,
                                             display="yes", attribution="robot")),
    "model_change_legacy.jsonl": session(U, entry("model_change", "cccccccc", "aaaaaaaa", provider="a",
                                                  modelId="m")),
    "version_v1.jsonl": session(U, header={k: v for k, v in HEADER.items() if k != "version"}),
    "version_v2.jsonl": session(U, header={**HEADER, "version": 2}),
    "version_future.jsonl": session(U, header={**HEADER, "version": 9}),
    "version_string.jsonl": session(U, header={**HEADER, "version": "3"}),
    "parent_session.jsonl": session(U, header={**HEADER, "parentSession": "/x/y.jsonl"}),
    "truncated_content.jsonl": session(user("aaaaaaaa", None,
                                            "x\n\n[Session persistence truncated large content]")),
    "extra_header.jsonl": session(U, HEADER, A),
    "header_not_first.jsonl": line(U) + line(HEADER) + line(A),
    "no_cwd.jsonl": session(U, header={k: v for k, v in HEADER.items() if k != "cwd"}),
    "blobs.jsonl": session(U, image_entry(f"blob:sha256:{BLOB}"), {**image_entry(f"blob:sha256:{MISSING}"),
                           "id": "dddddddd"}, {**image_entry(f"blob:sha256:{BAD_BLOB}"), "id": "eeeeeeee"},
                           {**image_entry("blob:sha256:XYZ"), "id": "ffffffff"}),
    "2026-01-01T00-00-00-000Z_other-id.jsonl": session(U),
    "not_png.jsonl": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
    "empty.jsonl": b"",
    "text.jsonl": b"hello\nworld\n",
}


def main() -> None:
    for name, data in FILES.items():
        (HERE / name).write_bytes(data)
    blobs = HERE / "blobs"
    blobs.mkdir(exist_ok=True)
    (blobs / BLOB).write_bytes(b"png")
    (blobs / BAD_BLOB).write_bytes(b"not other")


if __name__ == "__main__":
    main()
