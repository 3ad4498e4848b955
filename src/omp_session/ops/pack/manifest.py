"""The pack archive format shared by :mod:`omp_session.pack` and :mod:`omp_session.unpack` (docs/pack.md).

An archive is a tar stream (plain, gzip or zstd) whose **first** member is ``manifest.json``, followed
by exactly the members the manifest lists, in its order:

* ``sessions/<k>/<file>.jsonl`` -- the k-th session file, as it was on disk (an archived
  ``.jsonl.gz`` is stored decompressed);
* ``sessions/<k>/<file>/...`` -- its artifact folder (tool output, subagent transcripts);
* ``blobs/<sha256>`` -- every blob the packed files reference.

The manifest comes first so that unpack knows, before it reads any data, what the archive must hold,
where every session goes and whether it would overwrite anything; the size and SHA-256 of every file
let it verify each member as it streams past. Nothing here imports click.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Final, Literal, cast

from omp_session.errors import PackError
from omp_session.extras import require
from omp_session.format.title import parse_title_slot
from omp_session.js import codec

__all__ = [
    "CHUNK",
    "FORMAT",
    "MANIFEST_NAME",
    "VERSION",
    "Compression",
    "Head",
    "Manifest",
    "ManifestFile",
    "PackedSession",
    "RefScanner",
    "check_member_name",
    "check_session_name",
    "compression_for_path",
    "open_reader",
    "open_writer",
    "read_head",
]

FORMAT: Final = "omp-session-pack"
VERSION: Final = 1
MANIFEST_NAME: Final = "manifest.json"
CHUNK: Final = 256 * 1024  # every file is copied and hashed in pieces of this size, never whole
# parsed whole, a manifest takes ~5 bytes of memory per byte: 32 MB holds ~140,000 files and parses
# in ~170 MB; pack refuses to write a bigger one, so every archive it makes unpacks
MAX_MANIFEST: Final = 32 * 1024 * 1024
MAX_HEAD: Final = 64 * 1024 * 1024  # the slot and header line must fit in this
_MAX_MTIME: Final = 2**62
_HEX64 = re.compile(r"[a-f0-9]{64}")
_SEGMENT = re.compile(r"[^/\\\x00]+")
Compression = Literal["none", "gzip", "zstd"]
_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
_GZIP_MAGIC: Final = b"\x1f\x8b"


# --------------------------------------------------------------------------------------------------
# Compression


def compression_for_path(path: str) -> Compression:
    """From the file name: ``.tar`` none, ``.tar.zst``/``.tzst`` zstd, anything else gzip."""
    lower = path.lower()
    if lower.endswith(".tar"):
        return "none"
    if lower.endswith((".tar.zst", ".tzst", ".zst")):
        return "zstd"
    return "gzip"


class _Closing(io.RawIOBase):
    """A write-only stream over a compressor that must be flushed at the end (gzip, zstd)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self._inner.write(b)
        return len(b)

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()


def open_writer(raw: IO[bytes], compression: Compression) -> IO[bytes]:
    """A stream that compresses into ``raw``; closing it finishes the compressed stream (not ``raw``)."""
    if compression == "gzip":
        # mtime=0: the same inputs give the same bytes
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0))
    if compression == "zstd":
        zstandard = require("zstandard")  # only when asked for: zstandard is an extra

        writer = zstandard.ZstdCompressor(level=6).stream_writer(raw, closefd=False)
        return _Closing(writer)  # type: ignore[return-value]
    return _Closing(_NoClose(raw))  # type: ignore[return-value]


class _NoClose:
    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw

    def write(self, b: Any) -> int:
        return self._raw.write(b)

    def close(self) -> None:
        self._raw.flush()


def open_reader(raw: IO[bytes]) -> tuple[IO[bytes], Compression]:
    """A decompressing stream over ``raw`` (a seekable file), the compression told by magic bytes."""
    magic = raw.read(4)
    raw.seek(0)
    if magic.startswith(_GZIP_MAGIC):
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb")), "gzip"
    if magic == _ZSTD_MAGIC:
        zstandard = require("zstandard")

        return zstandard.ZstdDecompressor().stream_reader(raw, closefd=False), "zstd"
    return raw, "none"


# --------------------------------------------------------------------------------------------------
# Blob references


class RefScanner:
    """The blob hashes a stream of session bytes references, fed in pieces.

    The rule is omp's blob GC's (``/\\bblob:sha256:([a-f0-9]{64})\\b/gi``, lower-cased): a blob it
    keeps alive is a blob the session needs, whichever entry or position refers to it.
    """

    # anchored on ":sha256:", which the regex engine finds fast (a leading \b or (?i) makes it ~8x
    # slower); "blob" and the word boundary before it are checked by hand
    _RE = re.compile(rb":[sS][hH][aA]256:([a-fA-F0-9]{64})\b")
    _WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
    _KEEP = 128  # > len("blob:sha256:") + 64 + 1: a ref cut at a piece boundary is seen whole next time

    def __init__(self) -> None:
        self.hashes: set[str] = set()
        self._tail = b""
        self._first = True

    def feed(self, chunk: bytes, final: bool = False) -> None:
        buf = self._tail + chunk
        skip = 0 if self._first else 1  # the first byte was the tail's context only
        for m in self._RE.finditer(buf, 4):
            start = m.start() - 4  # where "blob" starts
            if start < skip or (m.end() == len(buf) and not final):
                continue  # judged in the previous or the next piece, where its neighbours are known
            if buf[start: start + 4].lower() != b"blob" or (start > 0 and buf[start - 1] in self._WORD):
                continue
            self.hashes.add(m.group(1).decode("ascii").lower())
        self._tail = buf[-self._KEEP:]
        self._first = self._first and len(buf) <= self._KEEP

    def finish(self) -> set[str]:
        self.feed(b"", final=True)
        return self.hashes


# --------------------------------------------------------------------------------------------------
# The header line


@dataclass
class Head:
    """The first bytes of a session file up to and including its header line."""

    data: bytes  # everything read so far (may extend past the header line)
    start: int  # where the header line starts (after a BOM, the title slot, blank lines)
    end: int  # where its text ends (before "\r\n" / "\n"; == len(data) at EOF)
    header: dict[str, Any] | None  # None when that line is not {"type":"session","id":<string>}


def read_head(read: Any) -> Head:
    """Read from ``read(n)`` until the header line is complete. The header is the first non-blank
    line after the optional BOM and title slot, as omp's reader finds it (S1.2, S1.4). Reading
    stops after :data:`MAX_HEAD` bytes (then ``header`` is None); nothing read is lost."""
    data = b""
    eof = False

    def more() -> bool:
        nonlocal data, eof
        if eof or len(data) > MAX_HEAD:
            return False  # no header line this long: the caller copies the bytes as they are
        chunk = read(CHUNK)
        if not chunk:
            eof = True
            return False
        data += chunk
        return True

    while len(data) < 3 and more():
        pass
    pos = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    while (lf := data.find(b"\n", pos)) < 0 and more():
        pass
    if lf >= 0 and parse_title_slot(data[pos:lf]) is not None:
        pos = lf + 1
    while True:
        while (lf := data.find(b"\n", pos)) < 0 and more():
            pass
        end = lf if lf >= 0 else len(data)
        line = data[pos:end]
        if line.strip(b" \t\r") or lf < 0:
            break
        pos = lf + 1
    text_end = end - 1 if end > pos and data[end - 1:end] == b"\r" else end
    header: dict[str, Any] | None = None
    try:
        value = codec.loads(data[pos:text_end])
    except ValueError:
        value = None
    if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
        header = value
    return Head(data, pos, text_end, header)


# --------------------------------------------------------------------------------------------------
# Member names


def check_member_name(name: str) -> None:
    """Refuse names that could land outside the target: absolute, ``..``, ``.``, empty segments,
    backslashes, NUL."""
    if not name or name.startswith("/") or "\\" in name:
        raise PackError(f"unsafe member name {name!r} (absolute path or backslash)")
    for seg in name.split("/"):
        if seg in ("", ".", "..") or not _SEGMENT.fullmatch(seg):
            raise PackError(f"unsafe member name {name!r} ('..', '.', an empty or invalid segment)")


# omp names a session `<timestamp, ':' and '.' made '-'>_<id>.jsonl` (S9.4); ids are UUIDs or plain
# ASCII words. Anything else (a newline, bidi controls, fullwidth dots and slashes, lone surrogates,
# a leading dot, '..') is no name omp writes, and is refused rather than placed where omp lists it.
_SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,250}\.jsonl")


def check_session_name(name: str) -> None:
    """Refuse a session file name omp would never write (see ``_SESSION_NAME``)."""
    if not _SESSION_NAME.fullmatch(name) or ".." in name:
        raise PackError(f"{name!r} is not a session file name omp writes (ASCII letters, digits, '-', '_' "
                        "and '.', like 2026-05-14T10-12-03-000Z_<id>.jsonl); refused")


# --------------------------------------------------------------------------------------------------
# The manifest


@dataclass
class ManifestFile:
    name: str
    kind: Literal["file", "dir"]
    size: int = 0
    sha256: str | None = None
    mtime: float = 0.0

    def to_json(self) -> dict[str, Any]:
        if self.kind == "dir":
            return {"name": self.name, "type": "dir"}
        return {"name": self.name, "type": "file", "size": self.size, "sha256": self.sha256, "mtime": self.mtime}


@dataclass
class PackedSession:
    id: str
    cwd: Any  # the header's cwd as it was (a string for every session omp wrote)
    path: str  # absolute path of the packed file (the .jsonl.gz for an archived session)
    member: str  # sessions/<k>/<name>.jsonl
    artifacts: str | None  # sessions/<k>/<name> when the session had an artifact folder
    archived: bool = False
    parent_session: Any = None
    additional_directories: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "cwd": self.cwd, "path": self.path, "member": self.member,
                               "artifacts": self.artifacts, "archived": self.archived}
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        if self.additional_directories is not None:
            out["additionalDirectories"] = self.additional_directories
        return out


@dataclass
class Manifest:
    sessions: list[PackedSession] = field(default_factory=list)
    files: list[ManifestFile] = field(default_factory=list)
    blobs: list[str] = field(default_factory=list)
    missing_blobs: list[str] = field(default_factory=list)
    created: str = ""
    generator: str = ""

    def to_bytes(self) -> bytes:
        doc = {"format": FORMAT, "version": VERSION, "created": self.created, "generator": self.generator,
               "sessions": [s.to_json() for s in self.sessions], "files": [f.to_json() for f in self.files],
               "blobs": self.blobs, "missingBlobs": self.missing_blobs}
        # ASCII escapes: a file name that is not UTF-8 (surrogate-escaped by os) or a lone surrogate
        # from a header survives as "\\udcXX" and comes back as the same str, hence the same bytes
        return json.dumps(doc, indent=1).encode("utf-8") + b"\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> Manifest:
        """Parse and check a manifest strictly; any surprise is a :class:`PackError`."""
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise PackError(f"{MANIFEST_NAME} is not valid JSON ({e})") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise PackError(f"{MANIFEST_NAME} is not an {FORMAT} manifest")
        if doc.get("version") != VERSION:
            raise PackError(f"{MANIFEST_NAME}: format version {doc.get('version')!r} is not supported "
                            f"(this omp-session reads version {VERSION})")
        m = cls(created=_str(doc.get("created", "")), generator=_str(doc.get("generator", "")))
        names: set[str] = set()
        for f in _list(doc.get("files"), "files"):
            m.files.append(_file(f))
            if m.files[-1].name in names:
                raise PackError(f"{MANIFEST_NAME}: {m.files[-1].name!r} is listed twice")
            names.add(m.files[-1].name)
        m.blobs = [_hash(h) for h in _list(doc.get("blobs"), "blobs")]
        m.missing_blobs = [_hash(h) for h in _list(doc.get("missingBlobs", []), "missingBlobs")]
        for s in _list(doc.get("sessions"), "sessions"):
            m.sessions.append(_session(s))
        m._check(names)
        return m

    def _check(self, names: set[str]) -> None:
        kinds = {f.name: f.kind for f in self.files}
        for f in self.files:
            top = f.name.split("/", 1)[0]
            if top not in ("sessions", "blobs"):
                raise PackError(f"{MANIFEST_NAME}: unexpected member {f.name!r}")
            if top == "blobs" and (f.kind != "file" or not _HEX64.fullmatch(f.name[len("blobs/"):])):
                raise PackError(f"{MANIFEST_NAME}: malformed blob member {f.name!r}")
        for h in self.blobs:
            if kinds.get(f"blobs/{h}") != "file":
                raise PackError(f"{MANIFEST_NAME}: blob {h} is listed but has no member")
        members: set[str] = set()
        for s in self.sessions:
            if not re.fullmatch(r"sessions/[0-9]+/[^/]+\.jsonl", s.member) or kinds.get(s.member) != "file":
                raise PackError(f"{MANIFEST_NAME}: session {s.id}: bad member {s.member!r}")
            check_session_name(s.member.rsplit("/", 1)[1])
            if s.member in members:
                raise PackError(f"{MANIFEST_NAME}: member {s.member!r} belongs to two sessions")
            members.add(s.member)
            if s.artifacts is not None and (s.artifacts != s.member[: -len(".jsonl")]
                                            or kinds.get(s.artifacts) != "dir"):
                raise PackError(f"{MANIFEST_NAME}: session {s.id}: bad artifact folder {s.artifacts!r}")
        for f in self.files:
            if f.name.startswith("sessions/") and f.name not in members and not any(
                    s.artifacts and (f.name == s.artifacts or f.name.startswith(s.artifacts + "/"))
                    for s in self.sessions):
                raise PackError(f"{MANIFEST_NAME}: {f.name!r} belongs to no packed session")
        del names

    def by_name(self) -> dict[str, ManifestFile]:
        return {f.name: f for f in self.files}


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise PackError(f"{MANIFEST_NAME}: expected a string, found {v!r}")
    return v


def _list(v: Any, what: str) -> list[Any]:
    if not isinstance(v, list):
        raise PackError(f"{MANIFEST_NAME}: {what} is not a list")
    return v


def _hash(v: Any) -> str:
    if not isinstance(v, str) or not _HEX64.fullmatch(v):
        raise PackError(f"{MANIFEST_NAME}: malformed blob hash {v!r}")
    return v


def _file(f: Any) -> ManifestFile:
    if not isinstance(f, dict) or not isinstance(f.get("name"), str):
        raise PackError(f"{MANIFEST_NAME}: bad file record {f!r}")
    name = f["name"]
    check_member_name(name)
    if f.get("type") == "dir":
        return ManifestFile(name, "dir")
    size, sha, mtime = f.get("size"), f.get("sha256"), f.get("mtime", 0)
    if f.get("type") != "file" or isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise PackError(f"{MANIFEST_NAME}: bad file record for {name!r}")
    if not isinstance(sha, str) or not _HEX64.fullmatch(sha):
        raise PackError(f"{MANIFEST_NAME}: bad sha256 for {name!r}")
    # finite and within time_t (compared, not converted: float() of a huge int raises), for os.utime
    if isinstance(mtime, bool) or not isinstance(mtime, int | float) or not -_MAX_MTIME < mtime < _MAX_MTIME:
        raise PackError(f"{MANIFEST_NAME}: bad mtime for {name!r}")
    return ManifestFile(name, "file", size, sha, float(mtime))


def _session(s: Any) -> PackedSession:
    if not isinstance(s, dict):
        raise PackError(f"{MANIFEST_NAME}: bad session record {s!r}")
    sid, path, member, artifacts = s.get("id"), s.get("path"), s.get("member"), s.get("artifacts")
    if not (isinstance(sid, str) and isinstance(path, str) and isinstance(member, str)
            and (artifacts is None or isinstance(artifacts, str))):
        raise PackError(f"{MANIFEST_NAME}: bad session record {s!r}")
    return PackedSession(sid, s.get("cwd"), path, member, artifacts, bool(s.get("archived", False)),
                         s.get("parentSession"), s.get("additionalDirectories"))


def iter_chunks(read: Any, size: int | None = None) -> Iterator[bytes]:
    """Pieces of at most :data:`CHUNK` bytes from ``read(n)``; stops at ``size`` bytes when given."""
    left = size
    while left is None or left > 0:
        chunk = read(CHUNK if left is None else min(CHUNK, left))
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk
