"""Subagent transcripts are files omp wrote in the session's artifacts folder: a symlink there (to
a file or as the folder itself) is not followed, so an export never embeds a file from elsewhere."""

from __future__ import annotations

from pathlib import Path

from omp_session.ops.export.subagents import find_subagents


def _session(tmp_path: Path) -> tuple[Path, Path]:
    session = tmp_path / "bucket" / "2026-01-01T00-00-00-000Z_abc.jsonl"
    session.parent.mkdir()
    session.write_text('{"type":"session","version":3,"id":"abc"}\n')
    return session, session.with_suffix("")


def test_a_symlinked_transcript_is_not_found(tmp_path: Path) -> None:
    session, folder = _session(tmp_path)
    folder.mkdir()
    (folder / "real.jsonl").write_text("{}\n")
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_text('{"secret":1}\n')
    (folder / "link.jsonl").symlink_to(secret)
    found = find_subagents(session, {"link": [0]})
    assert [(f.agent_id, f.exists) for f in found] == [("link", False), ("real", True)]


def test_a_symlinked_artifacts_folder_is_not_read(tmp_path: Path) -> None:
    session, folder = _session(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.jsonl").write_text("{}\n")
    folder.symlink_to(outside, target_is_directory=True)
    assert [(f.agent_id, f.exists) for f in find_subagents(session, {})] == []
