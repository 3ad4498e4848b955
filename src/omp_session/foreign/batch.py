"""Many foreign sessions at once: find, select, import (idempotently), and tell what became of each.

Used by ``omp-session import`` and by the listing of not-yet-imported sessions (``list
--foreign``). Nothing here prints; every outcome carries its own report.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from omp_session.errors import SessionError
from omp_session.js.date import now_iso
from omp_session.paths import project_dir_name

from .claude import list_claude
from .codex import list_codex
from .filetimes import file_times
from .importer import persist, prepare
from .jsonl import Problem
from .ledger import Ledger, LedgerRecord
from .sources import ForeignSession, Source, default_root

__all__ = ["STATUSES", "Outcome", "find_sessions", "import_sessions", "import_status", "list_foreign",
           "select_sessions"]

STATUSES = ("imported", "would import", "already imported", "changed", "failed")


@dataclass
class Outcome:
    """What became of one foreign session. ``status``: imported, would import (dry run), already
    imported (the ledger has it, unchanged), changed (imported before, grown since; ``--update``
    imports it again), failed (``reason`` says why)."""

    info: ForeignSession
    status: str
    reason: str = ""
    session: str | None = None
    cwd: str | None = None
    moved: bool = False
    entries: int = 0
    problems: list[Problem] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, object]:
        i = self.info
        return {"source": i.source, "id": i.id, "path": i.path, "cwd": i.cwd, "title": i.title,
                "status": self.status, "reason": self.reason or None, "session": self.session,
                "session_cwd": self.cwd, "moved_to_current_dir": self.moved, "entries": self.entries,
                "problems": [str(p) for p in self.problems], "kinds": dict(sorted(self.kinds.items()))}


def find_sessions(source: Source, roots: Sequence[str] = ()) -> list[ForeignSession]:
    """Every session of ``source`` under ``roots`` (default: where omp looks), newest first."""
    lister = list_claude if source == "claude" else list_codex
    found: list[ForeignSession] = []
    seen: set[str] = set()
    for root in roots or (default_root(source),):
        for info in lister(root):
            if info.path not in seen:
                seen.add(info.path)
                found.append(info)
    return found


def _same_project(cwd: str, project: str) -> bool:
    try:
        return project_dir_name(cwd) == project_dir_name(project)
    except (OSError, ValueError):
        return False


def select_sessions(sessions: Sequence[ForeignSession], *, wanted: Sequence[str] = (), project: str | None = None,
                    since_ms: float | None = None) -> tuple[list[ForeignSession], list[str]]:
    """The sessions named in ``wanted`` (paths, ids or unique id prefixes; all when empty) of
    ``project`` (None: every project) modified at or after ``since_ms``; and a message for each
    name that matches nothing or more than one."""
    unknown: list[str] = []
    chosen = list(sessions)
    if wanted:
        picked: dict[str, ForeignSession] = {}
        for name in wanted:
            if os.sep in name or name.endswith(".jsonl"):
                real = os.path.realpath(name)
                hits = [s for s in sessions if os.path.realpath(s.path) == real]
            else:
                hits = [s for s in sessions if s.id == name] or [s for s in sessions if s.id.startswith(name)]
            if len(hits) == 1:
                picked[hits[0].path] = hits[0]
            elif not hits:
                unknown.append(f"{name}: no such session found")
            else:
                unknown.append(f"{name}: matches {len(hits)} sessions ({', '.join(h.id for h in hits[:3])}...); "
                               "give more of the id or the path")
        chosen = list(picked.values())
    if project is not None:
        chosen = [s for s in chosen if _same_project(s.cwd, project)]
    if since_ms is not None:
        chosen = [s for s in chosen if s.modified_ms >= since_ms]
    return chosen, unknown


def import_status(info: ForeignSession, ledger: Ledger) -> tuple[str, LedgerRecord | None]:
    """new, imported (unchanged since) or changed, and the ledger's record of the last import."""
    rec = ledger.latest(info.path)
    if rec is None:
        return "new", None
    try:
        times = file_times(info.path)
    except OSError:
        return "imported", rec
    if times.size == rec.size and times.mtime_ns == rec.mtime_ns:
        return "imported", rec
    return "changed", rec


def import_sessions(sessions: Sequence[ForeignSession], *, fallback_cwd: str, dry_run: bool = False,
                    update: bool = False, ledger: Ledger | None = None, session_dir: str | None = None,
                    progress: Callable[[int, int], None] | None = None) -> Iterator[Outcome]:
    """Import each session not imported yet (and, with ``update``, each grown since its import),
    yielding its outcome. A failure is an outcome too: the others go on."""
    ledger = ledger if ledger is not None else Ledger()
    for n, info in enumerate(sessions, 1):
        if progress is not None:
            progress(n - 1, len(sessions))
        if dry_run:
            yield _import_one(info, fallback_cwd=fallback_cwd, dry_run=True, update=update, ledger=ledger,
                              session_dir=session_dir)
            continue
        try:
            with ledger.locked():  # another run may be importing the same sources: take turns
                ledger.refresh()
                out = _import_one(info, fallback_cwd=fallback_cwd, dry_run=False, update=update, ledger=ledger,
                                  session_dir=session_dir)
        except OSError as e:
            out = Outcome(info, "failed", reason=f"{e.filename or ledger.path}: cannot record the import in the "
                                                 f"ledger: {e.strerror or e}")
        yield out
    if progress is not None:
        progress(len(sessions), len(sessions))


def _import_one(info: ForeignSession, *, fallback_cwd: str, dry_run: bool, update: bool, ledger: Ledger,
                session_dir: str | None) -> Outcome:
    status, rec = import_status(info, ledger)
    if status == "imported":
        assert rec is not None
        return Outcome(info, "already imported", reason=f"as {rec.session}", session=rec.session)
    if status == "changed" and not update:
        assert rec is not None
        return Outcome(info, "changed", reason=f"changed since it was imported as {rec.session}; --update imports "
                                               "it again, as a new omp session", session=rec.session)
    try:
        before = file_times(info.path)
        prepared = prepare(info, fallback_cwd=fallback_cwd)
        out = Outcome(info, "would import" if dry_run else "imported", cwd=prepared.cwd, moved=prepared.moved,
                      entries=len(prepared.entries), problems=list(prepared.converted.problems),
                      kinds=prepared.converted.kinds)
        if prepared.moved:
            out.reason = (f"its project directory {prepared.recorded_cwd or '(none recorded)'} no longer exists: "
                          f"imported into the current directory {prepared.cwd}, as omp does")
        if dry_run:
            return out
        out.session = persist(prepared, session_dir=session_dir)
    except OSError as e:
        return Outcome(info, "failed", reason=f"{e.filename or info.path}: cannot read or write: {e.strerror or e}")
    except (SessionError, ValueError, RecursionError) as e:  # a FormatError names its file and line itself
        return Outcome(info, "failed", reason=str(e) if info.path in str(e) else f"{info.path}: {e}")
    try:
        ledger.add(LedgerRecord(source=info.source, source_id=info.id, source_path=info.path, size=before.size,
                                mtime_ns=before.mtime_ns, session=out.session, imported_at=now_iso()))
    except OSError as e:  # unrecorded, the session would be imported again by the next run: take it back
        with contextlib.suppress(OSError):
            os.unlink(out.session)
        return Outcome(info, "failed", reason=f"{e.filename or ledger.path}: cannot record the import in the "
                                              f"ledger: {e.strerror or e}")
    return out


def list_foreign(sources: Sequence[Source] = ("claude", "codex"), roots: Sequence[str] = (), *,
                 include_imported: bool = False, ledger: Ledger | None = None) -> list[tuple[ForeignSession, str]]:
    """Foreign sessions with their import status (new, changed; with ``include_imported`` also
    imported), newest first: what ``list --foreign`` shows beside omp's sessions. ``roots``
    apply to every source (default: where omp looks for each)."""
    ledger = ledger if ledger is not None else Ledger()
    out: list[tuple[ForeignSession, str]] = []
    for source in sources:
        for info in find_sessions(source, roots):
            status, _rec = import_status(info, ledger)
            if status != "imported" or include_imported:
                out.append((info, status))
    out.sort(key=lambda pair: -(pair[0].modified_ms if pair[0].modified_ms == pair[0].modified_ms else -1e300))
    return out
