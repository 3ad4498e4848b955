"""``omp-session cat``: the raw records of a session, exactly as they are in the file.

``--all`` without ``--type`` is a copy: every byte as stored (title slot, BOM, line endings,
malformed and blank lines, a missing final newline), not the records joined again, so that
``cat ID --whole-file > copy.jsonl`` gives a file omp reads exactly as the original.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import BinaryIO, Final

import click

from ._errors import command
from ._options import session_argument
from ._store import active_store, not_a_session_error, open_one, resolve_any, store_option

__all__ = ["cat"]

_CHUNK = 1 << 20
_SEND: Final = 1 << 26  # bytes a sendfile is asked for at once


@command()
@session_argument(every_project=False)  # its old --all (now --whole-file) is refused, not reused
@store_option
@click.option("--branch", "scope", flag_value="branch", default=True, help="The current branch, root to leaf "
              "(default).")
@click.option("--whole-file", "scope", flag_value="all", help="The whole file, byte for byte as stored (title "
              "slot, header and damaged lines included; an archive decompressed); with --type, every entry "
              "of those types in file order.")
# --all means "every project" everywhere else: the old spelling of --whole-file is refused, not
# silently turned into a branch-only copy
@click.option("--all", "old_all", is_flag=True, hidden=True)
@click.option("--type", "types", multiple=True, help="Only entries of this type (repeatable), e.g. message.")
def cat(session: str, scope: str, old_all: bool, types: tuple[str, ...]) -> None:
    """Print raw records as JSON lines, byte for byte as stored: safe to pipe into jq.

    The current branch by default; --whole-file prints the whole file as it is stored (title slot and
    damaged lines included), a copy omp reads exactly as the original.

    SESSION is a path, a session id or a unique prefix of one, or 'latest'.

    \b
    Examples:
      omp-session cat latest --type message | jq .message.role
      omp-session cat 0197 --whole-file > copy.jsonl
    """
    if old_all:
        raise click.UsageError("cat's --all is now --whole-file (--all means every project in every command)")
    path = resolve_any(session)
    out = sys.stdout.buffer
    if scope == "all" and not types and _copied(path, out):
        return
    s = open_one(path)  # a file that is not a session is one line, exit 1
    with s:
        j = s.journal
        if scope == "all" and not types:
            # the journal's source holds the file's bytes (an archive's decompressed), so the copy
            # is the one snapshot the scan saw, even if omp appends meanwhile
            for pos in range(0, j.size, _CHUNK):
                out.write(j.read(pos, min(pos + _CHUNK, j.size)))
            out.flush()
            return
        records = range(len(j)) if scope == "all" else [k + 1 for k in s.branch_indices()]
        for i in records:
            if types and (i == 0 or s.types[i - 1] not in types):
                continue
            out.write(j.raw(i))
            out.write(b"\n")
    out.flush()


def _copied(path: str | os.PathLike[str], out: BinaryIO) -> bool:
    """Whether the plain file at ``path`` was copied to ``out`` as its first megabyte showed it a
    session (omp's, damaged or not), without reading it as one first: the copy is the file's bytes
    up to its size when opened, the snapshot a scan would have seen (even if omp appends
    meanwhile). A file the start shows is no session is refused here in the words the reading
    would use; False when the start does not tell (or for an archive, a store's key, a file that
    cannot be opened): the caller reads it as a session, which says why."""
    from omp_session.catalog.not_a_session import why_not_by_fd

    name = os.path.expanduser(os.fspath(path))
    if active_store() is not None or name.endswith(".jsonl.gz"):
        return False
    try:
        f = open(name, "rb")  # noqa: SIM115 - closed below, on every path
    except OSError:
        return False
    with f:
        fd = f.fileno()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        size = st.st_size
        try:
            decided, reason = why_not_by_fd(fd, size)
        except OSError:  # the start cannot be read: the caller's reading says why
            return False
        if not decided:
            return False
        if reason is not None:
            raise not_a_session_error(reason, name)
        out.flush()
        pos = _sent(fd, out, size)
        while pos < size:
            block = os.pread(fd, min(_CHUNK, size - pos), pos)
            if not block:  # cut shorter meanwhile: what there was
                break
            out.write(block)
            pos += len(block)
    out.flush()
    return True


# sendfile cannot write to this output (a file opened to append, an old kernel, a file system without it;
# on macOS and the BSDs anything but a socket: ENOTSOCK, and ENOTSUP is not EOPNOTSUPP there)
_CANNOT_SEND: Final = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV, errno.ESPIPE,
                                 errno.ENOTSOCK, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)})


def _sent(fd: int, out: BinaryIO, size: int) -> int:
    """How many of the ``size`` first bytes of ``fd`` the kernel copied to ``out``'s descriptor
    itself (``sendfile``: no copy through this process, half the time of reading and writing a
    gigabyte); where it cannot, the rest is left to the caller. A failed write (a closed pipe) is
    raised as a write's would be."""
    try:
        target = out.fileno()
    except (OSError, ValueError):  # a stream with no descriptor (io.UnsupportedOperation)
        return 0
    pos = 0
    try:
        while pos < size:
            sent = os.sendfile(target, fd, pos, min(_SEND, size - pos))
            if not sent:  # cut shorter meanwhile (the caller's read finds the end too)
                break
            pos += sent
    except OSError as e:
        if e.errno not in _CANNOT_SEND:
            raise
    return pos
