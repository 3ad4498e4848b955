"""A store's storage that connects again after a database error (``serve --store``, ``mcp
--store``: one process, one connection, for hours)."""

from __future__ import annotations

import builtins
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from omp_session.errors import StoreError

from .base import SessionStorage, StoredFile

if TYPE_CHECKING:
    from .url import StoreURL

__all__ = ["ReopeningStorage"]

_T = TypeVar("_T")


class ReopeningStorage:
    """``storage``, connected again on the next call after a database error: a server that was
    restarted closed the connection, and a long-running ``serve --store`` would otherwise answer
    503 for every page and event stream until it is restarted too. A driver error that escapes
    the storage (a closed connection's cursor) is said in one line like the others."""

    def __init__(self, parsed: StoreURL, storage: SessionStorage, *, timeout: float | None = None) -> None:
        self.parsed = parsed
        self.timeout = timeout
        self._given = storage  # the caller's (it closes it)
        self._current: SessionStorage | None = storage
        self._lock = threading.Lock()
        self.persistent = storage.persistent

    def _storage(self) -> SessionStorage:
        with self._lock:
            if self._current is None:
                from . import open_store

                self._current = open_store(self.parsed, create=False, timeout=self.timeout)
            return self._current

    def _failed(self, storage: SessionStorage) -> None:
        with self._lock:
            if self._current is storage:
                self._current = None
                if storage is not self._given:
                    with contextlib.suppress(Exception):  # already broken: that is why it goes
                        storage.close()

    def _call(self, fn: Callable[[SessionStorage], _T]) -> _T:
        storage = self._storage()
        try:
            return fn(storage)
        except StoreError:
            self._failed(storage)
            raise
        except Exception as e:
            if not isinstance(e, getattr(storage, "driver_errors", ())):
                raise
            self._failed(storage)
            raise StoreError(f"{self.parsed.name}: {' '.join(str(e).split()) or type(e).__name__}") from e

    def size(self, path: str) -> int | None:
        return self._call(lambda s: s.size(path))

    def read(self, path: str) -> bytes:
        return self._call(lambda s: s.read(path))

    def append(self, path: str, line: bytes) -> int:
        return self._call(lambda s: s.append(path, line))

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        self._call(lambda s: s.replace(path, body, expected_size))

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        return self._call(lambda s: s.write_title_slot(path, slot))

    def list(self, directory: str, pattern: str) -> builtins.list[str]:
        return self._call(lambda s: s.list(directory, pattern))

    def delete(self, path: str) -> None:
        self._call(lambda s: s.delete(path))

    def stat(self, path: str) -> StoredFile | None:
        return self._call(lambda s: s.stat(path))

    def scan(self, prefix: str) -> builtins.list[StoredFile]:
        return self._call(lambda s: s.scan(prefix))

    def rename(self, src: str, dst: str) -> None:
        self._call(lambda s: s.rename(src, dst))

    def close(self) -> None:
        """Closes a storage connected again here (the one given is its caller's)."""
        with self._lock:
            current, self._current = self._current, None
        if current is not None and current is not self._given:
            current.close()
