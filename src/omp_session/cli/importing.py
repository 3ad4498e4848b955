"""``omp-session import claude|codex [SOURCE]...``: Claude Code and Codex sessions into omp, as omp's
own importer (``omp --from-claude`` / ``--from-codex``) writes them (docs/import.md).

(The module is not called ``import``: that is a Python keyword.)
"""

from __future__ import annotations

import json
import os
import sys

import click

from omp_session.foreign.batch import Outcome, find_sessions, import_sessions, select_sessions
from omp_session.foreign.sources import Source

from ._errors import command
from ._options import json_option, since_option

__all__ = ["import_command"]

_VERB = {"imported": "imported", "would import": "would import", "already imported": "already imported",
         "changed": "changed", "failed": "FAILED"}


def _line(o: Outcome) -> str:
    i = o.info
    if o.status == "failed":  # the reason names the file (and the line)
        return f"FAILED {i.source} {i.id}: {o.reason}"
    what = f"{_VERB[o.status]} {i.source} {i.id} ({i.path})"
    if o.session and o.status == "imported":
        what += f" -> {o.session} ({o.entries} entries)"
    elif o.status == "would import":
        what += f" -> project {o.cwd} ({o.entries} entries)"
    elif o.reason:
        what += f": {o.reason}"
    return what


def _render(outcomes: list[Outcome], unknown: list[str], verbose: bool) -> None:
    for o in outcomes:
        quiet_kind = o.status in ("already imported",) and not verbose
        if not quiet_kind:
            click.echo(_line(o))
        if o.moved and o.status in ("imported", "would import"):
            click.echo(f"  note: {o.reason}")
        for p in o.problems if (verbose or o.status == "failed") else o.problems[:5]:
            click.echo(f"  warning: {p}")
        if len(o.problems) > 5 and not verbose and o.status != "failed":
            click.echo(f"  ... {len(o.problems) - 5} more warning(s) (-v shows them)")
    for message in unknown:
        click.echo(f"FAILED {message}", err=True)
    counts = {s: sum(o.status == s for o in outcomes) for s in _VERB}
    said = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    click.echo(f"{len(outcomes)} session(s): {said or 'nothing to do'}")


@command("import")
@click.argument("kind", type=click.Choice(["claude", "codex"]), metavar="claude|codex")
@click.argument("sources", nargs=-1, metavar="[SOURCE]...")
@click.option("--all", "all_projects", is_flag=True, help="Sessions of every project, not only the current "
              "directory's.")
@click.option("--project", type=click.Path(file_okay=False), help="Only the sessions of this project directory.")
@click.option("--cwd", "cwd_alias", type=click.Path(file_okay=False), hidden=True)  # --project, as list and search name it
@since_option("Only sessions modified at or after this time (a date, or 7d / 12h / 30m ago).")
@click.option("--from", "roots", multiple=True, type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="Read Claude Code / Codex sessions from DIR (its data folder, e.g. a copy of ~/.claude) instead "
                   "of where omp looks; repeatable.")
@click.option("--dry-run", is_flag=True, help="Say what would be imported; write nothing.")
@click.option("--update", is_flag=True, help="Import again, as a new omp session, a source that changed since "
              "it was imported (the earlier import is left as it is).")
@click.option("-v", "--verbose", is_flag=True, help="Every warning, and the sessions imported before.")
@json_option("Print one JSON object: a report per session and the counts.")
def import_command(kind: str, sources: tuple[str, ...], all_projects: bool, project: str | None,
                   cwd_alias: str | None, since: int | None, roots: tuple[str, ...], dry_run: bool, update: bool,
                   verbose: bool, as_json: bool) -> None:
    """Import Claude Code or Codex sessions into omp, exactly as omp's own importer does.

    Each session becomes a new omp session in its project's folder, with the entries, ids and
    foreign_session_import record omp's --from-claude / --from-codex writes; a session
    whose project directory is gone lands in the current directory's, as in omp. SOURCE is a
    session file, a session id or a unique prefix of one; without SOURCE, the sessions of the
    current directory's project (--project DIR: that one's; --all: every project's). Sources are
    found where omp looks: $CLAUDE_CONFIG_DIR or ~/.claude, and ~/.codex ($CODEX_HOME is ignored,
    as by omp).

    A second run imports nothing new: what was imported is remembered (source path, size and
    modification time) in $XDG_CACHE_HOME/omp-session/foreign-imports.jsonl. A source that grew
    since is reported and left alone unless --update. No omp session is ever overwritten. Exit
    status 1 when a source could not be imported (the others still are).

    \b
    Examples:
      omp-session import claude --dry-run
      omp-session import claude --all --since 30d
      omp-session import codex 0199a1b2 --project ~/src/api
      omp-session import claude --from /mnt/old-laptop/.claude --all
    """
    project = project or cwd_alias
    if project is not None and all_projects:
        raise click.UsageError("choose one of --project and --all")
    source: Source = "claude" if kind == "claude" else "codex"
    # the project by default, and where a session whose project is gone lands (read first: a folder
    # removed under the shell is one line, cli/_errors.reported)
    here = os.getcwd()
    found = find_sessions(source, [os.path.abspath(r) for r in roots])
    scope = project if project is not None else None if sources or all_projects else here
    chosen, unknown = select_sessions(found, wanted=sources, project=scope, since_ms=since)
    outcomes = list(import_sessions(chosen, fallback_cwd=here, dry_run=dry_run, update=update))
    if as_json:
        counts = {s: sum(o.status == s for o in outcomes) for s in _VERB}
        click.echo(json.dumps({"source": source, "dry_run": dry_run, "counts": counts,
                               "not_found": unknown, "sessions": [o.to_json() for o in outcomes]},
                              ensure_ascii=False, indent=2))
    else:
        _render(outcomes, unknown, verbose)
    sys.exit(1 if unknown or any(o.status == "failed" for o in outcomes) else 0)
