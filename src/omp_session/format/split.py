"""Scan a large file's two halves at once, in this process and a forked child.

Validating every line's JSON is the bulk of opening a large session (about a second per GB
with msgspec, which holds the GIL), and omp-session machines have at least two cores. The child
scans the second half and sends its records back through a pipe; if anything about the split is
not clean (a value spanning the midpoint, a failed child) the parent simply scans on by itself,
so the result is always the sequential one.

Used only where it is safe and worth it: Linux, a single-threaded process, two or more
CPUs, a file of at least 32 MiB, and ``OMP_SESSION_WORKERS`` not set to ``1``.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from array import array

from . import reader

__all__ = ["scan_in_two"]

MIN_SPLIT_SIZE = 32 * 1024 * 1024


def _worth_splitting(j: reader.Journal, body_start: int) -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("OMP_SESSION_WORKERS") == "1":
        return False
    if (os.cpu_count() or 1) < 2 or threading.active_count() != 1:
        return False
    return j.size - body_start >= MIN_SPLIT_SIZE


def _midpoint(j: reader.Journal, body_start: int) -> int | None:
    # The child also packs its part and the parent unpacks it; measured best near an even split.
    lf = j.source.find(b"\n", body_start + (j.size - body_start) * 21 // 40)
    return None if lf < 0 or lf + 1 >= j.size else lf + 1


def _payload(part: reader.Journal) -> bytes:
    # heads are shared objects: send each distinct one once, and per record its number
    # (C-level maps: the child's packing is on the critical path)
    distinct = dict(zip(map(id, part.heads), part.heads, strict=True))
    code_of = {ident: k for k, ident in enumerate(distinct)}
    table = [None if head is None else (head.role, head.provider, head.model) for head in distinct.values()]
    codes = array("i", map(code_of.__getitem__, map(id, part.heads)))
    return pickle.dumps((part.starts, part.ends, part.types, part.ids, part.parents, part.linear, table, codes,
                         part.values, [(m.start, m.end) for m in part.malformed], part.blob_offsets,
                         part.loose_heads),
                        protocol=pickle.HIGHEST_PROTOCOL)


def _merge(j: reader.Journal, payload: bytes) -> None:
    (starts, ends, types, ids, parents, linear, table, codes, values, malformed, blobs,
     loose) = pickle.loads(payload)
    heads = [None if t is None else reader.head_of_fields(*t) for t in table]
    first = len(j.starts)
    j.starts.extend(starts)
    j.ends.extend(ends)
    j.types.extend(reader.intern_types(types))
    j.ids.extend(ids)
    j.parents.extend(parents)
    j.linear.extend(linear)
    j.heads.extend(map(heads.__getitem__, codes))
    for i, value in values.items():
        j.values[first + i] = value
    j.malformed.extend(reader.MalformedSpan(a, b) for a, b in malformed)
    j.blob_offsets.extend(blobs)
    j.loose_heads = j.loose_heads or loose


def _read_all(fd: int) -> bytes:
    parts: list[bytes] = []
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            return b"".join(parts)
        parts.append(block)


def scan_in_two(j: reader.Journal, body_start: int) -> bool:
    """Scan the body of ``j`` with a child process taking the second half; False if not done."""
    if not _worth_splitting(j, body_start):
        return False
    mid = _midpoint(j, body_start)
    if mid is None:
        return False
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return False
    if pid == 0:  # the child: scan the second half, send it, and leave without cleanup handlers
        status = 1
        try:
            os.close(read_end)
            # pread never moves the shared file offset, so the inherited handle is safe to use
            part = reader.Journal(source=j.source, size=j.size, streaming=j.streaming)
            reader._scan_body(part, mid)
            data = _payload(part)
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        reached = reader._scan_body(j, body_start, mid)
        payload = _read_all(read_end)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if reached != mid or status != 0 or not payload:
        # A value ran across the midpoint or the child failed: carry on alone from where we are.
        if reached < j.size:
            reader._scan_body(j, reached)
        return True
    _merge(j, payload)
    return True
