"""JavaScript ``String(value)`` for parsed-JSON values at any nesting depth.

``String([[...[1]...]])`` joins nested arrays, so a value nested 100,000 levels deep (a fuzzed
``usage.input``, an assistant ``model``, a ``timestamp``) must be joined without recursing, as
``omp_session.js.date.js_string`` now does (issue 16); these are the views' helpers on top of it. omp 18.2.3 answers at a few thousand levels and throws ``RangeError`` far
deeper; we always answer, with the text omp gives where it gives one (docs/compatibility.md).
"""

from __future__ import annotations

from typing import Any

from omp_session.js.codec import UNDEFINED, stringify
from omp_session.js.date import js_string, new_date_ms
from omp_session.js.value import is_undef

__all__ = ["date_ms", "describe", "js_string", "property_key", "template_string"]


def template_string(value: Any) -> str:
    """The text a template literal ``${value}`` produces."""
    return "undefined" if is_undef(value) else js_string(value)


def property_key(value: Any) -> str:
    """The property key ``obj[value]`` uses."""
    return value if isinstance(value, str) else js_string(value)


def date_ms(value: Any) -> float:
    """``new Date(value).getTime()`` for a parsed-JSON value, arrays joined without recursion."""
    return new_date_ms(js_string(value) if isinstance(value, list | tuple) else value)


def _shown(value: Any) -> str:
    if isinstance(value, dict | list | tuple):
        return (stringify(value) or "undefined")[:60]  # repr() recurses once per level
    return repr(value)


def describe(entry: Any) -> str:
    """``entry 'ID'`` or ``record …`` for an error message, at any nesting depth."""
    if isinstance(entry, dict):
        ident = entry.get("id", UNDEFINED)
        return f"entry {'(no id)' if is_undef(ident) else _shown(ident)}"
    return f"record {_shown(entry)}"[:80]
