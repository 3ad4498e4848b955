"""The validator's streaming pass over every entry (spec S14 V5, V8 collection, V11, V12, V15, V16,
V19; S1.4.7 for what crashes omp).

Entries are decoded one block of lines at a time into small msgspec structs that keep only the
fields the checks read: message text, images and tool arguments are skipped by the parser, never
materialised, and nothing decoded outlives its block. Records the fast decoder rejects (non-objects,
odd shapes, invalid UTF-8) fall back to a full lenient decode of that one record.
"""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass, field
from typing import Any

import msgspec

from omp_session.diagnostics import Severity
from omp_session.format.gc_pause import gc_paused
from omp_session.format.reader import Journal, decode_record
from omp_session.format.split import forked, later_part
from omp_session.format.utf8 import first_invalid_utf8
from omp_session.js.codec import UNDEFINED
from omp_session.js.date import date_parse

from .fast import (
    ISO_TIMESTAMP,
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    LabelEntry,
    MessageEntry,
    ToolCallBlock,
    ToolResultMessage,
    decode_clean,
)
from .report import Report

__all__ = ["KNOWN_TYPES", "Collected", "call_key", "scan_entries"]

_BLOCK = 1024 * 1024
# toISOString()'s shape with field ranges Date.parse accepts; anything else is asked of date_parse
_ISO = re.compile(ISO_TIMESTAMP)
TRUNCATION_NOTICE = b"\\n\\n[Session persistence truncated large content]"
KNOWN_TYPES = frozenset({
    "message", "model_change", "thinking_level_change", "service_tier_change", "compaction", "branch_summary",
    "custom", "custom_message", "label", "ttsr_injection", "session_init", "mode_change", "title_change",
    "credential_pin", "model_usage", "reset_boundary"})


class _Block(msgspec.Struct):
    type: Any = UNDEFINED
    id: Any = UNDEFINED


class _Message(msgspec.Struct):
    role: Any = UNDEFINED
    # a union the parser can check without building text: anything else falls back to the slow path
    content: list[_Block] | str | None = UNDEFINED  # type: ignore[assignment]
    usage: Any = UNDEFINED
    toolCallId: Any = UNDEFINED
    stopReason: Any = UNDEFINED


class _Entry(msgspec.Struct):
    type: Any = UNDEFINED
    id: Any = UNDEFINED
    parentId: Any = UNDEFINED
    timestamp: Any = UNDEFINED
    message: _Message | None = UNDEFINED  # type: ignore[assignment]
    firstKeptEntryId: Any = UNDEFINED
    providerReplayThroughEntryId: Any = UNDEFINED
    targetId: Any = UNDEFINED
    fromId: Any = UNDEFINED
    injectedRules: Any = UNDEFINED
    content: Any = UNDEFINED
    display: Any = UNDEFINED
    attribution: Any = UNDEFINED
    model: Any = UNDEFINED
    provider: Any = UNDEFINED
    modelId: Any = UNDEFINED


_DECODER = msgspec.json.Decoder(_Entry)
_FIELDS = _Entry.__struct_fields__


@dataclass
class Collected:
    """What the tree checks need after the pass: small per-kind lists, never whole entries."""

    # toolCall id -> entry indices: providers may reuse ids ("call_0") across turns
    calls: dict[Any, list[int]] = field(default_factory=dict)
    results: list[tuple[int, Any]] = field(default_factory=list)  # (entry index, toolCallId)
    refs: list[tuple[int, str, Any]] = field(default_factory=list)  # (entry index, field, id)
    last_is_object: bool = True
    bad_utf8: int | None = None  # offset of the first invalid UTF-8 byte in a record
    crlf: list[int] = field(default_factory=list)  # offsets of CRs ending a record's line
    headers_after_first: list[int] = field(default_factory=list)
    # (first, last) records of the blocks the strict types did not prove clean: the only ones that
    # may hold a newer omp's keys (newer.py)
    unclean: list[tuple[int, int]] = field(default_factory=list)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, UNDEFINED)
    if isinstance(obj, msgspec.Struct):
        return getattr(obj, name, UNDEFINED)
    return UNDEFINED


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _from_value(value: dict[str, Any]) -> _Entry:
    return _Entry(**{name: value.get(name, UNDEFINED) for name in _FIELDS})


def scan_entries(j: Journal, report: Report, ids: Any) -> Collected:
    """Check every entry (records 1..n-1 of ``j``); ``ids[k]`` is entry k's id as omp holds it.

    On a large file a forked child checks the second part while this process checks the first
    (:func:`~omp_session.format.split.forked`); what it found is taken in after this process's
    own, in file order, so the report is the one a single pass gives.

    No cyclic garbage collection meanwhile (nor in the child, which inherits that): the pass
    makes no cycles, and what it collects (a list per tool call id, a tuple per result) is walked
    again by every full collection, a tenth of the pass on a 1 GB session."""
    with gc_paused():
        return _scan_entries(j, report, ids)


def _scan_entries(j: Journal, report: Report, ids: Any) -> Collected:
    blocks = list(j.runs(1, len(j), _BLOCK))  # each a block of plain JSON lines
    out = Collected()
    mid = later_part(len(blocks), j.size, 55)  # (measured even at about 55 / 45 on the 1 GB session)
    later = None
    if mid < len(blocks):
        rest = blocks[mid:]

        def second_part() -> tuple[_Flat, Report]:
            part_report = Report(report.path, report.journal)
            part = Collected()
            _scan_blocks(j, _Checker(j, part_report, part, ids), rest)
            part_report.journal = None  # not sent back: this process has it
            return _flat(part), part_report

        later = forked(second_part, j.size)
    try:
        _scan_blocks(j, _Checker(j, report, out, ids), blocks[:mid])
    except BaseException:
        if later is not None:
            later.cancel()
        raise
    if later is not None:
        flat, part_report = later()
        _take_in(out, _unflat(flat))
        report.take_in(part_report)
    return out


# What the child sends of its Collected: each tool call id's entry (a list only where there are
# several), and the results' entry indices and call ids apart. Taking it in is on the critical
# path (this process waits for the child first), and these unpickle in a third of the time of a
# dict of one-entry lists and a list of pairs (0.06 s against 0.21 s for 80,000 calls and results).
_Flat = tuple[Collected, dict[Any, "int | list[int]"], "array[int]", list[Any]]


def _flat(part: Collected) -> _Flat:
    calls = {key: at[0] if len(at) == 1 else at for key, at in part.calls.items()}
    at, ids = array("q", [k for k, _ in part.results]), [c for _, c in part.results]
    part.calls, part.results = {}, []
    return part, calls, at, ids


def _unflat(flat: _Flat) -> Collected:
    part, calls, at, ids = flat
    part.calls = {key: [k] if isinstance(k, int) else k for key, k in calls.items()}
    part.results = list(zip(at, ids, strict=True))
    return part


def _take_in(out: Collected, part: Collected) -> None:
    """``part`` (what the blocks after ``out``'s found) added to ``out`` as one pass finds it."""
    calls = part.calls
    for call in calls.keys() & out.calls.keys():  # an id both parts call (rare): its entries in order
        calls[call] = out.calls[call] + calls[call]
    out.calls.update(calls)  # (a key already there keeps its place, as setdefault would)
    out.results += part.results
    out.refs += part.refs
    out.last_is_object = part.last_is_object
    if out.bad_utf8 is None:
        out.bad_utf8 = part.bad_utf8
    out.crlf += part.crlf
    out.headers_after_first += part.headers_after_first
    out.unclean += part.unclean


def _scan_blocks(j: Journal, checker: _Checker, blocks: list[tuple[int, int]]) -> None:
    out, n, values = checker.out, len(j), j.values
    for i, b in blocks:
        first = j.starts[i]
        data = j.read(first, j.ends[b])
        if out.bad_utf8 is None:
            bad = first_invalid_utf8(data)
            if bad is not None:
                out.bad_utf8 = first + bad
        if TRUNCATION_NOTICE in data:
            checker.truncated(data, first)
        if values and any(k in values for k in range(i, b + 1)):
            # a record kept decoded is checked as the session holds it (sanitized, resolved,
            # migrated), each run between such records from its bytes: a label or title decoded
            # before (show asks for them) sent its whole block the slow way, record by record
            run = i
            for k in range(i, b + 2):
                if k <= b and k not in values:
                    continue
                if run < k:
                    _check_run(checker, data[j.starts[run] - first:j.ends[k - 1] - first], run, k - 1)
                if k <= b:
                    out.unclean.append((k, k))
                    checker.entry(k, checker.slow(k))
                run = k + 1
        else:
            _check_run(checker, data, i, b)
        if b + 1 < n and j.starts[b + 1] > j.ends[b] + 1 and j.read(j.ends[b], j.ends[b] + 1) == b"\r":
            out.crlf.append(j.ends[b])


def _check_run(checker: _Checker, data: bytes, i: int, b: int) -> None:
    """Records ``i``..``b``, plain JSON lines whose bytes are ``data``, none kept decoded."""
    clean = decode_clean(data, b - i + 1)
    if clean is not None:
        checker.clean(i, clean)
        return
    checker.out.unclean.append((i, b))
    entries: list[Any] | None
    try:
        entries = _DECODER.decode_lines(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        entries = None
    if entries is None or len(entries) != b - i + 1:
        entries = [checker.slow(k) for k in range(i, b + 1)]
    for offset, entry in enumerate(entries):
        checker.entry(i + offset, entry)


class _Checker:
    def __init__(self, j: Journal, report: Report, out: Collected, ids: Any) -> None:
        self.j = j
        self.report = report
        self.out = out
        self.ids = ids
        self.current_id: Any = None

    def slow(self, i: int) -> Any:
        value = self.j.values[i] if i in self.j.values else decode_record(self.j.raw(i))
        return _from_value(value) if isinstance(value, dict) else value

    def clean(self, first: int, entries: list[Any]) -> None:
        """Records ``first``.. that passed the strict types: only collect what the tree checks need."""
        calls, results, refs = self.out.calls, self.out.results, self.out.refs
        for k, e in enumerate(entries, first - 1):  # k: the entry's index (record k + 1)
            t = type(e)
            if t is MessageEntry:
                m = e.message
                if type(m) is ToolResultMessage:
                    results.append((k, m.toolCallId))
                elif type(m) is AssistantMessage:
                    for block in m.content:
                        if type(block) is ToolCallBlock:
                            _add_call(calls, call_key(block.id), k)
            elif t is CompactionEntry:
                refs.append((k, "firstKeptEntryId", e.firstKeptEntryId))
                if e.providerReplayThroughEntryId is not UNDEFINED:
                    refs.append((k, "providerReplayThroughEntryId", e.providerReplayThroughEntryId))
            elif t is LabelEntry:
                refs.append((k, "targetId", e.targetId))
            elif t is BranchSummaryEntry:
                self.current_id = e.id
                self._branch_summary(k + 1, e)

    def truncated(self, data: bytes, base: int) -> None:
        at = data.find(TRUNCATION_NOTICE)
        seen: set[int] = set()
        while at >= 0:
            i = self.j.record_at(base + at)
            if i is not None and i not in seen:
                seen.add(i)
                self.report.add("content-truncated", "a string ends with omp's truncation "
                                "notice: its content was already cut to 500,000 characters when saved",
                                offset=self.j.starts[i], entry_id=self.ids[i - 1] if self.ids else None)
            at = data.find(TRUNCATION_NOTICE, at + 1)

    def add(self, i: int, code: str, message: str, *, severity: Severity | None = None) -> None:
        self.report.add(code, message, severity=severity, offset=self.j.starts[i], entry_id=self.current_id)

    def entry(self, i: int, e: Any) -> None:
        last = i == len(self.j) - 1
        # the id on disk, not a migrated one: that is what the user finds in the file (a v1 file has
        # none: ``ids`` is None and the ids migration made up are random, so they name nothing)
        self.current_id = e.id if isinstance(e, _Entry) and self.ids is not None else None
        if not isinstance(e, _Entry):
            if last:
                self.out.last_is_object = False
            if e is not None:  # null is reported by the reader (omp cannot open the file)
                self.add(i, "non-object-record", f"a {_js_type(e)} record, not an object: "
                         "omp keeps it as an entry without id, a separate root of the tree")
            return
        kind = e.type
        if kind == "session":
            self.out.headers_after_first.append(i)
            return
        self._envelope(i, e)
        if kind == "message":
            self._message(i, e)
        elif kind == "compaction":
            self.out.refs.append((i - 1, "firstKeptEntryId", e.firstKeptEntryId))
            if e.providerReplayThroughEntryId is not UNDEFINED:
                self.out.refs.append((i - 1, "providerReplayThroughEntryId", e.providerReplayThroughEntryId))
        elif kind == "label":
            self.out.refs.append((i - 1, "targetId", e.targetId))
        elif kind == "branch_summary":
            self._branch_summary(i, e)
        elif kind == "ttsr_injection":
            self._ttsr(i, e.injectedRules)
        elif kind == "custom_message":
            self._custom_message(i, e)
        elif kind == "model_change" and not isinstance(e.model, str):
            legacy = e.provider is not UNDEFINED or e.modelId is not UNDEFINED
            self.add(i, "model-change-legacy",
                     "a model_change with the old {provider, modelId} shape: omp 18.2.3 ignores it" if legacy
                     else "a model_change without a string model: omp ignores it")

    def _envelope(self, i: int, e: _Entry) -> None:
        if not isinstance(e.type, str):
            self.add(i, "entry-type-invalid", f"the entry's type is {_describe(e.type)}, "
                     "not a string: omp keeps it but no view uses it")
        if not isinstance(e.id, str) or not e.id:
            self.add(i, "entry-id-invalid", f"the entry's id is {_describe(e.id)}, not a "
                     "non-empty string: nothing can refer to it reliably")
        parent = e.parentId
        if parent is UNDEFINED or parent == "":
            self.add(i, "entry-parent-invalid", f"parentId is {_describe(parent)}: omp "
                     "treats the entry as a root (use null for a root)")
        elif parent is not None and not isinstance(parent, str):
            self.add(i, "entry-parent-invalid", f"parentId is {_describe(parent)}, not a "
                     "string or null")
        ts = e.timestamp
        if not (isinstance(ts, str) and (_ISO.match(ts) or not math.isnan(date_parse(ts)))):
            self.add(i, "entry-timestamp-invalid", f"timestamp is {_describe(ts)}, not an "
                     "ISO-8601 string Date.parse accepts: the tree orders this entry arbitrarily")

    def _message(self, i: int, e: _Entry) -> None:
        m = e.message
        if isinstance(m, _Message):  # the usual case: attributes, no per-field type dispatch
            role, content, usage, call_id = m.role, m.content, m.usage, m.toolCallId
            stop = m.stopReason
        elif isinstance(m, dict):
            role, content = m.get("role", UNDEFINED), m.get("content", UNDEFINED)
            usage, call_id = m.get("usage", UNDEFINED), m.get("toolCallId", UNDEFINED)
            stop = m.get("stopReason", UNDEFINED)
        else:
            return  # reported by the reader: omp cannot open the file
        if role == "toolResult":
            self.out.results.append((i - 1, call_id))
        elif role == "assistant":
            self._assistant(i, content, usage, stop)
        elif not isinstance(role, str):
            self.add(i, "message-role-invalid",
                     f"the message's role is {_describe(role)}, not a string: omp passes it through as is")

    def _assistant(self, i: int, content: Any, usage: Any, stop: Any) -> None:
        if not isinstance(content, list):
            # omp iterates the content: a string survives that, except where an error turn calls .some()
            fatal = not isinstance(content, str) or stop == "error"
            self.add(i, "assistant-content-invalid",
                     f"an assistant message whose content is {_describe(content)}, not an array: "
                     + ("omp throws building the context" if fatal else "omp reads each character as a block"),
                     severity=Severity.ERROR if fatal else Severity.WARNING)
        else:
            for block in content:
                kind = block.type if type(block) is _Block else _get(block, "type")
                if kind == "toolCall":
                    _add_call(self.out.calls, call_key(_get(block, "id")), i - 1)
        if usage is not UNDEFINED and usage is not None:
            cost = usage.get("cost", UNDEFINED) if type(usage) is dict else UNDEFINED
            total = cost.get("total") if type(cost) is dict else UNDEFINED
            if cost is UNDEFINED or cost is None:
                # omp sums usage.cost.total while indexing the entries: reading a field of a
                # missing cost throws
                self.add(i, "usage-cost-invalid", "an assistant usage without a cost object: omp throws "
                         "opening the file", severity=Severity.ERROR)
            elif not _is_number(total):
                self.add(i, "usage-cost-invalid", "an assistant usage whose cost.total is not a number: "
                         "omp's cost totals become NaN or a string", severity=Severity.WARNING)

    def _branch_summary(self, i: int, e: _Entry | BranchSummaryEntry) -> None:
        if e.fromId == e.parentId and isinstance(e.fromId, str):
            return
        if e.fromId == "root" and e.parentId is None:
            return
        self.add(i, "branch-summary-from", f"branch_summary fromId {_describe(e.fromId)} "
                 f"is neither its parentId {_describe(e.parentId)} nor \"root\" with a null parentId")

    def _ttsr(self, i: int, rules: Any) -> None:
        if isinstance(rules, list) and all(isinstance(r, str) for r in rules):
            return
        if isinstance(rules, list | str):
            self.add(i, "ttsr-rules-invalid", "injectedRules is not an array of strings: omp takes each "
                     "element (or character) as a rule name", severity=Severity.WARNING)
        else:
            self.add(i, "ttsr-rules-invalid", f"injectedRules is {_describe(rules)}, not an array: omp "
                     "throws building the context", severity=Severity.ERROR)

    def _custom_message(self, i: int, e: _Entry) -> None:
        problems = []
        c = e.content
        if not (isinstance(c, str) or (isinstance(c, list) and all(
                isinstance(b, dict) and b.get("type") in ("text", "image") for b in c))):
            problems.append("content is not a string or an array of text/image blocks (omp skips it)")
        if not isinstance(e.display, bool):
            problems.append("display is not a boolean")
        if e.attribution is not UNDEFINED and e.attribution not in ("user", "agent"):
            problems.append('attribution is not "user" or "agent"')
        if problems:
            self.add(i, "custom-message-invalid", "custom_message: " + "; ".join(problems))


def _add_call(calls: dict[Any, list[int]], key: Any, k: int) -> None:
    at = calls.setdefault(key, [])
    if not at or at[-1] != k:
        at.append(k)


class _TooDeep:
    def __repr__(self) -> str:
        return "a value nested too deeply to show"


def call_key(value: Any) -> Any:
    """A dict key for a tool call id of any JSON type (ids of different types never match)."""
    try:
        hash(value)
    except TypeError:
        try:
            return repr(value)
        except RecursionError:  # nested deeper than repr() goes: matches nothing, as in JS
            return _TooDeep()
    return (type(value).__name__, value) if not isinstance(value, str) else value


def _js_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else type(value).__name__


def _describe(value: Any) -> str:
    if value is UNDEFINED:
        return "missing"
    if isinstance(value, str):
        return '""' if not value else f'"{value[:40]}"'
    return _js_type(value) if not isinstance(value, dict | msgspec.Struct) else "an object"
