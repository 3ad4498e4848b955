"""validate's entry pass in two processes (entries.scan_entries on a large file): a forked child
checks the later blocks, and the report must be exactly the one-process report: every finding, in
order, with the same caps per code."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from forking import dying_children, one_process, split_watched
from omp_session.ops.validate import entries as validate_entries
from omp_session.ops.validate import report as validate_report
from omp_session.ops.validate.check import validate

DATA = Path(__file__).parents[2] / "data" / "validate"
BLOBS = DATA / "blobs"


def _key(d: Any) -> tuple[Any, ...]:
    return (d.code, d.severity, d.line, d.offset, d.entry_id, d.path, d.message)


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, block: int = 300) -> tuple[list[Any], list[Any], list[int]]:
    """(one process, two processes, a list with one item per second part handed to a child, that
    item this process's pid if the part was checked here after all) for ``path``, with blocks of
    ``block`` bytes so that a small file has several."""
    monkeypatch.setattr(validate_entries, "_BLOCK", block)
    with one_process():
        alone = [_key(d) for d in validate(path, blobs_dir=BLOBS)]
    with split_watched(validate_entries) as pids:
        two = [_key(d) for d in validate(path, blobs_dir=BLOBS)]
    return alone, two, pids


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.name)
def test_fixtures_report_the_same_in_two_processes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    alone, two, pids = _both(path, monkeypatch)
    assert two == alone
    assert os.getpid() not in pids  # the second part was checked in a child, when there was one


def test_the_generated_corpus_reports_the_same(make_corpus: Callable[[int, int], Path],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(make_corpus(11, 60).glob("*.jsonl"))
    assert len(files) >= 50
    split_any = 0
    for path in files:
        alone, two, pids = _both(path, monkeypatch, block=2000)
        assert two == alone, path.name
        split_any += bool(pids)
    assert split_any >= 40  # most files had several blocks, so most were split


def _session(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in (header, *entries)))
    return p


def _entry(k: int, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": f"e{k}", "parentId": f"e{k - 1}" if k else None,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": f"m{k}"}, **extra}


@pytest.mark.parametrize("cap", [1, 3, 7, 15])
def test_caps_per_code_count_both_parts_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int) -> None:
    # an unknown entry type in every other entry, a bad timestamp in every third: findings of two
    # codes on both sides of the split, some parts over the cap, some not
    entries = []
    for k in range(60):
        e = _entry(k)
        if k % 2:
            e["type"] = "not_a_type"
        if k % 3 == 0:
            e["timestamp"] = "yesterday"
        entries.append(e)
    path = _session(tmp_path, entries)
    monkeypatch.setattr(validate_report, "MAX_PER_CODE", cap)
    alone, two, pids = _both(path, monkeypatch)
    assert pids and os.getpid() not in pids
    assert two == alone
    assert any("more findings of this kind are not listed" in k[-1] for k in alone)


def test_the_first_invalid_utf8_byte_is_the_files_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path, [_entry(k) for k in range(40)])
    data = path.read_bytes()
    for marker in (b'"m5"', b'"m35"'):  # one in each part
        data = data.replace(marker, marker[:2] + b"\xff" + marker[2:])
    path.write_bytes(data)
    alone, two, pids = _both(path, monkeypatch)
    assert pids and two == alone
    assert any(k[0] == "invalid-utf8" for k in alone)


def test_a_child_that_dies_leaves_the_report_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path, [_entry(k, **({"type": "odd"} if k % 4 == 0 else {})) for k in range(40)])
    monkeypatch.setattr(validate_entries, "_BLOCK", 300)
    with one_process():
        alone = [_key(d) for d in validate(path, blobs_dir=BLOBS)]
    with dying_children(validate_entries):
        assert [_key(d) for d in validate(path, blobs_dir=BLOBS)] == alone


def test_a_code_found_only_in_the_second_part_over_its_cap_is_summed(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [_entry(k, **({"timestamp": "yesterday"} if k >= 40 else {})) for k in range(60)]
    path = _session(tmp_path, entries)
    monkeypatch.setattr(validate_report, "MAX_PER_CODE", 3)
    alone, two, pids = _both(path, monkeypatch)
    assert pids and os.getpid() not in pids
    assert two == alone
    assert sum("more findings of this kind are not listed" in k[-1] for k in alone) == 1


def test_reused_call_ids_keep_their_order_across_the_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # providers reuse "call_0" turn after turn: calls in both parts, none answered, the branch goes
    # on after each, so each is reported, in file order
    entries = []
    for k in range(40):
        e = _entry(k)
        if k % 5 == 0:
            e["message"] = {"role": "assistant", "content": [{"type": "toolCall", "id": "call_0", "name": "x"}],
                            "usage": {"cost": {"total": 1}}, "stopReason": "toolUse"}
        entries.append(e)
    path = _session(tmp_path, entries)
    alone, two, pids = _both(path, monkeypatch)
    assert pids and os.getpid() not in pids
    assert two == alone
    assert sum(k[0] == "tool-call-dangling" for k in alone) >= 6


def test_the_entry_pass_runs_without_cyclic_collection_and_restores_it(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # what the pass collects (a list per tool call id) is walked by every full collection: none
    # runs during the pass, here or in the child; afterwards collection is on again
    import gc

    path = _session(tmp_path, [_entry(k) for k in range(40)])
    seen: list[tuple[int, bool]] = []
    scan = validate_entries._scan_blocks

    def watched(*args: Any) -> None:
        seen.append((os.getpid(), gc.isenabled()))
        scan(*args)

    monkeypatch.setattr(validate_entries, "_scan_blocks", watched)
    monkeypatch.setattr(validate_entries, "_BLOCK", 300)
    with split_watched(validate_entries) as pids:
        validate(path, blobs_dir=BLOBS)
    assert pids and os.getpid() not in pids  # (the child's part: it inherits the pause)
    assert seen == [(os.getpid(), False)]
    assert gc.isenabled()
