"""``repair -o``'s copy is made by a child forked before the scan (a big file), so it may hold
other bytes than the scan saw: a session whose last line omp was still writing when the plan
began (torn), and finished before the scan, must never be placed torn as its own repair; it is
refused as changed since planned, as when the digest was read after the scan (found in review)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from builders import turns_session
from omp_session.errors import RepairConflictError
from omp_session.format import split
from omp_session.format.reader import scan_file as real_scan_file
from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair.plan import repair_to


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))


def test_a_line_completed_while_planned_is_never_placed_torn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)  # as for a big file
    src = tmp_path / "s.jsonl"
    whole = turns_session(tmp_path / "whole.jsonl", 150).read_bytes()
    (tmp_path / "whole.jsonl").unlink()
    torn, tail = whole[:-20], whole[-20:]  # omp still writing the last line
    src.write_bytes(torn)

    def completed_then_scanned(name: Any) -> Any:
        # the digest child has read the torn file (its copy holds every byte) ...
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if any(p.name.endswith(".tmp") and p.stat().st_size == len(torn) for p in tmp_path.iterdir()):
                break
            time.sleep(0.01)
        with open(name, "ab") as f:  # ... then omp finishes the line, before the scan opens the file
            f.write(tail)
        return real_scan_file(name)

    monkeypatch.setattr(plan_module, "scan_file", completed_then_scanned)
    out = tmp_path / "out.jsonl"
    try:
        plan, _ = repair_to(src, out)
    except RepairConflictError:
        assert not out.exists()  # refused (what happened before 72368b2): fine
        return
    # else the output must be a session omp opens, or the plan must say what it fixed
    data = out.read_bytes()
    assert data.endswith(b"\n"), f"placed a torn file as the repair ({len(data)} bytes, fixes={plan.fixes})"
