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

from collections.abc import Callable
from typing import Any, Final

import msgspec

from omp_session.js.codec import UNDEFINED

__all__ = ["PlainAssistant", "plain_assistant", "plain_reader"]

_ABSENT: Any = msgspec.Raw()


class _Cost(msgspec.Struct):
    total: int | float


class _Usage(msgspec.Struct):
    input: int | float
    output: int | float
    cacheRead: int | float
    cacheWrite: int | float
    totalTokens: int | float
    cost: _Cost
    orchestration: msgspec.Raw = _ABSENT
    premiumRequests: msgspec.Raw = _ABSENT


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
# msgspec keeps a JSON integer of any size; the full decode (orjson, and the exact decoder after
# it, as js/codec.py) gives a float beyond these, as omp's JSON.parse gives a double
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1


_SCALARS: Final = frozenset({str, float, bool, type(None), type(UNDEFINED)})


def _as_decoded(plain: PlainAssistant) -> bool:
    """Whether msgspec gave ``plain``'s values as the full decode gives them (a nested value is not
    looked into: an array or object where a scalar is expected is left to the full decode)."""
    numbers = plain.numbers  # ints and floats: two comparisons in C rule out a wide integer
    if max(numbers) > _INT_MAX or min(numbers) < _INT_MIN:
        return False
    for value in (plain.entry_id, plain.entry_timestamp, plain.message_timestamp, plain.provider, plain.model):
        kind = value.__class__
        if kind is not str and kind not in _SCALARS and (kind is not int or not _INT_MIN <= value <= _INT_MAX):
            return False
    return True


class PlainAssistant:
    """What the report and omp's sum read of such an entry."""

    __slots__ = ("entry_id", "entry_timestamp", "message_timestamp", "model", "numbers", "provider")

    def __init__(self, entry: _Entry, message: _Message, usage: _Usage) -> None:
        self.entry_id = entry.id
        self.entry_timestamp = entry.timestamp
        self.message_timestamp = message.timestamp
        self.provider = message.provider
        self.model = message.model
        # input, output, cacheRead, cacheWrite, totalTokens, cost.total
        self.numbers = (usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.totalTokens,
                        usage.cost.total)


def plain_assistant(raw: bytes | memoryview) -> PlainAssistant | None:
    """The record ``raw`` as a :class:`PlainAssistant`, or None when it is anything else."""
    try:
        entry = _ENTRY.decode(raw)
    except _UNDECODABLE:
        return None
    message = entry.message
    if entry.type != "message" or message is None or message.role != "assistant":
        return None
    usage = message.usage
    if usage is None or usage.orchestration is not _ABSENT or usage.premiumRequests is not _ABSENT:
        return None
    plain = PlainAssistant(entry, message, usage)
    return plain if _as_decoded(plain) else None


def plain_reader(s: Any) -> Callable[[int], PlainAssistant | None]:
    """For the session ``s``: entry ``k`` as :func:`plain_assistant` reads it from its bytes, or
    None where those bytes are not what the session reads (a migrated file, a record decoded or
    changed in memory, one holding a blob reference, resolved on decode) or not that shape."""
    if s.migrated:
        return lambda k: None
    j = s.journal
    changed = set(j.values)
    changed.update(j.blob_records())
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
