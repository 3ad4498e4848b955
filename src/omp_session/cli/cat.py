"""``omp-session cat``: the raw records of a session, exactly as they are in the file."""

from __future__ import annotations

import sys

import click

from ._errors import command
from ._options import session_argument
from ._store import open_stored, resolve_any, store_option

__all__ = ["cat"]


@command()
@session_argument()
@store_option
@click.option("--branch", "scope", flag_value="branch", default=True, help="The current branch, root to leaf "
              "(default).")
@click.option("--all", "scope", flag_value="all", help="Every record of the file, in file order, header included.")
@click.option("--type", "types", multiple=True, help="Only entries of this type (repeatable), e.g. message.")
def cat(session: str, scope: str, types: tuple[str, ...]) -> None:
    """Print raw records as JSON lines, byte for byte as stored: safe to pipe into jq.

    SESSION is a path, a session id or a unique prefix of one, or ``latest``.

    \b
    Examples:
      omp-session cat latest --type message | jq .message.role
      omp-session cat 0197 --all > copy.jsonl
    """
    s = open_stored(resolve_any(session))
    out = sys.stdout.buffer
    with s:
        j = s.journal
        records = range(len(j)) if scope == "all" else [k + 1 for k in s.branch_indices()]
        for i in records:
            if types and (i == 0 or s.types[i - 1] not in types):
                continue
            out.write(j.raw(i))
            out.write(b"\n")
    out.flush()
