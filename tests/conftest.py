"""Shared fixtures (the oracle's directory, generated corpora) and the markers given by place.

Markers say what a test needs beyond python: ``oracle`` (the real omp under Bun), ``browser``
(headless chromium), ``db`` (the PostgreSQL, MariaDB and Redis servers). ``./dev test-fast`` runs
``-m "not oracle and not browser and not db"``. Most tests carry their markers themselves; the
hook below adds those that go with a place (``MARKERS_BY_PATH``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from builders import ORACLE

TESTS = Path(__file__).resolve().parent

# A folder or file below tests/ -> the marker every test in it gets.
MARKERS_BY_PATH = {
    "store": "db",  # the store backends against the live servers (the sqlite cases included)
    "conformance/test_copilot_replay.py": "oracle",  # loads its session with omp-oracle
}


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            where = item.path.resolve().relative_to(TESTS).as_posix()
        except ValueError:
            continue
        for place, marker in MARKERS_BY_PATH.items():
            if where == place or where.startswith(place + "/"):
                item.add_marker(marker)


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


@pytest.fixture(autouse=True)
def _imitate_omp_18_2_3(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live reference is omp 18.2.3: tests compare with it unless they pass ``omp=`` (or set
    OMP_SESSION_OMP) themselves; the library's default is the newest omp it implements (18.3.4)."""
    monkeypatch.setenv("OMP_SESSION_OMP", "18.2.3")


@pytest.fixture(scope="module")
def browser_ready() -> None:
    """Chromium and playwright-core, installed by tests/browser/setup.sh when missing (it is a
    no-op when both are there); a failure here fails the test rather than skipping it."""
    browser_dir = Path(__file__).resolve().parent / "browser"
    chromium = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
    if not chromium.exists() or not (browser_dir / "node_modules" / "playwright-core").is_dir():
        subprocess.run(["bash", str(browser_dir / "setup.sh")], check=True)
    assert shutil.which("node"), "node is needed for the browser test"
