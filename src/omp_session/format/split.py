"""Scan a large file's two halves at once, in this process and a forked child; or run any one
call on a large file in a forked child while this process goes on (:func:`forked`).

Validating every line's JSON is the bulk of opening a large session (about a second per GB
with msgspec, which holds the GIL), and omp-session machines have at least two cores. The child
scans the second half and sends its records back through a pipe; if anything about the split is
not clean (a value spanning the midpoint, a failed child) the parent simply scans on by itself,
so the result is always the sequential one.

Used only where it is safe and worth it: Linux, a single-threaded process, two or more
CPUs, a file of at least 32 MiB, and ``OMP_SESSION_WORKERS`` not set to ``1``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Forked", "ReadAhead", "Scanner", "forked", "interleaved", "later_part", "pieces_of", "scan_in_two"]

MIN_SPLIT_SIZE = 32 * 1024 * 1024

Item = TypeVar("Item")
J = TypeVar("J")
T = TypeVar("T")


class Scanner(Protocol[J]):
    """What the splitter needs of the reader; passed in, so this module never imports it."""

    def part(self, j: J) -> J:
        """An empty journal over ``j``'s source (the child fills it with the second half)."""

    def scan(self, j: J, start: int, end: int | None = None) -> int:
        """Scan records from ``start`` (to ``end``, if given); return where scanning stopped."""

    def pack(self, part: J) -> bytes:
        """``part``'s records as bytes for the pipe."""

    def unpack(self, j: J, payload: bytes) -> None:
        """Append the records ``pack`` sent to ``j``."""


def _worth_splitting(size: int, body_start: int) -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("OMP_SESSION_WORKERS") == "1":
        return False
    # threading is looked up, not imported: a process that never imported it runs no thread it
    # started (and importing it costs a small command's start-up)
    threading = sys.modules.get("threading")
    if (os.cpu_count() or 1) < 2 or (threading is not None and threading.active_count() != 1):
        return False
    return size - body_start >= MIN_SPLIT_SIZE


def later_part(count: int, size: int, percent: int) -> int:
    """Where the later part of ``count`` items starts, the part a forked child is to take (this
    process keeps the first ``percent`` % of them: the child is the slower, as its first touch of
    each shared page copies it and it pickles what it sends), for work on a file of ``size``
    bytes; ``count`` where no child is worth it (as for :func:`forked`)."""
    return count * percent // 100 if count >= 2 and _worth_splitting(size, 0) else count


def _midpoint(source: Any, size: int, body_start: int) -> int | None:
    # The child also packs its part and the parent unpacks it; measured best near an even split.
    lf = source.find(b"\n", body_start + (size - body_start) * 21 // 40)
    return None if lf < 0 or lf + 1 >= size else lf + 1


def _read_all(fd: int) -> bytes:
    parts: list[bytes] = []
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            return b"".join(parts)
        parts.append(block)


_PIPE_BYTES = 1 << 20


def _widen(fd: int) -> None:
    """A pipe of a megabyte where the system allows it (Linux: up to ``pipe-max-size``, 1 MiB by
    default): the child's pieces are a megabyte or more, and through the default 64 KiB each
    crossed in sixteen writes and reads, each a switch between the two processes."""
    import fcntl  # (POSIX; a child is forked on Linux only)

    with contextlib.suppress(OSError, AttributeError):  # over a user's limit: the default still works
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


_in_child = False  # this process is a child _child made


def _child(work: Callable[[Callable[[bytes], None]], None]) -> tuple[int, int] | None:
    """A forked child running ``work(send)``, ``send`` writing bytes down a pipe to this process;
    (its pid, the pipe's reading end), or None when no child could be made. The child leaves
    without cleanup handlers or flushing what this process buffered; status 0 if ``work``
    returned."""
    read_end, write_end = os.pipe()
    _widen(write_end)
    # The child's collections skip what it inherits: a full one otherwise walks every object of
    # this process, a session's columns each hundreds of thousands of items long (60 ms each on
    # a 1 GB session, half a second per child), and writes into each, which copies the page it
    # is on. This process collects as before: it unfreezes what it froze, unless it is itself
    # such a child (short-lived: what it inherited stays frozen). A program that froze objects
    # of its own is left as it was (nothing frozen here, nothing thawed).
    global _in_child
    freeze = _in_child or not gc.get_freeze_count()
    if freeze:
        gc.freeze()
    try:
        pid = os.fork()
    except OSError:
        pid = None
    if pid != 0 and freeze and not _in_child:
        gc.unfreeze()
    if pid is None:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:
        _in_child = True
        status = 1
        try:
            os.close(read_end)

            def send(data: bytes) -> None:
                view = memoryview(data)
                while view:
                    view = view[os.write(write_end, view):]

            work(send)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def scan_in_two(j: J, body_start: int, scanner: Scanner[J], *, size: int, source: Any) -> bool:
    """Scan the body of ``j`` (``size`` bytes of ``source``) with a child process taking the second
    half; False if not done."""
    if not _worth_splitting(size, body_start):
        return False
    mid = _midpoint(source, size, body_start)
    if mid is None:
        return False
    def second_half(send: Callable[[bytes], None]) -> None:
        # pread never moves the shared file offset, so the inherited handle is safe to use
        part = scanner.part(j)
        scanner.scan(part, mid)
        send(scanner.pack(part))

    child = _child(second_half)
    if child is None:
        return False
    pid, read_end = child
    try:
        reached = scanner.scan(j, body_start, mid)
        payload = _read_all(read_end)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if reached != mid or status != 0 or not payload:
        # A value ran across the midpoint or the child failed: carry on alone from where we are.
        if reached < size:
            scanner.scan(j, reached)
        return True
    scanner.unpack(j, payload)
    return True


def forked(fn: Callable[[], T], size: int) -> Forked[T]:
    """``fn()`` started in a forked child, for work on a file of ``size`` bytes that this process
    need not wait for; calling what is returned gives its result (sent back pickled), the same
    value each time. Where a child is not worth it (as for :func:`scan_in_two`) or fails (``fn``
    raised, the child died), ``fn()`` runs here when the result is first asked for: the result,
    or the exception, is always ``fn()``'s own.

    The child must only read what it shares with this process (files by ``pread``). Ask for the
    result, or :meth:`Forked.cancel` it where this process gives up (an exception): a child left
    with a full pipe would wait until this process ends, a long time in a server."""
    child = _child(lambda send: send(pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL))) \
        if _worth_splitting(size, 0) else None
    return Forked(fn, child)


class Forked(Generic[T]):
    """What :func:`forked` returns: call it for the result, or cancel it."""

    def __init__(self, fn: Callable[[], T], child: tuple[int, int] | None) -> None:
        self._fn = fn
        self._child = child
        # what the child sent and how it ended, taken once: a call asked again after fn() raised here
        # must not read, close or wait on a pipe and a child that are gone (the number may be reused)
        self._outcome: list[tuple[int, bytes]] = []
        self._done: list[T] = []

    def __call__(self) -> T:
        if not self._done:
            self._done.append(self._collect())
        return self._done[0]

    def _collect(self) -> T:
        if self._child is None:
            return self._fn()
        if not self._outcome:
            pid, read_end = self._child
            payload, status = b"", 1
            try:
                payload = _read_all(read_end)
            finally:
                os.close(read_end)
                _, status = os.waitpid(pid, 0)
                self._outcome.append((status, payload))
        status, payload = self._outcome[0]
        if status != 0 or not payload:
            return self._fn()
        value: T = pickle.loads(payload)
        return value

    @property
    def forked(self) -> bool:
        """Whether a child was made for the call (else it runs here when the result is asked for)."""
        return self._child is not None

    def cancel(self) -> None:
        """No result is wanted: a child still running is stopped and reaped, and nothing runs here
        (after the result was taken: nothing to do)."""
        if self._child is None or self._outcome:
            return
        pid, read_end = self._child
        self._outcome.append((1, b""))
        os.close(read_end)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


class ReadAhead(Generic[Item, T]):
    """``read(item)`` of each of ``items``, asked for by position (``ahead(n)``), for work on a
    file of ``size`` bytes: where a child is worth it (see :func:`later_part`) a forked child
    reads the items past the first ``percent`` % while this process reads those before, and
    sends back what it read (which must pickle; taken when first asked for). :meth:`cancel`
    where this process gives up (nothing to do once taken)."""

    def __init__(self, items: Sequence[Item], read: Callable[[Item], T], size: int, percent: int) -> None:
        self._items, self._read = items, read
        self.start = later_part(len(items), size, percent)
        rest = items[self.start:]
        self._ahead = forked(lambda: [read(item) for item in rest], size) if len(rest) else None

    def __call__(self, n: int) -> T:
        if self._ahead is None or n < self.start:
            return self._read(self._items[n])
        return self._ahead()[n - self.start]  # (the child's list, taken once)

    def cancel(self) -> None:
        if self._ahead is not None:
            self._ahead.cancel()


def pieces_of(count: int, sizes: Iterable[int] | None = None, limit: int = 1 << 20) -> list[tuple[int, int]]:
    """``range(count)`` cut into consecutive (lo, hi) pieces of about ``limit`` bytes each, item
    ``k`` being ``sizes``' k-th (none negative), a piece ending with the item that brings it to
    ``limit`` or more (at least one item each; without ``sizes``, ``limit`` items each): what
    :func:`interleaved` renders a piece at a time."""
    if sizes is None:
        return [(lo, min(lo + limit, count)) for lo in range(0, count, limit)]
    # the running sums bisected, a cut at a time: a step per item in Python was a tenth of a
    # second on a 1 GB session, before the pieces could start
    total = list(accumulate(sizes))
    if len(total) != count:  # (a piece short of an item would leave it out of the output)
        raise ValueError(f"{len(total)} sizes for {count} items")
    out: list[tuple[int, int]] = []
    lo = base = 0
    while lo < count:
        k = bisect_left(total, base + limit, lo)  # the first item that brings the piece to limit
        if k >= count:
            out.append((lo, count))
            break
        out.append((lo, k + 1))
        lo, base = k + 1, total[k]
    return out


_AHEAD = 16  # sends a child may make before this process takes them: 8 pieces, each its length, then its bytes


def _ahead(made: Iterator[bytes], send: Callable[[bytes], None]) -> None:
    """``send`` each of ``made`` in order from a thread of its own, up to ``_AHEAD`` of them held:
    the maker goes on while a full pipe waits for this process, which is then busy with its own
    piece (with one piece at a time, each side waited for the other about a seventh of the time
    when the pieces' costs vary: 2.2 s each of `redact -o`'s 15.8 s at 1 GB). An error of either
    is raised here, after the maker stops."""
    from .handoff import handed_on

    handed_on(made, send, limit=_AHEAD, cost=lambda _piece: 1, name="omp-session-send")


def interleaved(pieces: list[tuple[int, int]], render: Callable[[int, int], bytes], size: int) -> Iterator[bytes]:
    """``render(lo, hi)`` of each piece (see :func:`pieces_of`), in order, for work on a file of
    ``size`` bytes: where it is worth it (as for :func:`scan_in_two`) a forked child renders every
    other piece while this process renders the others, so the two CPUs share the work and a few
    pieces are held at a time (the child's, up to ``_AHEAD // 2``, see :func:`_ahead`). ``render`` must give a piece's bytes from the piece alone (any
    state carried from the items before it worked out from them). If the child fails, this
    process renders the pieces it has not sent."""
    if len(pieces) < 2 or not _worth_splitting(size, 0):
        for lo, hi in pieces:
            yield render(lo, hi)
        return
    def framed() -> Iterator[bytes]:  # each piece as its length, then its bytes (not joined: a copy)
        for lo, hi in pieces[1::2]:
            data = render(lo, hi)
            yield len(data).to_bytes(8, "little")
            yield data

    def odd_pieces(send: Callable[[bytes], None]) -> None:
        _ahead(framed(), send)

    child = _child(odd_pieces)
    if child is None:
        yield from interleaved(pieces, render, 0)
        return
    pid, read_end = child
    reader = os.fdopen(read_end, "rb")
    alive, done = True, False
    try:
        for n, (lo, hi) in enumerate(pieces):
            if n % 2 and alive:
                head = reader.read(8)
                data = reader.read(int.from_bytes(head, "little")) if len(head) == 8 else b""
                if len(head) == 8 and len(data) == int.from_bytes(head, "little"):
                    yield data
                    continue
                alive = False  # the child stopped short: the rest here
            yield render(lo, hi)
        done = True
    finally:
        reader.close()
        if alive and not done:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # a consumer that stopped early: nothing more is wanted
        os.waitpid(pid, 0)
