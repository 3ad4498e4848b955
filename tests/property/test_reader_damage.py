"""Damaged files: the reader never raises and never hangs (hypothesis)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import omp_session

SAMPLE = (Path(__file__).resolve().parents[2] / "src" / "omp_session" / "samples" / "sample.jsonl").read_bytes()
LINES = SAMPLE.split(b"\n")


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    lines = list(LINES)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["truncate", "flip", "delete", "duplicate", "insert", "swap"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, max(len(lines[i]) - 1, 0)))]
        elif op == "flip" and lines[i]:
            k = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:k] + bytes([draw(st.integers(0, 255))]) + lines[i][k + 1:]
        elif op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "insert":
            lines.insert(i, draw(st.binary(max_size=40)))
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    data = b"\n".join(lines)
    return data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data


@settings(max_examples=300, deadline=10_000, suppress_health_check=[HealthCheck.too_slow])
@given(data=damaged())
def test_reader_is_total_on_damaged_files(tmp_path_factory: object, data: bytes) -> None:
    path = Path(str(tmp_path_factory.mktemp("d"))) / "s.jsonl"  # type: ignore[attr-defined]
    path.write_bytes(data)
    with omp_session.open(path) as s:
        entries = s.get_entries()
        assert len(entries) == len(s)
        s.get_branch()
        rows = list(s.get_tree().walk())
        # duplicated roots repeat their subtree (as in omp), but the walk is finite
        assert len(rows) <= (len(entries) + 1) ** 2
        s.labels()
        with contextlib.suppress(omp_session.SessionError):  # omp throws on such shapes too
            json.dumps(s.build_session_context(), default=str)
        for d in s.diagnostics:
            assert d.code and d.message


@settings(max_examples=200, deadline=10_000)
@given(data=st.binary(max_size=300))
def test_random_bytes(tmp_path_factory: object, data: bytes) -> None:
    path = Path(str(tmp_path_factory.mktemp("r"))) / "s.jsonl"  # type: ignore[attr-defined]
    path.write_bytes(data)
    with omp_session.open(path) as s:
        s.get_entries()
        list(s.get_tree().walk())
