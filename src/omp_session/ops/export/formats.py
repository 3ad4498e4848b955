"""Export a session as Markdown or JSON (docs/export.md).

    from omp_session.export import export
    text = export(omp_session.open(path), "md", all_branches=True)

Formats: ``"md"`` (readable: one branch, or every branch with ``all_branches``), ``"json"``
(faithful: every record of the file, tree intact) and ``"json"`` with ``lossy=True`` (a plain
transcript of one branch). ``"html"`` is the self-contained viewer (export_html.py); it used to raise
:class:`FormatNotAvailableError` until it exists. Exporting never writes and never changes the
session (not even its leaf); it is built to cope with damaged files.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any, Final

from omp_session.errors import (
    EntryNotFoundError,
    ExportError,
    UnknownFormatError,
)
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session
from omp_session.model.tree import branch_tips, js_date_ms, leaf_of

__all__ = [
    "FORMATS",
    "export",
    "faithful_json",
    "lossy_transcript",
]

# The formats the API knows (html: the self-contained viewer, export_html.py).
FORMATS: Final = ("md", "json", "html")
_ALIASES: Final = {"markdown": "md"}
FAITHFUL_FORMAT: Final = "omp-session-export"
LOSSY_FORMAT: Final = "omp-session-transcript"
FORMAT_VERSION: Final = 1


def export(session: Session | str | os.PathLike[str], fmt: str, *, leaf: str | None = None,
           all_branches: bool = False, lossy: bool = False) -> str:
    """The session as text in format ``fmt`` (``"md"``, ``"json"`` or ``"html"``).

    ``leaf``: export the branch ending at this entry instead of the session's leaf (raises
    :class:`~omp_session.errors.EntryNotFoundError` when no entry has that id).
    ``all_branches`` (Markdown): add every other branch as a section saying where it forks.
    ``lossy`` (JSON): a plain transcript of one branch instead of the faithful export.
    A path may be given instead of a session: it is opened read-only and closed again.
    """
    name = _ALIASES.get(fmt, fmt) if isinstance(fmt, str) else fmt
    if name not in FORMATS:
        raise UnknownFormatError(f"unknown export format {fmt!r} (choose from md, json, html)")
    if name == "html" and (lossy or all_branches):
        raise ExportError("the html export always holds every branch: drop lossy/all_branches")
    if lossy and name != "json":
        raise ExportError("lossy applies to the json format only")
    if lossy and all_branches:
        raise ExportError("a lossy transcript holds one branch: use the faithful json for every branch")
    if not isinstance(session, Session):
        from omp_session.model.session import open_session

        with open_session(session) as opened:
            return export(opened, name, leaf=leaf, all_branches=all_branches, lossy=lossy)
    if leaf is not None and session.index_of(leaf) is None:
        raise EntryNotFoundError(f"{session.path or 'session'}: no entry {leaf}")
    if name == "html":
        from .html import render_html

        return render_html(session, leaf=leaf)
    if name == "md":
        from .markdown import markdown

        return markdown(session, leaf=leaf, all_branches=all_branches)
    value = lossy_transcript(session, leaf=leaf) if lossy else None
    return _dump_lossy(value) if value is not None else faithful_json(session, leaf=leaf)


# ----- shared helpers ---------------------------------------------------------------------------


def entry_ms(entry: Any) -> int | None:
    """An entry's ISO timestamp as Unix milliseconds, as omp converts it (None when invalid)."""
    ms = js_date_ms(entry.get("timestamp", UNDEFINED)) if isinstance(entry, dict) else math.nan
    return None if math.isnan(ms) else int(ms)


def _json(value: Any) -> str:
    # JSON.stringify semantics: UNDEFINED members vanish, numbers spelled as JavaScript does
    out = codec.stringify(value)
    return "null" if out is None else out


# ----- faithful JSON ----------------------------------------------------------------------------


def _stored_records(session: Session) -> Callable[[int], Any]:
    """Entry k exactly as stored in the file, or as loaded when omp migrates the file on open.

    Loaded entries have blob references resolved and Copilot replay data stripped, so the file's
    own bytes are parsed again. A v1/v2 file is the exception: its ids only exist after
    migration (omp assigns them on load), so without it the tree would not be intact.
    """
    j = session.journal
    if session.migrated:
        return session.entry_at

    def stored(k: int) -> Any:
        if session.header is None:
            return session.entry_at(k)  # no header: nothing was transformed on load
        try:
            return codec.loads(j.raw(k + 1))
        except ValueError:
            return session.entry_at(k)  # the reader took it; keep what it took

    return stored


def _stored_header(session: Session) -> Any:
    """The first record as stored: the loaded header carries the title slot's overlay."""
    if session.raw_header is UNDEFINED:
        return None
    if session.migrated:
        return session.header
    try:
        return codec.loads(session.journal.raw(0))
    except ValueError:
        return session.raw_header


def faithful_json(session: Session, *, leaf: str | None = None) -> str:
    """Every record of the file (header, entries in file order, unknown fields kept, malformed
    lines as text), plus the leaf and the branch tips. Shape: docs/export.md."""
    j = session.journal
    slot = j.slot
    tips = branch_tips(session)
    ids = session.ids
    stored = _stored_records(session)
    fields: list[tuple[str, str]] = [
        ("format", _json(FAITHFUL_FORMAT)),
        ("format_version", _json(FORMAT_VERSION)),
        ("title_slot", _json(slot.to_json() if slot is not None else None)),
        ("header", _json(_stored_header(session))),
        ("migrated", _json(session.migrated)),
        ("entries", _array(stored(k) for k in range(len(session)))),
        ("malformed", _array({"line": j.line_of(span.start), "offset": span.start,
                              "text": j.read(span.start, span.end).decode("utf-8", "replace")}
                             for span in j.malformed)),
        ("leaf_id", _json(leaf_of(session, leaf))),
        ("branches", _json([ids[k] if ids[k] is not UNDEFINED else None for k in tips])),
    ]
    body = ",\n".join(f"{_json(key)}: {value}" for key, value in fields)
    return "{\n" + body + "\n}\n"


def _array(values: Any) -> str:
    """A JSON array with one element per line, so a large export stays diffable and greppable."""
    items = [_json(v) for v in values]
    return "[\n" + ",\n".join(items) + "\n]" if items else "[]"


# ----- lossy transcript -----------------------------------------------------------------------


def lossy_transcript(session: Session, *, leaf: str | None = None) -> dict[str, Any]:
    """The messages of one branch, root to leaf, as a plain object (shape: docs/export.md).

    ``message`` entries give their message object as loaded (every field kept) with ``entryId``
    first; ``custom_message``, ``branch_summary`` and ``compaction`` entries give the message omp
    shows for them (roles ``custom``, ``branchSummary``, ``compactionSummary``). Every other entry
    (settings, labels, titles, custom state, unknown types) and the other branches are dropped.
    """
    header = session.header or {}
    messages: list[dict[str, Any]] = []
    for k in session.branch_indices(leaf if leaf is not None else UNDEFINED):
        message = transcript_message(session.entry_at(k))
        if message is not None:
            messages.append(message)
    return {
        "format": LOSSY_FORMAT,
        "format_version": FORMAT_VERSION,
        "session_id": header.get("id"),
        "title": session.get_session_name(),
        "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else None,
        "leaf_id": leaf_of(session, leaf),
        "messages": messages,
    }


def transcript_message(entry: Any) -> dict[str, Any] | None:
    """The transcript message an entry stands for, or None for entries that show no message."""
    if not isinstance(entry, dict):
        return None
    kind = entry.get("type")
    entry_id = entry.get("id")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        return {"entryId": entry_id, **{k: v for k, v in message.items() if k != "entryId"}}
    if kind == "custom_message":
        custom_type = entry.get("customType")
        return {"entryId": entry_id, "role": "custom",
                "customType": custom_type if isinstance(custom_type, str) and custom_type else "custom-message",
                "content": entry.get("content", ""), "display": entry.get("display") is True,
                "details": entry.get("details", UNDEFINED),
                "attribution": entry.get("attribution", UNDEFINED),
                "timestamp": entry_ms(entry)}
    if kind == "branch_summary":
        return {"entryId": entry_id, "role": "branchSummary", "summary": entry.get("summary", ""),
                "fromId": entry.get("fromId", UNDEFINED), "timestamp": entry_ms(entry)}
    if kind == "compaction":
        return {"entryId": entry_id, "role": "compactionSummary", "summary": entry.get("summary", ""),
                "shortSummary": entry.get("shortSummary", UNDEFINED),
                "tokensBefore": entry.get("tokensBefore", UNDEFINED),
                "firstKeptEntryId": entry.get("firstKeptEntryId", UNDEFINED),
                "timestamp": entry_ms(entry)}
    return None


def _dump_lossy(value: dict[str, Any]) -> str:
    messages: Sequence[Any] = value["messages"]
    head = {k: v for k, v in value.items() if k != "messages"}
    fields = [f"{_json(k)}: {_json(v)}" for k, v in head.items()]
    fields.append(f'"messages": {_array(messages)}')
    return "{\n" + ",\n".join(fields) + "\n}\n"
