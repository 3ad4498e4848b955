"""repair on a large file reads and proves the later blocks in a forked child (records.prove_later):
the plan (fixes, quarantine, output bytes and digest) must be the one-process plan, on damaged
files too, with the damage on either side of the split."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from test_repair import _valid_files, damage

from forking import dying_children, one_process, split_watched
from omp_session.ops.repair import blocks as repair_blocks
from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair import records as repair_records
from omp_session.ops.repair.plan import NotASessionError, RepairPlan, plan_repair

DATA = Path(__file__).resolve().parents[2] / "data" / "repair"
_VALID = _valid_files()


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))
    monkeypatch.setattr(plan_module, "new_session_id", lambda: "019a0000-0000-7000-8000-000000000000")
    monkeypatch.setattr(plan_module, "iso_timestamp", lambda: "2026-01-01T00:00:00.000Z")
    monkeypatch.setattr(repair_blocks, "_BLOCK", 700)  # several blocks even in a small file


def _plans(path: Path) -> tuple[Any, Any, list[int]] | None:
    """(one process, split, one item per child asked for: this pid if its part was proven here)."""
    def run() -> Any:
        p: RepairPlan = plan_repair(path)
        return p.to_json(), p.output, p.output_size, p.output_sha256

    try:
        with one_process():
            alone = run()
    except NotASessionError:
        return None
    with split_watched(repair_records) as asked:
        two = run()
    return alone, two, asked


def test_fixtures_plan_the_same(tmp_path: Path) -> None:
    split_any = 0
    for source in sorted(DATA.glob("*.jsonl")):
        path = tmp_path / source.name
        path.write_bytes(source.read_bytes())
        got = _plans(path)
        if got is None:
            continue
        alone, two, asked = got
        assert two == alone, source.name
        assert os.getpid() not in asked
        split_any += bool(asked)
    assert split_any >= 5


@pytest.mark.parametrize("seed", range(40))
def test_damaged_files_plan_the_same(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    data = damage(_VALID[seed % len(_VALID)], rnd, rnd.randint(1, 6))
    path = tmp_path / "2026-01-01T00-00-00-000Z_s.jsonl"
    path.write_bytes(data)
    got = _plans(path)
    if got is None:
        return
    alone, two, asked = got
    assert two == alone
    assert os.getpid() not in asked


def test_a_child_that_dies_leaves_the_plan_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(damage(_VALID[0], random.Random(7), 3))
    with one_process():
        alone = plan_repair(path)
    with dying_children(repair_records):
        two = plan_repair(path)
    assert (two.to_json(), two.output) == (alone.to_json(), alone.output)


@pytest.mark.parametrize("where", [0.2, 0.9])
def test_a_crlf_line_on_either_side_is_found(tmp_path: Path, where: float) -> None:
    lines = _VALID[1].split(b"\n")
    k = max(2, int(len(lines) * where) - 1)
    lines[k] += b"\r"
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines))
    got = _plans(path)
    assert got is not None
    alone, two, asked = got
    assert asked and os.getpid() not in asked
    assert two == alone
    assert any(f["code"] == "crlf" for f in alone[0]["fixes"])


def test_the_proofs_are_the_one_process_proofs(tmp_path: Path) -> None:
    # a record proven to load skips the full check, which would say the same: only the proofs
    # themselves tell that the child's were taken in, at their records
    from omp_session.format.reader import scan_file

    path = tmp_path / "s.jsonl"
    path.write_bytes(_VALID[2])
    j = scan_file(path)
    try:
        alone = repair_records.read_records(j).safe
        with split_watched(repair_records):
            later = repair_records.prove_later(j)
        assert later is not None and later.mid < len(later.every)
        two = repair_records.read_records(j, later).safe
    finally:
        j.close()
    assert any(two[later.every[later.mid][0]:]) and two == alone
