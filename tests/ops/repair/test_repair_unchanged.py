"""A repair that finds a file already sound says so without reading its records again (plan's
_unchanged): the size and SHA-256 it then claims must be those of the bytes it would write, for
every layout of lines around the records (blank lines, spaces, CRLF, a title slot or none)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_repair import _valid_files

from omp_session.format.title import build_title_slot
from omp_session.ops.repair import plan as plan_module
from omp_session.ops.repair.plan import NotASessionError, plan_repair, plan_repair_bytes

_VALID = _valid_files()
_GAPS = [b"", b"", b"", b"\n", b" \n", b"\t\n", b"\r\n"]  # what may come between two lines


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))
    monkeypatch.setattr(plan_module, "new_session_id", lambda: "019a0000-0000-7000-8000-000000000000")
    monkeypatch.setattr(plan_module, "iso_timestamp", lambda: "2026-01-01T00:00:00.000Z")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, len(_VALID) - 1), slot=st.booleans(),
       gaps=st.lists(st.sampled_from(_GAPS), min_size=60, max_size=60), indent=st.sampled_from([b"", b" ", b"  "]),
       crlf=st.booleans())
def test_the_claimed_output_is_the_output(which: int, slot: bool, gaps: list[bytes], indent: bytes, crlf: bool,
                                          tmp_path: Path) -> None:
    lines = [ln for ln in _VALID[which].split(b"\n") if ln and b'"type":"title"' not in ln]
    body = b""
    for n, line in enumerate(lines):
        body += gaps[n % len(gaps)] + (indent if n % 3 == 1 else b"") + line + (b"\r\n" if crlf and n == 2 else b"\n")
    data = (build_title_slot("t", None, "2026-01-01T00:00:00.000Z") if slot else b"") + body
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    try:
        plan = plan_repair(path)
    except NotASessionError:
        return
    # from bytes in memory the output is put together record by record, whatever is claimed
    in_memory = plan_repair_bytes(data, str(path), mtime_ns=path.stat().st_mtime_ns)
    for p in (plan, in_memory):
        assert (p.output_size, p.output_sha256) == (len(p.output), hashlib.sha256(p.output).hexdigest())
    assert plan.output == in_memory.output
    if not any(gaps[: len(lines)]) and not indent and not crlf:
        assert plan.output == data  # nothing to move: the file is its own repair


def test_records_are_read_and_mended_without_cyclic_collection(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # a record each (Rec) for the whole file: every full collection walked them all; none runs
    # while they are read and mended, and afterwards collection is on again
    import gc

    seen: list[bool] = []
    real = plan_module.read_records

    def watched(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(plan_module, "read_records", watched)
    path = tmp_path / "s.jsonl"
    path.write_bytes(_VALID[0])
    plan_repair(str(path))
    assert seen == [False] and gc.isenabled()
