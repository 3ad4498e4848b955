"""The usage object of nearly every assistant message, read by msgspec: five plain token counts
and a ``cost.total``. Shared by the scan that keeps them (reader.py, ``usage=True``) and the
entry-by-entry reader (model/usage_plain.py), so both accept exactly the same shapes.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["ABSENT", "INT_MAX", "INT_MIN", "Usage", "numbers_of", "plain_numbers"]

ABSENT: Final = msgspec.Raw()
# msgspec keeps a JSON integer of any size; the full decode (orjson, and the exact decoder after
# it, as js/codec.py) gives a float beyond these, as omp's JSON.parse gives a double
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**64 - 1


class _Cost(msgspec.Struct):
    total: int | float


class Usage(msgspec.Struct):
    input: int | float
    output: int | float
    cacheRead: int | float
    cacheWrite: int | float
    totalTokens: int | float
    cost: _Cost
    orchestration: msgspec.Raw = ABSENT
    premiumRequests: msgspec.Raw = ABSENT


_USAGE: Final = msgspec.json.Decoder(Usage)


def numbers_of(usage: Usage) -> tuple[int | float, ...] | None:
    """input, output, cacheRead, cacheWrite, totalTokens and cost.total of a plain usage (no
    ``orchestration`` or ``premiumRequests`` part, every integer one the full decode keeps as it
    is), or None."""
    if usage.orchestration is not ABSENT or usage.premiumRequests is not ABSENT:
        return None
    numbers = (usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.totalTokens, usage.cost.total)
    # ints and floats: two comparisons in C rule out a wide integer
    return None if max(numbers) > INT_MAX or min(numbers) < INT_MIN else numbers


def plain_numbers(raw: bytes | memoryview | msgspec.Raw) -> tuple[int | float, ...] | None:
    """:func:`numbers_of` the usage object ``raw`` (its JSON bytes), or None for any other value."""
    try:
        return numbers_of(_USAGE.decode(raw))
    except (msgspec.MsgspecError, RecursionError):
        return None
