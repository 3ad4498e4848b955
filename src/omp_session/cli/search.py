"""``omp-session search QUERY`` and ``omp-session index``: full-text search over every session
(docs/search.md). The index is a cache under ``$XDG_CACHE_HOME/omp-session``; sessions are never
changed.

Exit status: 0 (also when nothing matched), 1 on a one-line error (a query that cannot be
searched for, an index locked too long, a session that does not exist), 2 on usage errors.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from omp_session.catalog.resolve import resolve_session
from omp_session.ops.search.index import HIGHLIGHT, IndexReport, SearchIndex, default_index_path
from omp_session.ops.search.query import MAX_LIMIT, SearchHit, search
from omp_session.paths import sessions_dir

from ._errors import command
from ._options import json_option, since_option, until_option
from ._style import clip, terminal_width, width

if TYPE_CHECKING:  # rich only where text is printed: `search --json` never loads it
    from rich.text import Text

__all__ = ["index_command", "search_command"]

_PROGRESS_FROM = 20  # files to (re)index before a progress bar is worth drawing


def _notice(message: str) -> None:
    click.echo(f"omp-session: {message}", err=True)


def _report_problems(report: IndexReport | None) -> None:
    """Damage is reported once, by the update that found it; unreadable files every time."""
    if report is None:
        return
    for line in report.damaged + report.unreadable:
        _notice(line)


@contextmanager
def _progress() -> Iterator[Callable[[int, int], None] | None]:
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("indexing sessions"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task: list[Any] = []

        def advance(done: int, total: int) -> None:
            if total < _PROGRESS_FROM:
                return
            if not task:
                task.append(bar.add_task("index", total=total))
            bar.update(task[0], completed=done)

        yield advance


def _highlighted(snippet: str) -> Text:
    from rich.text import Text

    text = Text()
    start, end = HIGHLIGHT
    for i, part in enumerate(snippet.replace(end, start).split(start)):
        text.append(part, style="bold yellow" if i % 2 else None)
    return text


def _print_hits(hits: list[SearchHit]) -> None:
    # On a terminal every line fits its width: the title and the line under it are cut, the
    # snippet wraps under its indent, and the project stands for the file's long path (`show ID`
    # prints it). Elsewhere (a pipe, a file) the lines are whole and name the file, as scripts
    # that grep them expect.
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    cells = terminal_width()
    console = Console(highlight=False, soft_wrap=cells is None, width=cells)
    if not hits:
        console.print("no matches")
        return
    for n, h in enumerate(hits, 1):
        what = h.role or h.entry_type or "?"
        if h.kind not in ("text", "tool_result") or h.role is None:
            what += f" {h.kind}"
        where = f"entry {h.entry_id}" if h.entry_id else "session title"
        if h.target_id:
            where += f" (labels {h.target_id})"
        when = (h.timestamp or "")[:19].replace("T", " ")
        title = h.title or "(untitled)"
        if cells is None:
            console.print(f"[bold]{n}. {escape(title)}[/bold]  [dim]{escape(h.path)}[/dim]")
            console.print(f"   [cyan]{escape(what)}[/cyan] · {escape(where)} · {when}")
            console.print(Text("   ") + _highlighted(h.snippet))
        else:
            head = f"{n}. "
            console.print(Text(head + clip(" ".join(title.split()), max(cells - width(head), 8)), style="bold"))
            parts = [what, where] if h.entry_id else [what]  # (a title hit: "session title" once)
            line = " · ".join([*parts, when, *([h.cwd] if h.cwd else [])])
            console.print(Text("   ") + Text(clip(line, max(cells - 3, 8)), style="cyan"))
            for row in _highlighted(h.snippet).wrap(console, max(cells - 3, 8)):
                row.rstrip()
                console.print(Text("   ") + row)
        console.print(f"   [dim]resume: {escape(_resume(h))}[/dim]", soft_wrap=True)  # a command to copy: one line


def _resume(hit: SearchHit) -> str:
    """The line ``omp-session resume`` prints for the hit's session (omp looks an id up in the
    project of the folder it runs in: the ``cd`` is part of it); the bare ``omp --resume ID``
    when the index knows no working directory."""
    if not hit.cwd or hit.session_id is None:
        return hit.resume
    from .resume import resume_line

    return resume_line(hit.cwd, hit.session_id, hit.path)


def _store_options(help_text: str) -> Callable[[Any], Any]:
    def add(fn: Any) -> Any:
        fn = click.option("--timeout", metavar="SECONDS", type=click.FloatRange(min=0, min_open=True, max=1e9),
                          help="With --store: give up on a server that has not connected after SECONDS.")(fn)
        return click.option("--store", "store_url", metavar="URL", help=help_text)(fn)
    return add


def _only_files(**given: object) -> None:
    """Options of the file index that mean nothing for a store's search tables: a usage error."""
    for name, value in given.items():
        if value:
            raise click.UsageError(f"--{name.replace('_', '-')} applies to the file index, not with --store")


@command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("--role", type=click.Choice(["user", "assistant", "tool"]), help="Only messages of this role "
              "(tool: tool results and ! / $ executions).")
@click.option("--project", "cwd", type=click.Path(file_okay=False), help="Only sessions of this project directory "
              "(or below).")
@click.option("--cwd", "cwd_alias", type=click.Path(file_okay=False), hidden=True)  # the old name of --project
@since_option("Only entries at or after this time (a date, or 7d / 12h / 30m ago).")
@until_option("Only entries before this time.")
@click.option("--session", "session_arg", metavar="SESSION", help="Only this session (path, id, id prefix, latest).")
@click.option("--sessions", "one_per_session", is_flag=True, help="One hit per session: its best match.")
@click.option("--current-branch", is_flag=True, help="Only entries on the branch the session resumes on.")
@click.option("--thinking", is_flag=True, help="Search thinking blocks too.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many hits.")
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's).")
@click.option("--index", "index_path", type=click.Path(dir_okay=False), help="Index file (default: "
              "$XDG_CACHE_HOME/omp-session/search.sqlite).")
@click.option("--no-update", is_flag=True, help="Search the index as it is, without reading changed sessions.")
@_store_options("Search this PostgreSQL or SQLite store's search tables (made by index --store) instead of the "
                "files; PostgreSQL reads QUERY in its websearch syntax (docs/team.md).")
@click.option("--user", "ns_user", metavar="USER", help="With --store: only sessions uploaded by this user (the "
              "part of sync's --namespace before its last @).")
@click.option("--machine", "ns_host", metavar="HOST", help="With --store: only sessions uploaded from this machine (the "
              "part of sync's --namespace after its last @).")
@json_option("One JSON array of hits (snippet hits in [brackets]).")
def search_command(query: tuple[str, ...], role: str | None, cwd: str | None, cwd_alias: str | None, since: int | None, until: int | None,
                   session_arg: str | None, one_per_session: bool, current_branch: bool, thinking: bool, limit: int,
                   root: str | None, index_path: str | None, no_update: bool, store_url: str | None,
                   timeout: float | None, ns_user: str | None, ns_host: str | None, as_json: bool) -> None:
    """Search the text of every session: messages, tool calls and results, summaries, titles and
    labels (thinking with --thinking). Best matches first (bm25), newer first among equals; a
    session's title counts once.

    QUERY: words (all must match), "a phrase", prefix*, AND / OR / NOT / AND NOT (upper case),
    parentheses, NEAR(a b, N) (docs/search.md).
    The index is brought up to date first; only bytes appended since the last search are read.

    \b
    Examples:
      omp-session search 'blob store' --since 7d
      omp-session search '"title slot" OR pad*' --role assistant --json
      omp-session search 'fix* AND NOT test' --session latest --current-branch
      omp-session search 'NEAR(cursor pagination, 5)' --sessions
    """
    cwd = cwd or cwd_alias
    limit = min(limit, MAX_LIMIT)  # (more hits than any index holds: a database takes 64 bits at most)
    if store_url is None and (ns_user is not None or ns_host is not None):
        raise click.UsageError(f"--{'user' if ns_user is not None else 'machine'} filters a store's sessions: "
                               "it needs --store URL")
    if store_url is not None:
        _only_files(session=session_arg, current_branch=current_branch, root=root, index=index_path, no_update=no_update)
        from ._store_search import search_store

        hits = search_store(store_url, " ".join(query), role=role, cwd=cwd, since_ms=since, until_ms=until,
                            thinking=thinking, limit=limit + 1, sessions=one_per_session, timeout=timeout,
                            user=ns_user, host=ns_host)  # one more than shown: whether --limit cut them
        if as_json:
            click.echo(json.dumps([h.to_json() for h in hits[:limit]], ensure_ascii=False, indent=1))
        else:
            _print_hits(hits[:limit])
            _say_cut(len(hits) > limit, limit, one_per_session)
        return
    base = Path(root) if root else sessions_dir()
    session = resolve_session(session_arg, root=base) if session_arg is not None else None
    _hint_session_words(query, session_arg)
    with _progress() as progress:
        result = search(" ".join(query), index_path=index_path, root=base, role=role, cwd=cwd, since_ms=since,
                        until_ms=until, session=session, current_branch=current_branch, thinking=thinking,
                        limit=limit, update=not no_update, sessions=one_per_session, on_notice=_notice, progress=progress)
    _report_problems(result.report)
    if as_json:
        click.echo(json.dumps([h.to_json() for h in result.hits], ensure_ascii=False, indent=1))
        return
    _print_hits(result.hits)
    _say_cut(result.truncated, limit, one_per_session)


def _hint_session_words(query: tuple[str, ...], session_arg: str | None) -> None:
    """A query word naming a session file is searched for as a word (QUERY is every argument): say
    how to search that session instead, as other commands take it as their argument."""
    for word in query:
        if word.endswith((".jsonl", ".jsonl.gz")) and os.path.isfile(word):
            if session_arg is None:
                import shlex

                _notice(f"{word} is searched for as a word of the query; to search that session: "
                        f"--session {shlex.quote(word)}")
            return


def _say_cut(truncated: bool, limit: int, one_per_session: bool) -> None:
    """One line on stderr when --limit cut the hits (stdout stays the hits alone)."""
    if truncated:
        _notice(f"the first {limit} {'sessions' if one_per_session else 'hits'} shown, there are more: "
                f"--limit N shows more" + ("" if one_per_session else ", --sessions one hit per session"))


@command("index")
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's).")
@click.option("--index", "index_path", type=click.Path(dir_okay=False), help="Index file (default: "
              "$XDG_CACHE_HOME/omp-session/search.sqlite).")
@click.option("--rebuild", is_flag=True, help="Delete the index and build it again from scratch.")
@_store_options("Make or update the search tables of this PostgreSQL or SQLite store instead of the file index "
                "(beside omp's table; sync --to keeps them up to date afterwards; docs/team.md).")
@json_option("Print what was done as one JSON object.")
def index_command(root: str | None, index_path: str | None, rebuild: bool, store_url: str | None,
                  timeout: float | None, as_json: bool) -> None:
    """Bring the search index up to date (search does this by itself; this is for cron or a
    first build with a progress bar). New and grown sessions are read (grown ones only from
    where they were indexed), rewritten ones again, deleted ones leave the index.

    \b
    Examples:
      omp-session index
      omp-session index --rebuild --json
    """
    if store_url is not None:
        _only_files(root=root, index=index_path)
        from ._store_search import index_store

        with _progress() as progress:
            index_store(store_url, rebuild=rebuild, as_json=as_json, timeout=timeout, progress=progress)
        return
    base = Path(root) if root else sessions_dir()
    if rebuild:
        path = Path(index_path) if index_path else default_index_path()
        for suffix in ("", "-wal", "-shm"):
            with suppress(FileNotFoundError):
                os.remove(str(path) + suffix)
    with _progress() as progress, SearchIndex(index_path, on_notice=_notice) as ix:
        report = ix.update(base, progress=progress)
        stats = ix.stats()
    _report_problems(report)
    if as_json:
        click.echo(json.dumps({**report.to_json(), "index": stats}, ensure_ascii=False, indent=1))
        return
    click.echo(f"{report.files} session file(s) under {base}: {len(report.added)} added, {len(report.grown)} grown, "
               f"{len(report.reindexed)} re-indexed, {len(report.removed)} removed, {report.unchanged} unchanged "
               f"({report.bytes_parsed:,} bytes read in {report.seconds:.2f} s)")
    for changed, why in report.reindexed:
        click.echo(f"  re-indexed {changed}: {why}")
    click.echo(f"index {stats['index']}: {stats['files']} session(s), {stats['entries']:,} entries, "
               f"{stats['bytes'] / 1e6:.1f} MB")
