"""``omp-session sync --watch``: follow a folder of sessions and push every write to a store
within a second, through restarts of the database (docs/team.md, "Continuous upload").

* File events come from watchfiles (inotify on Linux, FSEvents, ReadDirectoryChangesW). On network
  file systems, where no events arrive, ``poll=True`` (or ``WATCHFILES_FORCE_POLLING``) compares
  the folder's sizes and nanosecond times every 0.5 s here: watchfiles' own polling (notify's)
  compares whole seconds, so a write in the same second as the scan before it went unseen until
  the next write.
* On start, one whole incremental ``sync`` (ops/sync.py) brings the store up to date; then each
  batch of events syncs only the files it names, with the same per-session decisions (only the new
  bytes appended, the title slot written, a rewritten file replaced, a conflict reported and left),
  the same record of the last sync (shared with plain ``sync`` of the same two stores) and the
  same update of the store's search tables (``catalog.derived.refresh``). A deleted file stays in
  the store, as with ``sync``. An event names a file by the path it came through; it is pushed
  under the name ``sync``'s walk gives it (no symlinked folder entered), or not at all.
* The connections stay open between batches. A store error closes them; the watcher waits 0.5 s,
  doubling up to 30 s between attempts, reconnects and runs a whole incremental sync again: the
  store's sizes say what arrived before the error, so a write cut short by it is neither lost nor
  appended twice. A push that failed without the store failing (the folder could not be listed,
  the record of the last sync not saved) is tried again the same way, on the same connections.
* The watcher itself can fail (watchfiles stops at a file name that is not UTF-8, the system may
  refuse a watch): a new one starts after the same delays, and a whole sync catches up.
* A stop (:class:`StopFlag`, set by SIGINT/SIGTERM under :func:`stop_on_signals`) is looked at
  between sessions: the write under way finishes, the search tables follow, then it returns.
"""

from __future__ import annotations

import builtins
import os
import signal
import time
from collections.abc import Callable, Collection, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, cast

from omp_session.errors import SessionError, StoreError, StoreMissingError
from omp_session.store import open_store
from omp_session.store.base import ConditionalAppend, FileStorage, SessionStorage, StoredFile
from omp_session.store.url import StoreURL, parse_store_url

from .sync import SyncItem, SyncReport, SyncState, state_path, sync

if TYPE_CHECKING:
    from omp_session.store.derived import DerivedTables

__all__ = ["Batch", "StopFlag", "stop_on_signals", "watch_sync"]

WROTE = ("copied", "appended", "titled", "replaced")
FIRST_DELAY, MAX_DELAY = 0.5, 30.0  # seconds between reconnection attempts: doubling from the first to the cap
_STEP_MS = 50  # a write is pushed once no further event came for this long...
_DEBOUNCE_MS = 400  # ...or this long after the first one, under a steady stream of writes
_POLL_S = 0.5  # --poll: how often the folder is compared (20,000 sessions: ~30 ms a scan)
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

    def append_if_size(self, path: str, expected_size: int, data: bytes) -> bool:
        # every store open_store gives has it: sync's append stays one step through this wrapper
        return cast(ConditionalAppend, self.target).append_if_size(path, expected_size, data)

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
    """A push failed; ``report``: what reached the store before. ``connection``: the store failed
    (its connections are closed and opened again), else the store is fine and only the push is
    tried again (the folder could not be listed, the record of the last sync not saved)."""

    def __init__(self, report: SyncReport, error: SessionError, *, connection: bool = True) -> None:
        super().__init__(str(error))
        self.report, self.error, self.connection = report, error, connection


class _NotSaved(Exception):
    """The record of the last sync could not be written (a full disk, a read-only cache)."""


class _WatchState(SyncState):
    """The record of the last sync, whose failure to save is told apart from the folder's
    (both are OSError) and does not undo the push it follows: the sessions are in the store."""

    def save(self) -> None:
        try:
            super().save()
        except OSError as e:
            raise _NotSaved(_os_line(e, str(self.path))) from e


@contextmanager
def _only_watcher(record: Path, message: str) -> Iterator[None]:
    """One watcher of a pair of stores on this machine at a time, by a lock beside the pair's
    record: two both see each write, both find the target's old size and both append the new
    entries (a size check and an append are two steps). Without a lock file that can be made
    (a read-only cache: said at the first push) or flock (Windows), no lock."""
    try:
        import fcntl
    except ImportError:
        fcntl = None  # type: ignore[assignment]
    fd = None
    if fcntl is not None:
        with suppress(OSError):
            record.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(record.with_name(record.name + ".watch-lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(message) from None
        yield
    finally:
        if fd is not None:
            os.close(fd)  # the lock goes with it


def _os_line(e: OSError, where: str) -> str:
    return f"{e.filename if e.filename is not None else where}: {e.strerror or e}"


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

        not_saved = None
        try:
            sync(source, target, source_root=self.source_root, target_root=target_root, state=self.state,
                 bucket=self.bucket, progress=step, prefer=self.prefer)
        except _Stopped:
            pass
        except StoreError as e:
            raise _Lost(report, e) from e
        except _NotSaved as e:  # after every session of the push: the search tables still follow
            not_saved = e
        except OSError as e:  # the folder could not be listed: nothing was pushed
            raise _Lost(report, SessionError(_os_line(e, self.source_root)), connection=False) from e
        self._refresh(report)
        if not_saved is not None:
            raise _Lost(report, SessionError(f"{not_saved}: the record of the last sync was not saved"),
                        connection=False)
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


class _Names:
    """The name ``sync`` knows a file by, for the path an event gives. ``sync`` walks the folder
    it pushes (DIR, or the project's folder in it) following it but no symlinked folder inside
    (os.walk); file events come through those too: inotify reports a write to a folder linked
    under two names under one of them (maybe the link), polling under both, FSEvents under the
    real path. The name is the one that walk finds: the event's folder resolved and placed under
    the folder pushed; None when the walk does not reach it."""

    def __init__(self, top: str) -> None:
        self.top = top  # ends with "/"
        self.real_top = ""
        self._folders: dict[str, str | None] = {}

    def renew(self) -> None:
        """Links may change between two batches (the project's folder may appear as one)."""
        self.real_top = os.path.realpath(self.top).rstrip("/") + "/"
        self._folders.clear()

    def _folder(self, path: str) -> str | None:
        if path not in self._folders:
            real = os.path.realpath(path).rstrip("/") + "/"
            self._folders[path] = self.top + real[len(self.real_top):] if real.startswith(self.real_top) else None
        return self._folders[path]

    def of(self, path: str) -> str | None:
        head, tail = os.path.split(path.rstrip("/"))
        folder = self._folder(head)
        if folder is not None:
            return folder + tail
        return self.top.rstrip("/") if self._folder(path) == self.top else None  # the pushed folder itself


def _changed(changes: Collection[tuple[int, str]], names: _Names, added: int) -> set[str]:
    """The session files a batch of events names in the folder pushed, by the names ``sync``
    gives them; an added folder (moved in whole, or made just before its first file was
    written: the file's own event is then lost) stands for every session in it, the project's
    own folder under ``--project`` included. A link to a folder is not entered, as by ``sync``."""
    out: set[str] = set()
    if not changes:  # a tick without events
        return out
    names.renew()
    for change, raw in changes:
        path = names.of(raw)
        if path is None:
            continue
        if path.endswith(".jsonl") and not os.path.isdir(path):
            out.add(path)
        elif change == added and os.path.isdir(path) and (path + "/" == names.top or not os.path.islink(path)):
            out.update(f.path for f in FileStorage().scan(path + "/"))
    return out


def _polled(root: str, stop: StopFlag, added: int, modified: int) -> Generator[set[tuple[int, str]], None, None]:
    """Events as watchfiles gives them, from comparing the folder's ``.jsonl`` files (size,
    nanosecond time, inode) and folders every :data:`_POLL_S`; the first round is the state the
    first push starts from."""
    seen = _scan(root)
    yield set()
    while not stop.is_set():
        _pause(_POLL_S, stop)
        now = _scan(root)
        yield {(added, path) if path not in seen else (modified, path) for path, sig in now.items()
               if path not in seen or seen[path] != sig}
        seen = now


def _scan(root: str) -> dict[str, tuple[int, int, int] | None]:
    """Every folder (None) and ``.jsonl`` file under ``root``, links to folders not entered."""
    out: dict[str, tuple[int, int, int] | None] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):  # gone since its parent was read
            if folder == root:
                raise
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    out[entry.path] = None
                    stack.append(entry.path)
                elif entry.name.endswith(".jsonl"):
                    st = entry.stat(follow_symlinks=False)
                    out[entry.path] = (st.st_size, st.st_mtime_ns, st.st_ino)
            except FileNotFoundError:
                continue
    return out


def _pause(seconds: float, stop: StopFlag) -> None:
    """Wait ``seconds``, or less when a stop is asked for (a signal does not cut time.sleep short)."""
    end = time.monotonic() + seconds
    while not stop.is_set() and (left := end - time.monotonic()) > 0:
        time.sleep(min(left, _TICK_MS / 1000))


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
    folder, a ``file:`` target inside the folder pushed, a folder that cannot be watched) is
    raised; after it, store and folder errors are retried.
    """
    from omp_session.catalog.derived import default_namespace
    from omp_session.paths import cache_dir, project_dir_name

    watchfiles = _watchfiles()
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
    if dst_url.kind == "file" and (os.path.realpath(dst_url.root).rstrip("/") + "/").startswith(
            os.path.realpath(prefix).rstrip("/") + "/"):
        # every file a push writes there is a write in the folder, to push again: mirror/mirror/…
        raise StoreError(f"{dst_url.name}: the target is inside the watched folder {prefix.rstrip('/')}: "
                         "each push would be pushed again")
    record = state_path(f"{src_url.name}?{src_opts}", f"{dst_url.name}?{dst_opts}", cache_dir())
    with _only_watcher(record, f"{dst_url.name}: another sync --watch from {src_url.name} to it is running on "
                       "this machine (both would push every write)"):
        _watch(watchfiles, src_url.name, dst_url, _WatchState(record), source_root=source_root, prefix=prefix,
               bucket=bucket, on_batch=on_batch, notice=notice, stop=stop, poll=poll, prefer=prefer,
               timeout=timeout, namespace=namespace if namespace is not None else default_namespace(),
               first_delay=first_delay, max_delay=max_delay)


def _watch(watchfiles: ModuleType, source_name: str, dst_url: StoreURL, state: SyncState, *, source_root: str,
           prefix: str, bucket: str | None, on_batch: Callable[[Batch], None], notice: Callable[[str], None],
           stop: StopFlag, poll: bool, prefer: str | None, timeout: float | None, namespace: str,
           first_delay: float, max_delay: float) -> None:
    """:func:`watch_sync` once its arguments are checked and the pair is this watcher's."""
    added = int(watchfiles.Change.added)
    link = _Link(source_root, dst_url, state, bucket=bucket, prefer=prefer, namespace=namespace, timeout=timeout)
    link.connect()
    delay, retry_at, full = first_delay, 0.0, True
    watch_delay, watching = first_delay, False
    pending: set[str] = set()
    names = _Names(prefix)

    def watcher() -> Generator[set[tuple[int, str]], None, None]:
        if poll or os.environ.get("WATCHFILES_FORCE_POLLING"):
            return _polled(source_root, stop, added, int(watchfiles.Change.modified))
        # None: watchfiles decides whether to poll (WSL): then in whole seconds, see above
        return watchfiles.watch(  # type: ignore[no-any-return]
            source_root, watch_filter=lambda change, path: path.endswith(".jsonl") or change == added,
            debounce=_DEBOUNCE_MS, step=_STEP_MS, stop_event=stop, rust_timeout=_TICK_MS, yield_on_timeout=True,
            raise_interrupt=False, force_polling=False)

    # the watcher runs before the first push (its first round ends after a tick), so a write made
    # during that push is an event for the next one
    events = watcher()
    try:
        while True:
            try:
                changes = next(events)
            except StopIteration:
                break
            except (OSError, RuntimeError) as e:  # RuntimeError: watchfiles' WatchfilesRustInternalError
                if not watching:
                    raise SessionError(f"{source_name}: cannot follow the folder: {e}") from e
                # the watcher is gone and its events with it (a name under DIR that is not UTF-8, a
                # watch the system refuses): a new one, and a whole sync catches up
                notice(f"{source_name}: file events lost ({e}); watching again in {watch_delay:g} s")
                full = True
                _pause(watch_delay, stop)
                if stop.is_set():
                    break
                watch_delay = min(watch_delay * 2, max_delay)
                events = watcher()
                continue
            watching, watch_delay = True, first_delay
            pending |= _changed(changes, names, added)
            if stop.is_set():
                break
            if time.monotonic() < retry_at:
                continue
            if not link.open:
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
                if e.connection:
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
