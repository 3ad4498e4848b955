"""Review of the streaming export/show/tail/tree commands (issue 16): what happens when the session
fails part-way through the output."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from builders import assistant, entry, invoke, usage, user, write_session
from omp_session.cli import cli
from omp_session.format.reader import Journal


def _session(tmp_path: Path, turns: int = 200) -> Path:
    entries, parent = [], None
    for n in range(turns):
        entries.append(entry(f"u{n}", parent, message=user(f"question {n}")))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n}", usage=usage(n, 1, 0.25))))
        parent = f"a{n}"
    return write_session(tmp_path / "src" / "s.jsonl", entries)


def _reads(monkeypatch: pytest.MonkeyPatch, args: list[str], error: BaseException) -> None:
    """Make the record reads of ``args``' export fail near its end (it has begun writing by then)."""
    calls = 0
    fail_after: int | None = None
    raw = Journal.raw

    def counted(self: Journal, i: int) -> bytes:
        nonlocal calls
        calls += 1
        if fail_after is not None and calls > fail_after:
            raise error
        return raw(self, i)

    monkeypatch.setattr(Journal, "raw", counted)
    assert invoke(cli, "export", *args).exit_code == 0
    fail_after, calls = calls - 3, 0


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_a_read_failing_mid_export_names_the_session_and_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    path = _session(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    _reads(monkeypatch, ["--format", fmt, str(path)], OSError(errno.EIO, "Input/output error"))
    result = invoke(cli, "export", str(path), "-o", str(out_dir / f"export.{fmt}"))
    assert result.exit_code == 1
    assert result.stderr == f"omp-session: {path}: Input/output error\n"  # the input failed, not the output
    assert list(out_dir.iterdir()) == []  # neither the export nor its temporary file


def test_an_interrupted_export_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _session(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    _reads(monkeypatch, ["--format", "md", str(path)], KeyboardInterrupt())
    result = invoke(cli, "export", str(path), "-o", str(out_dir / "export.md"))
    assert result.exit_code == 1  # click's "Aborted!"
    assert list(out_dir.iterdir()) == []
