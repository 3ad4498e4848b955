"""The server's own pages as HTML: the sessions list, search results, costs, errors.

Every text that comes from a session (titles, messages, paths, snippets) goes through
``html.escape``; the pages hold no inline script (static/*.js do the little there is to do).
"""

from __future__ import annotations

import html
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

from omp_session.ops.search.index import HIGHLIGHT
from omp_session.ops.search.query import SearchHit
from omp_session.ops.stats.report import StatsReport

from .sessions import ACTIVE_MS, SORTS, Page, Query, Row, url_word

_PER_PAGE = Query().per_page  # a link leaves out the page size when it is the default
MAX_SEARCH_LIMIT: Final = 1_000_000  # a search limit past this is cut to it: no link asks for more

__all__ = ["COST_GROUPINGS", "MAX_SEARCH_LIMIT", "SearchCut", "costs_head", "costs_page", "error_page", "list_page", "search_page", "session_url"]

_NAV: Final = (("/", "Sessions"), ("/search", "Search"), ("/costs", "Costs"))
COST_GROUPINGS: Final = ("day", "week", "month", "model", "provider", "project", "session")


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def session_url(session_id: str, entry_id: str | None = None) -> str:
    url = "/s/" + url_word(session_id)
    return url + ("#" + url_word(entry_id) if entry_id else "")


def _layout(title: str, here: str, body: str, scripts: Iterable[str] = ()) -> str:
    nav = "".join(f'<a href="{href}"{" class=here" if href == here else ""}>{name}</a>'
                  for href, name in _NAV)
    tags = "".join(f'<script src="/static/{s}" defer></script>' for s in scripts)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_e(title)} · omp-session</title><link rel="stylesheet" href="/static/serve.css">{tags}'
            f'</head><body class="serve"><header class="top"><strong>omp-session</strong><nav>{nav}</nav></header>'
            f"<main class=\"page\">{body}</main></body></html>\n")


def error_page(status: int, message: str) -> str:
    return _layout(f"{status}", "", f'<h1>{status}</h1><p class="error">{_e(message)}</p>')


# ----- the sessions list ------------------------------------------------------------------------


def _when(ms: int | None) -> str:
    if ms is None:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


def _row_html(row: Row, now: float, sub: bool, with_cost: bool = False) -> str:
    badges = []
    if now - row.modified < ACTIVE_MS:
        badges.append('<span class="badge active" title="written to in the last 5 minutes">active</span>')
    if row.archived:
        badges.append('<span class="badge archived" title="an archived .jsonl.gz session">archived</span>')
    if sub:
        badges.append('<span class="badge sub">subagent</span>')
    title = row.title or row.first_message
    cost = f'<td class="num cost">{"" if row.cost is None else _money(row.cost)}</td>' if with_cost else ""
    cls = "session" + (" sub" if sub else "") + (" is-active" if now - row.modified < ACTIVE_MS else "")
    return (f'<tr class="{cls}" data-id="{_e(row.id)}"><td class="title"><a href="{_e(session_url(row.id))}">'
            f"{_e(title[:160])}</a> {''.join(badges)}"
            f'<div class="first">{_e(row.first_message[:200]) if row.title else ""}</div></td>'
            f'<td class="cwd">{_e(row.cwd)}</td><td class="when">{_when(row.modified)}</td>'
            f'<td class="when">{_when(row.created)}</td><td class="num">{row.messages}</td>'
            f'<td class="num">{_size(row.size)}</td>{cost}<td>{_e(row.status or "")}</td></tr>')


def _namespace_fields(namespaces: tuple[list[str], list[str]] | None, user: str, machine: str) -> str:
    """``serve --store``'s user and machine pickers (nothing on the files: ``namespaces`` None);
    a value asked for that no session has is still shown, as chosen."""
    if namespaces is None:
        return ""
    out = []
    for name, label, every, values, current in (("user", "User", "all users", namespaces[0], user),
                                                ("machine", "Machine", "all machines", namespaces[1], machine)):
        shown = [*values, current] if current and current not in values else values
        options = "".join(f'<option value="{_e(v)}"{" selected" if v == current else ""}>{_e(v)}</option>'
                          for v in shown)
        out.append(f'<label>{label} <select name="{name}" id="f-{name}"><option value="">{every}</option>'
                   f"{options}</select></label>")
    return "".join(out)


def _query_args(q: Query, **change: Any) -> str:
    args = {"project": q.project, "text": q.text, "model": q.model, "since": q.since, "until": q.until, "sort": q.sort,
            "reverse": "1" if q.reverse else "", "page": str(q.page), "user": q.user, "machine": q.machine,
            "per_page": str(q.per_page)}  # (the next page of 5 a page is the next 5, not the next 100)
    args.update({k: str(v) for k, v in change.items()})
    return urlencode({k: v for k, v in args.items() if v and not (k == "sort" and v == "modified")
                      and not (k == "page" and v == "1") and not (k == "per_page" and v == str(_PER_PAGE))})


def list_page(page: Page, q: Query, now: float, namespaces: tuple[list[str], list[str]] | None = None) -> str:
    """The sessions list; ``namespaces``: a store's users and machines to filter by."""
    projects = "".join(f'<option value="{_e(cwd)}"{" selected" if cwd == q.project else ""}>{_e(cwd or "(none)")} '
                       f"({n})</option>" for cwd, n in page.projects)
    sorts = "".join(f'<option{" selected" if s == q.sort else ""}>{s}</option>' for s in SORTS)
    form = (f'<form class="filters" id="filters" method="get" action="/">'
            f'<label>Project <select name="project" id="f-project"><option value="">all projects</option>'
            f"{projects}</select></label>"
            f'<label>Text <input type="search" name="text" id="f-text" value="{_e(q.text)}" '
            f'placeholder="title or first message"></label>'
            f'<label>Model <input type="search" name="model" id="f-model" value="{_e(q.model)}" '
            f'placeholder="provider/model"></label>'
            f'<label>From <input type="date" name="since" id="f-since" value="{_e(q.since)}"></label>'
            f'<label>To <input type="date" name="until" id="f-until" value="{_e(q.until)}"></label>'
            f"{_namespace_fields(namespaces, q.user, q.machine)}"
            f'<label>Sort <select name="sort" id="f-sort">{sorts}</select></label>'
            f'<label><input type="checkbox" name="reverse" value="1"{" checked" if q.reverse else ""}> reverse</label>'
            f'<button type="submit">Filter</button></form>')
    # the cost column only once the figures were asked for (a cost sort or a model filter)
    with_cost = any(r.stats_known for r in page.rows)
    rows = "".join(_row_html(r, now, False, with_cost) + "".join(_row_html(c, now, True, with_cost)
                                                                 for c in r.children)
                   for r in page.rows)
    cost_th = "<th>Cost</th>" if with_cost else ""
    # a narrow window scrolls the table in its own box, never the page
    table = ('<div class="table-scroll"><table class="sessions" id="sessions"><thead><tr><th>Title</th>'
             f"<th>Project</th><th>Modified</th><th>Created</th><th>Msgs</th><th>Size</th>{cost_th}<th>Status</th>"
             f"</tr></thead><tbody>{rows}</tbody></table></div>"
             if page.rows else '<p class="empty">No sessions match.</p>')
    pager = ""
    if page.pages > 1:
        prev = (f'<a rel="prev" href="/?{_e(_query_args(q, page=page.page - 1))}">&larr; newer</a>'
                if page.page > 1 else "")
        nxt = (f'<a rel="next" href="/?{_e(_query_args(q, page=page.page + 1))}">older &rarr;</a>'
               if page.page < page.pages else "")
        pager = f'<nav class="pager">{prev} <span>page {page.page} of {page.pages}</span> {nxt}</nav>'
    count = f'<p class="count" id="count">{page.total} session(s)</p>'
    if page.stats_pending:
        what = "sorted" if q.sort == "cost" else "filtered"
        count += (f'<p class="pending" id="stats-pending">Cost and models are still being computed for '
                  f'{page.stats_pending} session(s); the list is {what} by those known so far. Reload to see '
                  "more.</p>")
    return _layout("Sessions", "/", form + count + table + pager, ["list.js"])


# ----- search -----------------------------------------------------------------------------------


def _snippet(text: str) -> str:
    start, end = HIGHLIGHT
    out = []
    for i, part in enumerate(text.replace(end, start).split(start)):
        out.append(f"<mark>{_e(part)}</mark>" if i % 2 else _e(part))
    return "".join(out)


@dataclass(frozen=True)
class SearchCut:
    """The search page's limit cut its hits: the limit, and the role and sessions= it was asked
    with (kept in the links to more)."""

    limit: int
    role: str = ""
    sessions: bool = False


def _search_url(query: str, user: str, machine: str, role: str, sessions: bool, limit: int | None) -> str:
    params = [("q", query), ("role", role), ("sessions", "1" if sessions else ""), ("user", user),
              ("machine", machine), ("limit", "" if limit is None else str(limit))]
    return "/search?" + urlencode([(k, v) for k, v in params if v])


def _search_count(query: str, hits: list[SearchHit], groups: int, cut: SearchCut | None, user: str, machine: str) -> str:
    if cut is None:
        return f'<p class="count">{len(hits)} match(es) in {groups} session(s)</p>'
    # twice as many, up to the largest limit (at it, no link: it would show the same hits again)
    most = min(cut.limit * 2, MAX_SEARCH_LIMIT)
    more = _search_url(query, user, machine, cut.role, cut.sessions, most)
    show = f'<a href="{_e(more)}">show {most}</a>' if most > cut.limit else ""
    if cut.sessions:
        return (f'<p class="count">first {len(hits)} sessions shown (their best match each) &mdash; more sessions '
                f"match{': ' + show if show else ''}</p>")
    whole = _search_url(query, user, machine, cut.role, True, None)
    return (f'<p class="count">first {len(hits)} matches shown (in {groups} session(s)) &mdash; there are more: '
            f'{show + " &middot; " if show else ""}<a href="{_e(whole)}">one match per session</a></p>')


def search_page(query: str, hits: list[SearchHit] | None, error: str | None,
                namespaces: tuple[list[str], list[str]] | None = None, user: str = "", machine: str = "",
                cut: SearchCut | None = None) -> str:
    form = (f'<form class="filters" method="get" action="/search"><input type="search" name="q" id="q" '
            f'value="{_e(query)}" placeholder="words, &quot;a phrase&quot;, prefix*, OR, NOT" autofocus>'
            f'{_namespace_fields(namespaces, user, machine)}<button type="submit">Search</button></form>')
    if error is not None:
        return _layout("Search", "/search", form + f'<p class="error">{_e(error)}</p>')
    if hits is None:
        return _layout("Search", "/search", form)
    groups: dict[str, list[SearchHit]] = {}
    for h in hits:
        groups.setdefault(h.path, []).append(h)
    parts = [_search_count(query, hits, len(groups), cut, user, machine)]
    for group in groups.values():
        first = group[0]
        sid = first.session_id or ""
        parts.append(f'<section class="hit-group"><h2><a href="{_e(session_url(sid))}">'
                     f"{_e(first.title or '(untitled)')}</a></h2><div class=\"cwd\">{_e(first.cwd or '')}</div><ol>")
        for h in group:
            what = h.role or h.entry_type or "?"
            when = (h.timestamp or "")[:19].replace("T", " ")
            parts.append(f'<li class="hit"><a class="hit-link" href="{_e(session_url(sid, h.entry_id))}">'
                         f'<span class="what">{_e(what)} {_e(h.kind)}</span> <span class="when">{_e(when)}</span>'
                         f'<div class="snippet">{_snippet(h.snippet)}</div></a></li>')
        parts.append("</ol></section>")
    return _layout(f"Search: {query}", "/search", form + "".join(parts))


# ----- costs ------------------------------------------------------------------------------------


def _money(x: Any) -> str:
    return f"${x:,.2f}" if isinstance(x, int | float) else "?"


def _count(x: Any) -> str:
    """A token count: a float that is whole (imported usage counted in halves) without its ".0"."""
    if isinstance(x, float) and x.is_integer():
        return f"{int(x):,}"
    return f"{x:,}" if isinstance(x, int | float) else _e(x)


def costs_head(report: StatsReport, by: str, since: str, until: str,
               namespaces: tuple[list[str], list[str]] | None = None, user: str = "", machine: str = "") -> str:
    """The part of the costs page above the stats report: nav, the choices and the totals."""
    total = report.total.to_dict()
    billed, current = total["billed"], total["current"]
    options = "".join(f'<option{" selected" if g == by else ""}>{g}</option>' for g in COST_GROUPINGS)
    form = (f'<form class="filters" method="get" action="/costs"><label>By <select name="by" id="c-by">{options}'
            f'</select></label><label>Since <input name="since" value="{_e(since)}" placeholder="YYYY-MM-DD or 7d">'
            f'</label><label>Until <input name="until" value="{_e(until)}" placeholder="YYYY-MM-DD"></label>'
            f'{_namespace_fields(namespaces, user, machine)}<button type="submit">Show</button></form>')
    totals = (f'<dl class="totals"><dt>Billed cost</dt><dd id="billed-cost" data-value="{_e(repr(billed["cost"]))}">'
              f'{_money(billed["cost"])}</dd><dt>Current-branch cost</dt><dd id="current-cost" '
              f'data-value="{_e(repr(current["cost"]))}">{_money(current["cost"])}</dd><dt>Billed tokens</dt>'
              f'<dd id="billed-tokens">{_count(billed["totalTokens"])}</dd><dt>Sessions</dt>'
              f'<dd id="sessions">{len(report.sessions)}</dd></dl>')
    nav = "".join(f'<a href="{href}"{" class=here" if href == "/costs" else ""}>{name}</a>' for href, name in _NAV)
    flags = "".join(f" --{k} {_e(shlex.quote(v))}" for k, v in (("user", user), ("machine", machine)) if v)
    store = " --store URL" if flags else ""  # the filters are a store's only
    query = urlencode({k: v for k, v in (("by", by), ("since", since), ("until", until), ("user", user),
                                         ("machine", machine)) if v or k in ("by", "since", "until")})
    return (f'<header class="top"><strong>omp-session</strong><nav>{nav}</nav></header>'
            f'<div class="page">{form}{totals}<p class="meta">Same numbers as <code>omp-session stats{store} --all '
            f'--by {_e(by)}{flags} --json</code> (<a href="/api/costs?{_e(query)}">JSON</a>).</p></div>')


def costs_page(report_html: str, head: str, blocks: str = "") -> str:
    """The stats report page (ops.stats.html, charts and table) with the server's head above it
    and ``blocks`` (the 5-hour blocks' section) below it."""
    report_html = report_html.replace("</head>", '<link rel="stylesheet" href="/static/serve.css"></head>', 1)
    report_html = report_html.replace("<body>", '<body class="serve costs">' + head, 1)
    end = report_html.rfind("</body>")
    return report_html[:end] + blocks + report_html[end:] if end >= 0 else report_html + blocks
