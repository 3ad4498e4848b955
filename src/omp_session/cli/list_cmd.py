"""``omp-session list``: the sessions of this project (or all), newest first (spec S11)."""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..jsdate import date_parse, to_iso
from ..listing import SessionInfo, list_all_sessions, list_sessions, scan_session_info
from ..paths import project_dir_name, sessions_dir

__all__ = ["list_command"]


def _parse_when(text: str | None) -> int | None:
    """``--since``/``--until``: anything JavaScript's ``Date.parse`` reads, or ``7d``/``12h``/``30m``."""
    if text is None:
        return None
    units = {"d": 86_400_000, "h": 3_600_000, "m": 60_000}
    if text[-1:] in units and text[:-1].isdigit():
        now = int(datetime.now(UTC).timestamp() * 1000)
        return now - int(text[:-1]) * units[text[-1]]
    ms = date_parse(text)
    if ms != ms:  # NaN: not a date
        raise click.BadParameter(f"{text!r} is not a date (try 2026-05-14, 2026-05-14T10:00Z or 7d)")
    return int(ms)


def _subagents(info: SessionInfo) -> list[SessionInfo]:
    """Subagent sessions live in the parent's artifacts directory as ``<agentId>.jsonl`` (S9.5)."""
    folder = info.path[: -len(".jsonl")] if info.path.endswith(".jsonl") else None
    if folder is None or not os.path.isdir(folder):
        return []
    found = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl") and not name.startswith(("__advisor", ".")):
            sub = scan_session_info(os.path.join(folder, name))
            if sub is not None:
                found.append(sub)
    return found


def _row(info: SessionInfo, parent: str | None) -> dict[str, Any]:
    """The stable fields of docs/cli.md."""
    def iso(ms: int | None) -> str | None:
        return None if ms is None else to_iso(ms)

    return {"path": info.path, "id": info.id, "title": info.title, "cwd": info.cwd, "created": iso(info.created),
            "modified": iso(info.modified), "messages": info.message_count, "size": info.size,
            "status": info.status, "first_message": info.first_message, "parent_session": info.parent_session_path,
            "subagent_of": parent}


@click.command("list")
@click.option("--all", "all_projects", is_flag=True, help="Every project, not only the current one.")
@click.option("--cwd", type=click.Path(file_okay=False), help="List the sessions of this project directory.")
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's, from "
              "PI_CODING_AGENT_DIR, profiles and XDG).")
@click.option("--since", help="Only sessions modified at or after this time (a date, or 7d / 12h / 30m ago).")
@click.option("--until", help="Only sessions modified before this time.")
@click.option("--grep", "pattern", help="Only sessions whose title or first message matches (case-insensitive; "
              "* and ? are wildcards).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many sessions.")
@click.option("--sort", type=click.Choice(["modified", "created", "size", "messages", "title"]), default="modified",
              show_default=True, help="Order (newest / largest first).")
@click.option("--reverse", is_flag=True, help="Reverse the order.")
@click.option("--no-subagents", is_flag=True, help="Hide subagent sessions (shown under their parent).")
@click.option("--json", "as_json", is_flag=True, help="One JSON array.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON object per line.")
def list_command(all_projects: bool, cwd: str | None, root: str | None, since: str | None, until: str | None,
                 pattern: str | None, limit: int | None, sort: str, reverse: bool, no_subagents: bool,
                 as_json: bool, as_jsonl: bool) -> None:
    """List sessions, newest first: when, title, cwd, messages, size, status.

    Reads only the head (4 KB) and tail (32 KB) of each file, as omp's own listing does, and
    never changes anything.

    \b
    Examples:
      omp-session list                      # this project
      omp-session list --all --since 7d --grep 'fix*'
      omp-session list --all --jsonl | jq -r .path
    """
    base = Path(root) if root else sessions_dir()
    if all_projects:
        infos = list_all_sessions(base, pins=())
    else:
        bucket = base / project_dir_name(cwd or os.getcwd())
        infos = list_sessions(bucket, pins=(), recover_backups=False) if bucket.is_dir() else []
    low, high = _parse_when(since), _parse_when(until)
    rows: list[dict[str, Any]] = []
    for info in infos:
        if (low is not None and info.modified < low) or (high is not None and info.modified >= high):
            continue
        if pattern is not None:
            haystack = f"{info.title or ''}\n{info.first_message}".lower()
            if not fnmatch.fnmatch(haystack, f"*{pattern.lower()}*"):
                continue
        rows.append(_row(info, None))
        if not no_subagents:
            rows.extend(_row(sub, info.path) for sub in _subagents(info))
    key = {"modified": "modified", "created": "created", "size": "size", "messages": "messages", "title": "title"}[sort]
    if sort != "modified" or reverse:
        # subagents stay under their parent: sort the parents, then re-attach
        parents = [r for r in rows if r["subagent_of"] is None]
        parents.sort(key=lambda r: (r[key] is None, r[key] or ""), reverse=sort != "title")
        if reverse:
            parents.reverse()
        children: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if r["subagent_of"] is not None:
                children.setdefault(r["subagent_of"], []).append(r)
        rows = [x for p in parents for x in (p, *children.get(p["path"], []))]
    if limit is not None:
        rows = rows[:limit]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    if as_jsonl:
        for r in rows:
            click.echo(json.dumps(r, ensure_ascii=False))
        return
    console = Console(highlight=False, soft_wrap=False)
    if not rows:
        console.print(f"no sessions under {escape(str(base))}" + ("" if all_projects else " for this project"))
        return
    table = Table(box=None, header_style="bold")
    for name in ("modified", "title", "messages", "size", "status", "id"):
        table.add_column(name, no_wrap=name != "title", overflow="ellipsis")
    for r in rows:
        title = r["title"] or r["first_message"]
        prefix = "  ↳ " if r["subagent_of"] else ""
        table.add_row((r["modified"] or "")[:16].replace("T", " "), escape(prefix + title[:80]), str(r["messages"]),
                      _size(r["size"]), r["status"] or "", r["id"][:13])
    console.print(table)
    if sys.stdout.isatty():
        console.print(f"[dim]{len(rows)} session(s)[/dim]")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)
