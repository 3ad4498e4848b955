"""Terminal and JSON rendering for the CLI (rich for people, stable JSON for machines)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree as RichTree

from omp_session.js import codec
from omp_session.model.session import Session
from omp_session.model.usage import usage_statistics

__all__ = ["context", "show", "show_info", "summary", "tree"]


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


@contextmanager
def paged(console: Console) -> Iterator[None]:
    """Page long output on a terminal (``$PAGER``, else ``less -R``), never when piped or when
    ``OMP_SESSION_PAGER=0``; colours stay, as on the terminal."""
    if not (sys.stdout.isatty() and os.environ.get("OMP_SESSION_PAGER", "1") != "0"):
        yield
        return
    os.environ.setdefault("LESS", "-FRX")  # quit at once when it fits on one screen; keep colours
    with console.pager(styles=True):
        yield


def _emit_json(value: Any) -> None:
    sys.stdout.write((codec.stringify(value) or "null") + "\n")


def _clip(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value)
    except RecursionError:  # nested deeper than json.dumps goes (the reader takes such records)
        return codec.stringify(value) or "null"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "toolCall":
                parts.append(f"→ {block.get('name')}({_clip(_dumps(block.get('arguments')), 40)})")
            elif kind == "image":
                parts.append("[image]")
        return " ".join(parts)
    return ""


def summary(entry: Any) -> str:
    """A one-line description of an entry."""
    if not isinstance(entry, dict):
        return f"(non-object record: {_clip(_dumps(entry), 40)})"
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        msg = entry["message"]
        role = msg.get("role")
        if role == "toolResult":
            return f"toolResult {msg.get('toolName')}: {_clip(_text_of(msg.get('content')), 60)}"
        return f"{role}: {_clip(_text_of(msg.get('content')), 70)}"
    if kind == "compaction":
        return f"compaction: {_clip(str(entry.get('shortSummary') or entry.get('summary', '')), 60)}"
    if kind == "branch_summary":
        return f"branch_summary: {_clip(str(entry.get('summary', '')), 60)}"
    if kind == "model_change":
        return f"model_change {entry.get('model')}"
    if kind == "label":
        return f"label {entry.get('targetId')} = {entry.get('label')!r}"
    if kind == "title_change":
        return f"title_change {entry.get('title')!r}"
    if kind == "thinking_level_change":
        return f"thinking_level_change {entry.get('thinkingLevel')}"
    return str(kind)


def _models_used(s: Session) -> list[str]:
    """provider/model of every assistant message, in order of first use (from the envelopes)."""
    seen: dict[str, None] = {}
    for k in [m.start() for m in re.finditer(rb"\x01", s.kinds)]:
        head = s.journal.heads[k + 1]
        if head is not None and isinstance(head.model, str):
            seen.setdefault(f"{head.provider}/{head.model}" if isinstance(head.provider, str) else head.model)
    return list(seen)


def _tips(s: Session) -> list[int]:
    """Entries no other entry continues from: the tips of the branches."""
    parents = set(s.parent_index)
    return [k for k in range(len(s)) if k not in parents]


def show_info(s: Session) -> dict[str, Any]:
    """Everything ``show`` prints, as stable JSON fields."""
    header = s.header or {}
    types = Counter(t if isinstance(t, str) else "(no type)" for t in s.types)
    tips = _tips(s)
    leaf = s.get_leaf_id()
    branch = s.get_branch()
    severities = Counter(d.severity.value for d in s.diagnostics)
    return {
        "path": s.path,
        "id": header.get("id"),
        "title": s.get_session_name(),
        "title_source": header.get("titleSource"),
        "cwd": header.get("cwd"),
        "created": header.get("timestamp"),
        "version": header.get("version"),
        "migrated": s.migrated,
        "size": s.journal.size,
        "parent_session": header.get("parentSession"),
        "entries": len(s),
        "entry_types": dict(sorted(types.items())),
        "malformed_records": len(s.malformed),
        "leaf_id": leaf,
        "branch_length": len(branch),
        "branches": len(tips),
        "branch_tips": [s.ids[k] for k in tips[:50]],
        "labels": {str(k): v for k, v in s.labels().items()},
        "models": _models_used(s),
        "usage": {"branch": usage_statistics(branch), "all": s.get_usage_statistics()},
        "diagnostics_summary": {k: severities.get(k, 0) for k in ("error", "warning", "info")},
        "diagnostics": [d.to_json() for d in s.diagnostics],
    }


def _money(usage: dict[str, Any]) -> str:
    cost = usage.get("cost")
    total = cost if isinstance(cost, int | float) else None
    tokens = usage.get("input", 0), usage.get("output", 0)
    return (f"${total:.4f}" if total is not None else "-") + f" · {tokens[0]} in / {tokens[1]} out"


def show(s: Session, as_json: bool) -> None:
    info = show_info(s)
    if as_json:
        _emit_json(info)
        return
    table = Table(show_header=False, box=None)
    rows: list[tuple[str, Any]] = [
        ("path", info["path"]), ("id", info["id"]),
        ("title", f"{info['title']} ({info['title_source']})" if info["title"] else None),
        ("cwd", info["cwd"]), ("created", info["created"]), ("version", info["version"]),
        ("size", f"{info['size']:,} bytes"), ("parent session", info["parent_session"]),
        ("entries", f"{info['entries']} (" + ", ".join(f"{k} {v}" for k, v in info["entry_types"].items()) + ")"),
        ("malformed records", info["malformed_records"]),
        ("leaf", f"{info['leaf_id']} (branch of {info['branch_length']} entries)"),
        ("branches", f"{info['branches']} tips: " + ", ".join(str(t) for t in info["branch_tips"][:8])),
        ("labels", ", ".join(f"{k}={v}" for k, v in info["labels"].items()) or None),
        ("models", ", ".join(info["models"]) or None),
        ("cost (branch)", _money(info["usage"]["branch"])), ("cost (all)", _money(info["usage"]["all"])),
        ("problems", ", ".join(f"{v} {k}" for k, v in info["diagnostics_summary"].items() if v) or "none"),
    ]
    for key, value in rows:
        if value is not None:
            table.add_row(key, escape(str(value)))
    console = _console()
    with paged(console):
        console.print(table)
        for d in s.diagnostics:
            console.print(f"[yellow]{escape(str(d))}[/yellow]" if d.severity.value != "error" else
                          f"[red]{escape(str(d))}[/red]")


def _is_message(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("type") in ("message", "custom_message", "branch_summary",
                                                              "compaction")


def tree(s: Session, as_json: bool, *, depth: int | None = None, only_messages: bool = False) -> None:
    """The entry tree; ``depth`` cuts it, ``only_messages`` hides other entries (their children
    hang from the nearest shown ancestor)."""
    t = s.get_tree()
    on_branch = set(s.branch_indices())
    rows: list[tuple[int, int]] = []  # (entry, shown depth)
    shown_at: list[int] = []  # shown depth of the nearest shown ancestor per tree depth
    for node, d in t.walk():
        del shown_at[d:]
        parent_shown = shown_at[-1] if shown_at else -1
        visible = not only_messages or _is_message(s.entry_at(node))
        level = parent_shown + 1 if visible else parent_shown
        shown_at.append(level)
        if visible and (depth is None or level < depth):
            rows.append((node, level))
    if as_json:
        out = []
        for node, level in rows:
            entry = s.entry_at(node)
            label = s.get_label(s.ids[node])
            row: dict[str, Any] = {"id": s.ids[node], "depth": level, "line": s.line_of_entry(node),
                                   "type": entry.get("type") if isinstance(entry, dict) else None,
                                   "on_branch": node in on_branch, "summary": summary(entry)}
            if label is not None:
                row["label"] = label
            out.append(row)
        _emit_json(out)
        return
    root = RichTree(f"[bold]{escape(str(s.get_session_name() or (s.header or {}).get('id', s.path)))}[/bold]")
    # A run without forks stays at one indent: nesting every entry pushed a long session's lines
    # past the terminal width, where they were cut off. Only a fork indents: each of its branches
    # hangs under the fork point, and the rest of that branch is listed under its first entry.
    parents: list[int] = []  # row index of each row's shown parent, -1 at the top
    last_at: list[int] = []  # row index of the latest row per shown level
    for i, (_node, level) in enumerate(rows):
        del last_at[level:]
        parents.append(last_at[-1] if last_at else -1)
        last_at.append(i)
    kids = Counter(parents)
    nodes: list[Any] = []  # each row's rich node
    runs: list[Any] = []  # where each row's only child goes: the row's own run of entries
    for i, (node, _level) in enumerate(rows):
        p = parents[i]
        container = root if p < 0 else runs[p] if kids[p] == 1 else nodes[p]
        entry = s.entry_at(node)
        label = s.get_label(s.ids[node])
        kind = entry.get("type") if isinstance(entry, dict) else None
        text = escape(summary(entry))
        if kind in ("compaction", "branch_summary"):
            text = f"[magenta]{text}[/magenta]"
        if node in on_branch:
            text = f"[bold green]*[/bold green] [dim]{escape(str(s.ids[node]))}[/dim] [bold]{text}[/bold]"
        else:
            text = f"  [dim]{escape(str(s.ids[node]))} {text}[/dim]"
        if label is not None:
            text += f" [cyan]{escape(f'[{label}]')}[/cyan]"
        nodes.append(container.add(text))
        runs.append(nodes[-1] if kids[p] > 1 else container)
    console = _console()
    with paged(console):
        console.print(root)


def context(s: Session, as_json: bool, *, transcript: bool) -> None:
    ctx = s.build_session_context(transcript=transcript)
    if as_json:
        _emit_json(ctx)
        return
    console = _console()
    with paged(console):
        _print_context(console, ctx)


def _print_context(console: Console, ctx: dict[str, Any]) -> None:
    models = ", ".join(f"{k}={v}" for k, v in ctx.get("models", {}).items()) or "-"
    console.print(f"[bold]context[/bold]: {len(ctx['messages'])} messages · thinking "
                  f"{ctx.get('thinkingLevel')} · models {models}")
    for msg in ctx["messages"]:
        role = msg.get("role", "?") if isinstance(msg, dict) else "?"
        if role == "compactionSummary" or role == "branchSummary":
            text = str(msg.get("summary", ""))
        else:
            text = _text_of(msg.get("content")) if isinstance(msg, dict) else ""
        console.print(f"  [bold]{escape(str(role))}[/bold]: {escape(_clip(text, 100))}")
