"""tree and redact -o run their pass over the records with cyclic collection paused
(format/gc_pause.py): that is sound only while the pass makes no reference cycle per record,
which would then pile up until the pass ends. Each pass here runs with collection off over a
session of 40 turns and of 400: what the collector finds afterwards must not grow with the
session (a few objects of the setup are fine)."""

from __future__ import annotations

import gc
import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builders import assistant, entry, tool_result, user, write_session
from omp_session.cli import _render
from omp_session.model.session import open_session
from omp_session.ops.redact.rewrite import redact_to

_SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _session(path: Path, turns: int) -> Path:
    es: list[Any] = []
    parent = None
    for n in range(turns):
        call = {"type": "toolCall", "id": f"c{n}", "name": "edit",
                "arguments": {"path": "a.py", "edits": [{"old": "x" * 30, "new": ["y", {"z": n}]}] * 3}}
        es += [entry(f"u{n}", parent, message=user(f"question {n} token={_SECRET}")),
               entry(f"a{n}", f"u{n}", message=assistant([{"type": "text", "text": f"answer {n}"}, call])),
               entry(f"r{n}", f"a{n}", message=tool_result(f"done {n} apiKey: {_SECRET}", call_id=f"c{n}"))]
        parent = f"r{n}"
    return write_session(path, es)


def _left_for_the_collector(run: Callable[[], None]) -> int:
    gc.collect()
    gc.disable()
    try:
        run()
        return gc.collect()
    finally:
        gc.enable()


def _tree(path: Path) -> Callable[[], None]:
    def run() -> None:
        with open_session(path) as s:
            out, sys.stdout = sys.stdout, io.StringIO()
            try:
                _render.tree(s, False)
                assert "edit(" in sys.stdout.getvalue()
            finally:
                sys.stdout = out
    return run


def _redact(path: Path) -> Callable[[], None]:
    def run() -> None:
        out = path.with_suffix(".redacted")
        report = redact_to(path, None, out, force=True)
        assert report is not None and _SECRET not in out.read_text()
    return run


@pytest.mark.parametrize("make", [_tree, _redact], ids=["tree", "redact"])
def test_the_pass_makes_no_cycle_per_record(tmp_path: Path, make: Callable[[Path], Callable[[], None]]) -> None:
    small = _left_for_the_collector(make(_session(tmp_path / "small.jsonl", 40)))
    big = _left_for_the_collector(make(_session(tmp_path / "big.jsonl", 400)))
    assert big <= small + 20, (small, big)
