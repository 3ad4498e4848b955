"""Run one of this folder's node checks (check_*.mjs) on a JSON spec and read the JSON it prints:
what the layout tests (test_serve_layout_qa2.py, test_viewer_phone.py) share."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

BROWSER_DIR = Path(__file__).resolve().parent


def run_check(script: str, spec: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """``node SCRIPT SPEC.json``'s output (it must succeed), the page errors it saw checked empty."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec), "utf-8")
    done = subprocess.run(["node", str(BROWSER_DIR / script), str(spec_path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    got: dict[str, Any] = json.loads(done.stdout)
    assert got["errors"] == []
    return got
