"""omp's cross-process publish lock for one session file (spec S8.5).

A lock file ``<dir>/.<base>.lock`` created exclusively, holding ``<pid>:<epoch ms>\\n``, guards
each append and each size-check-and-rename. omp also takes a native lock on a ``.lock.os``
sidecar first; the lock file alone already excludes omp (it takes both), so we do not create
that sidecar and leave no file behind.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from omp_session.errors import LockError

__all__ = ["LOCK_WAIT_S", "lock_path", "publish_lock"]

LOCK_WAIT_S = 0.5
_POLL_S = 0.002
_RECORD = re.compile(r"(\d+):(\d+)\s*\Z")


def lock_path(path: str) -> str:
    directory, base = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{base}.lock")


@contextmanager
def publish_lock(path: str) -> Iterator[None]:
    """Hold the publish lock of ``path``; :class:`LockError` after 0.5 s of a live holder."""
    lock = lock_path(path)
    deadline = time.monotonic() + LOCK_WAIT_S
    while not (_try_create(lock) or (_steal_stale(lock) and _try_create(lock))):
        if time.monotonic() >= deadline:
            raise LockError(f"Session publish lock unavailable for {path}: another writer holds the "
                            f"publish lock ({lock}). Nothing was written.")
        time.sleep(_POLL_S)
    try:
        yield
    finally:
        with suppress(FileNotFoundError):
            os.unlink(lock)


def _try_create(lock: str) -> bool:
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    record = f"{os.getpid()}:{time.time_ns() // 1_000_000}\n".encode()
    try:
        os.write(fd, record)
    except OSError:
        os.close(fd)
        _unlink_quietly(lock)
        raise
    os.close(fd)
    try:
        with open(lock, "rb") as f:
            return f.read() == record
    except OSError:
        return False


def _steal_stale(lock: str) -> bool:
    """Remove a lock whose holder is dead (or, without a pid, that is older than the wait)."""
    try:
        with open(lock, "rb") as f:
            content = f.read()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    match = _RECORD.match(content.decode("utf-8", "replace"))
    if match:
        if _pid_alive(int(match.group(1))):
            return False
    else:
        try:
            if time.time() - os.stat(lock).st_mtime <= LOCK_WAIT_S:
                return False
        except FileNotFoundError:
            return True
    try:
        with open(lock, "rb") as f:
            if f.read() != content:
                return False
        os.unlink(lock)
    except FileNotFoundError:
        return True
    return True


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a pid we can check: treat as held
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno != errno.ESRCH
    return True


def _unlink_quietly(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)
