"""The table of ``omp-session list``: one line per session, fitted to the terminal.

The id (as short as it can be while it names one listed session, at least 8 characters, as git
abbreviates) and the modification time are always shown; the title takes whatever width is left.
When the line does not fit, whole columns go, in ``DROP_ORDER`` (docs/display.md says so too).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from ._style import Styler, clip, width

__all__ = ["DROP_ORDER", "MIN_ID", "MIN_TITLE", "short_id_length", "table"]

MIN_ID = 8
MIN_TITLE = 20  # below this a column goes rather than the title
# first to go first; id, modified and title always stay
DROP_ORDER = ("created", "cwd", "status", "size", "messages", "model", "branches", "entries", "cost")
_GAP = "  "
_RIGHT = {"messages", "size", "entries", "branches", "cost"}
_MAX_CWD = 32


def short_id_length(ids: list[str]) -> int:
    """The shortest prefix length (at least ``MIN_ID``) at which every id differs from the others,
    case-insensitively as SESSION prefixes are matched."""
    ordered = sorted({i.lower() for i in ids})
    need = MIN_ID
    for a, b in pairwise(ordered):
        common = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            common += 1
        need = max(need, common + 1)
    return need


def first_line(text: str) -> str:
    """The first non-blank line, its whitespace runs (tabs too) made single spaces."""
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split())
    return ""


def _short_cwd(cwd: str) -> str:
    home = os.path.expanduser("~")
    if home != "/" and (cwd == home or cwd.startswith(home + "/")):
        cwd = "~" + cwd[len(home):]
    return cwd if width(cwd) <= _MAX_CWD else "…" + cwd[-(_MAX_CWD - 1):]  # the project end of a path tells most


def table(rows: list[dict[str, Any]], with_stats: bool, cells: int | None,
          count: Callable[[Any], str], money: Callable[[Any], str], size: Callable[[int], str]) -> list[str]:
    """The lines of the table (header first) for at most ``cells`` columns (None: no limit; the
    title is then cut at 80)."""
    id_len = short_id_length([r["id"] or "" for r in rows])
    columns = ["id", "modified", "created", "messages", "size", "status"]
    if with_stats:
        columns += ["entries", "branches", "cost", "model"]
    columns += ["cwd", "title"]
    cell_rows: list[dict[str, str]] = []
    for r in rows:
        title = first_line(r["title"] or "") or first_line(r["first_message"] or "")
        cell = {"id": (r["id"] or "")[:id_len], "modified": _when(r["modified"]), "created": _when(r["created"]),
                "messages": count(r["messages"]), "size": size(r["size"]), "status": r["status"] or "",
                "cwd": _short_cwd(r["cwd"] or ""),
                "title": ("↳ " if r["subagent_of"] else "") + title,
                "gz": " [gz]" if r.get("archived") else ""}
        if with_stats:
            models = r["models"] or []
            cell.update(entries=count(r["entries"]), branches=count(r["branches"]), cost=money(r["cost"]),
                        model=first_line(models[-1]) if models else "")
        cell_rows.append(cell)
    widths = {c: max([width(c)] + [width(x[c]) for x in cell_rows]) for c in columns if c != "title"}
    title_need = max([width("title")] + [width(x["title"] + x["gz"]) for x in cell_rows])
    if cells is not None:
        def fixed() -> int:
            return sum(widths[c] + len(_GAP) for c in columns if c != "title")

        # a foreign row's status ("claude:new") is what tells it from omp's: kept to the last
        foreign = any(":" in x["status"] for x in cell_rows)
        order = [c for c in DROP_ORDER if c != "status"] + ["status"] if foreign else DROP_ORDER
        for name in order:
            if fixed() + min(title_need, MIN_TITLE) <= cells:
                break
            if name in columns:
                columns.remove(name)
        title_width = max(cells - fixed(), min(title_need, MIN_TITLE // 2))
    else:
        title_width = 80
    st = Styler()

    def line(values: dict[str, str], header: bool = False) -> str:
        parts = []
        for c in columns:
            if c == "title":
                gz = values.get("gz", "")
                text = clip(values[c], max(title_width - width(gz), 1)) + gz
            else:
                pad = " " * (widths[c] - width(values[c]))
                text = pad + values[c] if c in _RIGHT else values[c] + pad
            parts.append(st(text, "bold") if header else text)
        return _GAP.join(parts).rstrip()

    return [line({c: c for c in columns}, header=True), *(line(x) for x in cell_rows)]


def _when(iso: str | None) -> str:
    return (iso or "")[:16].replace("T", " ")
