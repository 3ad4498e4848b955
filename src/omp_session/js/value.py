"""JavaScript value semantics over parsed JSON, as omp's context code reads its entries.

Truthiness, ``??``, strict equality, ``String()`` and the ``TypeError`` cases
omp hits on damaged or oddly typed entries: :class:`JSTypeError` marks where
omp throws, and callers turn it into :class:`ContextError` naming the entry.
JavaScript ``undefined`` is the codec's :data:`~omp_session.codec.UNDEFINED`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Final

from omp_session.errors import JSTypeError

from .codec import UNDEFINED
from .date import js_string, new_date_ms

__all__ = [
    "JS_S",
    "JS_SPACE",
    "JS_SPACE_SET",
    "MISSING",
    "describe",
    "get",
    "get_opt",
    "is_number",
    "is_record",
    "is_undef",
    "iterate",
    "js_key",
    "ms",
    "nullish",
    "num_out",
    "property_key",
    "put",
    "strict_eq",
    "template_string",
    "trim_nonempty",
    "truthy",
    "utf16_len",
    "with_js_key_order",
]


MISSING: Final = object()
JS_SPACE: Final = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                   "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
JS_SPACE_SET: Final = frozenset(JS_SPACE)
JS_S: Final = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"


def is_undef(value: Any) -> bool:
    return value is UNDEFINED


def get(obj: Any, key: str) -> Any:
    """``obj[key]`` for a JSON value; UNDEFINED when absent; throws on null/undefined like JS."""
    if obj.__class__ is dict or isinstance(obj, dict):
        return obj.get(key, UNDEFINED)
    if obj is None or obj is UNDEFINED:
        raise JSTypeError(f"{'null' if obj is None else 'undefined'} is not an object (reading '{key}')")
    return UNDEFINED  # primitives and arrays have none of the properties omp reads


def get_opt(obj: Any, key: str) -> Any:
    """``obj?.[key]``."""
    if obj is None or is_undef(obj):
        return UNDEFINED
    return get(obj, key)


def nullish(value: Any) -> bool:
    return value is None or is_undef(value)


def truthy(value: Any) -> bool:
    if value is None or is_undef(value) or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, int | float):
        return value == value and value != 0
    if isinstance(value, str):
        return len(value) > 0
    return True


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_record(value: Any) -> bool:
    """pi-utils ``isRecord``: a non-null, non-array object."""
    return isinstance(value, dict)


_NULL_KEY: Final = ("null",)
_UNDEF_KEY: Final = ("undefined",)
_NAN_KEY: Final = ("nan",)
_BOOL_TAG: Final = object()
_OBJ_TAG: Final = object()


def js_key(value: Any) -> Any:
    """A hashable stand-in with JS SameValueZero equality (Map/Set keys, ``===`` minus NaN)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return (_BOOL_TAG, value)
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf if value > 0 else -math.inf
        return _NAN_KEY if number != number else number
    if value is None:
        return _NULL_KEY
    if is_undef(value):
        return _UNDEF_KEY
    return (_OBJ_TAG, id(value))


def strict_eq(a: Any, b: Any) -> bool:
    """JavaScript ``a === b``."""
    ka = js_key(a)
    return ka is not _NAN_KEY and ka == js_key(b)


def iterate(value: Any, what: str) -> Iterator[Any]:
    """``for (x of value)``: arrays and strings (by code point) iterate; anything else throws."""
    if isinstance(value, list | str):
        return iter(value)
    raise JSTypeError(f"{what} is not iterable")


def trim_nonempty(value: Any, what: str) -> bool:
    """``value.trim().length > 0``, throwing like JS when ``value`` is not a string."""
    if not isinstance(value, str):
        raise JSTypeError(f"{what}.trim is not a function")
    return len(value.strip(JS_SPACE)) > 0


def utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def ms(value: Any) -> int | float:
    """``new Date(value).getTime()`` as an int when it is a valid time, else NaN."""
    t = new_date_ms(value)
    return t if t != t else int(t)


def num_out(value: Any) -> Any:
    """A double for output: integral values as int, the rest as float (strings pass through)."""
    if isinstance(value, float) and value == value and not math.isinf(value) and value.is_integer():
        return int(value)
    return value


def with_js_key_order(obj: dict[str, Any]) -> dict[str, Any]:
    """Reorder like a JS object: array-index keys first (ascending), then insertion order."""
    index_keys = [k for k in obj if _is_array_index(k)]
    if not index_keys:
        return obj
    ordered = {k: obj[k] for k in sorted(index_keys, key=int)}
    ordered.update((k, v) for k, v in obj.items() if not _is_array_index(k))
    return ordered


def _is_array_index(key: str) -> bool:
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1


def property_key(value: Any) -> str:
    return value if isinstance(value, str) else js_string(value)


def template_string(value: Any) -> str:
    """The text a template literal ``${value}`` produces."""
    if is_undef(value):
        return "undefined"
    return js_string(value)


def put(target: dict[str, Any], key: str, value: Any) -> None:
    if not is_undef(value):
        target[key] = value


def describe(entry: Any) -> str:
    if isinstance(entry, dict):
        ident = entry.get("id", UNDEFINED)
        return f"entry {'(no id)' if is_undef(ident) else repr(ident)}"
    return f"record {entry!r}"[:80]
