"""The 5-hour billing blocks on the costs page: a summary of the active block, a chart of cost per
block and the table, drawn from ``StatsReport.blocks_dict`` (what ``stats --all --blocks --json``
prints), so the page and the JSON cannot disagree.

The numbers a script may want to check carry their JSON value in a ``data-value`` attribute;
every text from a session (model names) is escaped.
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any, Final

__all__ = ["CHART_BLOCKS", "blocks_section"]

CHART_BLOCKS: Final = 60  # the chart shows the most recent blocks; the table has them all
_BAR: Final = "#4e79a7"
_PROJECTED: Final = "#4e79a755"


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _money(x: Any) -> str:
    if not isinstance(x, int | float):
        return _e(x)  # a JS-string total of a damaged usage, shown as it is
    return f"${x:,.2f}" if abs(x) >= 0.01 or x == 0 else f"${x:,.4f}"


def _tokens(x: Any) -> str:
    if not isinstance(x, int | float):
        return _e(x)
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:,.0f}"


def _clock(iso: str | None, *, day: bool = True) -> str:
    """``2026-03-01T10:00:00+01:00`` as ``2026-03-01 10:00`` (``10:00`` without the day)."""
    if not iso:
        return "?"
    return iso[:16].replace("T", " ") if day else iso[11:16]


def _span(minutes: int | None) -> str:
    if minutes is None:
        return "?"
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {mins:02d}m" if hours else f"{mins}m"


def _minutes_between(start: str | None, end: str | None) -> int | None:
    try:
        return int((datetime.fromisoformat(end or "") - datetime.fromisoformat(start or "")).total_seconds() // 60)
    except ValueError:
        return None


def _data(value: Any) -> str:
    return f' data-value="{_e(repr(value) if isinstance(value, float) else value)}"'


def _active(block: dict[str, Any]) -> str:
    billed, projected = block["billed"], block["projected"]
    parts = [f'<p class="active-block" id="active-block">Active block since {_e(_clock(block["start"]))}: '
             f'<strong id="active-remaining"{_data(block["remainingMinutes"])}>{_span(block["remainingMinutes"])} '
             f'left</strong> (until {_e(_clock(block["end"], day=False))}), '
             f'<span id="active-cost"{_data(billed["cost"])}>{_money(billed["cost"])}</span> so far']
    if projected is not None:
        parts.append(f', projected <span id="active-projected"{_data(projected["cost"])}>'
                     f'{_money(projected["cost"])}</span> ({_tokens(projected["totalTokens"])} tokens) by its end')
    return "".join(parts) + ".</p>"


def _chart(blocks: list[dict[str, Any]]) -> str:
    shown = [b for b in blocks if b["kind"] == "block"][-CHART_BLOCKS:]
    if not shown:
        return ""

    def height(b: dict[str, Any]) -> float:
        cost = b["billed"]["cost"]
        projected = b["projected"]["cost"] if b["projected"] else 0
        return max(x if isinstance(x, int | float) else 0 for x in (cost, projected))

    top = max(height(b) for b in shown) or 1.0
    left, plot_h, bottom, step = 64, 160, 70, 18
    bar = step - 4
    width = left + step * len(shown) + 10
    out = [f'<svg role="img" id="blocks-chart" width="{width}" height="{plot_h + bottom}" '
           f'viewBox="0 0 {width} {plot_h + bottom}"><title>Billed cost per 5-hour block</title>']
    for i in range(3):
        y = 10 + plot_h - plot_h * i / 2
        out.append(f'<line x1="{left}" x2="{width - 5}" y1="{y:.1f}" y2="{y:.1f}" stroke="#8884" />'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(_money(top * i / 2))}</text>')
    label_every = max(1, len(shown) // 12)
    for n, b in enumerate(shown):
        x = left + n * step
        base = 10 + plot_h
        if b["projected"] and isinstance(b["projected"]["cost"], int | float):
            h = plot_h * b["projected"]["cost"] / top
            out.append(f'<rect x="{x}" y="{base - h:.2f}" width="{bar}" height="{h:.2f}" fill="{_PROJECTED}">'
                       f'<title>{_e(_clock(b["start"]))}: projected {_e(_money(b["projected"]["cost"]))}</title></rect>')
        cost = b["billed"]["cost"]
        h = plot_h * cost / top if isinstance(cost, int | float) and cost > 0 else 0
        out.append(f'<rect x="{x}" y="{base - h:.2f}" width="{bar}" height="{h:.2f}" fill="{_BAR}">'
                   f'<title>{_e(_clock(b["start"]))}: {_e(_money(cost))}</title></rect>')
        if n % label_every == 0:
            tx, ty = x + bar / 2, plot_h + 22
            out.append(f'<text x="{tx:.1f}" y="{ty}" text-anchor="end" transform="rotate(-45 {tx:.1f} {ty})">'
                       f'{_e(_clock(b["start"])[5:])}</text>')  # the year left out: the label stays on the chart
    out.append("</svg>")
    return "".join(out)


def _row(b: dict[str, Any]) -> str:
    if b["kind"] == "gap":
        idle = _minutes_between(b["start"], b["end"])
        return (f'<tr class="gap"><td>(gap)</td><td>idle {_span(idle)}</td>'
                '<td></td><td></td><td></td><td></td><td></td></tr>')
    billed = b["billed"]
    label = _clock(b["start"]) if b["kind"] == "block" else "(unknown time)"
    if b["active"]:
        status = f"ACTIVE, {_span(b['elapsedMinutes'])} in, {_span(b['remainingMinutes'])} left"
    elif b["lastRequest"]:
        status = f"to {_clock(b['lastRequest'])}"
    else:
        status = ""
    models = ", ".join(m["key"].partition("/")[2] or m["key"] for m in b["models"])
    projected = b["projected"]
    proj = "" if projected is None else (f'<span class="projected"{_data(projected["cost"])}>'
                                          f'{_money(projected["cost"])}</span>')
    return (f'<tr class="block{" active" if b["active"] else ""}" data-start="{_e(b["start"] or "")}">'
            f"<td>{_e(label)}</td><td>{_e(status)}</td><td>{_e(models)}</td>"
            f'<td class="requests">{billed["requests"]:,}</td>'
            f'<td class="tokens"{_data(billed["totalTokens"])}>{_tokens(billed["totalTokens"])}</td>'
            f'<td class="cost"{_data(billed["cost"])}>{_money(billed["cost"])}</td><td>{proj}</td></tr>')


def blocks_section(doc: dict[str, Any], query: str) -> str:
    """The section for ``doc``, a ``blocks_dict``; ``query`` is the URL query of its JSON."""
    blocks: list[dict[str, Any]] = doc["blocks"]
    head = (f'<h2 id="blocks">5-hour blocks</h2><p class="meta">Billed usage in 5-hour billing blocks (each opens '
            f"at its first request's hour), newest first; times in {_e(doc['tz'])}, now {_e(_clock(doc['now']))}. "
            f'Same numbers as <code>omp-session stats --all --blocks --json</code> '
            f'(<a href="/api/costs?{_e(query)}">JSON</a>).</p>')
    if not blocks:
        return head + '<p class="meta" id="no-blocks">No billed usage in this report.</p>'
    active = next((b for b in blocks if b["active"]), None)
    timed, unknown = [b for b in blocks if b["kind"] != "unknown"], [b for b in blocks if b["kind"] == "unknown"]
    table = ('<div class="scroll"><table id="blocks-table"><thead><tr><th>block</th><th>status</th><th>models</th><th>requests</th>'
             "<th>tokens</th><th>cost</th><th>projected</th></tr></thead><tbody>"
             + "".join(_row(b) for b in [*reversed(timed), *unknown]) + "</tbody></table></div>")
    return head + (_active(active) if active else "") + _chart(blocks) + table
