"""``omp-session list``: the sessions of this project (or all), newest first (spec S11)."""

from __future__ import annotations

import fnmatch
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from omp_session.catalog import listing as _listing
from omp_session.catalog.list_output import OutputCache, file_key
from omp_session.catalog.listing import SessionInfo
from omp_session.paths import cache_dir, project_dir_name, sessions_dir

from ._columns import table
from ._errors import command
from ._options import json_option, since_option, until_option
from ._store import active_store, store_option
from ._style import Styler, harmless, terminal_width

if TYPE_CHECKING:  # the summaries (and the reader behind them) load only past the warm-cache check
    from omp_session.catalog.store_listing import StoreListing
    from omp_session.catalog.summaries import ListCache, SessionStats
    from omp_session.store import StoreURL
    from omp_session.store.base import SessionStorage

__all__ = ["list_command"]


def _session_files(directory: str, folders: set[str] | None = None) -> list[str]:
    """omp's ``*.jsonl`` of a bucket, plus archived ``*.jsonl.gz`` sessions (omp itself skips those).
    ``folders`` collects the bucket's subdirectories (where subagent sessions live) from the same
    directory scan, so no session costs a stat of its own to find them."""
    names: list[str] = []
    try:
        with os.scandir(directory) as it:
            for e in it:
                if e.name.startswith("."):
                    continue
                if e.is_file(follow_symlinks=False) and e.name.endswith((".jsonl", ".jsonl.gz")) \
                        and not _listing.is_quarantine_name(e.name):
                    names.append(e.name)
                elif folders is not None and e.is_dir(follow_symlinks=False):
                    folders.add(_listing.node_join(directory, e.name))
    except OSError:
        return []
    # what listing.node_join gives, with one normalisation for the whole directory: the names are
    # plain file names (no separators, no leading dot)
    prefix = _listing.node_join(directory, "x")[:-1]
    return [prefix + n for n in names]


def _file_keys(files: list[str]) -> dict[str, list[int]] | None:
    keys: dict[str, list[int]] = {}
    for path in files:
        try:
            keys[path] = file_key(os.stat(path))
        except OSError:
            return None
    return keys


def _scan(files: list[str], cache: ListCache) -> list[SessionInfo]:
    found = [(f, cache.info(f)) for f in files]
    skipped = [f for f, info in found if info is None]
    if skipped:
        # omp lists these no more than we do, but the user should know they are there
        shown = ", ".join(skipped[:3]) + (f" and {len(skipped) - 3} more" if len(skipped) > 3 else "")
        click.echo(f"omp-session: skipped {len(skipped)} file(s) that are not readable sessions: {shown}",
                   err=True)
    return _listing.sort_sessions(info for _, info in found if info is not None)


def _subagents(info: SessionInfo, cache: ListCache, folders: set[str]) -> list[SessionInfo]:
    """Subagent sessions live in the parent's artifacts directory as ``<agentId>.jsonl`` (S9.5)."""
    folder = info.path[: -len(".jsonl")] if info.path.endswith(".jsonl") else None
    if folder is None or folder not in folders:
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:  # deleted since the directory scan, or not ours to read: no subagents to show
        return []
    found = []
    for name in names:
        if name.endswith(".jsonl") and not name.startswith(("__advisor", ".")):
            sub = cache.info(os.path.join(folder, name))
            if sub is not None:
                found.append(sub)
    return found


def _iso(ms: int | None) -> str | None:
    """``Date.prototype.toISOString``; a direct format for years 1970–9999 (the common case, and
    the bulk of a cached listing), omp_session.jsdate's full version otherwise."""
    if ms is None:
        return None
    if 0 <= ms < 253_402_300_800_000:
        t = time.gmtime(ms // 1000)
        return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
                f"{t.tm_sec:02d}.{ms % 1000:03d}Z")
    from omp_session.js.date import to_iso

    return to_iso(ms)


def _row(info: SessionInfo, parent: str | None) -> dict[str, Any]:
    """The stable fields of docs/cli.md."""
    row = {"path": info.path, "id": info.id, "title": info.title, "cwd": info.cwd, "created": _iso(info.created),
           "modified": _iso(info.modified), "messages": info.message_count, "size": info.size,
           "status": info.status, "first_message": info.first_message, "parent_session": info.parent_session_path,
           "subagent_of": parent}
    if info.path.endswith(".gz") and _archived(info.path):
        row["archived"] = True  # only on archives, so the fields of a plain listing stay as they were
    return row


def _archived(path: str) -> bool:
    from omp_session.catalog.summaries import is_archived  # here: a store's listing never loads it

    return is_archived(path)


def _add_stats(row: dict[str, Any], stats: SessionStats | None) -> None:
    if stats is None:  # unreadable or damaged beyond reading: the row stays, marked by nulls
        row.update(entries=None, branches=None, models=None, cost=None, tokens=None)
        return
    row.update(entries=stats.entries, messages=stats.messages, branches=stats.branches, models=stats.models,
               cost=stats.cost, tokens=stats.tokens)


PROGRESS_FROM = 20  # files to read before a progress bar is worth drawing


def _fill_stats(rows: list[dict[str, Any]], cache: ListCache) -> None:
    stale: list[int] = []
    stats_of: dict[int, os.stat_result | None] = {}
    for i, r in enumerate(rows):
        try:
            st: os.stat_result | None = os.stat(r["path"])
        except OSError:
            st = None
        stats_of[i] = st
        if st is not None and not cache.is_fresh(r["path"], st):
            stale.append(i)
    if len(stale) >= PROGRESS_FROM and sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        stale_set = set(stale)
        with Progress(TextColumn("reading sessions"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("stats", total=len(stale))
            for i, r in enumerate(rows):
                st = stats_of[i]
                _add_stats(r, None if st is None else cache.stats(r["path"], st))
                if i in stale_set:
                    progress.advance(task)
        return
    for i, r in enumerate(rows):
        st = stats_of[i]
        _add_stats(r, None if st is None else cache.stats(r["path"], st))


@command("list")
@click.option("--all", "all_projects", is_flag=True, help="Every project, not only the current one.")
@click.option("--project", "cwd", type=click.Path(file_okay=False), help="List the sessions of this project "
              "directory (default: the current directory's).")
@click.option("--cwd", "cwd_alias", type=click.Path(file_okay=False), hidden=True)  # the old name of --project
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's, from "
              "PI_CODING_AGENT_DIR, profiles and XDG).")
@since_option("Only sessions modified at or after this time (a date, or 7d / 12h / 30m ago).")
@until_option("Only sessions modified before this time.")
@click.option("--grep", "pattern", help="Only sessions whose title or first message matches (case-insensitive; "
              "* and ? are wildcards).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many sessions.")
@click.option("--sort", type=click.Choice(["modified", "created", "size", "messages", "title", "entries", "cost"]),
              default="modified",
              show_default=True, help="Order (newest / largest first); entries and cost turn on --stats.")
@click.option("--reverse", is_flag=True, help="Reverse the order.")
@click.option("--no-subagents", is_flag=True, help="Hide subagent sessions (shown under their parent).")
@click.option("--stats", "with_stats", is_flag=True, help="Add entries, branches, models, cost and tokens, "
              "read from the whole file (cached per file; a grown file is read from where it was).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the listing cache "
              "($XDG_CACHE_HOME/omp-session/list-stats.json).")
@json_option("One JSON array.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON object per line.")
@click.option("--foreign", is_flag=True, help="Also the Claude Code and Codex sessions not imported yet (omp-session "
              "import), after omp's.")
@store_option
@click.option("--user", "ns_user", metavar="USER", help="With --store: only sessions uploaded by this user (the part "
              "of sync's --namespace before its last @; needs the search tables, docs/team.md).")
@click.option("--machine", "ns_host", metavar="HOST", help="With --store: only sessions uploaded from this machine "
              "(the part of sync's --namespace after its last @).")
@click.option("--refresh", is_flag=True, help="With --store: first bring the store's search tables up to date "
              "(what index --store does), so that sessions written since the last index or sync are listed.")
def list_command(all_projects: bool, cwd: str | None, cwd_alias: str | None, root: str | None, since: int | None, until: int | None,
                 pattern: str | None, limit: int | None, sort: str, reverse: bool, no_subagents: bool,
                 with_stats: bool, no_cache: bool, as_json: bool, as_jsonl: bool, foreign: bool,
                 ns_user: str | None, ns_host: str | None, refresh: bool) -> None:
    """List sessions, newest first: when, title, cwd, messages, size, status.

    Reads only the head (4 KB) and tail (32 KB) of each file, as omp's own listing does, and
    never changes a session. What it read is cached per (path, size, mtime), so a second run
    reads only files that changed. --stats reads whole files (once; then only appended bytes).
    Archived sessions (*.jsonl.gz) are listed too.

    \b
    Examples:
      omp-session list                      # this project
      omp-session list --all --since 7d --grep 'fix*'
      omp-session list --all --jsonl | jq -r .path
      omp-session list --all --sort cost    # --stats: cost, tokens, models
      omp-session list --foreign            # + Claude Code, Codex to import
      omp-session list --store postgresql://db/omp --all --user alice --limit 20

    With --store on PostgreSQL or SQLite, the list comes from the store's search tables
    (index --store, sync --to): as they were last brought up to date; --refresh first does that.
    """

    cwd = cwd or cwd_alias
    if sort in ("entries", "cost"):  # only --stats knows them
        with_stats = True
    base = Path(root) if root else sessions_dir()
    folders: set[str] = set()
    stored = active_store()
    listed: StoreListing | None = None
    if stored is None and (ns_user is not None or ns_host is not None or refresh):
        flag = "user" if ns_user is not None else "machine" if ns_host is not None else "refresh"
        raise click.UsageError(f"--{flag} is for a store's sessions: it needs --store URL")
    if stored is not None:  # --store: the store's sessions, from its search tables or its bytes
        if with_stats:
            raise click.UsageError(f"--{'stats' if sort not in ('entries', 'cost') else 'sort ' + sort} reads "
                                   "whole local files: not available with --store")
        prefix = stored[0].root + ("" if all_projects else project_dir_name(cwd or os.getcwd()) + "/")
        listed = _store_listing(*stored, prefix, all_projects, since=since, until=until, pattern=pattern,
                                # the first LIMIT in omp's order are all --limit can show
                                limit=limit if sort == "modified" and not reverse else None,
                                subagents=not no_subagents, user=ns_user, host=ns_host, refresh=refresh)
        base, files = Path(prefix), []
    elif all_projects:
        root_dir = os.fspath(base)
        files = [f for bucket in _listing.glob_visible(root_dir, True)
                 for f in _session_files(_listing.node_join(root_dir, bucket), folders)]
    else:
        bucket = base / project_dir_name(cwd or os.getcwd())
        files = _session_files(os.fspath(bucket), folders) if bucket.is_dir() else []
    if foreign and stored is not None:
        raise click.UsageError("--foreign lists the Claude Code / Codex folders on this machine: not with --store")
    memo: tuple[OutputCache, dict[str, list[int]]] | None = None
    if (as_json or as_jsonl) and not with_stats and not foreign and not no_cache and since is None and until is None \
            and (no_subagents or not folders) and listed is None:
        # the output only depends on the options and on the files' state: print it as it was
        keys = _file_keys(files)
        if keys is not None:
            options = repr((all_projects, cwd, os.fspath(base), pattern, limit, sort, reverse, no_subagents,
                            as_json, as_jsonl))
            memo = (OutputCache(cache_dir(), options), keys)
            previous = memo[0].get(keys)
            if previous is not None:
                sys.stdout.write(previous)  # as it was written, without click's escape-code pass
                sys.stdout.flush()
                return
    cache: ListCache | None = None
    if listed is None:
        from omp_session.catalog.summaries import ListCache

        cache = ListCache(enabled=not no_cache)
        infos = _scan(files, cache)
    else:  # a store's: the local listing cache has nothing to do with them (and is not loaded)
        infos = listed.sessions
        if listed.skipped:
            click.echo(f"omp-session: skipped {len(listed.skipped)} stored file(s) that are not readable sessions: "
                       + ", ".join(listed.skipped[:3]), err=True)
    rows: list[dict[str, Any]] = []
    for info in infos:
        if (since is not None and info.modified < since) or (until is not None and info.modified >= until):
            continue
        if pattern is not None:
            haystack = f"{info.title or ''}\n{info.first_message}".lower()
            if not fnmatch.fnmatch(haystack, f"*{pattern.lower()}*"):
                continue
        rows.append(_row(info, None))
        if not no_subagents:
            subs = listed.subagents.get(info.path, []) if listed is not None else \
                _subagents(info, cache, folders) if cache is not None else []
            rows.extend(_row(sub, info.path) for sub in subs)
    if cache is not None:
        if with_stats:
            _fill_stats(rows, cache)
        cache.save()
    key = sort
    if sort != "modified" or reverse:
        # subagents stay under their parent: sort the parents, then re-attach
        parents = [r for r in rows if r["subagent_of"] is None]
        # created is an ISO-8601 string: it orders as text (a number key would make it all 0)
        parents.sort(key=lambda r: _sort_key(r[key], sort in ("title", "created")), reverse=sort != "title")
        if reverse:
            parents.reverse()
        children: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if r["subagent_of"] is not None:
                children.setdefault(r["subagent_of"], []).append(r)
        rows = [x for p in parents for x in (p, *children.get(p["path"], []))]
    if limit is not None:
        rows = rows[:limit]
    if foreign:
        rows.extend(_foreign_rows(None if all_projects else (cwd or os.getcwd()), since, until, pattern))
    if as_json or as_jsonl:
        text = _dumps(rows, indent=True) + "\n" if as_json else "".join(_dumps(r) + "\n" for r in rows)
        click.echo(text, nl=False)
        if memo is not None and len(infos) == len(files):  # a skipped file is reported on every run
            memo[0].put(memo[1], text)
        return
    if not rows:
        where = f"under {base}" + ("" if all_projects else " for this project")
        if listed is None and infos:  # sessions there are, only none passed --since/--until/--grep
            n = len(infos)
            click.echo(f"no session matches the filters ({n} session{'s' if n != 1 else ''} {where})")
        elif listed is not None and any(v is not None for v in (since, until, pattern, ns_user, ns_host)):
            click.echo(f"no session matches the filters {where}")  # the store filtered them itself
        else:
            click.echo(f"no sessions {where}")
        return
    # one line per session, fitted to the terminal (COLUMNS, else its width; 80 for the title
    # when piped): docs/display.md
    lines = table(rows, with_stats, terminal_width(), _count, _money, _size)
    if sys.stdout.isatty():
        lines.append(Styler()(f"{len(rows)} session(s)", "dim"))
    sys.stdout.write(harmless("\n".join(lines) + "\n"))


def _matches(pattern: str | None) -> Callable[[SessionInfo], bool] | None:
    if pattern is None:
        return None
    glob = f"*{pattern.lower()}*"
    return lambda info: fnmatch.fnmatch(f"{info.title or ''}\n{info.first_message}".lower(), glob)


def _store_listing(parsed: StoreURL, storage: SessionStorage, prefix: str, all_projects: bool, *,
                   since: int | None, until: int | None, pattern: str | None, limit: int | None, subagents: bool,
                   user: str | None, host: str | None, refresh: bool) -> StoreListing:
    """The store's sessions under ``prefix``: from its search tables when it has them (rows
    only), else read from their bytes (every session under ``prefix``)."""
    from omp_session.store.derived.namespace import check_namespace

    for flag, what, value in (("user", "user", user), ("machine", "host", host)):
        why = None if value is None else check_namespace(value, what)
        if why is not None:
            raise click.UsageError(f"--{flag}: {why}")
    filters = "--user" if user is not None else "--machine" if host is not None else None
    if parsed.kind not in ("postgres", "sqlite"):
        if filters or refresh:
            from omp_session.store.derived.layout import not_supported

            # what the store is, not how the command was typed: a runtime error (exit 1), as for search and stats
            raise not_supported(parsed.name, filters or "--refresh")
        from omp_session.catalog.store_listing import list_store_sessions

        return list_store_sessions(storage, prefix, all_buckets=all_projects)
    from omp_session.catalog.store_listing import list_derived_sessions, list_store_sessions
    from omp_session.store.derived import open_derived
    from omp_session.store.derived.layout import checked_version, needs_tables
    from omp_session.store.derived.schema import SCHEMA_VERSION

    if refresh:
        from omp_session.catalog.derived import refresh_url

        refresh_url(parsed, create=False)
    with open_derived(parsed, reading=not refresh) as tables:
        version = checked_version(tables)  # a newer layout: refused, not misread
        if version == SCHEMA_VERSION:
            return list_derived_sessions(tables, prefix, all_buckets=all_projects, since_ms=since, until_ms=until,
                                         user=user, host=host, match=_matches(pattern), limit=limit,
                                         subagents=subagents)
        if filters:
            raise needs_tables(tables, filters, version)
    if version is not None:  # the listing stays right, only slower: say how to make it fast again
        click.echo(f"omp-session: reading every session: the search tables of {parsed.name} are of another layout "
                   f"({version}, this omp-session's: {SCHEMA_VERSION}): run omp-session index --store URL", err=True)
    return list_store_sessions(storage, prefix, all_buckets=all_projects)


def _foreign_rows(project: str | None, since: int | None, until: int | None,
                  pattern: str | None) -> list[dict[str, Any]]:
    """The not yet imported Claude Code / Codex sessions as list rows (omp's fields, plus
    ``agent``, ``import_status``: new, unimportable (an import could not convert it as it is now),
    or changed since it was imported; and ``import_error``: why it is unimportable)."""
    from omp_session.foreign.batch import list_foreign_detailed, select_sessions

    found = list_foreign_detailed(("claude", "codex"))
    chosen, _ = select_sessions([f.info for f in found], project=project)
    keep = {f.path for f in chosen}
    rows: list[dict[str, Any]] = []
    for listed in found:
        info, status = listed.info, listed.status
        modified = info.modified_ms if info.modified_ms == info.modified_ms else None  # NaN: no date
        if info.path not in keep or (since is not None and (modified is None or modified < since)) \
                or (until is not None and (modified is None or modified >= until)):
            continue
        if pattern is not None:
            haystack = f"{info.title or ''}\n{info.first_message or ''}".lower()
            if not fnmatch.fnmatch(haystack, f"*{pattern.lower()}*"):
                continue
        try:
            size: int | None = os.stat(info.path).st_size
        except OSError:
            size = None
        created = listed.created_ms if listed.created_ms == listed.created_ms else None
        rows.append({"path": info.path, "id": info.id, "title": info.title, "cwd": info.cwd,
                     "created": None if created is None else _iso(int(created)),
                     "modified": None if modified is None else _iso(int(modified)),
                     "messages": info.message_count, "size": size, "status": f"{info.source}:{status}",
                     "first_message": info.first_message or "", "parent_session": None, "subagent_of": None,
                     "agent": info.source, "import_status": status, "import_error": listed.reason or None})
    return rows


def _dumps(value: Any, indent: bool = False) -> str:
    # orjson: the stdlib encoder falls back to pure Python when indenting, the bulk of a warm listing
    import orjson  # here: only the JSON output needs it

    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0).decode()
    except (orjson.JSONEncodeError, TypeError):  # an integer beyond 64 bits in a damaged usage
        text = json.dumps(value, ensure_ascii=False, indent=1 if indent else None)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (omp wrote it escaped): print it escaped
            text = json.dumps(value, ensure_ascii=True, indent=1 if indent else None)
        return text


def _sort_key(value: Any, text: bool) -> tuple[bool, Any]:
    # a JS-string total (from a damaged usage) sorts as 0 so numbers and strings never meet
    if value is None:
        return (True, "" if text else 0)
    if text:
        return (False, value)
    return (False, value if isinstance(value, int | float) else 0)


def _count(value: Any) -> str:
    return "?" if value is None else str(value)


def _money(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"${value:.2f}"
    return "?" if value is None else str(value)


def _size(n: int | None) -> str:
    if n is None:  # a foreign session whose file is gone (Codex's database still lists it)
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)
