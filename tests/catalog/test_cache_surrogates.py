"""A lone surrogate in a session (omp writes it as a \\ud800 escape) must not stop the listing
cache from being saved, nor make ``list`` print a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session.cli import cli


def test_a_lone_surrogate_title_is_listed_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent, cache = tmp_path / "agent", tmp_path / "cache"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    bucket = agent / "sessions" / "-w"
    bucket.mkdir(parents=True)
    (bucket / "2026-01-01T00-00-00-000Z_abc.jsonl").write_bytes(
        b'{"type":"session","version":3,"id":"abc","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
        b'{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"bad \\ud800 half","timestamp":1}}\n')
    for _ in range(2):  # the second run reads what the first one cached
        result = CliRunner().invoke(cli, ["list", "--all", "--jsonl", "--no-subagents"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["id"] == "abc"
    assert any(p.name.startswith("list") for p in (cache / "omp-session").iterdir())
