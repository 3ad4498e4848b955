"""A stored session's subagent transcripts (``serve --store``, ``export --format html --store``):
omp's layout, ``<session>/<agent>.jsonl`` and nested ``<session>/<agent>/<agent>.jsonl``, read
from the store's keys the way the HTML export reads it from the files (ops/export/subagents.py),
so that a session synced to a store shows the same transcripts as its file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from omp_session.catalog.stored import read_stored_session
from omp_session.ops.export.subagents import Transcripts

if TYPE_CHECKING:
    from omp_session.format.blobs import BlobReader
    from omp_session.model.session import Session
    from omp_session.store.base import SessionStorage

__all__ = ["store_transcripts"]


class _StoredFolders:
    """The keys under one session's artifacts folder, scanned once for the whole page: a nested
    subagent's folder is inside it, so it is answered from the same scan.

    The export names folders and transcripts as paths, and a path is written in one way only
    (``a//b`` and ``a/./b`` are ``a/b``); a key is any text. Only the keys that start with the
    session's own key's folder, as written, are ever listed or read: a session stored as
    ``root//X.jsonl`` would otherwise show the bucket ``root/X/``'s sessions as its subagents."""

    def __init__(self, storage: SessionStorage, session_key: str) -> None:
        self.storage = storage
        self.top = session_key.removesuffix(".jsonl") + "/" if session_key.endswith(".jsonl") else None
        self._keys: list[str] | None = None  # every key below ``top``, read on the first call

    def _inside(self, key: str) -> bool:
        return self.top is not None and key.startswith(self.top)

    def names(self, folder: Path) -> list[str]:
        prefix = folder.as_posix() + "/"
        if self.top is None or not self._inside(prefix):
            return []
        if self._keys is None:
            self._keys = [f.path for f in self.storage.scan(self.top) if self._inside(f.path)]
        return sorted(k[len(prefix):] for k in self._keys
                      if k.startswith(prefix) and "/" not in k[len(prefix):])

    def open(self, path: Path, blob_store: BlobReader | None) -> Session:
        key = path.as_posix()
        if not self._inside(key):  # never listed by names(): a named agent's would-be key
            raise FileNotFoundError(key)
        return read_stored_session(self.storage, key, blob_store=blob_store)


def store_transcripts(storage: SessionStorage, session_key: str) -> Transcripts:
    """Where the export finds the subagents of the session stored under ``session_key`` in
    ``storage`` (use one per page)."""
    found = _StoredFolders(storage, session_key)
    return Transcripts(found.names, found.open)
