"""Regressions found by hunting bugs in ``pack`` / ``unpack``."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from builders import entry, header, stamp, user
from omp_session.js import codec
from omp_session.ops import blobs as blob_maint
from omp_session.ops.pack import unpack as unpack_mod
from omp_session.ops.pack.archive import pack
from omp_session.ops.pack.unpack import unpack
from omp_session.paths import project_dir_name


def _session(root: Path, cwd: str, sid: str, sha: str) -> Path:
    folder = root / project_dir_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    path.write_bytes(codec.dumps_line(header(sid, cwd=cwd)) + codec.dumps_line(entry(
        "e0", None, timestamp=stamp(1), message=user([{"type": "image", "data": f"blob:sha256:{sha}",
                                                        "mimeType": "image/png"}]))))
    return path


def test_gc_racing_unpack_keeps_a_blob_that_was_already_in_the_store(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """unpack leaves a blob the store already holds in place ("already there"); a gc whose scan
    ended before the sessions were staged saw that blob old and unreferenced and deleted it: the
    unpacked session then referenced a blob that was gone, though the archive held it. unpack
    freshens such a blob, as omp does when it stores the same image again, so gc keeps it."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    data = b"an image"
    sha = hashlib.sha256(data).hexdigest()
    src_blobs = tmp_path / "src" / "blobs"
    src_blobs.mkdir(parents=True)
    (src_blobs / sha).write_bytes(data)
    session = _session(tmp_path / "src" / "sessions", "/p/app", "s1", sha)
    archive = tmp_path / "a.tar"
    pack([session], archive, blobs_dir=src_blobs)

    root, blobs = tmp_path / "dst" / "sessions", tmp_path / "dst" / "blobs"
    root.mkdir(parents=True)
    blobs.mkdir(parents=True)
    (blobs / sha).write_bytes(data)  # left by a session deleted long ago: unreferenced, old
    old = time.time() - 10 * 86400
    os.utime(blobs / sha, (old, old))

    # a gc --apply whose scan of the sessions ended just before unpack began: no session
    # references the blob, so it is to be deleted; the deleting happens while unpack stages
    found = blob_maint.collect_gc([root], blobs, registered=False, allow_empty=True)
    assert [b.sha for b in found.unreferenced] == [sha]
    real_place = unpack_mod._place

    def gc_then_place(*args: object, **kwargs: object) -> None:
        blob_maint.delete_blobs(found)
        real_place(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(unpack_mod, "_place", gc_then_place)
    result = unpack(archive, root=root, blobs_dir=blobs)
    assert result.blobs_present == 1
    assert (blobs / sha).is_file(), "gc deleted a blob the unpacked session references"
