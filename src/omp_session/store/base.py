"""Where session files live: the file system, or memory (spec S8, S12).

The manager talks to a :class:`SessionStorage`; it never touches ``os`` itself. The interface is
the few operations omp's own storage offers (size, read, append a line, replace atomically,
write the title slot in place, list, delete), so database backends can implement it too.

Every write either happens whole or leaves the target as it was:

* ``append`` takes the publish lock, completes a last line that lacks its LF (so the new line is
  never glued onto it) and truncates back on a failed write;
* ``append_if_size`` appends under the same lock only while the file still has the size the
  caller last saw (sync's appends: two syncs of one pair never add the same bytes twice);
* ``replace`` writes a same-directory temp file, checks under the lock that the target still has
  the size the caller last saw (:class:`WriteConflictError` otherwise), then renames;
* ``write_title_slot`` only overwrites a slot that is exactly 256 bytes now;
* ``rename`` replaces the destination atomically (omp's ``rename``; a transaction in SQL).

Keys are omp's: the absolute path the file would have on disk, in every backend. The database
and Redis backends live in :mod:`omp_session.store` (docs/stores.md).
"""

from __future__ import annotations

import builtins
import contextlib
import fnmatch
import os
import time
from typing import NamedTuple, Protocol

from omp_session.errors import (
    PersistenceError,
    WriteConflictError,
)
from omp_session.format.title import TITLE_SLOT_BYTES, parse_title_slot

from .locking import publish_lock

__all__ = ["ConditionalAppend", "FileStorage", "MemoryStorage", "SessionStorage", "StoredFile", "conflict_message"]


class StoredFile(NamedTuple):
    """One stored file as a listing sees it: key, byte size, modification time (ms since epoch)."""

    path: str
    size: int
    mtime_ms: float


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

    def stat(self, path: str) -> StoredFile | None:
        """Size and modification time, or None when there is no such file."""

    def scan(self, prefix: str) -> builtins.list[StoredFile]:
        """Every session file (key ending in ``.jsonl``) whose key starts with ``prefix``, at
        any depth, sorted by key. A directory prefix should end with ``/``."""

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst`` atomically, replacing ``dst`` (FileNotFoundError when
        ``src`` is missing)."""

    def close(self) -> None:
        """Release connections (the storage is not used afterwards)."""


class ConditionalAppend(Protocol):
    """What every storage of this package also offers: sync's size-checked append. Apart from
    :class:`SessionStorage` so a wrapper that forwards only omp's operations still is one (sync
    then falls back to a size check and an append in two steps)."""

    def append_if_size(self, path: str, expected_size: int, data: bytes) -> bool:
        """Append ``data`` as it is (no LF added) if ``path`` holds exactly ``expected_size``
        bytes, in one step no other writer can come between; False, and nothing written, when it
        holds another size or is missing. The file's modification time changes as with
        ``append``."""


class FileStorage:
    """Session files on the local file system, with omp's lock and replace protocol."""

    persistent = True

    def size(self, path: str) -> int | None:
        try:
            return os.stat(path).st_size
        except (FileNotFoundError, NotADirectoryError):
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

    def append_if_size(self, path: str, expected_size: int, data: bytes) -> bool:
        # omp's publish lock, not flock: it is what omp and ``append``/``replace`` hold, so the
        # size cannot change between the check and the write from any of them either
        try:
            with publish_lock(path):
                fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                try:
                    before = os.fstat(fd).st_size
                    if before != expected_size:
                        return False
                    try:
                        _write_all(fd, data)
                    except OSError:
                        os.ftruncate(fd, before)
                        raise
                finally:
                    os.close(fd)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except WriteConflictError:
            raise
        except OSError as e:
            raise PersistenceError(path, "appending entries", e) from e
        return True

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        import secrets  # here: every command that names a store imports this module, few replace

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
            import shutil

            shutil.rmtree(path[: -len(".jsonl")], ignore_errors=True)

    def stat(self, path: str) -> StoredFile | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return StoredFile(path, st.st_size, st.st_mtime_ns / 1e6)

    def scan(self, prefix: str) -> builtins.list[StoredFile]:
        root = prefix if os.path.isdir(prefix) else os.path.dirname(prefix)
        out: builtins.list[StoredFile] = []
        for directory, dirs, names in os.walk(root):
            dirs.sort()
            for name in names:
                full = os.path.join(directory, name)
                if name.endswith(".jsonl") and full.startswith(prefix):
                    found = self.stat(full)
                    if found is not None:
                        out.append(found)
        out.sort()
        return out

    def rename(self, src: str, dst: str) -> None:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
            os.replace(src, dst)
        except FileNotFoundError:
            raise
        except OSError as e:
            raise PersistenceError(src, f"renaming to {dst}", e) from e

    def set_mtime(self, path: str, mtime_ms: float, expected_size: int) -> bool:
        """Give the session the modification time ``mtime_ms`` (what omp orders its list by), if
        it still holds ``expected_size`` bytes; False otherwise (nothing changed)."""
        try:
            st = os.stat(path)
            if st.st_size != expected_size:
                return False
            os.utime(path, ns=(st.st_atime_ns, int(mtime_ms * 1_000_000)))
        except FileNotFoundError:
            return False
        except OSError as e:
            raise PersistenceError(path, "setting the modification time", e) from e
        return True

    def close(self) -> None:
        return None


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
        self.mtimes: dict[str, float] = {}
        self._clock = 0.0

    def _touch(self, path: str) -> None:
        # strictly increasing, like omp's index allocator: two writes never share an mtime
        self._clock = max(self._clock + 1, float(int(time.time() * 1000)))
        self.mtimes[path] = self._clock

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
        self._touch(path)
        return len(line)

    def append_if_size(self, path: str, expected_size: int, data: bytes) -> bool:
        found = self.files.get(path)
        if found is None or len(found) != expected_size:
            return False
        found += data
        self._touch(path)
        return True

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        found = self.size(path)
        if found != expected_size:
            raise WriteConflictError(conflict_message(path, expected_size, found))
        self.files[path] = bytearray(body)
        self._touch(path)

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        data = self.files.get(path)
        if data is None or not _starts_with_slot(bytes(data[: TITLE_SLOT_BYTES + 3])):
            return False
        data[:TITLE_SLOT_BYTES] = slot
        self._touch(path)
        return True

    def list(self, directory: str, pattern: str) -> list[str]:
        return sorted(p for p in self.files
                      if os.path.dirname(p) == directory and fnmatch.fnmatchcase(os.path.basename(p), pattern))

    def delete(self, path: str) -> None:
        self.files.pop(path, None)
        self.mtimes.pop(path, None)
        if path.endswith(".jsonl"):
            artifacts = path[: -len(".jsonl")] + "/"
            for key in [k for k in self.files if k.startswith(artifacts)]:
                self.files.pop(key, None)
                self.mtimes.pop(key, None)

    def stat(self, path: str) -> StoredFile | None:
        data = self.files.get(path)
        return None if data is None else StoredFile(path, len(data), self.mtimes.get(path, 0.0))

    def scan(self, prefix: str) -> builtins.list[StoredFile]:
        return [StoredFile(p, len(self.files[p]), self.mtimes.get(p, 0.0))
                for p in sorted(self.files) if p.startswith(prefix) and p.endswith(".jsonl")]

    def rename(self, src: str, dst: str) -> None:
        if src not in self.files:
            raise FileNotFoundError(src)
        if src != dst:
            self.files[dst] = self.files.pop(src)
            self.mtimes[dst] = self.mtimes.pop(src, 0.0)

    def set_mtime(self, path: str, mtime_ms: float, expected_size: int) -> bool:
        data = self.files.get(path)
        if data is None or len(data) != expected_size:
            return False
        self.mtimes[path] = float(mtime_ms)
        return True

    def close(self) -> None:
        return None
