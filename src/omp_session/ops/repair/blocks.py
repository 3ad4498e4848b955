"""Repair's first pass a block of lines at a time: records that need no fix, and records omp
surely loads, proven for a megabyte of lines with one read and one typed decode.

Most of a big session is records like these. Taking them one by one cost a read per record to
see it needs no fix, then a read and a full decode per record to see omp does not throw on it.
Here a run of records one LF apart is read once; when it is UTF-8, has no CR and no record starts
or ends in whitespace, every record in it is as ``records._take`` leaves a record needing nothing.
The same bytes are then decoded into :class:`_Probe` (the few fields ``tree.omp_crash_reason``
reads, big values skipped unbuilt), which proves a record loads or leaves it to the full check.
Whatever the probe cannot type (a non-object, an odd usage) sends its block to that check.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec

from omp_session.format.reader import Journal
from omp_session.format.utf8 import is_utf8
from omp_session.js.codec import UNDEFINED

__all__ = ["Block", "blocks", "prove_loads", "runs"]

_BLOCK: Final = 1024 * 1024
_WS: Final = b" \t\r\n"
_ABSENT: Any = msgspec.Raw()
_LIST_OR_STRING: Final = (0x5B, 0x22)  # [ and "


class _Usage(msgspec.Struct):
    cost: msgspec.Raw = _ABSENT


class _Message(msgspec.Struct):
    role: Any = UNDEFINED
    usage: _Usage | None = UNDEFINED  # type: ignore[assignment]
    content: msgspec.Raw = _ABSENT
    stopReason: Any = UNDEFINED
    toolName: Any = UNDEFINED


class _Probe(msgspec.Struct):
    type: Any = UNDEFINED
    message: _Message | None = UNDEFINED  # type: ignore[assignment]
    usage: _Usage | None = UNDEFINED  # type: ignore[assignment]
    injectedRules: msgspec.Raw = _ABSENT


_DECODER: Final = msgspec.json.Decoder(_Probe)


class Block:
    """Records ``first``..``last`` of a journal and their bytes; ``clean`` when none needs a fix."""

    __slots__ = ("clean", "data", "first", "last")

    def __init__(self, first: int, last: int, data: bytes | None, clean: bool) -> None:
        self.first, self.last, self.data, self.clean = first, last, data, clean


def runs(j: Journal) -> list[tuple[int, int]]:
    """The (first, last) records of each block :func:`blocks` gives."""
    return list(j.runs(0, len(j), _BLOCK))


def blocks(j: Journal, these: list[tuple[int, int]] | None = None) -> Iterator[Block]:
    """Every record of ``j`` in order, in runs of records one LF apart (up to a megabyte); or
    the blocks ``these`` (some of :func:`runs`)."""
    starts, ends = j.starts, j.ends
    plain = not j.invalid_utf8 and j.decode_hook is None
    for i, b in these if these is not None else j.runs(0, len(j), _BLOCK):
        if not plain or (j.values and any(k in j.values for k in range(i, b + 1))):
            yield Block(i, b, None, False)
        else:
            data = j.read(starts[i], ends[b])
            yield Block(i, b, data, _clean(data, starts[i], starts, ends, i, b))


def _clean(data: bytes, first: int, starts: Any, ends: Any, i: int, b: int) -> bool:
    """Each record of the block one line, no whitespace around it, every byte UTF-8, no CR."""
    if b"\r" in data or not is_utf8(data):
        return False
    ws, find = _WS, data.find
    for k in range(i, b + 1):
        start, end = starts[k] - first, ends[k] - first
        # (the byte after each record but the last is the one between it and the next)
        if data[start] in ws or data[end - 1] in ws or find(b"\n", start, end) >= 0 or (k < b and data[end] != 0x0A):
            return False
    return True


def prove_loads(block: Block, safe: bytearray) -> None:
    """Set ``safe[k]`` for each record ``k`` of a clean block that omp surely loads (what
    ``omp_crash_reason`` would say None of); the others are left to it."""
    assert block.data is not None
    try:
        probes = _DECODER.decode_lines(block.data)
    except (msgspec.MsgspecError, RecursionError):
        return
    if len(probes) != block.last - block.first + 1:
        return
    for k, p in enumerate(probes, block.first):
        if _loads(p):
            safe[k] = 1


def _throws(usage: Any) -> bool:
    """``usage.cost.total`` throws: an object whose cost is missing or null (null usage does not)."""
    if type(usage) is not _Usage:
        return False
    cost = usage.cost
    return cost is _ABSENT or bytes(cost) == b"null"


def _starts_list_or_string(raw: msgspec.Raw) -> bool:
    return raw is not _ABSENT and memoryview(raw)[0] in _LIST_OR_STRING


def _loads(p: _Probe) -> bool:
    kind = p.type
    if kind == "message":
        m = p.message
        if type(m) is not _Message:
            return False
        role = m.role
        if role == "assistant":
            if _throws(m.usage) or not _starts_list_or_string(m.content):
                return False
            return not (memoryview(m.content)[0] == 0x22 and m.stopReason == "error")
        return not (role == "toolResult" and m.toolName == "task")
    if kind == "model_usage":
        return not _throws(p.usage)
    if kind == "ttsr_injection":
        return _starts_list_or_string(p.injectedRules)
    return True
