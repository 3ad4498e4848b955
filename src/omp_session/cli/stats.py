"""``omp-session stats [SESSION...|--all]``: tokens and cost by session, day, week, month, model,
provider or project (issue 8; docs/stats.md). A thin shell over :func:`omp_session.stats.stats`."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click
from rich.bar import Bar
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from omp_session.catalog.resolve import resolve_session
from omp_session.errors import SessionError
from omp_session.ops.stats.group import GROUPINGS, Group, Totals, zone_name
from omp_session.ops.stats.html import render_html
from omp_session.ops.stats.report import StatsCache, StatsReport, stats
from omp_session.store.atomic import check_output, write_new_file

from ._errors import command
from ._options import force_option, json_option, output_option, session_argument
from ._store import active_store, resolve_in_store, store_option

__all__ = ["CSV_FIELDS", "stats_command"]

_SESSION_FIELDS = ("path", "id", "title", "cwd", "created")
_TOTAL_FIELDS = ("requests", "input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
CSV_FIELDS = ("key", *_SESSION_FIELDS, *(f"billed_{f}" for f in _TOTAL_FIELDS),
              *(f"current_{f}" for f in _TOTAL_FIELDS))
_PROGRESS_FROM = 20  # files; fewer read too fast to need a bar
_FORMATS = {".html": "html", ".htm": "html", ".json": "json", ".csv": "csv"}  # -o OUT: by its suffix


@contextmanager
def _progress() -> Iterator[Callable[[int, int], None] | None]:
    """A bar on stderr while files are read, only on a terminal and only for many files."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("reading sessions"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True)
    task: list[Any] = []

    def update(done: int, total: int) -> None:
        if total < _PROGRESS_FROM:
            return
        if not task:
            bar.start()
            task.append(bar.add_task("read", total=total))
        bar.update(task[0], completed=done)

    try:
        yield update
    finally:
        if task:
            bar.stop()


@command("stats")
@session_argument("sessions", many=True)
@store_option
@click.option("--all", "all_sessions", is_flag=True, help="Every session of every project under the root.")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path),
              help="Sessions root (default: omp's, from PI_CODING_AGENT_DIR / ~/.omp).")
@click.option("--by", type=click.Choice(GROUPINGS), default="session", show_default=True, help="One row per ...")
@click.option("--since", metavar="WHEN", help="Only usage at or after this date (YYYY-MM-DD) or ISO time, in --tz, or this "
              "long ago (7d, 12h, 30m).")
@click.option("--until", metavar="WHEN", help="Only usage before this ISO time or age (7d, 12h, 30m), or through the end of this "
              "date (YYYY-MM-DD).")
@click.option("--tz", help="IANA time zone for days and dates, e.g. Europe/Berlin (default: local).")
@json_option("One JSON document (fields in docs/stats.md).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header row (fields in docs/stats.md).")
@click.option("--chart", is_flag=True, help="Draw billed cost per row as bars in the terminal.")
@output_option("Write the report to OUT in the format its suffix names: .html (a self-contained page with "
               "charts, opens offline), .json or .csv.", dir_okay=False)
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the HTML page to this file, whatever its suffix (as -o FILE.html).")
@force_option("Replace the -o/--html file if it exists.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the stats cache ($XDG_CACHE_HOME/omp-session).")
def stats_command(sessions: tuple[str, ...], all_sessions: bool, root: Path | None, by: str, since: str | None,
                  until: str | None, tz: str | None, as_json: bool, as_csv: bool, chart: bool, out: Path | None,
                  html_out: Path | None, force: bool, no_cache: bool) -> None:
    """Tokens and cost, billed and on the current branch, grouped by session, day, week, month,
    model, provider or project.

    SESSION is a path, a session id (or unique prefix) or `latest`; without SESSION, the current
    project's sessions; --all: every project. Billed counts every request recorded in the files
    (all branches, subagents included, each request once); current counts what each
    conversation's current branch holds. Never writes a session.

    \b
    Examples:
      omp-session stats latest
      omp-session stats --all --by day --since 2026-05-01 --tz Europe/Berlin
      omp-session stats --all --by model --since 7d --csv > models.csv
      omp-session stats --all -o report.html
    """
    if as_json and as_csv:
        raise click.UsageError("choose one of --json and --csv")
    if sessions and all_sessions:
        raise click.UsageError("give SESSIONs or --all, not both")
    if html_out is not None and out is not None:
        raise click.UsageError("give -o/--output or --html, not both")
    kind = "html" if html_out is not None else _format_of(out)
    out = html_out if html_out is not None else out
    # "-" is stdout only when no table, JSON or CSV goes there too
    to_stdout = not (as_json or as_csv or chart)
    if out is not None:
        check_output(out, force=force, error=SessionError, stdout=to_stdout)
    active = active_store()
    if active is not None and root is not None:
        raise click.UsageError("--root names a folder of files; with --store the store's root is used")
    paths: list[str] | None = None
    if sessions:
        paths = [resolve_in_store(s, *active) if active is not None else resolve_session(s, root=root)
                 for s in sessions]
    with _progress() as progress:  # a bad --tz/--since/--until is a usage error (cli/_errors.py)
        if active is not None:
            report = stats(paths, all_sessions=all_sessions, root=active[0].root, by=by, since=since,
                           until=until, tz=tz, progress=progress, storage=active[1])
        else:
            report = stats(paths, all_sessions=all_sessions, root=root, by=by, since=since, until=until,
                           tz=tz, cache=StatsCache(enabled=not no_cache), progress=progress)
    for line in report.problems:
        click.echo(f"omp-session: {line}", err=True)
    if out is not None:
        write_new_file(out, [_rendered(report, kind).encode()], force=force, error=SessionError, stdout=to_stdout)
        click.echo(f"omp-session: wrote {out}", err=True)
    if as_json:
        sys.stdout.write(_json(report))
    elif as_csv:
        _csv(report, sys.stdout)
    elif chart:
        _chart(report)
    elif out is None:
        _table(report)
    if report.problems and paths is not None:
        sys.exit(1)  # a session named on the command line could not be read


def _format_of(out: Path | None) -> str:
    """The format ``-o OUT`` asks for, from its suffix (case aside)."""
    if out is None:
        return ""
    kind = _FORMATS.get(out.suffix.lower())
    if kind is None:
        raise click.UsageError(f"-o {out}: cannot tell the format from the suffix (use .html, .json or .csv)")
    return kind


def _rendered(report: StatsReport, kind: str) -> str:
    if kind == "html":
        return render_html(report)
    if kind == "json":
        return _json(report)
    text = io.StringIO()
    _csv(report, text)
    return text.getvalue()


def _json(report: StatsReport) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"


def _csv(report: StatsReport, stream: IO[str]) -> None:
    out = csv.writer(stream, lineterminator="\n")
    out.writerow(CSV_FIELDS)
    for g in report.groups:
        d = g.to_dict()
        out.writerow([g.key, *(_cell(d.get(f)) for f in _SESSION_FIELDS),
                      *(_cell(d["billed"][f]) for f in _TOTAL_FIELDS), *(_cell(d["current"][f]) for f in _TOTAL_FIELDS)])


def _cell(value: Any) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def _label(report: StatsReport, g: Group) -> str:
    if report.by == "session":
        title, sid = g.extra.get("title"), g.extra.get("id")
        short = sid[:8] if isinstance(sid, str) else Path(g.key).name
        return f"{title} ({short})" if title else short
    return g.key


def _money(x: float) -> str:
    return f"${x:,.2f}" if abs(x) >= 0.01 or x == 0 else f"${x:,.4f}"


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _caption(report: StatsReport) -> str:
    w = report.to_dict()
    parts = [f"{len(report.sessions)} session(s)", f"{report.files} file(s)", f"days in {zone_name(report.tz)}"]
    if w["since"]:
        parts.append(f"since {w['since']}")
    if w["until"]:
        parts.append(f"until {w['until']}")
    return ", ".join(parts)


def _short(x: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:,.0f}"


def _table(report: StatsReport) -> None:
    console = Console(highlight=False)
    # the token breakdown only where it fits beside the totals
    wide, medium = console.width >= 130, console.width >= 100
    table = Table(caption=_caption(report), show_footer=True, pad_edge=False)
    t: Totals = report.total.billed
    c: Totals = report.total.current
    table.add_column(report.by, "total", overflow="fold", min_width=12, ratio=1)
    columns: list[tuple[str, Callable[[Group], str], str]] = [
        ("reqs", lambda g: _n(g.billed.requests), _n(t.requests))]
    if medium:
        columns += [("input", lambda g: _short(g.billed.input), _short(t.input)),
                    ("output", lambda g: _short(g.billed.output), _short(t.output))]
    if wide:
        columns += [("cache read", lambda g: _short(g.billed.cache_read), _short(t.cache_read)),
                    ("cache write", lambda g: _short(g.billed.cache_write), _short(t.cache_write))]
    columns += [("tokens", lambda g: _short(g.billed.total_tokens), _short(t.total_tokens)),
                ("cost", lambda g: _money(g.billed.cost), _money(t.cost)),
                ("tokens (cur)", lambda g: _short(g.current.total_tokens), _short(c.total_tokens)),
                ("cost (cur)", lambda g: _money(g.current.cost), _money(c.cost))]
    for name, _, footer in columns:
        table.add_column(name, footer, justify="right", no_wrap=True)
    for g in report.groups:
        table.add_row(escape(_label(report, g)), *(cell(g) for _, cell, _ in columns))
    console.print(table)


def _chart(report: StatsReport) -> None:
    console = Console(highlight=False)
    by_cost = any(g.billed.cost > 0 for g in report.groups)
    values = [(g, g.billed.cost if by_cost else g.billed.total_tokens) for g in report.groups]
    top = max((v for _, v in values), default=0) or 1
    width = max(10, min(60, console.width - 50))
    table = Table.grid(padding=(0, 1))
    table.add_column(max_width=36, overflow="ellipsis", no_wrap=True)
    table.add_column(width=width)
    table.add_column(justify="right")
    for g, v in values:
        table.add_row(escape(_label(report, g)), Bar(top, 0, v, width=width, color="cyan"),
                      _money(v) if by_cost else _n(v))
    console.print(f"billed {'cost' if by_cost else 'tokens'} by {report.by} ({_caption(report)})")
    console.print(table)
    console.print(f"total: {_money(report.total.billed.cost)}, {_n(report.total.billed.total_tokens)} tokens")
