"""Which tool results omp's usage sum reads: a ``task`` tool's (``toolName`` as ``JSON.parse``
gives it: escapes decoded, the last of duplicate keys), known from the scan's message head, so
no other tool result's bytes are read again (they are most of a big file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import entry, tool_result, usage, user, write_session
from omp_session.catalog.summaries import usage_candidates
from omp_session.format import reader
from omp_session.js import codec
from omp_session.model.session import open_session, usage_or_model_candidates
from omp_session.model.usage import usage_statistics

_DETAILS = {"usage": usage(7, 3)}


def _lines(tmp_path: Path) -> Path:
    es = [entry("u1", None, message=user("go")),
          entry("t1", "u1", message=tool_result("done", name="task", details=_DETAILS)),
          entry("t2", "t1", message=tool_result('the "task" tool said "task"', name="read", details=_DETAILS)),
          entry("t3", "t2", message=tool_result("escaped", name="TASK", details=_DETAILS)),
          entry("t4", "t3", message=tool_result("dup", name="X", details=_DETAILS)),
          entry("t5", "t4", message=tool_result("dup", name="X", details=_DETAILS))]
    path = write_session(tmp_path / "tasks.jsonl", es)
    data = path.read_bytes()
    # "t\u0061sk": JSON.parse reads "task"; duplicate keys: the last one is the one omp sees
    data = data.replace(b'"toolName":"TASK"', b'"toolName":"t\\u0061sk"', 1)
    data = data.replace(b'"id":"t4","parentId":"t3"', b'"id":"t4","parentId":"t3"', 1)
    lines = data.split(b"\n")
    lines[5] = lines[5].replace(b'"toolName":"X"', b'"toolName":"task","toolName":"read"', 1)
    lines[6] = lines[6].replace(b'"toolName":"X"', b'"toolName":"read","toolName":"task"', 1)
    path.write_bytes(b"\n".join(lines))
    return path


@pytest.mark.parametrize("streaming", [False, True])
def test_task_results_are_the_tool_results_named_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      streaming: bool) -> None:
    path = _lines(tmp_path)
    if streaming:
        monkeypatch.setenv("OMP_SESSION_WORKERS", "1")
        monkeypatch.setattr(reader, "_IN_MEMORY", 0)
    with open_session(path) as s:
        exact = [k for k in range(len(s)) if codec.loads(s.journal.raw(k + 1))["message"].get("toolName") == "task"]
        assert [s.ids[k] for k in exact] == ["t1", "t3", "t5"]
        picked = usage_or_model_candidates(s)
        results = [k for k in range(len(s)) if s.ids[k].startswith("t")]
        assert [k for k in results if picked[k]] == exact
        j = s.journal
        listed = usage_candidates(s.kinds, s.types, j.heads)
        assert [k for k in listed if k in results] == exact
        # the sums read through the candidates are those of reading every entry
        total = usage_statistics(s.entry_at(k) for k in listed)
        assert total == usage_statistics(s.entry_at(k) for k in range(len(s))) and total["input"] == 3 * 7
