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
from collections.abc import Callable, Iterator
from typing import Any, Final

from omp_session.bytesearch import automaton
from omp_session.errors import EntryNotFoundError, SessionError, StoreError
from omp_session.format.blobs import BlobReader, resolve_blob_refs
from omp_session.format.reader import copilot_records
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session, is_task_result
from omp_session.model.tree import branch_tips

from .subagents import FILE_TRANSCRIPTS, Transcripts, artifacts_dir, find_subagents, task_agent_ids
from .viewer_css import VIEWER_CSS
from .viewer_js import VIEWER_JS

__all__ = ["DATA_ELEMENT_ID", "MAX_SUBAGENT_DEPTH", "SUBAGENT_ELEMENT_PREFIX", "VIEWER_FORMAT", "embed_json",
           "render_html", "render_html_bytes", "render_html_pieces", "viewer_data"]

VIEWER_FORMAT: Final = "omp-session-viewer"
VIEWER_FORMAT_VERSION: Final = 1
DATA_ELEMENT_ID: Final = "omp-session-data"
SUBAGENT_ELEMENT_PREFIX: Final = "omp-subagent-"
# omp nests subagents without a limit; a page stops embedding at this depth and says so
MAX_SUBAGENT_DEPTH: Final = 4

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


_LS, _PS = "\u2028".encode(), "\u2029".encode()
# an automaton finds either separator about eight times faster than bytes.find: their first two
# bytes start every character from U+2000 to U+203F (dashes, quotes, ellipses...), which sends the
# byte search into a check at each (a search for those two bytes first, to skip the automaton
# where they are absent, cost three times the automaton: in prose they are rarely absent);
# leftmost-first (only whether there is a match matters here) a quarter faster again
_separators: Final = automaton((_LS, _PS), leftmost=True)


def _embed_bytes(data: bytes) -> bytes:
    # embed_json on UTF-8 bytes: "<" and U+2028/U+2029 are the same bytes wherever they occur
    # (bytes.replace gives back the same object when there is nothing to replace, after one
    # memchr-speed pass: an "in" test first was a second pass wherever there was)
    data = data.replace(b"<", b"\\u003c")
    if _separators().find_matches_as_indexes(data):
        data = data.replace(_LS, b"\\u2028").replace(_PS, b"\\u2029")
    return data


def _plain_id(value: Any) -> Any:
    return None if value is UNDEFINED else value


def _json_bytes(value: Any) -> bytes:
    return (codec.stringify(value) or "null").encode("utf-8", "surrogatepass")


def _entry_records(session: Session, blob_store: BlobReader | None) -> Callable[[int], bytes]:
    """Entry k as JSON bytes for the page. The file's own line when loading did not change the
    entry (no migration, no blob reference, no Copilot replay data stripped): a 100 MB session
    is then copied, not decoded and encoded again. Otherwise the loaded entry, serialized (and
    not kept decoded: memory stays bounded on a big session)."""
    j = session.journal
    changed = set(copilot_records(j)) if session.sanitized else set()

    def loaded(k: int) -> bytes:
        entry = session.peek_entry(k)
        if blob_store is not None:
            # the session resolves refs itself when opened with a store; this covers a store
            # given only to the export
            entry = resolve_blob_refs(entry, blob_store)
        return _json_bytes(entry)

    if session.migrated or session.header is None:
        return loaded

    marked = j.blob_records()  # and a record the scan decoded (in values) is looked at
    # the page asks for the records in file order: read a window at a time, not a pread each
    raw_of = j.raw_in_order()

    def record(k: int) -> bytes:
        raw = bytes(raw_of(k + 1))
        if k + 1 in changed or k + 1 in marked or (k + 1 in j.values and b"blob:sha256:" in raw):
            return loaded(k)
        return raw.strip()

    return record


class _Document:
    """The page's data for one session: its fields but the entries (:attr:`fields`), the entries
    as JSON bytes ready for the page, each made when asked for (:meth:`entry`), and the agents
    each task result names (entry indices). Embedding entry by entry copies only the few entries
    that need it, not the whole payload three times over, and never holds them all."""

    def __init__(self, session: Session, leaf: str | None, blob_store: BlobReader | None) -> None:
        if leaf is not None and session.index_of(leaf) is None:
            raise EntryNotFoundError(f"{session.path or 'session'}: no entry {leaf}")
        ids = session.ids
        self.record = _entry_records(session, blob_store)
        self.count = len(session)
        labels: dict[str, Any] = {}
        self.task_refs: dict[str, list[int]] = {}
        for k in self._maybe_tasks(session):  # decode only what can be a task result
            for agent in task_agent_ids(session.peek_entry(k)):
                self.task_refs.setdefault(agent, []).append(k)
        if session.labels():
            for k in range(self.count):
                if ids[k] is not UNDEFINED:
                    label = session.get_label(ids[k])
                    if label is not None:
                        labels[str(k)] = label
        leaf_id = leaf if leaf is not None else session.get_leaf_id()
        leaf_index = session.index_of(leaf_id) if leaf_id is not None else None
        header = session.header if isinstance(session.header, dict) else {}
        self.fields: dict[str, Any] = {
            "format": VIEWER_FORMAT,
            "format_version": VIEWER_FORMAT_VERSION,
            "title": session.get_session_name(),
            "session_id": header.get("id"),
            "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else None,
            "header": header,
            "ids": [_plain_id(i) for i in ids],
            "parents": list(session.parent_index),
            "labels": labels,
            "leaf": -1 if leaf_index is None else leaf_index,
            "tips": branch_tips(session),
            "subagents": [],
        }

    def _maybe_tasks(self, session: Session) -> Iterator[int]:
        """The entries that can be task results: tool results whose file bytes can spell
        ``"task"``; an entry loading changed, by what the page holds of it."""
        j = session.journal
        heads = j.heads
        for k in range(self.count):
            if session.migrated or k + 1 in j.values:
                raw = self.record(k)  # JSON.stringify's: a name is never escaped
                if b'"task"' in raw and b"toolResult" in raw:
                    yield k
            else:
                head = heads[k + 1]
                if head is not None and is_task_result(head):
                    yield k

    def entry(self, k: int) -> bytes:
        return _embed_bytes(self.record(k))

    def payload(self) -> Iterator[bytes]:
        """The data block's JSON, ready for the page: the fields, then the (embedded) entries,
        in pieces of about a megabyte."""
        yield _fields_json(self.fields) + b'"entries":['
        batch: list[bytes] = []
        size = 0
        entry = self.entry
        for k in range(self.count):
            piece = entry(k)
            batch.append(piece if k == 0 else b"," + piece)
            size += len(piece)
            if size >= _PIECE:
                yield b"".join(batch)
                batch, size = [], 0
        batch.append(b"]}")
        yield b"".join(batch)


_PIECE = 1024 * 1024


def _fields_json(fields: dict[str, Any]) -> bytes:
    """The data block's start: ``{`` and each field, ready for the page, each followed by ``,``."""
    parts = [b"{"]
    for key, value in fields.items():
        parts += [_json_bytes(key), b":", _embed_bytes(_json_bytes(value)), b","]
    return b"".join(parts)


def _payload(fields: dict[str, Any], entries: list[bytes]) -> bytes:
    """A whole data block in memory (a subagent's, read while its file is open)."""
    return _fields_json(fields) + b'"entries":[' + b",".join(entries) + b"]}"


def viewer_data(session: Session, *, leaf: str | None = None,
                blob_store: BlobReader | None = None) -> dict[str, Any]:
    """What the viewer gets: entries as loaded (unknown fields kept), the tree as parent indices
    (the path walk omp does, so damaged links show as omp would), labels in effect, the leaf
    and the branch tips. Blob references left in the entries are resolved from ``blob_store``
    when given; those still unresolved show as placeholders in the page. ``subagents`` is
    empty here: render_html fills it."""
    payload = b"".join(_Document(session, leaf, blob_store).payload())
    data: dict[str, Any] = codec.loads(payload.decode("utf-8", "replace"))
    return data


class _Subagents:
    """Embeds subagent transcripts: each one is its own JSON block (``omp-subagent-<n>``), parsed
    by the viewer only when opened, so a page with many big subagents opens as fast as without."""

    def __init__(self, blob_store: BlobReader | None, on_problem: Callable[[str], None] | None,
                 transcripts: Transcripts) -> None:
        self.blob_store = blob_store
        self.on_problem = on_problem
        self.transcripts = transcripts
        self.blocks: list[bytes] = []

    def _problem(self, message: str) -> None:
        if self.on_problem is not None:
            self.on_problem(message)

    def listing(self, session_path: str, refs: dict[str, list[int]], depth: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        folder = artifacts_dir(session_path)
        for found in find_subagents(session_path, refs, self.transcripts):
            # relative to the session's folder: the page does not need to reveal absolute paths
            item: dict[str, Any] = {"id": found.agent_id, "file": f"{folder.name if folder else ''}/{found.path.name}",
                                    "refs": list(found.refs), "doc": None, "note": None, "entries": None,
                                    "title": None}
            out.append(item)
            # the page names the file relative to the session; the warning gives the full path
            if not found.exists:
                self._problem(f"{found.path}: subagent transcript not found")
                item["note"] = f"{item['file']}: subagent transcript not found"
                continue
            if depth > MAX_SUBAGENT_DEPTH:
                item["note"] = f"nested more than {MAX_SUBAGENT_DEPTH} levels deep: not embedded"
                continue
            try:
                with self.transcripts.open(found.path, self.blob_store) as sub:
                    doc = _Document(sub, None, None)
                    entries = [doc.entry(k) for k in range(doc.count)]
            except StoreError:
                raise  # the database, not this transcript: the page cannot be made now
            except (SessionError, OSError) as e:
                self._problem(f"subagent transcript not readable: {e}")
                reason = str(e).removeprefix(f"{found.path}: ")
                item["note"] = f"{item['file']}: subagent transcript not readable: {reason}"
                continue
            fields = doc.fields
            fields["subagents"] = self.listing(str(found.path), doc.task_refs, depth + 1)
            self.blocks.append(_payload(fields, entries))
            item["doc"] = len(self.blocks)
            item["entries"] = len(entries)
            item["title"] = fields["title"]
        return out


def render_html_pieces(session: Session, *, leaf: str | None = None, blob_store: BlobReader | None = None,
                       subagents: bool = True, on_problem: Callable[[str], None] | None = None,
                       transcripts: Transcripts = FILE_TRANSCRIPTS) -> Iterator[bytes]:
    """:func:`render_html_bytes` in pieces, to be written as they come: a big session's entries
    are copied from the file into the page one at a time, without ever becoming text. The page's
    fields and subagents are worked out first, so an unknown ``leaf`` is refused here, before
    any piece. ``transcripts``: where the subagent transcripts are read from (default: the files
    next to the session; ``serve --store`` reads them from the store)."""
    doc = _Document(session, leaf, blob_store)
    fields = doc.fields
    embedder = _Subagents(blob_store if blob_store is not None else session.blob_store, on_problem, transcripts)
    if subagents and session.path:
        fields["subagents"] = embedder.listing(session.path, doc.task_refs, 1)
    title = fields["title"] if isinstance(fields["title"], str) and fields["title"] else "omp session"
    head = "".join([
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{html.escape(title)}</title>\n<style>\n{VIEWER_CSS}</style>\n</head>\n<body>\n",
        # shown while the browser reads the data below: on a 100 MB session that takes seconds
        '<div id="app"><p class="loading">Loading the session\u2026</p>'
        '<noscript>This viewer needs JavaScript.</noscript></div>\n',
        f'<script type="application/json" id="{DATA_ELEMENT_ID}">',
    ])

    def pieces() -> Iterator[bytes]:
        yield head.encode("utf-8", "surrogatepass")
        yield from doc.payload()
        yield b"</script>\n"
        for n, block in enumerate(embedder.blocks, start=1):
            yield f'<script type="application/json" id="{SUBAGENT_ELEMENT_PREFIX}{n}">'.encode() + block \
                + b"</script>\n"
        yield f"<script>\n{VIEWER_JS}</script>\n</body>\n</html>\n".encode()

    return pieces()


def render_html_bytes(session: Session, *, leaf: str | None = None, blob_store: BlobReader | None = None,
                      subagents: bool = True, on_problem: Callable[[str], None] | None = None) -> bytes:
    """:func:`render_html` as the UTF-8 bytes of the page, what a file gets: a big session's
    entries are copied from the file into the page without ever becoming text."""
    return b"".join(render_html_pieces(session, leaf=leaf, blob_store=blob_store, subagents=subagents,
                                       on_problem=on_problem))


def render_html(session: Session, *, leaf: str | None = None, blob_store: BlobReader | None = None,
                subagents: bool = True, on_problem: Callable[[str], None] | None = None) -> str:
    """The session as one self-contained HTML page: tree panel, branch view, filters, search.

    ``leaf`` selects the branch shown first (default: the session's leaf); every other branch
    stays reachable from the tree. ``blob_store`` resolves image blob references.
    ``subagents``: embed the subagent transcripts found in the session's artifacts directory
    (and theirs, nested) and link them from the task results that spawned them. A subagent
    named but missing, or unreadable, becomes a note in the page and a call of ``on_problem``
    with a one-line message; it never fails the export.
    """
    page = render_html_bytes(session, leaf=leaf, blob_store=blob_store, subagents=subagents, on_problem=on_problem)
    return page.decode("utf-8", "replace")
