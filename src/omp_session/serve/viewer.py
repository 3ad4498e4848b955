"""``/s/<id>``: the HTML export's viewer, the same bytes ``export --format html`` writes, served
with what makes it live: a toolbar (back to the list, copy resume command), ``#<entryId>``
permalinks and the event stream (static/session.js).

The export's page carries a ``<meta>`` Content-Security-Policy that forbids every network
source, which would also forbid the script and the event stream added here. It is taken out
and replaced by the server's header, which allows this server and, of inline scripts, exactly
the viewer's (by its SHA-256). Nothing else of the page changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from omp_session.format.blobs import BlobStore
from omp_session.format.reader import scan_file
from omp_session.model.session import Session, open_session, scan_archived
from omp_session.ops.export.html import MAX_SUBAGENT_DEPTH, embed_json, render_html_bytes
from omp_session.paths import blobs_dir, project_dir_name

from .events import plain
from .security import DEFAULT_CSP
from .sessions import Catalog, Row

__all__ = ["SERVE_DATA_ID", "SessionPage", "resume_line", "session_page"]

SERVE_DATA_ID: Final = "omp-serve-session"
_META_CSP: Final = b'<meta http-equiv="Content-Security-Policy"'
_HEAD_WINDOW: Final = 1 << 16  # the export's <head> (its stylesheet included) lies well inside this


@dataclass(frozen=True)
class SessionPage:
    body: bytes
    csp: str
    problems: list[str]


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


def _serve_csp(hashes: list[str]) -> str:
    return DEFAULT_CSP.replace("script-src 'self'", " ".join(["script-src 'self'", *hashes]), 1)


def _insert(page: bytes, data: dict[str, Any]) -> bytes:
    head_end = page.find(b"</head>", 0, _HEAD_WINDOW)
    body_end = page.rfind(b"</body>")
    meta = page.find(_META_CSP, 0, head_end if head_end >= 0 else _HEAD_WINDOW)
    parts: list[bytes] = []
    pos = 0
    if meta >= 0:
        meta_end = page.find(b">", meta) + 1
        if page[meta_end: meta_end + 1] == b"\n":
            meta_end += 1
        parts += [page[:meta], b""]
        pos = meta_end
    if head_end >= 0:
        parts += [page[pos:head_end], b'<link rel="stylesheet" href="/static/serve.css">\n']
        pos = head_end
    block = (f'<script type="application/json" id="{SERVE_DATA_ID}">'
             f"{embed_json(json.dumps(data))}</script>\n"
             '<script src="/static/session.js"></script>\n').encode()
    if body_end >= pos:
        parts += [page[pos:body_end], block, page[body_end:]]
    else:
        parts += [page[pos:], block]
    return b"".join(parts)


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


def _links_below(folder: str, depth: int) -> str | None:
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
            found = _links_below(e.path, depth - 1)
            if found is not None:
                return found
    return None


def session_page(catalog: Catalog, row: Row) -> SessionPage:
    """The page of the listed session ``row`` (raises SessionError/OSError when it cannot be
    read any more, or is no longer the regular file under the root that was listed)."""
    problems: list[str] = []
    path, session_id, archived = row.path, row.id, row.archived
    # the viewer embeds every transcript of the artifacts folder, following links: a link there
    # could bring any file of the disk into the page, so such a folder's subagents are left out
    link = _links_below(path[: -len(".jsonl")], MAX_SUBAGENT_DEPTH) if path.endswith(".jsonl") else None
    if link is not None:
        problems.append(f"{link}: a symlink among the subagent transcripts: subagents not shown")
    with _read_listed(catalog, row) as s:
        page = render_html_bytes(s, subagents=link is None, on_problem=problems.append)
        resume = resume_line(s, path)
        # what the event stream's "ready" is compared with, to see a change made while the page loaded
        data = {"id": session_id, "resume": resume, "events": None if archived else f"/events/{quote(session_id, safe='')}",
                "archived": archived, "entries": len(s), "leaf": plain(s.get_leaf_id())}
    hashes = _inline_script_hashes(page)
    return SessionPage(_insert(page, data), _serve_csp(hashes), problems)
