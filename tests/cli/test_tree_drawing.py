"""``tree`` draws a chain as a chain and a fork as a fork (issue 15, item 7); ``--depth`` counts
forks; every entry of a long session is shown at 80 columns."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from builders import assistant, entry, stamp, user, write_session
from omp_session.cli import cli


def _tree(*args: str, columns: int = 80) -> tuple[int, list[str]]:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(cli, ["tree", *args])
    return result.exit_code, result.output.splitlines()


def _msg(i: int, parent: str | None, text: str, role: str = "user") -> dict[str, Any]:
    return entry(f"e{i:07d}", parent, timestamp=stamp(i % 60, f"2026-01-{1 + i // 3600:02d}T00:{i // 60 % 60:02d}"),
                 message=user(text) if role == "user" else assistant(text))


def _linear(tmp_path: Path, n: int) -> Path:
    entries = [_msg(i, f"e{i - 1:07d}" if i else None, f"question {i} " + "words " * 20, "user" if i % 2 == 0
                    else "assistant") for i in range(n)]
    return write_session(tmp_path / "linear.jsonl", entries)


def _forked(tmp_path: Path) -> Path:
    """0-1-2 then a fork at 2: branch A (3, 4, with a second fork at 4: 5 | 6) and branch B (7 and
    its compaction and summary); the session resumes at 9."""
    e = [_msg(0, None, "start"), _msg(1, "e0000000", "answer", "assistant"), _msg(2, "e0000001", "branch here"),
         _msg(3, "e0000002", "left one", "assistant"), _msg(4, "e0000003", "left two"),
         _msg(5, "e0000004", "deep a", "assistant"), _msg(6, "e0000004", "deep b", "assistant"),
         entry("e0000007", "e0000002", type="branch_summary", timestamp=stamp(7), fromId="e0000006",
               summary="tried the left way"),
         entry("e0000008", "e0000007", type="compaction", timestamp=stamp(8), summary="so far",
               shortSummary="short story", firstKeptEntryId="e0000007", tokensBefore=10),
         _msg(9, "e0000008", "right end", "assistant"),
         entry("e0000010", "e0000009", type="label", timestamp=stamp(10), targetId="e0000001", label="marked")]
    return write_session(tmp_path / "forked.jsonl", e)


def _indent(line: str) -> int:
    return re.search(r"[* ] e\d{7} ", line).start()  # type: ignore[union-attr]


def test_a_chain_is_one_vertical_run_and_every_entry_is_shown_at_80_columns(tmp_path: Path) -> None:
    path = _linear(tmp_path, 300)
    code, lines = _tree(str(path))
    rows = [line for line in lines if re.search(r" e\d{7} ", line)]
    assert code == 0 and len(rows) == 300
    assert {_indent(line) for line in rows} == {0}
    assert not any(c in "".join(lines) for c in "├└│")  # nothing looks like a fork
    assert all(len(line) <= 80 for line in lines)
    assert all(line.startswith("* ") for line in rows)  # the whole chain is the resumed branch


def test_a_fork_is_drawn_as_a_fork(tmp_path: Path) -> None:
    code, lines = _tree(str(_forked(tmp_path)))
    assert code == 0
    by_id = {m.group(1): line for line in lines if (m := re.search(r" (e\d{7}) ", line))}
    assert len(by_id) == 11
    assert "◆ fork: 2 branches" in by_id["e0000002"] and "◆" in by_id["e0000004"]
    assert "◆" not in "".join(line for k, line in by_id.items() if k not in ("e0000002", "e0000004"))
    # a run stays at the margin: the last branch of a fork (omp's newest) continues it; the
    # others hang from the fork point with ├─, their own run at one indent behind │
    assert {_indent(by_id[k]) for k in ("e0000000", "e0000001", "e0000002", "e0000007", "e0000008", "e0000009",
                                         "e0000010")} == {0}
    assert by_id["e0000003"].startswith("├─ ") and _indent(by_id["e0000003"]) == 3
    assert by_id["e0000004"].startswith("│  ") and _indent(by_id["e0000004"]) == 3
    assert by_id["e0000005"].startswith("│  ├─ ") and _indent(by_id["e0000005"]) == 6
    assert by_id["e0000006"].startswith("│  ") and _indent(by_id["e0000006"]) == 3
    ids = [m.group(1) for line in lines if (m := re.search(r" (e\d{7}) ", line))]
    assert ids == [f"e{i:07d}" for i in range(11)]  # children in omp's order, each branch whole
    # the resumed branch marked, labels, compactions and branch summaries shown
    on = {k for k, line in by_id.items() if line[_indent(line)] == "*"}
    assert on == {"e0000000", "e0000001", "e0000002", "e0000007", "e0000008", "e0000009", "e0000010"}
    assert "[marked]" in by_id["e0000001"]
    assert "branch_summary: tried the left way" in by_id["e0000007"]
    assert "compaction: short story" in by_id["e0000008"]


def test_depth_counts_forks_not_entries(tmp_path: Path) -> None:
    linear = _linear(tmp_path, 40)
    code, lines = _tree(str(linear), "--depth", "1")
    assert code == 0 and sum(bool(re.search(r" e\d{7} ", line)) for line in lines) == 40
    forked = _forked(tmp_path)
    _, lines = _tree(str(forked), "--depth", "0")
    shown = [m.group(1) for line in lines if (m := re.search(r" (e\d{7}) ", line))]
    assert shown == ["e0000000", "e0000001", "e0000002", "e0000007", "e0000008", "e0000009", "e0000010"]
    assert "◆ fork: 2 branches, 1 below --depth" in next(line for line in lines if " e0000002 " in line)
    _, lines = _tree(str(forked), "--depth", "1")
    shown = [m.group(1) for line in lines if (m := re.search(r" (e\d{7}) ", line))]
    assert "e0000005" not in shown and len(shown) == 10
    result = CliRunner().invoke(cli, ["tree", str(forked), "--json", "--depth", "1"])
    rows = json.loads(result.output)
    assert [r["id"] for r in rows] == shown
    levels = {r["id"]: r["fork_depth"] for r in rows}
    assert (levels["e0000000"], levels["e0000003"], levels["e0000006"], levels["e0000009"]) == (0, 1, 1, 0)
    assert set(rows[0]) == {"id", "depth", "fork_depth", "line", "type", "on_branch", "summary"}
    assert [r["depth"] for r in rows][:5] == [0, 1, 2, 3, 4]  # JSON depth stays the entry's depth


def test_a_long_session_with_many_forks_fits_80_columns(tmp_path: Path) -> None:
    entries, parent = [], None
    for i in range(0, 400, 2):  # a main line where every other entry forks off a one-entry side branch
        entries.append(_msg(i, parent, f"main {i} " + "x" * 90))
        entries.append(_msg(i + 1, f"e{i:07d}", f"side {i} " + "y" * 90, "assistant"))
        parent = f"e{i:07d}"
    entries.append(_msg(400, parent, "the end"))
    path = write_session(tmp_path / "many.jsonl", entries)
    code, lines = _tree(str(path))
    assert code == 0 and all(len(line) <= 80 for line in lines)
    shown = {m.group(1) for line in lines if (m := re.search(r" (e\d{7}) ", line))}
    assert len(shown) == 401
    assert max(_indent(line) for line in lines if re.search(r" e\d{7} ", line)) == 3


def test_side_branches_of_side_branches_keep_a_bounded_indent(tmp_path: Path) -> None:
    # at every c(k) the older child c(k+1) is a side branch and the newer leaf continues the run,
    # so c(k) sits k side branches deep: 40 levels of "│  " would be 120 columns of lead alone
    e: list[dict[str, Any]] = []
    for k in range(40):
        parent = f"c{k - 1:07d}" if k else None
        e.append(entry(f"c{k:07d}", parent, timestamp=stamp(0, f"2026-01-{1 + k // 20:02d}T{k % 20:02d}:00"),
                       message=user(f"step {k}")))
        if k:
            e.append(entry(f"l{k:07d}", parent, timestamp=stamp(30, f"2026-02-{1 + k // 20:02d}T{k % 20:02d}:00"),
                           message=user(f"leaf {k}")))
    code, lines = _tree(str(write_session(tmp_path / "comb.jsonl", e)))
    rows = [line for line in lines if re.search(r" [cl]\d{7} ", line)]
    assert code == 0 and len(rows) == 79
    assert all(len(line) <= 80 for line in lines)
    deepest = next(line for line in rows if " c0000039 " in line)
    assert "…" in deepest and deepest.index(" c0000039 ") < 40, deepest
    counts = [int(m.group(1)) for line in rows if (m := re.search(r"…(\d+)…", line))]
    assert counts and max(counts) == 39 - 3  # c39 is 39 side branches deep: two shown, the middle counted, one drawn


def test_ids_written_twice_along_a_chain_give_a_bounded_tree_and_a_warning(tmp_path: Path) -> None:
    # each id twice under the one before: omp's tree lists every node twice, 2 ** 18 rows in full
    e = [entry(f"d{k:07d}", f"d{k - 1:07d}" if k else None, timestamp=stamp(k % 60), message=user(f"{k}"))
         for k in range(18) for _ in (0, 1)]
    result = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["tree", str(write_session(tmp_path / "twice.jsonl", e))])
    rows = [line for line in result.stdout.splitlines() if re.search(r" d\d{7} ", line)]
    assert result.exit_code == 0
    assert "duplicate ids list some entries under more than one parent" in result.stderr
    assert 100_000 <= len(rows) <= 4 * 36 + 100_000 + 2 * 36
    assert all(len(line) <= 80 for line in result.stdout.splitlines())


def test_the_rows_made_in_two_processes_are_the_rows_made_in_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a big file's rows come a piece each in turn from this process and a forked child
    # (split.interleaved): the same output, whatever the pieces
    from omp_session.format import split

    path = str(_forked(tmp_path))
    forms = [[], ["--json"], ["--only-messages", "--depth", "0"], ["--json", "--only-messages"], ["--depth", "1"]]
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: False)
    alone = [_tree(path, *form) for form in forms]
    children: list[int] = []
    real = split.interleaved
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    monkeypatch.setattr("omp_session.cli._render._ROWS", 2)
    monkeypatch.setattr("omp_session.cli._render.interleaved",
                        lambda pieces, render, size: children.append(len(pieces)) or real(pieces, render, size))
    assert [_tree(path, *form) for form in forms] == alone
    assert len(children) == len(forms) and min(children) >= 2
    assert any("marked" in line for line in alone[0][1]) and alone[1][1][0].startswith("[{")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("columns", ["80", "40", ""])  # ("": no width, nothing cut)
def test_a_row_without_colours_is_the_coloured_row_without_its_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     columns: str) -> None:
    # rows are put together apart when colours are off; they must read as the coloured ones do:
    # a fork point carrying a label (label, then fork mark), summaries, the resumed branch
    path = _forked(tmp_path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry("e0000011", "e0000010", type="label", timestamp=stamp(11), targetId="e0000002",
                                 label="fork  here")) + "\n")
    plain = CliRunner(env={"COLUMNS": columns}).invoke(cli, ["tree", str(path)])
    monkeypatch.setattr("omp_session.cli._style._colour_wanted", lambda: True)
    coloured = CliRunner(env={"COLUMNS": columns}).invoke(cli, ["tree", str(path)])
    assert plain.exit_code == coloured.exit_code == 0
    assert "\x1b[" in coloured.output and "\x1b[" not in plain.output
    assert plain.output == _ANSI.sub("", coloured.output)
    row = next(line for line in plain.output.splitlines() if " e0000002 " in line)
    assert row.endswith(" [fork  here] ◆ fork: 2 branches")  # (a label as it is, on one line)
