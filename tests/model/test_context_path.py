"""The windowed context equals omp's full-path algorithm on every generated session."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import omp_session
from builders import ORACLE
from omp_session.format.blobs import BlobStore
from omp_session.js import codec
from omp_session.model import context as full
from omp_session.model.context import ContextError


@pytest.fixture(scope="module")
def corpus(make_corpus: Callable[[int, int], Path]) -> Path:
    return make_corpus(11, 250)


def as_json(fn: object) -> object:
    try:
        return codec.stringify(fn())  # type: ignore[operator]
    except ContextError as e:
        return ("error", type(e).__name__)


@pytest.mark.parametrize("options", [{}, {"transcript": True, "collapse_compacted_history": True}])
def test_windowed_context_matches_full_path(corpus: Path, options: dict[str, bool]) -> None:
    files = sorted(corpus.glob("*.jsonl"))
    assert len(files) == 250
    compared = 0
    for path in files:
        with omp_session.open(path, blob_store=BlobStore(corpus / "blobs")) as s:
            if s.header is None:
                continue
            windowed = as_json(lambda s=s: s.build_session_context(**options))
            whole = as_json(lambda s=s: full.build_session_context(
                s.entries, s.raw_leaf, s.by_id, resolve_frame_data=s._frame_resolver(), **options))
            assert windowed == whole, path.name
            compared += 1
    assert compared > 200


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_windowed_context_matches_on_realistic_sessions(tmp_path: Path, seed: int) -> None:
    """gen_large sessions: long paths, compactions, branches, images; the common real shape."""
    gen = ORACLE.parents[1] / "bench" / "gen_large.py"
    path = tmp_path / "s.jsonl"
    subprocess.run([sys.executable, str(gen), "--size", "3M", "--seed", str(seed), "-o", str(path),
                    "--blob-dir", str(tmp_path / "blobs")], check=True, capture_output=True)
    for options in ({}, {"transcript": True, "collapse_compacted_history": True}):
        with omp_session.open(path, blob_store=BlobStore(tmp_path / "blobs")) as s:
            assert s.unique_string_ids and s.path_runs(s.index_of(s.raw_leaf) or 0) is not None
            windowed = as_json(lambda s=s, o=options: s.build_session_context(**o))
            whole = as_json(lambda s=s, o=options: full.build_session_context(
                s.entries, s.raw_leaf, s.by_id, resolve_frame_data=s._frame_resolver(), **o))
            assert windowed == whole
