"""The one place where a library error becomes what the user sees (DESIGN.md, "Errors").

Every command is a :class:`Command` (or a :class:`Group`), made with :func:`command` /
:func:`group`; both parse and run under :func:`reported`, so no command catches
``SessionError`` itself and nothing meant for a user ends as a traceback:

    StatsOptionError          a bad option value: a usage error, as click reports its own (exit 2)
    any other SessionError    ``omp-session: <message>`` on stderr, exit 1
    click's UsageError        one line too, ``omp-session CMD: <message> (see 'omp-session CMD --help')``,
                              exit 2 (click's own report is three lines: usage, hint, error)
    a closed stdout           (``cmd | head -1``) nothing on stderr, exit 0 (cli/_pipe.py)

Parsing is covered as well as running: ``--store URL`` opens the store and SESSION is resolved
while the command line is parsed. Commands that refuse on their own (an output that exists
without ``--force``, ...) raise a ``SessionError`` with the message.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from omp_session.errors import SessionError, StatsOptionError

from ._pipe import leave_quietly, stdout_closed
from ._report import error_line

__all__ = ["Command", "Group", "OneLineUsageError", "command", "group", "json_fields_args", "one_line", "os_errors",
           "print_help", "reported"]


class OneLineUsageError(click.UsageError):
    """A usage error told in one line that names the command and where its help is."""

    def show(self, file: Any = None) -> None:
        where = self.ctx.command_path if self.ctx is not None else "omp-session"
        hint = f" (see '{where} --help')" if self.ctx is not None else ""
        # click lists a choice's values one a line ("Choose from:\n\tbash,\n\tzsh"): one line here
        message = re.sub(r"\s*\n\s*", " ", self.format_message().strip()).rstrip(".")
        click.echo(f"{where}: {message}{hint}", file=file, err=file is None)


def print_help(ctx: click.Context) -> NoReturn:
    """A group given no subcommand: its help on stdout, exit 0 (as ``gh`` and ``gh pr`` do)."""
    click.echo(ctx.get_help(), color=ctx.color)
    ctx.exit(0)


def one_line(error: click.UsageError) -> OneLineUsageError:
    if isinstance(error, OneLineUsageError):
        return error
    return OneLineUsageError(error.format_message(), error.ctx)  # exit status 2, as every UsageError


@contextmanager
def reported(ctx: click.Context) -> Iterator[None]:
    """Run a command's parsing or body: library errors become a line and an exit status."""
    try:
        yield
    except StatsOptionError as e:  # a value the library refused, not a file problem
        raise OneLineUsageError(str(e), ctx) from None
    except click.UsageError as e:
        raise one_line(e) from None
    except SessionError as e:
        click.echo(error_line(e), err=True)
        sys.exit(1)
    except BrokenPipeError:  # `cat S | head -1`: the reader has all it wanted (cli/_pipe.py)
        if not stdout_closed():
            raise
        leave_quietly()
    except FileNotFoundError as e:
        # os.getcwd() in a folder removed under the shell (a deleted worktree): the current
        # project is asked for everywhere, and it has no file name to give
        if e.filename is not None or not _cwd_gone():
            raise
        click.echo(error_line(SessionError(
            f"the current directory cannot be read ({e.strerror or e}; was it removed?): run from an existing "
            "folder, or name the session by its path")), err=True)
        sys.exit(1)


def _cwd_gone() -> bool:
    try:
        os.getcwd()
    except OSError:
        return True
    return False


@contextmanager
def os_errors(path: object) -> Iterator[None]:
    """An ``OSError`` a library call lets through becomes a one-line error naming the file (its
    own, else ``path``); the library's ``SessionFileError`` already is one and passes as it is."""
    try:
        yield
    except SessionError:
        raise
    except OSError as e:
        if isinstance(e, BrokenPipeError) and stdout_closed():
            raise  # our own stdout's reader left: not the file's problem (reported ends quietly)
        raise SessionError(f"{e.filename or path}: {e.strerror or e}") from None


def json_fields_args(command: click.Command, args: list[str]) -> list[str]:
    """``--json FIELDS`` / ``--json=FIELDS`` as gh takes them, made ``--json --json-fields FIELDS``.

    ``--json`` alone stays a flag, so ``show --json latest`` keeps meaning what it always did: the
    word after it is taken as FIELDS only when it holds a comma, or when the command takes no
    arguments (where it could be nothing else). Option values and what follows ``--`` are left."""
    from ._options import JSON_FIELDS

    if not any(isinstance(p, click.Option) and JSON_FIELDS in p.opts for p in command.params):
        return args
    takes_value = {o for p in command.params if isinstance(p, click.Option) and not p.is_flag and not p.count
                   for o in p.opts}
    no_arguments = not any(isinstance(p, click.Argument) for p in command.params)
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return out + args[i:]
        if arg.startswith("--json="):
            out += ["--json", JSON_FIELDS, arg.split("=", 1)[1]]
        elif arg == "--json" and i + 1 < len(args) and not args[i + 1].startswith("-") \
                and ("," in args[i + 1] or no_arguments):
            out += ["--json", JSON_FIELDS, args[i + 1]]
            i += 1
        else:
            out.append(arg)
            if arg in takes_value and i + 1 < len(args):  # its value, whatever it looks like
                out.append(args[i + 1])
                i += 1
        i += 1
    return out


class Command(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        with reported(ctx):
            return super().parse_args(ctx, json_fields_args(self, args))

    def invoke(self, ctx: click.Context) -> Any:
        with reported(ctx):
            return super().invoke(ctx)


class Group(click.Group):
    """A group: its errors as a command's; without a subcommand it prints its help and exits 0."""

    command_class = Command
    group_class = type  # a subgroup is a Group too

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        with reported(ctx):
            if not args and self.no_args_is_help and not ctx.resilient_parsing:
                print_help(ctx)
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with reported(ctx):
            return super().invoke(ctx)


def command(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], Command]:
    """``click.command`` making a :class:`Command`."""
    return click.command(name, cls=Command, **attrs)


def group(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], Group]:
    """``click.group`` making a :class:`Group`."""
    return click.group(name, cls=Group, **attrs)
