"""Every read command of the CLI on one file, in process through click's CliRunner.

``catch_exceptions=False`` lets any exception out of a command, so a traceback the user would
see is a failure here; so is an exit status other than 0, 1 or 2, a "Traceback" in the output,
or a command still running after the alarm.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click
from click.testing import CliRunner

from .views import Failure, Slow, alarm, signature_of

__all__ = ["COMMANDS", "check_cli", "place"]

COMMANDS: dict[str, list[str]] = {
    "show": ["show", "{path}"],
    "tree": ["tree", "{path}"],
    "context": ["context", "{path}"],
    "context --transcript": ["context", "{path}", "--transcript"],
    "cat": ["cat", "{path}"],
    "cat --all": ["cat", "{path}", "--whole-file"],  # label kept: saved signatures name it
    "tail": ["tail", "{path}"],
    "export md": ["export", "{path}", "--format", "md", "-o", "{out}/export.md", "--force"],
    "export json": ["export", "{path}", "--format", "json", "-o", "{out}/export.json", "--force"],
    "export html": ["export", "{path}", "--format", "html", "-o", "{out}/export.html", "--force"],
    "stats": ["stats", "{path}"],
    "validate": ["validate", "{path}"],
    "size": ["size", "{path}"],
    "search": ["search", "e* OR a*", "--root", "{root}", "--index", "{out}/index.sqlite"],
}


def place(work: Path, data: bytes, name: str = "fuzz") -> Path:
    """Write ``data`` as a session of a project bucket under ``work/root`` (so ``search --root``
    finds it); returns its path."""
    path = work / "root" / "-tmp-fuzz" / f"2026-01-01T00-00-00-000Z_{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    (work / "out").mkdir(exist_ok=True)
    return path


def check_cli(path: Path, work: Path, timeout: float, *, only: str | None = None) -> list[Failure]:
    from omp_session import cli as package

    cli = cast(click.Command, package.cli)  # the lazy module attribute is typed as object
    failures: list[Failure] = []
    values = {"path": str(path), "out": str(work / "out"), "root": str(work / "root")}
    runner = CliRunner()
    for name, args in COMMANDS.items():
        if only is not None and name != only:
            continue
        call = f"cli {name}"
        try:
            with alarm(timeout):
                result = runner.invoke(cli, [a.format(**values) for a in args], catch_exceptions=False)
        except (Exception, Slow) as e:
            failures.append(signature_of(call, e))
            continue
        if result.exit_code not in (0, 1, 2):
            failures.append(Failure(call, f"exit {result.exit_code}", "", result.stderr[-300:]))
        elif "Traceback (most recent call last)" in result.stderr + result.stdout:
            failures.append(Failure(call, "traceback printed", "", result.stderr[-300:]))
    return failures
