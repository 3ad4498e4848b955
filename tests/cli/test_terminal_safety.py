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


@pytest.mark.parametrize("command", [["show"], ["tree"], ["context"], ["tail"], ["tail", "--json"], ["list", "--all"],
                                     ["list", "--all", "--json"], ["export", "--format", "md"], ["show", "--json"]])
def test_a_lone_surrogate_is_printed_escaped_never_a_traceback(tmp_path: Path, command: list[str]) -> None:
    import json
    import os
    import subprocess
    import sys

    agent = tmp_path / "agent"
    bucket = agent / "sessions" / "-w"
    bucket.mkdir(parents=True)
    path = bucket / "2026-01-01T00-00-00-000Z_sur.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"sur","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
                     b'{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
                     b'"message":{"role":"user","content":"bad \\ud800 half","timestamp":1}}\n')
    args = [*command] if command[0] == "list" else [command[0], str(path), *command[1:]]
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-m", "omp_session", *args], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode("utf-8", "replace")
    out = done.stdout.decode("utf-8")  # valid UTF-8 whatever the session held
    if "--json" in command:
        json.loads(out.splitlines()[-1] if command[0] == "tail" else out)


@pytest.mark.parametrize("extra", [[], ["--by", "model"], ["--blocks"], ["--chart", "--by", "model"]])
def test_stats_tables_print_no_control_characters(tmp_path: Path, extra: list[str]) -> None:
    path = tmp_path / "s.jsonl"
    evil = assistant("x", provider="p\x1b]0;pwned\x07", model="m\x1b[2J")
    write_session(path, [entry("a1", None, message=evil)], head=header(id="esc", cwd="/p"))
    result = CliRunner(env={"COLUMNS": "120"}).invoke(cli, ["stats", str(path), *extra])
    assert result.exit_code == 0, result.output
    assert not any(c in result.output for c in "\x1b\x07"), repr(result.output)
