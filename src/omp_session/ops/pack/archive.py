"""``pack``: sessions, their artifact folders and the blobs they reference, in one archive (docs/pack.md).

    from omp_session.pack import pack, project_sessions
    result = pack(project_sessions("/home/me/src/app"), "app-sessions.tar.zst")

The archive format is described in :mod:`omp_session.pack_manifest`; :mod:`omp_session.unpack` reads it.
Packing reads every file twice, in pieces (never whole, so memory stays flat on a 1 GB session): once
to measure, hash and find blob references for the manifest that leads the archive, once to copy into
it while hashing again. A file whose first ``size`` bytes changed in between (omp rewrote it) stops the
pack with an error; one that only grew is packed as it was at the first look. The archive is written to
a temporary file beside the output and renamed into place only when complete (store/atomic.py); into a
device, a FIFO or stdout (``-``) it is streamed.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from omp_session.errors import PackError
from omp_session.paths import blobs_dir as default_blobs_dir
from omp_session.paths import project_dir_name, sessions_dir
from omp_session.store.atomic import check_output, open_output

from .manifest import (
    CHUNK,
    MANIFEST_NAME,
    MAX_MANIFEST,
    Compression,
    Manifest,
    ManifestFile,
    PackedSession,
    RefScanner,
    check_session_name,
    compression_for_path,
    iter_chunks,
    open_writer,
    read_head,
)

__all__ = ["PackError", "PackResult", "all_sessions", "archive_root", "blobs_dir_for_root", "pack",
           "project_sessions"]

_GZ = ".jsonl.gz"
_JSONL = ".jsonl"


@dataclass
class PackResult:
    """What :func:`pack` wrote."""

    output: str
    compression: Compression
    sessions: list[PackedSession]
    files: int  # members besides the manifest (sessions, artifact files and folders, blobs)
    blobs: int
    missing_blobs: list[str]  # referenced, not in the store (only with allow_missing_blobs)
    skipped: list[str] = field(default_factory=list)  # links and special files in artifact folders
    size: int = 0  # bytes of the archive

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "compression": self.compression, "size": self.size,
                "sessions": [{"id": s.id, "path": s.path, "cwd": s.cwd} for s in self.sessions],
                "files": self.files, "blobs": self.blobs, "missingBlobs": self.missing_blobs,
                "skipped": self.skipped}


# --------------------------------------------------------------------------------------------------
# Choosing sessions


def _bucket_files(bucket: Path) -> list[str]:
    """Session files of one project folder, as ``omp-session list`` shows them (``*.jsonl`` and
    archived ``*.jsonl.gz``; hidden names and links skipped)."""
    try:
        with os.scandir(bucket) as it:
            names = sorted(e.name for e in it if not e.name.startswith(".") and e.is_file(follow_symlinks=False)
                           and e.name.endswith((_JSONL, _GZ)))
    except FileNotFoundError:
        return []
    except OSError as e:
        raise PackError(f"{bucket}: {e.strerror or e}") from None
    return [str(bucket / n) for n in names]


def archive_root(root: str | os.PathLike[str] | None = None) -> Path:
    """Where omp's ``gc --archive`` moves old sessions: ``archive/sessions`` beside the sessions root,
    same project folders, each file gzipped to ``.jsonl.gz`` with its artifact folder beside it."""
    base = Path(root) if root is not None else sessions_dir()
    return base.parent / "archive" / "sessions"


def project_sessions(cwd: str, *, root: str | os.PathLike[str] | None = None,
                     archived: bool = False) -> list[str]:
    """Every session of the project whose working directory is ``cwd`` (its folder under the root,
    S9.2); with ``archived``, also those omp's gc archived."""
    base = Path(root) if root is not None else sessions_dir()
    found = _bucket_files(base / project_dir_name(cwd))
    return found + _bucket_files(archive_root(root) / project_dir_name(cwd)) if archived else found


def all_sessions(*, root: str | os.PathLike[str] | None = None, archived: bool = False) -> list[str]:
    """Every session of every project under the sessions root; with ``archived``, also every
    session omp's gc archived."""
    found = _all_in(Path(root) if root is not None else sessions_dir())
    return found + _all_in(archive_root(root)) if archived else found


def _all_in(base: Path) -> list[str]:
    try:
        buckets = sorted(e.name for e in os.scandir(base) if not e.name.startswith(".")
                         and e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
    except OSError as e:
        raise PackError(f"{base}: {e.strerror or e}") from None
    return [f for b in buckets for f in _bucket_files(base / b)]


def blobs_dir_for_root(root: str | os.PathLike[str] | None) -> Path:
    """omp keeps ``blobs`` beside ``sessions`` in every layout (S9.1), so a given sessions root implies
    its blob store; without one, omp's own."""
    return Path(root).parent / "blobs" if root is not None else default_blobs_dir()


# --------------------------------------------------------------------------------------------------
# One file


@dataclass
class _Item:
    member: str
    path: str  # on disk ("" for a folder member)
    kind: str  # "file" | "dir"
    gz: bool = False  # an archived session: stored decompressed
    size: int = 0
    sha256: str = ""
    mtime: float = 0.0


def _open(path: str, gz: bool) -> IO[bytes]:
    return cast(IO[bytes], gzip.open(path, "rb")) if gz else open(path, "rb")


def _survey(item: _Item, refs: RefScanner | None, head: bool) -> dict[str, Any] | None:
    """First pass: size and SHA-256 (and blob refs, and the header) of one file, in pieces."""
    digest = hashlib.sha256()
    size = 0
    header: dict[str, Any] | None = None
    with _open(item.path, item.gz) as f:
        item.mtime = os.stat(item.path).st_mtime
        first = b""
        if head:
            h = read_head(f.read)
            header, first = h.header, h.data
            if header is None:
                raise PackError(f"{item.path}: not an omp session (no session header line); nothing was packed")
        for chunk in ([first] if first else []), iter_chunks(f.read):
            for piece in chunk:
                digest.update(piece)
                size += len(piece)
                if refs is not None:
                    refs.feed(piece)
    item.size, item.sha256 = size, digest.hexdigest()
    return header


class _Hashing:
    """``read(n)`` over a file that hashes what passes and never yields more than ``size`` bytes."""

    def __init__(self, f: IO[bytes], size: int) -> None:
        self._f = f
        self._left = size
        self.digest = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        want = self._left if n is None or n < 0 else min(n, self._left)
        data = self._f.read(min(want, CHUNK)) if want else b""
        self._left -= len(data)
        self.digest.update(data)
        return data


# --------------------------------------------------------------------------------------------------
# Pack


def _is_session_name(path: str) -> bool:
    return path.endswith((_JSONL, _GZ))


def _walk_artifacts(folder: str, member: str, items: list[_Item], skipped: list[str]) -> None:
    items.append(_Item(member, "", "dir"))
    for here, dirs, files in os.walk(folder, followlinks=False, onerror=_unlistable):
        rel = os.path.relpath(here, folder)
        prefix = member if rel == "." else f"{member}/{rel.replace(os.sep, '/')}"
        for d in sorted(dirs):
            full = os.path.join(here, d)
            if os.path.islink(full):
                skipped.append(full)
                continue
            items.append(_Item(f"{prefix}/{d}", "", "dir"))
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(here, d)))
        for name in sorted(files):
            full = os.path.join(here, name)
            try:
                st = os.lstat(full)
            except OSError as e:  # listed, then deleted or made unreadable before we looked
                raise PackError(f"{full}: cannot be read ({e.strerror or e}); nothing was packed") from None
            if not _is_regular(st.st_mode):
                skipped.append(full)  # links, sockets, fifos: unpack would refuse them
                continue
            items.append(_Item(f"{prefix}/{name}", full, "file"))


def _unlistable(e: OSError) -> None:
    # os.walk would skip the folder without a word, leaving its files out of the archive
    raise PackError(f"{e.filename}: cannot be read ({e.strerror or e}); nothing was packed")


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _collect(paths: Iterable[str | os.PathLike[str]], blobs: Path, allow_missing: bool
             ) -> tuple[Manifest, list[_Item], list[str], list[str]]:
    manifest = Manifest()
    items: list[_Item] = []
    skipped: list[str] = []
    seen: set[str] = set()
    users: dict[str, list[str]] = {}  # blob hash -> the sessions (paths) that reference it
    for raw in paths:
        path = os.path.abspath(os.fspath(raw))
        if not _is_session_name(path):
            raise PackError(f"{raw}: not a session file (.jsonl or .jsonl.gz); nothing was packed")
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        if not os.path.isfile(path):
            raise PackError(f"{raw}: no such session file; nothing was packed")
        archived = path.endswith(_GZ)
        name = os.path.basename(path)[: -len(".gz")] if archived else os.path.basename(path)
        check_session_name(name)  # unpack refuses it: never make an archive that cannot be unpacked
        k = len(manifest.sessions)
        item = _Item(f"sessions/{k}/{name}", path, "file", gz=archived)
        refs = RefScanner()  # one per session: a missing blob is reported with the sessions that need it
        try:
            header = _survey(item, refs, head=True)
        except (OSError, EOFError, zlib.error) as e:  # zlib's error: a .jsonl.gz with broken deflate data
            raise PackError(f"{path}: cannot be read ({getattr(e, 'strerror', None) or e}); nothing was packed"
                            ) from None
        assert header is not None
        items.append(item)
        folder = path[: -len(_GZ)] if archived else path[: -len(_JSONL)]
        artifacts = None
        if os.path.isdir(folder) and not os.path.islink(folder):
            artifacts = item.member[: -len(_JSONL)]
            start = len(items)
            _walk_artifacts(folder, artifacts, items, skipped)
            for art in items[start:]:
                if art.kind == "file":
                    # omp's blob GC reads every *.jsonl below the sessions root (subagent transcripts)
                    _survey_or_fail(art, refs if art.path.endswith(_JSONL) else None)
        for sha in refs.finish():
            users.setdefault(sha, []).append(path)
        add = header.get("additionalDirectories")
        manifest.sessions.append(PackedSession(
            header["id"], header.get("cwd"), path, item.member, artifacts, archived,
            header.get("parentSession"), add if isinstance(add, list) else None))
    if not manifest.sessions:
        raise PackError("no sessions to pack")
    missing: list[str] = []
    for sha in sorted(users):
        blob = _Item(f"blobs/{sha}", str(blobs / sha), "file")
        if not os.path.isfile(blob.path):
            missing.append(sha)
            continue
        _survey_or_fail(blob, None)
        if blob.sha256 != sha:
            raise PackError(f"{blob.path}: the blob is damaged (its content hashes to {blob.sha256}); "
                            "nothing was packed")
        items.append(blob)
        manifest.blobs.append(sha)
    if missing and not allow_missing:
        raise PackError(_missing_message(missing, users, blobs, manifest.sessions))
    manifest.missing_blobs = missing
    manifest.files = [ManifestFile(i.member, "dir") if i.kind == "dir"
                      else ManifestFile(i.member, "file", i.size, i.sha256, i.mtime) for i in items]
    return manifest, items, missing, skipped


def _first_few(names: Sequence[str], n: int = 3) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def _missing_message(missing: Sequence[str], users: dict[str, list[str]], blobs: Path,
                     sessions: Sequence[PackedSession]) -> str:
    """One line: how many blobs are missing, which sessions reference them (in the order they were
    given, the first few) and what to do about it."""
    wanting = {p for sha in missing for p in users.get(sha, ())}
    named = [s.path for s in sessions if s.path in wanting]
    return (f"{len(missing)} referenced blob(s) are not in {blobs} ({_first_few(missing)}), referenced by "
            f"{len(named)} session(s): {_first_few(named)}; pack anyway with --allow-missing-blobs (the "
            "blobs are left out and listed as missing; omp shows such references as they are), leave "
            "those sessions out, or point --blobs at the store that has them; nothing was packed")


def _survey_or_fail(item: _Item, refs: RefScanner | None) -> None:
    try:
        _survey(item, refs, head=False)
    except OSError as e:
        raise PackError(f"{item.path}: cannot be read ({e.strerror or e}); nothing was packed") from None


def _tarinfo(name: str, kind: str, size: int = 0, mtime: float = 0.0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if kind == "dir" else tarfile.REGTYPE
    info.mode = 0o755 if kind == "dir" else 0o644
    info.size = size
    info.mtime = mtime
    info.uname = info.gname = ""
    return info


def _write(tar: tarfile.TarFile, data: bytes, items: Sequence[_Item]) -> None:
    info = _tarinfo(MANIFEST_NAME, "file", len(data), time.time())

    class _Bytes:
        def __init__(self) -> None:
            self.pos = 0

        def read(self, n: int = -1) -> bytes:
            piece = data[self.pos: self.pos + n] if n >= 0 else data[self.pos:]
            self.pos += len(piece)
            return piece

    tar.addfile(info, _Bytes())
    for item in items:
        if item.kind == "dir":
            tar.addfile(_tarinfo(item.member, "dir"))
            continue
        try:
            with _open(item.path, item.gz) as f:
                reader = _Hashing(f, item.size)
                tar.addfile(_tarinfo(item.member, "file", item.size, item.mtime), reader)
        except (OSError, EOFError, zlib.error) as e:
            # tarfile says "unexpected end of data" when the file shrank under us
            raise PackError(f"{item.path}: changed or became unreadable while packing ({e}); "
                            "nothing was packed, try again") from None
        if reader.digest.hexdigest() != item.sha256:
            raise PackError(f"{item.path}: changed while packing (omp rewrote it); nothing was packed, try again")


def pack(sessions: Iterable[str | os.PathLike[str]], output: str | os.PathLike[str], *,
         compression: Compression | None = None, blobs_dir: str | os.PathLike[str] | None = None,
         allow_missing_blobs: bool = False, force: bool = False) -> PackResult:
    """Write ``sessions`` (paths of ``.jsonl`` / ``.jsonl.gz`` files) with their artifact folders and
    referenced blobs to the archive ``output``.

    ``compression`` defaults from the name (``.tar``, ``.tar.gz``/``.tgz``, ``.tar.zst``; else gzip).
    ``blobs_dir`` is the blob store to take blobs from (default omp's). A referenced blob the store
    lacks is an error unless ``allow_missing_blobs`` (then the manifest lists it as missing). An
    existing file ``output`` is an error unless ``force``; a character device or FIFO is written
    into, ``-`` is stdout (store/atomic.py). The archive is 0666 minus the umask, like a file ``tar``
    makes. Raises :class:`PackError`; on any error no output file is left.
    """
    name = os.fspath(output)
    out = name if name == "-" else os.path.abspath(name)
    comp: Compression = compression or compression_for_path(out)
    sessions = [os.fspath(p) for p in sessions]
    if any(os.path.abspath(p) == out or (os.path.exists(out) and os.path.exists(p) and os.path.samefile(p, out))
           for p in sessions):
        raise PackError(f"{out}: is one of the sessions being packed; choose another output")
    check_output(out, force=force, error=PackError, stdout=True)  # refused before the work, not after
    blobs = Path(blobs_dir) if blobs_dir is not None else default_blobs_dir()
    manifest, items, missing, skipped = _collect(sessions, blobs, allow_missing_blobs)
    from omp_session._version import __version__

    manifest.created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    manifest.generator = f"omp-session {__version__}"
    data = manifest.to_bytes()
    if len(data) > MAX_MANIFEST:
        raise PackError(f"{len(manifest.files):,} files make a manifest larger than unpack reads "
                        f"({MAX_MANIFEST // 2**20} MB); pack fewer sessions per archive. Nothing was packed")
    # a new file or --force over a file: temporary file and rename; a device, FIFO or - (stdout):
    # streamed into (docs/pack.md)
    with open_output(out, force=force, error=PackError, stdout=True) as raw:
        counted = _Counting(raw)
        stream = open_writer(counted, comp)  # type: ignore[arg-type]
        with tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            _write(tar, data, items)
        stream.close()
    return PackResult(out, comp, manifest.sessions, len(items), len(manifest.blobs), missing, skipped,
                      counted.written)


class _Counting:
    """A writer that counts what passes: the size of an archive streamed into a pipe."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.written = 0

    def write(self, b: Any) -> int:
        n = self._raw.write(b)
        self.written += len(b)
        return n

    def flush(self) -> None:
        self._raw.flush()
