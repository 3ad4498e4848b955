"""A file's times as Bun's ``fs.stat`` gives them to omp: ``mtimeMs``, ``birthtimeMs``, ``ctimeMs``.

Bun computes each as ``seconds * 1e3 + nanoseconds / 1e6`` in doubles (not ``ns / 1e6``: the two
differ in the last bit for a quarter of all times), and on Linux takes the birth time from
``statx``, which Python 3.11's ``os.stat`` does not expose; it is read here through libc.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["FileTimes", "file_times"]

_AT_FDCWD = -100
_STATX_BTIME = 0x800
_STATX_SIZE = 256
_BTIME_OFFSET = 80  # struct statx: stx_btime is the second statx_timestamp (after stx_atime at 64)


@dataclass(frozen=True)
class FileTimes:
    size: int
    mtime_ns: int
    mtime_ms: float
    ctime_ms: float
    birthtime_ms: float  # 0 where the file system keeps no birth time (Bun says 0 too)


def _ms(seconds: int, nanoseconds: int) -> float:
    return seconds * 1e3 + nanoseconds / 1e6


def _load_statx() -> Any:
    # The process's own symbols first: libc is loaded already, and find_library would import
    # ctypes.util (subprocess, tempfile, shutil) and run ``ldconfig -p`` in a child (~17 ms).
    fn = None
    for where in ("process", "libc"):
        try:
            if where == "process":
                library = ctypes.CDLL(None, use_errno=True)
            else:
                from ctypes.util import find_library

                library = ctypes.CDLL(find_library("c"), use_errno=True)
            fn = library.statx
            break
        except (OSError, AttributeError, TypeError):
            continue
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


_statx = _load_statx()


def _birthtime_ms(path: str, st: os.stat_result) -> float:
    birth = getattr(st, "st_birthtime_ns", None)
    if birth is not None:  # macOS, BSD, newer Pythons
        return _ms(*divmod(int(birth), 1_000_000_000))
    if _statx is None:
        return 0.0
    buf = ctypes.create_string_buffer(_STATX_SIZE)
    if _statx(_AT_FDCWD, os.fsencode(path), 0, _STATX_BTIME, buf) != 0:
        return 0.0
    mask = int.from_bytes(buf.raw[0:4], "little")
    if not mask & _STATX_BTIME:
        return 0.0
    seconds = int.from_bytes(buf.raw[_BTIME_OFFSET:_BTIME_OFFSET + 8], "little", signed=True)
    nanoseconds = int.from_bytes(buf.raw[_BTIME_OFFSET + 8:_BTIME_OFFSET + 12], "little")
    return _ms(seconds, nanoseconds)


def file_times(path: str | os.PathLike[str], *, birth: bool = True) -> FileTimes:
    """The times of ``path`` (following links, as ``fs.stat``); raises OSError. ``birth=False``:
    the birth time is not looked up (``birthtime_ms`` 0; a second system call saved)."""
    name = os.fspath(path)
    st = os.stat(name)
    return FileTimes(size=st.st_size, mtime_ns=st.st_mtime_ns,
                     mtime_ms=_ms(*divmod(st.st_mtime_ns, 1_000_000_000)),
                     ctime_ms=_ms(*divmod(st.st_ctime_ns, 1_000_000_000)),
                     birthtime_ms=_birthtime_ms(name, st) if birth else 0.0)
