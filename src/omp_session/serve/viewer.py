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

from omp_session.model.session import Session, open_session
from omp_session.ops.export.html import embed_json, render_html_bytes
from omp_session.paths import project_dir_name

from .events import plain
from .security import DEFAULT_CSP

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


def session_page(path: str, session_id: str, *, archived: bool) -> SessionPage:
    """The page of the session stored at ``path`` (a listed file; raises SessionError/OSError
    when it cannot be read any more)."""
    problems: list[str] = []
    with open_session(path) as s:
        page = render_html_bytes(s, on_problem=problems.append)
        resume = resume_line(s, path)
        # what the event stream's "ready" is compared with, to see a change made while the page loaded
        data = {"id": session_id, "resume": resume, "events": None if archived else f"/events/{quote(session_id, safe='')}",
                "archived": archived, "entries": len(s), "leaf": plain(s.get_leaf_id())}
    hashes = _inline_script_hashes(page)
    return SessionPage(_insert(page, data), _serve_csp(hashes), problems)
