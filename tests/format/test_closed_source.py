"""A session of 8 MiB or more is read from its file as asked (``pread``), through a handle its
``close()`` releases; reading it after that raised a bare AssertionError (found by a hunt). omp's
manager stays usable after ``close()``: the file is opened again on demand, unless it is no longer
the file the session was read from (replaced since: then a clear error)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import omp_session
from builders import assistant, entry, header, jsonl, stamp, user
from omp_session.errors import SessionFileError
from omp_session.format.reader import STREAMING_THRESHOLD
from omp_session.write.manager import SessionManager


def _big(tmp_path: Path) -> Path:
    records: list[object] = [header("s1", cwd="/p")]
    parent = None
    k = 0
    while len(jsonl(records)) < STREAMING_THRESHOLD + 100_000:
        records.append(entry(f"u{k}", parent, timestamp=stamp(1), message=user("q" * 4000)))
        records.append(entry(f"a{k}", f"u{k}", timestamp=stamp(2), message=assistant("a" * 4000)))
        parent = f"a{k}"
        k += 1
    path = tmp_path / "big.jsonl"
    path.write_text(jsonl(records))
    return path


def test_a_big_session_reads_after_close(tmp_path: Path) -> None:
    path = _big(tmp_path)
    with omp_session.open(path) as s:
        branch = [e["id"] for e in s.get_branch()]
        context = s.build_session_context()
    assert s.journal.streaming
    assert [e["id"] for e in s.get_branch()] == branch  # AssertionError before
    assert s.build_session_context() == context
    with SessionManager.open(str(path)) as sm:
        pass
    assert [e["id"] for e in sm.get_branch()] == branch
    sm.append_message(user("after close"))
    assert sm.get_branch()[-1]["message"]["content"] == "after close"


def test_a_big_session_whose_file_was_replaced_after_close_says_so(tmp_path: Path) -> None:
    path = _big(tmp_path)
    s = omp_session.open(path)
    s.close()
    (tmp_path / "other").mkdir()
    os.replace(_big(tmp_path / "other"), path)  # omp's rewrite: a new file renamed over the old
    with pytest.raises(SessionFileError, match="replaced"):
        s.get_branch()
