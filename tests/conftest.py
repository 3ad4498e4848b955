"""Shared fixtures: the oracle's directory and generated corpora."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ORACLE = Path(os.environ.get("OMP_ORACLE_DIR", Path(__file__).resolve().parents[2] / "shared" / "oracle"))


@pytest.fixture(scope="session")
def make_corpus(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int, int], Path]:
    """``make_corpus(seed, count)``: a directory of ``gen_sessions.py`` files of every kind."""
    made: dict[tuple[int, int], Path] = {}

    def make(seed: int, count: int) -> Path:
        if (seed, count) not in made:
            out = tmp_path_factory.mktemp(f"corpus-{seed}-{count}")
            subprocess.run([sys.executable, str(ORACLE / "gen_sessions.py"), "--seed", str(seed), "--count",
                            str(count), "--kinds", "all", "--out", str(out)], check=True, capture_output=True)
            made[seed, count] = out
        return made[seed, count]

    return make


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test writes under the real home: omp's agent dir and our cache live in temp dirs (a
    test may point them elsewhere itself)."""
    base = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    if "PI_CODING_AGENT_DIR" not in os.environ:
        monkeypatch.setenv("PI_CODING_AGENT_DIR", str(base / "agent"))
