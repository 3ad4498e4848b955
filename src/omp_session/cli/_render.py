"""Terminal and JSON rendering of one session for the CLI: plain text (ANSI styles on a terminal,
see ``_style``) for people, stable JSON for machines.

Every piece of text taken from the session goes through ``inert`` before it is styled or cut: a
session's escape sequences, CR or BEL are shown as U+FFFD, on a terminal and in a pipe. JSON
escapes what it must itself.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from json.encoder import encode_basestring_ascii as _encode_str
from operator import itemgetter
from typing import Any, cast

import orjson

from omp_session.diagnostics import Diagnostic, severity_count, summarize
from omp_session.format.blobs import holds_blob_ref
from omp_session.format.gc_pause import gc_paused
from omp_session.format.split import interleaved, pieces_of
from omp_session.js import codec
from omp_session.model.session import Session, usage_or_model_candidates, with_side_calls
from omp_session.model.text import shown as _shown
from omp_session.model.usage import branch_and_all_usage
from omp_session.model.usage_plain import usage_numbers

from ._style import Styler, clip, clip_start, harmless, inert, page, paged, terminal_width, uncoloured, width

__all__ = ["context", "show", "show_info", "summary", "tree"]


def _emit_json(value: Any) -> None:
    sys.stdout.write((codec.stringify(value) or "null") + "\n")


def _clip(text: str, width: int = 80) -> str:
    """``text`` on one line (whitespace runs as one space), cut to ``width`` with "…"."""
    # (the common case, without splitting: a printable text's only whitespace is the ASCII space,
    # so a start of single spaces between words is its collapsed start)
    if len(text) > width:
        start = text[:width + 1]
        if width > 0 and start.isprintable() and "  " not in start and start[0] != " " and start[-1] != " ":
            return start[:width - 1] + "…"
    elif text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    if len(text) > 4 * width:
        # the words of a prefix are the text's first words (the last maybe cut short), so its
        # collapsed form starts the text's: enough of it decides without splitting a long output
        head = " ".join(text[: 4 * width].split())
        if len(head) > width:
            return head[: width - 1] + "…"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value)
    except RecursionError:  # nested deeper than json.dumps goes (the reader takes such records)
        return codec.stringify(value) or "null"


class _Stop(Exception):
    pass


def _json_head(value: Any, n: int) -> str | None:
    """The first ``n`` characters of ``json.dumps(value)`` (all of it when shorter), written only
    that far: a tool call's arguments may hold a whole file. None for what json.dumps would not
    take as it is (another type, a nesting too deep for this walk)."""
    if value.__class__ is dict:
        flat = _flat_head(value, n)
        if flat is not None:
            return flat
    head = _Head(n)
    try:
        head.walk(value)
    except _Stop:
        return "".join(head.parts)[:n]
    except (TypeError, RecursionError):
        return None
    return "".join(head.parts)


class _Head:
    """:func:`_json_head`'s text, written a part at a time until it reaches ``n`` characters.
    (A class, not closures: a closure that calls itself is a reference cycle, left for the
    collector, and tree draws its rows with collection paused.)"""

    __slots__ = ("n", "parts", "size")

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[str] = []
        self.size = 0

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= self.n:
            raise _Stop

    def walk(self, v: Any) -> None:
        scalar = _scalar_json(v, self.n)
        if scalar is not None:
            self.put(scalar)
        elif isinstance(v, dict):
            self.put("{")
            for k, (key, item) in enumerate(v.items()):
                if not isinstance(key, str):
                    raise TypeError("only string keys are written here")
                self.put((", " if k else "") + _encode_str(key) + ": ")
                self.walk(item)
            self.put("}")
        elif isinstance(v, list | tuple):
            self.put("[")
            for k, item in enumerate(v):
                if k:
                    self.put(", ")
                self.walk(item)
            self.put("]")
        else:
            raise TypeError("not a JSON value")


def _flat_head(value: dict[Any, Any], n: int) -> str | None:
    """:func:`_json_head` of an object whose values are all strings, numbers, booleans or null (a
    tool call's arguments almost always are), an item at a time; None for any other object. A
    string is cut to ``n`` characters before it is written, as the walk cuts it."""
    items: list[str] = []
    size = 0
    for key, item in value.items():
        text = _scalar_json(item, n)
        if text is None or key.__class__ is not str:
            return None
        items.append(_encode_str(key) + ": " + text)
        size += len(items[-1]) + 2
        if size > n:  # the items so far write past n characters: the rest cannot change them
            break
    return ("{" + ", ".join(items) + "}")[:n]


def _scalar_json(v: Any, n: int) -> str | None:
    """``json.dumps(v)`` of a string (cut to ``n`` characters first: every character escapes to at
    least one, so n of them write past n), a number, a boolean or null; None for anything else."""
    if isinstance(v, str):
        return _encode_str(v if len(v) <= n else v[:n])
    if v is None or v is True or v is False:
        return "null" if v is None else "true" if v else "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float):
        return _float_json(v)
    return None


def _float_json(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    return float.__repr__(v)


def _clip_json(value: Any, width: int) -> str:
    """``_clip(_dumps(value), width)``, from the start of the text when that decides it."""
    head = _json_head(value, 4 * width + 1)
    if head is None or len(head) <= 4 * width:
        return _clip(_dumps(value) if head is None else head, width)
    short = " ".join(head[: 4 * width].split())  # as _clip takes a long text's start
    return short[: width - 1] + "…" if len(short) > width else _clip(_dumps(value), width)


def _repr(value: Any) -> str:
    # repr() of a list nested thousands of levels deep raises RecursionError (issue 16)
    return _dumps(value) if isinstance(value, dict | list) else repr(value)


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
                parts.append(_shown(block.get("text", "")))
            elif kind == "toolCall":
                parts.append(f"→ {_shown(block.get('name'))}({_clip_json(block.get('arguments'), 40)})")
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
            return f"toolResult {_shown(msg.get('toolName'))}: {_clip(_text_of(msg.get('content')), 60)}"
        return f"{_shown(role)}: {_clip(_text_of(msg.get('content')), 70)}"
    if kind == "compaction":
        return f"compaction: {_clip(_shown(entry.get('shortSummary') or entry.get('summary', '')), 60)}"
    if kind == "branch_summary":
        return f"branch_summary: {_clip(_shown(entry.get('summary', '')), 60)}"
    if kind == "model_change":
        return f"model_change {_shown(entry.get('model'))}"
    if kind == "label":
        return f"label {_shown(entry.get('targetId'))} = {_repr(entry.get('label'))}"
    if kind == "title_change":
        return f"title_change {_repr(entry.get('title'))}"
    if kind == "thinking_level_change":
        return f"thinking_level_change {_shown(entry.get('thinkingLevel'))}"
    return _shown(kind)


def summary_shows_blobs(entry: Any) -> bool:
    """Whether resolving an entry's blob references could change its :func:`summary`: a
    reference anywhere but in an image block of its message (which shows as "[image]", whatever
    it holds) could. A pass of summaries then reads no blob for the usual image."""
    if not isinstance(entry, dict):
        return True
    message = entry.get("message")
    if not isinstance(message, dict) or not isinstance(content := message.get("content"), list):
        return True
    return holds_blob_ref([*(v for k, v in entry.items() if k != "message"),
                           *(v for k, v in message.items() if k != "content"),
                           *(b for b in content if not (isinstance(b, dict) and b.get("type") == "image"))])


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


Findings = list[Diagnostic] | Callable[[], list[Diagnostic]] | None


def show_info(s: Session, findings: Findings = None) -> dict[str, Any]:
    """Everything ``show`` prints, as stable JSON fields. ``findings`` are validate's (the
    problems ``show`` reports), or what gives them (asked for once the rest is worked out);
    without them, the reader's."""
    header = s.header or {}
    types = Counter(t if isinstance(t, str) else "(no type)" for t in s.types)
    tips = _tips(s)
    leaf = s.get_leaf_id()
    branch = s.branch_indices()
    counted = usage_or_model_candidates(s)  # usage needs no other entry decoded, and none is kept
    mine = with_side_calls(s, branch, [k for k in branch if counted[k]])
    usage = dict(zip(("branch", "all"), branch_and_all_usage(
        s.peek_entry, mine, [k for k in range(len(s)) if counted[k]], _plain_numbers(s)), strict=True))
    labels = {str(k): v for k, v in s.labels().items()}
    # asked for last: validate may be running in a child meanwhile (cli/view.py)
    found = s.diagnostics if findings is None else findings() if callable(findings) else findings
    counts, worst = summarize(found)
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
        "labels": labels,
        "models": _models_used(s),
        "usage": usage,
        "diagnostics_summary": {k.value: v for k, v in counts.items()},
        "diagnostics_worst": worst,
        "diagnostics": [d.to_json() for d in found],
    }


_plain_numbers = usage_numbers  # entry k's usage numbers when a plain assistant usage (model/usage_plain.py)


def _money(usage: dict[str, Any]) -> str:
    cost = usage.get("cost")
    total = cost if isinstance(cost, int | float) else None
    tokens = _count(usage.get("input", 0)), _count(usage.get("output", 0))
    return (f"${total:.4f}" if total is not None else "-") + f" · {tokens[0]} in / {tokens[1]} out"


def _count(value: Any) -> str:
    """A count with thousands separators (a total omp made a string, or null, as it is)."""
    return f"{value:,}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def problems_line(counts: dict[str, int], codes: Sequence[str]) -> str:
    """``2 errors (omp-cannot-open), 5 warnings``: ``codes``, the distinct codes of the worst
    severity found (the first three, then how many more), beside its count."""
    parts: list[str] = []
    for severity, n in counts.items():
        if n:
            words = severity_count(n, severity)
            if codes and not parts:
                more = len(codes) - 3
                named = [*codes[:3], f"{more} more code{'s' if more != 1 else ''}"] if more > 0 else codes
                words += f" ({', '.join(named)})"
            parts.append(words)
    return ", ".join(parts) or "none"


def _worst_codes(info: dict[str, Any]) -> list[str]:
    """The distinct codes of the worst severity among ``info``'s findings, in their order."""
    worst = next((k for k, n in info["diagnostics_summary"].items() if n), None)
    return list(dict.fromkeys(d["code"] for d in info["diagnostics"] if d["severity"] == worst))


def show(s: Session, as_json: bool, findings: Findings = None) -> None:
    info = show_info(s, findings)
    if callable(findings):
        findings = findings()  # the same list again: the caller's function keeps it
    if as_json:
        _emit_json(info)
        return
    st = Styler()
    rows: list[tuple[str, Any]] = [
        ("path", info["path"]), ("id", info["id"]),
        ("title", f"{_shown(info['title'])} ({_shown(info['title_source'])})" if info["title"] else None),
        ("cwd", info["cwd"]), ("created", info["created"]), ("version", info["version"]),
        ("size", f"{info['size']:,} bytes"), ("parent session", info["parent_session"]),
        ("entries", f"{info['entries']:,} (" + ", ".join(f"{_shown(k)} {v:,}" for k, v in info["entry_types"].items())
         + ")"),
        ("malformed records", f"{info['malformed_records']:,}"),
        ("leaf", f"{_shown(info['leaf_id'])} (branch of {info['branch_length']:,} entries)"),
        ("branches", f"{info['branches']} tips: " + ", ".join(_shown(t) for t in info["branch_tips"][:8])),
        ("labels", _labels_row(info["labels"])),
        ("models", ", ".join(_shown(m) for m in info["models"]) or None),
        ("cost (branch)", _money(info["usage"]["branch"])), ("cost (all)", _money(info["usage"]["all"])),
        ("problems", problems_line(info["diagnostics_summary"], _worst_codes(info))),
    ]
    cells = terminal_width()
    shown = [(k, _one_line(_shown(v))) for k, v in rows if v is not None]  # any depth: a nested value is JSON
    key_width = max(len(k) for k, _ in shown)
    room = max(cells - key_width - 3, 12) if cells else None  # " key  value"

    def fitted(key: str, value: str) -> str:
        if room is None:
            return value
        return clip_start(value, room) if key in _PATHS else clip(value, room)

    out = [f" {st(k.ljust(key_width), 'bold')}  {fitted(k, v)}" for k, v in shown]
    counts = info["diagnostics_summary"]
    if counts["error"]:
        out[-1] = f" {st('problems'.ljust(key_width), 'bold')}  {st(fitted(*shown[-1]), 'red')}"
    found = s.diagnostics if findings is None else findings
    # the worst first, a screenful at most: a long session can have hundreds of one warning,
    # and validate is the command that lists them (the path is the one above: left out)
    worst_first = sorted(found, key=lambda d: _SEVERITY_ORDER.get(d.severity.value, 3))
    for d in worst_first[:SHOWN_FINDINGS]:
        text = _one_line(str(dataclasses.replace(d, path=None)) if d.path == s.path else str(d))
        if cells:
            text = clip(text, max(cells - 2, 12))
        out.append("  " + st(text, "red" if d.severity.value == "error" else "yellow"))
    if len(found) > SHOWN_FINDINGS:
        import shlex  # rarely needed: not on show's start-up

        rest, command = f"… and {len(found) - SHOWN_FINDINGS:,} more", \
            _one_line(f"omp-session validate {shlex.quote(s.path or '')}")
        more = f"{rest}: {command} lists them all"
        if cells and width(more) + 2 > cells:  # a command to copy is never cut: on a line of its own
            out += [f"  {rest}; this lists them all:", f"  {command}"]
        else:
            out.append("  " + more)
    page("\n".join(out) + "\n")


_PATHS = {"path", "cwd", "parent session"}  # cut at the start: their end tells most
_SHOWN_LABELS = 8  # as many as branch tips


def _labels_row(labels: dict[str, Any]) -> str | None:
    """The labels as ``id=label``; past eight, their count first and the first eight (a session
    labelled at every step had its hundreds on one line; ``--json`` has them all)."""
    pairs = [f"{_shown(k)}={_shown(v)}" for k, v in list(labels.items())[:_SHOWN_LABELS + 1]]
    if len(labels) <= _SHOWN_LABELS:
        return ", ".join(pairs) or None
    return f"{len(labels)}: " + ", ".join(pairs[:_SHOWN_LABELS]) + ", …"


def _one_line(text: str) -> str:
    """``inert`` text on one line: each newline or tab a space (show's values are one row each)."""
    # (a printable text holds no control character: inert would keep it, and no newline or tab)
    return text if text.isprintable() else inert(text).replace("\n", " ").replace("\t", " ")


SHOWN_FINDINGS = 10
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _is_message(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("type") in ("message", "custom_message", "branch_summary",
                                                              "compaction")


class _Rows:
    """The shown entries in pre-order, each with its shown parent, shown children and level: how
    many side branches lead to it from the top. At a fork (an entry with more than one shown
    child, or the top when the file has several roots) the last child in omp's order (the newest)
    continues the run at the fork's level; the others are side branches, one level deeper."""

    def __init__(self, s: Session, only_messages: bool) -> None:
        self.nodes: list[int] = []
        self.depth: list[int] = []  # shown ancestors: the JSON ``depth``
        self.parent: list[int] = []  # row index of the shown parent, -1 at the top
        self.chain_starts: list[int] = []  # (every row shown) each chain's first row, in order
        chains = None if only_messages else s.get_tree().walk_chains()
        if chains is not None:
            self._every_row(chains)
            return
        shown_at: list[int] = []  # nearest shown ancestor's row per tree depth (-1: none)
        for node, d in s.get_tree().walk():
            del shown_at[d:]
            above = shown_at[-1] if shown_at else -1
            if only_messages and not _is_message(s.peek_entry(node)):
                shown_at.append(above)
                continue
            shown_at.append(len(self.nodes))
            self.nodes.append(node)
            self.parent.append(above)
            self.depth.append(self.depth[above] + 1 if above >= 0 else 0)
        self.top: list[int] = []
        self.kids: list[Sequence[int]] = [[] for _ in self.nodes]
        for i, p in enumerate(self.parent):
            cast(list[int], self.kids[p] if p >= 0 else self.top).append(i)
        self.level = [0] * len(self.nodes)
        for i, p in enumerate(self.parent):  # a parent's row comes before its children's
            siblings = self.kids[p] if p >= 0 else self.top
            self.level[i] = (self.level[p] if p >= 0 else 0) + (siblings[-1] != i)

    def _every_row(self, chains: Iterable[tuple[Sequence[int], int, int, bool]]) -> None:
        """The same, every entry shown, built a chain of single children at a time (lists extended
        by ranges, not a step per row: on a long session most rows are in long chains)."""
        nodes, depth, parent = self.nodes, self.depth, self.parent
        top: list[int] = []
        kids: list[Sequence[int]] = []
        level: list[int] = []
        self.top, self.kids, self.level = top, kids, level
        # within a chain a row's one child is the next row: a tuple, which collections stop
        # walking once they have seen it holds only numbers (a list per row was walked by every
        # full collection, a tenth of a second each on a 1 GB session); a chain's last row may
        # become a fork, so it has a list
        for chain, d, above, last in chains:
            row, n = len(nodes), len(chain)
            nodes.extend(chain)
            depth.extend(range(d, d + n))
            parent.append(above)
            parent.extend(range(row, row + n - 1))
            level.extend(repeat((level[above] if above >= 0 else 0) + (not last), n))
            cast(list[int], kids[above] if above >= 0 else top).append(row)  # (a chain's last row)
            kids.extend(zip(range(row + 1, row + n)))  # (r,) each, made in C
            kids.append([])
            self.chain_starts.append(row)


def _row_json(row: dict[str, Any], *values: Any) -> str:
    """``JSON.stringify(row)``: a row of strings, small ints and booleans is what orjson writes
    (a lone surrogate makes it refuse); any other value of the file's goes to the exact encoder."""
    if all(v is None or v.__class__ is str for v in values):
        try:
            return orjson.dumps(row).decode()
        except TypeError:  # orjson.JSONEncodeError
            pass
    return codec.stringify(row) or "null"


def tree(s: Session, as_json: bool, *, depth: int | None = None, only_messages: bool = False) -> None:
    """The entry tree; ``depth`` is how many levels of side branches are shown (0: only the run
    from the top, forks marked), ``only_messages`` hides other entries (their children hang from
    the nearest shown ancestor)."""
    r = _Rows(s, only_messages)
    if s.get_tree().cut:
        sys.stderr.write(f"omp-session: warning: duplicate ids list some entries under more than one parent; past "
                         f"{s.get_tree().row_budget:,} rows their branches are shown once (validate names the ids)\n")
    keep = [depth is None or level <= depth for level in r.level]
    on_branch = set(s.branch_indices())
    label_at = s.labels_by_entry()  # (worked out here, not once in each process below)
    ids = s.ids
    # rows follow the file but at forks: a window of it read at a time; an image's blob not read
    peek = s.peek_in_order(resolve_if=summary_shows_blobs)
    # On a big file a forked child makes every other piece of rows while this process makes the
    # others (split.interleaved): every row is its entry decoded and summed up, the bulk of the
    # work. A piece is a few thousand rows, written as it comes: memory stays that of a piece.
    if as_json:  # the array written a piece of rows at a time, as stringify writes it
        lines = s.entry_lines()
        def row_json(i: int) -> str:
            node = r.nodes[i]
            entry = peek(node)  # decoded, not kept
            entry_id = ids[node]
            label = label_at.get(node)
            kind = entry.get("type") if isinstance(entry, dict) else None
            row: dict[str, Any] = {"id": entry_id, "depth": r.depth[i], "fork_depth": r.level[i],
                                   "line": lines[node], "type": kind,
                                   "on_branch": node in on_branch, "summary": summary(entry)}
            if label is not None:
                row["label"] = label
            return _row_json(row, entry_id, kind, label)

        shown = [i for i in range(len(r.nodes)) if keep[i]]
        sys.stdout.write("[")
        with gc_paused():  # (see below)
            _write_pieces(interleaved(pieces_of(len(shown), limit=_ROWS),
                                      lambda lo, hi: _encoded("".join(("," if n else "") + row_json(shown[n])
                                                                      for n in range(lo, hi))),
                                      s.journal.size))
        sys.stdout.write("]\n")
        return
    st = Styler()
    cells = terminal_width()
    title = _one_line(_shown(s.get_session_name() or (s.header or {}).get("id", s.path)))

    def fork_note(kids: Sequence[int]) -> str:
        if len(kids) < 2:
            return ""
        hidden = sum(not keep[k] for k in kids)
        return f" ◆ fork: {len(kids)} branches" + (f", {hidden} below --depth" if hidden else "")

    plain = not st.on  # (no colours: a row is its parts joined, without a call per part)

    def draw(i: int, lead: str) -> str:
        node = r.nodes[i]
        entry = peek(node)
        here = node in on_branch
        label = label_at.get(node)
        label_part = f" [{_one_line(_shown(label))}]" if label is not None else ""
        kids_here = r.kids[i]
        fork_part = fork_note(kids_here) if len(kids_here) > 1 else ""
        ident = _one_line(_shown(ids[node]))
        text = _one_line(uncoloured(summary(entry)))  # a model or tool name may hold a newline: one row still
        if cells:  # the text gives way, so the label and the fork mark stay on the line
            head = f"{'*' if here else ' '} {ident} "
            text = clip(text, max(cells - width(lead + head + label_part + fork_part), 12))
        if plain:
            return f"{lead}{'*' if here else ' '} {ident} {text}{label_part}{fork_part}"
        kind = entry.get("type") if isinstance(entry, dict) else None
        styled = st(text, "magenta") if kind in ("compaction", "branch_summary") else text
        if here:
            body = st("*", "bold", "green") + " " + st(ident, "dim") + " " + st(styled, "bold")
        else:
            body = "  " + st(f"{ident} ", "dim") + st(styled, "dim")
        return st(lead, "dim") + body + st(label_part, "cyan") + st(fork_part, "yellow")

    # (row, its level, whether its first line opens a side branch). A run stays at one indent:
    # the last branch of a fork continues it, the others hang from the fork with ├─ and │, so
    # the indent grows only with side branches of side branches, never along a long session.
    stack: list[tuple[int, int, bool]] = []

    def fork(kids: Sequence[int], level: int) -> None:
        shown = [k for k in kids if keep[k]]
        if shown and shown[-1] == kids[-1]:
            stack.append((shown.pop(), level, False))
        for k in reversed(shown):
            stack.append((k, level + 1, True))

    order: list[tuple[int, str]] = []  # the rows in the order they are drawn, each with its lead
    kids, starts = r.kids, r.chain_starts
    fork(r.top, 0)
    while stack:
        i, level, opens = stack.pop()
        order.append((i, _lead(level, opens)))
        if len(kids[i]) == 1:
            lead = _lead(level, False)  # the same for the whole run
            while len(kids[i]) == 1:
                if kids[i].__class__ is tuple:  # inside a chain, whose rows follow one another
                    c = bisect_right(starts, i)
                    last = starts[c] - 1 if c < len(starts) else len(kids) - 1
                    # (each row number taken from its tuple: new ints would be 11 MB at 1 GB)
                    order.extend(zip(map(_first, kids[i:last]), repeat(lead)))
                    i = last
                else:
                    i = kids[i][0]
                    order.append((i, lead))
        fork(kids[i], level)
    pieces = interleaved(pieces_of(len(order), limit=_ROWS),
                         lambda lo, hi: _encoded(harmless("".join(draw(*order[n]) + "\n" for n in range(lo, hi)))),
                         s.journal.size)
    head = st(clip(title, cells) if cells else title, "bold") + "\n"
    # Every row is a record decoded and dropped; the collector's passes meanwhile walked every
    # object the session keeps, for nothing (rows make no cycles): 0.3-0.5 s of 6.5 on a 1 GB
    # session in one process (gc_pause)
    with gc_paused():
        if paged():
            page(head + "".join(p.decode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")
                                for p in pieces))
        else:
            sys.stdout.write(harmless(head))
            _write_pieces(pieces)


_ROWS = 2048  # rows in a piece of tree's output
_first = itemgetter(0)


def _encoded(text: str) -> bytes:
    """``text`` as stdout writes it (its encoding and error handler: a child process encodes its
    pieces as this one would)."""
    return text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")


def _write_pieces(pieces: Iterable[bytes]) -> None:
    """Encoded pieces onto stdout, after what its text layer holds."""
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    for piece in pieces:
        if out is not None:
            out.write(piece)
        else:
            sys.stdout.write(piece.decode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"))
    if out is not None:
        out.flush()


_LEAD_LEVELS = 12


def _lead(level: int, opens: bool) -> str:
    """The tree's indent at ``level`` side branches deep. Past a dozen levels the middle ones are
    given as a count: duplicated ids can nest side branches thousands deep, and drawing each
    would make the tree's text grow with the square of its rows."""
    if level == 0:
        return ""
    tail = "├─ " if opens else "│  "
    if level <= _LEAD_LEVELS:
        return "│  " * (level - 1) + tail
    return f"│  │  …{level - 3}… {tail}"


def context(s: Session, as_json: bool, *, transcript: bool) -> None:
    ctx = s.build_session_context(transcript=transcript)
    if as_json:
        _emit_json(ctx)
        return
    st = Styler()
    cells = terminal_width()
    models = ", ".join(f"{k}={_shown(v)}" for k, v in ctx.get("models", {}).items()) or "-"
    n = len(ctx["messages"])
    head = _one_line(f"{n} message{'' if n == 1 else 's'} · thinking {_shown(ctx.get('thinkingLevel'))} · "
                     f"models {models}")
    if cells:  # the models can be many: the line gives way at the end
        head = clip(head, max(cells - width("context: "), 1))
    out = [f"{st('context', 'bold')}: {head}"]
    for msg in ctx["messages"]:
        role = msg.get("role", "?") if isinstance(msg, dict) else "?"
        if role == "compactionSummary" or role == "branchSummary":
            text = _shown(msg.get("summary", ""))
        else:
            text = _text_of(msg.get("content")) if isinstance(msg, dict) else ""
        line = inert(_clip(uncoloured(text), 100))
        shown_role = _one_line(_shown(role))
        if cells:  # one row per message on the terminal too
            line = clip(line, max(cells - width(f"  {shown_role}: "), 12))
        out.append(f"  {st(shown_role, 'bold')}: {line}")
    page("\n".join(out) + "\n")
