"""``omp-session import`` on what real (and hostile) Claude Code and Codex files hold: regressions
found by feeding the importer odd input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.cli._group import cli
from omp_session.js import codec

CLAUDE_ID = "33333333-0000-4000-8000-000000000001"
CODEX_ID = "0199a1b2-0000-7000-8000-000000000001"


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["import", *args], catch_exceptions=False)


def _imported() -> list[dict[str, Any]]:
    [made] = sorted((Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions").rglob("*.jsonl"))
    return [codec.loads(line) for line in made.read_bytes().splitlines()[2:]]


def _claude(home: Path, *lines: str) -> Path:
    cwd = home / "proj"
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True)
    first = json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "cwd": str(cwd),
                        "timestamp": "2026-01-02T03:04:05.000Z", "message": {"role": "user", "content": "hi"}})
    path = folder / f"{CLAUDE_ID}.jsonl"
    path.write_text("\n".join([first, *lines]) + "\n")
    return path


def _codex(home: Path, *records: str) -> Path:
    folder = home / ".codex" / "sessions" / "2026" / "01" / "02"
    folder.mkdir(parents=True)
    meta = json.dumps({"timestamp": "2026-01-02T03:04:05.000Z", "type": "session_meta",
                       "payload": {"id": CODEX_ID, "cwd": str(home / "proj"), "timestamp": "2026-01-02T03:04:05.000Z"}})
    path = folder / f"rollout-2026-01-02T03-04-05-{CODEX_ID}.jsonl"
    path.write_text("\n".join([meta, *records]) + "\n")
    return path


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth + isinstance(value, list)


@pytest.mark.parametrize("depth", [3_000, 100_000])
def test_claude_tool_call_arguments_nested_deeper_than_pythons_stack_are_imported(home: Path, depth: int) -> None:
    # the arguments of a tool call are the model's, and kept as they are: a RecursionError in the
    # check for plain entries used to end the whole run with a traceback
    _claude(home, '{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-02T03:04:06.000Z",'
                  '"message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"X","input":{"a":'
                  + "[" * depth + "]" * depth + "}}]}}")
    result = _run("claude")
    assert result.exit_code == 0, result.output
    assert "1 imported" in result.output
    [call] = [e for e in _imported() if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    assert _depth(call["message"]["content"][0]["arguments"]["a"]) == depth


def test_claude_tool_result_content_nested_deep_is_imported(home: Path) -> None:
    # a tool result whose content nests tool results: only its own text and image blocks count,
    # whatever the blocks inside hold (a RecursionError used to fail the session)
    nested = '"x"'
    for _ in range(1_500):
        nested = '[{"type":"tool_result","tool_use_id":"t","content":' + nested + "}]"
    _claude(home, '{"type":"user","uuid":"u2","parentUuid":"u1","timestamp":"2026-01-02T03:04:06.000Z",'
                  '"message":{"role":"user","content":' + nested + "}}")
    result = _run("claude")
    assert result.exit_code == 0, result.output
    results = [e["message"] for e in _imported() if e.get("type") == "message"
               and e["message"]["role"] == "toolResult"]
    assert results == [{"role": "toolResult", "toolCallId": "t", "toolName": "unknown", "content": [],
                        "isError": False, "timestamp": 1767323046000}]


def test_codex_function_call_arguments_nested_deep_are_imported(home: Path) -> None:
    args = json.dumps('{"a":' + "[" * 3_000 + "]" * 3_000 + "}")
    _codex(home, '{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":'
                 '"function_call","name":"shell","call_id":"c1","arguments":' + args + "}}")
    result = _run("codex", "--all")
    assert result.exit_code == 0, result.output
    [call] = [e for e in _imported() if e.get("type") == "message"]
    assert _depth(call["message"]["content"][0]["arguments"]["a"]) == 3_000


def test_materialize_decodes_raw_texts_beside_a_value_nested_deeper_than_pythons_stack() -> None:
    from omp_session.foreign.lines import RawText, materialize

    deep: Any = []
    for _ in range(5_000):
        deep = [deep]
    entry = {"message": {"content": [{"type": "text", "text": RawText(b'"a\\nb"')},
                                      {"type": "toolCall", "arguments": {"a": deep}}]}}
    out = materialize(entry)
    assert out["message"]["content"][0] == {"type": "text", "text": "a\nb"}
    assert _depth(out["message"]["content"][1]["arguments"]["a"]) == 5_001
    assert entry["message"]["content"][0]["text"] == RawText(b'"a\\nb"')  # the entry itself is left as it was


def test_codex_time_out_of_range_names_the_line(home: Path) -> None:
    # docs/import.md: the failure names the file and the line, as for a Claude Code session
    path = _codex(home,
                  '{"timestamp":"2026-01-02T03:04:06.000Z","type":"response_item","payload":{"type":"message",'
                  '"role":"user","content":[{"type":"input_text","text":"hi"}]}}',
                  '{"timestamp":1e300,"type":"response_item","payload":{"type":"message","role":"assistant",'
                  '"content":[{"type":"output_text","text":"hello"}]}}')
    result = _run("codex", "--all")
    assert result.exit_code == 1
    assert f"{path}:3: RangeError: Invalid time value" in result.output


def _claude_in(home: Path, project: str, sid: str) -> Path:
    cwd = home / project
    cwd.mkdir(exist_ok=True)
    folder = home / ".claude" / "projects" / str(cwd).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_text(json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "cwd": str(cwd),
                                "timestamp": "2026-01-02T03:04:05.000Z",
                                "message": {"role": "user", "content": f"hi {project}"}}) + "\n")
    return path


def test_project_narrows_the_sessions_a_source_names(home: Path) -> None:
    # `import codex 0199a1b2 --project ~/src/api` (the command's own example): --project was
    # ignored as soon as a SOURCE was given, so a prefix unique in the project was "ambiguous" and
    # another project's session was imported
    a = _claude_in(home, "a", "44444444-0000-4000-8000-00000000000a")
    _claude_in(home, "b", "44444444-0000-4000-8000-00000000000b")
    result = _run("claude", "44444444", "--project", str(home / "a"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [s["path"] for s in report["sessions"]] == [str(a)] and report["not_found"] == []

    other = _run("claude", "44444444-0000-4000-8000-00000000000b", "--project", str(home / "a"), "--dry-run")
    assert other.exit_code == 1
    assert "would import" not in other.output
    assert f"44444444-0000-4000-8000-00000000000b: no such session found in project {home / 'a'}" in other.output


@pytest.mark.parametrize("kind", ["[]", '["x"]', "{}", '{"a":1}', "[" * 3_000 + "]" * 3_000,
                                  '{"a":' * 3_000 + "1" + "}" * 3_000])
def test_codex_record_whose_type_is_not_a_string_is_skipped(home: Path, kind: str) -> None:
    # omp skips such a record and imports the rest (oracle, 3,000 levels deep too); counting its
    # kind raised TypeError (unhashable) and ended the whole run with a traceback, and its label,
    # made with str() before anything looked at it, a RecursionError that failed the session
    path = _codex(home,
                  '{"timestamp":"2026-01-02T03:04:06.000Z","type":' + kind + ',"payload":{"type":"x"}}',
                  '{"timestamp":"2026-01-02T03:04:07.000Z","type":"response_item","payload":{"type":"message",'
                  '"role":"user","content":[{"type":"input_text","text":"hi"}]}}')
    result = _run("codex", "--all", "-v")
    assert result.exit_code == 0, result.output
    assert "1 imported" in result.output
    assert f"{path}:2: a record without a type: skipped, as omp does" in result.output
    assert [e["message"]["content"] for e in _imported() if e.get("type") == "message"] == [
        [{"type": "text", "text": "hi"}]]


def test_run_from_a_removed_directory_is_one_line_not_a_traceback(home: Path) -> None:
    _claude(home)
    gone = home / "gone"
    gone.mkdir()
    os.chdir(gone)  # the fixture's monkeypatch.chdir takes us back afterwards
    gone.rmdir()
    result = CliRunner().invoke(cli, ["import", "claude", "--all"])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "omp-session: the current directory cannot be read" in result.output


_CODEX_USER = ('{%s"type":"response_item","payload":{"type":"message","role":"user",'
               '"content":[{"type":"input_text","text":"hi"}]}}')


@pytest.mark.parametrize("records", [
    # a title takes the session's last time, which the next record's timestamp made out of range
    ['{"timestamp":"2026-01-02T03:04:06.000Z","type":"event_msg","payload":{"type":"thread_name_updated",'
     '"thread_name":"t"}}', _CODEX_USER % '"timestamp":1e300,'],
    # a record without a timestamp takes that of the one before, which made nothing itself
    [_CODEX_USER % '"timestamp":"2026-01-02T03:04:06.000Z",',
     '{"timestamp":1e300,"type":"event_msg","payload":{"type":"token_count"}}', _CODEX_USER % ""],
])
def test_codex_time_out_of_range_names_the_line_it_is_on(home: Path, records: list[str]) -> None:
    # omp fails both ("Invalid Date", oracle); ours named the line of the item whose time failed,
    # a line whose own timestamp is fine or absent, not the line holding 1e300
    path = _codex(home, *records)
    result = _run("codex", "--all")
    assert result.exit_code == 1
    assert f"{path}:3: RangeError: Invalid time value" in result.output


def _raw_or_str(text: str) -> Any:
    from omp_session.foreign.lines import raw_text

    token = json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        token.decode("utf-8")
    except UnicodeDecodeError:  # a lone surrogate: never a RawText
        return text
    return raw_text(token)


_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**80, max_value=2**80), st.floats(),
                    st.sampled_from([-0.0, 1e400, 2**53 + 1, "\ud800", "__proto__"]), st.text(),
                    st.text().map(_raw_or_str))
_KEYS = st.one_of(st.text(max_size=4), st.sampled_from(["__proto__", "1", "0", "data", "text"]))


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is float:
        return repr(a) == repr(b)
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
                    max_leaves=30))
def test_materialize_with_its_own_stack_gives_what_the_recursive_one_gives(value: Any) -> None:
    # the path taken past Python's stack: the same types, key order, numbers and strings
    from omp_session.foreign.lines import _materialize, _materialize_deep

    assert _same(_materialize_deep(value), _materialize(value))
