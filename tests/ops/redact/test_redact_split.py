"""redact -o on a large file: a forked child redacts every other piece of entries
(rewrite._Job.piece through split.interleaved). The output and the report (every finding, in
order, the removed calls' results reported after every entry) must be the one-process ones."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_redact_streaming import RULE_SETS, planted_sessions

import builders
from builders import assistant, entry, tool_result, user
from omp_session.errors import RedactError
from omp_session.format import split
from omp_session.format.reader import Journal
from omp_session.ops.redact.rewrite import RedactRules, redact, redact_to

DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE = Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" / "sample.jsonl"
SID = "0199aaaa-0000-7000-8000-0000000000aa"


def _both(path: Path, rules: RedactRules, tmp: Path) -> tuple[Any, Any, list[int]]:
    """(one process, split in small pieces, the pids that rendered pieces: this one's if the
    child's pieces were rendered here after all)."""
    def run(name: str) -> Any:
        target = tmp / name
        try:
            report = redact_to(path, rules, target, force=True)
        except RedactError as e:
            return "refused", str(e), target.exists()
        return target.read_bytes(), [f.to_json() for f in report.findings]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(split, "_worth_splitting", lambda size, start: False)
        alone = run("alone.jsonl")
    pids: list[int] = []
    total: list[int] = []
    real_pieces = Journal.entry_pieces
    real_interleaved = split.interleaved

    def recording(pieces: list[tuple[int, int]], render: Callable[[int, int], bytes], size: int) -> Iterator[bytes]:
        total.append(len(pieces))

        def where(lo: int, hi: int) -> bytes:
            if os.getpid() != parent:
                return render(lo, hi)  # (the child's pids are not seen here)
            pids.append(parent)
            return render(lo, hi)
        return real_interleaved(pieces, where, size)

    parent = os.getpid()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(split, "_worth_splitting", lambda size, start: True)
        m.setattr(Journal, "entry_pieces", lambda self, entries, limit=0: real_pieces(self, entries, 300))
        import omp_session.ops.redact.rewrite as rewrite

        m.setattr(rewrite, "interleaved", recording)
        two = run("two.jsonl")
    if total and total[0] >= 2:
        assert len(pids) < total[0]  # a child rendered some pieces
    return alone, two, pids


@pytest.mark.parametrize("rules", sorted(RULE_SETS))
def test_planted_secrets_are_redacted_and_reported_the_same(tmp_path: Path, rules: str) -> None:
    for path in planted_sessions(tmp_path):
        alone, two, _ = _both(path, RULE_SETS[rules], tmp_path)
        assert two == alone, path.name
        memory = redact(path, RULE_SETS[rules])  # in memory: no pieces at all
        assert alone == (memory.to_bytes(), [f.to_json() for f in memory.findings]), path.name


@pytest.mark.parametrize("rules", ["builtin", "paths-and-drops", "user-rules"])
def test_a_corpus_is_redacted_the_same(tmp_path: Path, rules: str) -> None:
    files = [SAMPLE, *sorted((DATA / "repair").glob("*.jsonl")), *sorted((DATA / "context" / "inputs").glob("*.jsonl"))[:30]]
    for path in files:
        alone, two, _ = _both(path, RULE_SETS[rules], tmp_path)
        if alone[0] == "refused":
            assert two == alone, path.name
            continue
        # v1/v2 files get made-up ids, new ones each time: compare what does not hold them
        if b'"version":3' in path.read_bytes()[:2000] or b'"version": 3' in path.read_bytes()[:2000]:
            assert two == alone, path.name
        else:
            assert len(two[1]) == len(alone[1]), path.name


def test_removed_signed_calls_are_reported_after_every_entry_from_both_processes(tmp_path: Path) -> None:
    secret = "sk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"
    entries: list[dict[str, Any]] = []
    parent = None
    for k in range(24):  # a signed call with a secret, its results before and after it, in each piece
        call = {"type": "toolCall", "id": f"call_{k}", "name": "bash", "arguments": {"command": f"echo {secret}"},
                "thoughtSignature": "c2ln"}
        for eid, message in ((f"r{k}", tool_result(f"early {k}", call_id=f"call_{k}")),
                             (f"a{k}", assistant([call], stop_reason="toolUse")),
                             (f"t{k}", tool_result(f"late {k}", call_id=f"call_{k}")),
                             (f"u{k}", user(f"token = v{k} and more " + "x" * 200))):
            entries.append(entry(eid, parent, message=message))
            parent = eid
    path = builders.write_session(tmp_path / "s.jsonl", entries, head=builders.header(SID))
    alone, two, pids = _both(path, RedactRules(), tmp_path)
    assert two == alone
    assert pids  # pieces were rendered here too
    categories = [f["category"] for f in alone[1]]
    assert categories.count("tool-call-removed") >= 48 and categories[-1] == "tool-call-removed"
