"""``/s/<id>``: the HTML export's viewer, the same bytes ``export --format html`` writes, served
with what makes it live: a toolbar (back to the list, copy resume command), ``#<entryId>``
permalinks and the event stream (static/session.js). It is sent as the export writes it, a
piece at a time (:func:`session_stream`): a 100 MB session is never one page in memory.

The export's page carries a ``<meta>`` Content-Security-Policy that forbids every network
source, which would also forbid the script and the event stream added here. It is taken out
and replaced by the server's header, which allows this server and, of inline scripts, exactly
the viewer's (by its SHA-256). Nothing else of the page changes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import shlex
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any, Final, cast

from omp_session.errors import SessionError, SessionFileError
from omp_session.format.blobs import BlobStore
from omp_session.format.reader import scan_bytes, scan_file
from omp_session.model.session import Session, open_session, scan_archived
from omp_session.ops.export.html import MAX_SUBAGENT_DEPTH, embed_json, render_html_bytes, render_html_pieces
from omp_session.paths import blobs_dir, project_dir_name

from .events import plain
from .security import DEFAULT_CSP
from .sessions import Catalog, Row, url_word

__all__ = ["SERVE_DATA_ID", "SessionPage", "SessionStream", "links_below", "resume_line", "serve_csp", "served_pieces",
           "session_page", "session_stream"]

SERVE_DATA_ID: Final = "omp-serve-session"
_META_CSP: Final = b'<meta http-equiv="Content-Security-Policy"'
_HEAD_WINDOW: Final = 1 << 16  # the export's <head> (its stylesheet included) lies well inside this


@dataclass(frozen=True)
class SessionPage:
    body: bytes
    csp: str
    problems: list[str]


@dataclass(frozen=True)
class SessionStream:
    pieces: Generator[bytes, None, None]  # the page, about a megabyte at a time; closing it closes the session
    csp: str
    problems: list[str]
    session: Session

    def close(self) -> None:
        """The page given up and the session closed, whether or not a piece was taken: closing a
        generator that never started runs none of its code, so its ``finally`` cannot be relied on
        (a reader gone before the first piece)."""
        try:
            self.pieces.close()
        except ValueError:
            return  # a piece is being made in a thread right now: the file stays for that read
        self.session.close()


class _WholeReads:
    """A journal's source while its page is sent: a read that comes back short (the file was
    truncated since it was scanned) is an error, never a cut record copied into the page's JSON."""

    def __init__(self, source: Any, path: str) -> None:
        self._source = source
        self._path = path

    def read(self, start: int, end: int) -> bytes:
        data: bytes = self._source.read(start, end)
        if len(data) < min(end, self._source.size) - start:
            raise SessionFileError(self._path, "truncated while its page was made")
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)


def resume_line(session: Session, path: str) -> str | None:
    """``cd <cwd> && omp --resume <id>``, as ``omp-session resume`` prints it; None when the
    header has no id or working directory (omp could not resume it either)."""
    header = session.header if isinstance(session.header, dict) else {}
    cwd, sid = header.get("cwd"), header.get("id")
    if not isinstance(cwd, str) or not cwd or sid is None:
        return None
    # omp looks an id up in the bucket of the directory it runs in: a file elsewhere is named by path
    in_bucket = os.path.basename(os.path.dirname(path)) == project_dir_name(cwd)
    argv = ["omp", "--resume", str(sid) if in_bucket else os.path.realpath(path)]
    return f"cd {shlex.quote(cwd)} && {shlex.join(argv)}"


def _inline_script_hashes(page: bytes) -> list[str]:
    """CSP hash sources of the page's executable inline scripts (``<script>`` with no attributes;
    the data blocks are ``type="application/json"`` and never run)."""
    out: list[str] = []
    pos = page.find(b"<script>")
    while pos >= 0:
        start = pos + len(b"<script>")
        end = page.find(b"</script>", start)
        if end < 0:
            break
        digest = base64.b64encode(hashlib.sha256(page[start:end]).digest()).decode()
        out.append(f"'sha256-{digest}'")
        pos = page.find(b"<script>", end)
    return out


def _viewer_script_hashes() -> list[str]:
    """The hashes of the viewer's inline scripts, from the page of an empty session: the header
    goes before the first byte of a page, so they cannot be read off the page being sent. The
    export's one inline script is the same on every page (the data blocks never run)."""
    with Session(scan_bytes(b""), None) as empty:
        return _inline_script_hashes(render_html_bytes(empty, subagents=False))


def _serve_csp(hashes: list[str]) -> str:
    return DEFAULT_CSP.replace("script-src 'self'", " ".join(["script-src 'self'", *hashes]), 1)


def _head(piece: bytes) -> bytes:
    """The page's first piece (its whole ``<head>``) without the export's meta policy, with the
    server's stylesheet."""
    head_end = piece.find(b"</head>", 0, _HEAD_WINDOW)
    meta = piece.find(_META_CSP, 0, head_end if head_end >= 0 else _HEAD_WINDOW)
    if meta >= 0:
        meta_end = piece.find(b">", meta) + 1
        if piece[meta_end: meta_end + 1] == b"\n":
            meta_end += 1
        piece = piece[:meta] + piece[meta_end:]
        head_end = piece.find(b"</head>", 0, _HEAD_WINDOW)
    if head_end >= 0:
        piece = piece[:head_end] + b'<link rel="stylesheet" href="/static/serve.css">\n' + piece[head_end:]
    return piece


def _tail(piece: bytes, data: dict[str, Any]) -> bytes:
    """The page's last piece with the toolbar's data and script before ``</body>``."""
    block = (f'<script type="application/json" id="{SERVE_DATA_ID}">'
             f"{embed_json(json.dumps(data))}</script>\n"
             '<script src="/static/session.js"></script>\n').encode()
    body_end = piece.rfind(b"</body>")
    if body_end < 0:
        return piece + block
    return piece[:body_end] + block + piece[body_end:]


def _served(pieces: Iterator[bytes], data: dict[str, Any], session: Session) -> Generator[bytes, None, None]:
    """The export's pieces as the server sends them; the session is closed at the end (or when
    the stream is closed early: a reader that went away)."""
    try:
        yield _head(next(pieces, b""))
        last: bytes | None = None
        for piece in pieces:
            if last is not None:
                yield last
            last = piece
        yield _tail(b"" if last is None else last, data)
    except (SessionError, OSError) as e:
        # the file changed under the page (truncated, replaced): the status line is long gone, so
        # the page ends here with the reason, in place of a connection cut by a traceback
        reason = e.reason if isinstance(e, SessionFileError) else str(e)
        message = html.escape(f"{session.path}: the session could not be read to its end: {reason}")
        yield f'</script>\n<p class="error serve-error" id="serve-error">{message}</p>\n</body>\n</html>\n'.encode(
            "utf-8", "replace")
    finally:
        session.close()


def _read_listed(catalog: Catalog, row: Row) -> Session:
    """The listed file read through the descriptor :meth:`Catalog.open_listed` checked, never
    through its path again: what the path points to a moment later is not what is read."""
    fd = catalog.open_listed(row)
    try:
        via = f"/dev/fd/{fd}"  # opening it opens this very file (Linux, macOS, the BSDs)
        if not os.path.exists(via):
            return open_session(row.path)  # no /dev/fd: the path, checked a moment ago
        journal = scan_archived(via) if row.archived else scan_file(via)
    finally:
        os.close(fd)
    return Session(journal, row.path, BlobStore(blobs_dir()))


def links_below(folder: str, depth: int) -> str | None:
    """The first symlink in a session's artifacts folder (the folder itself included), searched
    as deep as the viewer embeds subagents; None when there is none."""
    try:
        if os.path.islink(folder):
            return folder
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return None  # no folder: nothing to embed
    for e in entries:
        if e.is_symlink():
            return e.path
        if depth > 0 and e.is_dir(follow_symlinks=False):
            found = links_below(e.path, depth - 1)
            if found is not None:
                return found
    return None


def session_stream(catalog: Catalog, row: Row) -> SessionStream:
    """The page of the listed session ``row``, to be sent as it is made (raises SessionError/
    OSError when it cannot be read any more, or is no longer the regular file under the root that
    was listed). The session is read and the page's fields worked out before this returns: what
    fails, fails here, before any byte is sent; its entries are copied from the file as the
    pieces are taken, so a 100 MB session is never held as one page."""
    problems: list[str] = []
    path, session_id, archived = row.path, row.id, row.archived
    # the viewer embeds every transcript of the artifacts folder, following links: a link there
    # could bring any file of the disk into the page, so such a folder's subagents are left out
    link = links_below(path[: -len(".jsonl")], MAX_SUBAGENT_DEPTH) if path.endswith(".jsonl") else None
    if link is not None:
        problems.append(f"{link}: a symlink among the subagent transcripts: subagents not shown")
    s = _read_listed(catalog, row)
    try:
        # a big file is read again as each piece is made, long after the scan: a truncation then
        # must end the page with its reason (_served), not send cut JSON under a 200 that looks whole
        s.journal.source = cast(Any, _WholeReads(s.journal.source, path))
        pieces = render_html_pieces(s, subagents=link is None, on_problem=problems.append)
        resume = resume_line(s, path)
        # what the event stream's "ready" is compared with, to see a change made while the page loaded
        data = {"id": session_id, "resume": resume, "events": None if archived else f"/events/{url_word(session_id)}",
                "archived": archived, "entries": len(s), "leaf": plain(s.get_leaf_id())}
    except BaseException:
        s.close()
        raise
    return SessionStream(_served(pieces, data, s), _serve_csp(_VIEWER_HASHES), problems, s)


def session_page(catalog: Catalog, row: Row) -> SessionPage:
    """:func:`session_stream`'s page as one ``bytes`` (tests; the server streams it)."""
    stream = session_stream(catalog, row)
    try:
        return SessionPage(b"".join(stream.pieces), stream.csp, stream.problems)
    finally:
        stream.close()


_VIEWER_HASHES: Final = _viewer_script_hashes()


def served_pieces(pieces: Iterator[bytes], data: dict[str, Any], session: Session) -> Generator[bytes, None, None]:
    """An export's pieces as the server sends them (a stored session's page too)."""
    return _served(pieces, data, session)


def serve_csp() -> str:
    """The policy a session's page is sent with."""
    return _serve_csp(_VIEWER_HASHES)
