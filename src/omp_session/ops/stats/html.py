"""``omp-session stats --html OUT``: one self-contained page with charts drawn as inline SVG.

No script, no font, no image and no stylesheet is fetched: the page opens offline and shows the
same on every machine. Charts: billed cost per day stacked by model, and billed tokens per
project; then the report's rows as a table. Every text from a session (titles, paths, model
names) is escaped.
"""

from __future__ import annotations

import html
from datetime import date, timedelta
from typing import Any, Final

from .group import TIME_GROUPINGS, UNKNOWN, Totals, zone_name
from .report import StatsReport

__all__ = ["render_html"]

_PALETTE: Final = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                   "#9c755f", "#bab0ac")
_OTHERS: Final = "other models"
_MAX_SERIES: Final = len(_PALETTE) - 1  # the rest of the models share the last colour
_MAX_DAYS: Final = 3660  # a longer span is drawn with its active days only

_CSS: Final = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;
padding:0 1rem;color:#222;background:#fff}
h1{font-size:1.5rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:2rem 0 .6rem}
.meta{color:#666}.legend span{display:inline-block;margin:0 1rem .3rem 0}
.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-1px}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:.25rem .5rem;border-bottom:1px solid #e3e3e3;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left;white-space:normal;overflow-wrap:anywhere;min-width:10rem}
table.by-time td:first-child,table.by-time th:first-child{white-space:nowrap;min-width:0}
.scroll{overflow-x:auto;max-width:100%}svg{max-width:100%;height:auto}
tfoot td{font-weight:600}svg text{font:11px system-ui,sans-serif;fill:#444}
@media (prefers-color-scheme:dark){body{background:#161616;color:#ddd}svg text{fill:#bbb}
th,td{border-color:#333}.meta{color:#999}}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _money(x: float) -> str:
    return f"${x:,.2f}" if abs(x) >= 0.01 or x == 0 else f"${x:,.4f}"


def _tokens(x: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:,.0f}"


def _series(report: StatsReport) -> tuple[list[str], list[str], dict[str, dict[str, float]]]:
    """Days (in order), models (costliest first, the tail folded into one) and day -> model -> cost."""
    table = report.crosstab("day", "model", value="cost")
    by_model: dict[str, float] = {}
    for cells in table.values():
        for model, cost in cells.items():
            by_model[model] = by_model.get(model, 0.0) + cost
    models = sorted(by_model, key=lambda m: (-by_model[m], m))
    if len(models) > _MAX_SERIES + 1:
        keep = set(models[:_MAX_SERIES])
        folded: dict[str, dict[str, float]] = {}
        for day, cells in table.items():
            row = folded.setdefault(day, {})
            for model, cost in cells.items():
                name = model if model in keep else _OTHERS
                row[name] = row.get(name, 0.0) + cost
        table, models = folded, [*models[:_MAX_SERIES], _OTHERS]
    return _calendar(table), models, table


def _calendar(table: dict[str, dict[str, float]]) -> list[str]:
    """The days of ``table`` with the days between filled in, so the axis is time: a quiet day is a gap."""
    known = sorted(d for d in table if d != UNKNOWN)
    days = known
    if known:
        first, last = date.fromisoformat(known[0]), date.fromisoformat(known[-1])
        if (last - first).days <= _MAX_DAYS:
            days = [(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]
    return days + ([UNKNOWN] if UNKNOWN in table else [])


def _cost_chart(report: StatsReport) -> str:
    days, models, table = _series(report)
    if not days:
        return "<p class=meta>No usage in this report.</p>"
    colour = {m: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(models)}
    top = max(sum(table.get(d, {}).values()) for d in days) or 1.0
    left, plot_h, bottom = 64, 220, 58
    # about 900 px of bars however long the span: a bar may shrink to a hairline, never overflow
    step = min(40.0, 900 / len(days))
    bar = max(0.8, step * 0.8)
    width = round(left + step * len(days) + 10)
    out = [f'<svg role="img" width="{width}" height="{plot_h + bottom + 10}" '
           f'viewBox="0 0 {width} {plot_h + bottom + 10}"><title>Billed cost per day, stacked by model</title>']
    for i in range(5):
        value = top * i / 4
        y = 10 + plot_h - plot_h * i / 4
        out.append(f'<line x1="{left}" x2="{width - 5}" y1="{y:.1f}" y2="{y:.1f}" stroke="#8884" />'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(_money(value))}</text>')
    label_every = max(1, len(days) // 15)
    for n, day in enumerate(days):
        x = round(left + n * step, 2)
        y = 10.0 + plot_h
        for model in models:
            cost = table.get(day, {}).get(model, 0.0)
            if cost <= 0:
                continue
            h = plot_h * cost / top
            y -= h
            out.append(f'<rect x="{x}" y="{y:.2f}" width="{bar:.2f}" height="{h:.2f}" fill="{colour[model]}">'
                       f'<title>{_e(day)} {_e(model)}: {_e(_money(cost))}</title></rect>')
        if n % label_every == 0:
            tx, ty = x + bar / 2, plot_h + 22
            out.append(f'<text x="{tx:.1f}" y="{ty}" text-anchor="end" transform="rotate(-45 {tx:.1f} {ty})">'
                       f'{_e(day)}</text>')
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{colour[m]}"></i>{_e(m)}</span>' for m in models)
    return f'<div class=legend>{legend}</div>' + "".join(out)


def _project_chart(report: StatsReport) -> str:
    totals: dict[str, float] = {}
    for item in report.items:
        if item.billed:
            totals[item.project] = totals.get(item.project, 0) + item.record.total_tokens
    rows = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))[:30]
    if not rows:
        return "<p class=meta>No usage in this report.</p>"
    top = rows[0][1] or 1
    label_w, bar_w, row_h = 320, 520, 22
    height = row_h * len(rows) + 8
    out = [f'<svg role="img" width="{label_w + bar_w + 90}" height="{height}" '
           f'viewBox="0 0 {label_w + bar_w + 90} {height}"><title>Billed tokens per project</title>']
    for n, (project, tokens) in enumerate(rows):
        y = 4 + n * row_h
        w = max(1.0, bar_w * tokens / top) if tokens > 0 else 0
        shown = project if len(project) <= 48 else "…" + project[-47:]
        out.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{_e(shown)}<title>{_e(project)}</title>'
                   f'</text><rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
                   f'fill="{_PALETTE[0]}"><title>{_e(project)}: {tokens:,.0f} tokens</title></rect>'
                   f'<text x="{label_w + w + 6:.1f}" y="{y + 15}">{_e(_tokens(tokens))}</text>')
    out.append("</svg>")
    return "".join(out)


def _cells(t: Totals) -> str:
    return "".join(f"<td>{v}</td>" for v in (f"{t.requests:,}", f"{t.input:,.0f}", f"{t.output:,.0f}",
                                             f"{t.cache_read:,.0f}", f"{t.cache_write:,.0f}",
                                             f"{t.total_tokens:,.0f}", _e(_money(t.cost))))


def _table(report: StatsReport) -> str:
    head = ("<thead><tr><th>" + _e(report.by) + "</th><th>requests</th><th>input</th><th>output</th>"
            "<th>cache read</th><th>cache write</th><th>tokens</th><th>cost</th><th>tokens (current)</th>"
            "<th>cost (current)</th></tr></thead>")
    rows = []
    for g in report.groups:
        label = g.key
        if report.by == "session" and g.extra.get("title"):
            label = f"{g.extra['title']} — {g.key}"
        rows.append(f"<tr><td>{_e(label)}</td>{_cells(g.billed)}<td>{g.current.total_tokens:,.0f}</td>"
                    f"<td>{_e(_money(g.current.cost))}</td></tr>")
    t = report.total
    foot = (f"<tfoot><tr><td>total</td>{_cells(t.billed)}<td>{t.current.total_tokens:,.0f}</td>"
            f"<td>{_e(_money(t.current.cost))}</td></tr></tfoot>")
    # a narrow window scrolls the table in its own box; a date (or a week, a month) never wraps
    kind = ' class="by-time"' if report.by in TIME_GROUPINGS else ""
    return f"<div class=scroll><table{kind}>{head}<tbody>{''.join(rows)}</tbody>{foot}</table></div>"


def render_html(report: StatsReport) -> str:
    """The page for ``report`` (a complete HTML document; nothing in it refers to the network)."""
    w = report.to_dict()
    window = ", ".join(p for p in (f"since {w['since']}" if w["since"] else "",
                                   f"until {w['until']}" if w["until"] else "") if p) or "all time"
    meta = (f"{len(report.sessions)} session(s), {report.files} file(s) read; {_e(window)}; days in "
            f"{_e(zone_name(report.tz))}. Billed: every request in the files, on every branch, subagents "
            f"included; current: what each conversation's current branch holds.")
    total = report.total.billed
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>omp session stats</title><style>{_CSS}</style></head><body>"
        f"<h1>omp session stats: {_e(_money(total.cost))}, {_e(_tokens(total.total_tokens))} tokens</h1>"
        f"<p class=meta>{meta}</p>"
        f"<h2>Cost per day, by model</h2>{_cost_chart(report)}"
        f"<h2>Tokens per project</h2>{_project_chart(report)}"
        f"<h2>By {_e(report.by)}</h2>{_table(report)}"
        "</body></html>\n"
    )
