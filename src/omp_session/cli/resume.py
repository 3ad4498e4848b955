"""``omp-session resume SESSION [--exec]``: the omp command that resumes a session, in its cwd."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import click

from omp_session.errors import SessionError
from omp_session.paths import project_dir_name

from ._errors import command
from ._options import json_option, session_argument
from ._store import open_one

__all__ = ["resume", "resume_argv", "resume_command", "resume_line"]


def resume_command(path: Path) -> tuple[str, list[str]]:
    """(the working directory, omp's argv) that resume the session stored at ``path``."""
    with open_one(path) as s:  # a file that is not a session at all: the words every command uses
        header = s.header
    if header is None:
        raise SessionError(f"{path}: not a session (no session header): omp cannot resume it")
    cwd = header.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        raise SessionError(f"{path}: the header has no working directory (cwd)")
    return cwd, resume_argv(cwd, str(header["id"]), path)


def resume_argv(cwd: str, session_id: str, path: str | os.PathLike[str]) -> list[str]:
    """omp's argv that resumes session ``session_id``, stored at ``path``, from ``cwd``."""
    # omp looks an id up in the bucket of the directory it runs in; a file kept elsewhere (moved,
    # restored, a custom root) is named by its path, which omp takes as it is
    in_bucket = Path(path).parent.name == project_dir_name(cwd)
    return ["omp", "--resume", session_id if in_bucket else str(Path(path).resolve())]


def resume_line(cwd: str, session_id: str, path: str | os.PathLike[str]) -> str:
    """The shell line ``resume`` prints: ``cd <cwd> && omp --resume <id or path>``, quoted for a
    POSIX shell (``search`` prints it under each hit)."""
    return f"cd {shlex.quote(cwd)} && {shlex.join(resume_argv(cwd, session_id, path))}"


@command("resume")
@session_argument("path", resolve=True)
@click.option("--exec", "run", is_flag=True, help="Run omp there instead of printing the command (omp must be on "
              "PATH).")
@json_option("Print {\"cwd\": ..., \"argv\": [...]} instead of a shell line.")
def resume(path: Path, run: bool, as_json: bool) -> None:
    """Print the command that resumes SESSION in omp, in the session's working directory.

    SESSION is a path, a session id or a unique prefix of one, or 'latest' (--all: of every
    project). The line is quoted for a POSIX shell: cd '<cwd>' && omp --resume <id>.

    \b
    Examples:
      omp-session resume latest --all
      eval "$(omp-session resume 0197)"
      omp-session resume 0197 --exec
    """
    if run and as_json:
        raise click.UsageError("--exec runs omp: it prints nothing to give as --json")
    cwd, argv = resume_command(path)
    if as_json:
        import json

        click.echo(json.dumps({"cwd": cwd, "argv": argv}, ensure_ascii=False))
        return
    if not run:
        click.echo(f"cd {shlex.quote(cwd)} && {shlex.join(argv)}")  # resume_line's
        return
    if not os.path.isdir(cwd):
        raise SessionError(f"the session's working directory {cwd} does not exist (any more)")
    program = shutil.which(argv[0])
    if program is None:
        raise SessionError("omp is not on PATH: install it, or run the printed command where it is")
    os.chdir(cwd)
    os.execv(program, argv)  # replaces this process: omp gets the terminal as if typed
