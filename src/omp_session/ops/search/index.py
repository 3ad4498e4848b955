"""The full-text index behind ``omp-session search``: SQLite FTS5, updated incrementally.

One SQLite file (default ``$XDG_CACHE_HOME/omp-session/search.sqlite``) holds, per session file,
what was indexed and how far (``files``), one row per record with its envelope (``entries``: id,
parentId, type, role, time; enough to walk the current branch without reading the file again)
and the searchable texts (``docs``, an FTS5 table: one row per record and kind of text). A doc's
rowid is ``file_id << 35 | seq << 3 | kind``: a file's docs are one rowid range, and ranking
never reads the stored text.

Updating follows what omp does to its files (spec S1.2, S8), the way ``follow.py`` does:

* omp appends whole lines through O_APPEND (S8.2). A file that grew is read from the offset just
  after the last complete line indexed, up to its last LF. A last line without LF is a write in
  progress and is left for a later update, so no half line is ever indexed.
* A new inode (omp's atomic rewrite, S8.4, or a deleted and re-created file), a file shorter than
  what was indexed, a change in the first 256 bytes (the title slot rewritten in place, S1.2.7)
  or in the 64 bytes before the offset means the file was rewritten: it is indexed again from
  scratch. A file whose mtime changed without growing has its indexed bytes checked against their
  CRC-32 (an in-place rewrite of the same size).
* Files that vanished from the root leave the index.
* Unchanged files cost one ``stat`` each and no lock: their (dev, inode, size, mtime) stamps are
  read from one JSON row per project directory (``meta``), not from every file's state row.

Changed files are updated in write transactions (``BEGIN IMMEDIATE``; small files share one, up
to 8 MB read), in which each file's state is read again: two indexers running at once never
index the same bytes twice, and a search reading the index (WAL mode) always sees whole files. A writer that holds the lock longer than a moment
makes the other wait with a message (``on_notice``). A file that is not an SQLite database, or a
damaged one, is moved aside and rebuilt, with a message.

Damaged session files are indexed for every record that can be read (the reader's lenient rules,
S1.4); the damage is reported once, when it is first found.

Approximations: entries keep the ids as stored (v1/v2 files are not migrated, S5); an id that is
not a string is kept as a key with JavaScript Map semantics (``tree.js_key``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import orjson

from omp_session.errors import IndexBusyError, SearchIndexError
from omp_session.js.codec import parse_jsonl
from omp_session.model.search_text import index_text, searchable, time_ms
from omp_session.paths import cache_dir, sessions_dir

if TYPE_CHECKING:
    from omp_session.format.reader import Journal

__all__ = [
    "FILE_SHIFT",
    "INDEX_NAME",
    "KINDS",
    "KIND_CODES",
    "SEQ_SHIFT",
    "IndexReport",
    "SearchIndex",
    "default_index_path",
    "session_files",
]

INDEX_NAME: Final = "search.sqlite"
SCHEMA_VERSION: Final = 3
KINDS: Final = ("text", "thinking", "tool_call", "tool_result", "title", "label", "summary")
KIND_CODES: Final = {kind: code for code, kind in enumerate(KINDS)}
HIGHLIGHT: Final = ("\x02", "\x03")  # snippet markers; never left in indexed text
_HEAD: Final = 256  # the title slot's width (S1.2.3)
_ANCHOR: Final = 64
# a doc's rowid: file id, record number (seq) and kind, so that ranking and filtering by kind or
# record never read the stored text, and a file's docs are one rowid range
FILE_SHIFT: Final = 35
SEQ_SHIFT: Final = 3
_CHUNK: Final = 4 * 1024 * 1024
_FIRST_WAIT_MS: Final = 200
_BATCH_BYTES: Final = 8 * 1024 * 1024  # small files share a transaction up to this much read
_CORRUPT: Final = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB

_SCHEMA: Final = f"""
CREATE TABLE files(
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  lines INTEGER NOT NULL,
  head BLOB NOT NULL, anchor BLOB NOT NULL, crc INTEGER NOT NULL,
  session_id TEXT, title TEXT, cwd TEXT, created_ms INTEGER,
  next_seq INTEGER NOT NULL,
  damaged INTEGER NOT NULL
);
CREATE TABLE entries(
  file_id INTEGER NOT NULL, seq INTEGER NOT NULL,
  entry_id TEXT, parent_id TEXT, type TEXT, role TEXT, ts_ms INTEGER, target_id TEXT,
  PRIMARY KEY (file_id, seq)
) WITHOUT ROWID;
CREATE TABLE meta(key TEXT PRIMARY KEY, value BLOB);
CREATE VIRTUAL TABLE docs USING fts5(body,
  tokenize = 'unicode61 remove_diacritics 2');
PRAGMA user_version = {SCHEMA_VERSION};
"""
_STATE_COLUMNS: Final = ("id", "path", "dev", "ino", "size", "mtime_ns", "offset", "lines", "head", "anchor",
                         "crc", "session_id", "title", "cwd", "created_ms", "next_seq", "damaged")


def default_index_path() -> Path:
    """``$XDG_CACHE_HOME/omp-session/search.sqlite`` (``~/.cache`` when XDG is unset)."""
    return cache_dir() / INDEX_NAME


def session_files(root: str | os.PathLike[str]) -> list[str]:
    """Session files under a sessions root: ``<root>/<project>/*.jsonl`` and subagent sessions
    ``<root>/<project>/<session>/*.jsonl`` (S9.5; advisors skipped, as ``list`` does). Hidden
    names and symlinks are skipped; archives (``.jsonl.gz``) are not indexed."""
    out: list[str] = []
    for bucket in _files(os.path.abspath(os.fspath(root)), []):  # files directly in the root are no sessions
        for sub in _files(bucket, out):
            _files(sub, out, skip="__advisor")
    return out


def _files(directory: str, out: list[str], skip: str | None = None) -> list[str]:
    """Append ``directory``'s ``*.jsonl`` files to ``out``; return its subdirectories."""
    dirs: list[str] = []
    try:
        with os.scandir(directory) as it:
            for e in it:
                name = e.name
                if name.startswith(".") or (skip is not None and name.startswith(skip)):
                    continue
                if name.endswith(".jsonl") and e.is_file(follow_symlinks=False):
                    out.append(e.path)
                elif e.is_dir(follow_symlinks=False):
                    dirs.append(e.path)
    except OSError:
        pass
    return dirs


@dataclass
class IndexReport:
    """What one update did. ``bytes_parsed`` counts the session bytes handed to the parser;
    ``bytes_read`` everything read from session files (parsed bytes plus head and anchor checks)."""

    files: int = 0
    unchanged: int = 0
    added: list[str] = field(default_factory=list)
    grown: list[str] = field(default_factory=list)
    reindexed: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    removed: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)  # one message per file, the first time
    unreadable: list[str] = field(default_factory=list)
    entries_added: int = 0
    bytes_parsed: int = 0
    bytes_read: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "unchanged": self.unchanged, "added": len(self.added),
                "grown": len(self.grown), "reindexed": [{"path": p, "reason": r} for p, r in self.reindexed],
                "removed": self.removed, "damaged": self.damaged, "unreadable": self.unreadable,
                "entries_added": self.entries_added, "bytes_parsed": self.bytes_parsed,
                "bytes_read": self.bytes_read, "seconds": round(self.seconds, 4)}


# ----- the index ------------------------------------------------------------------------------


def _is_corrupt(e: sqlite3.DatabaseError) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _CORRUPT:
        return True
    text = str(e)
    return "not a database" in text or "malformed" in text


def _is_busy(e: sqlite3.OperationalError) -> bool:
    return "locked" in str(e) or "busy" in str(e)


class SearchIndex:
    """An open search index. ``on_notice`` receives one-line messages for the user (waiting for
    another indexer, an index rebuilt); ``wait`` is how long to wait for another indexer."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, wait: float = 600.0,
                 on_notice: Callable[[str], None] | None = None) -> None:
        self.path = Path(path) if path is not None else default_index_path()
        self.wait = wait
        self.notice: Callable[[str], None] = on_notice or (lambda _m: None)
        self._waited = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SearchIndexError(f"{self.path.parent}: cannot create the index directory "
                                   f"({os.strerror(e.errno or 5)})") from None
        self.conn = self._open_or_recover()

    # ----- opening ----------------------------------------------------------------------------

    def _open_or_recover(self) -> sqlite3.Connection:
        try:
            return self._open()
        except sqlite3.DatabaseError as e:
            if not _is_corrupt(e):
                raise SearchIndexError(f"{self.path}: {e}") from None
            self.move_aside(str(e))
            try:
                return self._open()
            except sqlite3.DatabaseError as e2:
                raise SearchIndexError(f"{self.path}: {e2}") from None

    def move_aside(self, why: str) -> None:
        """Move a damaged index (and its WAL files) aside so that it is rebuilt."""
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            if src.exists():
                os.replace(src, Path(str(aside) + suffix))
        self.notice(f"the search index {self.path} was damaged ({why}); moved it to {aside.name} and "
                    "rebuilding it")

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=self.wait, check_same_thread=False)
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA cache_size=-32768")
            self.conn = conn
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                self._begin()
                try:
                    version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may have won
                    if version != SCHEMA_VERSION:
                        if version:
                            self.notice(f"the search index {self.path} has an older format; rebuilding it")
                        for table in ("docs", "entries", "files", "meta"):
                            conn.execute(f"DROP TABLE IF EXISTS {table}")
                        for statement in _SCHEMA.split(";"):
                            if statement.strip():
                                conn.execute(statement)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            conn.execute("SELECT count(*) FROM files WHERE id = 0").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _begin(self) -> None:
        """``BEGIN IMMEDIATE``: the write lock, waited for with a message when another indexer holds it."""
        conn = self.conn
        conn.execute(f"PRAGMA busy_timeout={_FIRST_WAIT_MS}")
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as e:
            if not _is_busy(e):
                raise
        if not self._waited:
            self._waited = True
            self.notice(f"waiting for another indexer to finish with {self.path} ...")
        conn.execute(f"PRAGMA busy_timeout={int(self.wait * 1000)}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if _is_busy(e):
                raise IndexBusyError(f"{self.path}: another process has kept the index locked for more than "
                                     f"{self.wait:g} s; try again later") from None
            raise

    # ----- updating ---------------------------------------------------------------------------

    def update(self, root: str | os.PathLike[str] | None = None, *, files: Iterable[str] | None = None,
               progress: Callable[[int, int], None] | None = None) -> IndexReport:
        """Bring the index up to date with the session files under ``root`` (default: omp's
        sessions root), or with ``files`` only (then nothing is removed)."""
        t0 = time.perf_counter()
        report = IndexReport()
        try:
            self._update(root, files, progress, report)
        except sqlite3.DatabaseError as e:
            with contextlib.suppress(sqlite3.Error):
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
            if not _is_corrupt(e):
                raise SearchIndexError(f"{self.path}: {e}") from None
            self.move_aside(str(e))
            self.conn = self._open()
            report = IndexReport()
            self._update(root, files, progress, report)
        report.seconds = time.perf_counter() - t0
        return report

    def _update(self, root: str | os.PathLike[str] | None, files: Iterable[str] | None,
                progress: Callable[[int, int], None] | None, report: IndexReport) -> None:
        base = os.path.abspath(os.fspath(root if root is not None else sessions_dir()))
        paths = session_files(base) if files is None else [os.path.abspath(f) for f in files]
        report.files = len(paths)
        stamps = self._stamps()
        stale: list[str] = []
        mtimes: dict[str, int] = {}
        for p in paths:
            try:
                st = os.stat(p)
            except OSError:
                stale.append(p)  # gone since the directory scan, or unreadable: sorted out under the lock
                continue
            if stamps.get(p) != [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]:
                stale.append(p)
                mtimes[p] = st.st_mtime_ns
            else:
                report.unchanged += 1
        # oldest first: new files get higher ids, so rowid order is roughly recency (search.RANK_CAP)
        stale.sort(key=lambda p: mtimes.get(p, 0))
        gone: list[str] = []
        if files is None:
            seen = set(paths)
            prefix = base.rstrip(os.sep) + os.sep
            gone = [p for p in stamps if p not in seen and p.startswith(prefix)]
        if not stale and not gone:
            return
        batch, first = 0, 0
        try:
            for done, p in enumerate(stale):
                if not self.conn.in_transaction:
                    self._begin()
                batch += self._refresh(p, report)
                if batch >= _BATCH_BYTES and done < len(stale) - 1:
                    # stamps commit with the rows: an interrupted update must not leave a file
                    # indexed without a stamp (its deletion would then never be noticed)
                    self._save_stamps(stale[first:done + 1])
                    self.conn.execute("COMMIT")
                    batch, first = 0, done + 1
                if progress is not None:
                    progress(done + 1, len(stale))
            if not self.conn.in_transaction:
                self._begin()
            for p in gone:
                row = self.conn.execute("SELECT id FROM files WHERE path = ?", (p,)).fetchone()
                if row is not None:
                    self._forget(row[0])
                    self.conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
                    report.removed.append(p)
            self._save_stamps(stale[first:] + gone)
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def _stamps(self) -> dict[str, list[int]]:
        """path -> [dev, ino, size, mtime_ns] as indexed. Also kept as one JSON row per directory
        (``meta``), so that a search over unchanged files reads a few rows instead of every
        file's state, and an append rewrites one small row. The rows may lag behind ``files``
        (then a file is only checked again under the lock), never run ahead of it."""
        stamps: dict[str, list[int]] = {}
        try:
            for (value,) in self.conn.execute("SELECT value FROM meta WHERE key LIKE 'stamps:%'"):
                part = orjson.loads(value)
                if not isinstance(part, dict):
                    raise TypeError
                stamps.update(part)
            if stamps:
                return stamps
        except (orjson.JSONDecodeError, TypeError):
            pass
        return {p: [d, i, n, m] for p, d, i, n, m in self.conn.execute(
            "SELECT path, dev, ino, size, mtime_ns FROM files")}

    def _save_stamps(self, changed: list[str]) -> None:
        """Write the stamps of the directories of ``changed`` paths as the table now holds them
        (in the open transaction). Read from ``files``, not from the stamps this update started
        with: another indexer may have added a file to the directory since."""
        parts: dict[str, dict[str, list[int]]] = {}
        for d in {os.path.dirname(p) for p in changed}:
            rows = self.conn.execute("SELECT path, dev, ino, size, mtime_ns FROM files WHERE path >= ? AND path < ?",
                                     (d + os.sep, d + chr(ord(os.sep) + 1)))
            parts[d] = {p: [dev, ino, size, mtime] for p, dev, ino, size, mtime in rows if p[: p.rfind(os.sep)] == d}
        self.conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                              [("stamps:" + d, orjson.dumps(part)) for d, part in parts.items()])

    def _state(self, path: str) -> dict[str, Any] | None:
        row = self.conn.execute(f"SELECT {', '.join(_STATE_COLUMNS)} FROM files WHERE path = ?", (path,)).fetchone()
        return None if row is None else dict(zip(_STATE_COLUMNS, row, strict=True))

    def _forget(self, file_id: int) -> None:
        lo = file_id << FILE_SHIFT
        self.conn.execute("DELETE FROM docs WHERE rowid >= ? AND rowid < ?", (lo, lo + (1 << FILE_SHIFT)))
        self.conn.execute("DELETE FROM entries WHERE file_id = ?", (file_id,))

    def _refresh(self, path: str, report: IndexReport) -> int:
        """Update one file inside the current transaction; returns the bytes read."""
        state = self._state(path)
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as e:
            if state is not None:
                self._forget(state["id"])
                self.conn.execute("DELETE FROM files WHERE id = ?", (state["id"],))
                if isinstance(e, FileNotFoundError):
                    report.removed.append(path)
            if not isinstance(e, FileNotFoundError):
                report.unreadable.append(f"{path}: {os.strerror(e.errno or 5)}")
            return 0
        with f:
            before = report.bytes_read
            try:
                self._refresh_open(path, f, state, report)
            except OSError as e:
                report.unreadable.append(f"{path}: {os.strerror(e.errno or 5)}")
            return report.bytes_read - before

    def _refresh_open(self, path: str, f: IO[bytes], state: dict[str, Any] | None, report: IndexReport) -> None:
        fd = f.fileno()
        st = os.fstat(fd)
        if state is None:
            self._full(path, fd, st, None, report)
            report.added.append(path)
            return
        why = None
        if (st.st_dev, st.st_ino) != (state["dev"], state["ino"]):
            why = "replaced (new inode)"
        elif st.st_size < state["offset"]:
            why = "shrank"
        elif (st.st_size, st.st_mtime_ns) == (state["size"], state["mtime_ns"]):
            report.unchanged += 1
            return
        elif state["next_seq"] == 0:  # no header read yet: the session's id, title and cwd come with it
            why = "header completed"
        if why is None:
            head = os.pread(fd, len(state["head"]), 0)
            start = state["offset"] - len(state["anchor"])
            data = os.pread(fd, st.st_size - start, start)
            report.bytes_read += len(head) + len(data)
            if head != state["head"]:
                why = "title slot or header rewritten"
            elif not data.startswith(state["anchor"]):
                why = "rewritten"
            elif st.st_size == state["size"] and self._crc(fd, state["offset"], report) != state["crc"]:
                why = "rewritten in place"
            else:
                self._append(state, data[len(state["anchor"]):], st, report)
                return
        self._full(path, fd, st, state, report)
        report.reindexed.append((path, why))

    @staticmethod
    def _crc(fd: int, end: int, report: IndexReport) -> int:
        crc, pos = 0, 0
        while pos < end:
            block = os.pread(fd, min(_CHUNK, end - pos), pos)
            if not block:
                break
            crc = zlib.crc32(block, crc)
            pos += len(block)
        report.bytes_read += pos
        return crc

    def _append(self, state: dict[str, Any], new: bytes, st: os.stat_result, report: IndexReport) -> None:
        cut = new.rfind(b"\n") + 1
        offset = state["offset"]
        values: dict[str, Any] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
        if cut:
            chunk = new[:cut]
            text = chunk.decode("utf-8", "replace")
            records, malformed = parse_jsonl(text)
            report.bytes_parsed += cut
            seq = self._insert(state["id"], state["next_seq"], (value for value, _, _ in records), report)
            tail = (state["anchor"] + chunk)[-_ANCHOR:]
            values.update(offset=offset + cut, lines=state["lines"] + chunk.count(b"\n"),
                          anchor=tail, crc=zlib.crc32(chunk, state["crc"]), next_seq=seq)
            if malformed:
                first = state["lines"] + text.count("\n", 0, malformed[0][0]) + 1
                values["damaged"] = state["damaged"] + len(malformed)
                report.damaged.append(_damage_message(state["path"], len(malformed), first))
            report.grown.append(state["path"])
        sets = ", ".join(f"{k} = ?" for k in values)
        self.conn.execute(f"UPDATE files SET {sets} WHERE id = ?", (*values.values(), state["id"]))

    def _full(self, path: str, fd: int, st: os.stat_result, state: dict[str, Any] | None,
              report: IndexReport) -> None:
        """(Re)index a whole file: everything up to its last complete line."""
        from omp_session.format.reader import scan_file  # a search that updates nothing never reads a file

        j = scan_file(f"/dev/fd/{fd}") if os.path.exists(f"/dev/fd/{fd}") else scan_file(path)
        try:
            offset = _line_start(j, j.size)  # just after the last LF: a line after it is still being written
            n = len(j)
            while n and j.end(n - 1) > offset:  # on the unterminated last line, or a value open across it
                if j.start(n - 1) < offset:
                    offset = _line_start(j, j.start(n - 1))
                n -= 1
            report.bytes_parsed += offset
            report.bytes_read += j.size
            header = j.value(0) if n else None
            slot = j.slot
            if isinstance(header, dict) and header.get("type") == "session":
                session_id = header.get("id") if isinstance(header.get("id"), str) else None
                title: Any = header.get("title")
                if slot is not None and session_id is not None:  # the slot overlays the header (S1.2.6)
                    title = slot.title or None
                cwd, created = header.get("cwd"), time_ms(header.get("timestamp"))
            else:
                session_id, title, cwd, created = None, None, None, None
            if session_id is None:
                stem = os.path.basename(path).removesuffix(".jsonl")
                session_id = stem.split("_", 1)[1] if "_" in stem else stem
            crc, lines = 0, 0
            for block in _blocks(j, offset):
                crc = zlib.crc32(block, crc)
                lines += block.count(b"\n")
            damaged = [m for m in j.malformed if m.start < offset]
            if state is None:
                file_id = self.conn.execute(
                    "INSERT INTO files(path, dev, ino, size, mtime_ns, offset, lines, head, anchor, crc, "
                    "next_seq, damaged) VALUES (?, 0, 0, 0, 0, 0, 0, x'', x'', 0, 0, 0)",
                    (path,)).lastrowid
                assert file_id is not None
                old_damage = 0
            else:
                file_id, old_damage = state["id"], state["damaged"]
                self._forget(file_id)
            values: Iterator[Any] = (j.value(i) for i in range(n))
            if isinstance(header, dict) and header.get("type") == "session":
                shown = {k: v for k, v in header.items() if k != "title"}
                if isinstance(title, str):
                    shown["title"] = title
                values = itertools.chain([shown], (j.value(i) for i in range(1, n)))
            seq = self._insert(file_id, 0, values, report)
            if len(damaged) > old_damage:
                report.damaged.append(_damage_message(path, len(damaged), j.line_of(damaged[0].start)))
            self.conn.execute(
                "UPDATE files SET dev = ?, ino = ?, size = ?, mtime_ns = ?, offset = ?, lines = ?, head = ?, "
                "anchor = ?, crc = ?, session_id = ?, title = ?, cwd = ?, created_ms = ?, next_seq = ?, "
                "damaged = ? WHERE id = ?",
                (st.st_dev, st.st_ino, j.size, st.st_mtime_ns, offset, lines, j.read(0, min(_HEAD, offset)),
                 j.read(max(0, offset - _ANCHOR), offset), crc,
                 # a lone surrogate (escaped in the file) cannot be SQLite text: one header holding
                 # one must not stop every search
                 index_text(session_id) if session_id is not None else None,
                 index_text(title) if isinstance(title, str) and title else None,
                 index_text(cwd) if isinstance(cwd, str) else None, created, seq, len(damaged), file_id))
        finally:
            j.close()

    def _insert(self, file_id: int, seq: int, values: Iterator[Any], report: IndexReport) -> int:
        """Index records numbered from ``seq`` (0 is the header); returns the next seq. Rows go
        to SQLite in batches, so memory stays bounded on a large session."""
        entries: list[tuple[Any, ...]] = []
        docs: list[tuple[int, str]] = []
        size = 0
        base = file_id << FILE_SHIFT
        for value in values:
            rec = searchable(value)
            # ids, types and roles are text too: a lone surrogate in one would stop SQLite
            entries.append((file_id, seq, *(index_text(x) if isinstance(x, str) else x for x in rec.row)))
            for kind, texts in rec.docs.items():
                text = index_text("\n".join(texts))
                docs.append((base | seq << SEQ_SHIFT | KIND_CODES[kind], text))
                size += len(text)
            seq += 1
            if size >= _BATCH_BYTES or len(entries) >= 10_000:
                self._flush(entries, docs, report)
                size = 0
        self._flush(entries, docs, report)
        return seq

    def _flush(self, entries: list[tuple[Any, ...]], docs: list[tuple[int, str]], report: IndexReport) -> None:
        self.conn.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)", entries)
        self.conn.executemany("INSERT INTO docs(rowid, body) VALUES (?, ?)", docs)
        report.entries_added += len(entries)
        entries.clear()
        docs.clear()

    # ----- reading ----------------------------------------------------------------------------

    def branch_seqs(self, file_id: int) -> set[int]:
        """Records on the session's current branch: from the last entry (the leaf, S6.1) up
        through parentIds (S6.3: a falsy or unknown parent ends it, so does a repeat)."""
        rows = self.conn.execute("SELECT seq, entry_id, parent_id FROM entries WHERE file_id = ? AND seq > 0 "
                                 "ORDER BY seq", (file_id,)).fetchall()
        if not rows:
            return set()
        by_id = {eid: seq for seq, eid, _ in rows if eid is not None}
        parent = {seq: pid for seq, _, pid in rows}
        leaf = rows[-1][1]
        out: set[int] = set()
        cursor = by_id.get(leaf) if leaf is not None else None
        while cursor is not None and cursor not in out:
            out.add(cursor)
            pid = parent[cursor]
            cursor = by_id.get(pid) if pid is not None else None
        return out

    def stats(self) -> dict[str, Any]:
        files, entries = self.conn.execute("SELECT count(*), coalesce(sum(next_seq), 0) FROM files").fetchone()
        try:
            size = sum(os.path.getsize(str(self.path) + s) for s in ("", "-wal") if os.path.exists(str(self.path) + s))
        except OSError:
            size = 0
        return {"index": str(self.path), "files": files, "entries": entries, "bytes": size}


def _damage_message(path: str, count: int, line: int) -> str:
    return (f"{path}:{line}: {count} damaged record(s) skipped (first at line {line}); "
            "the rest of the session is indexed")


def _line_start(j: Journal, pos: int) -> int:
    """Offset just after the last LF before ``pos`` (0 when there is none)."""
    while pos > 0:
        start = max(0, pos - 65536)
        at = j.read(start, pos).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        pos = start
    return 0


def _blocks(j: Journal, end: int) -> Iterator[bytes]:
    pos = 0
    while pos < end:
        block = j.read(pos, min(end, pos + _CHUNK))
        if not block:
            return
        yield block
        pos += len(block)
