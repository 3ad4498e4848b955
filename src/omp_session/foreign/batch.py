"""Many foreign sessions at once: find, select, import (idempotently), and tell what became of each.

Used by ``omp-session import`` and by the listing of not-yet-imported sessions (``list
--foreign``). Nothing here prints; every outcome carries its own report.

Sessions are imported by a pool of processes (two where two CPUs are ours; ``OMP_SESSION_WORKERS``
says otherwise), each reading, converting and writing one session at a time, so memory stays that
of a session per process. The ledger is held only to look a source up and to record it (see
:meth:`_Job._import`), never while a session is converted.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from omp_session.errors import SessionError
from omp_session.format.blobs import BlobStore
from omp_session.js.date import now_iso
from omp_session.paths import blobs_dir, default_session_dir, project_dir_name

from .claude import list_claude
from .codex import list_codex
from .filetimes import FileTimes, file_times
from .importer import Prepared, discard_staged, place_staged, prepare, stage
from .jsonl import Problem
from .ledger import Ledger, LedgerFailure, LedgerRecord
from .sources import ForeignSession, Source, default_root

__all__ = ["STATUSES", "ForeignListed", "Outcome", "find_sessions", "import_sessions", "import_status",
           "list_foreign", "list_foreign_detailed", "select_sessions", "workers_for"]

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
    unconvertible: bool = False  # failed in the conversion itself: it fails again until the file changes

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
    if project is not None:  # first: a name is looked for among the project's sessions only
        sessions = [s for s in sessions if _same_project(s.cwd, project)]
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
                unknown.append(f"{name}: no such session found" + (f" in project {project}" if project else ""))
            else:
                unknown.append(f"{name}: matches {len(hits)} sessions ({', '.join(h.id for h in hits[:3])}...); "
                               "give more of the id or the path")
        chosen = list(picked.values())
    if since_ms is not None:
        chosen = [s for s in chosen if s.modified_ms >= since_ms]
    return chosen, unknown


def import_status(info: ForeignSession, ledger: Ledger) -> tuple[str, LedgerRecord | None]:
    """new, unimportable (never imported, and an import failed to convert the file as it is now:
    :func:`import_failure` says why), imported (unchanged since) or changed, and the ledger's
    record of the last import."""
    rec = ledger.latest(info.path)
    if rec is None:
        return ("unimportable" if import_failure(info, ledger) is not None else "new"), None
    try:
        times = file_times(info.path)
    except OSError:
        return "imported", rec
    if times.size == rec.size and times.mtime_ns == rec.mtime_ns:
        return "imported", rec
    return "changed", rec


def import_failure(info: ForeignSession, ledger: Ledger) -> LedgerFailure | None:
    """The ledger's record of an import that could not convert ``info`` as the file is now."""
    try:
        times = file_times(info.path, birth=False)
    except OSError:
        return None
    return ledger.failure(info.path, times.size, times.mtime_ns)


def workers_for(count: int) -> int:
    """How many processes import ``count`` sessions: ``$OMP_SESSION_WORKERS`` when it is a number,
    else two where two CPUs are ours (each holds one session at a time: memory stays bounded);
    one for a single session."""
    wanted = os.environ.get("OMP_SESSION_WORKERS", "").strip()
    try:
        n = int(wanted) if wanted else min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                            else os.cpu_count() or 1)
    except ValueError:
        n = 1
    return max(1, min(n, count))


def import_sessions(sessions: Sequence[ForeignSession], *, fallback_cwd: str, dry_run: bool = False,
                    update: bool = False, ledger: Ledger | None = None, session_dir: str | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    workers: int | None = None) -> Iterator[Outcome]:
    """Import each session not imported yet (and, with ``update``, each grown since its import),
    yielding its outcome, in the order of ``sessions``. A failure is an outcome too: the others go on.

    ``workers`` processes (default :func:`workers_for`) import one session at a time each; each
    writes its sessions and records them in the ledger itself.
    """
    ledger = ledger if ledger is not None else Ledger()
    total = len(sessions)
    n = workers_for(total) if workers is None else max(1, min(workers, total))
    job = _Job(fallback_cwd=fallback_cwd, dry_run=dry_run, update=update, ledger=ledger, session_dir=session_dir)
    if progress is not None:
        progress(0, total)
    if n == 1:
        for done, info in enumerate(sessions, 1):
            yield job.run(info)
            if progress is not None:
                progress(done, total)
        return
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    pool = ProcessPoolExecutor(n, mp_context=context, initializer=_start_worker, initargs=(job,))
    try:
        futures = [pool.submit(_run_in_worker, info) for info in sessions]
        for done, (info, future) in enumerate(zip(sessions, futures, strict=True), 1):
            try:
                out = future.result()
            except BrokenProcessPool:  # a worker was killed (out of memory?): the rest here, one by one;
                out = job.run(info)  # the ledger says which of them a worker imported before it stopped
            yield out
            if progress is not None:
                progress(done, total)
    finally:
        pool.shutdown(cancel_futures=True)  # a caller that stops early: the sessions not begun are dropped
    ledger.refresh()  # what the workers recorded


@dataclass
class _Job:
    fallback_cwd: str
    dry_run: bool
    update: bool
    ledger: Ledger
    session_dir: str | None
    # worked out once per run (and process), not once per session
    _dirs: dict[str, str] = field(default_factory=dict)
    _blobs: BlobStore | None = None

    def _folder(self, cwd: str) -> str:
        if self.session_dir:
            return self.session_dir
        folder = self._dirs.get(cwd)
        if folder is None:
            folder = self._dirs[cwd] = default_session_dir(cwd)
        return folder

    def _blob_store(self) -> BlobStore:
        if self._blobs is None:
            self._blobs = BlobStore(blobs_dir())
        return self._blobs

    def run(self, info: ForeignSession) -> Outcome:
        with _no_cycle_collection():
            if not self.dry_run:
                return self._import(info)
            status, rec = import_status(info, self.ledger)
            return self._settled(info, status, rec) or self._convert(info)[0]

    def _convert(self, info: ForeignSession) -> tuple[Outcome, Prepared | None, FileTimes | None]:
        """Read and convert ``info``: its outcome (would import, or failed) and what to write."""
        try:
            before = file_times(info.path, birth=False)
            prepared = prepare(info, fallback_cwd=self.fallback_cwd)
        except OSError as e:
            return _unreadable(info, e), None, None
        except (SessionError, ValueError, RecursionError) as e:  # a FormatError names its file and line itself
            failed = _failed(info, e)
            failed.unconvertible = True
            return failed, None, before
        out = Outcome(info, "would import", cwd=prepared.cwd, moved=prepared.moved, entries=len(prepared.entries),
                      problems=list(prepared.converted.problems), kinds=prepared.converted.kinds)
        if prepared.moved:
            out.reason = (f"its project directory {prepared.recorded_cwd or '(none recorded)'} no longer exists: "
                          f"imported into the current directory {prepared.cwd}, as omp does")
        return out, prepared, before

    def _settled(self, info: ForeignSession, status: str, rec: LedgerRecord | None) -> Outcome | None:
        if status == "imported":
            assert rec is not None
            return Outcome(info, "already imported", reason=f"as {rec.session}", session=rec.session)
        if status == "changed" and not self.update:
            assert rec is not None
            return Outcome(info, "changed", reason=f"changed since it was imported as {rec.session}; --update "
                                                   "imports it again, as a new omp session", session=rec.session)
        return None

    def _import(self, info: ForeignSession) -> Outcome:
        # The ledger is held to look and to record, not while converting: workers of this run and
        # other runs convert side by side, and a source another run recorded meanwhile is not placed.
        ledger = self.ledger
        try:
            with ledger.locked():
                ledger.refresh()
                status, rec = import_status(info, ledger)
        except OSError as e:
            return _ledger_failed(info, ledger, e)
        early = self._settled(info, status, rec)
        if early is not None:
            return early
        out, prepared, before = self._convert(info)
        if prepared is None or before is None:
            if out.unconvertible and before is not None:
                self._record_failure(info, out, before)
            return out
        try:
            staged = stage(prepared, session_dir=self._folder(prepared.cwd), blob_store=self._blob_store())
        except OSError as e:
            return _unreadable(info, e)
        except SessionError as e:
            return _failed(info, e)
        del prepared  # its entries: the file holds them now
        placed = False
        try:
            with ledger.locked():
                ledger.refresh()
                latest = ledger.latest(info.path)
                if latest is not None and latest != rec:  # another run imported it meanwhile
                    return Outcome(info, "already imported", reason=f"as {latest.session}", session=latest.session)
                # recorded before it takes its name: a run killed between the two leaves a record
                # of a session that is not there (counted as not imported: the next run imports
                # it), never a session no record names (the next run would import it twice)
                try:
                    ledger.add(LedgerRecord(source=info.source, source_id=info.id, source_path=info.path,
                                            size=before.size, mtime_ns=before.mtime_ns, session=staged.path,
                                            imported_at=now_iso()))
                except OSError as e:
                    return _ledger_failed(info, ledger, e)
                placed = True  # (place_staged removes the temporary file whatever happens)
                out.session = place_staged(staged)
        except OSError as e:
            return _ledger_failed(info, ledger, e)
        except SessionError as e:
            return _failed(info, e)
        finally:
            if not placed:
                discard_staged(staged)
        out.status = "imported"
        return out


    def _record_failure(self, info: ForeignSession, out: Outcome, before: FileTimes) -> None:
        """Note in the ledger that ``info`` (as ``before`` saw it) cannot be converted, so that
        ``list --foreign`` says so instead of offering it again. Best effort: the outcome says why."""
        try:
            with self.ledger.locked():
                self.ledger.refresh()
                self.ledger.add(LedgerFailure(source=info.source, source_id=info.id, source_path=info.path,
                                              size=before.size, mtime_ns=before.mtime_ns, failed=out.reason,
                                              failed_at=now_iso()))
        except OSError:
            pass


def _unreadable(info: ForeignSession, e: OSError) -> Outcome:
    return Outcome(info, "failed", reason=f"{e.filename or info.path}: cannot read or write: {e.strerror or e}")


def _failed(info: ForeignSession, e: Exception) -> Outcome:
    return Outcome(info, "failed", reason=str(e) if info.path in str(e) else f"{info.path}: {e}")


def _ledger_failed(info: ForeignSession, ledger: Ledger, e: OSError) -> Outcome:
    return Outcome(info, "failed", reason=f"{e.filename or ledger.path}: cannot record the import in the ledger: "
                                          f"{e.strerror or e}")


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Converting a session builds hundreds of thousands of containers and no cycle: the cyclic
    collector would walk them again and again for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_worker_job: _Job | None = None


def _start_worker(job: _Job) -> None:
    global _worker_job
    _worker_job = job


def _run_in_worker(info: ForeignSession) -> Outcome:
    assert _worker_job is not None
    return _worker_job.run(info)


def list_foreign(sources: Sequence[Source] = ("claude", "codex"), roots: Sequence[str] = (), *,
                 include_imported: bool = False, ledger: Ledger | None = None) -> list[tuple[ForeignSession, str]]:
    """Foreign sessions with their import status (new, unimportable, changed; with
    ``include_imported`` also imported), newest first: what ``list --foreign`` shows beside omp's
    sessions. ``roots`` apply to every source (default: where omp looks for each)."""
    return [(f.info, f.status) for f in list_foreign_detailed(sources, roots, include_imported=include_imported,
                                                              ledger=ledger)]


@dataclass(frozen=True)
class ForeignListed:
    """One row of ``list --foreign``: the session, its import status, why it is unimportable (else
    ""), and the created time to show (never later than its modified time: see
    :func:`~omp_session.foreign.listed.listed_created_ms`)."""

    info: ForeignSession
    status: str
    reason: str
    created_ms: float


def list_foreign_detailed(sources: Sequence[Source] = ("claude", "codex"), roots: Sequence[str] = (), *,
                          include_imported: bool = False, ledger: Ledger | None = None) -> list[ForeignListed]:
    """:func:`list_foreign` with the reason of each unimportable session and a created time
    never later than the modified one."""
    from .listed import listed_created_ms

    ledger = ledger if ledger is not None else Ledger()
    out: list[ForeignListed] = []
    for source in sources:
        for info in find_sessions(source, roots):
            status, _rec = import_status(info, ledger)
            if status != "imported" or include_imported:
                failure = import_failure(info, ledger) if status == "unimportable" else None
                out.append(ForeignListed(info, status, failure.failed if failure is not None else "",
                                         listed_created_ms(info)))
    out.sort(key=lambda f: -(f.info.modified_ms if f.info.modified_ms == f.info.modified_ms else -1e300))
    return out
