"""Review of the streaming md/json export (issue 16): cases where it differed from the export built
from every decoded entry."""

from __future__ import annotations

import json
from pathlib import Path
from random import Random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import assistant, entry, header, tool_result, usage, user, write_session
from omp_session.model.session import Session, open_session, usage_or_model_candidates
from omp_session.model.text import usage_line
from omp_session.model.usage import usage_statistics
from omp_session.ops.export.formats import export, export_chunks


def _rows(md: str) -> dict[str, str]:
    """The header's ``- **Name:** value`` rows."""
    rows = {}
    for line in md.splitlines():
        if line.startswith("- **") and ":** " in line:
            name, value = line[4:].split(":** ", 1)
            rows[name] = value
    return rows


def _all_usage(s: Session) -> str:
    return usage_line(usage_statistics(list(s.entries)))


def _two_turns(tmp_path: Path) -> Path:
    return write_session(tmp_path / "s.jsonl", [
        entry("u1", None, message=user("go")),
        entry("a1", "u1", message=assistant("ok", usage=usage(1, 1, 0.5))),
        entry("l1", "a1", type="label", targetId="u1", label="start"),
    ])


def _task_result(ident: str, parent: str, cost: float) -> dict[str, Any]:
    return entry(ident, parent, message=tool_result("done", name="task", details={"usage": usage(5, 7, cost)}))


def test_an_appended_task_result_counts_in_the_usage(tmp_path: Path) -> None:
    # an appended entry has no bytes in the file: the skip must not judge it by them
    with open_session(_two_turns(tmp_path)) as s:
        s.append_entry(_task_result("t1", "l1", 0.25))
        assert usage_or_model_candidates(s)[3] == 1
        rows = _rows(export(s, "md"))
        assert "6 in" in rows["Tokens and cost (all branches)"]
        assert rows["Tokens and cost (this branch)"].replace("\\", "") == _all_usage(s)


def test_an_entry_changed_in_memory_counts_as_it_now_is(tmp_path: Path) -> None:
    with open_session(_two_turns(tmp_path)) as s:
        s.entry_at(0)["message"] = tool_result("done", name="task", details={"usage": usage(100, 100, 2.0)})
        label = s.entry_at(2)
        label.clear()
        label.update(entry("l1", "a1", type="model_change", provider="p", model="p/changed"))
        rows = _rows(export(s, "md"))
        assert "101 in" in rows["Tokens and cost (all branches)"]
        assert rows["Tokens and cost (all branches)"].replace("\\", "") == _all_usage(s)
        assert "p/changed" in rows["Models"]


# ----- the skip judged from the bytes, against the decoded entry ---------------------------------

# weighted towards what the skip judges from the bytes: user and tool result messages
_ROLES = ["user", "toolResult", "toolResult", "toolResult", "assistant", "developer", "custom", "bashExecution"]
_TYPES = ["message"] * 6 + ["model_change", "model_usage", "label", "custom_message", "branch_summary", "compaction"]


def _escaped(text: str, rnd: Random) -> str:
    """``text`` as a JSON string whose characters are \\u-escaped at random, in either hex case."""
    out = []
    for ch in text:
        if rnd.random() < 0.3:
            code = f"{ord(ch):04x}"
            out.append("\\u" + (code.upper() if rnd.random() < 0.5 else code))
        else:
            out.append(json.dumps(ch)[1:-1])
    return '"' + "".join(out) + '"'


def _raw(value: Any, rnd: Random) -> str:
    """``value`` as JSON text, strings escaped at random and, before some keys, a decoy pair with
    the same key (JSON.parse keeps the last one, so the decoy must not fool the envelope scan)."""
    if isinstance(value, dict):
        pairs = []
        for key, item in value.items():
            if key in ("type", "role", "message", "toolName") and rnd.random() < 0.3:
                decoy = rnd.choice(["user", "label", "bash", {"role": "user", "content": "x"}])
                pairs.append(f"{_escaped(key, rnd)}:{_raw(decoy, rnd)}")
            pairs.append(f"{_escaped(key, rnd)}:{_raw(item, rnd)}")
        return "{" + ",".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_raw(v, rnd) for v in value) + "]"
    if isinstance(value, str):
        return _escaped(value, rnd)
    return json.dumps(value)


@st.composite
def _entries(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(_TYPES))
    fields: dict[str, Any] = {}
    if kind == "message":
        role = draw(st.sampled_from(_ROLES))
        message: dict[str, Any] = {"role": role, "content": "text"}
        if role == "toolResult":
            message["toolName"] = draw(st.sampled_from(["task", "task", "task", "bash", "Task", "tasks"]))
            message["details"] = {"usage": usage(2, 3, 0.5)}
        if role == "assistant" or draw(st.booleans()):
            message.update(provider="p", model=draw(st.sampled_from(["m1", "m2"])), usage=usage(1, 1, 0.25))
        fields["message"] = message
    elif kind in ("model_change", "model_usage"):
        fields.update(model="p/m3", usage=usage(4, 4, 1.0))
    else:
        fields.update(usage=usage(8, 8, 4.0), summary="s")  # usage where nothing reads it
    return entry("x", None, type=kind, **fields)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_entries(), min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_a_skipped_entry_holds_no_usage_and_names_no_model(tmp_path: Path, entries: list[dict[str, Any]],
                                                            rnd: Random) -> None:
    lines = [json.dumps(header())]
    for n, e in enumerate(entries):
        e.update(id=f"e{n}", parentId=f"e{n - 1}" if n else None)
        lines.append(_raw(e, rnd))
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open_session(path) as s:
        counted = usage_or_model_candidates(s)
        for k in range(len(s)):
            if counted[k]:
                continue
            e = s.peek_entry(k)
            assert usage_statistics([e]) == usage_statistics([]), (k, lines[k + 1])
            message = e.get("message")
            assert e.get("type") not in ("model_change", "model_usage"), lines[k + 1]
            assert not (isinstance(message, dict) and message.get("role") == "assistant"), lines[k + 1]


def test_a_long_side_branch_is_written_in_pieces_too(tmp_path: Path) -> None:
    # the leaf moved back to the start: nearly all the session is "Branch 2" of --all-branches,
    # which must not be rendered whole before its first byte is written
    entries = [entry("r", None, message=user("root"))]
    for n in range(300):
        entries.append(entry(f"u{n}", entries[-1]["id"], message=user(f"turn {n} " + "x" * 2000)))
    entries.append(entry("leaf", "r", message=user("back to the start")))
    with open_session(write_session(tmp_path / "s.jsonl", entries)) as s:
        pieces = list(export_chunks(s, "md", all_branches=True))
        whole = export(s, "md", all_branches=True)
    assert b"".join(pieces).decode() == whole
    assert "### Branch 2" in whole
    assert max(map(len, pieces)) < len(whole) // 4
