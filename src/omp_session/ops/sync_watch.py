"""``omp-session sync --watch``: follow a folder of sessions and push every write to a store
within a second, through restarts of the database (docs/team.md, "Continuous upload").

* File events come from watchfiles (inotify on Linux, FSEvents, ReadDirectoryChangesW), or from
  its polling (``poll=True``) on network file systems, where no events arrive.
* On start, one whole incremental ``sync`` (ops/sync.py) brings the store up to date; then each
  batch of events syncs only the files it names, with the same per-session decisions (only the new
  bytes appended, the title slot written, a rewritten file replaced, a conflict reported and left),
  the same record of the last sync (shared with plain ``sync`` of the same two stores) and the
  same update of the store's search tables (``catalog.derived.refresh``). A deleted file stays in
  the store, as with ``sync``.
* The connections stay open between batches. A store error closes them; the watcher waits 0.5 s,
  doubling up to 30 s between attempts, reconnects and runs a whole incremental sync again: the
  store's sizes say what arrived before the error, so a write cut short by it is neither lost nor
  appended twice.
* A stop (:class:`StopFlag`, set by SIGINT/SIGTERM under :func:`stop_on_signals`) is looked at
  between sessions: the write under way finishes, the search tables follow, then it returns.
"""

from __future__ import annotations

import builtins
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType, ModuleType
from typing import TYPE_CHECKING

from omp_session.errors import SessionError, StoreError, StoreMissingError
from omp_session.store import open_store
from omp_session.store.base import FileStorage, SessionStorage, StoredFile
from omp_session.store.url import StoreURL, parse_store_url

from .sync import SyncItem, SyncReport, SyncState, state_path, sync

if TYPE_CHECKING:
    from omp_session.store.derived import DerivedTables

__all__ = ["Batch", "StopFlag", "stop_on_signals", "watch_sync"]

WROTE = ("copied", "appended", "titled", "replaced")
FIRST_DELAY, MAX_DELAY = 0.5, 30.0  # seconds between reconnection attempts: doubling from the first to the cap
_STEP_MS = 50  # a write is pushed once no further event came for this long...
_DEBOUNCE_MS = 400  # ...or this long after the first one, under a steady stream of writes
_TICK_MS = 250  # how often the loop looks at the clock without events (a reconnection due)


class StopFlag:
    """Asks the watcher to stop. A plain attribute, not a ``threading.Event``: it is set from a
    signal handler, where taking the Event's lock could deadlock on the interrupted thread."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


@contextmanager
def stop_on_signals(stop: StopFlag) -> Iterator[None]:
    """While inside, SIGINT (Ctrl-C) and SIGTERM set ``stop``: the write under way finishes first.
    A second signal raises KeyboardInterrupt at once. Main thread only (Python's rule)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    saved = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, previous in saved.items():
            signal.signal(s, previous)


@dataclass(frozen=True)
class Batch:
    """One push: ``full`` for the whole sync on start and after each reconnection, else the files
    one batch of events named. ``started``: ``time.time()`` when it began."""

    report: SyncReport
    full: bool
    started: float


class _Only(FileStorage):
    """Files as one batch sees them: its listing is the files it names that exist, nothing walked."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = sorted(set(paths))

    def scan(self, prefix: str) -> list[StoredFile]:
        found = (self.stat(p) for p in self.paths if p.startswith(prefix) and not os.path.isdir(p))
        return [f for f in found if f is not None]


class _Keyed:
    """A database or Redis target as one batch needs it: its listing is a lookup of each key the
    batch touches, not a listing of every session under the root at every write."""

    def __init__(self, target: SessionStorage, keys: Iterable[str]) -> None:
        self.target, self.keys = target, sorted(set(keys))
        self.persistent = target.persistent

    def scan(self, prefix: str) -> builtins.list[StoredFile]:
        found = (self.target.stat(k) for k in self.keys if k.startswith(prefix))
        return [f for f in found if f is not None]

    def set_mtime(self, path: str, mtime_ms: float, expected_size: int) -> bool:
        set_mtime: Callable[[str, float, int], bool] | None = getattr(self.target, "set_mtime", None)
        return set_mtime is not None and set_mtime(path, mtime_ms, expected_size)

    def size(self, path: str) -> int | None:
        return self.target.size(path)

    def stat(self, path: str) -> StoredFile | None:
        return self.target.stat(path)

    def read(self, path: str) -> bytes:
        return self.target.read(path)

    def append(self, path: str, line: bytes) -> int:
        return self.target.append(path, line)

    def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
        self.target.replace(path, body, expected_size)

    def write_title_slot(self, path: str, slot: bytes) -> bool:
        return self.target.write_title_slot(path, slot)

    def list(self, directory: str, pattern: str) -> builtins.list[str]:
        return self.target.list(directory, pattern)

    def delete(self, path: str) -> None:
        self.target.delete(path)

    def rename(self, src: str, dst: str) -> None:
        self.target.rename(src, dst)

    def close(self) -> None:
        """The real target is closed by its owner."""


class _Stopped(Exception):
    """Raised between two sessions of a push when a stop was asked for."""


class _Lost(Exception):
    """The store failed during a push; ``report``: what reached it before."""

    def __init__(self, report: SyncReport, error: SessionError) -> None:
        super().__init__(str(error))
        self.report, self.error = report, error


class _Link:
    """The target's open connections (omp's table, and its search tables where it has them) and
    what one push does through them."""

    def __init__(self, source_root: str, url: StoreURL, state: SyncState, *, bucket: str | None,
                 prefer: str | None, namespace: str, timeout: float | None) -> None:
        self.source_root, self.url, self.state, self.bucket = source_root, url, state, bucket
        self.prefer, self.namespace, self.timeout = prefer, namespace, timeout
        self.storage: SessionStorage | None = None
        self.tables: DerivedTables | None = None

    @property
    def open(self) -> bool:
        return self.storage is not None

    def connect(self) -> None:
        self.storage = open_store(self.url, create=True, timeout=self.timeout)
        if self.url.kind in ("postgres", "sqlite"):
            from omp_session.store.derived import open_derived

            try:
                self.tables = open_derived(self.url, timeout=self.timeout)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        for part in (self.tables, self.storage):
            if part is not None:
                with suppress(Exception):  # a connection already lost has nothing left to release
                    part.close()
        self.storage, self.tables = None, None

    def push(self, paths: Sequence[str] | None, stop: StopFlag) -> SyncReport:
        """Sync ``paths`` (None: every session under the root), then the search tables."""
        assert self.storage is not None
        target_root = self.url.root
        source: SessionStorage = FileStorage()
        target: SessionStorage = self.storage
        if paths is not None:
            keys = [target_root + p[len(self.source_root):] for p in paths]
            source = _Only(paths)
            target = _Only(keys) if isinstance(self.storage, FileStorage) else _Keyed(self.storage, keys)
        report = SyncReport()

        def step(done: int, total: int, item: SyncItem) -> None:
            report.items.append(item)
            if stop.is_set() and done < total:
                raise _Stopped

        try:
            sync(source, target, source_root=self.source_root, target_root=target_root, state=self.state,
                 bucket=self.bucket, progress=step, prefer=self.prefer)
        except _Stopped:
            pass
        except StoreError as e:
            raise _Lost(report, e) from e
        self._refresh(report)
        return report

    def _refresh(self, report: SyncReport) -> None:
        """The search tables after a push, as ``sync --to`` brings them up to date (when the store
        has them): what this push wrote is recorded as this machine's."""
        if self.tables is None:
            return
        from omp_session.catalog.derived import refresh

        wrote = {i.target: self.namespace for i in report.items if i.action in WROTE}
        try:
            if self.tables.exists():
                report.derived = refresh(self.tables, self.url.root, namespaces=wrote,
                                         new_namespace=self.namespace).to_json()
        except SessionError as e:
            if not self._alive():
                raise _Lost(report, e) from e
            # refused by the database, not lost: the sessions are there; said, and tried at the next push
            report.derived = {"error": f"search tables not updated: {e}"}

    def _alive(self) -> bool:
        assert self.tables is not None
        try:
            self.tables.rows("SELECT 1")
        except SessionError:
            return False
        return True


def _watchfiles() -> ModuleType:
    """The watchfiles package, or one line naming the extra that brings it (extras.py)."""
    from omp_session.extras import require

    return require("watchfiles")


def _changed(changes: Iterable[tuple[int, str]], prefix: str, added: int) -> set[str]:
    """The session files a batch of events names under ``prefix``; an added folder (moved in
    whole, or made just before its first file was written) stands for every session in it."""
    out: set[str] = set()
    for change, path in changes:
        if not path.startswith(prefix):
            continue
        if path.endswith(".jsonl") and not os.path.isdir(path):
            out.add(path)
        elif change == added and os.path.isdir(path):
            out.update(f.path for f in FileStorage().scan(path.rstrip("/") + "/"))
    return out


def watch_sync(source_url: str, target_url: str, *, on_batch: Callable[[Batch], None],
               on_notice: Callable[[str], None] | None = None, stop: StopFlag | None = None, poll: bool = False,
               project: str | None = None, prefer: str | None = None, timeout: float | None = None,
               namespace: str | None = None, first_delay: float = FIRST_DELAY,
               max_delay: float = MAX_DELAY) -> None:
    """Push every session under the ``file:`` store ``source_url`` to ``target_url``, then each
    write as it happens, until ``stop`` is set. ``on_batch`` gets each push that moved something
    or found a problem (and the whole sync on start, always); ``on_notice`` one line for each
    store error and reconnection. ``project``, ``prefer``, ``timeout``, ``namespace``: as for
    :func:`~omp_session.ops.sync.sync_urls`. ``poll``: find changes by polling (network file
    systems). An error before the first push (a bad URL, a store that cannot be reached, no such
    folder) is raised; after it, store errors are retried.
    """
    from omp_session.catalog.derived import default_namespace
    from omp_session.paths import cache_dir, project_dir_name

    watchfiles = _watchfiles()
    added = int(watchfiles.Change.added)
    stop = stop if stop is not None else StopFlag()
    notice = on_notice if on_notice is not None else (lambda text: None)
    src_url, dst_url = parse_store_url(source_url), parse_store_url(target_url)
    if src_url.kind != "file":
        raise StoreError(f"{src_url.name}: sync --watch follows a folder: the source must be a file: store")
    # the record of the last sync is the one plain `sync` of this pair keeps (ops/sync.py's naming)
    src_opts = sorted((k, v) for k, v in src_url.options.items() if k != "timeout")
    dst_opts = sorted((k, v) for k, v in dst_url.options.items() if k != "timeout")
    if (src_url.kind, src_url.location, src_url.root, src_opts) == \
            (dst_url.kind, dst_url.location, dst_url.root, dst_opts):
        raise StoreError(f"{src_url.name}: the source and the target are the same store")
    source_root = src_url.root
    if not os.path.isdir(source_root):
        raise StoreMissingError(f"{src_url.name}: no such directory {source_root.rstrip('/')}")
    bucket = project_dir_name(project) if project is not None else None
    prefix = source_root + (bucket + "/" if bucket else "")
    state = SyncState(state_path(f"{src_url.name}?{src_opts}", f"{dst_url.name}?{dst_opts}", cache_dir()))
    link = _Link(source_root, dst_url, state, bucket=bucket, prefer=prefer,
                 namespace=namespace if namespace is not None else default_namespace(), timeout=timeout)
    link.connect()
    delay, retry_at, full = first_delay, 0.0, True
    pending: set[str] = set()
    # the watcher runs before the first push (its first round ends after a tick), so a write made
    # during that push is an event for the next one
    events = watchfiles.watch(
        source_root, watch_filter=lambda change, path: path.endswith(".jsonl") or change == added,
        debounce=_DEBOUNCE_MS, step=_STEP_MS, stop_event=stop, rust_timeout=_TICK_MS, yield_on_timeout=True,
        raise_interrupt=False, force_polling=True if poll else None)  # None: watchfiles decides (WSL, env)
    try:
        for changes in events:
            pending |= _changed(changes, prefix, added)
            if stop.is_set():
                break
            if not link.open:
                if time.monotonic() < retry_at:
                    continue
                try:
                    link.connect()
                except StoreError as e:
                    notice(f"{e}; trying again in {delay:g} s")
                    retry_at, delay = time.monotonic() + delay, min(delay * 2, max_delay)
                    continue
                notice(f"{dst_url.name}: connected again")
            if not (full or pending):
                continue
            paths, started = (None if full else sorted(pending)), time.time()
            pending = set()
            try:
                report = link.push(paths, stop)
            except _Lost as e:
                if e.report.items:
                    on_batch(Batch(e.report, full, started))
                link.close()
                full = True  # whatever changed meanwhile: the store's sizes tell what is there already
                notice(f"{e.error}; trying again in {delay:g} s")
                retry_at, delay = time.monotonic() + delay, min(delay * 2, max_delay)
                continue
            delay = first_delay
            if full or (report.derived is not None and "error" in report.derived) or \
                    any(i.action != "unchanged" for i in report.items):
                on_batch(Batch(report, full, started))
            full = False
    finally:
        with suppress(Exception):
            events.close()
        link.close()
