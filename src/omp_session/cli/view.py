"""``omp-session show``, ``tree``, ``context`` and ``demo``: one session, read and drawn (never written)."""

from __future__ import annotations

from pathlib import Path

import click

from omp_session.errors import EntryNotFoundError
from omp_session.model.session import Session, open_session

from . import _render as render
from ._errors import command
from ._options import json_option, session_argument
from ._store import open_one, store_option

__all__ = ["context", "demo", "show", "tree"]

_JSON_HELP = "Print JSON instead of a table."


@command()
@session_argument("path", resolve=True)
@store_option
@json_option(_JSON_HELP)
def show(path: Path, as_json: bool) -> None:
    """Show a session: header, title, size, entry counts, leaf and branches, labels, models,
    tokens and cost (current branch and all), and the problems found while reading it.

    \b
    Example:
      omp-session show latest --json
    """
    from omp_session.format.split import forked
    from omp_session.ops.validate.check import validate

    with open_one(path, usage=True) as s:  # a file that is not a session is one line, exit 1
        # validate's own findings and severities, so both say the same; on a big file found by a
        # child process while this one adds up the usage
        render.show(s, as_json, forked(lambda: validate(s), s.journal.size))


@command()
@session_argument("path", resolve=True)
@store_option
@json_option(_JSON_HELP)
@click.option("--depth", type=click.IntRange(min=0), help="Levels of side branches to show, counted in forks "
              "(0: only the run from the top, its forks marked).")
@click.option("--only-messages", is_flag=True, help="Only messages, summaries and compactions.")
def tree(path: Path, as_json: bool, depth: int | None, only_messages: bool) -> None:
    """Show the entry tree; the branch the session resumes on is marked with * and highlighted.

    A chain of entries stays at one indent. A fork (an entry continued more than once) is marked
    with ◆; its side branches hang below it with ├─ and │, and its last branch (the newest: children
    are in omp's order, by timestamp) continues the run. Compactions and branch summaries are
    marked. Legend: docs/display.md.

    \b
    Example:
      omp-session tree latest --only-messages --depth 1
    """
    with open_one(path) as s:
        render.tree(s, as_json, depth=depth, only_messages=only_messages)


@command()
@session_argument("path", resolve=True)
@store_option
@json_option(_JSON_HELP)
@click.option("--transcript", is_flag=True, help="The display transcript (full history) instead of the "
              "model's context.")
@click.option("--leaf", "leaf_id", help="Build the context at this entry instead of the session's leaf.")
def context(path: Path, as_json: bool, transcript: bool, leaf_id: str | None) -> None:
    """Show exactly the messages omp would send to the model when the session resumes.

    \b
    Example:
      omp-session context latest --leaf 3f813a95 --json
    """
    with open_one(path) as s:
        if leaf_id is not None:
            if s.index_of(leaf_id) is None:
                raise EntryNotFoundError(f"{path}: no entry {leaf_id}")
            s.set_leaf(leaf_id)
        render.context(s, as_json, transcript=transcript)


@command()
def demo() -> None:
    """Show the bundled sample session (written by omp 18.2.3): header, tree and context.

    \b
    Example:
      omp-session demo
    """
    from importlib import resources  # only here: it costs more than the rest of a small show

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
