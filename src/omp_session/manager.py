"""SessionManager: omp's manager in Pythonic form — open a file for reading and writing.

This module covers what omp does to a file when it opens and closes it (spec S8.3, S5.4):
a missing or empty file becomes a new session at once; a migrated file is rewritten whole on
the next persistence step. Unlike omp, a rewrite never drops a record it cannot parse: such
records are written back verbatim where they stood (docs/compatibility.md).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any

from . import codec
from .blobs import BlobStore
from .errors import FormatError, WriteConflictError
from .ids import iso_timestamp, new_session_id
from .paths import blobs_dir
from .persist import persist_transform
from .reader import Journal
from .session import Session, read_session
from .title import build_title_slot
from .tree import Tree

__all__ = ["SessionManager"]


def _invalid_header_error(path: str) -> FormatError:
    return FormatError(f'Cannot resume session "{path}": the session header is missing or malformed. '
                       "The file was not modified.", path=path)


class SessionManager:
    """A session bound to a file, opened like omp's ``SessionManager.open``."""

    def __init__(self, session: Session, path: str, *, blob_store: Any, created: bool) -> None:
        self.session = session
        self.path = path
        self.blob_store = blob_store
        self.created = created
        self._rewrite_required = session.migrated or session.sanitized
        self._expected_size: int | None = os.path.getsize(path) if os.path.exists(path) else None
        self._closed = False

    # ----- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, initial_cwd: str | None = None,
             blob_store: Any = None, throw_if_missing: bool = False) -> SessionManager:
        """Open ``path`` for reading and writing.

        A missing or empty file starts a new session bound to that path and writes its title slot
        and header at once (as omp does, S1.4.5); a file without a valid header raises
        :class:`FormatError` and is left untouched.
        """
        path = os.fspath(path)
        store = blob_store if blob_store is not None else BlobStore(blobs_dir())
        if not os.path.exists(path):
            if throw_if_missing:
                raise FileNotFoundError(path)
            return cls._create_at(path, initial_cwd, store)
        session = read_session(path, blob_store=store)
        if session.header is None:
            empty = len(session.journal) == 0 and not session.journal.malformed
            session.close()
            if empty:
                if throw_if_missing:
                    raise FormatError(f'Cannot resume session "{path}": the session file holds no entries.',
                                      path=path)
                return cls._create_at(path, initial_cwd, store)
            raise _invalid_header_error(path)
        return cls(session, path, blob_store=store, created=False)

    @classmethod
    def _create_at(cls, path: str, cwd: str | None, store: Any) -> SessionManager:
        timestamp = iso_timestamp()
        header = {"type": "session", "version": 3, "id": new_session_id(), "timestamp": timestamp,
                  "cwd": os.path.abspath(cwd if cwd is not None else os.getcwd())}
        body = build_title_slot("", None, timestamp) + codec.dumps_line(header)
        _atomic_write(path, body, expected_size=os.path.getsize(path) if os.path.exists(path) else None)
        return cls(read_session(path, blob_store=store), path, blob_store=store, created=True)

    # ----- reading (omp's read API, snake_case) ----------------------------------------------

    def get_header(self) -> dict[str, Any] | None:
        return self.session.get_header()

    def get_entries(self) -> list[Any]:
        return self.session.get_entries()

    def get_entry(self, entry_id: Any) -> Any:
        return self.session.get_entry(entry_id)

    def get_leaf_id(self) -> Any:
        return self.session.get_leaf_id()

    def get_branch(self, from_id: Any = codec.UNDEFINED) -> list[Any]:
        return self.session.get_branch(from_id)

    def get_children(self, parent_id: Any) -> list[Any]:
        return self.session.get_children(parent_id)

    def get_label(self, entry_id: Any) -> Any:
        return self.session.get_label(entry_id)

    def get_tree(self) -> Tree:
        return self.session.get_tree()

    def build_session_context(self, **options: bool) -> dict[str, Any]:
        return self.session.build_session_context(**options)

    def get_usage_statistics(self) -> dict[str, Any]:
        return self.session.get_usage_statistics()

    def get_session_name(self) -> str | None:
        return self.session.get_session_name()

    def get_session_file(self) -> str:
        return self.path

    # ----- persistence -----------------------------------------------------------------------

    def _body_lines(self) -> Iterator[bytes]:
        """Slot, header and every record in file order; unreadable records verbatim."""
        s = self.session
        header = s.header
        assert header is not None
        slot = s.title_slot
        title = header.get("title")
        yield build_title_slot(
            title if isinstance(title, str) else "",
            header.get("titleSource") if header.get("titleSource") in ("auto", "user") else None,
            slot.updated_at if slot is not None else str(header.get("timestamp", iso_timestamp())))
        yield codec.dumps_line(persist_transform(header, self.blob_store))
        j = s.journal
        malformed = sorted(j.malformed, key=lambda m: m.start)
        m = 0
        for k in range(len(s)):
            start = j.start(k + 1)
            while m < len(malformed) and malformed[m].start < start:
                yield _verbatim(j, malformed[m].start, malformed[m].end)
                m += 1
            yield codec.dumps_line(persist_transform(s.entry_at(k), self.blob_store))
        for span in malformed[m:]:
            yield _verbatim(j, span.start, span.end)

    def rewrite(self) -> None:
        """Replace the whole file atomically (temp file + rename) if nobody changed it meanwhile."""
        body = b"".join(self._body_lines())
        self.session.close()
        _atomic_write(self.path, body, expected_size=self._expected_size)
        self._expected_size = len(body)
        self._rewrite_required = False
        self.session = read_session(self.path, blob_store=self.blob_store)

    def flush(self) -> None:
        if self._rewrite_required:
            self.rewrite()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self.flush()
        finally:
            self._closed = True
            self.session.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _verbatim(j: Journal, start: int, end: int) -> bytes:
    raw = j.read(start, end)
    return raw if raw.endswith(b"\n") else raw + b"\n"


def _atomic_write(path: str, body: bytes, *, expected_size: int | None) -> None:
    """Write ``body`` to a same-directory temp file, check the target's size, then rename (S8.4)."""
    directory, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(body)
        try:
            found: int | None = os.path.getsize(path)
        except FileNotFoundError:
            found = None
        if found != expected_size:
            raise WriteConflictError(
                f"Session file changed before rewrite: {path} (expected "
                f"{'missing' if expected_size is None else f'{expected_size} bytes'}, found "
                f"{'missing' if found is None else f'{found} bytes'}); nothing was overwritten")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
