"""``omp-session resume``: the omp command that resumes a session, printed or run in its cwd."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import project_session
from omp_session.cli import cli


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, Path]:
    return project_session(tmp_path, monkeypatch, "my work's dir", "resume me", "ok")


def test_prints_a_shell_line_with_the_cwd_quoted(session: tuple[str, str, Path]) -> None:
    sid, _, work = session
    result = CliRunner().invoke(cli, ["resume", "latest"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"cd {shlex.quote(str(work))} && omp --resume {sid}\n"
    assert shlex.split(result.stdout)[:2] == ["cd", str(work)]


def test_json_and_a_file_outside_its_bucket_is_named_by_path(session: tuple[str, str, Path], tmp_path: Path) -> None:
    sid, path, work = session
    moved = tmp_path / "elsewhere.jsonl"
    moved.write_bytes(Path(path).read_bytes())
    result = CliRunner().invoke(cli, ["resume", sid[:8], "--json"])
    assert json.loads(result.stdout) == {"cwd": str(work), "argv": ["omp", "--resume", sid]}
    result = CliRunner().invoke(cli, ["resume", str(moved), "--json"])
    assert json.loads(result.stdout)["argv"] == ["omp", "--resume", str(moved.resolve())]


def test_exec_runs_omp_in_the_sessions_cwd(session: tuple[str, str, Path], tmp_path: Path) -> None:
    sid, path, work = session
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "omp"
    fake.write_text('#!/bin/sh\nprintf "%s|%s\\n" "$(pwd)" "$*"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "omp_session", "resume", path, "--exec"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{work}|--resume {sid}\n"


def test_errors_are_one_line(session: tuple[str, str, Path], tmp_path: Path) -> None:
    _, path, _ = session
    env = {**os.environ, "PATH": str(tmp_path / "nothing-here")}
    done = subprocess.run([sys.executable, "-m", "omp_session", "resume", path, "--exec"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr == "omp-session: omp is not on PATH: install it, or run the " \
                                                   "printed command where it is\n"
    not_a_session = tmp_path / "x.jsonl"
    not_a_session.write_text('{"type":"message"}\n')
    result = CliRunner().invoke(cli, ["resume", str(not_a_session)])
    assert result.exit_code == 1 and "not a session" in result.stderr
    result = CliRunner().invoke(cli, ["resume", path, "--exec", "--json"])
    assert result.exit_code == 2


def test_exec_refuses_a_cwd_that_is_gone(session: tuple[str, str, Path], tmp_path: Path) -> None:
    _, path, work = session
    os.chdir(tmp_path)
    work.rmdir()
    result = CliRunner().invoke(cli, ["resume", path, "--exec"])
    assert result.exit_code == 1 and "does not exist" in result.stderr and result.stderr.count("\n") == 1
