"""``omp-session sync --from URL --to URL``: copy sessions between any two stores (docs/stores.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click
from rich.console import Console
from rich.markup import escape

from omp_session.ops.sync import SyncItem, SyncReport, sync_urls
from omp_session.store.derived.namespace import check_namespace

from ._errors import command
from ._options import json_option, since_option

__all__ = ["sync"]

_STYLE = {"copied": "green", "appended": "green", "titled": "green", "replaced": "yellow", "kept": "cyan",
          "conflict": "bold red", "failed": "bold red"}


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[int, int, SyncItem], None] | None]:
    """A progress bar on a terminal (stderr), nothing otherwise."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("syncing sessions"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sync", total=None)

        def step(done: int, total: int, item: SyncItem) -> None:
            bar.update(task, completed=done, total=total)

        yield step


@command("sync")
@click.option("--from", "source", required=True, metavar="URL", help="The store to copy from (file:DIR, "
              "sqlite:PATH, postgresql://…, mysql://…, redis://…).")
@click.option("--to", "target", required=True, metavar="URL", help="The store to copy to (its table is created "
              "if needed).")
@click.option("--project", type=click.Path(file_okay=False), help="Only the sessions of this project directory.")
@since_option("Only sessions modified at or after this time (a date, or 7d / 12h / 30m ago).")
@click.option("--dry-run", is_flag=True, help="Say what would move; write nothing.")
@click.option("--prefer", type=click.Choice(["source", "target"]), help="Settle conflicts: source overwrites "
              "the target's version (reported; a file store keeps it as <key>.sync-backup-<time>), target keeps it.")
@click.option("--timeout", metavar="SECONDS", type=click.FloatRange(min=0, min_open=True, max=1e9),
              help="Give up on a server that has not connected and answered its handshake after SECONDS "
              "(default 10, or the URL's timeout= option).")
@click.option("--namespace", metavar="USER@HOST", help="Record the sessions this sync writes as coming from "
              "USER@HOST in the target's search tables (default: this machine's user@host; docs/team.md).")
@click.option("--watch", is_flag=True, help="Keep running: follow the --from folder and push every write to the "
              "target within a second, through restarts of the database (Ctrl-C stops; docs/team.md).")
@click.option("--poll", is_flag=True, help="With --watch: find changes by polling the folder, for network file "
              "systems that send no file events.")
@click.option("-v", "--verbose", is_flag=True, help="A line for every session that moved (default: one summary "
              "line, plus conflicts, failures and overwrites).")
@click.option("-q", "--quiet", is_flag=True, help="No summary: only conflicts, failures and overwrites.")
@json_option("Print the report as JSON.")
def sync(source: str, target: str, project: str | None, since: int | None, dry_run: bool, prefer: str | None,
         timeout: float | None, namespace: str | None, watch: bool, poll: bool, verbose: bool, quiet: bool,
         as_json: bool) -> None:
    """Copy sessions from one store to another, byte for byte, moving only what changed.

    A session that grew moves only its appended bytes; a second run moves nothing. A session
    changed on both sides since the last sync is a conflict: reported, never overwritten (exit
    status 1), unless --prefer settles it. The target keeps the source's modification times.
    Sessions only in the target are left alone. The record of the last sync of each pair of
    stores is kept in $XDG_CACHE_HOME/omp-session/sync/.

    \b
    Examples:
      omp-session sync --from file:~/.omp/agent/sessions \\
          --to postgresql://team@db/omp
      omp-session sync --from redis://cache:6379 --to sqlite:backup.db \\
          --project . --since 7d --dry-run
      omp-session sync --from file:~/.omp/agent/sessions --to file:/mnt/backup \\
          --prefer source -v
      omp-session sync --watch --from file:~/.omp/agent/sessions \\
          --to postgresql://team@db/omp
    """
    if verbose and quiet:
        raise click.UsageError("choose one of -v and -q")
    why = None if namespace is None else check_namespace(namespace)
    if why is not None:
        raise click.UsageError(f"--namespace: {why}")
    if poll and not watch:
        raise click.UsageError("--poll goes with --watch")
    if watch:
        if dry_run or since is not None:
            raise click.UsageError(f"--watch does not take {'--dry-run' if dry_run else '--since'}")
        _watch(source, target, poll=poll, project=project, prefer=prefer, timeout=timeout, namespace=namespace,
               verbose=verbose, quiet=quiet, as_json=as_json)
        return
    with _progress(sys.stderr.isatty() and not as_json and not quiet) as step:
        report = sync_urls(source, target, project=project, since_ms=since, dry_run=dry_run, progress=step,
                           prefer=prefer, timeout=timeout, namespace=namespace)
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        _render(report, verbose=verbose, quiet=quiet)
    if report.derived and "error" in report.derived:  # the copy succeeded: a warning, not a failure
        click.echo(f"omp-session: warning: {report.derived['error']}", err=True)
    sys.exit(1 if report.conflicts or report.count("failed") else 0)


def _always(item: SyncItem) -> bool:
    """What is said even without -v: what needs the user (a conflict, a failure) and what was
    overwritten on purpose (--prefer source)."""
    return item.action in ("conflict", "failed") or item.reason.startswith("conflict")


def _render(report: SyncReport, *, verbose: bool = False, quiet: bool = False, stamp: str = "") -> None:
    """``stamp``: what starts every line (--watch: the time of the push)."""
    console = Console(highlight=False, soft_wrap=True)
    for item in report.items:
        if item.action == "unchanged" or not (verbose or _always(item)):
            continue
        style = _STYLE.get(item.action, "")
        size = f" ({item.bytes} bytes)" if item.bytes else ""
        why = f": {escape(item.reason)}" if item.reason else ""
        console.print(f"{stamp}[{style}]{item.action}[/] {escape(item.target)}{size}{why}")
    counts = ", ".join(f"{report.count(a)} {a}" for a in ("copied", "appended", "titled", "replaced", "unchanged",
                                                          "kept", "conflict", "failed") if report.count(a))
    if quiet:
        return
    verb = "would move" if report.dry_run else "moved"
    console.print(f"{stamp}{len(report.items)} session(s): {counts or 'nothing to do'}; {verb} "
                  f"{report.bytes_moved} bytes")


def _watch(source: str, target: str, *, poll: bool, project: str | None, prefer: str | None,
           timeout: float | None, namespace: str | None, verbose: bool, quiet: bool, as_json: bool) -> None:
    """``sync --watch``: a line (or a JSON object) per push, store errors and reconnections on
    stderr; SIGINT/SIGTERM stop after the write under way (exit 0), a second one at once (130)."""
    import time

    from omp_session.ops.sync_watch import Batch, StopFlag, stop_on_signals, watch_sync
    from omp_session.store.url import parse_store_url

    said = [quiet or as_json]

    def batch(b: Batch) -> None:
        if not said[0]:  # once connected and the first push is done: the URLs without a password
            how = "by polling" if poll else "for file events"
            notice(f"watching {parse_store_url(source).name} {how}, pushing to {parse_store_url(target).name} "
                   "(Ctrl-C stops)")
            said[0] = True
        if as_json:
            when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(b.started)) + f".{int(b.started % 1 * 1000):03d}Z"
            click.echo(json.dumps({"time": when, "full": b.full, **b.report.to_json()}, ensure_ascii=False))
        else:
            _render(b.report, verbose=verbose, quiet=quiet, stamp=time.strftime("%H:%M:%S ", time.localtime(b.started)))
        if b.report.derived and "error" in b.report.derived:
            click.echo(f"omp-session: warning: {b.report.derived['error']}", err=True)
        sys.stdout.flush()

    def notice(text: str) -> None:
        click.echo(f"omp-session: {text}", err=True)

    stop = StopFlag()
    try:
        with stop_on_signals(stop):
            watch_sync(source, target, on_batch=batch, on_notice=notice, stop=stop, poll=poll, project=project,
                       prefer=prefer, timeout=timeout, namespace=namespace)
    except KeyboardInterrupt:
        notice("stopped at once: the write under way may be cut short (the next sync completes it)")
        sys.exit(130)
    if not quiet and not as_json:
        notice("stopped")
