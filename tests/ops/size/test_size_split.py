"""size on a large file accounts for the later entries in a forked child (doctor._part /
_take_in): the report must be the one-process report, figure for figure, in the same order
(tables, the longest tool outputs with their ties, the dry run's distinct blobs)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from forking import dying_children, one_process, split_watched
from omp_session.errors import SessionError
from omp_session.ops.size import doctor


def _reports(path: Path, top: int = 10) -> tuple[dict[str, Any], dict[str, Any], list[int]]:
    """(one process, split, one item per child asked for: this pid if its part was done here)."""
    with one_process():
        alone = doctor.analyze_size(path, archive=False, top=top).to_json()
    with split_watched(doctor) as asked:
        two = doctor.analyze_size(path, archive=False, top=top).to_json()
    return alone, two, asked


@pytest.mark.parametrize("top", [1, 3, 10, 1000])
def test_a_generated_session_is_accounted_the_same(large: Path, top: int) -> None:
    # inline images (some the same picture twice: one blob), long tool outputs, thinking, branches
    alone, two, asked = _reports(large, top)
    assert asked and os.getpid() not in asked
    assert two == alone
    assert alone["externalize"]["images_moved"] > 0 and alone["long_tool_outputs"]["count"] > 0


def test_the_corpus_is_accounted_the_same(make_corpus: Callable[[int, int], Path]) -> None:
    split_any = 0
    for path in sorted(make_corpus(3, 60).glob("*.jsonl")):
        try:
            alone, two, asked = _reports(path)
        except SessionError as e:  # what a file refuses (before any split), it refuses split too
            with split_watched(doctor), pytest.raises(type(e)):
                doctor.analyze_size(path, archive=False)
            continue
        assert two == alone, path.name
        assert os.getpid() not in asked
        split_any += bool(asked)
    assert split_any >= 30


def test_ties_among_the_longest_keep_file_order(tmp_path: Path) -> None:
    import json

    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": "/w"})]
    parent = None
    for k in range(30):  # tool results of three sizes, in both parts
        out = "x" * (20_000 + 1000 * (k % 3))
        lines.append(json.dumps({"type": "message", "id": f"r{k}", "parentId": parent,
                                 "timestamp": "2026-01-01T00:00:00.000Z",
                                 "message": {"role": "toolResult", "toolName": f"t{k % 4}", "toolCallId": f"c{k}",
                                             "content": [{"type": "text", "text": out}]}}, separators=(",", ":")))
        parent = f"r{k}"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for top in (2, 5, 12, 40):
        alone, two, asked = _reports(path, top)
        assert asked and two == alone
        assert len(alone["long_tool_outputs"]["longest"]) == min(top, 30)


def test_images_in_both_parts_are_counted_once_each(tmp_path: Path) -> None:
    # the same picture in both parts (one blob), small and unpadded images left inline, snapcompact
    # frames left inline: each of the dry run's counts crosses the split
    from test_externalize import BIG, SMALL, UNPADDED, b64, image

    import builders
    from builders import header, line, user

    frames = {"frames": [{"data": b64(1500, 11), "mimeType": "image/png"}]}
    entries: list[dict[str, Any]] = []
    parent = None
    for k in range(40):
        kind = k % 4
        if kind == 0:
            e = builders.entry(f"i{k}", parent, message=user([image(BIG), image(SMALL, "image/jpeg")]))
        elif kind == 1:
            e = builders.entry(f"i{k}", parent, message=user([image(UNPADDED), image(b64(1400, 100 + k))]))
        elif kind == 2:
            e = builders.entry(f"i{k}", parent, type="custom", customType="x", data=frames)
        else:
            e = builders.entry(f"i{k}", parent, message=user([{"type": "text", "text": "t" * 40}]))
        entries.append(e)
        parent = f"i{k}"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([line(header("0199aaaa-0000-7000-8000-000000000003")), *map(line, entries)]) + "\n")
    alone, two, asked = _reports(path)
    assert asked and os.getpid() not in asked
    assert two == alone
    ext = alone["externalize"]
    assert ext["below_threshold"] == 10 and ext["kept_noncanonical"] == 10 and ext["kept_frames"] == 10
    assert ext["blobs"] == 1 + 10  # BIG once, and each distinct picture


def test_pruning_is_planned_in_the_child(large: Path, tmp_path: Path) -> None:
    # what pruning saves is the child's work: this process only waits for it (and plans it itself
    # only where no child was made, or the child died)
    where = tmp_path / "planned-in"
    real = doctor.plan_prune

    def plan(s: Any) -> Any:
        with open(where, "a") as f:
            f.write(f"{os.getpid()}\n")
        return real(s)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(doctor, "plan_prune", plan)
        with one_process():
            alone = doctor.analyze_size(large, archive=False).to_json()
        assert where.read_text().split() == [str(os.getpid())]
        where.unlink()
        with split_watched(doctor) as asked:
            two = doctor.analyze_size(large, archive=False).to_json()
        assert asked and os.getpid() not in asked
        assert where.read_text().split() not in ([], [str(os.getpid())])
        assert str(os.getpid()) not in where.read_text().split()
        where.unlink()
        with dying_children(doctor):
            died = doctor.analyze_size(large, archive=False).to_json()
        assert where.read_text().split() == [str(os.getpid())]
    assert two == alone == died
    assert alone["prune_saves"] > 0
