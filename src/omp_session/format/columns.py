"""Compact columns for the envelope of a large session: ids and parentIds without a Python
string per entry.

A 1 GB session has about 330,000 entries; as Python strings their ids alone cost ~20 MB and the
parentIds (the same strings) keep them alive. When every id is a distinct string of one width
and ASCII (omp's 8-hex ids), they fit in one bytes object, and every parentId that names an entry
is that entry's position, which the path index already holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any, Final, overload

__all__ = ["FixedWidthIds", "Grown", "ParentIds", "compact_ids"]


_BLOCK: Final = 4096  # ids decoded at a time by an iteration (a few hundred KB of strings alive)


class FixedWidthIds(Sequence[str]):
    """Equal-width ASCII ids packed in one bytes object."""

    __slots__ = ("_blob", "_n", "_width")

    def __init__(self, blob: bytes, width: int) -> None:
        self._blob = blob
        self._width = width
        self._n = len(blob) // width if width else 0

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, k: int) -> str: ...
    @overload
    def __getitem__(self, k: slice) -> list[str]: ...
    def __getitem__(self, k: int | slice) -> str | list[str]:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._n))]
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError(k)
        w = self._width
        return self._blob[k * w:(k + 1) * w].decode("ascii")

    def __iter__(self) -> Iterator[str]:
        # a block of ids decoded at once and cut as text, the blocks chained in C: a generator
        # decoding each id took most of building the id index (twice over the ids: 0.38 s at 1 GB)
        return chain.from_iterable(self._blocks())

    def _blocks(self) -> Iterator[list[str]]:
        blob, w, n = self._blob, self._width, self._n
        for lo in range(0, n, _BLOCK):
            text = blob[lo * w:min(n, lo + _BLOCK) * w].decode("ascii")
            yield [text[i:i + w] for i in range(0, len(text), w)]

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        if type(value) is not str or len(value) != self._width or not value.isascii():
            raise ValueError(value)
        needle, w = value.encode("ascii"), self._width
        at = self._blob.find(needle, start * w, (self._n if stop is None else stop) * w)
        while at >= 0 and at % w:
            at = self._blob.find(needle, at + 1)
        if at < 0:
            raise ValueError(value)
        return at // w

    def __contains__(self, value: object) -> bool:
        try:
            self.index(value)
        except ValueError:
            return False
        return True


class ParentIds(Sequence[Any]):
    """parentIds rebuilt from the path index: entry ``k``'s parentId is the id of entry
    ``parents[k]`` when that is an entry; ``others`` holds the rest as they were (null, absent,
    unknown ids, odd values)."""

    __slots__ = ("_ids", "_others", "_parents")

    def __init__(self, ids: Sequence[str], parents: Sequence[int], others: dict[int, Any]) -> None:
        self._ids = ids
        self._parents = parents
        self._others = others

    def __len__(self) -> int:
        return len(self._parents)

    @overload
    def __getitem__(self, k: int) -> Any: ...
    @overload
    def __getitem__(self, k: slice) -> list[Any]: ...
    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        p = self._parents[k]
        return self._ids[p] if p >= 0 else self._others[k]


class Grown(Sequence[Any]):
    """A column that entries were appended to: the loaded column, unchanged, plus a list.

    Appending to a session must not unpack its compact columns (that would cost a Python object
    per loaded entry on the first append)."""

    __slots__ = ("_base", "_n", "tail")

    def __init__(self, base: Sequence[Any]) -> None:
        self._base = base
        self._n = len(base)
        self.tail: list[Any] = []

    def append(self, value: Any) -> None:
        self.tail.append(value)

    def __len__(self) -> int:
        return self._n + len(self.tail)

    @overload
    def __getitem__(self, k: int) -> Any: ...
    @overload
    def __getitem__(self, k: slice) -> list[Any]: ...
    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if k < self._n:
            return self._base[k]
        return self.tail[k - self._n]

    def __iter__(self) -> Iterator[Any]:
        yield from self._base
        yield from self.tail

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        stop = len(self) if stop is None else stop
        if start < self._n:
            try:
                return self._base.index(value, start, min(stop, self._n))
            except ValueError:
                pass
        at = self.tail.index(value, max(start - self._n, 0), max(stop - self._n, 0))
        return self._n + at

    def __contains__(self, value: object) -> bool:
        try:
            self.index(value)
        except ValueError:
            return False
        return True


def compact_ids(ids: Sequence[Any], parents: Sequence[Any], parent_index: Sequence[int],
                breaks: Sequence[int]) -> tuple[FixedWidthIds, ParentIds] | None:
    """The compact columns, or None when the ids are not all of one width and ASCII.

    ``ids`` must be distinct strings and ``parent_index`` their path index (so an entry whose
    parent index is -1 is a root, and every root is in ``breaks`` or is entry 0).
    """
    if not ids:
        return None
    width = len(ids[0])
    if not width or set(map(len, ids)) != {width}:
        return None
    joined = "".join(ids)
    if not joined.isascii():
        return None
    packed = FixedWidthIds(joined.encode("ascii"), width)
    others = {k: parents[k] for k in (0, *breaks) if k < len(parents) and parent_index[k] < 0}
    return packed, ParentIds(packed, parent_index, others)
