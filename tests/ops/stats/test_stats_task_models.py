"""Subagent usage recorded in a ``task`` tool result is filed under the model the result records
(issue 15, item 4); ``(unknown)`` only where nothing names one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import builders
from builders import usage
from omp_session.cli import cli
from omp_session.ops.stats.report import StatsCache, stats

TS = "2026-03-01T10:00:00.000Z"


def _session(tmp_path: Path, details: dict[str, Any], name: str = "s") -> Path:
    """A session whose only spending is one task result with ``details``."""
    entries = [
        builders.entry("u1", None, timestamp="2026-03-01T10:00:01.000Z", message=builders.user("go")),
        builders.entry("t1", "u1", timestamp="2026-03-01T10:00:02.000Z",
                       message=builders.tool_result("done", name="task", details=details)),
    ]
    path = tmp_path / "sessions" / "-work" / f"2026-03-01T10-00-00-000Z_{name}.jsonl"
    return builders.write_jsonl(path, [builders.header(name, timestamp=TS, cwd="/work"), *entries])


def _by(path: Path, by: str) -> dict[str, int]:
    return {g.key: g.billed.input for g in stats([path], by=by, tz="UTC", cache=False).groups}


def test_details_model_names_the_aggregate_usage(tmp_path: Path) -> None:
    # a result whose agents recorded no per-agent usage: only details.usage and details.model
    path = _session(tmp_path, {"projectAgentsDir": None, "results": [], "totalDurationMs": 5,
                               "model": "openai/gpt-5-mini", "usage": usage(92_000, 800, 0.07)})
    assert _by(path, "model") == {"openai/gpt-5-mini": 92_000}
    assert _by(path, "provider") == {"openai": 92_000}


def test_details_model_with_a_thinking_level_is_split_like_resolved_model(tmp_path: Path) -> None:
    path = _session(tmp_path, {"results": [], "model": "openai/gpt-5-mini:high", "usage": usage(5, 1, 0.01)})
    assert _by(path, "model") == {"openai/gpt-5-mini": 5}


def test_per_agent_usage_without_its_own_model_takes_the_results_model(tmp_path: Path) -> None:
    results = [{"index": 0, "id": "AgentA", "agent": "task", "usage": usage(10, 1, 0.01)},
               {"index": 1, "id": "AgentB", "agent": "task", "usage": usage(20, 2, 0.02),
                "resolvedModel": "anthropic/claude-haiku-4-5"}]
    path = _session(tmp_path, {"results": results, "model": "openai/gpt-5-mini", "usage": usage(30, 3, 0.03)})
    assert _by(path, "model") == {"openai/gpt-5-mini": 10, "anthropic/claude-haiku-4-5": 20}


def test_resolved_model_identity_names_a_result_without_resolved_model(tmp_path: Path) -> None:
    results = [{"index": 0, "id": "AgentA", "agent": "task", "usage": usage(10, 1, 0.01),
                "resolvedModelIdentity": "google/gemini-2.5-flash"}]
    path = _session(tmp_path, {"results": results, "usage": usage(10, 1, 0.01)})
    assert _by(path, "provider") == {"google": 10}


def test_aggregate_usage_takes_the_one_model_its_results_name(tmp_path: Path) -> None:
    # the agents recorded their model but not their usage: details.usage is theirs
    results = [{"index": n, "id": f"Agent{n}", "agent": "task", "resolvedModel": "openai/gpt-5-mini:low"}
               for n in range(2)]
    path = _session(tmp_path, {"results": results, "usage": usage(40, 4, 0.04)})
    assert _by(path, "model") == {"openai/gpt-5-mini": 40}


def test_aggregate_usage_of_agents_on_different_models_stays_unknown(tmp_path: Path) -> None:
    results = [{"index": 0, "id": "A", "agent": "task", "resolvedModel": "openai/gpt-5-mini"},
               {"index": 1, "id": "B", "agent": "task", "resolvedModel": "anthropic/claude-haiku-4-5"}]
    path = _session(tmp_path, {"results": results, "usage": usage(40, 4, 0.04)})
    assert _by(path, "model") == {"(unknown)": 40}


def test_nothing_recorded_stays_unknown(tmp_path: Path) -> None:
    path = _session(tmp_path, {"results": [], "usage": usage(7, 1, 0.01)})
    assert _by(path, "model") == {"(unknown)": 7}
    assert _by(path, "provider") == {"(unknown)": 7}


def test_subagent_file_present_its_own_models_count_not_the_result(tmp_path: Path) -> None:
    results = [{"index": 0, "id": "AgentA", "agent": "task", "usage": usage(10, 1, 0.01)}]
    path = _session(tmp_path, {"results": results, "model": "openai/gpt-5-mini", "usage": usage(10, 1, 0.01)})
    sub = path.with_suffix("") / "AgentA.jsonl"
    builders.write_jsonl(sub, [builders.header("AgentA", timestamp=TS, cwd="/work"),
                               builders.entry("a1", None, timestamp="2026-03-01T10:00:01.500Z",
                                              message=builders.assistant("ok", provider="xai", model="grok-4",
                                                                         usage=usage(10, 1, 0.01)))])
    assert _by(path, "model") == {"xai/grok-4": 10}


def test_a_cache_of_the_previous_version_is_not_reused(tmp_path: Path) -> None:
    path = _session(tmp_path, {"results": [], "model": "openai/gpt-5-mini", "usage": usage(3, 1, 0.01)})
    cache = tmp_path / "cache"
    stats([path], by="model", tz="UTC", cache=StatsCache(cache))
    data = json.loads((cache / "stats-usage.json").read_bytes())
    record = data["files"][str(path)]["data"]["records"][0]
    record[2:4] = [None, None]  # what the previous version extracted: no provider, no model
    data["version"] = 2
    (cache / "stats-usage.json").write_text(json.dumps(data))
    keys = [g.key for g in stats([path], by="model", tz="UTC", cache=StatsCache(cache)).groups]
    assert keys == ["openai/gpt-5-mini"]


def test_cli_by_provider_json(tmp_path: Path) -> None:
    path = _session(tmp_path, {"results": [], "model": "openai/gpt-5-mini", "usage": usage(92_000, 800, 0.07)})
    result = builders.invoke(cli, "stats", str(path), "--by", "provider", "--json", "--tz", "UTC")
    assert result.exit_code == 0, result.output
    assert [g["key"] for g in json.loads(result.stdout)["groups"]] == ["openai"]
