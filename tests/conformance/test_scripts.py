"""Random sequences of SessionManager operations: through omp and through us, and round trips."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent
ORACLE = Path(os.environ.get("OMP_ORACLE_DIR", HERE.parents[1] / "tests" / "reference"))
sys.path.insert(0, str(HERE))

import run_conformance  # noqa: E402

from omp_session.format.blobs import MemoryBlobStore  # noqa: E402
from omp_session.js import codec  # noqa: E402
from omp_session.write.manager import SessionManager  # noqa: E402


@pytest.mark.oracle
def test_random_operation_scripts_match_omp(tmp_path: Path) -> None:
    """Every operation, random arguments, sessions opened from generated files: omp and we give
    the same results, views and files (timestamps and generated ids aligned)."""
    seed = random.randrange(1, 2**31)
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(ORACLE / "gen_sessions.py"), "--seed", str(seed), "--count", "24",
                    "--kinds", "all", "--out", str(corpus)], check=True, capture_output=True)
    subprocess.run([sys.executable, str(HERE / "gen_scripts.py"), "--seed", str(seed), "--count", "30",
                    "--out", str(tmp_path / "scripts"), "--files", str(corpus)], check=True, capture_output=True)
    scripts = sorted(str(p) for p in (tmp_path / "scripts").glob("*_ops.json"))
    result, _ = run_conformance.grade_scripts(scripts, ORACLE, tmp_path, 2)
    assert result.ok, f"seed {seed}\n" + "\n".join(result.report(verbose=True, what="scripts"))


def _json(value: Any) -> Any:
    return codec.loads(codec.dumps_line(value))


ops = st.lists(st.one_of(
    st.tuples(st.just("user"), st.text(max_size=20)),
    st.tuples(st.just("assistant"), st.text(max_size=20)),
    st.tuples(st.just("branch"), st.integers(0, 50)),
    st.tuples(st.just("label"), st.integers(0, 50), st.sampled_from(["a", "", None])),
    st.tuples(st.just("title"), st.text(max_size=30), st.sampled_from(["user", "auto"])),
    st.tuples(st.just("compaction"), st.integers(0, 50)),
    st.tuples(st.just("reopen"),),
), max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_reopening_gives_back_what_was_in_memory(tmp_path: Path, script: list[tuple[Any, ...]]) -> None:
    """After any sequence of operations, what a reopen reads equals what the manager held."""
    directory = tmp_path / f"s{random.randrange(10**9)}"
    sm = SessionManager.create(str(tmp_path), str(directory), blob_store=MemoryBlobStore())
    sm.ensure_on_disk()
    ids: list[str] = []
    for op in script:
        kind = op[0]
        if kind in ("user", "assistant"):
            message: dict[str, Any] = {"role": kind, "content": op[1], "timestamp": 1}
            if kind == "assistant":
                message.update(content=[{"type": "text", "text": op[1]}], provider="p", model="m", stopReason="stop",
                               usage={"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                               "total": 0}})
            ids.append(sm.append_message(message))
        elif kind == "branch" and ids:
            sm.branch(ids[op[1] % len(ids)])
        elif kind == "label" and ids:
            ids.append(sm.append_label_change(ids[op[1] % len(ids)], op[2]))
        elif kind == "title":
            sm.set_session_name(op[1], op[2])
        elif kind == "compaction" and ids:
            ids.append(sm.append_compaction("summary", "short", ids[op[1] % len(ids)], 100))
        elif kind == "reopen":
            path = sm.get_session_file() or ""
            entries, header, name = _json(sm.get_entries()), _json(sm.get_header()), sm.get_session_name()
            sm.close()
            sm = SessionManager.open(path, blob_store=MemoryBlobStore())
            assert _json(sm.get_entries()) == entries
            assert _json(sm.get_header()) == header and sm.get_session_name() == name
            assert sm.get_leaf_id() == (entries[-1]["id"] if entries else None)
            assert json.dumps(sm.build_session_context(), default=str)
    sm.close()
