#!/usr/bin/env python3
"""Build the persistence/blob test inputs and record what the real omp does with them.

    python tests/data/persist/record.py [--oracle PATH] [--only NAME]

Writes, next to this file:

* ``scripts/<name>.json.gz``    - ``omp-oracle run`` scripts (S8.7 / C58-C63); each
  ends with ``reopen`` so the final views show omp's blob resolution too.
* ``expected/<name>.run.json.gz`` - the oracle's ``run`` record for the script.
* ``expected/<name>.blobs.json``  - omp's blob directory after the run (names, sizes,
  sha256 of the content, hard-link groups); the run record itself does not show it.
* ``load/<name>.jsonl`` + ``load/<name>.blobs/`` - session files with blob refs (C64)
  and ``expected/<name>.load.json.gz`` from ``omp-oracle load --blobs``.
* ``expected/b64_cases.json`` - ``Buffer.from(s, "base64")`` in omp's Bun for odd inputs.

Standard library only. Everything is deterministic; re-running rewrites identical
inputs (outputs change only if omp does).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ORACLE = Path(os.environ.get("OMP_ORACLE_DIR", HERE.parents[2] / "tests" / "reference")).resolve() / "omp-reference"
ORACLE_HOME = Path(os.environ.get("OMP_ORACLE_HOME", Path.home() / ".cache" / "omp-session-reference" / "18.2.3"))
BUN = ORACLE_HOME / "node_modules" / "bun" / "bin" / "bun.exe"

TS = 1767225600000
PATTERN = "abcdefghijklmnopqrstuvwxyz0123456789_"  # 37 chars: cut points are recognisable
LINES = "line of text\n"


def big(n: int, pattern: str = PATTERN) -> str:
    return (pattern * (n // len(pattern) + 1))[:n]


def rbytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def b64(n_bytes: int, seed: int) -> str:
    return base64.b64encode(rbytes(n_bytes, seed)).decode()


def b64_len(n_chars: int, seed: int) -> str:
    """A base64-looking string of exactly n_chars characters."""
    s = base64.b64encode(rbytes(n_chars, seed)).decode().rstrip("=")
    return s[:n_chars]


def user(content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, "timestamp": TS, **extra}


def text_user(t: str) -> dict[str, Any]:
    return user([{"type": "text", "text": t}])


USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def assistant(content: list[Any], **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "api": "openai-responses", "provider": "openai",
            "model": "gpt-x", "usage": USAGE, "stopReason": "stop", "timestamp": TS + 1, **extra}


def tool_result(content: list[Any], details: Any = None, **extra: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
                           "content": content, "isError": False, "timestamp": TS + 2}
    if details is not None:
        msg["details"] = details
    msg.update(extra)
    return msg


def script(*messages: dict[str, Any]) -> dict[str, Any]:
    ops: list[dict[str, Any]] = [{"op": "appendMessage", "message": m} for m in messages]
    # The file materializes only with an assistant message; close + reopen shows
    # what omp reads back (blob resolution).
    ops.append({"op": "appendMessage", "message": assistant([{"type": "text", "text": "done"}])})
    ops.append({"op": "reopen"})
    return {"cwd": "/home/dev/project", "ops": ops}


# ----------------------------------------------------------------- scripts


def s_truncation() -> dict[str, Any]:
    emoji = "\U0001F600"
    return script(
        text_user(big(600_000)),                                   # C58
        text_user(big(500_000)),                                   # exactly the limit: kept
        text_user(big(500_001)),
        user(big(600_000)),                                        # string content
        text_user(emoji * 250_001),                                # 250,001 code points, 500,002 units
        text_user(emoji * 250_000),                                # 500,000 units: kept
        text_user("a" * 499_952 + emoji + "b" * 1000),             # C59: cut after a high surrogate
        text_user("a" * 499_951 + emoji + "b" * 1000),             # pair ends exactly at the cut
        text_user("a" * 499_952 + "\ud800" + "b" * 1000),          # lone high surrogate at the cut
        text_user("a" * 499_952 + "\udc00" + "b" * 1000),          # lone low surrogate at the cut
        text_user("é" * 300_000 + "中" * 300_000),
        text_user("x" * 100 + emoji * 300_000),
        tool_result([{"type": "text", "text": "ok"}], details={
            "a": {"b": [{"c": big(600_000)}, 5, None, True, 1.5]},
            "k" * 600_001: "key is never truncated",
            "long_value_key" + "k" * 10: big(700_000, "xyz"),
            "list": [big(500_001), "short", [big(600_000, "nested-array ")]],
            "thinkingSignature": big(600_000, "ts"),              # defensive exemptions by key
            "thoughtSignature": big(600_000, "th"),
            "textSignature": [big(600_000, "tx")],                # array items inherit the key
            "other": big(600_000, "ot"),
        }),
    )


def s_signed() -> dict[str, Any]:
    big_t = big(600_000)
    return script(
        assistant([
            {"type": "thinking", "thinking": big_t, "thinkingSignature": "sig-1"},
            {"type": "thinking", "thinking": big_t, "thinkingSignature": ""},
            {"type": "thinking", "thinking": big_t},
            {"type": "thinking", "thinking": big_t, "thinkingSignature": 7},
            {"type": "thinking", "thinking": big_t, "thinkingSignature": big(600_000, "sg")},
            {"type": "thinking", "thinking": "t", "thinkingSignature": "s", "jsonlEvents": [1],
             "extra": {"jsonlEvents": 2}},
            {"type": "text", "text": big_t, "textSignature": "tsig"},
            {"type": "text", "text": big_t, "textSignature": ""},
            {"type": "toolCall", "id": "c1", "name": "write", "arguments": {"content": big_t},
             "thoughtSignature": "th"},
            {"type": "toolCall", "id": "c2", "name": "write", "arguments": {"content": big_t}},
            {"type": "redactedThinking", "data": big_t},
            {"type": "redactedThinking", "data": "", "note": big_t},
            {"type": "anthropicServerTool", "block": {"type": "server_tool_use", "id": "srv1",
                                                      "name": "web_search", "input": {"q": big_t}}},
            {"type": "anthropicServerTool", "block": {"type": "server_tool_use", "id": "srv2",
                                                      "name": "bash", "input": {"q": big_t}}},
            {"type": "anthropicServerTool", "block": {"type": "server_tool_use", "id": "",
                                                      "name": "web_search", "input": {"q": big_t}}},
            {"type": "anthropicServerTool", "block": {"type": "web_search_tool_result", "tool_use_id": "srv1",
                                                      "content": [{"page": big_t}], "jsonlEvents": 1}},
            {"type": "anthropicServerTool", "block": {"type": "tool_search_tool_result", "tool_use_id": "srv3",
                                                      "content": None, "x": big_t}},
            {"type": "anthropicServerTool", "block": {"type": "web_search_tool_result", "tool_use_id": "srv4",
                                                      "x": big_t}},
            {"type": "anthropicServerTool", "block": {"type": "server_tool_use", "id": "srv5",
                                                      "name": "tool_search_tool_bm25", "input": big_t}},
        ], providerPayload={"type": "anthropicCompaction", "encrypted_content": big_t, "jsonlEvents": [1]}),
        tool_result([{"type": "text", "text": "x"}], details={
            "anthropicCompaction": {"content": "summary", "blob": big_t, "jsonlEvents": [1]},
            "other": {"anthropicCompaction": {"content": 5, "blob": big_t, "jsonlEvents": [1]}},
            "reasoning": [{"type": "reasoning", "encrypted_content": big_t, "summary": big_t},
                          {"type": "reasoning", "encrypted_content": "", "summary": big_t}],
            "compaction": {"type": "anthropicCompaction", "x": big_t},
        }),
    )


def _sig(**item: Any) -> str:
    return json.dumps({"type": "reasoning", **item}, separators=(",", ":"))


def s_dedupe() -> dict[str, Any]:
    payload = {"type": "openaiResponsesHistory", "items": [
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC1", "summary": []},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {"type": "reasoning", "id": "rs_9", "encrypted_content": ""},
        {"type": "message", "id": "msg_1", "content": []},
        "not-an-object", None, 42,
    ]}

    def think(sig: Any, text: str = "t", **extra: Any) -> dict[str, Any]:
        return {"type": "thinking", "thinking": text, "thinkingSignature": sig, **extra}

    return script(
        assistant([think(_sig(id="rs_1", encrypted_content="ENC1"), jsonlEvents=[1]),
                   {"type": "text", "text": "answer"}], providerPayload=payload),
        assistant([think(_sig(id="rs_2"))], providerPayload=payload),                       # by id
        assistant([think(_sig(id="rs_1", encrypted_content="OTHER"), jsonlEvents=[1])],
                  providerPayload=payload),                                                 # enc decides
        assistant([think("{not json")], providerPayload=payload),
        assistant([think('{"type":"reasoning","id":"rs_1","x":NaN}')], providerPayload=payload),
        assistant([think(json.dumps({"type": "message", "id": "rs_1"}))], providerPayload=payload),
        assistant([think(_sig(id="rs_1", encrypted_content="ENC1"), big(600_000))],
                  providerPayload=payload),                                                 # now truncatable
        assistant([think(_sig(id="rs_1", encrypted_content="ENC1"))],
                  providerPayload={"type": "openaiResponsesHistory",
                                   "items": [{"type": "reasoning", "summary": []}]}),
        user([think(_sig(id="rs_1", encrypted_content="ENC1"))], providerPayload=payload),
        assistant([think(_sig(id="rs_1", encrypted_content="ENC1"))],
                  providerPayload={"type": "openaiResponses", "items": payload["items"]}),
        assistant([think(" \n\t" + _sig(id="rs_2") + "\r\n ")], providerPayload=payload),
        assistant([think("\u00a0" + _sig(id="rs_2"))], providerPayload=payload),
        assistant([think(_sig(id="rs_9", encrypted_content=""))], providerPayload=payload),
        assistant([think(_sig(id="rs_1", encrypted_content=5))], providerPayload=payload),
        assistant([think(_sig(id="rs_1", encrypted_content="ENC1")), think(_sig(id="rs_3")),
                   think(_sig(id="rs_2"), "second", jsonlEvents=[2])], providerPayload=payload),
        assistant([think("[1,2]"), think("null"), think('"str"'), think("")], providerPayload=payload),
        assistant([think(_sig(id="rs_1", encrypted_content="ENC1"))],
                  providerPayload={"type": "openaiResponsesHistory", "items": "nope"}),
    )


def s_jsonl_events() -> dict[str, Any]:
    body = big(600_000, LINES)
    return script(
        tool_result([{"type": "text", "text": "a"}], details={"jsonlEvents": [{"e": 1}], "content": "a\nb",
                                                              "lineCount": 99}),
        tool_result([{"type": "text", "text": "a"}], details={"content": "a\nb", "lineCount": 99}),
        tool_result([{"type": "text", "text": "a"}], details={"content": body, "lineCount": 1}),
        tool_result([{"type": "text", "text": "a"}], details={"content": "x", "lineCount": "7",
                                                              "jsonlEvents": []}),
        tool_result([{"type": "text", "text": "a"}], details={"content": ["a"], "lineCount": 5,
                                                              "jsonlEvents": 1}),
        tool_result([{"type": "text", "text": "a"}], details={"lineCount": 3, "content": "a\n\nb\n",
                                                              "nested": {"jsonlEvents": [1]}}),
        tool_result([{"type": "text", "text": "a"}], details={"a": [{"b": {"jsonlEvents": [1], "k": 1}}],
                                                              "m": [[{"jsonlEvents": None}]]}),
        tool_result([{"type": "text", "text": "a"}], details={"content": "1\r\n2\r\n3", "lineCount": 2.5,
                                                              "jsonlEvents": None}),
        tool_result([{"type": "text", "text": "a"}], details={"content": "1\n2", "lineCount": True,
                                                              "jsonlEvents": 0}),
        tool_result([{"type": "text", "text": "a"}], details={"content": "", "lineCount": 0,
                                                              "other": big(500_001)}),
        tool_result([{"type": "text", "text": "a"}], details={"lineCount": 0, "content": "a\nb"},
                    jsonlEvents=[{"e": 2}]),
        {**text_user("hi"), "jsonlEvents": [1], "content": "one\ntwo", "lineCount": 9},
        tool_result([{"type": "text", "text": "a"}], details={"jsonlEvents": [1]}),
        tool_result([{"type": "text", "text": "a"}], details={"content": "u\nv", "lineCount": -1,
                                                              "deep": [{"x": [{"jsonlEvents": 1}]}]}),
    )


PNG = "image/png"


def s_images() -> dict[str, Any]:
    d1068 = b64(801, 1)          # 1,068 chars (C62)
    img = lambda data, mime=PNG, **x: {"type": "image", "data": data, "mimeType": mime, **x}  # noqa: E731
    raw = rbytes(900, 7)
    std = base64.b64encode(raw).decode()
    urlsafe = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    wrapped = "\n".join(std[i:i + 76] for i in range(0, len(std), 76))
    return script(
        user([{"type": "text", "text": "look"}, img(d1068)]),
        user([img(b64_len(1023, 2)), img(b64_len(1024, 3)), img(b64(702, 4))]),  # 1023 / 1024 / 936 chars
        tool_result([img(b64(801, 5), "image/jpeg")], details={
            "images": [{"data": b64(801, 6), "mimeType": "image/webp"},
                       {"type": "image", "data": b64(801, 8)},
                       {"data": b64(801, 9), "mimeType": "text/plain"},
                       {"data": b64(801, 10), "mimeType": "IMAGE/GIF"}],
            "image": img(b64(801, 11)),
            "other": [img(b64(801, 12))],
            "frames": [{"data": b64(801, 13), "mimeType": PNG}, {"type": "image", "data": b64(801, 14)}],
            "content": [img(b64(801, 15), "image/gif"), [img(b64(801, 16), "image/png")]],
            "nested": {"deeper": {"content": {"type": "image", "data": b64(801, 17)}}},
        }),
        user([img(b64(801, 20), "IMAGE/JPEG"), img(b64(801, 21), "image/svg+xml"),
              img(b64(801, 22), "image/x-icon; charset=x"), img(b64(801, 23), "image/vnd.foo+zip"),
              img(b64(801, 24), "image/"), img(b64(801, 25), "image/.hidden"), img(b64(801, 26), "image/a b"),
              img(b64(801, 27), "image/" + "y" * 33), img(b64(801, 28), "image/" + "z" * 32),
              img(b64(801, 29), "application/octet-stream"), {"type": "image", "data": b64(801, 30)},
              img(b64(801, 31), "image/jpg"), img(b64(801, 32), "image/PNG;x=1"), img(b64(801, 33), "image/-x")]),
        user([img(urlsafe), img(wrapped), img(std.rstrip("=")[:-1]), img(std[:600] + "=" + std[600:]),
              img("\U0001F600" + std), img(std[:500] + "\u013d" + std[500:]), img(std[:500] + "\u0144" + std[500:]),
              img("\u00e9" * 10 + std), img("!!" + std + "!!"), img("\U0001F600" * 600),
              img(std + "\ud800"), img("\u4e2d" * 1030), img(std, "image/png", jsonlEvents=[1], extra=big(600_000))]),
        user([img("blob:sha256:" + "a" * 1100), img("blob:sha256:ABC" + "Q" * 1100), img(b64(801, 40)),
              img(b64(801, 40)), img(base64.b64encode(bytes(range(256)) * 1760).decode()), {"type": "image", "data": 12345, "big": big(600_000)},
              {"type": "image", "mimeType": PNG}]),
        tool_result([{"type": "text", "text": "x"}], details={"image": img(big(600_000))}),
    )


def s_image_gen_url() -> dict[str, Any]:
    gen = b64(801, 50)
    url_png = "data:image/png;base64," + b64(30, 51)
    url_big = "data:image/jpeg;base64," + b64(1500, 52)
    return script(
        assistant([{"type": "text", "text": "here"}], providerPayload={"type": "openaiResponsesHistory", "items": [
            {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": gen,
             "jsonlEvents": [1], "big": big(600_000)},
            {"type": "image_generation_call", "id": "ig_2", "result": b64_len(1000, 53), "jsonlEvents": [1],
             "big": big(600_000)},
            {"type": "image_generation_call", "id": "ig_3", "result": "blob:sha256:" + "b" * 64},
            {"type": "image_generation_call", "id": "ig_4", "result": "-_" + gen.replace("+", "-")},
            {"type": "message", "role": "user", "content": [
                {"type": "input_image", "image_url": url_png},
                {"type": "input_image", "image_url": url_big, "detail": "auto"},
                {"type": "input_image", "image_url": "data:text/plain;base64,QUJD"},
                {"type": "input_image", "image_url": "data:image/png,rawpixels"},
                {"type": "input_image", "image_url": "DATA:image/png;base64,QUJD"},
                {"type": "input_image", "image_url": ["data:image/png;base64,QUJD", "x"]},
                {"type": "input_image", "url": url_png},
                {"type": "input_image", "image_url": big(600_000)},
                {"type": "input_image", "image_url": "data:image/png;base64,\u00e9\ud800\U0001F600"},
                {"type": "input_image", "image_url": {"url": url_png}},
            ]},
            {"type": "reasoning", "encrypted_content": "E", "image_url": url_png},
        ]}),
        tool_result([{"type": "text", "text": "x"}], details={
            "gen": {"type": "image_generation_call", "result": b64(801, 54)},
            "image_url": "data:image/webp;base64," + "A" * 10,
        }),
    )


SCRIPTS = {
    "truncation": s_truncation,
    "signed": s_signed,
    "dedupe": s_dedupe,
    "jsonl_events": s_jsonl_events,
    "images": s_images,
    "image_gen_url": s_image_gen_url,
}


# ----------------------------------------------------------------- load cases (C63/C64)


def load_case() -> tuple[str, dict[str, bytes]]:
    """A hand-written v3 session whose refs exercise every resolution rule."""
    blobs: dict[str, bytes] = {}

    def put(data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        blobs[sha] = data
        return "blob:sha256:" + sha

    png = put(rbytes(801, 60))
    gen = put(rbytes(500, 61))
    url = put(b"data:image/png;base64,iVBORw0KGgo=")
    bad_utf8 = put(b"data:image/png;base64,\xff\xfe\xc3(\xe2\x82")
    empty = put(b"")
    missing = "blob:sha256:" + hashlib.sha256(b"not stored").hexdigest()
    upper = png.upper().replace("BLOB:SHA256:", "blob:sha256:")
    header = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-01-01T00:00:00.000Z",
              "cwd": "/tmp", "x": {"content": [{"type": "image", "data": png}]}}

    entries: list[dict[str, Any]] = []

    def msg(message: dict[str, Any]) -> None:
        i = len(entries) + 1
        entries.append({"type": "message", "id": f"e{i:07d}", "parentId": f"e{i - 1:07d}" if i > 1 else None,
                        "timestamp": "2025-01-01T00:00:01.000Z", "message": message})

    img = lambda data, mime=PNG, **x: {"type": "image", "data": data, "mimeType": mime, **x}  # noqa: E731
    msg(user([{"type": "text", "text": png}, img(png), img(upper), img("blob:sha256:../../etc/passwd"),
              img("blob:sha256:abc"), img(missing), img(empty), img(png + " ")]))
    msg(tool_result([img(gen, "image/jpeg")], details={
        "image": img(png), "images": [{"data": png, "mimeType": PNG}, {"type": "image", "data": gen},
                                      {"data": png, "mimeType": "text/plain"}],
        "frames": [{"data": png, "mimeType": PNG}, {"type": "image", "data": png, "image_url": url}],
        "data": png, "plain": png, "list": [png],
        "content": [img(png, image_url=url, inner={"image_url": url}),
                    {"type": "image", "data": "inline", "image_url": url, "inner": {"image_url": url}}],
    }))
    msg(assistant([{"type": "text", "text": "ok"}], providerPayload={"type": "openaiResponsesHistory", "items": [
        {"type": "image_generation_call", "id": "ig_1", "result": gen},
        {"type": "image_generation_call", "id": "ig_2", "result": missing},
        {"type": "image_generation_call", "id": "ig_3", "result": upper},
        {"type": "message", "content": [{"type": "input_image", "image_url": url},
                                        {"type": "input_image", "image_url": bad_utf8},
                                        {"type": "input_image", "image_url": missing},
                                        {"type": "input_image", "image_url": "blob:sha256:../x"},
                                        {"type": "input_image", "image_url": [url]},
                                        {"type": "input_image", "url": url}]},
        {"type": "reasoning", "encrypted_content": "E", "image_url": url},
    ]}))
    msg(user([{"type": "text", "text": "no refs here"}]))
    lines = [json.dumps(header, separators=(",", ":"))] + [json.dumps(e, separators=(",", ":")) for e in entries]
    return "\n".join(lines) + "\n", blobs


# ----------------------------------------------------------------- base64 via Bun

B64_CASES = [
    "AA=EC", "A", "AA", "AAA", "AAAA", "AAAAA", "QUJD", "QUJ", "QU", "Q", "QUJDRA", "QUJDRA=", "QUJDRA==",
    "QUJDRA===", "QU JD\nRA", "-_-_", "+/+/", "a-b_", "!!QUJD!!", "Q=UJD", "=QUJD", "QUJD=QUJD", "QUJDR",
    "\u00ffQUJD", "QUJ\u20acD", "\U0001F600QUJD", "QUJDRA=x", "QR==", "QQ==", "QR", "Q R", "AAAA====AAAA",
    "QUJD\u0000RA", "QUJD.RA", "QQ=Q", "QUI=", "QUI", "QUJDR\U0001F600", "QUJDRA\U0001F600",
    "QUJDRAB\U0001F600", "QUJD\U00010000RA", "QUJD\udc00\ud800RA", "QUJD\ud800\ud800RA", "QUJD\U0010FFFFRA",
    "\ud800QUJD", "QUJ\u0144", "\u0151\u0155\u014a\u0144", "QU\u013dA", "QUJDR\u203d", "QUJD\u00bdRA",
    "QUJ\uff44", "QUJD\u2028RA", "", "====", "\t\r\n ", "QUJD\r\nRUZH\r\n", "/+/+", "_-_-", "AP8A_w",
    "\u0100\u0101", "QUJDR\u0101",
]

_B64_TS = r"""
const cases: string[] = JSON.parse(await Bun.stdin.text());
console.log(JSON.stringify(cases.map(c => Buffer.from(c, "base64").toString("hex"))));
"""


def record_b64(out_dir: Path) -> None:
    with tempfile.TemporaryDirectory() as td:
        ts = Path(td) / "b64.ts"
        ts.write_text(_B64_TS)
        res = subprocess.run([str(BUN), str(ts)], input=json.dumps(B64_CASES), capture_output=True,
                             text=True, check=True)
    hexes = json.loads(res.stdout)
    data = {"bun": _bun_version(), "cases": [{"input": c, "hex": h} for c, h in zip(B64_CASES, hexes, strict=True)]}
    (out_dir / "b64_cases.json").write_text(json.dumps(data, indent=1) + "\n")


def _bun_version() -> str:
    return subprocess.run([str(BUN), "--version"], capture_output=True, text=True, check=True).stdout.strip()


# ----------------------------------------------------------------- running the oracle


def _write_gz_json(path: Path, obj: Any) -> None:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw)


def _blob_listing(blob_dir: Path) -> dict[str, Any]:
    files = {}
    inodes: dict[int, list[str]] = {}
    for p in sorted(blob_dir.iterdir()) if blob_dir.is_dir() else []:
        data = p.read_bytes()
        files[p.name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        inodes.setdefault(p.stat().st_ino, []).append(p.name)
    return {"files": files, "links": sorted(sorted(g) for g in inodes.values() if len(g) > 1)}


def run_script(name: str, spec: dict[str, Any], scripts_dir: Path, exp_dir: Path) -> None:
    raw = json.dumps(spec, ensure_ascii=True, separators=(",", ":")).encode()
    with open(scripts_dir / f"{name}.json.gz", "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(raw)
    with tempfile.TemporaryDirectory() as td:
        sp = Path(td) / f"{name}.json"
        sp.write_bytes(raw)
        res = subprocess.run([str(ORACLE), "run", "--keep-tmp", "--timeout", "120", str(sp)],
                             capture_output=True, text=True, check=True)
        m = re.search(r"temporary directory (\S+)", res.stderr)
        if not m:
            raise SystemExit(f"no --keep-tmp path in stderr: {res.stderr}")
        tmp = Path(m.group(1))
        try:
            listing = _blob_listing(tmp / "home" / ".omp" / "agent" / "blobs")
        finally:
            shutil.rmtree(tmp)
    record = json.loads(res.stdout)
    record["file"] = f"{name}.json"
    _write_gz_json(exp_dir / f"{name}.run.json.gz", record)
    (exp_dir / f"{name}.blobs.json").write_text(json.dumps(listing, indent=1, sort_keys=True) + "\n")
    errs = [s for s in record["steps"] if s["error"]]
    print(f"{name}: {len(record['steps'])} steps, {len(errs)} errors, {len(listing['files'])} blob files",
          file=sys.stderr)


def run_load(name: str, load_dir: Path, exp_dir: Path) -> None:
    text, blobs = load_case()
    path = load_dir / f"{name}.jsonl"
    path.write_text(text)
    bdir = load_dir / f"{name}.blobs"
    if bdir.exists():
        shutil.rmtree(bdir)
    bdir.mkdir()
    for sha, data in blobs.items():
        (bdir / sha).write_bytes(data)
    res = subprocess.run([str(ORACLE), "load", "--blobs", str(bdir), str(path)], capture_output=True, text=True,
                         check=True)
    record = json.loads(res.stdout)
    record["file"] = path.name
    _write_gz_json(exp_dir / f"{name}.load.json.gz", record)
    print(f"{name}: loaded, error={record['error']}", file=sys.stderr)


def main() -> None:
    global ORACLE
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", default=str(ORACLE))
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    ORACLE = Path(args.oracle)
    scripts_dir, exp_dir, load_dir = HERE / "scripts", HERE / "expected", HERE / "load"
    for d in (scripts_dir, exp_dir, load_dir):
        d.mkdir(exist_ok=True)
    wanted = set(args.only or [*SCRIPTS, "resolve", "b64"])
    for name, fn in SCRIPTS.items():
        if name in wanted:
            run_script(name, fn(), scripts_dir, exp_dir)
    if "resolve" in wanted:
        run_load("resolve", load_dir, exp_dir)
    if "b64" in wanted:
        record_b64(exp_dir)


if __name__ == "__main__":
    main()
