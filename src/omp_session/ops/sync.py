"""Copy sessions from one store to another, incrementally and safely (docs/stores.md, "sync").

For every session file under the source root (or one project's bucket of it), the file under the
same relative key in the target is brought to the source's bytes:

* missing in the target → written whole (refused if it appears meanwhile);
* the target is a prefix of the source → only the appended bytes are appended;
* the two differ only in the 256-byte title slot (and the source grew) → the slot is written and
  the new bytes appended, as omp itself records a title change;
* otherwise they diverged: if the target is exactly what the last sync left there, the source was
  rewritten (a migration, a repair) and replaces it, size-checked; if the target changed since
  and the source did not, the target is kept; if both changed — or there is no record of a last
  sync to tell — it is a **conflict**: reported, never overwritten, unless ``prefer`` settles it
  (``source``: the target's version is overwritten, said in the report and, in a file store,
  kept as ``<key>.sync-backup-<UTC time>``; ``target``: the target's version stays and counts as
  synced).

The target takes the source's modification time (omp orders its list, and picks ``latest``, by
it), so a synced store lists its sessions as the source does, not all as modified at sync time;
a session synced by an older version gets its time on the next run.

Every write goes through the storage's own size precondition (an append too: ``append_if_size``),
so a writer racing the sync makes it report a conflict rather than lose an entry, and two syncs of
one pair never append the same entries twice.

The record of the last sync is a small JSON file per (source, target) pair in the user cache dir
(``$XDG_CACHE_HOME/omp-session/sync/``), not in either store: the stores keep exactly omp's
layout, and omp never sees a key it does not know. Per target key it holds the source's and the
target's (size, mtime) and the SHA-256 of the synced bytes; when both sides still show the
recorded (size, mtime) nothing is read at all, so a second run moves — and reads — nothing.
Losing the record is safe: sync then compares contents, and only a divergence becomes a conflict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from omp_session.errors import PersistenceError, SessionError, StoreError, WriteConflictError
from omp_session.format.title import TITLE_SLOT_BYTES, parse_title_slot
from omp_session.store.atomic import copy_mode, write_new_file
from omp_session.store.base import FileStorage, SessionStorage, StoredFile, conflict_message

if TYPE_CHECKING:
    from omp_session.store.url import StoreURL

__all__ = ["SyncItem", "SyncReport", "SyncState", "state_path", "sync", "sync_urls"]

ACTIONS = ("copied", "appended", "titled", "replaced", "unchanged", "kept", "conflict", "failed")


@dataclass(frozen=True)
class SyncItem:
    """What happened to one session: ``action`` is one of :data:`ACTIONS`."""

    source: str
    target: str
    action: str
    bytes: int = 0  # bytes written to the target
    reason: str = ""
    backup: str = ""  # --prefer source into a file store: where the overwritten version is kept


@dataclass
class SyncReport:
    items: list[SyncItem] = field(default_factory=list)
    dry_run: bool = False
    # the target's search tables brought up to date (docs/team.md): what that did, when it has them
    derived: dict[str, object] | None = None

    def count(self, action: str) -> int:
        return sum(1 for i in self.items if i.action == action)

    @property
    def conflicts(self) -> list[SyncItem]:
        return [i for i in self.items if i.action == "conflict"]

    @property
    def bytes_moved(self) -> int:
        return sum(i.bytes for i in self.items)

    def to_json(self) -> dict[str, object]:
        return {"dry_run": self.dry_run, "bytes": self.bytes_moved,
                "counts": {a: self.count(a) for a in ACTIONS},
                "sessions": [{"source": i.source, "target": i.target, "action": i.action, "bytes": i.bytes,
                              "reason": i.reason or None, "backup": i.backup or None} for i in self.items],
                **({} if self.derived is None else {"derived": self.derived})}


@dataclass(frozen=True)
class _Record:
    source_size: int
    source_mtime: float
    target_size: int
    target_mtime: float
    sha256: str  # of the target's bytes
    # of the source's, when --prefer target left the two different on purpose (else "": the same)
    source_sha256: str = ""

    @property
    def source_sha(self) -> str:
        return self.source_sha256 or self.sha256


class SyncState:
    """The last sync of one (source, target) pair: target key → what both sides were."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.records: dict[str, _Record] = {}
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.records = {k: _Record(*v) for k, v in data.get("sessions", {}).items()}
            except (OSError, ValueError, TypeError, AttributeError):
                self.records = {}  # no usable record: contents decide (divergence = conflict)

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # the source's hash only when it differs: a record older versions read as they wrote it
        data = {"version": 1, "sessions": {k: [r.source_size, r.source_mtime, r.target_size, r.target_mtime,
                                                r.sha256, *([r.source_sha256] if r.source_sha256 else [])]
                                            for k, r in sorted(self.records.items())}}
        fd, tmp = tempfile.mkstemp(prefix=".sync.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def state_path(source_name: str, target_name: str, cache: Path) -> Path:
    """The record file of a (source, target) pair, named by a hash of both store names."""
    digest = hashlib.sha256(f"{source_name}\0{target_name}".encode()).hexdigest()[:24]
    return cache / "sync" / f"{digest}.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _has_slot(body: bytes) -> bool:
    return (len(body) >= TITLE_SLOT_BYTES and body[TITLE_SLOT_BYTES - 1] == 0x0A
            and b"\n" not in body[: TITLE_SLOT_BYTES - 1]
            and parse_title_slot(body[: TITLE_SLOT_BYTES - 1]) is not None)


class _Sync:
    def __init__(self, source: SessionStorage, target: SessionStorage, state: SyncState, dry_run: bool,
                 prefer: str | None = None) -> None:
        self.source, self.target, self.state, self.dry_run, self.prefer = source, target, state, dry_run, prefer
        self.stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())

    def one(self, src: StoredFile, key: str, found: StoredFile | None) -> SyncItem:
        """``found``: the target's listing entry for ``key`` (one listing for all, not a query each)."""
        record = self.state.records.get(key)
        if (record is not None and found is not None and (src.size, src.mtime_ms) == (record.source_size,
                record.source_mtime) and (found.size, found.mtime_ms) == (record.target_size, record.target_mtime)):
            item = SyncItem(src.path, key, "unchanged")
            if self.dry_run or abs(found.mtime_ms - src.mtime_ms) < 1 or record.source_sha256:
                return item  # (a version kept by --prefer target keeps its own time)
            return self._settle(src, key, record.sha256, record.source_size, item)  # an older version's stamp
        try:
            body = self.source.read(src.path)
        except FileNotFoundError:
            return SyncItem(src.path, key, "kept", reason="the source disappeared during the sync")
        if found is None:
            return self._write(src, key, body, "copied", lambda: self.target.replace(key, body, None), len(body))
        known = record is not None and (found.size, found.mtime_ms) == (record.target_size, record.target_mtime)
        current: bytes | None = None
        if known:
            assert record is not None
            target_sha = record.sha256
        else:
            current = self.target.read(key)
            target_sha = _sha(current)
        size = found.size if current is None else len(current)
        if len(body) >= size and _sha(body[:size]) == target_sha:
            if len(body) == size:
                return self._done(src, key, body, SyncItem(src.path, key, "unchanged"))
            if size == 0 or body[size - 1] == 0x0A:
                delta = body[size:]
                return self._write(src, key, body, "appended", lambda: self._append(key, size, delta), len(delta))
            return self._write(src, key, body, "replaced", lambda: self.target.replace(key, body, size), len(body),
                               reason="the target's last line was cut")
        if current is None:
            current = self.target.read(key)
            size = len(current)
        if (len(body) >= size >= TITLE_SLOT_BYTES and _has_slot(body) and _has_slot(current)
                and body[TITLE_SLOT_BYTES:size] == current[TITLE_SLOT_BYTES:]
                and (size == len(body) or body[size - 1] == 0x0A)):
            delta, slot = body[size:], body[:TITLE_SLOT_BYTES]
            return self._write(src, key, body, "titled", lambda: self._retitle(key, size, delta, slot, body),
                               len(delta) + TITLE_SLOT_BYTES)
        source_changed = record is None or _sha(body) != record.source_sha
        target_changed = record is None or _sha(current) != record.sha256
        # --prefer target left the two different: the target's version is not the source's to replace
        kept_on_purpose = record is not None and record.source_sha != record.sha256
        if not target_changed and not kept_on_purpose:
            return self._write(src, key, body, "replaced", lambda: self.target.replace(key, body, size), len(body),
                               reason="the source was rewritten")
        if not source_changed:
            if record is not None and kept_on_purpose and not target_changed:  # only the source's time moved
                item = SyncItem(src.path, key, "kept", reason="--prefer target kept the target's version")
                return item if self.dry_run else self._settle(
                    src, key, record.sha256, src.size if len(body) == src.size else -1, item, stamp=False,
                    source_sha=record.source_sha)
            return SyncItem(src.path, key, "kept", reason="the target changed since the last sync, the source did not")
        why = "both changed since the last sync" if record is not None and target_changed else \
            "the source changed since --prefer target kept the target's version" if kept_on_purpose else \
            "the two differ and there is no record of a previous sync to tell which changed"
        if self.prefer == "source":
            return self._overwrite(src, key, body, current, why)
        if self.prefer == "target":
            item = SyncItem(src.path, key, "kept", reason=f"conflict ({why}): --prefer target kept the target's "
                            "version")
            if self.dry_run:
                return item
            # the target's version counts as synced: the next run sees nothing to do
            source_size = src.size if len(body) == src.size else -1
            return self._settle(src, key, _sha(current), source_size, item, stamp=False, source_sha=_sha(body))
        return SyncItem(src.path, key, "conflict", reason=why)

    def _overwrite(self, src: StoredFile, key: str, body: bytes, current: bytes, why: str) -> SyncItem:
        """--prefer source on a conflict: never silent, and a file store keeps what it overwrote."""
        old = f"{len(current):,} bytes, sha256 {_sha(current)[:16]}…"
        backup = ""
        if isinstance(self.target, FileStorage) and not self.dry_run:
            backup = _free_name(f"{key}.sync-backup-{self.stamp}")  # omp lists only *.jsonl
            try:
                write_new_file(backup, [current], force=False, error=StoreError, mode=copy_mode(key))
            except StoreError as e:
                return SyncItem(src.path, key, "conflict", reason=f"{why}; not overwritten: the backup failed ({e})")
        verb = "would overwrite" if self.dry_run else "overwrote"
        kept = f"; it is kept as {backup}" if backup else (
            "" if isinstance(self.target, FileStorage) else "; a database store keeps no backup")
        reason = f"conflict ({why}): --prefer source {verb} the target's version ({old}){kept}"
        return self._write(src, key, body, "replaced", lambda: self.target.replace(key, body, len(current)),
                           len(body), reason=reason, backup=backup)

    def _append(self, key: str, size: int, delta: bytes) -> None:
        # appended only while the target still has the size we compared against, in one step of the
        # storage: a sync of the same pair (a `sync --watch`, another machine) that appended the
        # same entries meanwhile makes this a conflict, not the entries twice
        append_if_size: Callable[[str, int, bytes], bool] | None = getattr(self.target, "append_if_size", None)
        if append_if_size is not None:
            if not append_if_size(key, size, delta):
                raise WriteConflictError(conflict_message(key, size, self.target.size(key)))
            return
        # a wrapper that forwards only omp's operations: the check and the append are two steps
        found = self.target.size(key)
        if found != size:
            raise WriteConflictError(conflict_message(key, size, found))
        added = self.target.append(key, delta)
        if added != len(delta):  # cannot happen after the LF check; never leave it unnoticed
            raise WriteConflictError(f"{key}: the target changed during the sync")

    def _retitle(self, key: str, size: int, delta: bytes, slot: bytes, body: bytes) -> None:
        if delta:
            self._append(key, size, delta)
        if not self.target.write_title_slot(key, slot):
            self.target.replace(key, body, size + len(delta))

    def _write(self, src: StoredFile, key: str, body: bytes, action: str, write: Callable[[], None],
               moved: int, reason: str = "", backup: str = "") -> SyncItem:
        item = SyncItem(src.path, key, action, moved, reason, backup)
        if self.dry_run:
            return item
        try:
            write()
        except WriteConflictError as e:
            return SyncItem(src.path, key, "conflict", reason=f"the target changed during the sync ({e})")
        except FileNotFoundError:
            return SyncItem(src.path, key, "conflict", reason="the target disappeared during the sync")
        return self._done(src, key, body, item)

    def _done(self, src: StoredFile, key: str, body: bytes, item: SyncItem) -> SyncItem:
        if self.dry_run:
            return item
        # a source that changed between the listing and the read is re-read next time
        return self._settle(src, key, _sha(body), src.size if len(body) == src.size else -1, item)

    def _settle(self, src: StoredFile, key: str, sha: str, source_size: int, item: SyncItem, *,
                stamp: bool = True, source_sha: str = "") -> SyncItem:
        """Give the target the source's modification time and record what both sides are now."""
        after = self.target.stat(key)
        if after is not None and stamp and abs(after.mtime_ms - src.mtime_ms) >= 1:
            set_mtime = getattr(self.target, "set_mtime", None)  # a storage of omp's layout has one
            if set_mtime is not None and set_mtime(key, src.mtime_ms, after.size):
                after = self.target.stat(key)
        if after is not None:
            self.state.records[key] = _Record(source_size, src.mtime_ms, after.size, after.mtime_ms, sha,
                                              "" if source_sha == sha else source_sha)
        return item


def _free_name(base: str) -> str:
    """``base``, or ``base-2``, ``base-3``…: a backup never replaces an earlier one."""
    name, n = base, 1
    while os.path.lexists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def sync(source: SessionStorage, target: SessionStorage, *, source_root: str, target_root: str,
         state: SyncState | None = None, bucket: str | None = None, since_ms: float | None = None,
         dry_run: bool = False, progress: Callable[[int, int, SyncItem], None] | None = None,
         prefer: str | None = None) -> SyncReport:
    """Bring every session under ``source_root`` (only ``bucket``, a project's bucket name, when
    given; only those modified at or after ``since_ms``) to the same relative key under
    ``target_root``. ``state`` is the record of the last sync (saved unless ``dry_run``).
    ``prefer`` (``"source"`` or ``"target"``) settles conflicts (see the module docstring)."""
    if prefer not in (None, "source", "target"):
        raise ValueError(f"prefer must be 'source' or 'target', not {prefer!r}")
    source_root = source_root if source_root.endswith("/") else source_root + "/"
    target_root = target_root if target_root.endswith("/") else target_root + "/"
    prefix = source_root + (bucket + "/" if bucket else "")
    state = state if state is not None else SyncState(None)
    files = [f for f in source.scan(prefix) if since_ms is None or f.mtime_ms >= since_ms]
    listed = {f.path: f for f in target.scan(target_root + prefix[len(source_root):])} if files else {}
    report = SyncReport(dry_run=dry_run)
    worker = _Sync(source, target, state, dry_run, prefer)
    try:
        for n, f in enumerate(files, 1):
            rel = f.path[len(source_root):]
            key = target_root + rel
            try:
                if any(part in ("", ".", "..") for part in rel.split("/")):
                    # omp never writes such a key; copied to a file: store it would land outside the root
                    item = SyncItem(f.path, key, "failed", reason=f"{f.path}: a key with an empty, '.' or '..' "
                                    "segment is not copied")
                else:
                    item = worker.one(f, key, listed.get(key))
            except PersistenceError as e:  # this body cannot go there (e.g. not UTF-8 for SQL): the rest can
                item = SyncItem(f.path, key, "failed", reason=str(e))
            except OSError as e:  # unreadable, or deleted since the listing: the rest can still be synced
                where = e.filename if e.filename is not None else (e.args[0] if e.args else key)
                item = SyncItem(f.path, key, "failed", reason=f"{where}: {e.strerror or 'disappeared during the sync'}")
            report.items.append(item)
            if progress is not None:
                progress(n, len(files), item)
    finally:
        if not dry_run:
            state.save()
    return report


def _refuse_nested(src: StoreURL, dst: StoreURL, prefix: str) -> None:
    """A target root inside what is synced, in the same store (one folder tree, one table, one Redis
    prefix), would have each run copy the copies the run before made, one level deeper."""
    if src.kind != dst.kind:
        return
    if src.kind == "file":
        inside = (os.path.realpath(dst.root).rstrip("/") + "/").startswith(os.path.realpath(prefix).rstrip("/") + "/")
    else:
        def where(u: StoreURL) -> tuple[str, list[tuple[str, str]]]:
            # omp's default table or prefix named or not is one table or prefix
            given = {"prefix": "omp:sessions:"} if u.kind == "redis" else {"table": "omp_session_files"}
            given.update((k, v) for k, v in u.options.items() if k not in ("timeout", "root"))
            if u.kind == "postgres" and "table" in given:  # omp inlines it unquoted: folded to lower case
                given["table"] = given["table"].lower()
            return u.location, sorted(given.items())

        inside = where(src) == where(dst) and dst.root.startswith(prefix)
    if inside:
        raise StoreError(f"{dst.name}: the target is inside the source {prefix.rstrip('/')}: each sync would copy "
                         "the copies of the one before again, one level deeper")


def sync_urls(source_url: str, target_url: str, *, project: str | None = None, since_ms: float | None = None,
              dry_run: bool = False, progress: Callable[[int, int, SyncItem], None] | None = None,
              use_state: bool = True, prefer: str | None = None, timeout: float | None = None,
              namespace: str | None = None) -> SyncReport:
    """:func:`sync` between two store URLs (docs/stores.md): the source is opened for reading,
    the target's table is created if needed; ``project`` limits it to that directory's bucket.
    ``timeout``: seconds each server has to connect (default: the URL's, else 10).
    ``namespace``: what the target's search tables record as the sessions' origin (default
    ``user@host`` of this machine; docs/team.md)."""
    from omp_session.catalog.summaries import cache_dir
    from omp_session.errors import StoreMissingError
    from omp_session.paths import project_dir_name
    from omp_session.store import open_store, parse_store_url
    from omp_session.store.base import MemoryStorage

    src_url, dst_url = parse_store_url(source_url), parse_store_url(target_url)
    # the timeout says how to reach a store, not which store it is
    src_opts = sorted((k, v) for k, v in src_url.options.items() if k != "timeout")
    dst_opts = sorted((k, v) for k, v in dst_url.options.items() if k != "timeout")
    if (src_url.kind, src_url.location, src_url.root, src_opts) == \
            (dst_url.kind, dst_url.location, dst_url.root, dst_opts):
        raise StoreError(f"{src_url.name}: the source and the target are the same store")
    bucket = project_dir_name(project) if project is not None else None
    _refuse_nested(src_url, dst_url, src_url.root + (bucket + "/" if bucket else ""))
    source = open_store(src_url, create=False, timeout=timeout)
    try:
        try:
            target = open_store(dst_url, create=not dry_run, timeout=timeout)
        except StoreMissingError:
            target = MemoryStorage()  # a dry run into a store that does not exist yet: all would be copied
        try:
            pair = f"{src_url.name}?{src_opts}", f"{dst_url.name}?{dst_opts}"
            state = SyncState(state_path(pair[0], pair[1], cache_dir()) if use_state else None)
            report = sync(source, target, source_root=src_url.root, target_root=dst_url.root, state=state,
                          bucket=bucket, since_ms=since_ms, dry_run=dry_run, progress=progress, prefer=prefer)
        finally:
            target.close()
    finally:
        source.close()
    if not dry_run and dst_url.kind in ("postgres", "sqlite"):
        # a target with search tables (made once by `index --store`) has them brought up to date;
        # what this sync wrote is recorded as this machine's, and so is a session under its root
        # that the tables see for the first time (omp of this machine wrote it there itself)
        from omp_session.catalog.derived import default_namespace, refresh_url

        ns = namespace if namespace is not None else default_namespace()
        wrote = {i.target: ns for i in report.items if i.action in ("copied", "appended", "titled", "replaced")}
        try:
            derived = refresh_url(dst_url, create=False, namespaces=wrote, new_namespace=ns, timeout=timeout)
        except SessionError as e:
            # the sessions are copied and the sync state saved: search tables that cannot be
            # updated are reported, not a failed sync (the next sync or `index --store` catches up)
            report.derived = {"error": f"search tables not updated: {e}"}
        else:
            report.derived = None if derived is None else derived.to_json()
    return report
