"""repair hashes the file in a second thread while its records are read (issue 16, time): the
plan's SHA-256 is the file's, an error on either side is reported as before, and no thread
outlives the planning."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest

from builders import turns_session
from omp_session.errors import SessionFileError
from omp_session.format.background import Background
from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair.plan import plan_repair


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))


def _session(path: Path) -> Path:
    return turns_session(path, 200, reused_id=True)


def _digest_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "omp-session-repair-digest"]


def test_the_plan_carries_the_files_digest_and_no_thread_is_left(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    plan = plan_repair(path)
    assert plan.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert plan.fixes and plan.output_sha256 != plan.sha256
    assert _digest_threads() == []


def test_an_error_while_planning_stops_the_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl")

    def failing(j: Any, later: Any = None) -> Any:
        raise RuntimeError("disk gone")

    monkeypatch.setattr(plan_module, "read_records", failing)
    with pytest.raises(RuntimeError, match="disk gone"):
        plan_repair(path)
    assert _digest_threads() == []


def test_a_file_the_digest_cannot_read_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path / "s.jsonl")

    def unreadable(p: str, stop: threading.Event, copy: object = None) -> str:
        raise PermissionError(13, "Permission denied", p)

    monkeypatch.setattr(plan_module, "_file_digest", unreadable)
    with pytest.raises(SessionFileError, match="Permission denied"):
        plan_repair(path)
    assert _digest_threads() == []


def test_background_gives_the_value_or_the_exception_and_stops_when_asked() -> None:
    assert Background(lambda stop: 6 * 7, "t").result() == 42
    failing = Background(lambda stop: 1 // 0, "t")
    with pytest.raises(ZeroDivisionError):
        failing.result()
    started = threading.Event()

    def waits(stop: threading.Event) -> str:
        started.set()
        return "stopped" if stop.wait(30) else "not stopped"

    waiting = Background(waits, "t")
    started.wait(30)
    waiting.cancel()
    assert waiting.result() == "stopped"


def _plan_files() -> list[Path]:
    from test_repair_streaming import _files

    return _files()


@pytest.mark.parametrize("path", _plan_files(), ids=lambda p: p.name)
def test_a_plan_only_looked_at_is_the_plan_without_its_digest(path: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.ops.repair.plan import NotASessionError

    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    monkeypatch.setattr(plan_module, "new_session_id", lambda: "019a0000-0000-7000-8000-000000000000")
    monkeypatch.setattr(plan_module, "iso_timestamp", lambda: "2026-01-01T00:00:00.000Z")
    try:
        full = plan_repair(copy)
    except NotASessionError:
        return
    real = plan_module.Background

    def no_thread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a plan without its digest hashes nothing beside the read")

    monkeypatch.setattr(plan_module, "Background", no_thread)
    light = plan_repair(copy, digest=False)
    monkeypatch.setattr(plan_module, "Background", real)
    assert light.output == full.output and light.output_size == full.output_size
    assert [str(f) for f in light.fixes] == [str(f) for f in full.fixes]
    assert light.quarantined == full.quarantined and light.is_empty == full.is_empty
    # the digests are either the file's or left out, never another value
    assert light.sha256 in ("", full.sha256) and light.output_sha256 in ("", full.output_sha256)
    if full.output != copy.read_bytes():  # the repaired bytes are hashed as they are made
        assert light.output_sha256 == full.output_sha256


def test_a_plan_without_its_digest_is_never_written(tmp_path: Path) -> None:
    from omp_session.ops.repair.plan import RepairError, apply_repair

    path = _session(tmp_path / "s.jsonl")
    before = path.read_bytes()
    plan = plan_repair(path, digest=False)
    assert plan.sha256 == "" and plan.fixes
    for kwargs in ({"out": tmp_path / "out.jsonl"}, {"in_place": True}):
        with pytest.raises(RepairError, match="without the file's digest"):
            apply_repair(plan, **kwargs)  # type: ignore[arg-type]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_the_command_hashes_the_file_only_when_its_output_needs_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from builders import invoke
    from omp_session.cli.repair import repair as repair_cmd

    path = _session(tmp_path / "s.jsonl")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    asked: list[bool] = []
    real = plan_module.plan_repair

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("digest", True))
        return real(*args, **kwargs)

    monkeypatch.setattr("omp_session.cli.repair.plan_repair", spy)
    shown = invoke(repair_cmd, str(path))
    assert shown.exit_code == 0 and "fix(es)" in shown.output
    told = invoke(repair_cmd, str(path), "--json")
    assert told.exit_code == 0 and json.loads(told.output)["sha256"] == digest
    out = tmp_path / "fixed.jsonl"
    written = invoke(repair_cmd, str(path), "-o", str(out))
    assert written.exit_code == 0 and out.exists()
    assert asked == [False, True]  # (-o plans through repair_to, which always hashes: its copy is checked)
