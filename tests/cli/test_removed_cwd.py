"""A command run from a directory that was removed under the shell (a deleted worktree) says so in
one line: `os.getcwd()` raises there, and every command that looks for the current project's
sessions ended in a FileNotFoundError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("args", [["list"], ["show", "latest"], ["stats"], ["tree", "latest"],
                                  ["context", "latest"], ["tail", "latest"], ["size", "latest"]],
                         ids=" ".join)
def test_a_removed_current_directory_is_one_line(tmp_path: Path, args: list[str]) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    # a child started in the folder, which is removed before it asks for its cwd
    script = (f"import os, sys; os.rmdir({str(gone)!r}); sys.argv = ['omp-session', *{args!r}]; "
              "from omp_session.cli import main; main()")
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], cwd=gone, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("omp-session: the current directory cannot be read"), done.stderr
    assert len(done.stderr.splitlines()) == 1
