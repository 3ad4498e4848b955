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
from collections.abc import Iterable, Iterator
from typing import Any, Final

from omp_session.errors import (
    EntryNotFoundError,
    ExportError,
    UnknownFormatError,
)
from omp_session.format.split import interleaved
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session
from omp_session.model.tree import branch_tips, js_date_ms, leaf_of

from .stored import as_stored, json_bytes, record_bytes, stored_header, verbatim_run

__all__ = [
    "FORMATS",
    "export",
    "export_chunks",
    "faithful_json",
    "faithful_json_chunks",
    "lossy_transcript",
]

# The formats the API knows (html: the self-contained viewer, export_html.py).
FORMATS: Final = ("md", "json", "html")
_ALIASES: Final = {"markdown": "md"}
FAITHFUL_FORMAT: Final = "omp-session-export"
LOSSY_FORMAT: Final = "omp-session-transcript"
FORMAT_VERSION: Final = 1
_CHUNK: Final = 1 << 20  # bytes gathered before a piece is handed on


def export(session: Session | str | os.PathLike[str], fmt: str, *, leaf: str | None = None,
           all_branches: bool = False, lossy: bool = False) -> str:
    """The session as text in format ``fmt`` (``"md"``, ``"json"`` or ``"html"``).

    ``leaf``: export the branch ending at this entry instead of the session's leaf (raises
    :class:`~omp_session.errors.EntryNotFoundError` when no entry has that id).
    ``all_branches`` (Markdown): add every other branch as a section saying where it forks.
    ``lossy`` (JSON): a plain transcript of one branch instead of the faithful export.
    A path may be given instead of a session: it is opened read-only and closed again.
    """
    name = _checked_format(fmt, all_branches, lossy)
    if not isinstance(session, Session):
        from omp_session.model.session import open_session

        with open_session(session) as opened:
            return export(opened, name, leaf=leaf, all_branches=all_branches, lossy=lossy)
    if name == "html":
        _check_leaf(session, leaf)
        from .html import render_html

        return render_html(session, leaf=leaf)
    # every piece is valid UTF-8 on its own (text is split between lines or records only)
    return b"".join(export_chunks(session, name, leaf=leaf, all_branches=all_branches, lossy=lossy)).decode()


def export_chunks(session: Session, fmt: str, *, leaf: str | None = None, all_branches: bool = False,
                  lossy: bool = False) -> Iterator[bytes]:
    """:func:`export` of ``"md"`` or ``"json"`` as UTF-8 pieces, to be written as they come: the
    session is read one entry at a time and nothing keeps the whole export, so memory stays
    bounded on a session of any size. The options are checked (and a missing ``leaf`` raises)
    before this returns, so a refusal comes before the first piece."""
    name = _checked_format(fmt, all_branches, lossy)
    if name == "html":
        raise ExportError("export_chunks makes md and json; the html page is render_html_bytes")
    _check_leaf(session, leaf)
    if name == "md":
        from .markdown import markdown_chunks

        return markdown_chunks(session, leaf=leaf, all_branches=all_branches)
    return _lossy_chunks(session, leaf) if lossy else faithful_json_chunks(session, leaf=leaf)


def _checked_format(fmt: str, all_branches: bool, lossy: bool) -> str:
    name = _ALIASES.get(fmt, fmt) if isinstance(fmt, str) else fmt
    if name not in FORMATS:
        raise UnknownFormatError(f"unknown export format {fmt!r} (choose from md, json, html)")
    if name == "html" and (lossy or all_branches):
        raise ExportError("the html export always holds every branch: drop lossy/all_branches")
    if lossy and name != "json":
        raise ExportError("lossy applies to the json format only")
    if lossy and all_branches:
        raise ExportError("a lossy transcript holds one branch: use the faithful json for every branch")
    return str(name)


def _check_leaf(session: Session, leaf: str | None) -> None:
    if leaf is not None and session.index_of(leaf) is None:
        raise EntryNotFoundError(f"{session.path or 'session'}: no entry {leaf}")


def gathered(pieces: Iterable[bytes], size: int = _CHUNK) -> Iterator[bytes]:
    """``pieces`` joined into pieces of about ``size`` bytes: fewer, larger writes."""
    batch: list[bytes] = []
    held = 0
    for piece in pieces:
        batch.append(piece)
        held += len(piece)
        if held >= size:
            yield b"".join(batch)
            batch, held = [], 0
    if batch:
        yield b"".join(batch)


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


def faithful_json(session: Session, *, leaf: str | None = None) -> str:
    """Every record of the file (header, entries in file order, unknown fields kept, malformed
    lines as text), plus the leaf and the branch tips. Shape: docs/export.md."""
    return b"".join(faithful_json_chunks(session, leaf=leaf)).decode()


def faithful_json_chunks(session: Session, *, leaf: str | None = None) -> Iterator[bytes]:
    """:func:`faithful_json` as UTF-8 pieces, a piece of the file at a time (stored.py: an entry
    is its line as it is, when it can be)."""
    j = session.journal
    slot = j.slot
    tips = branch_tips(session)
    ids = session.ids
    entry_bytes = record_bytes(session)
    run = verbatim_run(session)
    head = [
        ("format", _json(FAITHFUL_FORMAT)),
        ("format_version", _json(FORMAT_VERSION)),
        ("title_slot", _json(slot.to_json() if slot is not None else None)),
        ("header", _json(stored_header(session))),
        ("migrated", _json(session.migrated)),
    ]
    yield ("{\n" + "".join(f"{_json(key)}: {value},\n" for key, value in head) + '"entries": ').encode()

    def piece(lo: int, hi: int) -> bytes:
        lines = run(lo, hi)  # the usual file: the lines as they are, in one read
        if lines is not None:
            return (b",\n" if lo else b"[\n") + lines
        # (a record with its separator is a copy the size of the text: orjson's own output holds
        # several times that, a megabyte piece of them several megabytes)
        return b"".join((b",\n" if k else b"[\n") + entry_bytes(k) for k in range(lo, hi))

    # pieces of about a megabyte as stored; a file whose records are all written again (a migrated
    # one, one without a header) in two processes, a piece each in turn (split.interleaved): a
    # piece of lines used as they are costs less than handing it over
    pieces = j.entry_pieces(range(len(session)))
    if as_stored(session):
        yield from gathered(piece(lo, hi) for lo, hi in pieces)
    else:
        yield from gathered(interleaved(pieces, piece, j.size))
    yield b"\n]" if len(session) else b"[]"
    yield b',\n"malformed": '
    yield from _array_chunks(json_bytes({"line": j.line_of(span.start), "offset": span.start,
                                          "text": j.read(span.start, span.end).decode("utf-8", "replace")})
                             for span in j.malformed)
    tail = [
        ("leaf_id", _json(leaf_of(session, leaf))),
        ("branches", _json([ids[k] if ids[k] is not UNDEFINED else None for k in tips])),
    ]
    yield "".join(f",\n{_json(key)}: {value}" for key, value in tail).encode() + b"\n}\n"


def _array_chunks(items: Iterable[bytes]) -> Iterator[bytes]:
    """A JSON array with one element per line, so a large export stays diffable and greppable."""
    first = True
    for item in items:
        yield (b"[\n" if first else b",\n") + item
        first = False
    yield b"[]" if first else b"\n]"


# ----- lossy transcript -----------------------------------------------------------------------


def lossy_transcript(session: Session, *, leaf: str | None = None) -> dict[str, Any]:
    """The messages of one branch, root to leaf, as a plain object (shape: docs/export.md).

    ``message`` entries give their message object as loaded (every field kept) with ``entryId``
    first; ``custom_message``, ``branch_summary`` and ``compaction`` entries give the message omp
    shows for them (roles ``custom``, ``branchSummary``, ``compactionSummary``). Every other entry
    (settings, labels, titles, custom state, unknown types) and the other branches are dropped.
    """
    messages: list[dict[str, Any]] = []
    for k in session.branch_indices(leaf if leaf is not None else UNDEFINED):
        message = transcript_message(session.entry_at(k))
        if message is not None:
            messages.append(message)
    return {**_lossy_head(session, leaf), "messages": messages}


def _lossy_head(session: Session, leaf: str | None) -> dict[str, Any]:
    header = session.header or {}
    return {
        "format": LOSSY_FORMAT,
        "format_version": FORMAT_VERSION,
        "session_id": header.get("id"),
        "title": session.get_session_name(),
        "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else None,
        "leaf_id": leaf_of(session, leaf),
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


def _lossy_chunks(session: Session, leaf: str | None) -> Iterator[bytes]:
    """:func:`lossy_transcript` as the export's UTF-8 pieces, one entry decoded at a time."""
    fields = [f"{_json(k)}: {_json(v)},\n" for k, v in _lossy_head(session, leaf).items()]
    yield ("{\n" + "".join(fields) + '"messages": ').encode()
    branch = session.branch_indices(leaf if leaf is not None else UNDEFINED)
    messages = (transcript_message(session.peek_entry(k)) for k in branch)
    yield from gathered(_array_chunks(json_bytes(m) for m in messages if m is not None))
    yield b"\n}\n"
