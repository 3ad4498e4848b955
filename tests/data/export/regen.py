"""Regenerate the golden exports of the bundled sample session.

    .venv/bin/python tests/data/export/regen.py

Review the diff before committing: tests/test_export.py compares against these files.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"

# name -> export() keyword arguments; tests/test_export.py imports this table
GOLDEN: dict[str, tuple[str, dict[str, object]]] = {
    "sample.md": ("md", {}),
    "sample-all-branches.md": ("md", {"all_branches": True}),
    "sample-leaf-a1b45091.md": ("md", {"leaf": "a1b45091"}),
    "sample.json": ("json", {}),
    "sample-lossy.json": ("json", {"lossy": True}),
}


def main() -> None:
    # an empty agent dir: the real blob store must not influence the goldens
    os.environ["PI_CODING_AGENT_DIR"] = tempfile.mkdtemp(prefix="omp-export-regen-")
    sys.path.insert(0, str(ROOT / "src"))
    import omp_session
    from omp_session.ops.export.formats import export

    with omp_session.open(SAMPLE) as s:
        for name, (fmt, options) in GOLDEN.items():
            (HERE / name).write_text(export(s, fmt, **options), encoding="utf-8")  # type: ignore[arg-type]
            print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
