"""Move the inline images of an existing session into the blob store (docs/blobs.md).

omp externalizes an image only when it writes the line (spec S8.7 2a/2b/2d, S8.8): sessions
written before that rule, by other tools, or appended by hand keep their base64 inline. This
module rewrites such a file into a new one, image by image, with omp's own persistence walk
(:func:`omp_session.persist.truncate_for_persistence`, the code the manager writes with), so
thresholds and hashing are omp's by construction.

From that walk only the image moves are taken, and only those omp's loader undoes exactly, so
that what omp loads from the new file (entries, context) is what it loads from the old one:

* string truncation, ``jsonlEvents`` removal and the other steps of the walk are left out —
  they change what omp sees;
* an image whose base64 is not canonical (missing padding, line breaks, URL-safe alphabet) is
  left inline: omp would load it back re-encoded, a different string;
* snapcompact ``frames`` stay inline: omp leaves frame refs unresolved on load (S8.8.5);
* the header is never touched (omp never resolves refs in it).

Every record not changed is copied byte for byte, as are the title slot, blank lines and
unreadable records.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Final

from omp_session.errors import EditError, FormatError
from omp_session.format.blobs import BLOB_PREFIX, BlobSink, BlobStore, b64encode, parse_blob_ref
from omp_session.format.gc_pause import gc_paused
from omp_session.format.reader import Journal, scan_file
from omp_session.js import codec
from omp_session.paths import blobs_dir
from omp_session.store.atomic import copy_mode, write_new_file
from omp_session.write.persist import BLOB_EXTERNALIZE_MIN, truncate_for_persistence

from .marks import DATA, IMAGE, RESULT, record_marks

__all__ = [
    "ExternalizeResult",
    "externalize",
    "externalize_record",
    "externalize_records",
    "write_session_copy",
]

# the marks in a record written with whitespace around its colons (Python's json.dumps, by hand):
# the byte marks know only omp's compact '"data":"' and '"result":"'
_SPACED: Final = re.compile(rb'"(?:data|result)"[ \t\r]*:[ \t\r]*"|"image_url"[ \t\r]*:[ \t\r]*"data:image/')


class _Recorder:
    """A blob sink that only remembers what omp would store: blobs are written after the walk,
    and only for the images that are actually moved."""

    def __init__(self) -> None:
        self.blobs: dict[str, tuple[bytes, set[str | None]]] = {}

    def put(self, data: bytes, mime_type: str | None = None) -> str:
        sha = hashlib.sha256(data).hexdigest()
        entry = self.blobs.get(sha)
        if entry is None:
            self.blobs[sha] = (data, {mime_type})
        else:
            entry[1].add(mime_type)
        return sha


@dataclass(slots=True)
class ExternalizeResult:
    """What externalizing a session does (or did)."""

    source: str
    output: str | None = None
    bytes_before: int = 0
    bytes_after: int = 0
    images_moved: int = 0
    image_bytes_moved: int = 0  # inline characters replaced by refs
    records_changed: int = 0
    blobs: list[str] = field(default_factory=list)  # distinct hashes referenced by the moves
    new_blobs: int = 0  # of those, how many the store did not hold yet
    below_threshold: int = 0  # inline images omp keeps inline (< 1024 characters)
    kept_noncanonical: int = 0  # inline images left because omp would load them re-encoded
    kept_frames: int = 0  # snapcompact frames left inline

    @property
    def saved(self) -> int:
        return self.bytes_before - self.bytes_after

    def take_in(self, later: ExternalizeResult) -> None:
        """The dry run of the records after this one's (a forked child's part) added as one pass
        over all of them adds it: its change in size, its counts, its distinct blobs after these."""
        self.bytes_after += later.bytes_after - later.bytes_before
        self.images_moved += later.images_moved
        self.image_bytes_moved += later.image_bytes_moved
        self.records_changed += later.records_changed
        have = set(self.blobs)
        self.blobs += [sha for sha in later.blobs if sha not in have]
        self.new_blobs += later.new_blobs
        self.below_threshold += later.below_threshold
        self.kept_noncanonical += later.kept_noncanonical
        self.kept_frames += later.kept_frames

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source, "output": self.output, "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after, "saved": self.saved, "images_moved": self.images_moved,
            "image_bytes_moved": self.image_bytes_moved, "records_changed": self.records_changed,
            "blobs": len(self.blobs), "new_blobs": self.new_blobs, "below_threshold": self.below_threshold,
            "kept_noncanonical": self.kept_noncanonical, "kept_frames": self.kept_frames,
        }


# ----------------------------------------------------------------- the graft


class _Graft:
    """Takes from omp's walk output only the image refs omp resolves back to the same string."""

    __slots__ = ("accepted", "frames", "moved", "moved_chars", "noncanonical", "recorder")

    def __init__(self, recorder: _Recorder) -> None:
        self.recorder = recorder
        self.accepted: set[str] = set()
        self.moved = 0
        self.moved_chars = 0
        self.noncanonical = 0
        self.frames = 0

    def take(self, orig: Any, new: Any, key: str | None) -> Any:
        """``orig`` with the accepted moves of ``new`` (the walk's output for it) grafted in.

        Depth first along the paths the walk changed, with an explicit stack: any depth."""
        done, value = self._settle(orig, new, key)
        if done:
            return value
        # frame: [orig, its (slot, orig member, new member, key) iterator, copy or None, slot below]
        stack: list[list[Any]] = [[orig, _pairs(orig, new, key), None, None]]
        while True:
            frame = stack[-1]
            below: list[Any] | None = None
            for slot, a, b, k in frame[1]:
                if b is a:
                    continue
                done, c = self._settle(a, b, k)
                if not done:
                    below = [a, _pairs(a, b, k), None, None]
                    frame[3] = slot
                    break
                if c is not a:
                    if frame[2] is None:
                        frame[2] = dict(frame[0]) if isinstance(frame[0], dict) else list(frame[0])
                    frame[2][slot] = c
            if below is not None:
                stack.append(below)
                continue
            stack.pop()
            result = frame[0] if frame[2] is None else frame[2]
            if not stack:
                return result
            if result is not frame[0]:
                parent = stack[-1]
                if parent[2] is None:
                    parent[2] = dict(parent[0]) if isinstance(parent[0], dict) else list(parent[0])
                parent[2][parent[3]] = result

    def _settle(self, orig: Any, new: Any, key: str | None) -> tuple[bool, Any]:
        """(True, what ``orig`` becomes) when that needs no look inside, else (False, None)."""
        if new is orig:
            return True, orig
        if isinstance(orig, str):
            return True, self._string(orig, new, key)
        if isinstance(orig, list) and isinstance(new, list) and len(orig) == len(new):
            return False, None
        if isinstance(orig, dict) and isinstance(new, dict):
            if key == "frames":
                self.frames += _count_moves(orig, new)
                return True, orig
            return False, None
        return True, orig

    def _string(self, orig: str, new: Any, key: str | None) -> str:
        if not (isinstance(new, str) and new.startswith(BLOB_PREFIX)) or orig.startswith(BLOB_PREFIX):
            return orig  # a truncation or another change omp's loader would not undo
        sha = parse_blob_ref(new)
        if sha is None:
            return orig
        data = self.recorder.blobs[sha][0]
        # What omp's loader puts back (S8.8.5): padded base64 of an image, the text of a data URL.
        back = data.decode("utf-8", "replace") if key == "image_url" else b64encode(data)
        if back != orig:
            self.noncanonical += 1
            return orig
        self.accepted.add(sha)
        self.moved += 1
        self.moved_chars += len(orig)
        return new


def _pairs(orig: Any, new: Any, key: str | None) -> Iterator[tuple[Any, Any, Any, str | None]]:
    """(slot, orig member, new member, key) of two containers of one kind, in ``orig``'s order."""
    if isinstance(orig, dict):
        keys = [k for k in orig if k in new]
        return zip(keys, map(orig.__getitem__, keys), map(new.__getitem__, keys), keys, strict=True)
    # array items inherit the array's key, as in the walk (the lengths are equal: see _settle)
    return zip(range(len(orig)), orig, new, repeat(key, len(orig)), strict=True)


def _count_moves(orig: Any, new: Any) -> int:
    count = 0
    todo: list[tuple[Any, Any]] = [(orig, new)]  # a stack, not recursion: any nesting depth
    while todo:
        a, b = todo.pop()
        if b is a:
            continue
        if isinstance(a, str):
            count += isinstance(b, str) and b.startswith(BLOB_PREFIX)
        elif isinstance(a, list) and isinstance(b, list):
            todo.extend(zip(a, b, strict=False))
        elif isinstance(a, dict) and isinstance(b, dict):
            todo.extend((v, b[k]) for k, v in a.items() if k in b)
    return count


def _count_small_images(value: Any, key: str | None) -> int:
    """Inline images in externalizable positions that omp keeps inline for their size."""
    count = 0
    todo: list[tuple[Any, str | None]] = [(value, key)]  # a stack, not recursion: any nesting depth
    while todo:
        value, key = todo.pop()
        if isinstance(value, list):
            todo.extend((v, key) for v in value)
            continue
        if not isinstance(value, dict):
            continue
        data = value.get("data")
        if (key in ("content", "images") and isinstance(data, str) and not data.startswith(BLOB_PREFIX)
                and (value.get("type") == "image" or (key == "images" and str(value.get("mimeType", ""))
                                                       .lower().startswith("image/")))
                and codec.utf16_len(data) < BLOB_EXTERNALIZE_MIN):
            count += 1
            continue
        todo.extend((v, k) for k, v in value.items())
    return count


# ----------------------------------------------------------------- records


def _value(journal: Journal, i: int) -> Any:
    """Record ``i`` decoded as the reader decodes it, without keeping it in the journal's cache."""
    cached = journal.is_decoded(i)
    value = journal.value(i)
    if not cached:
        del journal.values[i]
    return value


def externalize_record(journal: Journal, i: int, raw: bytes, result: ExternalizeResult,
                       sink: BlobSink | None, marks: int | None = None) -> bytes | None:
    """The new bytes of record ``i`` (``raw``, without its end of line), or None when it stays.

    Counts into ``result``; stores the moved blobs in ``sink`` (None: a dry run). ``marks``:
    :func:`~.marks.record_marks` of ``raw``, when the caller has them.
    """
    if marks is None:
        marks = record_marks(raw)
    image = bool(marks & IMAGE)
    small = image and (b'"image"' in raw or b'"images"' in raw)
    candidate = len(raw) >= BLOB_EXTERNALIZE_MIN and bool(
        marks & (DATA | RESULT) or (image and b'"image_url":"data:image/' in raw)
        or ((b'"data"' in raw or b'"result"' in raw or b'"image_url"' in raw) and _SPACED.search(raw)))
    if not small and not candidate:
        return None
    # a record nested deep allocates a container per level in every pass below; collections
    # meanwhile would walk all of them again and again (JSON values and the walk's frames make no cycles)
    with gc_paused():
        return _externalize_candidate(journal, i, small, candidate, result, sink)


def _externalize_candidate(journal: Journal, i: int, small: bool, candidate: bool, result: ExternalizeResult,
                           sink: BlobSink | None) -> bytes | None:
    value = _value(journal, i)
    if not isinstance(value, dict):
        return None
    if small:
        result.below_threshold += _count_small_images(value, None)
    if not candidate:
        return None
    recorder = _Recorder()
    graft = _Graft(recorder)
    new = graft.take(value, truncate_for_persistence(value, recorder), None)
    result.kept_noncanonical += graft.noncanonical
    result.kept_frames += graft.frames
    if new is value:
        return None
    for sha in sorted(graft.accepted):
        data, mimes = recorder.blobs[sha]
        if sha not in result.blobs:
            result.blobs.append(sha)
            if sink is not None and not _holds(sink, sha):
                result.new_blobs += 1
        if sink is not None:
            for mime in sorted(mimes, key=lambda m: m or ""):
                sink.put(data, mime)
    result.images_moved += graft.moved
    result.image_bytes_moved += graft.moved_chars
    result.records_changed += 1
    return codec.dumps_line(new)[:-1]  # the record's own end of line stays in the copied bytes


def externalize_records(journal: Journal, result: ExternalizeResult,
                        sink: BlobSink | None) -> Iterator[bytes]:
    """The bytes of the new file, in pieces: everything of ``journal``'s file, with each
    record that holds a movable image replaced by its new serialization.

    The blobs of a record go to ``sink`` before its bytes are yielded, so a ref is never
    published ahead of its blob. ``sink=None`` is a dry run.
    """
    pos = 0
    size = journal.size
    for i in range(1, len(journal)):  # record 0 is the header: never resolved, never changed
        new = externalize_record(journal, i, journal.raw(i), result, sink)
        if new is None:
            continue
        start = journal.start(i)
        while pos < start:
            block = journal.read(pos, min(start, pos + (1 << 20)))
            pos += len(block)
            yield block
        yield new
        pos = journal.end(i)
    while pos < size:
        block = journal.read(pos, min(size, pos + (1 << 20)))
        pos += len(block)
        yield block


def _holds(sink: BlobSink, sha: str) -> bool:
    try:
        return sha in sink  # type: ignore[operator]
    except TypeError:
        return False


def write_session_copy(source: str | os.PathLike[str], out: str | os.PathLike[str], pieces: Iterable[bytes],
                       *, force: bool = False) -> int:
    """Write ``pieces`` to ``out`` atomically (temp file in its directory, fsync, rename); returns
    the bytes written. Refuses ``source`` itself and an existing ``out`` unless ``force``; on any
    failure nothing is left behind."""
    return write_new_file(out, pieces, force=force, error=EditError, source=source,
                          in_place="is the input session; the new session is never written in place",
                          mode=copy_mode(source))


def refuse_archive(path: str) -> None:
    """An archive is rewritten by unpacking it first: these commands work on a session's own bytes."""
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
    except OSError:
        return  # the open that follows reports it
    if magic == b"\x1f\x8b":
        raise FormatError("is a gzip archive (.jsonl.gz); gunzip it first", path=path)


def read_error(path: str, e: OSError) -> FormatError:
    """One line for a session file these commands cannot read."""
    if isinstance(e, IsADirectoryError):
        return FormatError("is a directory, not a session file", path=path)
    return FormatError(f"cannot read: {e.strerror or e}", path=path)


def _open_journal(path: str) -> Journal:
    refuse_archive(path)
    try:
        journal = scan_file(path)
    except OSError as e:
        raise read_error(path, e) from None
    if len(journal) == 0:
        journal.close()
        raise FormatError("holds no session header", path=path)
    header = journal.value(0)
    if not (isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str)):
        journal.close()
        raise FormatError('the first record is not a session header ({"type":"session","id":<string>})',
                          path=path)
    return journal


def externalize(path: str | os.PathLike[str], out: str | os.PathLike[str] | None, *,
                store: BlobStore | str | os.PathLike[str] | None = None, force: bool = False) -> ExternalizeResult:
    """Write ``out``: ``path`` with its inline images moved into ``store`` (default omp's blob
    directory). ``out=None`` is a dry run: nothing is stored or written, the result says what
    would change. Never writes ``path`` itself."""
    src = os.fspath(path)
    journal = _open_journal(src)
    try:
        result = ExternalizeResult(src, None if out is None else os.fspath(out), bytes_before=journal.size)
        if out is None:
            result.bytes_after = sum(len(p) for p in externalize_records(journal, result, None))
            return result
        sink = store if isinstance(store, BlobStore) else BlobStore(blobs_dir() if store is None else store)
        result.bytes_after = write_session_copy(src, out, externalize_records(journal, result, sink), force=force)
        return result
    finally:
        journal.close()
