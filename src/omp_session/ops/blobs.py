"""Blob store maintenance over session roots: verify, gc, stats (docs/blobs.md).

omp never deletes a blob (spec S8.8): the store only grows. Finding which blobs are still used
means finding every ``blob:sha256:<hex>`` in every session that might be resumed, so the scan is
a plain byte search, chunk by chunk, over every file under the roots whose name holds
``.jsonl`` — live sessions, subagent sessions in artifact folders, ``.jsonl.gz`` archives
(decompressed as they stream), repair backups (``.jsonl.bak``) — plus the session files omp
registered outside its root (``<agent dir>/custom-session-files``). A reference anywhere in a
file counts, even in text where omp would never resolve it: gc must err on the side of keeping.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from omp_session.errors import BlobError
from omp_session.format.blobs import BLOB_PREFIX, BlobStore
from omp_session.paths import (
    agent_dir,
    blobs_dir,
    config_root,
    profile_name,
    session_dir_override,
    sessions_dir,
)

__all__ = [
    "DEFAULT_MIN_AGE",
    "BlobInfo",
    "BlobRef",
    "GcResult",
    "RefScan",
    "StoreStats",
    "VerifyResult",
    "collect_gc",
    "default_roots",
    "delete_blobs",
    "iter_session_files",
    "scan_file_refs",
    "scan_refs",
    "store_stats",
    "verify_store",
]

_MARK = BLOB_PREFIX.encode("ascii")
_REF_SPAN = len(_MARK) + 64
_CHUNK = 1 << 20
_HEX64 = re.compile(rb"[a-f0-9]{64}")
_HASH_NAME = re.compile(r"[a-f0-9]{64}")
_SIDECAR_NAME = re.compile(r"([a-f0-9]{64})\.(.+)")
_GZIP_MAGIC = b"\x1f\x8b"
# omp writes a blob before the line that references it: a blob younger than this may belong to
# a line being written right now, so gc leaves it.
DEFAULT_MIN_AGE = 3600.0


@dataclass(frozen=True, slots=True)
class BlobRef:
    """One ``blob:sha256:`` occurrence: the file, its 1-based physical line (0: not counted), and
    the text after the prefix."""

    file: str
    line: int
    ref: str  # the 64 characters after the prefix (shorter at end of file), as found
    sha: str | None  # the hash when canonical, else None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {BLOB_PREFIX}{self.ref}"


@dataclass(slots=True)
class RefScan:
    """Every reference found under the roots (duplicates within one file counted once per hash)."""

    files: list[str] = field(default_factory=list)
    referenced: dict[str, list[str]] = field(default_factory=dict)  # sha -> files referencing it
    first_seen: dict[tuple[str, str], int] = field(default_factory=dict)  # (file, sha) pairs seen
    malformed: list[BlobRef] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)
    ref_count: int = 0


def default_roots() -> list[Path]:
    """The sessions root omp uses now (spec S9), plus, when they exist, the folder ``omp gc
    --archive`` moves old sessions to (``<sessions dir>/../archive/sessions``: those can be
    restored) and ``$PI_CODING_AGENT_SESSION_DIR`` (omp's sessions outside its root)."""
    root = sessions_dir()
    extra = [root.parent / "archive" / "sessions"]
    override = session_dir_override()
    if override:
        extra.append(Path(override))
    return [root, *(p for p in extra if p.is_dir())]


def _state_dirs() -> list[Path]:
    """Where omp keeps its per-user state: the agent dir, or (default agent dir after ``omp config
    init-xdg``) ``$XDG_STATE_HOME/omp`` — both are read, a stale copy only keeps more."""
    out = [agent_dir()]
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg and sys.platform in ("linux", "darwin") and out[0] == config_root(os.environ) / "agent":
        profile = profile_name(os.environ)
        base = Path(xdg) / "omp"
        candidate = base / "profiles" / profile if profile else base
        if candidate.is_dir():
            out.append(candidate)
    return out


def _registered_sessions() -> list[str]:
    """Session files omp keeps outside its root, from ``<agent dir>/custom-session-files`` and
    ``<agent dir>/terminal-sessions`` (S9.6)."""
    out: list[str] = []
    for state in _state_dirs():
        for name in _names(state / "custom-session-files"):
            try:
                text = (state / "custom-session-files" / name).read_text("utf-8", "replace").strip()
            except OSError:
                continue
            if text and os.path.isabs(text):
                out.append(text)
        # Terminal breadcrumbs (line 1 cwd, line 2 session path, maybe relative to it) name the
        # current session even when its registry marker was never written; omp's own gc reads them.
        for name in _names(state / "terminal-sessions"):
            try:
                lines = (state / "terminal-sessions" / name).read_text("utf-8", "replace").split("\n")
            except OSError:
                continue
            if len(lines) >= 2 and lines[0].strip() and lines[1].strip():
                out.append(os.path.abspath(os.path.join(lines[0].strip(), lines[1].strip())))
    return out


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def iter_session_files(roots: Iterable[str | os.PathLike[str]], *, registered: bool = True) -> Iterator[str]:
    """Every file under ``roots`` whose name holds ``.jsonl`` (sorted walk), then the registered
    session files and their artifact folders. A root that does not exist raises BlobError: a
    mistyped root must not make gc believe no blob is referenced."""
    seen: set[str] = set()
    starts: list[str] = []
    for root in roots:
        r = os.fspath(root)
        if not os.path.isdir(r):
            raise BlobError(f"{r}: no such sessions directory")
        starts.append(r)
    extra: list[str] = []
    if registered:
        for f in _registered_sessions():
            if os.path.isfile(f):
                extra.append(f)
            base = f[:-len(".jsonl")] if f.endswith(".jsonl") else None
            if base and os.path.isdir(base):
                starts.append(base)
    walked: set[str] = set()
    for start in starts:
        # Symlinked folders are followed (a project folder moved to another disk still holds
        # live sessions); each real folder is walked once, which also breaks link cycles.
        for dirpath, dirnames, filenames in os.walk(start, followlinks=True):
            here = os.path.realpath(dirpath)
            if here in walked:
                dirnames[:] = []
                continue
            walked.add(here)
            dirnames.sort()
            for name in sorted(filenames):
                if ".jsonl" in name:
                    p = os.path.join(dirpath, name)
                    real = os.path.realpath(p)
                    if real not in seen:
                        seen.add(real)
                        yield p
    for f in extra:
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            yield f


def _open_stream(path: str) -> BinaryIO:
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller, closed there
    head = f.read(2)
    f.seek(0)
    if head == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    return f


def scan_file_refs(path: str, *, lines: bool = False) -> Iterator[BlobRef]:
    """Every ``blob:sha256:`` occurrence in one file (gzip streams decompressed), in order.

    One buffer is refilled in place; its last reference-length of bytes is carried to the front
    so a reference split across two reads is found once. Physical lines are counted only with
    ``lines=True`` (else ``line`` is 0): counting costs as much as the search itself, and only
    the references reported as problems need them.
    """
    buf = bytearray(_CHUNK + _REF_SPAN)
    view = memoryview(buf)
    with _open_stream(path) as f:
        have = 0  # valid bytes in buf
        line = 1
        counted = 0  # bytes of buf already counted into `line`
        eof = False
        while not eof:
            n = f.readinto(view[have:])  # type: ignore[attr-defined]
            eof = not n
            have += n or 0
            limit = have if eof else have - _REF_SPAN
            pos = buf.find(_MARK, 0, have)
            while 0 <= pos < limit:
                if lines:
                    line += buf.count(b"\n", counted, pos)
                    counted = pos
                raw = bytes(buf[pos + len(_MARK):min(pos + _REF_SPAN, have)])
                sha = raw.decode("ascii") if _HEX64.fullmatch(raw) else None
                text = sha if sha is not None else raw.split(b'"', 1)[0].decode("utf-8", "replace")
                yield BlobRef(path, line if lines else 0, text, sha)
                pos = buf.find(_MARK, pos + len(_MARK), have)
            if eof:
                break
            keep = max(limit, 0)
            if lines:
                line += buf.count(b"\n", counted, keep)
            buf[:have - keep] = buf[keep:have]
            have -= keep
            counted = 0


def scan_refs(roots: Iterable[str | os.PathLike[str]], *, registered: bool = True,
              files: Iterable[str] | None = None) -> RefScan:
    """Scan every session file under ``roots`` (or exactly ``files``) for blob references."""
    out = RefScan()
    for path in (files if files is not None else iter_session_files(roots, registered=registered)):
        out.files.append(path)
        try:
            for ref in scan_file_refs(path):
                out.ref_count += 1
                if ref.sha is None:
                    out.malformed.append(ref)
                    continue
                key = (path, ref.sha)
                if key not in out.first_seen:
                    out.first_seen[key] = 0
                    out.referenced.setdefault(ref.sha, []).append(path)
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as e:
            out.unreadable.append((path, str(e) or type(e).__name__))
    return out


def _with_lines(refs: list[BlobRef], wanted: Callable[[BlobRef], bool]) -> list[BlobRef]:
    """The references of ``refs``' files that ``wanted`` keeps, with their lines (one rescan per file)."""
    out: list[BlobRef] = []
    for f in dict.fromkeys(r.file for r in refs):
        with contextlib.suppress(OSError, EOFError, zlib.error, gzip.BadGzipFile):
            out.extend(r for r in scan_file_refs(f, lines=True) if wanted(r))
    return out


# ----------------------------------------------------------------- the store


@dataclass(frozen=True, slots=True)
class BlobInfo:
    sha: str
    size: int
    mtime: float
    sidecars: tuple[str, ...]  # extensions of <sha>.<ext> files
    sidecar_bytes: int  # bytes of sidecars that are copies, not hard links of the blob


def _store_root(store: BlobStore | str | os.PathLike[str] | None) -> Path:
    if store is None:
        return blobs_dir()
    return store.root if isinstance(store, BlobStore) else Path(store)


def _list_store(root: Path) -> tuple[dict[str, BlobInfo], list[str], list[str]]:
    """(blobs by hash, orphan sidecar names, other names) of a store directory."""
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return {}, [], []
    except OSError as e:
        raise BlobError(f"{root}: cannot read the blob store: {e.strerror or e}") from None
    sidecars: dict[str, list[str]] = {}
    mains: dict[str, os.stat_result] = {}
    other: list[str] = []
    for name in names:
        if _HASH_NAME.fullmatch(name):
            try:
                st = os.stat(root / name)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):  # a folder with a blob's name is not ours to hash or delete
                other.append(name)
                continue
            mains[name] = st
            continue
        m = _SIDECAR_NAME.fullmatch(name)
        if m:
            sidecars.setdefault(m.group(1), []).append(name)
        else:
            other.append(name)
    blobs: dict[str, BlobInfo] = {}
    orphans: list[str] = []
    for sha, st in mains.items():
        exts: list[str] = []
        copy_bytes = 0
        for name in sidecars.pop(sha, []):
            try:
                sst = os.stat(root / name)
            except OSError:
                exts.append(name[65:])
                continue
            if not stat.S_ISREG(sst.st_mode):
                other.append(name)
                continue
            exts.append(name[65:])
            if (sst.st_dev, sst.st_ino) != (st.st_dev, st.st_ino):
                copy_bytes += sst.st_size
        blobs[sha] = BlobInfo(sha, st.st_size, st.st_mtime, tuple(exts), copy_bytes)
    for names_left in sidecars.values():
        orphans.extend(names_left)
    return blobs, sorted(orphans), other


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


@dataclass(slots=True)
class VerifyResult:
    store: str
    blobs_checked: int = 0
    corrupt: list[str] = field(default_factory=list)  # blob names whose content hashes differently
    bad_sidecars: list[str] = field(default_factory=list)  # sidecar copies that differ from their blob
    orphan_sidecars: list[str] = field(default_factory=list)
    stray_files: list[str] = field(default_factory=list)  # leftover temp files and other names
    files_scanned: int = 0
    refs_checked: int = 0
    missing: list[BlobRef] = field(default_factory=list)  # canonical refs with no blob
    malformed: list[BlobRef] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.corrupt or self.bad_sidecars or self.missing or self.malformed or self.unreadable)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "store": self.store, "blobs_checked": self.blobs_checked,
            "corrupt": self.corrupt, "bad_sidecars": self.bad_sidecars,
            "orphan_sidecars": self.orphan_sidecars, "stray_files": self.stray_files,
            "files_scanned": self.files_scanned, "refs_checked": self.refs_checked,
            "missing": [{"file": r.file, "line": r.line, "ref": BLOB_PREFIX + r.ref} for r in self.missing],
            "malformed": [{"file": r.file, "line": r.line, "ref": BLOB_PREFIX + r.ref} for r in self.malformed],
            "unreadable": [{"file": f, "error": e} for f, e in self.unreadable],
        }


def verify_store(roots: Iterable[str | os.PathLike[str]], store: BlobStore | str | os.PathLike[str] | None = None,
                 *, registered: bool = True, scan: RefScan | None = None) -> VerifyResult:
    """Hash every blob against its name (and sidecar copies against their blob), and check that
    every reference in every session under ``roots`` names a stored blob."""
    root = _store_root(store)
    blobs, orphans, other = _list_store(root)
    res = VerifyResult(str(root), orphan_sidecars=orphans, stray_files=other)
    for sha, info in blobs.items():
        res.blobs_checked += 1
        side = root / sha
        try:
            if _hash_file(side) != sha:
                res.corrupt.append(sha)
            if info.sidecar_bytes:
                for ext in info.sidecars:
                    side = root / f"{sha}.{ext}"
                    if not os.path.samefile(side, root / sha) and _hash_file(side) != sha:
                        res.bad_sidecars.append(side.name)
        except FileNotFoundError:
            continue  # deleted since the listing
        except OSError as e:
            raise BlobError(f"{side}: cannot read: {e.strerror or e}") from None
    refs = scan if scan is not None else scan_refs(roots, registered=registered)
    res.files_scanned = len(refs.files)
    res.refs_checked = refs.ref_count
    res.unreadable = list(refs.unreadable)
    absent = {sha for sha in refs.referenced if sha not in blobs}
    res.malformed = _with_lines(refs.malformed, lambda r: r.sha is None)
    missing = [BlobRef(f, 0, sha, sha) for sha in sorted(absent) for f in refs.referenced[sha]]
    seen: set[tuple[str, str | None]] = set()
    for r in _with_lines(missing, lambda r: r.sha in absent):
        if (r.file, r.sha) not in seen:  # the first occurrence per file is enough
            seen.add((r.file, r.sha))
            res.missing.append(r)
    return res


# ----------------------------------------------------------------- gc


@dataclass(slots=True)
class GcResult:
    store: str
    files_scanned: int
    referenced: int  # distinct referenced hashes present in the store
    unreferenced: list[BlobInfo]  # what gc deletes (or would delete)
    too_young: list[BlobInfo]  # unreferenced but newer than min_age: kept
    orphan_sidecars: list[str]
    unreadable: list[tuple[str, str]]
    min_age: float = DEFAULT_MIN_AGE
    applied: bool = False
    deleted: list[str] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)  # touched since the scan: kept

    @property
    def bytes(self) -> int:
        return sum(b.size + b.sidecar_bytes for b in self.unreferenced)

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store, "applied": self.applied, "min_age": self.min_age,
            "files_scanned": self.files_scanned,
            "referenced": self.referenced, "unreferenced_count": len(self.unreferenced),
            "unreferenced_bytes": self.bytes,
            "unreferenced": [{"sha": b.sha, "bytes": b.size + b.sidecar_bytes, "sidecars": list(b.sidecars)}
                             for b in self.unreferenced],
            "kept_too_young": [b.sha for b in self.too_young],
            "orphan_sidecars": self.orphan_sidecars,
            "unreadable": [{"file": f, "error": e} for f, e in self.unreadable],
            "deleted": self.deleted, "kept_rewritten": self.rewritten,
        }


def collect_gc(roots: Iterable[str | os.PathLike[str]], store: BlobStore | str | os.PathLike[str] | None = None,
               *, registered: bool = True, min_age: float = DEFAULT_MIN_AGE, now: float | None = None,
               allow_empty: bool = False) -> GcResult:
    """What gc would delete: blobs no session under ``roots`` references, older than ``min_age`` s.

    Refuses (BlobError) when a session file could not be read (its references are unknown), and
    when no session file was found while the store holds blobs, unless ``allow_empty``: both
    usually mean the wrong root.
    """
    root = _store_root(store)
    roots = list(roots)
    refs = scan_refs(roots, registered=registered)
    if refs.unreadable:
        f, e = refs.unreadable[0]
        raise BlobError(f"{f}: cannot be scanned for blob references ({e}); gc would not know "
                        f"which blobs it uses")
    blobs, orphans, _ = _list_store(root)
    if blobs and not refs.files and not allow_empty:
        shown = ", ".join(os.fspath(r) for r in roots) or "(no root)"
        raise BlobError(f"no session file found under {shown}: refusing to treat every blob as unused "
                        f"(pass the right --root, or --allow-empty)")
    t = time.time() if now is None else now
    unref: list[BlobInfo] = []
    young: list[BlobInfo] = []
    for sha, info in blobs.items():
        if sha in refs.referenced:
            continue
        (young if t - info.mtime < min_age else unref).append(info)
    present = sum(1 for sha in refs.referenced if sha in blobs)
    return GcResult(str(root), len(refs.files), present, unref, young, orphans, refs.unreadable, min_age)


def delete_blobs(result: GcResult) -> GcResult:
    """Delete what ``collect_gc`` found (each blob with its sidecars); returns ``result`` updated.

    A blob whose modification time changed since the scan is kept (in ``rewritten``): omp
    rewrites a blob whenever it stores the same image again, so such a blob may have just been
    given a new reference.
    """
    root = Path(result.store)
    for info in result.unreferenced:
        try:
            mtime = os.stat(root / info.sha).st_mtime
        except FileNotFoundError:
            continue
        if mtime != info.mtime:
            result.rewritten.append(info.sha)
            continue
        for name in [*(f"{info.sha}.{ext}" for ext in info.sidecars), info.sha]:
            try:
                os.unlink(root / name)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise BlobError(f"{root / name}: cannot delete: {e.strerror or e}") from None
        result.deleted.append(info.sha)
    result.applied = True
    return result


# ----------------------------------------------------------------- stats


@dataclass(slots=True)
class StoreStats:
    store: str
    blobs: int
    bytes: int
    referenced: int
    referenced_bytes: int
    unreferenced: int
    unreferenced_bytes: int
    by_type: dict[str, tuple[int, int]]  # sidecar extension ("" = none) -> (count, bytes)
    largest: list[tuple[str, int, int]]  # (sha, bytes, referencing files)
    files_scanned: int
    refs: int
    missing: int
    malformed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store, "blobs": self.blobs, "bytes": self.bytes,
            "referenced": self.referenced, "referenced_bytes": self.referenced_bytes,
            "unreferenced": self.unreferenced, "unreferenced_bytes": self.unreferenced_bytes,
            "by_type": {k: {"count": c, "bytes": b} for k, (c, b) in self.by_type.items()},
            "largest": [{"sha": s, "bytes": b, "sessions": n} for s, b, n in self.largest],
            "files_scanned": self.files_scanned, "refs": self.refs,
            "missing": self.missing, "malformed": self.malformed,
        }


def store_stats(roots: Iterable[str | os.PathLike[str]], store: BlobStore | str | os.PathLike[str] | None = None,
                *, registered: bool = True, top: int = 10) -> StoreStats:
    """Counts and bytes of the store, split by use (referenced or not) and by image type."""
    root = _store_root(store)
    blobs, _, _ = _list_store(root)
    refs = scan_refs(roots, registered=registered)
    by_type: dict[str, tuple[int, int]] = {}
    ref_n = ref_b = 0
    for sha, info in blobs.items():
        kind = info.sidecars[0] if info.sidecars else ""
        c, b = by_type.get(kind, (0, 0))
        by_type[kind] = (c + 1, b + info.size)
        if sha in refs.referenced:
            ref_n += 1
            ref_b += info.size
    total = sum(i.size for i in blobs.values())
    largest = sorted(blobs.values(), key=lambda i: (-i.size, i.sha))[:top]
    missing = sum(1 for sha in refs.referenced if sha not in blobs)
    return StoreStats(str(root), len(blobs), total, ref_n, ref_b, len(blobs) - ref_n, total - ref_b,
                      dict(sorted(by_type.items())),
                      [(i.sha, i.size, len(refs.referenced.get(i.sha, ()))) for i in largest],
                      len(refs.files), refs.ref_count, missing, len(refs.malformed))
