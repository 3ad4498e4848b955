"""Writing an output file (an export, a redacted or pruned copy, a report, an archive) so that
nothing is ever half-written, clobbered, or replaced that is not a file.

What the output names decides how it is written:

* **nothing**: a new file. The bytes go to a temporary file in the same directory and are synced;
  the file then takes the name by a hard link, which fails if the name appeared meanwhile.
* **a regular file** (or a link to one): refused, or with ``force`` replaced by a rename (a link
  stays a link: the file it points to is replaced).
* **a character device or a FIFO** (or a link to one: ``/dev/stdout``, a shell's ``>(…)``): the
  bytes are streamed *into* it, as ``cp`` would; it is never replaced, ``force`` or not. A failure
  part-way can leave part of the bytes in the stream.
* ``-``: stdout, where the command allows it (``stdout=True``; its other output then goes to
  stderr), else refused.
* a directory, a block device, a socket or a link to nothing: refused.

A new file gets the permission bits ``mode`` minus the umask, as ``cp`` gives a new file: the
default 0o666 makes 0644 under umask 022 (for what is written to be read or sent on: an export, a
report, an archive, a redacted copy); :func:`copy_mode` keeps a session copy no more readable than
the session it came from. Every refusal is one line naming the output; on any failure the
temporary file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Final, Literal

from omp_session.errors import SessionError

__all__ = ["Output", "Pending", "check_output", "copy_mode", "open_output", "pending_output", "place", "write_behind",
           "write_new_file"]

SHARED_MODE: Final = 0o666  # the umask makes this 0644 (022) or 0600 (077), as for cp
_IN_PLACE = "is the input; it is never written in place"


@dataclass(frozen=True)
class Output:
    """Where and how :func:`open_output` writes: ``path`` (for a link to a file, the file) and
    ``kind``: ``new`` (nothing there), ``file`` (a regular file, replaced), ``stream`` (a device
    or FIFO, written into), ``stdout``."""

    path: str
    kind: Literal["new", "file", "stream", "stdout"]


def _kind_name(mode: int) -> str:
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output(out: str | os.PathLike[str], *, force: bool, error: Callable[[str], Exception],
                 source: str | os.PathLike[str] | None = None, in_place: str = _IN_PLACE,
                 stdout: bool = False) -> Output:
    """How ``out`` would be written (see the module docstring), or ``error(message)`` raised for a
    refusal. A command calls it before its work, so a refusal comes first; :func:`open_output`
    calls it again."""
    name = os.fspath(out)
    if name == "-":
        if stdout:
            return Output(name, "stdout")
        raise error("-: this command does not write to stdout (-o -); name a file")
    try:
        lst = os.lstat(name)
    except FileNotFoundError:
        return Output(name, "new")
    except OSError as e:
        raise error(f"{name}: {e.strerror or e}") from None
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise error(f"{name}: is a link to nothing; nothing was written") from None
    except OSError as e:
        raise error(f"{name}: {e.strerror or e}") from None
    if source is not None and _same_file(name, st, source):
        raise error(f"{name}: {in_place}")
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{name}: is a directory")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return Output(name, "stream")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name}: is {_kind_name(st.st_mode)}; nothing was written")
    if not force:
        raise error(f"{name}: already exists (use --force to replace it)")
    if stat.S_ISLNK(lst.st_mode):
        real = os.path.realpath(name)
        try:
            same = os.path.samestat(os.stat(real), st)
        except OSError:
            same = False
        if not same:  # e.g. /proc/self/fd/N of a deleted file
            raise error(f"{name}: a link whose file cannot be named; nothing was written")
        return Output(real, "file")
    return Output(name, "file")


def _same_file(name: str, st: os.stat_result, source: str | os.PathLike[str]) -> bool:
    if os.path.abspath(name) == os.path.abspath(source):
        return True
    try:
        return os.path.samestat(st, os.stat(source))
    except OSError:
        return False


def copy_mode(source: str | os.PathLike[str]) -> int:
    """The permission bits for a copy of the session ``source``: its own read and write bits (the
    umask applies on top), so a copy is never more readable than its session; 0o600 when
    ``source`` cannot be looked at."""
    try:
        return stat.S_IMODE(os.stat(source).st_mode) & 0o666
    except OSError:
        return 0o600


@contextlib.contextmanager
def open_output(out: str | os.PathLike[str], *, force: bool, error: Callable[[str], Exception],
                source: str | os.PathLike[str] | None = None, in_place: str = _IN_PLACE,
                stdout: bool = False, mode: int = SHARED_MODE) -> Iterator[IO[bytes]]:
    """A binary file to write the output to; when the block ends without an exception the output
    is complete (synced and in place), else nothing is left (see the module docstring).
    ``error(message)`` builds the exception for every refusal and failure; ``source`` (the input)
    is never a valid output, whatever ``force`` says."""
    target = check_output(out, force=force, error=error, source=source, in_place=in_place, stdout=stdout)
    if target.kind == "stdout":
        try:
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
        except (SessionError, BrokenPipeError):  # a reader that left: the command line ends quietly
            raise
        except OSError as e:
            raise error(f"-: cannot write to stdout: {e.strerror or e}") from None
        return
    if target.kind == "stream":
        f = _open_stream(target.path, error)
        try:
            with f:
                yield f
        except SessionError:
            raise
        except OSError as e:
            raise error(f"{target.path}: cannot write: {e.strerror or e}") from None
        return
    pending = Pending(target, mode, error)
    try:
        yield pending.file
    except BaseException as e:
        pending.discard()
        if isinstance(e, OSError):
            raise pending.refusal(e) from None
        raise
    pending.place()


def write_new_file(out: str | os.PathLike[str], pieces: Iterable[bytes], *, force: bool,
                   error: Callable[[str], Exception], source: str | os.PathLike[str] | None = None,
                   in_place: str = _IN_PLACE, stdout: bool = False, mode: int = SHARED_MODE,
                   overlap: bool = False) -> int:
    """Write ``pieces`` to ``out`` through :func:`open_output`; returns the bytes written.

    ``overlap``: the writes go on in a thread of their own while the next pieces are made (see
    :func:`_overlapped`), for a caller whose pieces fork no child once the first is made (a
    process with a thread forks none: see format/split.py)."""
    written = 0
    with open_output(out, force=force, error=error, source=source, in_place=in_place, stdout=stdout,
                     mode=mode) as f:
        if overlap:
            return _overlapped(f, pieces)
        for piece in pieces:
            f.write(piece)
            written += len(piece)
    return written


_AHEAD: Final = 2 << 20  # bytes made and not yet handed to the writer, at most (see below)
_OVERHEAD: Final = 64  # counted for each waiting piece besides its bytes: many tiny ones cost too


def _overlapped(f: IO[bytes], pieces: Iterable[bytes]) -> int:
    """``pieces`` written to ``f`` by a thread, the writes (the kernel's copy into the page cache,
    without the interpreter lock) overlapping the making of the next pieces: on a big export a
    fifth of the time. Every write is done before this returns or raises; a failed write is
    raised here (no write after it, and the maker stopped at the next piece); an exception
    making a piece is raised once the pieces before it are written.

    What waits is bounded in bytes, not pieces: a maker faster than the disk (repair -o copying
    megabyte blocks of the file) would otherwise hold as many pieces as a count allows, whatever
    their size. At most ``_AHEAD`` bytes wait, plus the piece being written and the one being
    made (a piece bigger than ``_AHEAD`` waits alone); each waiting piece counts ``_OVERHEAD``
    bytes more, for its object."""
    from omp_session.format.handoff import handed_on

    return handed_on(pieces, f.write, limit=_AHEAD, cost=lambda piece: len(piece) + _OVERHEAD,
                     name="omp-session-write")


class Pending:
    """A new output file written now and given its name later (:meth:`place`), or dropped
    (:meth:`discard`): what :func:`open_output` writes a new or replaced file through, and what a
    caller uses that learns only once the bytes are written whether they are the output. Writes
    may come from another thread (or a forked child) than the one that places or discards; a
    failed write is kept (:attr:`failed`), not raised, and the file is then never placed."""

    def __init__(self, target: Output, mode: int, error: Callable[[str], Exception]) -> None:
        self.target = target
        self._error = error
        fd, self._tmp = _create_temp(target.path, mode, error)
        self.file: IO[bytes] = write_behind(fd)
        self.written = 0
        self.failed = False

    def write(self, data: bytes) -> None:
        if self.failed:
            return
        try:
            self.file.write(data)
        except OSError:
            self.failed = True  # (the output is then written as it would have been: see place)
        else:
            self.written += len(data)

    def place(self) -> None:
        """Sync the bytes written and give them the output's name (a name that appeared meanwhile
        is never replaced without ``force``, nor one that is no longer a regular file); the
        temporary file is gone either way."""
        try:
            if self.failed:
                raise OSError(errno.EIO, "a write failed")
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            if self.target.kind == "file":
                _still_a_file(self.target.path, self._error)
            place(self._tmp, self.target.path, force=self.target.kind == "file")
        except BaseException as e:
            self.discard()
            if isinstance(e, OSError):
                raise self.refusal(e) from None
            raise

    def refusal(self, e: OSError) -> Exception:
        """The one-line error for a failure writing or placing the output."""
        if isinstance(e, FileExistsError):
            return self._error(f"{self.target.path}: already exists (use --force to replace it)")
        return self._error(f"{self.target.path}: cannot write: {e.strerror or e}")

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
        _unlink(self._tmp)


def pending_output(out: str | os.PathLike[str], *, force: bool, error: Callable[[str], Exception],
                   source: str | os.PathLike[str] | None = None, mode: int = SHARED_MODE) -> Pending | None:
    """A :class:`Pending` file for ``out`` when ``out`` is a file to create or replace (None for a
    device or FIFO, which are written only once it is known what to write); refusals as
    :func:`check_output`'s."""
    target = check_output(out, force=force, error=error, source=source)
    return Pending(target, mode, error) if target.kind in ("new", "file") else None


def _open_stream(path: str, error: Callable[[str], Exception]) -> IO[bytes]:
    # no O_CREAT, no O_TRUNC: if the name became a regular file meanwhile, it is refused below
    # before a byte is written; a FIFO blocks here until a reader opens it, as with cp
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise error(f"{path}: cannot write: {e.strerror or e}") from None
    st = os.fstat(fd)
    if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        os.close(fd)
        raise error(f"{path}: changed while being opened; nothing was written")
    return os.fdopen(fd, "wb")


_BEHIND: Final = 32 << 20  # bytes written between two requests to start writing them to disk
_LAG: Final = 128 << 20  # how far behind the end the pages written are dropped (see below)


class _WriteBehind(io.FileIO):
    """A new file written from its start, whose every ``_BEHIND`` bytes written the kernel is asked
    to start writing to disk at once (``POSIX_FADV_DONTNEED`` on a range begins its write-back).
    The ``fsync`` before the output takes its name then waits for the last few megabytes, not for
    the whole file: 0.4 s for a 1 GB export, against 0.01 s with the advice.

    What was written more than ``_LAG`` bytes ago is advised again, which drops its pages from the
    cache now that they are on the disk (pages still being written are left): the next pages
    written take the memory just freed. Without it every page of the file is memory the kernel
    has not touched lately, and on a virtual machine that hands freed memory back to its host
    (these) taking such a page costs more than copying into it: 1 GB written took 0.6-2.4 s of
    system time without the drops and 0.25-0.8 s with them, as much as the machine had freed
    lately allowed (docs/speed.md). The output is not read again here."""

    _written = 0
    _flushed = 0  # the bytes before this offset were handed to the disk
    _dropped = 0  # the bytes before this offset were asked out of the cache once on the disk

    def write(self, data: Any, /) -> int:
        n = super().write(data)
        if n:
            self._written += n
            if self._written - self._flushed >= _BEHIND and _FADVISE is not None:
                self._advise(self._flushed, self._written)
                self._flushed = self._written
                if self._flushed - _LAG > self._dropped:
                    self._advise(self._dropped, self._flushed - _LAG)
                    self._dropped = self._flushed - _LAG
        return n

    def _advise(self, start: int, end: int) -> None:
        assert _FADVISE is not None
        with contextlib.suppress(OSError):  # only advice: a file system may not take it
            _FADVISE(self.fileno(), start, end - start, _DONTNEED)


_FADVISE = getattr(os, "posix_fadvise", None)  # (not on macOS)
_DONTNEED: Final = getattr(os, "POSIX_FADV_DONTNEED", 0)


def write_behind(fd: int) -> IO[bytes]:
    """A buffered file over ``fd`` (a new file, written from its start and synced before it takes
    its name) that hands what it has written to the disk as it goes (see :class:`_WriteBehind`)."""
    return io.BufferedWriter(_WriteBehind(fd, "wb"))


def _create_temp(target: str, mode: int, error: Callable[[str], Exception]) -> tuple[int, str]:
    # not mkstemp: it makes every file 0600, and the umask is to decide (the kernel applies it)
    directory, base = os.path.split(target)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode), tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise error(f"{target}: cannot write: {e.strerror or e}") from None
    raise error(f"{target}: cannot write: no free temporary name")


def _still_a_file(path: str, error: Callable[[str], Exception]) -> None:
    """Just before a rename over ``path``: it must still be a regular file (or gone): a device or
    FIFO put there since the check is never replaced."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise error(f"{path}: is no longer a regular file; nothing was written")


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
