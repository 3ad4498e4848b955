"""Golden fixtures: omp's own imports of a small Claude Code and Codex corpus (tests/data/foreign/,
made by make_golden.py), which ours must reproduce without running omp."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from foreign_compare import canonical

from omp_session.foreign.batch import find_sessions, import_sessions
from omp_session.foreign.ledger import Ledger
from omp_session.foreign.sources import Source

DATA = Path(__file__).resolve().parents[1] / "data" / "foreign"


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fixture home copied under a fresh root (no '-' in it: Claude's folder names decode '-'
    to '/'), its old root rewritten in file contents and folder names, times restored."""
    manifest = json.loads((DATA / "manifest.json").read_text())
    old = manifest["root"]
    root = Path(tempfile.mkdtemp(prefix="ompgold"))
    assert "-" not in str(root)
    try:
        encoded_old, encoded_new = old.replace("/", "-"), str(root).replace("/", "-")
        for rel in manifest["dirs"]:
            (root / "home" / rel.replace(encoded_old, encoded_new)).mkdir(parents=True, exist_ok=True)
        for rel, ns in manifest["mtimes"].items():
            target = root / "home" / rel.replace(encoded_old, encoded_new)
            target.write_bytes((DATA / "home" / rel).read_bytes().replace(old.encode(), str(root).encode()))
            os.utime(target, ns=(ns, ns))
        (root / "here").mkdir()
        monkeypatch.setenv("HOME", str(root / "home"))
        monkeypatch.setenv("PI_CODING_AGENT_DIR", str(root / "agent"))
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
        monkeypatch.chdir(root / "here")
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _expected(source: str, root: Path) -> list[dict[str, Any]]:
    """The golden records, with the old root's folder-name form (``-tmp-…``) made the new one's."""
    encoded_old = json.loads((DATA / "manifest.json").read_text())["root"].replace("/", "-")
    encoded_new = str(root).replace("/", "-")
    out = []
    for line in (DATA / "expected" / f"{source}.jsonl").read_text().splitlines():
        rec = json.loads(line.replace(encoded_old, encoded_new))
        rec["info"] = {k: v.replace("<ROOT>", str(root)) if isinstance(v, str) else v for k, v in rec["info"].items()}
        out.append(rec)
    return out


@pytest.mark.parametrize("workers", [1, 2])  # one process, or a pool of two writing side by side
@pytest.mark.parametrize("source", ["claude", "codex"])
def test_import_reproduces_omps_golden_files(world: Path, source: Source, workers: int) -> None:
    expected = _expected(source, world)
    sessions = find_sessions(source)
    assert [s.path for s in sessions] == [e["info"]["path"] for e in expected]
    outcomes = {o.info.path: o for o in import_sessions(sessions, fallback_cwd=str(world / "here"),
                                                         ledger=Ledger(world / "ledger.jsonl"), workers=workers)}
    for info, want in zip(sessions, expected, strict=True):
        got = {"source": info.source, "id": info.id, "path": info.path, "cwd": info.cwd, "title": info.title,
               "created": int(info.created_ms), "modified": int(info.modified_ms),
               "firstMessage": info.first_message, "messageCount": info.message_count}
        if want["info"]["created"] is None:  # taken from the file's birth time: not kept in git
            got["created"] = None
        assert got == want["info"]
        out = outcomes[info.path]
        assert (out.status == "failed") == want["failed"], out.reason
        if want["file"] is not None:
            assert out.session is not None
            assert canonical(Path(out.session).read_bytes(), str(world)).decode() == want["file"], info.path
