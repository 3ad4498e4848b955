"""omp strips GitHub Copilot replay metadata when it opens a session, and rewrites the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = Path(os.environ.get("OMP_ORACLE_DIR", HERE.parents[1] / "tests" / "reference"))
sys.path.insert(0, str(HERE))

import adapter  # noqa: E402
import run_conformance  # noqa: E402


def assistant(i: str, parent: str, provider: str, payload_type: str, signature: object) -> dict:
    thinking: dict = {"type": "thinking", "thinking": "hmm"}
    if signature is not None:
        thinking["thinkingSignature"] = signature
    return {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [thinking, {"type": "text", "text": "ok"}],
                        "api": "openai-responses", "provider": provider, "model": "gpt-x",
                        "providerPayload": {"type": payload_type, "items": [{"type": "reasoning", "id": "r1"}]},
                        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                        "stopReason": "stop", "timestamp": 2}}


def test_copilot_replay_metadata_matches_omp(tmp_path: Path) -> None:
    records = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}},
        assistant("a1", "u1", "github-copilot", "openaiResponsesHistory", "sig"),
        assistant("a2", "a1", "github-copilot", "openaiResponsesHistory", None),
        assistant("a3", "a2", "openai", "openaiResponsesHistory", "sig"),
        assistant("a4", "a3", "github-copilot", "anthropicMessage", "sig"),
        assistant("a5", "a4", "github-copilot", "openaiResponsesHistory", None),
    ]
    path = tmp_path / "copilot.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = subprocess.run([str(ORACLE / "omp-reference"), "load", str(path)], check=True, capture_output=True,
                         text=True).stdout
    expected = json.loads(out)
    assert expected["after_flush"]["changed"]  # omp rewrote the file without the metadata
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PI_CODING_AGENT_DIR"] = str(Path(tmp) / "agent")
        mine = json.loads(json.dumps(adapter.do_load(str(path), Path(tmp), None)))
    result = run_conformance.grade([expected], [mine], ORACLE, tmp_path)
    assert result.ok, "\n".join(result.report(verbose=True))
    messages = [e["message"] for e in mine["entries"][1:]]
    assert "providerPayload" not in messages[0] and "thinkingSignature" not in messages[0]["content"][0]
    assert "providerPayload" in messages[2] and "providerPayload" in messages[3]
