"""Text from a session never reaches the terminal as control sequences: a title or a message that
holds ESC, BEL, CR or backspace cannot clear the screen, retitle the window or hide a line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import assistant, entry, header, user, write_session
from omp_session.cli import cli

EVIL = "fix \x1b]0;pwned\x07 it\x1b[2J\rhidden\x08\x9b31m"


@pytest.fixture
def evil_session(tmp_path: Path) -> Path:
    path = tmp_path / "sessions" / "-p-" / "2026-01-01T00-00-00-000Z_0197aaaa-0000-7000-8000-000000000001.jsonl"
    records = [entry("a1", None, message=user(EVIL)), entry("a2", "a1", message=assistant(EVIL))]
    write_session(path, records, head=header(id="0197aaaa-0000-7000-8000-000000000001", cwd="/p", title=EVIL))
    return path


@pytest.mark.parametrize("command", [["show"], ["tree"], ["context"], ["context", "--transcript"]])
def test_views_print_no_control_characters(evil_session: Path, command: list[str]) -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [*command, str(evil_session)])
    assert result.exit_code == 0, result.output
    assert not any(c in result.output for c in "\x1b\x07\r\x08\x9b"), repr(result.output)
    assert "pwned" in result.output  # shown, made harmless


def test_list_prints_no_control_characters(evil_session: Path) -> None:
    root = evil_session.parents[1]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["list", "--all", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert not any(c in result.output for c in "\x1b\x07\r\x08\x9b"), repr(result.output)
