"""repair in bounded memory (issue 16 item 2): the plan keeps where records are, not what they hold;
the repaired bytes are written piece by piece and checked against what was planned.

A plan made from the file (records read back one at a time, the repaired bytes in a temporary
file or, when nothing changes, the file itself) must be the plan made from the same bytes in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_repair import _valid_files, damage

import builders
from builders import assistant, entry, tool_result, user
from omp_session.format.blobs import BlobStore
from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair.plan import (
    NotASessionError,
    RepairConflictError,
    RepairPlan,
    apply_repair,
    plan_repair,
    plan_repair_bytes,
)
from omp_session.paths import blobs_dir

DATA = Path(__file__).resolve().parents[2] / "data" / "repair"
SAMPLE = Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" / "sample.jsonl"


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))
    # a rebuilt header gets a new id and, lacking any, the current time: the same in both plans
    monkeypatch.setattr(plan_module, "new_session_id", lambda: "019a0000-0000-7000-8000-000000000000")
    monkeypatch.setattr(plan_module, "iso_timestamp", lambda: "2026-01-01T00:00:00.000Z")


def _blobs() -> BlobStore:
    return BlobStore(blobs_dir())  # what plan_repair reads a file with


def _same_plan(from_file: RepairPlan, in_memory: RepairPlan) -> None:
    output = from_file.output
    assert output == in_memory.output
    assert from_file.to_json() == in_memory.to_json()
    assert (from_file.output_size, from_file.output_sha256) == (len(output), hashlib.sha256(output).hexdigest())


def _files() -> list[Path]:
    return [SAMPLE, *sorted(p for p in DATA.iterdir() if p.suffix == ".jsonl")]


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_a_plan_from_the_file_is_the_plan_from_its_bytes(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name  # the same name: a lost header's id comes from it
    copy.write_bytes(path.read_bytes())
    try:
        in_memory = plan_repair_bytes(copy.read_bytes(), str(copy), mtime_ns=copy.stat().st_mtime_ns,
                                      blob_store=_blobs())
    except NotASessionError:
        with pytest.raises(NotASessionError):
            plan_repair(copy)
        return
    from_file = plan_repair(copy)
    _same_plan(from_file, in_memory)
    out = tmp_path / "out" / "fixed.jsonl"
    out.parent.mkdir()
    apply_repair(from_file, out=out)
    assert out.read_bytes() == in_memory.output


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, 29), seed=st.integers(0, 2**32 - 1), ops=st.integers(0, 4))
def test_damaged_files_plan_the_same_from_the_file(index: int, seed: int, ops: int, tmp_path: Path) -> None:
    files = _valid_files()
    data = damage(files[index % len(files)], random.Random(seed), ops)
    path = tmp_path / f"s{seed}.jsonl"
    path.write_bytes(data)
    try:
        in_memory = plan_repair_bytes(data, str(path), mtime_ns=path.stat().st_mtime_ns, blob_store=_blobs())
    except NotASessionError:
        return
    _same_plan(plan_repair(path), in_memory)


def test_in_place_writes_the_plan_and_keeps_the_original(tmp_path: Path) -> None:
    data = (DATA / "malformed_middle.jsonl").read_bytes()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    plan = plan_repair(path)
    expected = plan.output
    assert expected != data
    result = apply_repair(plan, in_place=True)
    assert path.read_bytes() == expected
    assert result.backup is not None and Path(result.backup).read_bytes() == data


@pytest.mark.parametrize("damaged", [False, True])
def test_a_file_changed_after_planning_is_not_written(tmp_path: Path, damaged: bool) -> None:
    data = (DATA / ("malformed_middle.jsonl" if damaged else "valid.jsonl")).read_bytes()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    plan = plan_repair(path)
    changed = data.replace(b'"user"', b'"USER"', 1)
    assert len(changed) == len(data) and changed != data
    path.write_bytes(changed)
    os.utime(path, ns=(plan.mtime_ns, plan.mtime_ns))  # the same size and time: only the bytes say it
    out = tmp_path / "out.jsonl"
    if damaged:  # the repaired bytes were kept when planned: they are what is written
        apply_repair(plan, out=out)
        assert out.read_bytes() == plan_repair_bytes(data, str(path)).output
    else:  # the file was its own repair and is read again: the change is caught
        with pytest.raises(RepairConflictError):
            apply_repair(plan, out=out)
        assert not out.exists() and not list(tmp_path.glob(".out.jsonl.*"))
    with pytest.raises(RepairConflictError):
        apply_repair(plan, in_place=True)
    assert path.read_bytes() == changed and not list(tmp_path.glob("s.jsonl.bak*"))


def test_the_temporary_copy_goes_with_the_plan(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes((DATA / "duplicate_ids.jsonl").read_bytes())
    made: list[str] = []
    real = plan_module.tempfile.mkstemp

    def spy(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, name = real(*args, **kwargs)  # type: ignore[call-overload]
        made.append(name)
        return fd, name

    plan_module.tempfile.mkstemp = spy  # type: ignore[assignment]
    try:
        plan = plan_repair(path)
    finally:
        plan_module.tempfile.mkstemp = real
    assert len(made) == 1 and os.path.exists(made[0])
    assert Path(made[0]).read_bytes() == plan.output
    del plan
    assert not os.path.exists(made[0])


def _big(tmp_path: Path, turns: int = 1000, size: int = 6000, *, damaged: bool = False) -> Path:
    entries, parent = [], None
    for n in range(turns):
        entries.append(entry(f"u{n}", parent, message=user(f"question {n} " + "x" * size)))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n} " + "é" * size)))
        entries.append(entry(f"t{n}", f"a{n}", message=tool_result("out " + "y" * size)))
        parent = f"t{n}"
    path = builders.write_session(tmp_path / "big.jsonl", entries)
    if damaged:  # a torn line, a duplicated record and CR LF endings: a plan with changes
        lines = path.read_bytes().split(b"\n")
        lines[500] = lines[500][: len(lines[500]) // 2]
        lines.insert(900, lines[899])
        path.write_bytes(b"\r\n".join(lines))
    return path


@pytest.mark.parametrize("damaged", [False, True])
def test_plan_and_apply_peak_memory_is_far_below_the_session(tmp_path: Path, damaged: bool) -> None:
    path = _big(tmp_path, damaged=damaged)
    size = path.stat().st_size
    assert size > 15_000_000
    out = tmp_path / "out.jsonl"
    tracemalloc.start()
    try:
        plan = plan_repair(path)
        apply_repair(plan, out=out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size // 4, (peak, size)
    assert bool(plan.changes) == damaged
    if damaged:
        assert out.read_bytes() == plan_repair_bytes(path.read_bytes(), str(path)).output
        assert json.loads(out.read_bytes().split(b"\n")[0])["type"] == "session"
    else:
        assert out.read_bytes() == path.read_bytes()
