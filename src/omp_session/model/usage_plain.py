"""The common usage record read without building the entry: an assistant message whose usage is
five plain token counts and a ``cost.total``.

Nearly every usage record of a real session has that shape. Decoded into the structs below, its
text, thinking and tool calls are skipped by the parser instead of built as Python strings, and
the record and omp's running sum take the numbers as they are. Anything else (another role, a
missing or odd field, an ``orchestration`` or ``premiumRequests`` part, an integer beyond 64
bits, which msgspec keeps and the full decode makes a float; an array or object where a string
is expected) gives None, and the caller reads the entry whole, as before.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

from omp_session.format.usage_numbers import INT_MAX as _INT_MAX
from omp_session.format.usage_numbers import INT_MIN as _INT_MIN
from omp_session.format.usage_numbers import Usage as _Usage
from omp_session.format.usage_numbers import numbers_of
from omp_session.js.codec import UNDEFINED

__all__ = ["Numbers", "PlainAssistant", "plain_assistant", "plain_reader", "usage_numbers", "usage_reader"]


class _Message(msgspec.Struct):
    role: Any = UNDEFINED
    usage: _Usage | None = None
    provider: Any = UNDEFINED
    model: Any = UNDEFINED
    timestamp: Any = UNDEFINED


class _Entry(msgspec.Struct):
    type: Any = UNDEFINED
    id: Any = UNDEFINED
    timestamp: Any = UNDEFINED
    # a message that is not an object, a usage of another shape: the record is refused whole
    message: _Message | None = None


_ENTRY: Final = msgspec.json.Decoder(_Entry)
_UNDECODABLE: Final = (msgspec.MsgspecError, RecursionError)


_SCALARS: Final = frozenset({str, float, bool, type(None), type(UNDEFINED)})
_SHARED_AS_IS: Final = frozenset({str, type(None), type(UNDEFINED)})


def _as_decoded(plain: PlainAssistant) -> bool:
    """Whether msgspec gave ``plain``'s values as the full decode gives them (a nested value is not
    looked into: an array or object where a scalar is expected is left to the full decode)."""
    return all(map(_scalar_as_decoded, (plain.entry_id, plain.entry_timestamp, plain.message_timestamp,
                                        plain.provider, plain.model)))


def _scalar_as_decoded(value: Any) -> bool:
    kind = value.__class__
    return kind is str or kind in _SCALARS or (kind is int and _INT_MIN <= value <= _INT_MAX)


class PlainAssistant:
    """What the report and omp's sum read of such an entry."""

    __slots__ = ("entry_id", "entry_timestamp", "message_timestamp", "model", "numbers", "provider")

    def __init__(self, entry: _Entry, message: _Message, numbers: tuple[int | float, ...]) -> None:
        self.entry_id = entry.id
        self.entry_timestamp = entry.timestamp
        self.message_timestamp = message.timestamp
        self.provider = message.provider
        self.model = message.model
        self.numbers = numbers  # input, output, cacheRead, cacheWrite, totalTokens, cost.total


def plain_assistant(raw: bytes | memoryview) -> PlainAssistant | None:
    """The record ``raw`` as a :class:`PlainAssistant`, or None when it is anything else."""
    try:
        entry = _ENTRY.decode(raw)
    except _UNDECODABLE:
        return None
    message = entry.message
    if entry.type != "message" or message is None or message.role != "assistant":
        return None
    numbers = None if message.usage is None else numbers_of(message.usage)
    if numbers is None:
        return None
    plain = PlainAssistant(entry, message, numbers)
    return plain if _as_decoded(plain) else None


def plain_reader(s: Any) -> Callable[[int], PlainAssistant | None]:
    """For the session ``s``: entry ``k`` as :func:`plain_assistant` reads it from its bytes, or
    None where those bytes are not what the session reads (a migrated file, a record decoded or
    changed in memory, one holding a blob reference, resolved on decode) or not that shape."""
    if s.migrated:
        return lambda k: None
    j = s.journal
    changed = _not_as_stored(j)
    raw = j.raw_in_order()  # the sums read every assistant's in file order
    # one object per provider and model name (a forked reader's results are pickled: each name
    # once); only strings are shared, as equal keys 1 and true would otherwise be one
    names: dict[str, str] = {}

    def read(k: int) -> PlainAssistant | None:
        if k + 1 in changed:
            return None
        plain = plain_assistant(raw(k + 1))
        if plain is not None:
            if type(plain.model) is str:
                plain.model = names.setdefault(plain.model, plain.model)
            if type(plain.provider) is str:
                plain.provider = names.setdefault(plain.provider, plain.provider)
        return plain

    return read


def _not_as_stored(j: Any) -> set[int]:
    """The records whose bytes are not what the session reads: decoded or changed in memory, or
    holding a blob reference (resolved on decode)."""
    changed = set(j.values)
    changed.update(j.blob_records())
    return changed


Numbers = tuple[Any, Any, Sequence[int | float]]  # an assistant's model, provider and usage numbers


def usage_reader(s: Any) -> Callable[[int], Numbers | None]:
    """For the session ``s``: entry ``k``'s (model, provider, usage numbers) where
    :func:`plain_reader` finds it a plain assistant usage, else None (such an entry may also be
    None: its caller reads it whole), the same numbers either way. From the numbers the scan kept
    when the session was read with ``usage=True`` (nothing read again), else from the entry's bytes.
    Quickest asked for in file order."""
    j = s.journal
    if j.usage_records is None or s.migrated:
        plain = plain_reader(s)

        def from_bytes(k: int) -> Numbers | None:
            found = plain(k)
            return None if found is None else (found.model, found.provider, found.numbers)

        return from_bytes
    changed = _not_as_stored(j)
    records, numbers, heads = j.usage_records, j.usage_numbers, j.heads
    after = [0]  # where the last record asked for was found: the next is usually the next one

    def kept(k: int) -> Numbers | None:
        r = k + 1
        at = after[0]
        if at >= len(records) or records[at] != r:
            at = bisect_left(records, r)
            if at == len(records) or records[at] != r:
                return None
        after[0] = at + 1
        if r in changed:
            return None
        head = heads[r]
        model, provider = head.model, head.provider
        # a string, null or nothing, as plain_assistant reads it; anything else is read whole: a
        # head is shared between records whose fields are equal, and true, 1 and 1.0 are (the
        # entry's id and timestamps are not looked at: they change neither sums nor models)
        if model.__class__ not in _SHARED_AS_IS or provider.__class__ not in _SHARED_AS_IS:
            return None
        return model, provider, numbers[6 * at:6 * at + 6]

    return kept


def usage_numbers(s: Any) -> Callable[[int], Sequence[int | float] | None]:
    """:func:`usage_reader`'s numbers alone (what the sums of ``branch_and_all_usage`` take)."""
    read = usage_reader(s)

    def numbers(k: int) -> Sequence[int | float] | None:
        plain = read(k)
        return None if plain is None else plain[2]

    return numbers
