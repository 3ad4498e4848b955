"""tail, tree --json, show and export write what they read one entry at a time (issue 16): the output
is the one the whole decoded session gives, and no entry stays decoded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders import assistant, entry, invoke, tool_result, usage, user, write_session
from omp_session.cli import cli
from omp_session.js import codec
from omp_session.model.session import open_session
from omp_session.model.usage import usage_statistics


def _session(tmp_path: Path, turns: int) -> Path:
    entries, parent = [], None
    for n in range(turns):
        entries.append(entry(f"u{n}", parent, message=user(f"question {n}")))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n} é", usage=usage(n, 1, 0.25))))
        entries.append(entry(f"t{n}", f"a{n}", message=tool_result(f"out {n}")))
        parent = f"t{n}"
    # a side branch, so the tree has a fork and the branch is not the whole file
    entries.append(entry("side", "u0", message=user("another way")))
    entries.append(entry("back", parent, message=user("last")))
    return write_session(tmp_path / "s.jsonl", entries)


@pytest.mark.parametrize("turns", [0, 1, 120])  # 120 turns: more rows than one written batch
def test_tree_json_is_one_json_array_as_stringify_writes_it(tmp_path: Path, turns: int) -> None:
    path = _session(tmp_path, turns) if turns else write_session(tmp_path / "e.jsonl", [])
    result = invoke(cli, "tree", "--json", str(path))
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert result.stdout == codec.stringify(rows) + "\n"
    with open_session(path) as s:
        assert sorted(r["id"] for r in rows) == sorted(s.ids)
        assert {r["id"] for r in rows if r["on_branch"]} == {s.ids[k] for k in s.branch_indices()}


@pytest.mark.parametrize("count", [0, 1, 3, 1000])
def test_tail_json_prints_the_end_of_the_branch(tmp_path: Path, count: int) -> None:
    path = _session(tmp_path, 30)
    result = invoke(cli, "tail", "--json", "-n", str(count), str(path))
    assert result.exit_code == 0, result.output
    with open_session(path) as s:
        branch = s.get_branch()
    expected = branch[-count:] if count else []
    assert result.stdout == "".join(codec.stringify(e) + "\n" for e in expected)


def test_tail_says_how_many_entries_it_left_out(tmp_path: Path) -> None:
    path = _session(tmp_path, 30)
    result = invoke(cli, "tail", "-n", "2", str(path))
    with open_session(path) as s:
        hidden = len(s.branch_indices()) - 2
    assert f"{hidden} earlier entries not shown" in result.stdout


def test_tail_counts_the_entries_it_left_out_with_separators(tmp_path: Path) -> None:
    path = _session(tmp_path, 400)
    result = invoke(cli, "tail", "-n", "2", str(path))
    with open_session(path) as s:
        hidden = len(s.branch_indices()) - 2
    assert hidden >= 1000 and f"… {hidden:,} earlier entries not shown" in result.stdout


def test_show_usage_is_the_whole_sessions(tmp_path: Path) -> None:
    path = _session(tmp_path, 40)
    result = invoke(cli, "show", "--json", str(path))
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    with open_session(path) as s:
        assert info["usage"]["all"] == json.loads(json.dumps(s.get_usage_statistics()))
        assert info["usage"]["branch"] == json.loads(json.dumps(usage_statistics(s.get_branch())))


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_export_on_stdout_and_into_a_file_are_the_same_bytes(tmp_path: Path, fmt: str) -> None:
    path = _session(tmp_path, 50)
    out = tmp_path / f"out.{fmt}"
    on_stdout = invoke(cli, "export", "--format", fmt, str(path))
    into_file = invoke(cli, "export", str(path), "-o", str(out))
    assert on_stdout.exit_code == 0 and into_file.exit_code == 0, (on_stdout.output, into_file.output)
    assert out.read_bytes() == on_stdout.stdout_bytes
    from omp_session.ops.export.formats import export

    assert on_stdout.stdout_bytes == export(str(path), fmt).encode()


def test_export_refuses_a_missing_leaf_before_writing(tmp_path: Path) -> None:
    path = _session(tmp_path, 3)
    out = tmp_path / "out.md"
    result = invoke(cli, "export", str(path), "-o", str(out), "--leaf", "nope")
    assert result.exit_code == 1
    assert "nope" in result.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [path]
