"""omp's content-addressed blob store and blob-reference resolution (spec S8.8).

Large image payloads are kept outside the JSONL as ``<blobs dir>/<sha256 hex>``
and referenced from entries as ``blob:sha256:<hex>``. This module owns the
store layout, omp's lenient base64 decoder (the hash is taken over *decoded*
bytes, so decoding must match Bun's byte for byte) and the load-time resolution
of references back into inline data.
"""

from __future__ import annotations

import binascii
import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from omp_session.errors import BlobError

__all__ = [
    "BLOB_PREFIX",
    "BlobReader",
    "BlobRefProblem",
    "BlobSink",
    "BlobStore",
    "MemoryBlobStore",
    "b64decode_lenient",
    "b64encode",
    "blob_extension_for_mime",
    "holds_blob_ref",
    "is_blob_ref",
    "is_externalizable_image_position",
    "parse_blob_ref",
    "resolve_blob_refs",
]

BLOB_PREFIX = "blob:sha256:"
_PREFIX_LEN = len(BLOB_PREFIX)
_HASH_RE = re.compile(r"[a-f0-9]{64}")


def is_blob_ref(s: object) -> bool:
    """True for any string omp treats as "already externalized" (even a malformed one)."""
    return isinstance(s, str) and s.startswith(BLOB_PREFIX)


def parse_blob_ref(s: str) -> str | None:
    """The hash of a canonical ref, else None.

    Only ``^[a-f0-9]{64}$`` is accepted: the hash becomes a file name, so this
    check is what keeps ``blob:sha256:../x`` from escaping the store.
    """
    if not isinstance(s, str) or not s.startswith(BLOB_PREFIX):
        return None
    h = s[_PREFIX_LEN:]
    return h if _HASH_RE.fullmatch(h) else None


def _check_hash(sha: str) -> str:
    if not isinstance(sha, str) or not _HASH_RE.fullmatch(sha):
        raise BlobError(f"not a canonical sha256 blob hash: {sha!r}")
    return sha


# ----------------------------------------------------------------- base64

_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# Bun accepts the URL-safe alphabet mixed with the standard one.
_B64_URLSAFE_TO_STD = bytes.maketrans(b"-_", b"+/")
_B64_DELETE = bytes(b for b in range(256) if b not in _B64_ALPHABET and b not in b"-_")


def b64decode_lenient(s: str) -> bytes:
    """Decode like Bun's ``Buffer.from(s, "base64")``.

    Bun looks only at the low byte of each UTF-16 code unit (so ``"Ľ"``,
    U+013D, acts as ``=`` and the high surrogate of U+1F600 too), stops at the
    first ``=``, skips bytes outside the (standard or URL-safe) alphabet and
    decodes a trailing partial group (one leftover character is dropped).
    """
    # Little-endian UTF-16 puts each unit's low byte at the even offsets.
    raw = s.encode("ascii") if s.isascii() else s.encode("utf-16-le", "surrogatepass")[::2]
    if len(raw) >= _FAST_FROM and not len(raw) & 3:
        # Clean, padded base64 (an image as tools write it): every step below leaves it as it is,
        # so the strict decoder alone gives the same bytes; anything else it refuses.
        fast = _fast_decode(raw)
        if fast is not None:
            return fast
    stop = raw.find(b"=")
    if stop >= 0:
        raw = raw[:stop]
    raw = raw.translate(_B64_URLSAFE_TO_STD, _B64_DELETE)
    rem = len(raw) % 4
    if rem == 1:
        raw = raw[:-1]
    elif rem:
        raw += b"=" * (4 - rem)
    # Non-strict binascii ignores the unused low bits of a partial group, as Bun does.
    return _decode_clean(raw)


def _fast_decode(raw: bytes) -> bytes | None:
    """``raw`` decoded by pybase64 (SIMD, about 8x binascii: images are most of what an import
    decodes) when it is installed and ``raw`` is standard, padded base64; else None."""
    global _FAST
    if _FAST is None:
        try:
            import pybase64

            _FAST = pybase64.b64decode
        except ImportError:  # (a platform without its wheel: the standard library's)
            _FAST = False
    if _FAST is False:
        return None
    try:
        return bytes(_FAST(raw, validate=True))
    except (binascii.Error, ValueError):  # not clean: the lenient steps decide
        return None


def _decode_clean(raw: bytes) -> bytes:
    """Standard, padded base64 (what b64decode_lenient leaves) decoded; pybase64 decodes such
    input to the same bytes as binascii, unused low bits ignored (tests/format/test_b64_fast.py)."""
    if len(raw) >= _FAST_FROM:
        fast = _fast_decode(raw)
        if fast is not None:  # never None for clean input where pybase64 is installed
            return fast
    return binascii.a2b_base64(raw)


_FAST: Any = None  # pybase64.b64decode, False without it, None before the first decode
_FAST_FROM = 1024  # below, a call costs more than it saves


def b64encode(data: bytes) -> str:
    """Standard alphabet, padded: what ``Buffer.toString("base64")`` gives on resolution."""
    # base64.b64encode is this call (the module costs start-up: it imports struct)
    return binascii.b2a_base64(data, newline=False).decode("ascii")


# ----------------------------------------------------------------- sidecars

_KNOWN_IMAGE_EXT = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
}
_EXT_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]*")


def blob_extension_for_mime(mime_type: object) -> str | None:
    """Extension of the typed sidecar omp links next to an image blob (S8.8.4), or None."""
    if not isinstance(mime_type, str) or not mime_type:
        return None
    lower = mime_type.lower()
    known = _KNOWN_IMAGE_EXT.get(lower)
    if known is not None:
        return known
    if not lower.startswith("image/"):
        return None
    ext = lower[len("image/"):].split(";")[0].split("+")[0]
    # omp tolerates one leading dot, as for a caller-supplied ".png".
    if ext.startswith("."):
        ext = ext[1:]
    if not ext or len(ext) > 32 or not _EXT_RE.fullmatch(ext):
        return None
    # Already lower-case ASCII; omp lower-cases again, which cannot change it.
    return ext


# ----------------------------------------------------------------- stores


class BlobReader(Protocol):
    def get(self, sha: str) -> bytes | None: ...


class BlobSink(Protocol):
    def put(self, data: bytes, mime_type: str | None = None) -> str: ...


class BlobStore:
    """A blob directory laid out exactly as omp's (``<root>/<sha>`` plus ``<sha>.<ext>`` sidecars)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._made = False

    def path(self, sha: str) -> Path:
        return self.root / _check_hash(sha)

    def put(self, data: bytes, mime_type: str | None = None) -> str:
        sha = _sha256_hex(data)
        target = self.root / sha
        if not self._made:  # once per store (a blob dir removed meanwhile: _create makes it again)
            self.root.mkdir(parents=True, exist_ok=True)
            self._made = True
        try:
            existing: bytes | None = target.read_bytes()
        except FileNotFoundError:
            existing = None
        if existing == data:
            # omp writes it again, which renews its time: `blobs gc` holds back a blob touched
            # since its scan, and the caller is about to reference this one
            with contextlib.suppress(OSError):
                os.utime(target)
        elif existing is not None:
            # A damaged blob: omp rewrites it in place, which also repairs any
            # sidecar hard-linked to it (a rename would leave that one stale).
            with open(target, "r+b") as f:
                f.write(data)
                f.truncate()
        else:
            self._create(target, sha, data)
        ext = blob_extension_for_mime(mime_type)
        if ext is not None:
            sidecar = self.root / f"{sha}.{ext}"
            try:
                os.link(target, sidecar)
            except FileExistsError:
                pass
            except OSError:
                # Filesystems without hard links: omp falls back to a copy too.
                sidecar.write_bytes(data)
        return sha

    def _create(self, target: Path, sha: str, data: bytes) -> None:
        # Through a rename, so a concurrent reader never sees a half-written blob.
        import secrets

        tmp = self.root / f".{sha}.{secrets.token_hex(8)}.tmp"
        # 0o666 minus umask: the mode omp's writeFileSync gives a new blob.
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileNotFoundError:  # the blob dir was removed since this store made it
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            try:
                view = memoryview(data)
                while view:  # plain writes: a file object would stat, seek and ask for a tty first
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def get(self, sha: str) -> bytes | None:
        try:
            return self.path(sha).read_bytes()
        except FileNotFoundError:
            return None

    def __contains__(self, sha: object) -> bool:
        # A non-canonical name can never be stored, so membership is simply False.
        if not isinstance(sha, str) or not _HASH_RE.fullmatch(sha):
            return False
        return (self.root / sha).is_file()

    def iter_hashes(self) -> Iterator[str]:
        """Stored hashes in sorted order; sidecars and temp files are skipped."""
        try:
            names = sorted(os.listdir(self.root))
        except FileNotFoundError:
            return
        for name in names:
            if _HASH_RE.fullmatch(name) and (self.root / name).is_file():
                yield name

    def verify(self, sha: str) -> bool:
        """True when the blob exists and its content hashes to its name."""
        data = self.get(sha)
        return data is not None and _sha256_hex(data) == sha


class MemoryBlobStore:
    """In-memory stand-in for ``BlobStore`` (tests, dry runs); ``sidecars`` records the links omp would make."""

    def __init__(self, blobs: dict[str, bytes] | None = None) -> None:
        self.root = Path("<memory>")
        self.blobs: dict[str, bytes] = dict(blobs or {})
        self.sidecars: dict[str, set[str]] = {}

    def path(self, sha: str) -> Path:
        return self.root / _check_hash(sha)

    def put(self, data: bytes, mime_type: str | None = None) -> str:
        sha = _sha256_hex(data)
        self.blobs[sha] = bytes(data)
        ext = blob_extension_for_mime(mime_type)
        if ext is not None:
            self.sidecars.setdefault(sha, set()).add(ext)
        return sha

    def get(self, sha: str) -> bytes | None:
        return self.blobs.get(_check_hash(sha))

    def __contains__(self, sha: object) -> bool:
        return isinstance(sha, str) and sha in self.blobs

    def iter_hashes(self) -> Iterator[str]:
        yield from sorted(self.blobs)

    def verify(self, sha: str) -> bool:
        data = self.get(sha)
        return data is not None and _sha256_hex(data) == sha


# ----------------------------------------------------------------- positions


def _is_image_block(value: dict[str, Any]) -> bool:
    return value.get("type") == "image" and isinstance(value.get("data"), str)


def is_externalizable_image_position(value: object, key: str | None) -> bool:
    """omp's "image position" test shared by persistence and resolution (S8.7 2b).

    A ``type:"image"`` object with string ``data`` under key ``content``, or any
    object with string ``data`` that is ``type:"image"`` or has an ``image/*``
    ``mimeType`` under key ``images`` or ``frames``. Array items inherit the
    array's key.
    """
    if not isinstance(value, dict) or not isinstance(value.get("data"), str):
        return False
    if key == "content":
        return _is_image_block(value)
    if key == "images" or key == "frames":
        if _is_image_block(value):
            return True
        mime = value.get("mimeType")
        return isinstance(mime, str) and mime.lower().startswith("image/")
    return False


# ----------------------------------------------------------------- resolution


@dataclass(frozen=True, slots=True)
class BlobRefProblem:
    """A ref in a resolvable position that omp leaves verbatim on load (it only logs these)."""

    kind: Literal["missing", "malformed"]
    ref: str
    path: tuple[str | int, ...]  # keys/indexes from the entry down to the string

    def __str__(self) -> str:
        where = ".".join(str(p) for p in self.path) or "<entry>"
        what = "blob not found" if self.kind == "missing" else "malformed blob reference"
        return f"{what} at {where}: {self.ref!r} (left as is, as omp does)"


_Path = tuple[str | int, ...]


class _Frame:
    """A container being walked: its children still to visit, and its copy once a child changed."""

    __slots__ = ("children", "out", "slot", "value")

    def __init__(self, value: Any, out: Any, children: Iterator[tuple[str | int, Any, str | None]]) -> None:
        self.value = value
        self.out = out  # ``value`` itself until something below changes (copy-on-write)
        self.children = children
        self.slot: str | int = 0  # where this container sits in its parent

    def put(self, slot: str | int, old: Any, new: Any) -> None:
        if new is old:
            return
        if self.out is self.value:
            self.out = list(self.value) if isinstance(self.value, list) else dict(self.out)
        self.out[slot] = new


class _Resolver:
    """The walk omp does on load, without recursion: a record nested 100,000 levels deep must not
    raise (issue 16); paths are built only for the problems reported, so depth costs no copies."""

    __slots__ = ("base", "problems", "stack", "store")

    def __init__(self, store: BlobReader, problems: list[BlobRefProblem] | None) -> None:
        self.store = store
        self.problems = problems
        self.base: _Path = ()
        self.stack: list[_Frame] = []

    def _path(self, *tail: str | int) -> _Path:
        return (*self.base, *(f.slot for f in self.stack[1:]), *tail)

    def _blob(self, ref: str, path: _Path) -> bytes | None:
        sha = parse_blob_ref(ref)
        if sha is None:
            if self.problems is not None:
                self.problems.append(BlobRefProblem("malformed", ref, path))
            return None
        data = self.store.get(sha)
        if data is None and self.problems is not None:
            self.problems.append(BlobRefProblem("missing", ref, path))
        return data

    def image(self, ref: str, path: _Path) -> str:
        data = self._blob(ref, path)
        return ref if data is None else b64encode(data)

    def data_url(self, ref: str, path: _Path) -> str:
        data = self._blob(ref, path)
        # Buffer.toString("utf8") substitutes U+FFFD like Python's "replace".
        return ref if data is None else data.decode("utf-8", "replace")

    def _visit(self, value: Any, key: str | None, *slot: str | int) -> Any:
        """``value`` resolved (when it needs no descent), or a frame to descend into."""
        # Snapcompact frames stay refs on load: omp resolves them lazily when
        # building a provider request.
        if key != "frames" and is_externalizable_image_position(value, key):
            data = value["data"]
            if data.startswith(BLOB_PREFIX):
                new = self.image(data, self._path(*slot, "data"))
                if new is not data:
                    out = dict(value)
                    out["data"] = new
                    return out
                return value
            # Not a ref: omp still descends into the rest of the image object.
        if isinstance(value, list):
            return _Frame(value, value, ((i, item, key) for i, item in enumerate(value)))
        if not isinstance(value, dict):
            return value
        obj: dict[str, Any] = value
        if value.get("type") == "image_generation_call":
            result = value.get("result")
            if isinstance(result, str) and result.startswith(BLOB_PREFIX):
                new = self.image(result, self._path(*slot, "result"))
                if new is not result:
                    obj = dict(obj)
                    obj["result"] = new
        image_url = value.get("image_url")
        if isinstance(image_url, str) and image_url.startswith(BLOB_PREFIX):
            new = self.data_url(image_url, self._path(*slot, "image_url"))
            if new is not image_url:
                if obj is value:
                    obj = dict(obj)
                obj["image_url"] = new
        # strings are only resolved through the parent checks above
        return _Frame(value, obj, ((k, child, k) for k, child in value.items() if isinstance(child, dict | list)))

    def walk(self, value: Any, key: str | None, path: _Path) -> Any:
        self.base = path
        self.stack = []
        first = self._visit(value, key)
        if not isinstance(first, _Frame):
            return first
        stack = self.stack = [first]
        while True:
            frame = stack[-1]
            step = next(frame.children, None)
            if step is None:
                stack.pop()
                if not stack:
                    return frame.out
                stack[-1].put(frame.slot, frame.value, frame.out)
                continue
            slot, child, child_key = step
            got = self._visit(child, child_key, slot)
            if isinstance(got, _Frame):
                got.slot = slot
                stack.append(got)
            else:
                frame.put(slot, child, got)


def holds_blob_ref(value: Any) -> bool:
    """Whether a string starting with ``blob:sha256:`` is anywhere in ``value``."""
    todo = [value]  # a stack, not recursion: any nesting depth
    pop, push = todo.pop, todo.extend
    while todo:
        v = pop()
        if isinstance(v, str):
            if v.startswith(BLOB_PREFIX):
                return True
        elif isinstance(v, list):
            push(v)
        elif isinstance(v, dict):
            push(v.values())
    return False


def resolve_blob_refs(entry: Any, store: BlobReader, problems: list[BlobRefProblem] | None = None) -> Any:
    """omp's load-time blob resolution (S8.8.5/S8.8.6), copy-on-write.

    Refs in image positions (not under ``frames``), in
    ``image_generation_call.result`` and in any string ``image_url`` are
    replaced by the blob (padded base64, resp. its UTF-8 text). Malformed refs
    and missing blobs stay verbatim and are appended to ``problems``. Refs
    anywhere else are not touched. The header (``type:"session"``) is never
    resolved, as in omp. Returns ``entry`` itself when nothing changed.
    """
    if isinstance(entry, dict) and entry.get("type") == "session":
        return entry
    if not holds_blob_ref(entry):
        return entry
    return _Resolver(store, problems).walk(entry, None, ())


def _sha256_hex(data: bytes) -> str:
    import hashlib  # with OpenSSL behind it, a noticeable part of a small command's start-up

    return hashlib.sha256(data).hexdigest()
