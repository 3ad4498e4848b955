"""Review of streaming ``repair`` (issue 16 item 2): the checks on apply, and the temporary files
(the plan's private copy, the in-place replacement) gone on every path, interruptions included.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair.plan import RepairConflictError, RepairError, apply_repair, plan_repair

DATA = Path(__file__).resolve().parents[2] / "data" / "repair"


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))


@pytest.fixture
def spools(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The private copies plans make (their names, as made)."""
    made: list[str] = []
    real = plan_module.tempfile.mkstemp

    def spy(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, name = real(*args, **kwargs)  # type: ignore[call-overload]
        made.append(name)
        return fd, name

    monkeypatch.setattr(plan_module.tempfile, "mkstemp", spy)
    yield made


def _damaged(tmp_path: Path, name: str = "malformed_middle.jsonl") -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes((DATA / name).read_bytes())
    return path


def _leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".") or p.suffix == ".tmp")


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_the_private_copy_goes_when_planning_fails_after_it_was_made(tmp_path: Path, spools: list[str],
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     error: type[BaseException]) -> None:
    path = _damaged(tmp_path)

    def failing(*args: object) -> None:
        raise error

    monkeypatch.setattr(plan_module, "_check_output", failing)
    with pytest.raises(error):
        plan_repair(path)
    gc.collect()  # (the traceback held the plan)
    assert len(spools) == 1 and not os.path.exists(spools[0])


def test_an_interrupted_in_place_apply_leaves_the_file_and_no_temporary(tmp_path: Path, spools: list[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = _damaged(tmp_path)
    data = path.read_bytes()
    plan = plan_repair(path)
    real = plan_module._file_chunks

    def interrupted(p: str) -> Iterator[bytes]:
        if p == spools[0]:  # the repaired bytes, as the replacement is written
            yield next(real(p))[:10]
            raise KeyboardInterrupt
        yield from real(p)

    monkeypatch.setattr(plan_module, "_file_chunks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        apply_repair(plan, in_place=True)
    assert path.read_bytes() == data
    assert _leftovers(tmp_path) == []
    assert (tmp_path / "s.jsonl.bak").read_bytes() == data  # written before: the original, whole
    del plan
    gc.collect()
    assert not os.path.exists(spools[0])


def test_an_interrupted_copy_leaves_nothing_at_the_output(tmp_path: Path, spools: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _damaged(tmp_path)
    plan = plan_repair(path)
    out = tmp_path / "out.jsonl"

    def interrupted(p: str) -> Iterator[bytes]:
        yield b"{"
        raise KeyboardInterrupt

    monkeypatch.setattr(plan_module, "_file_chunks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        apply_repair(plan, out=out)
    assert not out.exists() and _leftovers(tmp_path) == []


def test_a_same_size_change_with_the_time_put_back_is_refused_in_place(tmp_path: Path) -> None:
    path = _damaged(tmp_path, "duplicate_ids.jsonl")
    data = path.read_bytes()
    plan = plan_repair(path)
    assert plan.changes
    i = data.index(b'"user"')
    changed = data[:i] + b'"resu"' + data[i + 6:]
    path.write_bytes(changed)
    os.utime(path, ns=(plan.mtime_ns, plan.mtime_ns))
    assert path.stat().st_size == plan.size
    with pytest.raises(RepairConflictError, match="changed since the repair was planned"):
        apply_repair(plan, in_place=True)
    assert path.read_bytes() == changed and not list(tmp_path.glob("s.jsonl.bak*")) and _leftovers(tmp_path) == []


def test_a_change_between_the_check_and_the_backup_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    path = _damaged(tmp_path, "duplicate_ids.jsonl")
    data = path.read_bytes()
    plan = plan_repair(path)
    real = plan_module._check_unchanged

    def then_changed(p: plan_module.RepairPlan) -> None:
        real(p)
        path.write_bytes(data.replace(b'"user"', b'"resu"', 1))  # after the check, before the backup

    monkeypatch.setattr(plan_module, "_check_unchanged", then_changed)
    with pytest.raises(RepairConflictError):
        apply_repair(plan, in_place=True)
    assert not list(tmp_path.glob("s.jsonl.bak*")) and _leftovers(tmp_path) == []
    assert path.read_bytes() == data.replace(b'"user"', b'"resu"', 1)


def test_in_place_keeps_the_backup_and_appends_the_quarantine(tmp_path: Path) -> None:
    path = _damaged(tmp_path, "truncated_mid_record.jsonl")
    data = path.read_bytes()
    (tmp_path / "s.jsonl.bak").write_bytes(b"an older backup")
    plan = plan_repair(path)
    assert plan.quarantined
    quarantine = Path(plan_module.quarantine_path(str(path)))
    quarantine.write_bytes(b"earlier\n")
    result = apply_repair(plan, in_place=True)
    assert result.backup == f"{path}.bak.1" and Path(result.backup).read_bytes() == data
    assert (tmp_path / "s.jsonl.bak").read_bytes() == b"an older backup"
    assert result.quarantine == str(quarantine)
    assert quarantine.read_bytes() == b"earlier\n" + plan.quarantine_bytes()
    assert path.read_bytes() == plan.output and _leftovers(tmp_path) == []


def test_a_device_output_with_a_quarantine_is_refused_before_writing(tmp_path: Path) -> None:
    path = _damaged(tmp_path, "truncated_mid_record.jsonl")
    plan = plan_repair(path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(RepairError, match="need a quarantine file"):
        apply_repair(plan, out=fifo, force=True)
    assert not Path(plan_module.quarantine_path(str(fifo))).exists()


def test_in_place_keeps_the_sessions_mode(tmp_path: Path) -> None:
    import stat

    from omp_session.ops.repair.plan import apply_repair, plan_repair

    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"r","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
                     b'{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
                     b'"message":{"role":"user","content":"hi","timestamp":1}}\ngarbage{\n')
    path.chmod(0o600)
    result = apply_repair(plan_repair(path), in_place=True)
    assert result.written
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
