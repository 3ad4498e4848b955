"""Keep one branch of a session in a new file: ``omp-session prune --keep-branch`` (docs/size.md).

Abandoned branches (entries off the path the session resumes on) cost disk and load time but
nothing in omp's context. Pruning writes a *new* session holding the path root → leaf and never
touches the original:

* the title slot, the header and every kept entry are copied byte for byte, so ids, parents,
  timestamps and everything omp builds the context from are unchanged (compaction's
  ``firstKeptEntryId`` and branch summaries point along the path, which is kept whole);
* labels: the label entries on the path stay where they are; a label in effect for a kept entry
  that was set off the path (or changed there) is re-stated by a fresh label entry chained after
  the leaf, as omp's ``createBranchedSession`` carries labels (S6.7) — so the new file shows the
  same labels for the kept entries. Label entries are not messages: the context is unchanged.

omp's own ``createBranchedSession`` drops the label entries that lie on the path without
re-linking their children; we keep them, so the path stays connected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from omp_session.errors import EditError, EntryNotFoundError, FormatError
from omp_session.format.reader import scan_bytes
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.model.session import Session, read_session
from omp_session.write.entries import generate_id, record
from omp_session.write.ids import iso_timestamp

from .externalize import read_error, refuse_archive, write_session_copy

__all__ = ["PrunePlan", "open_tree_session", "plan_prune", "prune"]


@dataclass(slots=True)
class PrunePlan:
    """What pruning keeps: entry indices on the path and the label entries to append."""

    source: str
    leaf: Any
    path: list[int]  # entry indices root -> leaf
    labels: list[dict[str, Any]] = field(default_factory=list)  # fresh label entries after the leaf
    entries_before: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    output: str | None = None

    @property
    def saved(self) -> int:
        return self.bytes_before - self.bytes_after

    @property
    def dropped(self) -> int:
        return self.entries_before - len(self.path)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "output": self.output, "leaf": self.leaf,
                "entries_before": self.entries_before, "entries_kept": len(self.path),
                "entries_dropped": self.dropped, "labels_carried": len(self.labels),
                "bytes_before": self.bytes_before, "bytes_after": self.bytes_after, "saved": self.saved}


def open_tree_session(path: str, *, archives: bool = False) -> Session:
    """Read a session for copying its records (no blob resolution); FormatError without a header.
    ``archives``: a ``.jsonl.gz`` reads as the plain file (for reports; writers refuse it)."""
    if not (archives and path.endswith(".jsonl.gz")):
        refuse_archive(path)
    try:
        s = read_session(path)
    except OSError as e:
        raise read_error(path, e) from None
    if s.header is None:
        s.close()
        raise FormatError('the first record is not a session header ({"type":"session","id":<string>})', path=path)
    return s


def _same(a: Any, b: Any) -> bool:
    return codec.stringify(a) == codec.stringify(b)


def _carried_labels(s: Session, path: list[int], leaf_entry: Any) -> list[dict[str, Any]]:
    """Fresh label entries that make the new file's labels for kept entries equal the original's."""
    j = s.journal
    kept_ids = {s.ids[k] for k in path if isinstance(s.ids[k], str)}
    # labels of dropped entries go with them; labels of ids no entry has (omp keeps those) stay
    dropped = {i for i in s.ids if isinstance(i, str)} - kept_ids
    want = {t: v for t, v in s.labels().items() if t not in dropped}
    on_path = [j.raw(0)] + [j.raw(k + 1) for k in path if s.types[k] == "label"]
    have = Session(scan_bytes(b"\n".join(on_path) + b"\n")).labels()
    taken: set[Any] = set(kept_ids)
    parent = leaf_entry.get("id") if isinstance(leaf_entry, dict) else None
    out: list[dict[str, Any]] = []
    changes = [(t, v) for t, v in want.items() if t not in have or not _same(have[t], v)]
    changes += [(t, UNDEFINED) for t in have if t not in want and t not in dropped]
    for target, label in changes:
        new_id = generate_id(taken)
        taken.add(new_id)
        entry = record(("type", "label"), ("id", new_id), ("parentId", parent), ("timestamp", iso_timestamp()),
                       ("targetId", target), ("label", label))
        out.append(entry)
        parent = new_id
    return out


def plan_prune(session: Session, leaf: Any = None) -> PrunePlan:
    """The path root → ``leaf`` (default: the session's leaf) and the labels to carry."""
    if session.migrated:
        raise EditError(f"{session.path}: a session older than version 3; omp gives its entries ids only "
                        f"when it migrates the file, so there are no branches to prune yet")
    if leaf is None:
        leaf = session.get_leaf_id()
        if leaf is None:
            raise EditError(f"{session.path}: the last entry has no id, so there is no branch to keep")
    elif session.index_of(leaf) is None:
        raise EntryNotFoundError(f"{session.path}: no entry {leaf}")
    path = list(session.branch_indices(leaf))
    leaf_entry = session.entry_at(path[-1]) if path else None
    plan = PrunePlan(str(session.path), leaf, path, entries_before=len(session),
                     bytes_before=session.journal.size)
    plan.labels = _carried_labels(session, path, leaf_entry)
    j = session.journal
    # the size of what _pieces writes, without reading the records again
    plan.bytes_after = (j.body_start + j.end(0) - j.start(0) + 1
                        + sum(j.end(k + 1) - j.start(k + 1) + 1 for k in path)
                        + sum(len(codec.dumps_line(e)) for e in plan.labels))
    return plan


def _pieces(s: Session, plan: PrunePlan) -> Iterator[bytes]:
    j = s.journal
    yield j.read(0, j.body_start)  # BOM and title slot, as they were
    yield j.raw(0) + b"\n"
    for k in plan.path:
        yield j.raw(k + 1) + b"\n"
    for entry in plan.labels:
        yield codec.dumps_line(entry)


def prune(path: str | os.PathLike[str], out: str | os.PathLike[str] | None, *, leaf: Any = None,
          force: bool = False) -> PrunePlan:
    """Write ``out``: ``path`` reduced to the branch root → ``leaf``. ``out=None``: only the plan
    (bytes saved), nothing written. Never writes ``path``."""
    src = os.fspath(path)
    s = open_tree_session(src)
    try:
        plan = plan_prune(s, leaf)
        if out is not None:
            plan.output = os.fspath(out)
            plan.bytes_after = write_session_copy(src, out, _pieces(s, plan), force=force)
        return plan
    finally:
        s.close()
