"""``unpack``: put the sessions of a pack archive where omp looks for them (docs/pack.md).

    from omp_session.unpack import unpack
    result = unpack("app-sessions.tar.zst", cwd="/home/me/work/app")

Order of work, so that nothing is half-written:

1. Read the manifest (the archive's first member) and plan: each session's new working directory
   (``cwd``, or the ``OLD=NEW`` prefix maps), its project folder under the sessions root (S9.2) and
   file name (kept); refuse at once if a target exists (unless ``force``) or two sessions collide.
2. Stream every member into staging folders (one inside the sessions root, one inside the blob
   store, so that placing is a rename on the same file system), checking as it goes: names (no
   absolute paths, ``..``, links, devices), the order and sizes the manifest lists, and the SHA-256
   of every file. Session headers (and subagent transcripts' headers) are rewritten on the way:
   ``cwd``, ``additionalDirectories`` under the mapping, ``parentSession`` links between packed
   sessions -- through the codec, so the line is what omp writes; the title slot and every other
   byte stay as they were. Blobs already in the store are checked against their hash, not replaced.
3. Only when every member verified: place blobs, then sessions and artifact folders (a hard link
   or rename that never replaces a file); any failure rolls the placed items back. ``force`` moves
   an existing session (and its artifact folder) aside to ``<name>.unpack-backup-<time>`` first.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from omp_session.errors import PackError
from omp_session.js import codec
from omp_session.paths import project_dir_name, sessions_dir

from .archive import blobs_dir_for_root
from .manifest import (
    CHUNK,
    MANIFEST_NAME,
    MAX_MANIFEST,
    Manifest,
    ManifestFile,
    PackedSession,
    RefScanner,
    check_member_name,
    iter_chunks,
    open_reader,
    read_head,
)

__all__ = ["STAGING_PREFIX", "UnpackResult", "UnpackedSession", "parse_map", "remove_stale_staging", "unpack"]

_JSONL = ".jsonl"
STAGING_PREFIX: Final = ".omp-session-unpack-"
_STALE_AFTER: Final = 10 * 60  # seconds: a staging folder whose name holds no pid is judged by age


@dataclass
class UnpackedSession:
    id: str
    source: str  # where it was packed from
    target: str  # where it is now
    old_cwd: Any
    new_cwd: Any
    backup: str | None = None  # where --force moved the session that was in the way


@dataclass
class UnpackResult:
    archive: str
    sessions: list[UnpackedSession]
    blobs_added: int = 0
    blobs_present: int = 0  # already in the store, checked
    missing_blobs: list[str] = field(default_factory=list)  # missing when packed (left as refs, as omp does)
    dry_run: bool = False
    stale_removed: list[str] = field(default_factory=list)  # staging folders a killed unpack left

    def to_json(self) -> dict[str, Any]:
        return {"archive": self.archive, "dryRun": self.dry_run, "staleRemoved": self.stale_removed,
                "sessions": [{"id": s.id, "source": s.source, "target": s.target, "oldCwd": s.old_cwd,
                              "newCwd": s.new_cwd, "backup": s.backup} for s in self.sessions],
                "blobsAdded": self.blobs_added, "blobsPresent": self.blobs_present,
                "missingBlobs": self.missing_blobs}


# --------------------------------------------------------------------------------------------------
# Path mapping


def parse_map(text: str) -> tuple[str, str]:
    """``OLD=NEW`` into two absolute paths."""
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise PackError(f"--map {text!r}: expected OLD=NEW")
    return _norm(old), _norm(new)


def _norm(p: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(p)))


class _Mapper:
    """Rewrites paths under the longest matching OLD prefix."""

    def __init__(self, rules: Iterable[tuple[str, str]]) -> None:
        self.rules = sorted(rules, key=lambda r: len(r[0]), reverse=True)

    def __call__(self, p: Any) -> Any:
        if not isinstance(p, str) or not os.path.isabs(p):
            return p
        norm = os.path.normpath(p)
        for old, new in self.rules:
            if norm == old:
                return new
            if norm.startswith(old.rstrip("/") + "/"):
                return os.path.join(new, norm[len(old.rstrip("/")) + 1:])
        return p


def _new_header(header: dict[str, Any], cwd: Any, mapper: _Mapper, links: dict[str, str]) -> dict[str, Any] | None:
    """The header with cwd, additionalDirectories and parentSession moved; None when nothing changes."""
    out = dict(header)  # same key order: only values change
    if cwd is not None:
        out["cwd"] = cwd
    dirs = header.get("additionalDirectories")
    if isinstance(dirs, list):
        moved: list[Any] = []
        for d in map(mapper, dirs):
            if d not in moved and d != out.get("cwd"):  # omp keeps them unique and never the cwd
                moved.append(d)
        out["additionalDirectories"] = moved
    parent = header.get("parentSession")
    if isinstance(parent, str) and os.path.isabs(parent) and os.path.normpath(parent) in links:
        out["parentSession"] = links[os.path.normpath(parent)]
    return None if out == header and list(out) == list(header) else out


# --------------------------------------------------------------------------------------------------
# Plan


@dataclass
class _Target:
    session: PackedSession
    new_cwd: Any
    mapper: _Mapper
    path: str
    artifacts: str
    staged: str = ""
    backup: str | None = None


def _plan(manifest: Manifest, root: Path, cwd: str | None, maps: list[tuple[str, str]], force: bool
          ) -> tuple[list[_Target], dict[str, str]]:
    targets: list[_Target] = []
    seen: dict[str, str] = {}
    links: dict[str, str] = {}
    for s in manifest.sessions:
        old = s.cwd
        rules = list(maps)
        if cwd is not None and isinstance(old, str) and os.path.isabs(old):
            rules.append((os.path.normpath(old), cwd))
        mapper = _Mapper(rules)
        new = cwd if cwd is not None else mapper(old)
        if not isinstance(new, str) or not new or "\x00" in new:  # NUL: no path can hold it
            raise PackError(f"session {s.id} has no usable cwd in its header ({old!r}); give --cwd")
        name = s.member.rsplit("/", 1)[1]
        path = os.path.join(root, project_dir_name(new), name)
        if path in seen:
            raise PackError(f"sessions {seen[path]} and {s.id} would both be unpacked to {path}")
        seen[path] = s.id
        t = _Target(s, new if new != old else None, mapper, path, path[: -len(_JSONL)])
        # an artifacts folder alone is in the way too: its transcripts would pass for this session's
        if os.path.lexists(t.artifacts) and not os.path.lexists(t.path) and not force:
            raise PackError(f"{t.artifacts}: an artifacts folder is already there (--force moves it aside to a "
                            "backup); nothing was unpacked")
        if os.path.lexists(t.path) and not force:
            raise PackError(f"{t.path}: a session is already there (--force moves it aside to a backup); "
                            "nothing was unpacked")
        targets.append(t)
        origin = os.path.normpath(s.path)
        links[origin] = path
        if s.archived and origin.endswith(".gz"):
            links[origin[: -len(".gz")]] = path  # the live path it had before omp archived it
    for t in targets:  # subagent transcripts live in the artifact folder: their paths move with it
        s = t.session
        if s.artifacts is not None:
            origin = os.path.normpath(s.path)
            folder = origin[: -len(".jsonl.gz")] if s.archived else origin[: -len(_JSONL)]
            for f in manifest.files:
                if f.kind == "file" and f.name.startswith(s.artifacts + "/") and f.name.endswith(_JSONL):
                    rel = f.name[len(s.artifacts) + 1:]
                    links[os.path.join(folder, rel)] = os.path.join(t.artifacts, rel)
    return targets, links


# --------------------------------------------------------------------------------------------------
# Streaming members into staging


def _damaged() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # the zstd extra is not installed: no zstd archive can be opened either
        pass
    return tuple(errors)


def _open_staged(path: str) -> IO[bytes]:
    """A new staged file (exclusive create). Tests replace this to simulate a full disk."""
    return open(path, "xb")


class _Reader:
    """``read(n)`` over a member that hashes the original bytes and finds blob refs in them."""

    def __init__(self, f: IO[bytes], refs: RefScanner | None) -> None:
        self._f = f
        self.refs = refs
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, n: int) -> bytes:
        data = self._f.read(n)
        self.digest.update(data)
        self.size += len(data)
        if self.refs is not None and data:
            self.refs.feed(data)
        return data


def _stage_file(src: _Reader, dest: str, rewrite: Callable[[dict[str, Any]], dict[str, Any] | None] | None
                ) -> bool:
    """Copy a member to ``dest``, its header rewritten when ``rewrite`` is given; False when a header
    was looked for and not found (the caller checks the hash first: damage is the likelier cause)."""
    found = True
    with _open_staged(dest) as out:
        if rewrite is not None:
            head = read_head(src.read)
            found = head.header is not None
            new = rewrite(head.header) if head.header is not None else None
            if new is None:
                out.write(head.data)
            else:
                line = codec.stringify(new)
                assert line is not None
                out.write(head.data[: head.start])
                out.write(line.encode("utf-8"))
                out.write(head.data[head.end:])
        for chunk in iter_chunks(src.read):
            out.write(chunk)
    return found


def _file_sha(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter_chunks(f.read):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class _Staging:
    sessions: str  # inside the sessions root
    blobs: str  # inside the blob store
    new_blobs: list[str] = field(default_factory=list)
    present_blobs: int = 0
    refs: set[str] = field(default_factory=set)
    dry_run: bool = False  # nothing in the store is touched


def _check_member(member: tarfile.TarInfo, expected: ManifestFile | None) -> None:
    check_member_name(member.name)
    if member.issym() or member.islnk():
        raise PackError(f"member {member.name!r} is a link; archives with links are refused")
    if member.ischr() or member.isblk() or member.isfifo() or not (member.isreg() or member.isdir()):
        raise PackError(f"member {member.name!r} is a device or special file; refused")
    if expected is None:
        raise PackError(f"member {member.name!r} is not in the manifest")
    if member.name != expected.name:
        raise PackError(f"member {member.name!r} where the manifest lists {expected.name!r} "
                        "(members missing, reordered or added)")
    if (expected.kind == "dir") != member.isdir():
        raise PackError(f"member {member.name!r} is not the {expected.kind} the manifest lists")
    if expected.kind == "file" and member.size != expected.size:
        raise PackError(f"member {member.name!r} holds {member.size} bytes, the manifest says {expected.size}")


def _stream(tar: tarfile.TarFile, manifest: Manifest, targets: list[_Target], links: dict[str, str],
            staging: _Staging, blobs: Path) -> None:
    by_member: dict[str, _Target] = {t.session.member: t for t in targets}
    by_folder: dict[str, _Target] = {t.session.artifacts: t for t in targets if t.session.artifacts}
    for expected in manifest.files:
        member = tar.next()
        if member is None:
            raise PackError(f"the archive ends before {expected.name!r} (truncated, or a member is missing)")
        _check_member(member, expected)
        top, _, rest = expected.name.partition("/")
        if expected.kind == "dir":
            t = by_folder.get(expected.name) or by_folder[next(f for f in by_folder
                                                                if expected.name.startswith(f + "/"))]
            os.makedirs(_staged_path(staging, t, expected.name), exist_ok=True)
            continue
        f = tar.extractfile(member)
        assert f is not None
        if top == "blobs":
            _stage_blob(_Reader(f, None), rest, expected, staging, blobs)
            continue
        owner = by_member.get(expected.name)
        if owner is not None:
            t = owner
            reader = _Reader(f, RefScanner())
            if not _stage_file(reader, t.staged, _rewriter(t, t.new_cwd, links, own=True)):
                _verify(reader, expected)
                raise PackError(f"{expected.name}: not a session (no header line); nothing was unpacked")
        else:
            t = by_folder[next(a for a in by_folder if expected.name.startswith(a + "/"))]
            jsonl = expected.name.endswith(_JSONL)
            reader = _Reader(f, RefScanner() if jsonl else None)
            # a subagent transcript is a session too: its header moves with its parent's
            _stage_file(reader, _staged_path(staging, t, expected.name), _rewriter(t, None, links) if jsonl
                        else None)
        _verify(reader, expected)
        os.utime(t.staged if expected.name == t.session.member else _staged_path(staging, t, expected.name),
                 (expected.mtime, expected.mtime))
        if reader.refs is not None:
            staging.refs |= reader.refs.finish()
    extra = tar.next()
    if extra is not None:
        _check_member(extra, None)  # raises: unsafe, or simply not listed


def _rewriter(t: _Target, cwd: Any, links: dict[str, str], *, own: bool = False
              ) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    def rewrite(header: dict[str, Any]) -> dict[str, Any] | None:
        if own and header.get("cwd") != t.session.cwd:
            # the target folder was chosen from the manifest's cwd: it must be the header's
            raise PackError(f"{t.session.member}: the manifest says cwd {t.session.cwd!r}, the session's header "
                            f"{header.get('cwd')!r} (the archive was changed); nothing was unpacked")
        new_cwd = cwd
        if new_cwd is None:
            moved = t.mapper(header.get("cwd"))
            new_cwd = moved if moved != header.get("cwd") else None
        return _new_header(header, new_cwd, t.mapper, links)

    return rewrite


def _staged_path(staging: _Staging, t: _Target, name: str) -> str:
    assert t.session.artifacts is not None
    rel = name[len(t.session.artifacts):].lstrip("/")
    base = t.staged[: -len(_JSONL)]
    return os.path.join(base, *rel.split("/")) if rel else base


def _verify(reader: _Reader, expected: ManifestFile) -> None:
    if reader.size != expected.size or reader.digest.hexdigest() != expected.sha256:
        raise PackError(f"member {expected.name!r}: SHA-256 does not match the manifest (the archive was "
                        "damaged or tampered with); nothing was unpacked")


def _stage_blob(reader: _Reader, sha: str, expected: ManifestFile, staging: _Staging, blobs: Path) -> None:
    existing = blobs / sha
    if os.path.isfile(existing):
        for _ in iter_chunks(reader.read):
            pass
        _verify(reader, expected)
        if _file_sha(str(existing)) != sha:
            raise PackError(f"{existing}: the blob already in the store is damaged (its content does not hash "
                            "to its name); remove it and unpack again. Nothing was unpacked")
        # freshened as omp freshens a blob it stores again: a gc that found it unreferenced before
        # the sessions were staged then keeps it (blobs gc keeps a blob younger than --min-age or
        # touched since its scan)
        if not staging.dry_run:
            with contextlib.suppress(OSError):
                os.utime(existing)
        staging.present_blobs += 1
        return
    dest = os.path.join(staging.blobs, sha)
    _stage_file(reader, dest, None)
    _verify(reader, expected)
    if sha != expected.sha256:
        raise PackError(f"member {expected.name!r}: the blob's content does not hash to its name")
    staging.new_blobs.append(sha)


def _verify_all(path: str, manifest: Manifest, damaged: tuple[type[BaseException], ...]) -> None:
    """Read the whole archive once, checking every member's name, kind, order, size and SHA-256
    against the manifest, and write nothing: a member that is not what the manifest says (a
    decompression bomb with a wrong hash, a member longer than listed) is refused before a byte of
    it is staged. Memory stays flat: members are hashed in pieces."""
    try:
        with open(path, "rb") as raw:
            stream, _ = open_reader(raw)
            tar = tarfile.open(fileobj=stream, mode="r|", bufsize=CHUNK)  # noqa: SIM115 - read to the end
            tar.next()  # the manifest, already read
            for expected in manifest.files:
                member = tar.next()
                if member is None:
                    raise PackError(f"the archive ends before {expected.name!r} (truncated, or a member is missing)")
                _check_member(member, expected)
                if expected.kind == "file":
                    f = tar.extractfile(member)
                    assert f is not None
                    reader = _Reader(f, None)
                    for _ in iter_chunks(reader.read):
                        pass
                    _verify(reader, expected)
                    top, _, rest = expected.name.partition("/")
                    if top == "blobs" and rest != expected.sha256:
                        raise PackError(f"member {expected.name!r}: the blob's content does not hash to its name")
            extra = tar.next()
            if extra is not None:
                _check_member(extra, None)  # raises: unsafe, or simply not listed
            while stream.read(CHUNK):  # to the end: gzip checks its CRC and length there
                pass
    except damaged as e:
        raise PackError(f"the archive is truncated or damaged ({type(e).__name__}: {e}); "
                        "nothing was unpacked") from None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's process
        return True
    return True


def remove_stale_staging(folders: Iterable[str | os.PathLike[str]], *, now: float | None = None) -> list[str]:
    """Remove the staging folders an unpack killed mid-way (SIGKILL, power loss) left in
    ``folders``: those whose name holds the pid of a process that is gone, and those of older
    versions (no pid in the name) untouched for 10 minutes. Returns the folders removed."""
    removed: list[str] = []
    now = time.time() if now is None else now
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if not e.name.startswith(STAGING_PREFIX) or not e.is_dir(follow_symlinks=False):
                continue
            pid, dash, _ = e.name[len(STAGING_PREFIX):].partition("-")
            if dash and pid.isdigit() and pid.isascii():
                stale = not _pid_alive(int(pid))
            else:
                try:
                    stale = now - e.stat(follow_symlinks=False).st_mtime > _STALE_AFTER
                except OSError:
                    stale = False
            if stale:
                shutil.rmtree(e.path, ignore_errors=True)
                if not os.path.lexists(e.path):
                    removed.append(e.path)
    return removed


# --------------------------------------------------------------------------------------------------
# Placing


class _Undo:
    def __init__(self) -> None:
        self.steps: list[Callable[[], None]] = []

    def rollback(self) -> None:
        for step in reversed(self.steps):
            with contextlib.suppress(OSError):
                step()


def _link_into_place(src: str, dst: str) -> None:
    """Move a staged file to ``dst``, never replacing one that is there (a hard link fails if it is)."""
    try:
        os.link(src, dst)
    except FileExistsError:
        raise PackError(f"{dst}: appeared while unpacking; nothing was unpacked") from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK, errno.EOPNOTSUPP):
            raise
        if os.path.lexists(dst):
            raise PackError(f"{dst}: appeared while unpacking; nothing was unpacked") from None
        os.rename(src, dst)
        return
    os.unlink(src)


def _free_name(base: str) -> str:
    """``base``, or ``base-2``, ``base-3``...: a backup never replaces an earlier backup."""
    name, n = base, 1
    while os.path.lexists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def _place(targets: list[_Target], staging: _Staging, blobs: Path, force: bool, undo: _Undo) -> None:
    for sha in staging.new_blobs:
        dst = str(blobs / sha)
        try:
            _link_into_place(os.path.join(staging.blobs, sha), dst)
        except PackError:
            if _file_sha(dst) != sha:  # someone stored it meanwhile: fine only if it is intact
                raise
            continue
        undo.steps.append(functools.partial(os.unlink, dst))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for t in targets:
        bucket = os.path.dirname(t.path)
        if not os.path.isdir(bucket):
            os.makedirs(bucket)
            undo.steps.append(functools.partial(os.rmdir, bucket))
        has_art = t.session.artifacts is not None
        if force and (os.path.lexists(t.path) or os.path.lexists(t.artifacts)):
            # the session and its folder go aside together: an old folder must not pass for the new one's
            for old in (t.path, t.artifacts):
                if os.path.lexists(old):
                    bak = _free_name(f"{old}.unpack-backup-{stamp}")
                    os.rename(old, bak)
                    undo.steps.append(functools.partial(os.rename, bak, old))
                    t.backup = t.backup or bak
        _link_into_place(t.staged, t.path)
        undo.steps.append(functools.partial(os.unlink, t.path))
        if has_art:
            if os.path.lexists(t.artifacts):
                raise PackError(f"{t.artifacts}: appeared while unpacking; nothing was unpacked")
            os.rename(t.staged[: -len(_JSONL)], t.artifacts)
            undo.steps.append(functools.partial(shutil.rmtree, t.artifacts))


# --------------------------------------------------------------------------------------------------
# unpack


def _make_dir(path: Path, created: list[Path]) -> None:
    missing = [p for p in (path, *path.parents) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PackError(f"{path}: cannot create it ({e.strerror or e}); nothing was unpacked") from None
    created.extend(reversed(missing))


def unpack(archive: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None,
           blobs_dir: str | os.PathLike[str] | None = None, cwd: str | None = None,
           maps: Iterable[tuple[str, str]] = (), force: bool = False, dry_run: bool = False) -> UnpackResult:
    """Unpack ``archive`` into the sessions root (default omp's) and its blob store.

    ``cwd`` gives every session this working directory; ``maps`` are ``(OLD, NEW)`` prefix rewrites
    (see :func:`parse_map`). ``force`` replaces sessions that are in the way, keeping a backup.
    ``dry_run`` verifies everything and reports the plan without placing anything. Raises
    :class:`PackError` (a one-line message); on any error nothing is left behind.
    """
    path = os.fspath(archive)
    base = Path(root) if root is not None else sessions_dir()
    blobs = Path(blobs_dir) if blobs_dir is not None else blobs_dir_for_root(root)
    new_cwd = _norm(cwd) if cwd is not None else None
    rules = list(maps)
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise PackError(f"{path}: {e.strerror or e}") from None
    created: list[Path] = []
    staging: _Staging | None = None
    stale: list[str] = []
    undo = _Undo()
    damaged = _damaged()
    try:
        with raw:
            stream, _ = open_reader(raw)
            try:
                tar = tarfile.open(fileobj=stream, mode="r|", bufsize=CHUNK)  # noqa: SIM115 - read to the end below
                first = tar.next()
                if first is None or first.name != MANIFEST_NAME or not first.isreg():
                    raise PackError("not an omp-session pack archive (manifest.json is not its first member)")
                if first.size > MAX_MANIFEST:
                    raise PackError(f"{MANIFEST_NAME} is larger than {MAX_MANIFEST // 2**20} MB ({first.size:,} "
                                    "bytes; pack never writes one that big); nothing was unpacked")
                mf = tar.extractfile(first)
                assert mf is not None
                manifest = Manifest.from_bytes(mf.read())
                targets, links = _plan(manifest, base, new_cwd, rules, force)
                # every size and hash first, writing nothing: a lying archive costs no disk
                _verify_all(path, manifest, damaged)
                stale = remove_stale_staging([base, blobs])
                _make_dir(base, created)
                _make_dir(blobs, created)
                try:
                    prefix = f"{STAGING_PREFIX}{os.getpid()}-"
                    staging = _Staging(tempfile.mkdtemp(prefix=prefix, dir=base),
                                       tempfile.mkdtemp(prefix=prefix, dir=blobs), dry_run=dry_run)
                except OSError as e:
                    raise PackError(f"{base}: cannot write there ({e.strerror or e}); nothing was unpacked") from None
                for k, t in enumerate(targets):
                    t.staged = os.path.join(staging.sessions, f"{k}{_JSONL}")
                _stream(tar, manifest, targets, links, staging, blobs)
                while stream.read(CHUNK):  # to the end: gzip checks its CRC and length there
                    pass
            except damaged as e:
                raise PackError(f"the archive is truncated or damaged ({type(e).__name__}: {e}); "
                                "nothing was unpacked") from None
        known = set(manifest.blobs) | set(manifest.missing_blobs)
        for sha in sorted(staging.refs - known):
            if not (blobs / sha).is_file():
                raise PackError(f"a packed session references blob {sha}, which the archive does not hold "
                                "and the store lacks; nothing was unpacked")
        result = UnpackResult(path, [UnpackedSession(t.session.id, t.session.path, t.path, t.session.cwd,
                                                     t.new_cwd if t.new_cwd is not None else t.session.cwd)
                                     for t in targets],
                              len(staging.new_blobs), staging.present_blobs, manifest.missing_blobs, dry_run,
                              stale)
        if not dry_run:
            _place(targets, staging, blobs, force, undo)
            for r, t in zip(result.sessions, targets, strict=True):
                r.backup = t.backup
        return result
    except BaseException as e:
        undo.rollback()
        if isinstance(e, OSError):
            raise PackError(f"{e.filename or path}: {e.strerror or e}; nothing was unpacked") from None
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging.sessions, ignore_errors=True)
            shutil.rmtree(staging.blobs, ignore_errors=True)
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()  # only folders this call created, and only while empty
