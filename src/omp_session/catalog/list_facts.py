"""What ``list`` shows of a stored session, derived once into the store's derived tables
(catalog/derived.py) so that ``list --store`` need not read the bytes again (docs/team.md).

omp's listing (catalog/listing.py, spec S11) reads a session's first 4 KB and last 32 KB; the same
steps run here on the same windows, so a listing from the tables equals the one from the bytes:

* :func:`head_facts` -- id, cwd, title, parent, created, message count and first message, from
  the first 4 KB as omp reads them (title overlay included); None for a session omp passes over.
* :func:`shown_status` -- the status omp's listing reads from the last 32 KB: from the line
  being written, if any, else from the last ``message`` line among the whole lines, which an
  update reading only the appended bytes keeps (:func:`complete_status`, and where that line
  starts, to tell whether it is still inside the last 32 KB).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from omp_session.js.codec import loads, parse_jsonl
from omp_session.js.value import truthy
from omp_session.store.derived import Listed

from . import listing as _listing
from .listing import PREFIX_BYTES, SUFFIX_BYTES

__all__ = ["complete_status", "complete_status_after", "head_facts", "last_status", "shown_status"]

UNKNOWN: Final = "unknown"


@dataclass(frozen=True)
class _Stat:
    st_size: int = 0
    st_mtime_ns: int = 0


def head_facts(head: bytes, clean: Any = None) -> Listed | None:
    """The listing's facts from ``head`` (at least the session's first :data:`PREFIX_BYTES` bytes
    as omp reads them, or the whole session); None when omp's listing passes over the session.
    ``clean``: what a text becomes to be stored (a database keeps no NUL)."""
    content = _listing.decode_text(head[:PREFIX_BYTES])
    try:
        values = [value for value, _, _ in parse_jsonl(content)[0]]
        header = _listing.parse_header(content, values)
        if header is None:
            return None
        info = _listing.summarise("", _Stat(), header, content, values, None)  # type: ignore[arg-type]
    except (ValueError, RecursionError, _listing.Unlisted):
        return None

    def keep(text: str | None) -> Any:
        return text if clean is None or text is None else clean(text)

    return Listed(keep(info.id), keep(info.cwd), keep(info.title), keep(info.parent_session_path), info.created,
                  info.message_count, keep(info.first_message))


def last_status(window: bytes, base: int, at_start: bool) -> tuple[str, int] | None:
    """(status, offset) of the last ``message`` line in ``window`` (bytes from offset ``base``),
    read as omp's ``deriveStatus`` reads its tail window; None when it has none. ``at_start``:
    ``window`` begins where omp's window begins (its decoder drops a BOM there)."""
    pieces = window.split(b"\n")
    end = len(window)
    for i in range(len(pieces) - 1, -1, -1):
        piece = pieces[i]
        start = end - len(piece)
        end = start - 1
        if not piece.startswith(b"{") and not (i == 0 and at_start and piece.startswith(b"\xef\xbb\xbf{")):
            continue  # what does not start with "{" once decoded is passed over unread
        text = _listing.decode_text(piece) if i == 0 and at_start else piece.decode("utf-8", "replace")
        try:
            entry = loads(text)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("type") == "message" and truthy(entry.get("message")):
            return _listing.message_status(entry["message"]), base + start
    return None


def complete_status(body: bytes, end: int) -> tuple[str | None, int | None]:
    """(status, offset) of the last ``message`` line among the whole lines of ``body`` before
    ``end`` (a line start), as far as any later last 32 KB can reach; (None, None): none."""
    window_at = max(0, end - SUFFIX_BYTES)
    found = last_status(body[window_at:end], window_at, True)
    return found if found is not None else (None, None)


def complete_status_after(status: str | None, at: int | None, chunk: bytes,
                          chunk_at: int) -> tuple[str | None, int | None]:
    """:func:`complete_status` once the whole lines ``chunk`` (from offset ``chunk_at``) follow
    the lines whose last ``message`` line gave ``status`` from offset ``at``."""
    found = last_status(chunk, chunk_at, chunk_at == 0)
    return found if found is not None else (status, at)


def shown_status(status: str | None, at: int | None, partial: bytes, partial_at: int) -> str:
    """What omp's listing shows: the status of the last ``message`` line in the last 32 KB, of
    a session whose whole lines end at ``partial_at``, followed by ``partial`` (a line being
    written, or nothing); ``status``/``at``: :func:`complete_status` of the whole lines."""
    window_at = max(0, partial_at + len(partial) - SUFFIX_BYTES)
    if window_at >= partial_at:  # the window lies in the line being written
        found = last_status(partial[window_at - partial_at:], window_at, True)
        return UNKNOWN if found is None else found[0]
    found = last_status(partial, partial_at, False)
    if found is not None:
        return found[0]
    # the last message line among the whole ones, if the window reaches it (a line the window
    # starts inside of is no JSON text)
    return status if status is not None and at is not None and at >= window_at else UNKNOWN
