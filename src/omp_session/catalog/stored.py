"""A session read from any store: a file, or a record of a database or Redis store."""

from __future__ import annotations

from typing import Any

from omp_session.format.blobs import BlobStore
from omp_session.format.reader import scan_bytes
from omp_session.model.session import Session, read_session
from omp_session.paths import blobs_dir
from omp_session.store.base import FileStorage, SessionStorage

__all__ = ["read_stored_session"]


def read_stored_session(storage: SessionStorage, path: str, *, blob_store: Any = None, usage: bool = False) -> Session:
    """The session stored under ``path``, read leniently like :func:`omp_session.open` reads a
    file (FileNotFoundError when there is none); ``usage`` as its."""
    if isinstance(storage, FileStorage):
        return read_session(path, blob_store=blob_store, usage=usage)
    data = storage.read(path)
    return Session(scan_bytes(data, usage=usage), path, blob_store if blob_store is not None else BlobStore(blobs_dir()))
