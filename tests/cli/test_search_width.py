"""``search`` on a terminal fits every line in its width (the title and the line under it cut, the
snippet wrapped under its indent, the project instead of the file's long path); in a pipe the
lines stay whole and name the file, as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import assistant, entry, header, stamp, user, write_session
from omp_session.cli import cli
from omp_session.cli._style import width

SID = "01a22989-1ccc-77b3-9bc9-2dc4e7a36188"
CWD = "/home/dev/src/a-project-with-a-long-name"


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    words = " ".join(["pagination"] + ["cursor offset limit 世界"] * 30)
    path = root / "--home-dev-src-a-project-with-a-long-name--" / f"2026-05-01T10-00-00-000Z_{SID}.jsonl"
    write_session(path, [entry("u1", None, timestamp=stamp(1), message=user(words)),
                         entry("a1", "u1", timestamp=stamp(2), message=assistant("the pagination bug is fixed"))],
                  head=header(SID, cwd=CWD), slot="Fix the pagination of the sessions list " * 4)
    return root


@pytest.mark.parametrize("cells", [50, 80, 120])
def test_on_a_terminal_every_line_fits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cells: int) -> None:
    root = _root(tmp_path)
    monkeypatch.setenv("COLUMNS", str(cells))
    r = CliRunner().invoke(cli, ["search", "pagination", "--root", str(root), "--index", str(tmp_path / "i.db")])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    # (the resume command is one line to copy, whatever the width)
    assert len(lines) >= 8 and all(width(line) <= cells for line in lines if "resume:" not in line), lines
    assert not any(line.endswith(" ") for line in lines)
    assert lines[0].startswith("1. Fix the pagination") and lines[0].endswith("…")
    assert str(root) not in r.stdout and "session title · session title" not in r.stdout
    if cells >= 80:  # (narrower, the project is cut away first)
        assert CWD[:20] in r.stdout
    assert f"   resume: cd {CWD} && omp --resume {SID}" in lines  # as `omp-session resume` prints it
    # the snippet is all there, wrapped: its words in order once the rows are joined
    snippet = " ".join(line.strip() for line in lines[2:] if not line.strip().startswith(("resume:", "2.", "user", "assistant")))
    assert "pagination" in snippet and "cursor offset limit" in snippet


def test_in_a_pipe_lines_are_whole_and_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _root(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)
    r = CliRunner().invoke(cli, ["search", "pagination", "--root", str(root), "--index", str(tmp_path / "i.db")])
    assert r.exit_code == 0, r.output
    first = r.stdout.splitlines()[0]
    assert first.startswith("1. Fix the pagination") and first.endswith(".jsonl") and str(root) in first


def test_a_session_file_among_the_query_words_gets_a_hint(tmp_path: Path) -> None:
    """Other commands take the session as their argument; search reads every argument as QUERY.
    A word naming a session file is still searched for, and stderr says how to search that file."""
    root = _root(tmp_path)
    path = next(root.rglob("*.jsonl"))
    args = ["--root", str(root), "--index", str(tmp_path / "i.db")]
    r = CliRunner().invoke(cli, ["search", "pagination", str(path), *args])
    assert r.exit_code == 0 and r.stdout == "no matches\n"
    assert r.stderr == (f"omp-session: {path} is searched for as a word of the query; to search that session: "
                        f"--session {path}\n")
    r = CliRunner().invoke(cli, ["search", "pagination", "--session", str(path), *args])
    assert r.exit_code == 0 and "pagination" in r.stdout and r.stderr == ""
    r = CliRunner().invoke(cli, ["search", "pagination", "missing.jsonl", *args])  # not a file: no hint
    assert r.exit_code == 0 and r.stderr == ""
