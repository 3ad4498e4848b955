"""Shell completion: the scripts, command and option names, and SESSION ids."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from tests.builders import assistant, user

from omp_session.cli import cli
from omp_session.format.blobs import MemoryBlobStore
from omp_session.write.manager import SessionManager


def _complete(words: str, cwd: Path, env: dict[str, str]) -> list[str]:
    parts = words.split(" ")
    done = subprocess.run([sys.executable, "-m", "omp_session"], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env, "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1),
                               "_OMP_SESSION_COMPLETE": "bash_complete"})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line]
    return [line.split(",", 1)[1] for line in lines]


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o nosort -F"), ("zsh", "#compdef omp-session"),
                                               ("fish", "complete --no-files --command omp-session")])
def test_the_script_for_each_shell(shell: str, marker: str) -> None:
    result = CliRunner().invoke(cli, ["completion", shell])
    assert result.exit_code == 0 and marker in result.stdout and "_OMP_SESSION_COMPLETE" in result.stdout


def test_commands_options_values_and_session_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent, work = tmp_path / "agent", tmp_path / "work"
    work.mkdir()
    env = {"PI_CODING_AGENT_DIR": str(agent)}
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    sm = SessionManager.create(str(work), blob_store=MemoryBlobStore())
    sm.append_message(user("complete me"))
    sm.append_message(assistant("ok"))
    sm.close()
    sid = sm.get_session_id()
    assert _complete("omp-session sh", work, env) == ["show"]
    assert set(_complete("omp-session s", work, env)) >= {"show", "search", "stats", "size", "sync"}
    assert _complete("omp-session show ", work, env) == ["latest", sid[:8]]
    assert _complete(f"omp-session export {sid[:3]}", work, env) == [sid[:8]]
    assert _complete("omp-session export x --format ", work, env) == ["md", "json", "html"]
    assert "--whole-file" in _complete("omp-session cat x --", work, env)
    assert _complete("omp-session show zzz", work, env) == []


def test_completing_commands_imports_no_command_module() -> None:
    code = ("import sys; from omp_session.cli._group import cli; import click; "
            "items = cli.shell_complete(click.Context(cli), 's'); "
            "assert {'show', 'stats'} <= {i.value for i in items}, items; "
            "print(sorted(m for m in sys.modules if m.startswith('omp_session.cli.') and not m.split('.')[-1].startswith('_')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_help_lists_completion() -> None:
    ctx = click.Context(cli, info_name="omp-session")
    assert "completion" in ctx.get_help()
