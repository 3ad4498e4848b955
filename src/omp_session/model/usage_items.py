"""Where one entry spent tokens: an assistant message, a ``model_usage`` side call, or each agent
of a ``task`` result. One set of rules for ``stats`` (ops/stats) and a store's derived usage
table (catalog/derived), so the two count the same requests."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from omp_session.js.date import date_parse

__all__ = ["UsageItem", "usage_items", "usage_ms"]

_LEVELS: Final = frozenset({"off", "minimal", "low", "medium", "high", "xhigh", "max"})  # thinking suffixes
# where a task result or one of its agents names the model that spent: the settled run's
# ``resolvedModel`` (``provider/id[:level]``), its ``resolvedModelIdentity`` (``provider/id``), or a
# plain ``model`` as other omp builds write it (``details.model``)
_MODEL_KEYS: Final = ("resolvedModel", "resolvedModelIdentity", "model")


@dataclass(frozen=True, slots=True)
class UsageItem:
    kind: str  # "assistant" | "model_usage" | "task"
    n: int  # a task's agent number (0 otherwise)
    usage: dict[str, Any]  # as recorded: counts are read by the caller
    timestamp: float | None  # ms since the epoch
    provider: Any  # as recorded (not checked to be a string)
    model: Any
    key: str | None  # "<entry id> <entry timestamp>[ <n>]": what a fork's copy shares with its original
    agent: str | None  # task items: the subagent whose session file holds the same calls


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def usage_ms(message_ts: Any, entry_ts: Any) -> float | None:
    """A usage record's time: the message's ``timestamp`` (ms) when it is one, else the entry's."""
    if message_ts.__class__ in (int, float) and math.isfinite(message_ts) and message_ts > 0:
        return float(message_ts)
    ms = date_parse(entry_ts) if isinstance(entry_ts, str) else math.nan
    return ms if math.isfinite(ms) else None


def _split_model(resolved: Any) -> tuple[str | None, str | None]:
    """A task result's ``resolvedModel``: ``provider/model`` with an optional ``:thinking`` suffix."""
    if not isinstance(resolved, str) or "/" not in resolved:
        return None, _str(resolved)
    provider, model = resolved.split("/", 1)
    base, _, level = model.rpartition(":")
    if level in _LEVELS:  # a model id may hold a colon of its own (``...-v1:0``)
        model = base
    return provider or None, model or None


def _named_model(d: dict[str, Any]) -> tuple[str | None, str | None]:
    for k in _MODEL_KEYS:
        provider, model = _split_model(d.get(k))
        if model is not None:
            return provider, model
    return None, None


def _task_items(message: dict[str, Any], ms: float | None, key: str | None) -> list[UsageItem]:
    details = message.get("details")
    usage = details.get("usage") if isinstance(details, dict) else None
    if not isinstance(usage, dict):
        return []  # omp counts nothing either
    assert isinstance(details, dict)
    overall = _named_model(details)
    results = details.get("results")
    if isinstance(results, list) and results and all(isinstance(r, dict) for r in results) \
            and any(isinstance(r.get("usage"), dict) for r in results):
        # details.usage is the sum of the results' usage (a result whose agent recorded none has no
        # ``usage`` and adds nothing): one item per agent can be matched to its file
        out = []
        for n, r in enumerate(results):
            if not isinstance(r.get("usage"), dict):
                continue
            provider, model = _named_model(r)
            if model is None:
                provider, model = overall
            agent = r.get("id") if isinstance(r.get("id"), str) else None
            out.append(UsageItem("task", n, r["usage"], ms, provider, model,
                                 None if key is None else f"{key} {n}", agent))
        return out
    provider, model = overall
    if model is None and isinstance(results, list):
        # the agents named their models but not their usage: the sum is theirs when they agree
        named = {_named_model(r) for r in results if isinstance(r, dict)}
        if len(named) == 1:
            provider, model = named.pop()
    return [UsageItem("task", 0, usage, ms, provider, model, key, None)]


def usage_items(entry: Any, keyed: bool = True) -> list[UsageItem]:
    """The usage items of one record (any JSON value). ``keyed``: with the key a fork's copy
    shares (not in a session omp migrates: its ids are made up on every load)."""
    if not isinstance(entry, dict):
        return []
    kind = entry.get("type")
    eid, ets = entry.get("id"), entry.get("timestamp")
    key = f"{eid} {ets}" if keyed and isinstance(eid, str) and eid and isinstance(ets, str) else None
    if kind == "model_usage":
        usage = entry.get("usage")
        if not isinstance(usage, dict):
            return []
        return [UsageItem("model_usage", 0, usage, usage_ms(None, ets), entry.get("provider"), entry.get("model"), key,
                          None)]
    if kind != "message":
        return []
    message = entry.get("message")
    if not isinstance(message, dict):
        return []
    role = message.get("role")
    if role == "assistant":
        usage = message.get("usage")
        if not isinstance(usage, dict):
            return []
        return [UsageItem("assistant", 0, usage, usage_ms(message.get("timestamp"), ets), message.get("provider"),
                          message.get("model"), key, None)]
    if role == "toolResult" and message.get("toolName") == "task":
        return _task_items(message, usage_ms(message.get("timestamp"), ets), key)
    return []
