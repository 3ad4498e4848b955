"""The omp-session command line: a lazy table of commands, each a thin shell over the library.

``omp-session --version`` and the top-level ``--help`` are answered without click when they can
be (cli/_fast.py), and so are ``show``/``tree``/``context`` of one small session (cli/_fast_view.py); otherwise click and the command table load (cli/_group.py), and a command's
module is imported only when that command runs (cli/_lazy.py, docs/cli.md).
"""

from __future__ import annotations

import sys

from ._fast import HELP_ARGS, answer, remember_help

__all__ = ["COMMANDS", "cli", "main"]


def __getattr__(name: str) -> object:
    if name in ("cli", "COMMANDS"):
        from . import _group

        return getattr(_group, name)
    raise AttributeError(f"module 'omp_session.cli' has no attribute {name!r}")


def main() -> None:
    argv = sys.argv[1:]
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
