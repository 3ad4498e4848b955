"""``omp-session export``: a session as Markdown or JSON, on stdout or into a file (atomically)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import click

from omp_session.errors import SessionError
from omp_session.ops.export.formats import export_chunks
from omp_session.ops.export.html import render_html_pieces
from omp_session.ops.export.store_subagents import store_transcripts
from omp_session.ops.export.subagents import FILE_TRANSCRIPTS
from omp_session.store.atomic import check_output, write_new_file

from ._errors import command, os_errors
from ._options import force_option, json_option, output_option, session_argument
from ._store import EVERY_PROJECT, active_store, open_one, resolve_any, store_option

__all__ = ["export", "write_atomically"]


def _warn(message: str) -> None:
    click.echo(f"omp-session: warning: {message}", err=True)


def write_atomically(path: Path, data: bytes, *, force: bool, source: str | None = None) -> None:
    """Write ``data`` to ``path`` without ever leaving half a file or replacing an existing one
    unless ``force`` (omp_session.atomic), nor ``source`` even then; a refusal or failure is a
    one-line SessionError."""
    write_new_file(path, [data], force=force, error=SessionError, source=source, stdout=True)


def _read(pieces: Iterable[bytes], path: str) -> Iterator[bytes]:
    """``pieces``, made while they are written: a failure to read the session names it, not the
    output (whose own write errors are reported as such)."""
    with os_errors(path):
        yield from pieces


_SUFFIXES = {".md": "md", ".markdown": "md", ".json": "json", ".html": "html", ".htm": "html"}


def _format_of(output: Path | None) -> str:
    """The format -o's suffix names, as ``pack`` infers its compression: a usage error when none does."""
    if output is None:
        raise click.UsageError("missing --format (md, json or html): stdout has no suffix to infer it from")
    fmt = _SUFFIXES.get(output.suffix.lower())
    if fmt is None:
        raise click.UsageError(f"cannot tell the format from {click.format_filename(output.name)!r}: "
                               "give --format md, json or html, or an -o ending in .md, .json or .html")
    return fmt


@command()
@session_argument(required=False)
@store_option
@click.option("--format", "fmt", type=click.Choice(["md", "json", "html"]),
              help="md: readable Markdown; json: every record, tree intact (or --lossy); html: a self-contained "
              "offline viewer of the whole tree (docs/export-html.md). Default: what -o's suffix names "
              "(.md, .markdown, .json, .html, .htm); required on stdout.")
@output_option("Write to this file (atomically) instead of stdout.", name="output", dir_okay=False)
@click.option("--leaf", "leaf_id", help="Export the branch ending at this entry instead of the session's leaf.")
@click.option("--all-branches", is_flag=True, help="Markdown: add every other branch, saying where it forks.")
@click.option("--lossy", is_flag=True, help="JSON: a plain transcript of one branch instead of every record.")
@click.option("--no-subagents", is_flag=True, help="html: leave out the subagent transcripts found next to the "
              "session, in its folder or --store (embedded and linked by default; a missing one is a warning, "
              "never a failure).")
@click.option("--site", type=click.Path(file_okay=False), metavar="DIR", help="Write every session of the current "
              "project (--project DIR, --all: every project) as a static site in DIR, browsable from file:// "
              "(docs/serve.md); a second run re-renders only the sessions that changed.")
@click.option("--project", type=click.Path(file_okay=False), metavar="DIR",
              help="--site: the sessions of this project directory.")
@click.option("--root", type=click.Path(file_okay=False), help="--site: the sessions root (default: omp's).")
@force_option("Replace OUTPUT if it exists (--site: write into a non-empty DIR that holds no site).")
@json_option("--site: print the summary as one JSON object.")
def export(session: str | None, fmt: str | None, output: Path | None, leaf_id: str | None, all_branches: bool,
           lossy: bool, no_subagents: bool, site: str | None, project: str | None, root: str | None, force: bool,
           as_json: bool) -> None:
    """Export a session as Markdown, JSON or a self-contained HTML viewer (docs/export.md).

    SESSION is a path, a session id or a unique prefix of one, or 'latest'. Without -o the
    export goes to stdout; with -o an existing file is refused unless --force, and the file is
    written through a temporary file and a rename, so nothing partial is ever left.

    \b
    Examples:
      omp-session export latest --format md --all-branches -o review.md
      omp-session export 0197 --format json --lossy | jq '.messages[].role'
      omp-session export latest --format html -o session.html
      omp-session export --site ~/sessions-site --all
    """
    if site is not None:
        given = [name for name, on in (("--format", fmt), ("-o", output), ("--leaf", leaf_id), ("--all-branches",
                 all_branches), ("--lossy", lossy), ("--no-subagents", no_subagents)) if on]
        _export_site(site, session, given, project, root, force, as_json)
        return
    if session is None:
        raise click.UsageError("Missing argument 'SESSION'.")
    if project is not None or root is not None or as_json:
        raise click.UsageError("--project, --root and --json apply to --site only")
    if fmt is None:
        fmt = _format_of(output)
    if fmt == "html" and all_branches:
        raise click.UsageError("--all-branches applies to md: the html viewer holds every branch")
    if fmt == "json" and all_branches and not lossy:
        raise click.UsageError("--all-branches applies to md: the json export holds every record of every branch")
    if no_subagents and fmt != "html":
        raise click.UsageError("--no-subagents applies to --format html only")
    if lossy and fmt != "json":
        raise click.UsageError("--lossy applies to --format json only")
    if lossy and all_branches:
        raise click.UsageError("--lossy exports one branch: drop --all-branches (the faithful json has them all)")
    if output is not None and os.fspath(output) == "-":
        output = None  # stdout, written as without -o (a reader that leaves early ends it quietly: cli/_pipe.py)
    if output is not None:  # refused before the work: an existing file without --force, a directory...
        check_output(output, force=force, error=SessionError, stdout=True)
    path = resolve_any(session)
    # the Markdown's header sums the usage: kept as the file is read, not read again
    with open_one(path, usage=fmt == "md") as s:  # a file that is not a session: one line, exit 1, nothing written
        pieces: Iterable[bytes]
        if fmt == "html":  # bytes: a big session's entries are copied one by one, never decoded
            # subagent transcripts live in a session's artifacts folder: files, or in a store the
            # keys under the session's own (a file: store's keys are the files), as serve reads them
            active = active_store()
            transcripts = FILE_TRANSCRIPTS if active is None or active[0].kind == "file" else \
                store_transcripts(active[1], os.fspath(path))
            pieces = _read(render_html_pieces(s, leaf=leaf_id, subagents=not no_subagents, on_problem=_warn,
                                              transcripts=transcripts), path)
        else:  # written as it is made: memory stays bounded whatever the session's size
            pieces = _read(export_chunks(s, fmt, leaf=leaf_id, all_branches=all_branches, lossy=lossy), path)
        if output is None:
            for piece in pieces:
                sys.stdout.buffer.write(piece)
            sys.stdout.flush()
            return
        # --force replaces an old export, never the session it was read from
        source = os.path.expanduser(path)
        # (the page's pieces are copies of the file's lines, cheap to make: its writes, overlapped,
        # were a fifth of the time; the other formats' pieces may come from a forked child)
        write_new_file(output, pieces, force=force, error=SessionError,
                       source=source if os.path.exists(source) else None, stdout=True, overlap=fmt == "html")


def _export_site(site: str, session: str | None, given: list[str], project: str | None, root: str | None,
                 force: bool, as_json: bool) -> None:
    """``export --site DIR``: the static site (omp_session.serve.site), its summary on stdout."""
    if session is not None:
        raise click.UsageError("--site writes every session of a project (or --all): drop SESSION")
    if given:
        raise click.UsageError(f"{given[0]} does not apply to --site")
    every = bool(click.get_current_context().meta.get(EVERY_PROJECT))
    if every and project is not None:
        raise click.UsageError("--all and --project: choose one")
    if active_store() is not None:
        raise click.UsageError("--site reads the session files: drop --store")
    from omp_session.paths import sessions_dir
    from omp_session.serve.site import build_site

    cwd = None if every else os.path.abspath(os.path.expanduser(project if project is not None else os.getcwd()))
    tty = sys.stderr.isatty() and not as_json

    def progress(done: int, total: int) -> None:
        if tty and (done == total or done % 25 == 0):
            click.echo(f"\rrendering {done}/{total}", err=True, nl=done == total)

    with os_errors(site):
        report = build_site(site, root if root is not None else sessions_dir(), project=cwd, force=force,
                            progress=progress)
    for problem in report.problems:
        _warn(problem)
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        search = "search index written" if report.search_index else "no search index (too big: use serve)"
        click.echo(f"{report.directory}: {report.written} page(s) written, {report.unchanged} unchanged, "
                   f"{report.removed} removed; {report.sessions} session(s), {search}")
    if report.problems:
        sys.exit(1)  # the site is written; the sessions named above have no page
