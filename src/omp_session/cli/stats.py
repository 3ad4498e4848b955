"""``omp-session stats [SESSION...|--all]``: tokens and cost by day (with each day's models), week,
month, session, model, provider or project, or in 5-hour billing blocks (issues 8 and 15;
docs/stats.md). A thin shell over :func:`omp_session.stats.stats`."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from omp_session.catalog.resolve import resolve_session
from omp_session.errors import SessionError
from omp_session.js.date import now_ms, to_iso
from omp_session.ops.stats.blocks import Block
from omp_session.ops.stats.group import GROUPINGS, Group, Totals, zone_name
from omp_session.store.atomic import check_output, write_new_file

from ._errors import command
from ._options import force_option, json_option, output_option, session_argument
from ._store import active_store, refuse_non_session_file, resolve_in_store, store_option
from ._store_stats import check_filters, store_stats
from ._style import HarmlessOut

if TYPE_CHECKING:  # the tables are drawn with rich, imported where they are: --json needs none of it
    from rich.console import Console, RenderableType
    from rich.console import Group as Lines

    from omp_session.ops.stats.report import StatsReport

__all__ = ["BLOCK_CSV_FIELDS", "CSV_FIELDS", "stats_command"]

_SESSION_FIELDS = ("path", "id", "title", "cwd", "created")
_TOTAL_FIELDS = ("requests", "input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
CSV_FIELDS = ("key", *_SESSION_FIELDS, *(f"billed_{f}" for f in _TOTAL_FIELDS),
              *(f"current_{f}" for f in _TOTAL_FIELDS), "model")
BLOCK_CSV_FIELDS = ("kind", "start", "end", "firstRequest", "lastRequest", "active", "models",
                    *(f"billed_{f}" for f in _TOTAL_FIELDS), "projected_totalTokens", "projected_cost")
_PROGRESS_FROM = 20  # files; fewer read too fast to need a bar
_FORMATS = {".html": "html", ".htm": "html", ".json": "json", ".csv": "csv"}  # -o OUT: by its suffix


@contextmanager
def _progress() -> Iterator[Callable[[int, int], None] | None]:
    """A bar on stderr while files are read, only on a terminal and only for many files."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
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
@click.option("--by", type=click.Choice(GROUPINGS), help="One row per ...  [default: day]")
@click.option("--blocks", is_flag=True, help="5-hour billing blocks (as ccusage's) instead of --by rows: the "
              "active one with its time left and projected cost.")
@click.option("--no-models", is_flag=True, help="Leave out the rows of each day's, week's or month's models.")
@click.option("--compact", is_flag=True, help="A narrow table: key, tokens and cost (also chosen when the "
              "terminal is too narrow for the full table).")
@click.option("--since", metavar="WHEN", help="Only usage at or after this date (YYYY-MM-DD) or ISO time, in --tz, or this "
              "long ago (7d, 12h, 30m).")
@click.option("--until", metavar="WHEN", help="Only usage before this ISO time or age (7d, 12h, 30m), or through the end of this "
              "date (YYYY-MM-DD).")
@click.option("--tz", help="IANA time zone for days, dates and shown times, e.g. Europe/Berlin (default: local).")
@json_option("One JSON document (fields in docs/stats.md).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header row (fields in docs/stats.md).")
@click.option("--chart", is_flag=True, help="Draw billed cost per row as bars in the terminal.")
@output_option("Write the report to OUT in the format its suffix names: .html (a self-contained page with "
               "charts, opens offline), .json or .csv.", dir_okay=False)
# the old spelling of -o OUT.html: one flag, one meaning (issue 15); kept working, out of --help
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), hidden=True)
@force_option("Replace the -o file if it exists.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the stats cache ($XDG_CACHE_HOME/omp-session).")
@click.option("--user", "ns_user", metavar="USER", help="With --store: only sessions uploaded by this user (the "
              "part of sync's --namespace before its last @).")
@click.option("--machine", "ns_host", metavar="HOST", help="With --store: only sessions uploaded from this machine "
              "(the part of sync's --namespace after its last @).")
def stats_command(sessions: tuple[str, ...], all_sessions: bool, root: Path | None, by: str | None, blocks: bool,
                  no_models: bool, compact: bool, since: str | None, until: str | None, tz: str | None,
                  as_json: bool, as_csv: bool, chart: bool, out: Path | None, html_out: Path | None, force: bool,
                  no_cache: bool, ns_user: str | None, ns_host: str | None) -> None:
    """Tokens and cost, billed and on the current branch, grouped by session, day, week, month,
    model, provider or project. By day (the default), week or month, each row's models follow it;
    --blocks shows 5-hour billing blocks instead.

    SESSION is a path, a session id (or unique prefix) or `latest`; without SESSION, the current
    project's sessions; --all: every project. Billed counts every request recorded in the files
    (all branches, subagents included, each request once); current counts what each
    conversation's current branch holds. Never writes a session. With --store on PostgreSQL or
    SQLite the database adds it up (the tables index --store makes; --all: every machine's
    sessions; --user/--machine filter them).

    \b
    Examples:
      omp-session stats --all --since 7d
      omp-session stats latest --by session
      omp-session stats --all --by month --tz Europe/Berlin
      omp-session stats --all --blocks --since 24h
      omp-session stats --all --by model --since 7d --csv > models.csv
      omp-session stats --all -o report.html
    """
    if as_json and as_csv:
        raise click.UsageError("choose one of --json and --csv")
    if sessions and all_sessions:
        raise click.UsageError("give SESSIONs or --all, not both")
    if blocks and by is not None:
        raise click.UsageError("give --by or --blocks, not both")
    if html_out is not None and out is not None:
        raise click.UsageError("give -o/--output or --html, not both")
    if html_out is not None:
        named = html_out.suffix.lower() in (".html", ".htm")
        click.echo(f"omp-session: --html is deprecated; use -o {html_out if named else 'FILE.html'}", err=True)
    if out is not None and os.fspath(out) == "-":  # stdout (docs/cli.md): the format --json/--csv names
        if not (as_json or as_csv):
            raise click.UsageError("-o - writes to stdout, which has no suffix to tell the format: add --json or "
                                   "--csv (an HTML page: -o FILE.html)")
        out = None  # --json/--csv print there already
    kind = "html" if html_out is not None else _format_of(out)
    if blocks and kind == "html":
        raise click.UsageError("--blocks writes .json or .csv, not an HTML page")
    out = html_out if html_out is not None else out
    # "-" is stdout only when no table, JSON or CSV goes there too
    to_stdout = not (as_json or as_csv or chart)
    if out is not None:
        check_output(out, force=force, error=SessionError, stdout=to_stdout)
    active = active_store()
    if active is not None and root is not None:
        raise click.UsageError("--root names a folder of files; with --store the store's root is used")
    check_filters(ns_user, ns_host, active is not None)
    paths: list[str] | None = None
    if sessions:
        paths = [resolve_in_store(s, *active) if active is not None else resolve_session(s, root=root)
                 for s in sessions]
        for one in paths:  # a file that is not a session is one line, exit 1, before anything is written
            refuse_non_session_file(one)
    by = by or "day"
    with _progress() as progress:  # a bad --tz/--since/--until is a usage error (cli/_errors.py)
        if active is not None:
            report = store_stats(*active, paths, all_sessions=all_sessions, by=by, since=since, until=until, tz=tz,
                                 user=ns_user, host=ns_host, placed=blocks or kind == "html", progress=progress)
        else:
            from omp_session.ops.stats.report import StatsCache, stats

            report = stats(paths, all_sessions=all_sessions, root=root, by=by, since=since, until=until,
                           tz=tz, cache=StatsCache(enabled=not no_cache), progress=progress)
    for line in report.problems:
        click.echo(f"omp-session: {line}", err=True)
    view = _View(report, models=not no_models, compact=compact, blocks=blocks)
    if out is not None:
        write_new_file(out, [_rendered(view, kind).encode()], force=force, error=SessionError, stdout=to_stdout)
        click.echo(f"omp-session: wrote {out}", err=True)
    if as_json:
        sys.stdout.write(_json(view))
    elif as_csv:
        _csv(view, sys.stdout)
    elif chart:
        _chart(view)
    elif out is None:
        _table(view)
    if report.problems and paths is not None:
        sys.exit(1)  # a session named on the command line could not be read


@dataclass
class _View:
    """The report and how it is shown; the blocks are cut once, at one "now"."""

    report: StatsReport
    models: bool = True
    compact: bool = False
    blocks: bool = False
    now: float = 0.0
    cut: list[Block] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.blocks:
            self.now = now_ms()
            self.cut = self.report.blocks(self.now)


def _format_of(out: Path | None) -> str:
    """The format ``-o OUT`` asks for, from its suffix (case aside)."""
    if out is None:
        return ""
    kind = _FORMATS.get(out.suffix.lower())
    if kind is None:
        raise click.UsageError(f"-o {out}: cannot tell the format from the suffix (use .html, .json or .csv)")
    return kind


def _rendered(view: _View, kind: str) -> str:
    if kind == "html":
        from omp_session.ops.stats.html import render_html

        return render_html(view.report)
    if kind == "json":
        return _json(view)
    text = io.StringIO()
    _csv(view, text)
    return text.getvalue()


def _json(view: _View) -> str:
    doc = view.report.blocks_dict(view.now) if view.blocks else view.report.to_dict(models=view.models)
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def _csv(view: _View, stream: IO[str]) -> None:
    out = csv.writer(stream, lineterminator="\n")
    if view.blocks:
        out.writerow(BLOCK_CSV_FIELDS)
        for b in view.cut:
            d = b.to_dict(view.report.tz)
            projected = d["projected"] or {}
            out.writerow([*(_cell(d[f]) for f in BLOCK_CSV_FIELDS[:6]), ";".join(m.key for m in b.models),
                          *(_cell(d["billed"][f]) for f in _TOTAL_FIELDS),
                          _cell(projected.get("totalTokens")), _cell(projected.get("cost"))])
        return
    out.writerow(CSV_FIELDS)
    for g in view.report.groups:
        rows = [(g, "")] + ([(m, m.key) for m in g.models] if view.models and g.models is not None else [])
        for row, model in rows:
            d = row.to_dict(models=False)
            out.writerow([g.key, *(_cell(d.get(f)) for f in _SESSION_FIELDS),
                          *(_cell(d["billed"][f]) for f in _TOTAL_FIELDS),
                          *(_cell(d["current"][f]) for f in _TOTAL_FIELDS), model])


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
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


def _caption(view: _View) -> str:
    report = view.report
    parts = [f"{len(report.sessions)} session(s)", f"{report.files} file(s)",
             f"{'times' if view.blocks else 'days'} in {zone_name(report.tz)}"]
    if report.window.since is not None:
        parts.append(f"since {to_iso(report.window.since)}")
    if report.window.until is not None:
        parts.append(f"until {to_iso(report.window.until)}")
    return ", ".join(parts)


def _short(x: float) -> str:
    if not math.isfinite(x):  # (a damaged usage: the sum of two 1e308 counts)
        return "?" if x != x else "inf" if x > 0 else "-inf"
    if abs(x) >= 1e15:  # not a count any session made: its 300 digits would fill the screen
        return f"{x:.1e}"
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:,.0f}"


# ---------------------------------------------------------------------------------------------------
# The terminal table, fitted to its width


@dataclass(frozen=True)
class _Column:
    name: str
    footer: str
    tier: str  # "compact": always shown; "base": unless compact; "medium"/"wide": on terminals that wide
    wrap: bool = False


_MEDIUM, _WIDE = 100, 130  # the token breakdown only where it fits beside the totals
_MIN_KEY = 12
_SUB = "dim"  # a period's model rows


def _fitted(console: Console, view: _View, key: str, columns: list[_Column],
            rows: list[tuple[str, dict[str, str], str]]) -> RenderableType:
    """The richest table that fits the console: the token breakdown on wide terminals, then the
    base columns, then the compact ones (key, tokens, cost) when even those need more columns
    than the terminal has, or ``--compact`` asks for them; a list where not even those fit."""
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    labels = [cell_len(label) for label, _, _ in rows]
    # a day, a block's start or a model folded over two lines reads badly: the full table keeps them
    # whole (a session's title may fold), else the compact one is shown
    whole = max([_MIN_KEY, cell_len(key), cell_len("total")]
                + [n for n, (label, _, _) in zip(labels, rows, strict=True)
                   if view.blocks or view.report.by != "session" or label.startswith(" ")])
    longest = max([whole, *labels])

    def span(c: _Column) -> tuple[int, int]:
        texts = [c.name, c.footer, *(cells.get(c.name, "") for _, cells, _ in rows)]
        widest = max(cell_len(t) for t in texts)
        # a wrapping column may break between words, never inside one
        return (max(cell_len(w) for t in texts for w in t.split() or [""]) if c.wrap else widest), widest

    def layout(cols: list[_Column], key_min: int) -> list[int] | None:
        """Content widths: each column its narrowest, then the room left given out from the left
        (the key, a block's status) up to each one's widest; None when even the narrowest do not fit."""
        spans = [(key_min, max(key_min, longest)), *(span(c) for c in cols)]
        # with pad_edge=False: a space each side inside a column but the outermost, a rule between
        room = console.width - (3 * len(spans) - 1) - sum(lo for lo, _ in spans)
        if room < 0:
            return None
        widths = []
        for lo, hi in spans:
            grow = min(room, hi - lo)
            widths.append(lo + grow)
            room -= grow
        return widths

    def build(cols: list[_Column], widths: list[int] | None) -> Table:
        # fixed widths: rich's own squeezing would cut inside words and can overrun the terminal
        w: list[int | None] = list(widths) if widths is not None else [None] * (len(cols) + 1)
        table = Table(caption=_caption(view), show_footer=True, pad_edge=False)
        table.add_column(key, "total", overflow="fold", width=w[0], min_width=None if w[0] else _MIN_KEY)
        for c, cw in zip(cols, w[1:], strict=True):
            table.add_column(c.name, c.footer, justify="left" if c.wrap else "right", no_wrap=not c.wrap,
                             overflow="fold", width=cw)
        for label, cells, style in rows:
            # text, not markup: a model may be named "x[/b]"
            table.add_row(Text(label), *(Text(cells.get(c.name, "")) for c in cols), style=style)
        return table

    if not view.compact:
        for least, tiers in ((_WIDE, {"wide", "medium"}), (_MEDIUM, {"medium"}), (0, set())):
            cols = [c for c in columns if c.tier in {"compact", "base"} | tiers]
            widths = layout(cols, whole) if console.width >= least else None
            if widths is not None:
                return build(cols, widths)
    cols = [c for c in columns if c.tier == "compact"]
    widths = layout(cols, whole) or layout(cols, _MIN_KEY)
    return build(cols, widths) if widths is not None else _listed(view, key, cols, rows)


def _listed(view: _View, key: str, cols: list[_Column], rows: list[tuple[str, dict[str, str], str]]) -> Lines:
    """Too narrow for even the compact table: each row's key on a line of its own and its numbers
    on the next (``3.6k tokens · $2.25``), folded at the terminal's edge, never cut off."""
    from rich.console import Group as Lines
    from rich.text import Text

    def numbers(cells: dict[str, str]) -> str:
        return " · ".join(cells[c.name] if c.wrap or c.name == "cost" else f"{cells[c.name]} {c.name}"
                          for c in cols if cells.get(c.name))

    lines = [Text(key, style="bold")]
    footers = {c.name: c.footer for c in cols}
    for label, cells, style in [*rows, ("total", footers, "bold")]:
        indent = " " * (len(label) - len(label.lstrip()) + 2)
        lines.append(Text(label, style=style, overflow="fold"))
        if numbers(cells):
            lines.append(Text(indent + numbers(cells), style=style, overflow="fold"))
    lines.append(Text(_caption(view), style="dim", overflow="fold"))
    return Lines(*lines)


def _totals_cells(t: Totals) -> dict[str, str]:
    return {"reqs": _n(t.requests), "input": _short(t.input), "output": _short(t.output),
            "cache read": _short(t.cache_read), "cache write": _short(t.cache_write),
            "tokens": _short(t.total_tokens), "cost": _money(t.cost)}


def _token_columns(t: Totals) -> list[_Column]:
    c = _totals_cells(t)
    return [_Column("reqs", c["reqs"], "base"), _Column("input", c["input"], "medium"),
            _Column("output", c["output"], "medium"), _Column("cache read", c["cache read"], "wide"),
            _Column("cache write", c["cache write"], "wide"), _Column("tokens", c["tokens"], "compact"),
            _Column("cost", c["cost"], "compact")]


def _table(view: _View) -> None:
    from rich.console import Console

    console = Console(highlight=False, file=HarmlessOut())  # type: ignore[arg-type]
    if view.blocks:
        console.print(_blocks_table(console, view))
        return
    report = view.report
    c = report.total.current
    columns = [*_token_columns(report.total.billed), _Column("tokens (cur)", _short(c.total_tokens), "base"),
               _Column("cost (cur)", _money(c.cost), "base")]

    def cells(g: Group) -> dict[str, str]:
        return {**_totals_cells(g.billed), "tokens (cur)": _short(g.current.total_tokens),
                "cost (cur)": _money(g.current.cost)}

    rows: list[tuple[str, dict[str, str], str]] = []
    for g in report.groups:
        rows.append((_label(report, g), cells(g), ""))
        if view.models and g.models is not None:
            rows += [(f"  └ {m.key}", cells(m), _SUB) for m in g.models]
    console.print(_fitted(console, view, report.by, columns, rows))


# ---------------------------------------------------------------------------------------------------
# Blocks


def _clock(ms: float | None, tz: tzinfo, *, day: bool = True) -> str:
    if ms is None:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz).strftime("%Y-%m-%d %H:%M" if day else "%H:%M")
    except (OverflowError, OSError, ValueError):
        return "?"


def _span(ms: float) -> str:
    minutes = int(ms // 60_000)
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m"


def _until(b: Block, tz: tzinfo) -> str:
    """When a block's last request was, how far an active one is, or how long a gap lasted."""
    if b.kind == "gap" and b.start is not None and b.end is not None:
        return f"{_span(b.end - b.start)} idle"
    if b.active and b.elapsed is not None and b.remaining is not None:
        return f"ACTIVE {_span(b.elapsed)} in, {_span(b.remaining)} left"
    if b.last is None:  # the requests without a time
        return ""
    last = _clock(b.last, tz)
    return f"to {last[11:] if last[:10] == _clock(b.start, tz)[:10] else last[5:]}"


def _blocks_table(console: Console, view: _View) -> RenderableType:
    tz = view.report.tz
    columns = [_Column("status", "", "compact", wrap=True), _Column("models", "", "base", wrap=True),
               *_token_columns(view.report.total.billed)]
    rows: list[tuple[str, dict[str, str], str]] = []
    for b in view.cut:
        if b.kind == "gap":
            rows.append(("(gap)", {"status": _until(b, tz)}, "dim"))
            continue
        label = _clock(b.start, tz) if b.kind == "block" else "(unknown)"
        # the provider is in --by model; a model id may hold slashes of its own (openrouter's)
        models = ", ".join(m.key.partition("/")[2] or m.key for m in b.models)
        rows.append((label, {"status": _until(b, tz), "models": models, **_totals_cells(b.billed)},
                     "bold" if b.active else ""))
        projected = b.projected()
        if projected is not None:
            rows.append(("  projected", {"status": f"by {_clock(b.end, tz, day=False)}", "tokens": _short(projected[0]),
                                         "cost": _money(projected[1])}, _SUB))
    return _fitted(console, view, "block", columns, rows)


# ---------------------------------------------------------------------------------------------------
# Bars


def _chart(view: _View) -> None:
    from rich.bar import Bar
    from rich.cells import cell_len
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, file=HarmlessOut())  # type: ignore[arg-type]
    report = view.report
    if view.blocks:
        shown = [(_clock(b.start, report.tz) if b.kind == "block" else "(unknown)", b.billed)
                 for b in view.cut if b.kind != "gap"]
    else:
        shown = [(_label(report, g), g.billed) for g in report.groups]
    by_cost = any(t.cost > 0 for _, t in shown)
    values = [(label, t.cost if by_cost else t.total_tokens) for label, t in shown]
    top = max((v for _, v in values), default=0) or 1
    texts = [_money(v) if by_cost else _n(v) for _, v in values]
    # the values stay whole; on a narrow terminal the bars, then the labels, give way (a space
    # between columns)
    room = console.width - 2 - max((cell_len(t) for t in texts), default=0)
    label_width = min(36, max((cell_len(label) for label, _ in values), default=1))
    width = max(1, min(max(10, min(60, console.width - 50)), room - label_width))
    label_width = max(1, min(label_width, room - width))
    table = Table.grid(padding=(0, 1))
    table.add_column(width=label_width, overflow="ellipsis", no_wrap=True)
    table.add_column(width=width)
    table.add_column(justify="right", no_wrap=True)
    for (label, v), text in zip(values, texts, strict=True):
        table.add_row(escape(label), Bar(top, 0, v, width=width, color="cyan"), text)
    what = "5-hour block" if view.blocks else report.by
    console.print(f"billed {'cost' if by_cost else 'tokens'} by {what} ({_caption(view)})")
    console.print(table)
    console.print(f"total: {_money(report.total.billed.cost)}, {_n(report.total.billed.total_tokens)} tokens")
