"""What a store's derived tables hold of each session, read from its bytes, and the update that
keeps them in step (``omp-session index --store``, ``sync --to``; docs/team.md).

The tables and their writes are ``store.derived``; this module decides what the bytes mean:

* the searchable texts of each record, exactly as the file index has them (model/search_text.py,
  shared with ``ops/search``);
* the usage records of each record (an assistant turn, a ``model_usage`` entry, each agent of a
  ``task`` result), as ``ops/stats`` reads them;
* what ``list --stats`` shows: entries, messages, models, and omp's cost and token totals.

A session is read from where it was last derived on (only its appended bytes move), like the file
index reads a grown file: a last line without LF is a write in progress, left for the next update.
A session whose head, title or the bytes just before that point changed, or that shrank or was
rewritten at the same size, is derived again from scratch; one whose row is gone leaves the tables.
"""

from __future__ import annotations

import getpass
import math
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from omp_session.errors import ContextError, StoreError
from omp_session.format.migrate import needs_migration
from omp_session.format.reader import Journal, scan_bytes
from omp_session.js.codec import parse_jsonl
from omp_session.model.search_text import searchable
from omp_session.model.text import clean_text
from omp_session.model.tree import js_key, js_truthy
from omp_session.model.usage import usage_statistics
from omp_session.model.usage_items import usage_items
from omp_session.store import open_store
from omp_session.store.derived import (
    HEAD_BYTES,
    TEXT_LIMIT,
    DerivedState,
    DerivedTables,
    Facts,
    Pending,
    TextRow,
    UsageRow,
    open_derived,
)
from omp_session.store.derived.layout import writable_version
from omp_session.store.derived.rls import apply_rls, grant
from omp_session.store.derived.schema import SCHEMA_VERSION
from omp_session.store.url import StoreURL, parse_store_url

from .derived_usage import stats_key, tail_usage, whole_usage
from .list_facts import complete_status, complete_status_after, head_facts, shown_status
from .listing import PREFIX_BYTES

__all__ = ["DeriveReport", "default_namespace", "derive_whole", "derived_texts", "indexed_key", "refresh",
           "refresh_url"]

_ANCHOR = 64


def default_namespace() -> str:
    """``user@host`` of this machine: where the sessions ``sync`` uploads come from."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return f"{user}@{socket.gethostname()}"


def indexed_key(key: str, root: str) -> bool:
    """A session the file index would index under ``root``: ``<bucket>/<file>.jsonl`` or a
    subagent's ``<bucket>/<session>/<file>.jsonl`` (advisors and hidden names left out)."""
    if not key.startswith(root) or not key.endswith(".jsonl"):
        return False
    parts = key[len(root):].split("/")
    if any(not p or p.startswith(".") for p in parts):
        return False
    return len(parts) == 2 or (len(parts) == 3 and not parts[2].startswith("__advisor"))


# ----- the searchable texts of one record (model/search_text.py) ---------------------------------


def _id(value: Any) -> str | None:
    """An id as the file index shows it: strings as they are, other truthy scalars by their JS key."""
    if type(value) is str:
        return value or None
    if not js_truthy(value) or isinstance(value, dict | list):
        return None
    return repr(js_key(value))


def _stored_text(text: str) -> str:
    """Text a database keeps (no NUL, no lone surrogates, no snippet markers), at most TEXT_LIMIT."""
    if "\x02" in text or "\x03" in text:
        text = text.replace("\x02", " ").replace("\x03", " ")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = clean_text(text)
    if "\x00" in text:
        text = text.replace("\x00", " ")
    return text[:TEXT_LIMIT]


def _plain(value: str | None) -> str | None:
    """An id, name, path or time as a database keeps it: lone surrogates (valid JSON escapes) and
    NUL (which PostgreSQL refuses in text) become U+FFFD, as the file index's ``clean_text``
    makes them; decided here, after the rules looked at the value as written."""
    if value is None or ("\x00" not in value and value.isascii()):
        return value
    if "\x00" not in value:
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
    return clean_text(value)


def derived_texts(value: Any, seq: int) -> list[TextRow]:
    """The searchable texts of one record (any JSON value), one row per kind: the file index's
    (``searchable``), with ids as their display form (a database text holds no NUL tag)."""
    rec = searchable(value)
    if not rec.docs:
        return []
    _entry, _parent, type_, role_, ts, _target = rec.row
    assert isinstance(value, dict)  # only a record object has texts
    entry_id = _id(value.get("id"))
    target = _id(value.get("targetId")) if value.get("type") == "label" else None
    return [TextRow(seq, k, _plain(entry_id), _plain(type_), _plain(role_), ts, _plain(target),
                    _stored_text("\n".join(texts)))
            for k, texts in rec.docs.items()]


# ----- usage records (ops/stats/report.py's rules) ------------------------------------------------

def _count(value: Any) -> float:
    if value.__class__ in (int, float) and math.isfinite(value):
        return float(value)
    return 0.0


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _row(seq: int, n: int, eid: str | None, kind: str, usage: dict[str, Any], ms: float | None, provider: Any,
         model: Any, dedup: str | None, agent: str | None = None) -> UsageRow:
    cost = usage.get("cost")
    counts = [usage.get(k) for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")]
    # ops/stats sums a whole JSON number as an int and anything else as a float: which were floats
    floats = sum(1 << i for i, v in enumerate(counts) if v.__class__ is float and math.isfinite(v))
    inp, out, read, write, total = (_count(v) for v in counts)
    return UsageRow(seq, n, _plain(eid), ms, kind, _plain(_str(provider)), _plain(_str(model)), inp, out, read, write,
                    total, _count(cost.get("total")) if isinstance(cost, dict) else 0.0, _plain(dedup), _plain(agent),
                    floats=floats)


def derived_usage(entry: Any, seq: int, keyed: bool = True) -> list[UsageRow]:
    """The usage rows of one record (model/usage_items.py: the rules ``stats`` counts by);
    ``keyed``: with the key a fork's copy shares (not in a session omp migrates)."""
    if not isinstance(entry, dict):
        return []
    eid = _id(entry.get("id"))
    return [_row(seq, i.n, eid, i.kind, i.usage, i.timestamp, i.provider, i.model, i.key, i.agent)
            for i in usage_items(entry, keyed)]


# ----- what list --stats shows ---------------------------------------------------------------------


def _fold(facts: Facts, value: Any) -> None:
    """Add one record (after the header) to the list facts."""
    facts.entries += 1
    if not isinstance(value, dict):
        return
    kind = value.get("type")
    message = value.get("message") if kind == "message" else None
    if kind == "message":
        facts.messages += 1
    if isinstance(message, dict) and message.get("role") == "assistant":
        provider, model = message.get("provider"), message.get("model")
        name = _plain(f"{provider}/{model}" if isinstance(provider, str) and isinstance(model, str) else
                      model if isinstance(model, str) else None)
        if name is not None:
            if name in facts.models:
                facts.models.remove(name)
            facts.models.append(name)
    if kind != "model_usage" and not (isinstance(message, dict) and message.get("role") in ("assistant", "toolResult")):
        return
    # omp's getUsageStatistics, summed entry by entry in file order (the same float additions)
    try:
        totals = usage_statistics([value])
    except ContextError:
        facts.cost = facts.tokens = None
        return
    cost, tokens = totals.get("cost"), totals.get("totalTokens")
    facts.cost = _plus(facts.cost, cost)
    facts.tokens = _plus(facts.tokens, tokens)


def _plus(total: float | None, value: Any) -> float | None:
    if total is None or value.__class__ not in (int, float) or not math.isfinite(value):
        return None
    return total + value


# ----- one session -----------------------------------------------------------------------------------


def _line_start(j: Journal, pos: int) -> int:
    while pos > 0:
        start = max(0, pos - 65536)
        at = j.read(start, pos).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        pos = start
    return 0


@dataclass(frozen=True)
class Derived:
    state: DerivedState
    texts: list[TextRow]
    usage: list[UsageRow]
    flips: list[tuple[int, bool]] = field(default_factory=list)  # (seq, on_branch) of earlier usage rows


def derive_whole(key: str, body: bytes, size: int, raw_head: bytes, modified: int, title_columns: str | None,
                 namespace: str | None, *, with_texts: bool = True) -> Derived:
    """Everything derived from a whole session (``body`` as omp reads it; ``size`` and
    ``raw_head``: the stored body's bytes and its first bytes, without the title overlay), up to
    its last complete line. ``with_texts``: with its texts (not an advisor's or a nested
    subagent's transcript, which only ``stats`` reads)."""
    j = scan_bytes(body)
    try:
        offset = _line_start(j, j.size)
        n = len(j)
        while n and j.end(n - 1) > offset:  # on the unterminated last line, or a value open across it
            if j.start(n - 1) < offset:
                offset = _line_start(j, j.start(n - 1))
            n -= 1
        header = j.value(0) if n else None
        facts = Facts()
        values: list[Any] = [j.value(i) for i in range(n)]
        if isinstance(header, dict) and header.get("type") == "session":
            session_id = header.get("id") if isinstance(header.get("id"), str) else None
            # ops/stats keys no record of a session omp migrates (read_session's header: an id)
            facts.keyed = session_id is None or not needs_migration(header)
            title: Any = header.get("title")
            if j.slot is not None and session_id is not None:  # the slot overlays the header (S1.2.6)
                title = j.slot.title or None
            cwd, created = header.get("cwd"), header.get("timestamp")
            shown = {k: v for k, v in header.items() if k != "title"}
            if isinstance(title, str):
                shown["title"] = title
            values[0] = shown
            facts.cwd = _plain(cwd) if isinstance(cwd, str) else None
            facts.created = _plain(created) if isinstance(created, str) else None
            facts.title = _stored_text(title) if isinstance(title, str) and title else None
        else:
            session_id = None
        if session_id is None:
            stem = key.rsplit("/", 1)[-1].removesuffix(".jsonl")
            session_id = stem.split("_", 1)[1] if "_" in stem else stem
        facts.id = _plain(session_id)
        texts: list[TextRow] = []
        usage: list[UsageRow] = []
        for seq, value in enumerate(values):
            if with_texts:
                texts += derived_texts(value, seq)
            if seq:  # the first line is the header's place: ops/stats reads no entry there
                usage += derived_usage(value, seq, facts.keyed)
                _fold(facts, value)
        facts.next_seq = n
        facts.damaged = sum(1 for m in j.malformed if m.start < offset)
        # the current branch, omp's totals, the header as stats reads it (catalog/derived_usage.py)
        usage, facts.stats = whole_usage(key, j, body, offset, n, values, usage, _plain)
        # what `list` shows: omp's listing of these bytes (catalog/list_facts.py)
        facts.listed = head_facts(body[:PREFIX_BYTES], _plain)
        facts.list_head = body[:offset] if offset < PREFIX_BYTES else None
        facts.line_status, facts.status_at = complete_status(body, offset)
        facts.status = shown_status(facts.line_status, facts.status_at, body[offset:], offset)
        state = DerivedState(key, modified, size, offset, raw_head[:min(HEAD_BYTES, offset)],
                             body[max(0, offset - _ANCHOR):offset], title_columns, facts, namespace)
        return Derived(state, texts, usage)
    finally:
        j.close()


def derive_tail(state: DerivedState, raw_head: bytes, data: bytes, size: int, modified: int,
                title_columns: str | None, *, with_texts: bool = True) -> Derived | str:
    """What the bytes appended since ``state`` add (``data`` starts ``len(state.anchor)`` bytes
    before ``state.derived``); or why the session must be derived again from scratch."""
    if size < state.derived:
        return "shrank"
    if title_columns != state.title_columns:
        return "title changed"
    if raw_head[:len(state.head)] != state.head:
        return "title slot or header rewritten"
    if state.facts.next_seq == 0:
        return "header completed"
    if not data.startswith(state.anchor):
        return "rewritten"
    if size == state.size:
        return "rewritten at the same size"  # omp bumped its mtime: a same-size rewrite, or a stamp
    new = data[len(state.anchor):]
    cut = new.rfind(b"\n") + 1
    facts = replace(state.facts, models=list(state.facts.models))
    texts: list[TextRow] = []
    usage: list[UsageRow] = []
    derived, anchor = state.derived, state.anchor
    flips: list[tuple[int, bool]] = []
    if cut:
        chunk = new[:cut]
        records, malformed = parse_jsonl(chunk.decode("utf-8", "replace"))
        seq = facts.next_seq
        for value, _, _ in records:
            if with_texts:
                texts += derived_texts(value, seq)
            usage += derived_usage(value, seq, facts.keyed)
            _fold(facts, value)
            seq += 1
        step = tail_usage(facts.stats, facts.next_seq, [value for value, _, _ in records], usage)
        if isinstance(step, str):
            return step
        usage, flips, facts.stats = step.usage, step.flips, step.facts
        facts.next_seq = seq
        facts.damaged += len(malformed)
        derived += cut
        anchor = (state.anchor + chunk)[-_ANCHOR:]
    # omp's listing reads the last line even while it is being written: so does its status
    facts.line_status, facts.status_at = complete_status_after(facts.line_status, facts.status_at, new[:cut],
                                                               state.derived)
    facts.status = shown_status(facts.line_status, facts.status_at, new[cut:], derived)
    if state.facts.list_head is not None:
        # omp's listing reads the first 4 KB: while a session is shorter, what it shows grows with
        # it (its bytes so far are kept for that: the appended ones are all that is read)
        window = state.facts.list_head + new
        facts.listed = head_facts(window, _plain)
        facts.list_head = window[:derived] if derived < PREFIX_BYTES else None
    # a head cut short by a short session grows with it, as a rebuild keeps it (raw_head is this read's)
    head = state.head if len(state.head) >= HEAD_BYTES else raw_head[:min(HEAD_BYTES, derived)]
    return Derived(DerivedState(state.key, modified, size, derived, head, anchor, title_columns, facts,
                                state.namespace), texts, usage, flips)


# ----- every session under a root ------------------------------------------------------------------


@dataclass
class DeriveReport:
    """What one update of the derived tables did."""

    store: str
    sessions: int = 0  # sessions under the root that are derived
    added: list[str] = field(default_factory=list)
    grown: list[str] = field(default_factory=list)
    rederived: list[tuple[str, str]] = field(default_factory=list)  # (key, why)
    removed: list[str] = field(default_factory=list)
    skipped: int = 0  # another indexer derived them meanwhile
    bytes_read: int = 0
    seconds: float = 0.0
    upgraded: int | None = None  # the layout of the tables this update dropped (schema.SCHEMA_VERSION)
    copies_settled: int = 0  # usage rows whose `shared` flag an update exempt from row-level security set right

    def to_json(self) -> dict[str, Any]:
        out = {"store": self.store, "sessions": self.sessions, "added": len(self.added), "grown": len(self.grown),
               "rederived": [{"key": k, "reason": r} for k, r in self.rederived], "removed": self.removed,
               "skipped": self.skipped, "bytes_read": self.bytes_read, "seconds": round(self.seconds, 4)}
        if self.upgraded is not None:
            out["upgraded_from"] = self.upgraded
        if self.copies_settled:
            out["copies_settled"] = self.copies_settled
        return out


def _whole(tables: DerivedTables, key: str, namespace: str | None, report: DeriveReport,
           with_texts: bool = True) -> Derived | None:
    found = tables.read_body(key)
    if found is None:
        return None
    body, size, raw_head, modified, tcols = found
    report.bytes_read += size
    return derive_whole(key, body, size, raw_head, modified, tcols, namespace, with_texts=with_texts)


def upgrade(tables: DerivedTables) -> tuple[int, dict[str, str]] | None:
    """Drop derived tables of an older layout and make them anew (derived data is disposable:
    everything in them comes from the sessions, which are not touched); one line on stderr says
    so. Returns the old layout and the namespaces recorded (they are not in the sessions' bytes),
    or None when the tables are of this layout. On PostgreSQL the roles that could read the old
    tables get the same grants again, and row-level security (rls.sql) when it was on. Tables of
    a newer layout are refused (``StoreError``), untouched: what a newer omp-session derived is not
    ours to downgrade."""
    version = writable_version(tables)
    if version is None or not tables.outdated():
        return None
    try:
        kept = tables.namespaces("")
    except StoreError:  # a layout before namespaces
        kept = {}
    secured, roles = tables.grantees()
    tables.drop()
    tables.create()
    for role in roles:
        if secured:
            apply_rls(tables, role)
        else:
            grant(tables, role)
    print(f"omp-session: {tables.name}: the search tables were made by another omp-session (layout {version}, "
          f"this one's is {SCHEMA_VERSION}): dropped and derived again from the sessions, which are unchanged",
          file=sys.stderr)
    return version, kept


_BATCH_BYTES = 8 * 1024 * 1024  # sessions read per transaction: a commit per small session costs more than it


def refresh(tables: DerivedTables, root: str, *, namespaces: Mapping[str, str] | None = None,
            new_namespace: str | None = None, progress: Callable[[int, int], None] | None = None,
            copies: bool = False) -> DeriveReport:
    """Bring the derived tables up to date with every session under ``root`` (a key prefix
    ending with ``/``). ``namespaces``: key → the namespace to record for it (kept otherwise);
    ``new_namespace``: the one for a session derived for the first time and not in
    ``namespaces`` (under row-level security a row without one is nobody's: docs/team.md).
    ``copies`` (``index --store``): on tables with row-level security, when this connection is
    exempt from it, also decide again over every row which records several transcripts hold
    (one scan of the usage table; trees.py ``settle_copies``)."""
    t0 = time.perf_counter()
    report = DeriveReport(tables.name)
    upgraded = upgrade(tables)
    if upgraded is not None:
        report.upgraded, kept = upgraded
        namespaces = {**{k: v for k, v in kept.items() if k.startswith(root)}, **(namespaces or {})}
    pending, gone = tables.pending(root)
    # what stats reads: sessions, their subagents and advisors (nested); the search reads fewer
    work = [p for p in pending if stats_key(p.key, root)]
    stray = [p.state.key for p in pending if p.state is not None and not stats_key(p.key, root)]
    batch: list[tuple[Pending, Derived, str]] = []
    read = 0
    for done, p in enumerate(work, 1):
        before = report.bytes_read
        ns = (namespaces or {}).get(p.key, new_namespace if p.state is None else None)
        found = _one(tables, p, ns, report, indexed_key(p.key, root))
        if found is not None:
            batch.append((p, *found))
        read += report.bytes_read - before
        if read >= _BATCH_BYTES or done == len(work):
            _store(tables, batch, report, root)
            batch, read = [], 0
        if progress is not None:
            progress(done, len(work))
    if gone or stray:
        tables.delete(gone + stray)
        report.removed += gone + stray
    if copies and tables.sees_every_copy():
        # under row-level security each role's update flags the copies among its own rows only: a
        # fork of another person's session is flagged by neither, until an update that sees both
        report.copies_settled = tables.settle_copies()
    report.sessions = tables.count(root)
    if report.added or report.grown or report.rederived:
        tables.merge_search_index()
    if len(report.added) + len(report.rederived) + len(report.removed) >= 50 + report.sessions // 10:
        # the planner's statistics, after changes as large as those autovacuum analyses after (a
        # server may run without it): without them a list of 100 sorts every session's row
        tables.analyze()
    report.seconds = time.perf_counter() - t0
    return report


def _one(tables: DerivedTables, p: Pending, namespace: str | None, report: DeriveReport,
         with_texts: bool = True) -> tuple[Derived, str] | None:
    """What to write for one changed session, and what happened to it (added, grown, or why it
    was derived again); None when its row is gone meanwhile (the next update removes it)."""
    state = p.state
    ns = namespace if namespace is not None else (state.namespace if state is not None else None)
    if state is None:
        result = _whole(tables, p.key, ns, report, with_texts)
        return None if result is None else (result, "added")
    tail = tables.read_tail(p.key, state.derived - len(state.anchor))
    if tail is None:
        return None
    raw_head, data, size, modified, tcols = tail
    report.bytes_read += len(data)
    step = derive_tail(state, raw_head, data, size, modified, tcols, with_texts=with_texts)
    if isinstance(step, Derived):
        return replace(step, state=replace(step.state, namespace=ns)), "grown"
    result = _whole(tables, p.key, ns, report, with_texts)
    return None if result is None else (result, step)


def _store(tables: DerivedTables, batch: list[tuple[Pending, Derived, str]], report: DeriveReport,
           root: str | None = None) -> None:
    if not batch:
        return
    written = tables.write([(d.state, d.texts, d.usage, p.state, outcome != "grown") for p, d, outcome in batch],
                           root=root, flips={d.state.key: d.flips for _p, d, _o in batch if d.flips})
    for (p, _d, outcome), ok in zip(batch, written, strict=True):
        if not ok:
            report.skipped += 1
        elif outcome == "added":
            report.added.append(p.key)
        elif outcome == "grown":
            report.grown.append(p.key)
        else:
            report.rederived.append((p.key, outcome))


def refresh_url(url: str | StoreURL, *, create: bool = True, namespaces: Mapping[str, str] | None = None,
                new_namespace: str | None = None, timeout: float | None = None,
                progress: Callable[[int, int], None] | None = None, rebuild: bool = False,
                copies: bool = False) -> DeriveReport | None:
    """:func:`refresh` for the store ``url`` names, under its root. ``create``: make the tables
    (and omp's) when they do not exist yet; otherwise a store without them is left alone (None).
    ``rebuild``: forget what was derived first. ``copies``: as for :func:`refresh`."""
    parsed = parse_store_url(url) if isinstance(url, str) else url
    if create:  # omp's table too, as omp and `sync --to` make it; and its layout checked
        open_store(parsed, create=True, timeout=timeout).close()
    with open_derived(parsed, timeout=timeout) as tables:
        writable_version(tables)  # a newer layout's tables, or not ours: neither created into, emptied nor derived
        if not tables.exists():
            if not create:
                return None
            tables.create()
        elif not tables.outdated():  # an older layout: refresh drops it anyway
            if create:
                tables.add_indexes()  # those a later omp-session of this layout added
            if rebuild:
                # where each session came from is not in its bytes: a rebuild keeps it
                namespaces = {**tables.namespaces(parsed.root), **(namespaces or {})}
                tables.drop_rows()
        return refresh(tables, parsed.root, namespaces=namespaces, new_namespace=new_namespace, progress=progress,
                       copies=copies)
