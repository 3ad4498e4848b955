"""Golden tests: the oracle's 17 example files, against omp's recorded output."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "oracle_examples"
ORACLE = Path(os.environ.get("OMP_ORACLE_DIR", HERE.parents[1] / "tests" / "reference"))
sys.path.insert(0, str(HERE))

import adapter  # noqa: E402
import run_conformance  # noqa: E402

EXAMPLES = sorted(p.name for p in DATA.glob("*.jsonl"))
# Which documented difference each example shows (None: must match omp in full).
EXPECTED_SCENARIO = {
    "02_null_line.jsonl": "omp-open-throws",
    "04_message_without_message.jsonl": "omp-open-throws",
    "05_numeric_cwd.jsonl": "omp-open-throws",
    "06_dup_id_descendant.jsonl": "omp-tree-hangs",
    "07_bom_plus_malformed.jsonl": "omp-rewrite-fails",
    "08_invalid_utf8_plus_malformed.jsonl": "omp-rewrite-fails",
    "10_trailing_garbage.jsonl": "malformed-kept",
    "13_inf_and_bigint.jsonl": "malformed-kept",
    "17_truncated_mid_utf8.jsonl": "omp-rewrite-fails",
}


def ours(name: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PI_CODING_AGENT_DIR"] = str(Path(tmp) / "agent")
        rec = adapter.do_load(str(DATA / name), Path(tmp), None)
    rec["file"] = name
    return json.loads(json.dumps(rec))


def test_every_example_is_recorded() -> None:
    assert len(EXAMPLES) == 17
    for name in EXAMPLES:
        assert (DATA / name.replace(".jsonl", ".oracle.json")).exists()


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_matches_omp(name: str, tmp_path: Path) -> None:
    expected = json.loads((DATA / name.replace(".jsonl", ".oracle.json")).read_text())
    mine = ours(name)
    scenario = run_conformance.scenario_of(expected, mine)
    assert (scenario.name if scenario else None) == EXPECTED_SCENARIO.get(name)
    result = run_conformance.grade([expected], [mine], ORACLE, tmp_path)
    assert result.ok, "\n".join(result.report(verbose=True))


RUN_EXAMPLES = sorted(p.name for p in DATA.glob("run_*.json") if not p.name.endswith(".oracle.json"))
EXPECTED_RUN_SCENARIO = {
    "run_invalid_utf8_rewrite.json": "omp-loses-writes",
    "run_truncated_mid_utf8.json": "omp-loses-writes",
}


@pytest.mark.parametrize("name", RUN_EXAMPLES)
def test_run_example_matches_omp(name: str, tmp_path: Path) -> None:
    from script_runner import do_run

    expected = json.loads((DATA / name.replace(".json", ".oracle.json")).read_text())
    # a temp root as long as the oracle's, so that files holding a path have its byte size
    tmp = adapter.make_temp_dir(os.path.realpath(tempfile.gettempdir()), "omp-adapter")
    try:
        os.environ["PI_CODING_AGENT_DIR"] = str(tmp / "home" / ".omp" / "agent")
        mine = json.loads(json.dumps(do_run(str(DATA / name), tmp)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    mine["file"] = name
    scenario = run_conformance.run_scenario_of(expected, mine)
    assert (scenario.name if scenario else None) == EXPECTED_RUN_SCENARIO.get(name)
    result = run_conformance.grade([expected], [mine], ORACLE, tmp_path / "grade")
    assert result.ok, "\n".join(result.report(verbose=True))


def test_run_examples_are_recorded() -> None:
    assert len(RUN_EXAMPLES) == 3


def test_documented_scenarios_are_in_the_docs() -> None:
    text = (HERE.parents[1] / "docs" / "compatibility.md").read_text()
    for scenario in run_conformance.ALL_SCENARIOS:
        assert f"`{scenario.name}`" in text
