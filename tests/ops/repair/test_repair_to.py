"""``repair -o`` (``repair_to``): the file's bytes, written beside the output while they are
hashed during planning, become the output when the file is its own repair; otherwise they are
dropped and the repair written as ``apply_repair`` writes it. Either way the output is what
``plan_repair`` + ``apply_repair`` write, nothing else is left in the folder, and a refusal comes
before the file is read."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import turns_session
from omp_session.errors import RepairConflictError, RepairError, SessionError
from omp_session.format import split
from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair.plan import apply_repair, plan_repair, repair_to
from omp_session.store import atomic
from omp_session.store.atomic import pending_output


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))


@pytest.fixture(params=[False, True], ids=["one process", "forked"])
def both_ways(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """The test in one process, and with a forked child wherever a big file gets one (the scan's
    halves, the later records' proofs, the digest and the copy); no child is left either way."""
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: request.param)
    monkeypatch.setattr(plan_module, "_CHUNK", 3000)  # blocks the copy's writer holds until flushed
    yield request.param
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def _session(path: Path, damaged: bool) -> Path:
    return turns_session(path, 150, reused_id=damaged)


def _expected(path: Path, tmp_path: Path) -> bytes:
    ref = tmp_path / "reference" / "out.jsonl"
    ref.parent.mkdir()
    apply_repair(plan_repair(path), out=ref)
    return ref.read_bytes()


@pytest.mark.parametrize("damaged", [False, True])
def test_the_output_is_what_plan_and_apply_write(both_ways: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 damaged: bool) -> None:
    path = _session(tmp_path / "s.jsonl", damaged)
    os.chmod(path, 0o640)
    expected = _expected(path, tmp_path)
    applied: list[bool] = []
    real_apply = plan_module.apply_repair
    monkeypatch.setattr(plan_module, "apply_repair", lambda *a, **k: applied.append(True) or real_apply(*a, **k))
    folder = tmp_path / "out"
    folder.mkdir()
    plan, result = repair_to(path, folder / "fixed.jsonl")
    assert (folder / "fixed.jsonl").read_bytes() == expected
    assert result.output == str(folder / "fixed.jsonl") and result.backup is None and result.quarantine is None
    assert applied == ([True] if damaged else [])  # a clean file: the copy made while hashing is the output
    assert plan.is_empty is not damaged
    assert sorted(p.name for p in folder.iterdir()) == ["fixed.jsonl"]  # no temporary file left
    assert stat.S_IMODE((folder / "fixed.jsonl").stat().st_mode) == 0o640 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_refusals_come_before_the_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", False)
    (tmp_path / "taken.jsonl").write_bytes(b"keep me")
    monkeypatch.setattr(plan_module, "_plan_file", lambda *a: pytest.fail("the file was read"))
    with pytest.raises(RepairError, match="already exists"):
        repair_to(path, tmp_path / "taken.jsonl")
    with pytest.raises(RepairError, match="is the file being repaired"):
        repair_to(path, path)
    with pytest.raises(RepairError, match="is a directory"):
        repair_to(path, tmp_path)
    assert (tmp_path / "taken.jsonl").read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "taken.jsonl"]


def test_force_replaces_an_existing_output(both_ways: bool, tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", False)
    (tmp_path / "taken.jsonl").write_bytes(b"old")
    repair_to(path, tmp_path / "taken.jsonl", force=True)
    assert (tmp_path / "taken.jsonl").read_bytes() == path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "taken.jsonl"]


def test_a_copy_that_fails_to_write_falls_back(both_ways: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", False)
    real_write = atomic.Pending.write
    calls = tmp_path.parent / f"{tmp_path.name}.calls"  # (a file: the writes may be a child's)

    def failing_once(self: atomic.Pending, data: bytes) -> None:
        with open(calls, "a") as f:
            f.write(f"{len(data)}\n")
        if len(calls.read_text().split()) == 1:
            original = self.file
            self.file = _Refusing()  # type: ignore[assignment]
            real_write(self, data)
            self.file = original
            return
        real_write(self, data)

    monkeypatch.setattr(atomic.Pending, "write", failing_once)
    repair_to(path, tmp_path / "out.jsonl")
    assert calls.read_text() and (tmp_path / "out.jsonl").read_bytes() == path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "s.jsonl"]


def test_a_digest_child_that_dies_leaves_the_output_to_the_repair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the child may have written part of the copy: the digest is made here, the copy never placed
    path = _session(tmp_path / "s.jsonl", False)
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    here = os.getpid()
    real = plan_module._file_digest
    applied: list[bool] = []
    real_apply = plan_module.apply_repair
    monkeypatch.setattr(plan_module, "apply_repair", lambda *a, **k: applied.append(True) or real_apply(*a, **k))

    def dies_in_the_child(name: str, stop: threading.Event, copy: Any = None) -> str:
        if os.getpid() != here:
            if copy is not None:
                copy.write(b"half a copy")
                copy.file.flush()
            os._exit(3)
        return str(real(name, stop, copy))

    monkeypatch.setattr(plan_module, "_file_digest", dies_in_the_child)
    plan, result = repair_to(path, tmp_path / "out.jsonl")
    assert (tmp_path / "out.jsonl").read_bytes() == path.read_bytes() and result.output == str(tmp_path / "out.jsonl")
    assert applied == [True] and plan.sha256 and plan.is_empty
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "s.jsonl"]
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


class _Refusing:
    def write(self, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    def close(self) -> None:
        pass


def test_a_file_appended_to_while_planned_is_refused(both_ways: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", False)
    real = plan_module._file_digest

    def appended_first(name: str, stop: threading.Event, copy: Any = None) -> str:
        with open(name, "ab") as f:  # omp appends to a live session
            f.write(b'{"type":"label","id":"zz","parentId":"a149","timestamp":"2026-01-01T00:00:00.000Z"}\n')
        return str(real(name, stop, copy))

    monkeypatch.setattr(plan_module, "_file_digest", appended_first)
    with pytest.raises(RepairConflictError, match="changed since the repair was planned"):
        repair_to(path, tmp_path / "out.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_a_planning_error_leaves_nothing(both_ways: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", False)

    def failing(j: Any, later: Any = None) -> Any:
        raise RuntimeError("disk gone")

    monkeypatch.setattr(plan_module, "read_records", failing)
    with pytest.raises(RuntimeError, match="disk gone"):
        repair_to(path, tmp_path / "out.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_a_scan_error_leaves_nothing(both_ways: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl", False)

    def unreadable(name: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(plan_module, "scan_file", unreadable)
    with pytest.raises(SessionError, match="Permission denied"):
        repair_to(path, tmp_path / "out.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]  # (and no child left: both_ways)


def test_the_command_writes_through_repair_to(tmp_path: Path) -> None:
    from builders import invoke
    from omp_session.cli.repair import repair as repair_cmd

    path = _session(tmp_path / "s.jsonl", False)
    shown = invoke(repair_cmd, str(path), "-o", str(tmp_path / "out.jsonl"))
    assert shown.exit_code == 0 and f"wrote {tmp_path / 'out.jsonl'}" in shown.output
    assert (tmp_path / "out.jsonl").read_bytes() == path.read_bytes()
    again = invoke(repair_cmd, str(path), "-o", str(tmp_path / "out.jsonl"))
    assert again.exit_code != 0 and "already exists" in again.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "s.jsonl"]


# ----- Pending ---------------------------------------------------------------------------------


def _pending(out: Path) -> atomic.Pending:
    pending = pending_output(out, force=False, error=SessionError)
    assert pending is not None
    return pending


def test_pending_is_placed_or_dropped(tmp_path: Path) -> None:
    out = tmp_path / "a.bin"
    pending = _pending(out)
    pending.write(b"one ")
    pending.write(b"two")
    assert not out.exists()
    pending.place()
    assert out.read_bytes() == b"one two" and pending.written == 7
    dropped = _pending(tmp_path / "b.bin")
    dropped.write(b"x")
    dropped.discard()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_pending_never_clobbers_a_file_that_appeared(tmp_path: Path) -> None:
    out = tmp_path / "a.bin"
    pending = _pending(out)
    pending.write(b"new")
    out.write_bytes(b"someone else's")
    with pytest.raises(SessionError, match="already exists"):
        pending.place()
    assert out.read_bytes() == b"someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_a_failed_write_is_never_placed(tmp_path: Path) -> None:
    pending = _pending(tmp_path / "a.bin")
    pending.write(b"kept")
    real = pending.file
    pending.file = _Refusing()  # type: ignore[assignment]
    pending.write(b"lost")
    assert pending.failed and pending.written == 4
    pending.write(b"never tried")
    assert pending.written == 4
    with pytest.raises(SessionError, match="cannot write"):
        pending.place()
    real.close()
    assert list(tmp_path.iterdir()) == []


def test_a_stream_gets_no_pending_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert pending_output(fifo, force=False, error=SessionError) is None
    with pytest.raises(SessionError, match="this command does not write to stdout"):
        pending_output("-", force=False, error=SessionError)
