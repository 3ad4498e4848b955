"""Regenerate the golden import fixtures in tests/data/foreign/ from omp itself (needs the oracle).

    .venv/bin/python tests/foreign/make_golden.py

``home/`` is a small ``gen_foreign.py --small`` corpus (Claude Code and Codex); ``manifest.json``
holds what git does not keep (file modification times, the project directories that exist);
``expected/<source>.jsonl`` holds, per source session in omp's listing order, what omp's importer
made of it: the listing, its error, or its file in canonical form (foreign_compare.canonical).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from foreign_compare import canonical

from omp_session.foreign.filetimes import file_times

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "foreign"
REFERENCE = HERE.parent / "reference"
SEED = "15"  # its Codex sessions all carry a start time: none falls back on a file's birth time


def main() -> None:
    if DATA.exists():
        shutil.rmtree(DATA)
    (DATA / "expected").mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        subprocess.run([sys.executable, str(REFERENCE / "gen_foreign.py"), "--seed", SEED, "--claude", "16", "--codex",
                        "16", "--small", "--out", str(home)], check=True)
        mtimes = {p.relative_to(home).as_posix(): p.stat().st_mtime_ns for p in sorted(home.rglob("*")) if p.is_file()}
        dirs = [p.relative_to(home).as_posix() for p in sorted(home.rglob("*")) if p.is_dir()]
        shutil.copytree(home, DATA / "home")
        (DATA / "manifest.json").write_text(json.dumps({"root": str(root), "mtimes": mtimes, "dirs": dirs}, indent=1,
                                                       ensure_ascii=False) + "\n")
        (root / "here").mkdir()
        for source in ("claude", "codex"):
            out = subprocess.run([str(REFERENCE / "omp-reference"), "import", source, "--home", str(home),
                                  "--agent-dir", str(root / f"agent-{source}"), "--cwd", str(root / "here")],
                                 check=True, capture_output=True).stdout.splitlines()
            lines = []
            for line in out[1:]:
                rec = json.loads(line)
                info = {k: (v.replace(str(root), "<ROOT>") if isinstance(v, str) else v) for k, v in rec["info"].items()}
                body = None if rec["b64"] is None else canonical(base64.b64decode(rec["b64"]), str(root)).decode()
                # a listing time taken from the file's birth time cannot be kept in git
                birth = file_times(rec["info"]["path"]).birthtime_ms
                info["created"] = None if info["created"] == int(birth) else info["created"]
                lines.append(json.dumps({"info": info, "failed": rec["error"] is not None, "file": body},
                                        ensure_ascii=False))
            (DATA / "expected" / f"{source}.jsonl").write_text("\n".join(lines) + "\n")
    print(f"wrote {DATA}", file=sys.stderr)
    os.sync()


if __name__ == "__main__":
    main()
