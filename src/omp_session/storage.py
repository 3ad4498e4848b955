"""Where session files live: the file system, or memory (spec S8, S12).

The manager talks to a :class:`SessionStorage`; it never touches ``os`` itself. The interface is
the few operations omp's own storage offers (size, read, append a line, replace atomically,
write the title slot in place, list, delete), so database backends can implement it too.

Every write either happens whole or leaves the target as it was:

* ``append`` takes the publish lock, completes a last line that lacks its LF (so the new line is
  never glued onto it) and truncates back on a failed write;
* ``replace`` writes a same-directory temp file, checks under the lock that the target still has
  the size the caller last saw (:class:`WriteConflictError` otherwise), then renames;
* ``write_title_slot`` only overwrites a slot that is exactly 256 bytes now.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import secrets
import shutil
from typing import Protocol

from .errors import PersistenceError, WriteConflictError
from .locking import publish_lock
from .title import TITLE_SLOT_BYTES, parse_title_slot

__all__ = ["FileStorage", "MemoryStorage", "SessionStorage", "conflict_message"]


def conflict_message(path: str, expected: int | None, found: int | None) -> str:
    def size(n: int | None) -> str:
        return "missing" if n is None else f"{n} bytes"

    return (f"Session file changed before rewrite: {path} (expected {size(expected)}, found {size(found)}); "
            "nothing was overwritten")


class SessionStorage(Protocol):
    """What a backend offers the manager. Paths are the keys (absolute file paths for files)."""

    persistent: bool

    def size(self, path: str) -> int | None:
        """Byte size, or None when there is no such file."""

    def read(self, path: str) -> bytes:
        """The whole file (FileNotFoundError when missing)."""

    def append(self, path: str, line: bytes) -> int:
        """Append one LF-terminated line to an existing file; returns the bytes added (one more
        when a missing final LF had to be written first). FileNotFoundError when the file is
        gone (the caller then writes it whole)."""

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        """Atomically replace ``path`` by ``body`` if its size is still ``expected_size``
        (None: it must not exist)."""

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        """Overwrite a 256-byte title slot in place; False (nothing written) when the file does
        not start with one."""

    def list(self, directory: str, pattern: str) -> list[str]:
        """Files directly in ``directory`` whose name matches the glob ``pattern``."""

    def delete(self, path: str) -> None:
        """Remove a file and its artifacts directory (missing is fine)."""


class FileStorage:
    """Session files on the local file system, with omp's lock and replace protocol."""

    persistent = True

    def size(self, path: str) -> int | None:
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            return None

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def append(self, path: str, line: bytes) -> int:
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, exist_ok=True)
            with publish_lock(path):
                fd = os.open(path, os.O_RDWR | os.O_APPEND)
                try:
                    before = os.fstat(fd).st_size
                    if before and os.pread(fd, 1, before - 1) != b"\n":
                        line = b"\n" + line
                    try:
                        _write_all(fd, line)
                    except OSError:
                        os.ftruncate(fd, before)
                        raise
                finally:
                    os.close(fd)
        except (WriteConflictError, FileNotFoundError):
            raise
        except OSError as e:
            raise PersistenceError(path, "appending an entry", e) from e
        return len(line)

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        directory, base = os.path.split(os.path.abspath(path))
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
        try:
            os.makedirs(directory, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                _write_all(fd, body)
            finally:
                os.close(fd)
            with publish_lock(path):
                found = self.size(path)
                if found != expected_size:
                    raise WriteConflictError(conflict_message(path, expected_size, found))
                os.replace(tmp, path)
        except WriteConflictError:
            raise
        except OSError as e:
            raise PersistenceError(path, "rewriting the session file", e) from e
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        assert len(slot) == TITLE_SLOT_BYTES
        try:
            with publish_lock(path):
                fd = os.open(path, os.O_RDWR)
                try:
                    if not _starts_with_slot(os.pread(fd, TITLE_SLOT_BYTES + 3, 0)):
                        return False
                    if os.pwrite(fd, slot, 0) != len(slot):
                        raise OSError("short write of the title slot")
                finally:
                    os.close(fd)
        except WriteConflictError:
            raise
        except FileNotFoundError:
            return False
        except OSError as e:
            raise PersistenceError(path, "writing the title slot", e) from e
        return True

    def list(self, directory: str, pattern: str) -> list[str]:
        try:
            names = os.listdir(directory)
        except OSError:
            return []
        return sorted(os.path.join(directory, n) for n in names
                      if fnmatch.fnmatchcase(n, pattern) and os.path.isfile(os.path.join(directory, n)))

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        if path.endswith(".jsonl"):
            shutil.rmtree(path[: -len(".jsonl")], ignore_errors=True)


def _starts_with_slot(head: bytes) -> bool:
    """A title slot of exactly 256 bytes (LF included) and no BOM in front of it."""
    return (len(head) >= TITLE_SLOT_BYTES and head[TITLE_SLOT_BYTES - 1:TITLE_SLOT_BYTES] == b"\n"
            and b"\n" not in head[: TITLE_SLOT_BYTES - 1]
            and parse_title_slot(head[: TITLE_SLOT_BYTES - 1]) is not None)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError("short write")
        view = view[n:]


class MemoryStorage:
    """Sessions held in a dict (``SessionManager.in_memory`` and tests)."""

    persistent = False

    def __init__(self) -> None:
        self.files: dict[str, bytearray] = {}

    def size(self, path: str) -> int | None:
        data = self.files.get(path)
        return None if data is None else len(data)

    def read(self, path: str) -> bytes:
        try:
            return bytes(self.files[path])
        except KeyError:
            raise FileNotFoundError(path) from None

    def append(self, path: str, line: bytes) -> int:
        data = self.files.get(path)
        if data is None:
            raise FileNotFoundError(path)
        if data and not data.endswith(b"\n"):
            line = b"\n" + line
        data += line
        return len(line)

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        found = self.size(path)
        if found != expected_size:
            raise WriteConflictError(conflict_message(path, expected_size, found))
        self.files[path] = bytearray(body)

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        data = self.files.get(path)
        if data is None or not _starts_with_slot(bytes(data[: TITLE_SLOT_BYTES + 3])):
            return False
        data[:TITLE_SLOT_BYTES] = slot
        return True

    def list(self, directory: str, pattern: str) -> list[str]:
        return sorted(p for p in self.files
                      if os.path.dirname(p) == directory and fnmatch.fnmatchcase(os.path.basename(p), pattern))

    def delete(self, path: str) -> None:
        self.files.pop(path, None)
