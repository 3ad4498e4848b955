"""The omp-session command line: a thin shell over the library (parse, one call, render)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import click

from omp_session.catalog.resolve import resolve_session
from omp_session.errors import EntryNotFoundError, SessionError
from omp_session.model.session import Session, open_session

from . import _render as render
from ._store import active_store, open_stored, resolve_in_store, store_option
from .blobs import blobs as blobs_command
from .cat import cat as cat_command
from .export import export as export_command
from .list import list_command
from .pack import pack as pack_command
from .pack import unpack as unpack_command
from .redact import redact as redact_command
from .repair import repair as repair_command
from .search import index_command, search_command
from .size import externalize as externalize_command
from .size import prune as prune_command
from .size import size as size_command
from .stats import stats_command
from .sync import sync as sync_command
from .tail import tail as tail_command
from .validate import validate as validate_command

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(fn)


def session_argument(fn: F) -> F:
    """SESSION: a path, a session id or a unique prefix of one, or ``latest`` (resolve.py)."""
    return click.argument("path", metavar="SESSION", callback=_resolve)(fn)


def _resolve(ctx: click.Context, param: click.Parameter, value: str) -> Path:
    try:
        store = active_store()  # --store is eager: it is open before SESSION is resolved
        if store is not None:
            return Path(resolve_in_store(value, *store))
        return Path(resolve_session(value))
    except SessionError as e:
        click.echo(f"omp-session: {e}", err=True)
        sys.exit(1)


def handle_errors(fn: F) -> F:
    """One place maps library errors to a one-line message and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SessionError as e:
            click.echo(f"omp-session: {e}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="omp-session")
def cli() -> None:
    """Read and check the session files of the omp (oh-my-pi) coding agent.

    PATH is a session file (.jsonl). Reading never changes the file.
    """


@cli.command()
@session_argument
@store_option
@json_option
@handle_errors
def show(path: Path, as_json: bool) -> None:
    """Show a session: header, title, size, entry counts, leaf and branches, labels, models,
    tokens and cost (current branch and all), and the problems found while reading it.

    \b
    Example:
      omp-session show latest --json
    """
    with open_stored(path) as s:
        render.show(s, as_json)


@cli.command()
@session_argument
@store_option
@json_option
@click.option("--depth", type=click.IntRange(min=1), help="Show only this many levels.")
@click.option("--only-messages", is_flag=True, help="Only messages, summaries and compactions.")
@handle_errors
def tree(path: Path, as_json: bool, depth: int | None, only_messages: bool) -> None:
    """Show the entry tree; the branch the session resumes on is marked with * and highlighted.

    Children are in omp's order (by timestamp); compactions and branch summaries are marked.

    \b
    Example:
      omp-session tree latest --only-messages --depth 30
    """
    with open_stored(path) as s:
        render.tree(s, as_json, depth=depth, only_messages=only_messages)


@cli.command()
@session_argument
@store_option
@json_option
@click.option("--transcript", is_flag=True, help="The display transcript (full history) instead of the "
              "model's context.")
@click.option("--leaf", "leaf_id", help="Build the context at this entry instead of the session's leaf.")
@handle_errors
def context(path: Path, as_json: bool, transcript: bool, leaf_id: str | None) -> None:
    """Show exactly the messages omp would send to the model when the session resumes.

    \b
    Example:
      omp-session context latest --leaf 3f813a95 --json
    """
    with open_stored(path) as s:
        if leaf_id is not None:
            if s.index_of(leaf_id) is None:
                raise EntryNotFoundError(f"{path}: no entry {leaf_id}")
            s.set_leaf(leaf_id)
        render.context(s, as_json, transcript=transcript)


@cli.command()
@handle_errors
def demo() -> None:
    """Show the bundled sample session (written by omp 18.2.3): header, tree and context.

    \b
    Example:
      omp-session demo
    """
    ref = resources.files("omp_session") / "samples" / "sample.jsonl"
    with resources.as_file(ref) as sample:
        click.echo(f"Sample session: {sample}\n")
        s: Session
        with open_session(sample) as s:
            render.show(s, False)
            click.echo()
            render.tree(s, False)
            click.echo()
            render.context(s, False, transcript=False)


cli.add_command(list_command)
cli.add_command(cat_command)
cli.add_command(tail_command)
cli.add_command(validate_command)
cli.add_command(repair_command)
cli.add_command(export_command)
cli.add_command(redact_command)
cli.add_command(pack_command)
cli.add_command(unpack_command)
cli.add_command(search_command)
cli.add_command(index_command)
cli.add_command(blobs_command)
cli.add_command(size_command)
cli.add_command(externalize_command)
cli.add_command(prune_command)
cli.add_command(stats_command)
cli.add_command(sync_command)


def main() -> None:
    cli(prog_name="omp-session")
