"""size's per-record byte marks from one automaton run (ops/size/marks.py), and the accounting that
takes a message's role and tool name from the reader's heads instead of decoding the record: each
must say what the searches and the full decode they replaced said."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.errors import SessionError
from omp_session.ops.size import doctor
from omp_session.ops.size.marks import DATA, IMAGE, RESULT, record_marks

# pieces that make and break the marks: the patterns, their halves, quotes, colons, letters
_PIECES = [b'"image', b'"images"', b'"image"', b'"image_url":"data:image/', b'"data":', b'"data":"', b'"result":',
           b'"result":"', b'"', b":", b'"d', b"ata", b'"res', b"ult", b"ima", b"ge", b"hinking\"", b" ", b"x",
           b"\\", b"\\u0069", b"data", b"result", b"\xc3\xa9"]


def _searched(raw: bytes) -> int:
    return ((IMAGE if b'"image' in raw else 0) | (DATA if b'"data":"' in raw else 0)
            | (RESULT if b'"result":"' in raw else 0))


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_the_marks_are_what_a_search_of_each_finds(pieces: list[bytes]) -> None:
    raw = b"".join(pieces)
    assert record_marks(raw) == _searched(raw)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_the_marks_of_any_bytes(raw: bytes) -> None:
    assert record_marks(raw) == _searched(raw)


def test_every_mark_is_found_beside_the_others() -> None:
    raw = b'{"data":"x","result":"y","images":[]}'
    assert record_marks(raw) == IMAGE | DATA | RESULT
    assert record_marks(b'{"data": "x","result":1}') == 0  # a space, a number: no mark


def _png() -> str:
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()


def _odd_session(path: Path) -> Path:
    """Records where the heads and the marks could go wrong: a thinking type spelled with an
    escape, a redacted thinking block, images of every kind, long outputs (one with a numeric id),
    a message that is no object, a role that is no string, marks inside texts."""
    png = _png()
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": "/w"})]
    parent: Any = None

    def add(entry_id: Any, raw: str | None = None, **fields: Any) -> None:
        nonlocal parent
        record = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                  **fields}
        lines.append(raw if raw is not None else json.dumps(record, separators=(",", ":")))
        parent = entry_id

    usage = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {"total": 0.5}}
    add("a", message={"role": "user", "content": "hi"})
    thought = json.dumps({"type": "message", "id": "b", "parentId": "a", "timestamp": "2026-01-01T00:00:01.000Z",
                          "message": {"role": "assistant", "usage": usage,
                                      "content": [{"type": "thinking", "thinking": "hmm " * 40}]}},
                         separators=(",", ":"))
    add("b", thought.replace('"thinking"', '"th\\u0069nking"'))  # the type and the key
    redacted = json.dumps({"type": "message", "id": "c", "parentId": "b", "timestamp": "2026-01-01T00:00:01.000Z",
                           "message": {"role": "assistant",
                                       "content": [{"type": "redactedThinking", "data": "x" * 30}]}})
    add("c", redacted.replace("redactedThinking", "redactedTh\\u0069nking"))
    add("d", message={"role": "toolResult", "toolName": "read", "toolCallId": "t",
                      "content": [{"type": "image", "data": png, "mimeType": "image/png"},
                                  {"type": "text", "text": "y" * 17_000}]})
    add(12345, message={"role": "toolResult", "toolName": "bash", "toolCallId": "u",
                        "content": [{"type": "text", "text": "z" * 17_000}]})
    add("f", message="not an object")
    add("g", message={"role": 7, "toolName": ["x"], "content": "x"})
    lines.append(json.dumps({"type": "custom", "id": "h", "parentId": "g", "timestamp": "2026-01-01T00:00:01.000Z",
                             "customType": "x", "data": {"images": [{"data": png, "mimeType": "image/png"}],
                                                         "image_url": "data:image/png;base64," + png}}))
    parent = "h"
    add("i", message={"role": "assistant", "content": [{"type": "text", "text": 'thinking"image "data":"' + png}],
                      "details": {"result": png}})
    add("j", message={"role": "user", "content": [{"type": "image", "data": png, "mimeType": "image/png"}]})
    add("k", message={"role": "toolResult", "toolName": "grep", "content": "\\u0041 \"result\":\"" + png})
    path.write_text("\n".join(lines) + "\n")
    return path


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the report as size makes it, the report with every message decoded, as before the heads)."""
    made = doctor.analyze_size(path, archive=False).to_json()
    with monkeypatch.context() as m:
        m.setattr(doctor, "_heads", lambda s: None)
        decoded = doctor.analyze_size(path, archive=False).to_json()
    return made, decoded


def test_odd_records_are_accounted_as_their_decode_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made, decoded = _both(_odd_session(tmp_path / "s.jsonl"), monkeypatch)
    assert made == decoded
    assert made["thinking"]["count"] == 2  # the two spelled with an escape
    assert {r["name"] for r in made["by_role"]} == {"user", "assistant", "toolResult", "<no role>"}
    assert sorted(str(row["id"]) for row in made["long_tool_outputs"]["longest"]) == ["12345", "d"]


def test_the_corpus_is_accounted_as_its_decode_says(make_corpus: Callable[[int, int], Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    compared = 0
    for path in sorted(make_corpus(5, 80).glob("*.jsonl")):
        try:
            made, decoded = _both(path, monkeypatch)
        except SessionError:
            continue
        assert made == decoded, path.name
        compared += 1
    assert compared >= 40


def test_a_generated_session_is_accounted_as_its_decode_says(large: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made, decoded = _both(large, monkeypatch)
    assert made == decoded and made["thinking"]["count"] > 0 and made["inline_images"]["count"] > 0
