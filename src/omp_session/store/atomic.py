"""Writing a new output file (an export, a redacted or pruned copy, a report) so that nothing is
ever half-written or clobbered.

The bytes go to a temporary file in the target's directory and are synced; the file then takes
the target's name by a hard link, which fails if the target appeared meanwhile (so an existing
file is never replaced without ``force``), or by a rename with ``force``. On any failure the
temporary file is removed. Every refusal is one line naming the target.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["place", "write_new_file"]


def write_new_file(out: str | os.PathLike[str], pieces: Iterable[bytes], *, force: bool,
                   error: Callable[[str], Exception], source: str | os.PathLike[str] | None = None,
                   in_place: str = "is the input; it is never written in place") -> int:
    """Write ``pieces`` to ``out``; returns the bytes written. ``error(message)`` builds the
    exception raised for every refusal and failure; ``source`` (the input) is never a valid
    ``out``, whatever ``force`` says."""
    target = Path(out)
    if source is not None and target.exists() and (
            os.path.abspath(target) == os.path.abspath(source) or os.path.samefile(target, source)):
        raise error(f"{target}: {in_place}")
    if target.is_dir():
        raise error(f"{target}: is a directory")
    if target.exists() and not force:
        raise error(f"{target}: already exists (use --force to replace it)")
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:
        raise error(f"{target}: cannot write: {e.strerror or e}") from None
    written = 0
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in pieces:
                f.write(piece)
                written += len(piece)
            f.flush()
            os.fsync(f.fileno())
        place(tmp, target, force=force)
    except FileExistsError:
        _unlink(tmp)
        raise error(f"{target}: already exists (use --force to replace it)") from None
    except OSError as e:
        _unlink(tmp)
        raise error(f"{target}: cannot write: {e.strerror or e}") from None
    except BaseException:
        _unlink(tmp)
        raise
    return written


def place(tmp: str | os.PathLike[str], target: str | os.PathLike[str], *, force: bool) -> None:
    """Give the finished temporary file ``tmp`` the name ``target``: by a rename with ``force``,
    else by a hard link, which fails (FileExistsError) if ``target`` appeared meanwhile. Where the
    file system has no hard links (vfat, exFAT, some network shares) the existence check and the
    rename are two steps."""
    if force:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS):
            raise
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, "File exists", os.fspath(target)) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
