"""``size``'s counts read as ``show``'s do: with thousands separators."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import builders
from builders import entry, header, jsonl, stamp, user
from omp_session.cli import cli

run = partial(builders.run, cli)


def test_size_counts_have_thousands_separators(tmp_path: Path) -> None:
    records: list[object] = [header("s1", cwd="/p")]
    records += [entry(f"e{k}", f"e{k - 1}" if k else None, timestamp=stamp(1), message=user(f"q{k}"))
                for k in range(1234)]
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(records))
    code, out, _ = run("size", str(path))
    lines = out.splitlines()
    assert code == 0 and lines[0].endswith(", 1,234 entries")
    rows = {line.split()[0]: line.split()[1] for line in lines if line.startswith("  ") and len(line.split()) > 2}
    assert rows["message"] == rows["user"] == "1,234"


def _forked(tmp_path: Path) -> Path:
    """A session with an abandoned branch: ``size`` suggests pruning it, with a note."""
    records: list[object] = [header("s1", cwd="/p"),
                             entry("a", None, timestamp=stamp(1), message=user("first question " * 20)),
                             entry("b", "a", timestamp=stamp(2), message=user("abandoned " * 50)),
                             entry("c", "a", timestamp=stamp(3), message=user("kept " * 50))]
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(records))
    return path


def test_size_notes_wrap_at_the_terminal_width(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the notes under "what would help" are prose: at a narrow terminal they wrap under their
    # column instead of running past the edge (the commands, which must stay copyable, do not)
    mp = monkeypatch
    path = _forked(tmp_path)
    mp.setenv("COLUMNS", "44")
    code, out, _ = run("size", "--no-archive", str(path))
    assert code == 0
    help_lines = out.split("what would help:\n")[1].splitlines()
    notes = [line for line in help_lines if line.startswith(" " * 15)]
    assert len(notes) >= 2, out  # the prune note took more than one line
    assert all(len(line) <= 44 for line in notes), notes
    assert " ".join(line.strip() for line in notes).startswith("keeps only the current branch; 1 entry on")
    mp.delenv("COLUMNS")
    code, out, _ = run("size", "--no-archive", str(path))  # a pipe: one line per note, as before
    notes = [line for line in out.split("what would help:\n")[1].splitlines() if line.startswith(" " * 15)]
    assert len(notes) == 1 and notes[0].strip().startswith("keeps only the current branch")


@pytest.mark.parametrize("command", ["externalize", "prune"])
def test_output_and_dry_run_together_is_named(tmp_path: Path, command: str) -> None:
    # both given: the error said "give -o OUT, or --dry-run", which the user had just done
    path = _forked(tmp_path)
    more = ["--keep-branch"] if command == "prune" else []
    code, _, err = run(command, str(path), *more, "-o", str(tmp_path / "new.jsonl"), "--dry-run")
    assert code == 2 and "not both" in err
    assert not (tmp_path / "new.jsonl").exists()
    code, _, err = run(command, str(path), *more)
    assert code == 2 and "give -o OUT, or --dry-run" in err and "not both" not in err
