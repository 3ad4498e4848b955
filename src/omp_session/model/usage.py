"""omp's ``getUsageStatistics`` (spec S13.1): token and cost totals over a session's entries."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import Any, Final

from omp_session.errors import ContextError, JSTypeError
from omp_session.js.codec import UNDEFINED
from omp_session.js.value import get, get_opt, is_undef, nullish, num_out, truthy

from .jsstring import describe, js_string, template_string

__all__ = ["UsageSum", "branch_and_all_usage", "usage_statistics"]

_USAGE_FIELDS: Final = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


def _to_primitive(value: Any) -> Any:
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return js_string(value)
    return value


def _to_number(value: Any) -> float:
    if is_undef(value):
        return math.nan
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _js_add(a: Any, b: Any) -> Any:
    """JavaScript ``a + b``: string concatenation when either side is (or becomes) a string."""
    pa, pb = _to_primitive(a), _to_primitive(b)
    if isinstance(pa, str) or isinstance(pb, str):
        return template_string(pa) + template_string(pb)
    return _to_number(pa) + _to_number(pb)


def _entry_usage(entry: Any) -> Any:
    kind = get(entry, "type")
    if kind == "model_usage":
        return get(entry, "usage")
    if kind != "message":
        return UNDEFINED
    message = get(entry, "message")
    role = get(message, "role")
    if role == "assistant":
        return get(message, "usage")
    if role == "toolResult" and get(message, "toolName") == "task":
        details = get(message, "details")
        if isinstance(details, dict | list):
            usage = get(details, "usage")
            return usage if isinstance(usage, dict | list) else UNDEFINED
    return UNDEFINED


def reset_usage_cost(entry: Any) -> None:
    """Zero the money an entry's usage records, in place (omp's ``resetInheritedCost`` fork
    option): tokens stay, cost becomes zeros, credits and premium requests go."""
    usage = _entry_usage(entry)
    if isinstance(usage, dict):
        usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        usage.pop("credits", None)
        usage.pop("premiumRequests", None)


_HUGE_INT: Final = 2**1000


def _plain_usage(usage: Any) -> bool:
    """Every summed field a plain number (Python would raise on float + an int beyond doubles)."""
    if usage.__class__ is not dict:
        return False
    cost = usage.get("cost")
    if cost.__class__ is not dict:
        return False
    values: tuple[Any, ...] = (usage.get("input"), usage.get("output"), usage.get("cacheRead"),
                               usage.get("cacheWrite"), usage.get("totalTokens"), cost.get("total"))
    for value in values:
        kind = value.__class__
        if kind is not float and (kind is not int or not -_HUGE_INT < value < _HUGE_INT):
            return False
    return True


class UsageSum:
    """The running sum of :func:`usage_statistics`, one entry at a time."""

    __slots__ = ("extras_numeric", "numeric", "totals")

    def __init__(self) -> None:
        self.totals: dict[str, Any] = {name: 0.0 for name in (*_USAGE_FIELDS, "orchestrationInput",
                                                              "orchestrationOutput", "orchestrationCacheRead",
                                                              "premiumRequests", "cost")}
        self.numeric = True  # all of input..totalTokens and cost are still numbers
        self.extras_numeric = True  # and the orchestration parts and premiumRequests

    def add(self, entry: Any) -> None:
        """Add ``entry``'s usage; raises :class:`ContextError` where omp throws."""
        totals = self.totals
        try:
            usage = _entry_usage(entry)
            if not truthy(usage):
                return
            if self.numeric and _plain_usage(usage):
                # The common shape: every field a number, so JS `+` is float addition.
                for name in _USAGE_FIELDS:
                    totals[name] += usage[name]
                totals["cost"] += usage["cost"]["total"]
            else:
                for name in _USAGE_FIELDS:
                    totals[name] = _js_add(totals[name], get(usage, name))
                totals["cost"] = _js_add(totals["cost"], get(get(usage, "cost"), "total"))
                self.numeric = all(totals[name].__class__ is float for name in (*_USAGE_FIELDS, "cost"))
            # `x ?? 0` is still added: a total that became a string gains a "0".
            orchestration = get(usage, "orchestration")
            for name, part in (("orchestrationInput", "input"), ("orchestrationOutput", "output"),
                               ("orchestrationCacheRead", "cacheRead")):
                value = get_opt(orchestration, part)
                if not (nullish(value) and totals[name].__class__ is float):
                    totals[name] = _js_add(totals[name], 0 if nullish(value) else value)
            premium = get(usage, "premiumRequests")
            if not (nullish(premium) and totals["premiumRequests"].__class__ is float):
                totals["premiumRequests"] = _js_add(totals["premiumRequests"], 0 if nullish(premium) else premium)
            self.extras_numeric = self._extras_are_numbers()
        except JSTypeError as exc:
            raise ContextError(f"{describe(entry)}: {exc}") from None

    def add_numbers(self, numbers: Sequence[int | float]) -> bool:
        """:meth:`add` of a usage object of exactly the five counts and ``cost.total``, given in
        that order, each a float or an int of at most 64 bits, as JSON decoders give them (nothing
        else, no ``orchestration`` or ``premiumRequests``); False, having added nothing, once a total
        is no longer a number (then :meth:`add` the entry)."""
        if not self.numeric:
            return False
        t = self.totals
        i, o, cr, cw, tt, cost = numbers
        t["input"] += i
        t["output"] += o
        t["cacheRead"] += cr
        t["cacheWrite"] += cw
        t["totalTokens"] += tt
        t["cost"] += cost
        # `x ?? 0` of the absent parts is still added to a total that became a string
        if not self.extras_numeric:
            for name in ("orchestrationInput", "orchestrationOutput", "orchestrationCacheRead", "premiumRequests"):
                if t[name].__class__ is not float:
                    t[name] = _js_add(t[name], 0)
        return True

    def _extras_are_numbers(self) -> bool:
        t = self.totals
        return (t["orchestrationInput"].__class__ is t["orchestrationOutput"].__class__
                is t["orchestrationCacheRead"].__class__ is t["premiumRequests"].__class__ is float)

    def result(self) -> dict[str, Any]:
        return {name: num_out(value) for name, value in self.totals.items()}


def usage_statistics(entries: Iterable[Any]) -> dict[str, Any]:
    """omp's ``getUsageStatistics()``: token and cost totals over every entry (all branches).

    Sums assistant ``usage``, ``task`` tool results' ``details.usage`` and
    ``model_usage`` entries with JavaScript ``+`` (so a string field turns the
    total into a string, a missing one into NaN). Raises :class:`ContextError`
    where omp throws while indexing (a usage without ``cost``, a ``message``
    entry without ``message``): omp then cannot open the session at all.
    """
    total = UsageSum()
    for entry in entries:
        total.add(entry)
    return total.result()


def branch_and_all_usage(peek: Callable[[int], Any], branch: Sequence[int], every: Sequence[int],
                         numbers: Callable[[int], Sequence[int | float] | None] | None = None
                         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(usage_statistics(peek(k) for k in branch), usage_statistics(peek(k) for k in every))``
    (``every`` ascending, ``branch`` a part of it), each entry decoded once when ``branch`` is
    ascending too (a branch of a file omp appended to: each entry after its parent). Sums are
    made in the same order as the two passes make them, so they are the same floats; the first
    error is the branch's, as with the branch summed first (two passes then say which).

    ``numbers(k)``, when given, is entry ``k``'s usage as :meth:`UsageSum.add_numbers` takes it
    when it is that plain shape (else None): such an entry is then not decoded at all."""
    on_branch = set(branch)
    if all(a < b for a, b in pairwise(branch)) and on_branch.issubset(every):
        mine, whole = UsageSum(), UsageSum()
        try:
            for k in every:
                plain = numbers(k) if numbers is not None else None
                if plain is not None and whole.add_numbers(plain):
                    if k in on_branch and not mine.add_numbers(plain):
                        mine.add(peek(k))
                    continue
                entry = peek(k)
                whole.add(entry)
                if k in on_branch:
                    mine.add(entry)
            return mine.result(), whole.result()
        except ContextError:
            pass  # summed apart below, so that the error raised is the one the branch meets first
    return usage_statistics(peek(k) for k in branch), usage_statistics(peek(k) for k in every)
