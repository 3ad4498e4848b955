"""Golden test of the version matrix (issue 17): the five S20 scripts in tests/data/omp-18.3.4/,
run by ``adapter.py run --omp VERSION``, match what each omp derived from them
(``expected-<version>.jsonl``), compared by tests/reference/compare.py with its default options.

No omp is needed: the expected outputs are recorded. 18.3.4 cannot be installed (its siblings are
unpublished), so this is the only check of its behaviour; 18.2.3's file checks that the version
choice reaches the adapter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "omp-18.3.4"
COMPARE = HERE.parent / "reference" / "compare.py"
SCRIPTS = sorted(p.name for p in DATA.glob("t*.json"))


def _run(version: str, tmp_path: Path) -> Path:
    out = tmp_path / f"ours-{version}.jsonl"
    # relative names from the data folder: the records name each script as it was given, as the
    # recorded outputs do
    with out.open("wb") as f:
        subprocess.run([sys.executable, str(HERE / "adapter.py"), "run", "--omp", version, *SCRIPTS],
                       cwd=DATA, stdout=f, check=True)
    return out


def test_the_five_scripts_are_there() -> None:
    assert SCRIPTS == ["tA_anth_compaction.json", "tB_anth_snapshot.json", "tC_mcp_structured.json",
                       "tD_newsession_dir.json", "tE_session_init.json"]


@pytest.mark.parametrize("version", ["18.3.4", "18.2.3"])
def test_adapter_matches_the_recorded_omp(version: str, tmp_path: Path) -> None:
    ours = _run(version, tmp_path)
    done = subprocess.run([sys.executable, str(COMPARE), str(DATA / f"expected-{version}.jsonl"), str(ours)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert done.stdout.rstrip().endswith("5 passed, 0 failed")


def test_the_versions_differ_where_s20_says(tmp_path: Path) -> None:
    """Guards the golden data itself: 18.2.3's record of each S20 script differs from 18.3.4's,
    except tE (compactionThreshold is kept by both), so matching both is not matching one."""
    done = subprocess.run([sys.executable, str(COMPARE), str(DATA / "expected-18.3.4.jsonl"),
                           str(_run("18.2.3", tmp_path))], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stdout.rstrip().endswith("1 passed, 4 failed") and "FAIL tE" not in done.stdout


def test_unknown_version_is_a_usage_error() -> None:
    done = subprocess.run([sys.executable, str(HERE / "adapter.py"), "run", "--omp", "17.0", *SCRIPTS], cwd=DATA,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "not one we imitate" in done.stderr
