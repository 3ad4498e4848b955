"""The HTML export: one self-contained, offline viewer of the whole entry tree (docs/export-html.md).

    from omp_session.export_html import render_html
    html = render_html(omp_session.open(path))

The page holds every entry as JSON in a ``<script type="application/json">`` tag and a small
viewer (export_viewer_js.py, export_viewer_css.py) that renders only the selected branch. Nothing
is fetched: a Content-Security-Policy forbids every network source, images are inline ``data:``
URLs. Rendering never writes and never changes the session.
"""

from __future__ import annotations

import html
from typing import Any, Final

from . import codec
from .blobs import BlobReader, resolve_blob_refs
from .codec import UNDEFINED
from .errors import EntryNotFoundError
from .export import branch_tips
from .export_viewer_css import VIEWER_CSS
from .export_viewer_js import VIEWER_JS
from .session import Session

__all__ = ["DATA_ELEMENT_ID", "VIEWER_FORMAT", "embed_json", "render_html", "viewer_data"]

VIEWER_FORMAT: Final = "omp-session-viewer"
VIEWER_FORMAT_VERSION: Final = 1
DATA_ELEMENT_ID: Final = "omp-session-data"

# No network at all: scripts and styles only inline, images only from data: URLs. This is what
# makes "self-contained" hold even for content that tries to load something.
_CSP: Final = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
               "img-src data:; base-uri 'none'; form-action 'none'")


def embed_json(text: str) -> str:
    """JSON text made safe inside a ``<script>`` element.

    ``<`` only occurs inside JSON strings, where ``\\u003c`` means the same character, so neither
    ``</script>`` nor ``<!--`` can end or confuse the element. U+2028/U+2029 are escaped too, for
    tools that read the block as JavaScript rather than JSON.
    """
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _plain_id(value: Any) -> Any:
    return None if value is UNDEFINED else value


def viewer_data(session: Session, *, leaf: str | None = None,
                blob_store: BlobReader | None = None) -> dict[str, Any]:
    """What the viewer gets: entries as loaded (unknown fields kept), the tree as parent indices
    (the path walk omp does, so damaged links show as omp would), labels in effect, the leaf
    and the branch tips. Blob references left in the entries are resolved from ``blob_store``
    when given; those still unresolved show as placeholders in the page."""
    if leaf is not None and session.index_of(leaf) is None:
        raise EntryNotFoundError(f"{session.path or 'session'}: no entry {leaf}")
    ids = session.ids
    entries: list[Any] = []
    labels: dict[str, Any] = {}
    for k in range(len(session)):
        entry = session.entry_at(k)
        if blob_store is not None:
            # the session resolves refs itself when opened with a store; this covers a store
            # given only to the export
            entry = resolve_blob_refs(entry, blob_store)
        entries.append(entry)
        if ids[k] is not UNDEFINED:
            label = session.get_label(ids[k])
            if label is not None:
                labels[str(k)] = label
    leaf_id = leaf if leaf is not None else session.get_leaf_id()
    leaf_index = session.index_of(leaf_id) if leaf_id is not None else None
    header = session.header if isinstance(session.header, dict) else {}
    return {
        "format": VIEWER_FORMAT,
        "format_version": VIEWER_FORMAT_VERSION,
        "title": session.get_session_name(),
        "session_id": header.get("id"),
        "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else None,
        "header": header,
        "ids": [_plain_id(i) for i in ids],
        "parents": list(session.parent_index),
        "entries": entries,
        "labels": labels,
        "leaf": -1 if leaf_index is None else leaf_index,
        "tips": branch_tips(session),
    }


def render_html(session: Session, *, leaf: str | None = None, blob_store: BlobReader | None = None) -> str:
    """The session as one self-contained HTML page: tree panel, branch view, filters, search.

    ``leaf`` selects the branch shown first (default: the session's leaf); every other branch
    stays reachable from the tree. ``blob_store`` resolves image blob references.
    """
    data = viewer_data(session, leaf=leaf, blob_store=blob_store)
    payload = codec.stringify(data) or "null"
    title = data["title"] if isinstance(data["title"], str) and data["title"] else "omp session"
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{html.escape(title)}</title>\n<style>\n{VIEWER_CSS}</style>\n</head>\n<body>\n",
        '<div id="app"><noscript>This viewer needs JavaScript.</noscript></div>\n',
        f'<script type="application/json" id="{DATA_ELEMENT_ID}">{embed_json(payload)}</script>\n',
        f"<script>\n{VIEWER_JS}</script>\n</body>\n</html>\n",
    ])
