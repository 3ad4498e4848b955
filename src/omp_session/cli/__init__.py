"""The omp-session command line: a lazy table of commands, each a thin shell over the library.

``omp-session --version`` and the top-level ``--help`` are answered without click when they can
be (cli/_fast.py), and so are ``show``/``tree``/``context`` of one small session (cli/_fast_view.py); otherwise click and the command table load (cli/_group.py), and a command's
module is imported only when that command runs (cli/_lazy.py, docs/cli.md).
"""

from __future__ import annotations

import os
import sys

from ._fast import HELP_ARGS, answer, remember_help

__all__ = ["COMMANDS", "cli", "main"]


def __getattr__(name: str) -> object:
    if name in ("cli", "COMMANDS"):
        from . import _group

        return getattr(_group, name)
    raise AttributeError(f"module 'omp_session.cli' has no attribute {name!r}")


def main() -> None:
    """The command line; a reader that closes stdout early ends it quietly, status 0 (cli/_pipe.py)."""
    if sys.stdout is None:  # started with stdout closed (`>&-`): its output goes nowhere, as click's echo has it
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    try:  # what stdout is, to tell rich's exit on a closed pipe from ours (cli/_pipe.py)
        started: os.stat_result | None = os.fstat(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        started = None
    try:
        _main(sys.argv[1:])
        _flushed()
    except SystemExit as e:
        _flushed()
        if e.code == 1:
            from ._pipe import leave_quietly, rich_gave_up

            if rich_gave_up(started):  # rich's console met the closed pipe: its exit 1 is not ours
                leave_quietly()
        raise
    except BrokenPipeError:
        from ._pipe import leave_quietly, stdout_closed

        if not stdout_closed():
            raise
        leave_quietly()


def _flushed() -> None:
    """Flush stdout before the interpreter does: its failing flush would say so and exit 120.
    No stdout at all (``omp-session ... >&-``: Python's ``sys.stdout`` is None) has nothing to flush."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        from ._pipe import leave_quietly, stdout_closed

        if stdout_closed():
            leave_quietly()
        raise


def _main(argv: list[str]) -> None:
    if answer(argv):
        return
    if argv[:1] in (["show"], ["tree"], ["context"]):
        from ._fast_view import answer_view

        if answer_view(argv):
            return
    import click

    from ._group import cli

    for stream in (sys.stdout, sys.stderr):
        # a lone surrogate (a session may hold one, escaped) cannot be encoded: print its escape
        # (in JSON output that is the valid \udXXX escape) rather than die with a traceback
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")

    if argv in HELP_ARGS:
        # rendered by click exactly as `cli --help` would, then kept for the next time (cli/_fast.py)
        ctx = click.Context(cli, info_name="omp-session", help_option_names=["-h", "--help"])
        text = ctx.get_help() + "\n"
        click.echo(text, nl=False)
        remember_help(text)
        return
    cli(prog_name="omp-session")
