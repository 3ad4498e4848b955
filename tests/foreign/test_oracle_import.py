"""Conformance of ``omp_session.foreign`` with omp's own importer (``omp-reference import``).

A seeded corpus of Claude Code and Codex sessions (``gen_foreign.py``; >= 100 of each) is
imported twice, by omp 18.2.3 (``createForeignSessionStore(...).list()`` then
``persistForeignSession`` of each) and by us, from the same home directory and the same current
directory, into two agent directories. For every source session:

* the listing says the same (id, path, cwd, title, times, first message, message count);
* both fail, or neither; a written file is byte-identical except omp's random values (see
  foreign_compare.py), lands in the same project folder, and omp loads the same views from ours
  as from its own (header, entries, leaf, branch, context, transcript, usage...);
* the blob stores end up holding the same blobs.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from foreign_compare import FILE_NAME, file_differences, views_differences

from omp_session.foreign.batch import find_sessions, import_sessions
from omp_session.foreign.ledger import Ledger
from omp_session.foreign.sources import ForeignSession, Source

pytestmark = pytest.mark.oracle

REFERENCE = Path(__file__).resolve().parents[1] / "reference"
COUNT = 110


def _omp(*args: str) -> list[dict[str, Any]]:
    out = subprocess.run([str(REFERENCE / "omp-reference"), "import", *args], check=True, capture_output=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("foreign-world")
    subprocess.run([sys.executable, str(REFERENCE / "gen_foreign.py"), "--seed", "5", "--claude", str(COUNT),
                    "--codex", str(COUNT), "--out", str(root / "home")], check=True)
    (root / "here").mkdir()
    yield root


def _run_ours(world: Path, source: Source, monkeypatch: pytest.MonkeyPatch) -> tuple[list[ForeignSession], dict[str, Any]]:
    monkeypatch.setenv("HOME", str(world / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(world / f"ours-{source}"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.chdir(world / "here")
    sessions = find_sessions(source)
    outcomes = {o.info.path: o for o in import_sessions(sessions, fallback_cwd=str(world / "here"),
                                                         ledger=Ledger(world / f"ledger-{source}.jsonl"))}
    return sessions, outcomes


def _info(s: ForeignSession) -> dict[str, Any]:
    return {"source": s.source, "id": s.id, "path": s.path, "cwd": s.cwd, "title": s.title,
            "created": None if s.created_ms != s.created_ms else int(s.created_ms),
            "modified": None if s.modified_ms != s.modified_ms else int(s.modified_ms),
            "firstMessage": s.first_message, "messageCount": s.message_count}


@pytest.mark.parametrize("source", ["claude", "codex"])
def test_import_matches_omp(world: Path, source: Source, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    records = _omp(source, "--home", str(world / "home"), "--agent-dir", str(world / f"omp-{source}"),
                   "--cwd", str(world / "here"))
    listing, imports = records[0], records[1:]
    assert listing["error"] is None
    sessions, outcomes = _run_ours(world, source, monkeypatch)

    # the listing
    assert sorted(map(json.dumps, map(_info, sessions))) == sorted(map(json.dumps, listing["sessions"]))
    assert len(imports) >= 100

    # each import
    ours_root = world / f"ours-{source}" / "sessions"
    failures: list[str] = []
    written: list[tuple[Path, dict[str, Any]]] = []
    passed = 0
    for rec in imports:
        path = rec["info"]["path"]
        out = outcomes[path]
        if rec["error"] is not None:
            if out.status != "failed":
                failures.append(f"{path}: omp failed ({rec['error']}), we imported it")
            else:
                passed += 1
            continue
        if out.status != "imported" or out.session is None:
            failures.append(f"{path}: omp imported it, we said {out.status}: {out.reason}")
            continue
        mine = Path(out.session)
        if mine.parent.relative_to(ours_root).as_posix() != Path(rec["session_file"]).parent.as_posix():
            failures.append(f"{path}: landed in {mine.parent.name}, omp's in {Path(rec['session_file']).parent}")
            continue
        if not FILE_NAME.match(mine.name):
            failures.append(f"{path}: file name {mine.name}")
            continue
        theirs = base64.b64decode(rec["b64"])
        problems = file_differences(mine.read_bytes(), theirs)
        if problems:
            failures.append(f"{path}:\n  " + "\n  ".join(problems[:5]))
            continue
        written.append((mine, rec))
        passed += 1

    # omp's views of our files
    if written:
        ours_views = _omp("views", "--home", str(world / "home"), "--agent-dir", str(world / f"omp-{source}"),
                          *[str(p) for p, _ in written])
        for (mine, rec), got in zip(written, ours_views, strict=True):
            assert got["error"] is None, got["error"]
            diffs = views_differences(got["views"], rec["views"], mine.read_bytes(), base64.b64decode(rec["b64"]))
            if diffs:
                failures.append(f"{rec['info']['path']}: {diffs}")
                passed -= 1
    with capsys.disabled():  # the conformance figure, shown in CI's log as the others are
        print(f"\nconformance: import {source}: {passed} passed, {len(failures)} failed (of {len(imports)})")
    assert not failures, "\n".join(failures[:10])

    # the same blobs
    def blobs(agent: Path) -> list[str]:
        d = agent / "blobs"
        return sorted(os.listdir(d)) if d.is_dir() else []

    assert blobs(world / f"ours-{source}") == blobs(world / f"omp-{source}")
