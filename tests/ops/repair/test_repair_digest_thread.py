"""repair hashes the file in a second thread while its records are read (issue 16, time): the
plan's SHA-256 is the file's, an error on either side is reported as before, and no thread
outlives the planning."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest

from builders import assistant, entry, user, write_session
from omp_session.errors import SessionFileError
from omp_session.format.background import Background
from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair.plan import plan_repair


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))


def _session(path: Path) -> Path:
    es: list[Any] = []
    parent = None
    for n in range(200):
        es.append(entry(f"u{n}", parent, message=user(f"question {n}")))
        es.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n}")))
        parent = f"a{n}"
    es.append(entry("a5", "u7", message=assistant("a duplicate id: repair has work to do")))
    return write_session(path, es)


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

    def unreadable(p: str, stop: threading.Event) -> str:
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
