"""Terminal and JSON rendering for the CLI (rich for people, stable JSON for machines)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree as RichTree

from .. import codec
from ..session import Session

__all__ = ["context", "show", "summary", "tree"]


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def _emit_json(value: Any) -> None:
    sys.stdout.write((codec.stringify(value) or "null") + "\n")


def _clip(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


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
                parts.append(f"→ {block.get('name')}({_clip(json.dumps(block.get('arguments')), 40)})")
            elif kind == "image":
                parts.append("[image]")
        return " ".join(parts)
    return ""


def summary(entry: Any) -> str:
    """A one-line description of an entry."""
    if not isinstance(entry, dict):
        return f"(non-object record: {_clip(json.dumps(entry), 40)})"
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


def show(s: Session, as_json: bool) -> None:
    header = s.header or {}
    info = {
        "path": s.path,
        "id": header.get("id"),
        "title": s.get_session_name(),
        "cwd": header.get("cwd"),
        "created": header.get("timestamp"),
        "version": header.get("version"),
        "migrated": s.migrated,
        "entries": len(s),
        "malformed_records": len(s.malformed),
        "leaf_id": s.get_leaf_id(),
        "diagnostics": [d.to_json() for d in s.diagnostics],
    }
    if as_json:
        _emit_json(info)
        return
    table = Table(show_header=False, box=None)
    for key in ("path", "id", "title", "cwd", "created", "version", "entries", "malformed_records", "leaf_id"):
        table.add_row(key, escape(str(info[key])))
    console = _console()
    console.print(table)
    for d in s.diagnostics:
        console.print(f"[yellow]{escape(str(d))}[/yellow]" if d.severity.value != "error" else
                      f"[red]{escape(str(d))}[/red]")


def tree(s: Session, as_json: bool) -> None:
    t = s.get_tree()
    on_branch = set(s.branch_indices())
    if as_json:
        rows = []
        for node, depth in t.walk():
            label = s.get_label(s.ids[node])
            row: dict[str, Any] = {"id": s.ids[node], "depth": depth, "line": s.line_of_entry(node),
                                   "on_branch": node in on_branch, "summary": summary(s.entry_at(node))}
            if label is not None:
                row["label"] = label
            rows.append(row)
        _emit_json(rows)
        return
    root = RichTree(f"[bold]{escape(str(s.get_session_name() or (s.header or {}).get('id', s.path)))}[/bold]")
    parents: dict[int, Any] = {}
    stack: list[Any] = [root]
    for node, depth in t.walk():
        del stack[depth + 1:]
        label = s.get_label(s.ids[node])
        mark = "*" if node in on_branch else " "
        text = f"{mark} [dim]{escape(str(s.ids[node]))}[/dim] {escape(summary(s.entry_at(node)))}"
        if label is not None:
            text += f" [cyan]{escape(f'[{label}]')}[/cyan]"
        branch = stack[depth].add(text)
        parents[node] = branch
        stack.append(branch)
    _console().print(root)


def context(s: Session, as_json: bool, *, transcript: bool) -> None:
    ctx = s.build_session_context(transcript=transcript)
    if as_json:
        _emit_json(ctx)
        return
    console = _console()
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
