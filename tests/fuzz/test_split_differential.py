"""The commands that share a big file's work with a forked child (validate, stats, repair, size,
redact -o) give the one-process result on damaged files too: fuzz cases (mutated omp files) with
the split forced on small files, in blocks and pieces of a few hundred bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fuzz import campaign
from tests.fuzz.mutate import make_case

from forking import one_process, split_watched
from omp_session.format import split
from omp_session.format.reader import Journal
from omp_session.ops.redact import rewrite as redact_rewrite
from omp_session.ops.redact.rewrite import RedactRules, redact_to
from omp_session.ops.repair import blocks as repair_blocks
from omp_session.ops.repair import plan as repair_plan
from omp_session.ops.repair import records as repair_records
from omp_session.ops.size import doctor
from omp_session.ops.stats import report as stats_report
from omp_session.ops.validate import entries as validate_entries
from omp_session.ops.validate.check import validate

CASES = 200


@pytest.fixture(scope="module")
def seeds() -> list[Any]:
    return campaign.seeds_from(campaign.golden_paths(), max_size=150_000)


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:
        return ("raised", type(e).__name__)


def _runs(path: Path, out: Path) -> dict[str, Callable[[], Any]]:
    def redacted() -> Any:
        report = redact_to(path, RedactRules(), out, force=True)
        return out.read_bytes(), [f.to_json() for f in report.findings]

    def repaired() -> Any:
        p = repair_plan.plan_repair(path)
        return p.to_json(), p.output

    return {
        "validate": lambda: [(d.code, d.line, d.offset, d.entry_id, d.message) for d in validate(path)],
        "stats": lambda: json.dumps(stats_report.read_file_usage(path).to_json(), default=str),
        "repair": repaired,
        "size": lambda: doctor.analyze_size(path, archive=False).to_json(),
        "redact": redacted,
    }


def _made_up_ids(path: Path) -> bool:
    # v1/v2 files (and files whose header a mutation broke) get new ids on every open
    try:
        import omp_session

        with omp_session.open(path) as s:
            return bool(s.migrated or s.ids_made_up)
    except Exception:
        return True


@pytest.mark.parametrize("chunk", range(4))
def test_fuzz_cases_give_the_one_process_result(seeds: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 chunk: int) -> None:
    monkeypatch.setattr(validate_entries, "_BLOCK", 300)
    monkeypatch.setattr(repair_blocks, "_BLOCK", 700)
    monkeypatch.setattr(repair_plan, "new_session_id", lambda: "019a0000-0000-7000-8000-000000000000")
    monkeypatch.setattr(repair_plan, "iso_timestamp", lambda: "2026-01-01T00:00:00.000Z")
    real_pieces = Journal.entry_pieces
    monkeypatch.setattr(Journal, "entry_pieces", lambda self, entries, limit=0: real_pieces(self, entries, 400))
    watched = {"validate": validate_entries, "stats": split, "repair": repair_records, "size": doctor,
               "redact": redact_rewrite}
    compared = 0
    split_by: dict[str, int] = {}
    for number in range(chunk * CASES // 4, (chunk + 1) * CASES // 4):
        case = make_case(seeds, 1603, number)
        path = tmp_path / f"case{number}.jsonl"
        path.write_bytes(case.data)
        made_up = _made_up_ids(path)
        for name, run in _runs(path, tmp_path / "out.jsonl").items():
            if made_up and name in ("redact", "repair", "validate"):  # messages and ids hold made-up ids
                continue
            with one_process():
                alone = _outcome(run)
            if name == "redact":
                def counted(pieces: Any, render: Any, size: int, real: Any = split.interleaved) -> Any:
                    split_by["redact"] = split_by.get("redact", 0) + (len(pieces) >= 2)
                    return real(pieces, render, size)

                with pytest.MonkeyPatch.context() as m:
                    m.setattr(split, "_worth_splitting", lambda size, start: True)
                    m.setattr(redact_rewrite, "interleaved", counted)
                    two = _outcome(run)
            else:
                with split_watched(watched[name]) as asked:
                    two = _outcome(run)
                split_by[name] = split_by.get(name, 0) + bool(asked)
            assert two == alone, (number, name, case.mutations)
            compared += 1
    assert compared >= CASES // 4 * 2
    assert all(split_by.get(name, 0) >= 2 for name in watched), split_by  # each command was split
