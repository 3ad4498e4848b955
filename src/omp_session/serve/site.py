"""``export --site DIR``: the server's pages as static files, browsable from ``file://`` with no
server and no network (docs/serve.md, "Static site").

``index.html`` lists the sessions newest first (subagents under their parent), ``projects/*.html``
one project each, ``s/<id>.html`` is each session's viewer as ``export --format html`` writes it
(with a back link and ``#<entryId>`` permalinks added inline, which its CSP allows), and
``search.html`` searches a client-side index, ``search-index.js``, a script assigning a global:
``file://`` pages may not fetch. Above :data:`SEARCH_CAP` bytes of text there is no index and
the page says so.

Incremental: ``site.json`` (the manifest) maps each session id to the stat key of its file and
of the subagent transcripts its page embeds, and to the files written for it. A run re-renders
only the sessions whose key changed, removes what it wrote for sessions that are gone, and
always rewrites the index pages. Nothing in DIR is deleted that the manifest does not name, and
a non-empty DIR without a manifest is refused unless ``force``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import html
import json
import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

from omp_session._version import __version__
from omp_session.errors import SessionError
from omp_session.model.search_text import searchable
from omp_session.model.session import open_session
from omp_session.ops.export.html import MAX_SUBAGENT_DEPTH, render_html_pieces
from omp_session.paths import project_dir_name

from .sessions import Catalog, Row

__all__ = ["MANIFEST", "RENDERER", "SEARCH_CAP", "SiteReport", "build_site"]

MANIFEST: Final = "site.json"
SITE_FORMAT: Final = "omp-session-site"
# a new version of the package may render pages differently: every page is made again
RENDERER: Final = f"{__version__}/1"
SEARCH_CAP: Final = 50 * 1024 * 1024  # bytes of index text a browser loads from file:// in seconds
ENTRY_TEXT_CAP: Final = 10_000  # chars of one entry in the index: a huge tool output must not crowd it
_SAFE_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# what the manifest may name: only such files are ever deleted (a hand-edited manifest cannot
# send the removal outside DIR or onto a file of the user's)
_OURS: Final = re.compile(r"(?:s/[A-Za-z0-9][A-Za-z0-9._-]*\.html|search/[A-Za-z0-9][A-Za-z0-9._-]*\.json"
                          r"|projects/[A-Za-z0-9][A-Za-z0-9._-]*\.html|static/[a-z.-]+|index\.html|search\.html"
                          r"|search-index\.js)")
_STATIC: Final = ("serve.css", "site.js")
_FOLDERS: Final = ("s", "search", "projects", "static")
# the form of a hashed page name: an id of that form is hashed too, so that no plain name is ever
# another id's hashed one
_HASH_FORM: Final = re.compile(r"x-[0-9a-f]{32}", re.IGNORECASE)


@dataclass
class SiteReport:
    """What a run did: session pages ``written`` (rendered), ``unchanged``, ``removed`` (of
    sessions gone), the index pages written, and whether search has its index."""

    directory: str
    sessions: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    index_pages: int = 0
    search_index: bool = False
    search_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"directory": self.directory, "sessions": self.sessions, "written": self.written,
                "unchanged": self.unchanged, "removed": self.removed, "index_pages": self.index_pages,
                "search_index": self.search_index, "search_bytes": self.search_bytes,
                "problems": self.problems, "seconds": round(self.seconds, 3)}


# ----- files ------------------------------------------------------------------------------------


def _write(directory: str, rel: str, pieces: Iterable[bytes]) -> None:
    """``directory/rel`` through a temporary file and a rename: a reader (or a crash) never sees
    half a page, and a symlink put at the name is replaced, never written through."""
    target = os.path.join(directory, rel)
    folder, base = os.path.split(target)
    if folder != directory and os.path.islink(folder):
        raise SessionError(f"{folder}: is a symbolic link; the site is written only inside {directory}")
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in pieces:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _remove(directory: str, rel: str, keep: Callable[[], set[tuple[int, int]]] = set) -> bool:
    """Delete a file the manifest says this command wrote; anything else is left alone: nothing
    through a symlinked folder, and not a file that is one of ``keep`` (the files this run keeps)
    under another name — on a file system that ignores case, the gone session "abc"'s page
    ``s/abc.html`` is the new session "ABC"'s ``s/ABC.html``."""
    if not _OURS.fullmatch(rel):
        return False
    path = os.path.join(directory, rel)
    try:
        if os.path.islink(os.path.dirname(path)) or not os.path.isfile(path) or os.path.islink(path):
            return False
        if _identity(path) in keep():
            return False
        os.unlink(path)
    except OSError:
        return False
    return True


def _load_manifest(directory: str, force: bool) -> dict[str, Any]:
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, "rb") as f:
            data = json.load(f)
    except FileNotFoundError:
        try:
            names = [n for n in os.listdir(directory) if not n.startswith(".")]
        except FileNotFoundError:
            names = []
        if names and not force:
            raise SessionError(f"{directory}: not empty and holds no {MANIFEST} (not a site written by "
                               "omp-session); use --force to write into it (nothing in it is deleted)") from None
        return {}
    except (OSError, ValueError) as e:
        if force:
            return {}
        raise SessionError(f"{path}: cannot be read ({e}); use --force to write the site anew") from None
    if not isinstance(data, dict) or data.get("format") != SITE_FORMAT or not isinstance(data.get("sessions"), dict):
        if force:
            return {}
        raise SessionError(f"{path}: not an omp-session site manifest; use --force to write the site anew")
    return data


# ----- names and keys ---------------------------------------------------------------------------


def _hashed(text: str) -> str:
    return "x-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def page_stem(session_id: str) -> str:
    """A file name for an id: the id itself when it is a plain name, else a hash of it (an id is
    the file's own text: "/", "..", "#" or a NUL may be in it)."""
    plain = _SAFE_NAME.fullmatch(session_id) and ".." not in session_id and not _HASH_FORM.fullmatch(session_id)
    return session_id if plain else _hashed(session_id)


def project_stem(cwd: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", cwd).strip("-.")[:60] or "none"
    return f"{slug}-{_hashed(cwd)[2:10]}"


def _stat_key(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _embedded(folder: str, depth: int, out: list[list[Any]], base: str) -> None:
    """The transcripts the viewer embeds from a session's artifacts folder (as deep as it goes),
    with their stat keys: a changed subagent changes its parent's page."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        if e.name.endswith(".jsonl"):
            key = _stat_key(e.path)
            if key is not None:
                out.append([os.path.relpath(e.path, base), *key])
        elif depth > 1 and e.is_dir():
            _embedded(e.path, depth - 1, out, base)


def _key(row: Row) -> dict[str, Any] | None:
    own = _stat_key(row.path)
    if own is None:
        return None
    subs: list[list[Any]] = []
    if row.path.endswith(".jsonl"):
        folder = row.path[: -len(".jsonl")]
        _embedded(folder, MAX_SUBAGENT_DEPTH, subs, folder)
    return {"path": row.path, "size": own[0], "mtime_ns": own[1], "inode": own[2], "subagents": subs,
            "renderer": RENDERER}


# ----- a session's page and its search text -----------------------------------------------------

# the viewer page as the export writes it, plus (inline: its CSP allows inline script and style,
# nothing from a file or the network) a way back to the index and #<entryId> permalinks
_SESSION_EXTRA: Final = b"""<style>#site-bar { position: fixed; right: 12px; bottom: 10px; z-index: 10; display: flex;
  gap: 8px; font: 12px system-ui, sans-serif; background: rgba(246, 246, 246, .95); border: 1px solid #ccc;
  border-radius: 6px; padding: 4px 8px; } #site-bar a { color: #2456a6; text-decoration: none; }
@media (prefers-color-scheme: dark) { #site-bar { background: rgba(32, 32, 32, .95); border-color: #444; } }</style>
<nav id="site-bar"><a id="site-back" href="../index.html">&larr; sessions</a><a href="../search.html">search</a></nav>
<script>
(function () {
  'use strict';
  function goToEntry(id) {
    var V = window.ompViewer;
    if (!V || !id) return;
    var rows = V.treeRows();
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].id !== id) continue;
      V.revealInTree(rows[i].k);
      var node = document.querySelector('#tree .node[data-k="' + rows[i].k + '"]');
      if (node) node.click();
      return;
    }
  }
  function fromHash() {
    if (location.hash.length < 2) return;
    try { goToEntry(decodeURIComponent(location.hash.slice(1))); } catch (err) { /* a hand-made "#%" */ }
  }
  fromHash();
  window.addEventListener('hashchange', fromHash);
})();
</script>
"""


def _with_extra(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The page's pieces with :data:`_SESSION_EXTRA` before ``</body>`` (in the last piece: after
    the viewer's script, whose ``window.ompViewer`` it uses)."""
    last: bytes | None = None
    for piece in pieces:
        if last is not None:
            yield last
        last = piece
    if last is None:
        return
    at = last.rfind(b"</body>")
    yield last + _SESSION_EXTRA if at < 0 else last[:at] + _SESSION_EXTRA + last[at:]


def _search_doc(session: Any, row: Row, page: str) -> dict[str, Any]:
    entries: list[list[Any]] = []
    for k in range(len(session)):
        found = searchable(session.peek_entry(k))
        text = "\n".join(t for texts in found.docs.values() for t in texts)
        entry_id = found.row[0]
        if not text or not isinstance(entry_id, str):
            continue
        entries.append([entry_id, found.row[3] or found.row[2] or "", found.row[4], text[:ENTRY_TEXT_CAP]])
    return {"page": page, "id": row.id, "title": row.title or row.first_message[:160], "cwd": row.cwd,
            "entries": entries}


def _render(directory: str, row: Row, page: str, search: str, problems: list[str]) -> None:
    def problem(message: str) -> None:
        problems.append(f"{row.path}: {message}")

    with open_session(row.path) as s:
        _write(directory, page, _with_extra(render_html_pieces(s, subagents=True, on_problem=problem)))
        doc = _search_doc(s, row, page)
    try:
        data = json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (S1.1.3): escaped, the file stays UTF-8 and valid JS
        data = json.dumps(doc).encode("ascii")
    _write(directory, search, [data])


# ----- the index pages --------------------------------------------------------------------------


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _when(ms: int | None) -> str:
    return "?" if ms is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _layout(title: str, up: str, here: str, body: str, scripts: Iterable[str] = ()) -> bytes:
    nav = "".join(f'<a href="{up}{href}"{" class=here" if href == here else ""}>{name}</a>'
                  for href, name in (("index.html", "Sessions"), ("search.html", "Search")))
    tags = "".join(f'<script src="{up}{s}" defer></script>' for s in scripts)
    # no network and nothing but this site's own files, even from file://
    csp = ("default-src 'none'; script-src 'self' file:; style-src 'self' file:; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    text = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_e(title)} · omp-session</title><link rel="stylesheet" href="{up}static/serve.css">{tags}'
            f'</head><body class="serve"><header class="top"><strong>omp-session</strong><nav>{nav}</nav></header>'
            f'<main class="page">{body}</main></body></html>\n')
    return text.encode("utf-8", "replace")


def _row_html(row: Row, pages: dict[str, str], up: str, sub: bool) -> str:
    page = pages.get(row.id)
    title = _e((row.title or row.first_message or row.id)[:160])
    link = f'<a href="{up}{_e(page)}">{title}</a>' if page is not None else title
    badges = ('<span class="badge archived">archived</span>' if row.archived else "") + \
        ('<span class="badge sub">subagent</span>' if sub else "")
    first = _e(row.first_message[:200]) if row.title else ""
    return (f'<tr class="session{" sub" if sub else ""}" data-id="{_e(row.id)}" data-project="{_e(row.cwd)}">'
            f'<td class="title">{link} '
            f'{badges}<div class="first">{first}</div></td><td class="cwd">{_e(row.cwd)}</td>'
            f'<td class="when">{_when(row.modified)}</td><td class="when">{_when(row.created)}</td>'
            f'<td class="num">{row.messages}</td><td class="num">{_size(row.size)}</td>'
            f'<td>{_e(row.status or "")}</td></tr>')


def _table(rows: list[Row], pages: dict[str, str], up: str) -> str:
    body = "".join(_row_html(r, pages, up, False) + "".join(_row_html(c, pages, up, True) for c in r.children)
                   for r in rows)
    if not rows:
        return '<p class="empty">No sessions.</p>'
    return ('<table class="sessions" id="sessions"><thead><tr><th>Title</th><th>Project</th><th>Modified</th>'
            f"<th>Created</th><th>Msgs</th><th>Size</th><th>Status</th></tr></thead><tbody>{body}</tbody></table>")


def _index_page(rows: list[Row], projects: list[tuple[str, int]], pages: dict[str, str]) -> bytes:
    options = "".join(f'<option value="{_e(cwd)}">{_e(cwd or "(none)")} ({n})</option>' for cwd, n in projects)
    links = "".join(f'<li><a href="projects/{_e(project_stem(cwd))}.html">{_e(cwd or "(none)")}</a> ({n})</li>'
                    for cwd, n in projects)
    form = ('<form class="filters" id="site-filters"><label>Project <select id="f-project"><option value="">'
            f'all projects</option>{options}</select></label><label>Text <input type="search" id="f-text" '
            'placeholder="title, first message, project, id"></label></form>')
    body = (form + f'<p class="count" id="count">{len(rows)} session(s)</p>' + _table(rows, pages, "")
            + f'<h2>Projects</h2><ul class="projects">{links}</ul>')
    return _layout("Sessions", "", "index.html", body, ["static/site.js"])


def _project_page(cwd: str, rows: list[Row], pages: dict[str, str]) -> bytes:
    body = (f'<h1>{_e(cwd or "(none)")}</h1><form class="filters" id="site-filters"><label>Text <input '
            'type="search" id="f-text" placeholder="title, first message, id"></label></form>'
            f'<p class="count" id="count">{len(rows)} session(s)</p>' + _table(rows, pages, "../"))
    return _layout(cwd or "(none)", "../", "", body, ["static/site.js"])


def _search_page(indexed: bool, text_bytes: int, cap: int) -> bytes:
    form = ('<form class="filters" id="site-search"><input type="search" id="q" placeholder="words (all of them '
            'must be in an entry)" autofocus><button type="submit">Search</button></form>')
    if indexed:
        body = form + '<p class="count" id="count"></p><div id="results"></div>'
        return _layout("Search", "", "search.html", body, ["search-index.js", "static/site.js"])
    body = (f'<p class="error" id="no-index">This site holds {text_bytes / 1e6:.0f} MB of text, more than the '
            f"{cap / 1e6:.0f} MB a page opened from a file can search; search every session with "
            "<code>omp-session serve</code> (or <code>omp-session search</code>).</p>")
    return _layout("Search", "", "search.html", body)


def _static(name: str) -> bytes:
    return (resources.files("omp_session.serve") / "static" / name).read_bytes()


# ----- the run ----------------------------------------------------------------------------------


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def build_site(directory: str | os.PathLike[str], root: str | os.PathLike[str], *, project: str | None = None,
               force: bool = False, search_cap: int = SEARCH_CAP,
               progress: Callable[[int, int], None] | None = None) -> SiteReport:
    """Write (or bring up to date) the site of the sessions under ``root`` in ``directory``: every
    project's, or only those of the project whose working directory is ``project``. A session that cannot be
    read is a line in ``problems`` (it gets no page, and is tried again next run)."""
    started = time.perf_counter()
    out = os.path.abspath(os.fspath(directory))
    real_root = os.path.realpath(os.fspath(root))
    if _inside(os.path.realpath(out), real_root):
        raise SessionError(f"{out}: is inside the sessions root {real_root}; write the site elsewhere")
    if os.path.lexists(out) and not os.path.isdir(out):
        raise SessionError(f"{out}: is not a directory")
    old = _load_manifest(out, force)
    old_sessions: dict[str, Any] = old.get("sessions", {}) if old else {}
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise SessionError(f"{out}: cannot create: {e.strerror or e}") from None
    for name in _FOLDERS:  # written into and deleted from: a link would take both outside DIR
        if os.path.islink(os.path.join(out, name)):
            raise SessionError(f"{os.path.join(out, name)}: is a symbolic link; the site is written only "
                               f"inside {out} (remove the link or choose another folder)")
    report = SiteReport(out)

    catalog = Catalog(root)
    # a project is its folder under the root (S9.2), as for list and pack
    bucket = None if project is None else project_dir_name(project)
    parents = [r for r in catalog.rows() if bucket is None or os.path.basename(os.path.dirname(r.path)) == bucket]
    report.problems += [f"{p}: not a readable session (no page)" for p in catalog.skipped
                        if bucket is None or os.path.basename(os.path.dirname(p)) == bucket]

    # one page per id (a copy of a session under another name shares its id: the newest wins),
    # and one name per page even on a file system that ignores case: ids that differ only in
    # case are all hashed, whichever is newer, so a page keeps its name from run to run
    pages: dict[str, str] = {}
    chosen: list[Row] = []
    for row in (r for p in parents for r in (p, *p.children)):
        if not row.id:
            report.problems.append(f"{row.path}: the header holds no session id (no page)")
            continue
        if row.id not in pages:
            pages[row.id] = ""
            chosen.append(row)
    folded = Counter(sid.lower() for sid in pages)
    for sid in pages:
        pages[sid] = f"s/{page_stem(sid) if folded[sid.lower()] == 1 else _hashed(sid)}.html"
    report.sessions = len(chosen)

    sessions: dict[str, Any] = {}
    todo: list[tuple[Row, dict[str, Any]]] = []
    for row in chosen:
        key = _key(row)
        if key is None:
            continue  # gone since the listing
        page, search = pages[row.id], "search/" + pages[row.id][2:-5] + ".json"
        entry = {**key, "page": page, "search": search}
        before = old_sessions.get(row.id)
        if before == entry and os.path.isfile(os.path.join(out, page)) \
                and os.path.isfile(os.path.join(out, search)):
            sessions[row.id] = entry
            report.unchanged += 1
        else:
            todo.append((row, entry))
    for n, (row, entry) in enumerate(todo, start=1):
        try:
            _render(out, row, entry["page"], entry["search"], report.problems)
        except (SessionError, OSError, ValueError) as e:
            report.problems.append(f"{row.path}: {e}" if row.path not in str(e) else str(e))
            pages.pop(row.id, None)
        else:
            sessions[row.id] = entry
            report.written += 1
        if progress is not None:
            progress(n, len(todo))

    # what the last run wrote and this one does not: the pages of sessions gone (or failed)
    kept = {f for done in sessions.values() for f in (done["page"], done["search"])}

    @functools.cache
    def keep() -> set[tuple[int, int]]:
        return {i for i in (_identity(os.path.join(out, rel)) for rel in kept) if i is not None}

    for before in old_sessions.values():
        if not isinstance(before, dict):
            continue
        for rel in (before.get("page"), before.get("search")):
            if isinstance(rel, str) and rel not in kept and _remove(out, rel, keep):
                report.removed += 1 if rel.startswith("s/") else 0

    files = _write_indexes(out, parents, pages, sessions, search_cap, report)
    for rel in old.get("files", []) if old else []:
        if isinstance(rel, str) and rel not in files:
            _remove(out, rel)
    manifest = {"format": SITE_FORMAT, "version": 1, "renderer": RENDERER, "root": os.fspath(root),
                "project": project, "sessions": sessions, "files": sorted(files)}
    _write(out, MANIFEST, [json.dumps(manifest, indent=1).encode("ascii")])
    report.seconds = time.perf_counter() - started
    return report


def _write_indexes(out: str, parents: list[Row], pages: dict[str, str], sessions: dict[str, Any],
                   search_cap: int, report: SiteReport) -> set[str]:
    """index.html, the project pages, search.html and its index, and the static files: written
    on every run (a session's new title or a new session changes them)."""
    live = {sid: p for sid, p in pages.items() if sid in sessions}
    files: set[str] = set()

    def put(rel: str, data: bytes) -> None:
        _write(out, rel, [data])
        files.add(rel)

    for name in _STATIC:
        put(f"static/{name}", _static(name))
    counts: dict[str, list[Row]] = {}
    for p in parents:
        counts.setdefault(p.cwd, []).append(p)
    projects = sorted((cwd, len(rows)) for cwd, rows in counts.items())
    put("index.html", _index_page(parents, projects, live))
    for cwd, rows in counts.items():
        put(f"projects/{project_stem(cwd)}.html", _project_page(cwd, rows, live))
    report.index_pages = 1 + len(counts)

    # the index: each session's text as its run left it (search/<stem>.json), in the list's order
    # sized first: over the cap, nothing is read
    fragments: list[str] = []
    total = 0
    indexed: set[str] = set()  # a copy of a session under another name shares its id, page and text
    for row in (r for p in parents for r in (p, *p.children)):
        e = sessions.get(row.id)
        if e is not None and live.get(row.id) == e["page"] and row.id not in indexed:
            indexed.add(row.id)
            path = os.path.join(out, e["search"])
            with contextlib.suppress(OSError):
                total += os.path.getsize(path)
                fragments.append(path)
    report.search_bytes = total
    report.search_index = total <= search_cap
    if report.search_index:
        def index() -> Iterator[bytes]:
            yield b"window.ompSiteIndex = ["
            for n, path in enumerate(fragments):
                with open(path, "rb") as f:
                    yield (b",\n" if n else b"") + f.read()
            yield b"];\n"

        _write(out, "search-index.js", index())
        files.add("search-index.js")
    put("search.html", _search_page(report.search_index, total, search_cap))
    return files
