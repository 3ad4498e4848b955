"""The generated session the size tests share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GEN_LARGE = Path(__file__).resolve().parents[3] / "bench" / "gen_large.py"


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("large") / "s.jsonl"
    subprocess.run([sys.executable, str(GEN_LARGE), "--size", "4M", "--seed", "4", "-o", str(out),
                    "--inline-image-share", "0.9", "--large-inline-share", "0.6"], check=True, capture_output=True)
    return out
