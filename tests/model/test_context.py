"""Golden tests: buildSessionContext / getUsageStatistics against omp's answers.

Inputs and the oracle's outputs live in tests/data/context (re-create them with
``tests/data/context/record.py``). Each input is read here with a strict loader
(one ``json.loads`` per line), migrated when it is v1/v2, and every view must
equal omp's after a JSON round trip (numbers compared as doubles, key order
included); where omp threw, we must raise ContextError.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from builders import entry, user
from omp_session.errors import SessionError
from omp_session.format.migrate import migrate, needs_migration
from omp_session.model.context import (
    UNDEFINED,
    ContextError,
    blob_frame_resolver,
    branch_path,
    build_id_index,
    build_session_context,
    leaf_after_load,
    usage_statistics,
)

DATA = Path(__file__).parents[1] / "data" / "context"
_spec = importlib.util.spec_from_file_location("context_record", DATA / "record.py")
assert _spec is not None and _spec.loader is not None
record = importlib.util.module_from_spec(_spec)
sys.modules["context_record"] = record
_spec.loader.exec_module(record)

EXPECTED = {path.stem: json.loads(path.read_text("utf-8")) for path in sorted((DATA / "expected").glob("*.json"))}
OPTION_KWARGS = {
    "collapsed": {"transcript": True, "collapse_compacted_history": True},
    "keep_dangling": {"transcript": True, "keep_dangling_tool_calls": True},
    "collapsed_keep_dangling": {"transcript": True, "collapse_compacted_history": True,
                                "keep_dangling_tool_calls": True},
    "llm_collapse_flag": {"collapse_compacted_history": True, "keep_dangling_tool_calls": True},
}


def load(name: str) -> list[Any]:
    """Entries of an input as omp holds them after open (strict parse, then migration)."""
    records = record.strict_records((DATA / "inputs" / f"{name}.jsonl").read_bytes())
    assert records, name
    header, entries = records[0], records[1:]
    if needs_migration(header):
        migrate(header, entries)
    return entries


def jsonable(value: Any) -> Any:
    """Our output as omp's JSON would show it (NaN/Infinity -> null), via a real JSON round trip."""
    def convert(x: Any) -> Any:
        if isinstance(x, float) and (x != x or math.isinf(x)):
            return None
        if isinstance(x, dict):
            assert all(v is not UNDEFINED for v in x.values())
            return {k: convert(v) for k, v in x.items()}
        if isinstance(x, list):
            return [convert(v) for v in x]
        return x
    return json.loads(json.dumps(convert(value), allow_nan=False))


def differences(ours: Any, theirs: Any, path: str = "$") -> list[str]:
    """Type-aware comparison: numbers as doubles, bools are not numbers, dict key order counts."""
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return [] if ours is theirs else [f"{path}: {ours!r} != {theirs!r}"]
    if isinstance(ours, int | float) and isinstance(theirs, int | float):
        return [] if float(ours) == float(theirs) else [f"{path}: {ours!r} != {theirs!r}"]
    if isinstance(ours, dict) and isinstance(theirs, dict):
        if list(ours) != list(theirs):
            return [f"{path}: keys {list(ours)} != {list(theirs)}"]
        return [d for k in ours for d in differences(ours[k], theirs[k], f"{path}.{k}")]
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items != {len(theirs)}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if type(ours) is type(theirs) and ours == theirs else [f"{path}: {ours!r:.80} != {theirs!r:.80}"]


def _blob(sha: str) -> bytes | None:
    path = DATA / "blobs" / sha
    return path.read_bytes() if path.is_file() else None


RESOLVE = blob_frame_resolver(_blob)  # the oracle ran with this folder as omp's blob store


def check_view(entries: list[Any], expected: Any, error: str | None, **kwargs: Any) -> None:
    leaf = leaf_after_load(entries)
    if error is not None:
        with pytest.raises(ContextError):
            build_session_context(entries, leaf, build_id_index(entries), resolve_frame_data=RESOLVE, **kwargs)
        return
    ours = jsonable(build_session_context(entries, leaf, build_id_index(entries), resolve_frame_data=RESOLVE,
                                          **kwargs))
    assert differences(ours, expected) == []


OPENABLE = [name for name, exp in EXPECTED.items() if exp["error"] is None]


def test_golden_set_is_varied() -> None:
    names = list(EXPECTED)
    assert len(names) >= 120
    assert sum(1 for n in names if EXPECTED[n]["hand_written"]) >= 60
    for kind in ("v3_compaction", "v3_branched", "v3_misc", "v3_custom", "v3_mixed", "_v1", "_v2", "dmg_"):
        assert any(kind in n for n in names), kind
    assert any(exp["view_errors"] for exp in EXPECTED.values())
    assert any(exp["error"] for exp in EXPECTED.values())


@pytest.mark.parametrize("name", OPENABLE)
def test_context(name: str) -> None:
    exp = EXPECTED[name]
    check_view(load(name), exp["context"], exp["view_errors"].get("context"))


@pytest.mark.parametrize("name", OPENABLE)
def test_transcript(name: str) -> None:
    exp = EXPECTED[name]
    check_view(load(name), exp["transcript"], exp["view_errors"].get("transcript"), transcript=True)


@pytest.mark.parametrize("name", OPENABLE)
@pytest.mark.parametrize("option_set", list(OPTION_KWARGS))
def test_context_options(name: str, option_set: str) -> None:
    run = EXPECTED[name]["runs"][option_set]
    check_view(load(name), run["result"], run["error"], **OPTION_KWARGS[option_set])


@pytest.mark.parametrize("name", list(EXPECTED))
def test_usage(name: str) -> None:
    exp = EXPECTED[name]
    entries = load(name)
    if exp["error"] is not None:
        # omp could not open the file: its usage indexing threw (a TypeError at open).
        assert exp["error"].startswith("TypeError")
        with pytest.raises(ContextError):
            usage_statistics(entries)
        return
    assert differences(jsonable(usage_statistics(entries)), exp["usage"]) == []


# ---------------------------------------------------------------------------
# API behaviour beyond the golden files


def _user(ident: Any, parent: Any, text: str) -> dict[str, Any]:
    return entry(ident, parent, message=user(text))


def test_leaf_after_load_distinguishes_null_and_undefined() -> None:
    entries = [_user("a", None, "one")]
    assert leaf_after_load(entries) == "a"
    assert leaf_after_load([*entries, {"type": "custom"}]) is UNDEFINED
    assert leaf_after_load([*entries, 42]) is UNDEFINED
    assert leaf_after_load([*entries, {"type": "custom", "id": None}]) is None
    assert leaf_after_load([]) is None


def test_null_leaf_is_empty_and_undefined_leaf_falls_back() -> None:
    entries = [_user("a", None, "one"), _user("b", "a", "two")]
    by_id = build_id_index(entries)
    assert build_session_context(entries, None, by_id)["messages"] == []
    texts = [m["content"] for m in build_session_context(entries, UNDEFINED, by_id)["messages"]]
    assert texts == ["one", "two"]
    assert [m["content"] for m in build_session_context(entries, "a", by_id)["messages"]] == ["one"]
    assert [m["content"] for m in build_session_context(entries, "zzz", by_id)["messages"]] == ["one", "two"]
    assert build_session_context([], UNDEFINED, {}) == {
        "messages": [], "thinkingLevel": "off", "models": {}, "injectedTtsrRules": [], "mode": "none"}


def test_messages_are_shared_not_copied_and_entries_untouched() -> None:
    assistant = {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "thinkingSignature": "s"},
                                                  {"type": "toolCall", "id": "x", "name": "n", "arguments": {}}],
                 "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": 2}
    entries = [_user("a", None, "one"),
               {"type": "message", "id": "b", "parentId": "a", "timestamp": "2026-01-01T00:00:01.000Z",
                "message": assistant}]
    snapshot = json.dumps(entries)
    ctx = build_session_context(entries, "b", build_id_index(entries), transcript=True)
    assert ctx["messages"][0] is entries[0]["message"]
    rewritten = ctx["messages"][1]
    assert rewritten is not assistant and rewritten["strippedToolCalls"] == 1
    assert rewritten["content"] == [{"type": "thinking", "thinking": "t"}]
    assert json.dumps(entries) == snapshot


def test_default_frame_resolver_is_an_empty_blob_store() -> None:
    entries = load("snapcompact_blob_frames")
    with_store = build_session_context(entries, leaf_after_load(entries), None, resolve_frame_data=RESOLVE)
    without = build_session_context(entries, leaf_after_load(entries), None)
    assert [b["type"] for b in with_store["messages"][0]["blocks"]] == ["text", "image", "text"]
    assert [b["type"] for b in without["messages"][0]["blocks"]] == ["text", "text"]
    assert "3 archived image frames unavailable" in without["messages"][0]["blocks"][1]["text"]


def test_by_id_none_builds_the_index() -> None:
    entries = [_user("a", None, "one"), _user("b", "a", "two")]
    assert build_session_context(entries, "b", None) == build_session_context(entries, "b", build_id_index(entries))


def test_js_map_keys_are_type_sensitive() -> None:
    entries = [_user(1, None, "numeric id"), _user("c", True, "parent true"), _user("d", 1.0, "parent 1.0")]
    by_id = build_id_index(entries)  # Python merges the keys True and 1; JavaScript does not
    assert [m["content"] for m in build_session_context(entries, "c", by_id)["messages"]] == ["parent true"]
    assert [m["content"] for m in build_session_context(entries, "d", by_id)["messages"]] == [
        "numeric id", "parent 1.0"]


def test_branch_path() -> None:
    entries = [_user("a", None, "one"), _user("b", "a", "two"), _user("c", "b", "three"), _user("a2", "zz", "x")]
    by_id = build_id_index(entries)
    assert [e["id"] for e in branch_path("c", by_id)] == ["a", "b", "c"]
    assert branch_path("nope", by_id) == []
    assert branch_path(None, by_id) == []
    cyclic = [_user("x", "y", "x"), _user("y", "x", "y")]
    assert [e["id"] for e in branch_path("y", build_id_index(cyclic))] == ["x", "y"]


def test_context_error_names_entry_and_is_a_session_error() -> None:
    entries = [_user("a", None, "one"),
               {"type": "ttsr_injection", "id": "t1", "parentId": "a", "timestamp": "2026-01-01T00:00:00.000Z"}]
    with pytest.raises(ContextError, match="t1") as info:
        build_session_context(entries, "t1", build_id_index(entries))
    assert isinstance(info.value, SessionError)


def test_usage_raises_on_message_without_message() -> None:
    with pytest.raises(ContextError, match="m1"):
        usage_statistics([{"type": "message", "id": "m1", "parentId": None}])
    with pytest.raises(ContextError):
        usage_statistics([None])


def test_long_linear_session_is_fast() -> None:
    import time

    entries: list[Any] = []
    parent = None
    for i in range(60_000):
        ident = f"{i:08x}"
        if i % 3 == 2:
            message = {"role": "assistant", "content": [{"type": "toolCall", "id": f"c{i}", "name": "n",
                                                         "arguments": {}}],
                       "provider": "p", "model": "m", "stopReason": "aborted" if i % 9 == 2 else "toolUse",
                       "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                 "cost": {"total": 0.5}}, "timestamp": i}
        elif i % 3 == 0:
            message = {"role": "user", "content": "u", "timestamp": i}
        else:
            message = {"role": "toolResult", "toolCallId": f"c{i - 2}", "toolName": "n", "content": [],
                       "isError": False, "timestamp": i}
        entries.append({"type": "message", "id": ident, "parentId": parent, "timestamp": "2026-01-01T00:00:00Z",
                        "message": message})
        parent = ident
    by_id = build_id_index(entries)
    start = time.perf_counter()
    ctx = build_session_context(entries, parent, by_id)
    build_session_context(entries, parent, by_id, transcript=True)
    usage = usage_statistics(entries)
    assert time.perf_counter() - start < 10
    assert usage["cost"] == 10_000
    assert len(ctx["messages"]) > 20_000


# ---------------------------------------------------------------------------
# Live differential check against the oracle (the golden files are a fixed sample)


def _oracle_dir() -> Path:
    return Path(os.environ.get("OMP_ORACLE_DIR", Path(__file__).resolve().parents[2] / "tests" / "reference"))


@pytest.mark.oracle
def test_live_sweep_against_oracle() -> None:
    oracle_dir = _oracle_dir()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gen"
        subprocess.run([sys.executable, str(oracle_dir / "gen_sessions.py"), "--seed", "7", "--count", "40",
                        "--kinds", "v3_linear,v3_branched,v3_compaction,v3_labels,v3_custom,v3_misc,v3_mixed",
                        "--out", str(out)], check=True, capture_output=True)
        files = sorted(out.glob("*.jsonl"))
        blobs = ["--blobs", str(out / "blobs")] if (out / "blobs").is_dir() else []
        proc = subprocess.run([str(oracle_dir / "omp-reference"), "load", "--jobs", "2", "--timeout", "10", *blobs,
                               *map(str, files)], check=True, capture_output=True, text=True)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 40
    failures = []
    for rec in records:
        if rec["error"] is not None:
            continue
        entries = rec["entries"]
        leaf = leaf_after_load(entries)
        for view, kwargs in (("context", {}), ("transcript", {"transcript": True})):
            if rec["view_errors"].get(view):
                continue
            got = jsonable(build_session_context(entries, leaf, build_id_index(entries), **kwargs))
            failures += [f"{Path(rec['file']).name} {view} {d}" for d in differences(got, rec[view])]
        failures += [f"{Path(rec['file']).name} usage {d}"
                     for d in differences(jsonable(usage_statistics(entries)), rec["usage"])]
    assert failures == []
