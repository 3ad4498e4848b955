"""Repair a damaged session file so omp opens it, losing nothing that can be read.

    plan = plan_repair(path)          # reads only
    for fix in plan.fixes: print(fix)
    apply_repair(plan, out="fixed.jsonl")   # or in_place=True (keeps PATH.bak)

The plan is computed from the file's bytes in a fixed order of steps, each in its own module:
records (``repair_records``: spec S1.1-S1.4), the title slot and the header (here: S1.2, S2),
records omp cannot load, repeated records and ids, orphans and cycles (``repair_tree``: S1.6,
S6, S14). ``docs/repair.md`` states every rule; applying writes atomically (S8.4).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from omp_session.catalog.quarantine import QUARANTINE_SUFFIX
from omp_session.diagnostics import Severity
from omp_session.errors import (
    NotASessionError,
    PersistenceError,
    RepairConflictError,
    RepairError,
    SessionFileError,
    WriteConflictError,
)
from omp_session.format.background import Background
from omp_session.format.gc_pause import gc_paused
from omp_session.format.migrate import needs_migration
from omp_session.format.reader import Journal, scan_bytes, scan_file
from omp_session.format.split import forked
from omp_session.format.title import TITLE_SLOT_BYTES, build_title_slot
from omp_session.js import codec
from omp_session.store.atomic import (
    Output,
    Pending,
    check_output,
    copy_mode,
    pending_output,
    write_behind,
    write_new_file,
)
from omp_session.store.base import conflict_message
from omp_session.store.locking import publish_lock
from omp_session.write.ids import iso_timestamp, new_session_id

from .model import Fix, Quarantined, RepairPlan, RepairResult
from .records import Later, Rec, Records, prove_later, read_records
from .tree import (
    break_cycles,
    drop_duplicates,
    fresh_ids,
    quarantine_crashers,
    reattach_orphans,
    tree_is_clean,
)

__all__ = ["Fix", "NotASessionError", "Quarantined", "RepairConflictError", "RepairError", "RepairPlan",
           "RepairResult", "apply_repair", "plan_repair", "plan_repair_bytes", "quarantine_path", "repair_to"]

_SNIFF = 1024 * 1024
_CHUNK = 1024 * 1024
_PAD = b" \t\r\n\x00"
_FILE_NAME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d)-(\d\d)-(\d\d)-(\d{3}Z)_([0-9a-fA-F-]{36})\.jsonl$")


def quarantine_path(target: str | os.PathLike[str]) -> str:
    """``<target>.quarantine``: JSON lines, but not named ``*.jsonl``, so that neither omp nor we ever
    list it, look it up by id or validate it as a session (issue 15; docs/repair.md)."""
    return os.fspath(target) + QUARANTINE_SUFFIX


def plan_repair(path: str | os.PathLike[str], *, blob_store: Any = None, digest: bool = True) -> RepairPlan:
    """Read ``path`` and work out its repair; writes nothing (a damaged file's repaired bytes are
    kept in a temporary file until the plan is gone).

    Raises :class:`NotASessionError` for a directory, an empty file or bytes that are not a
    session (a PNG, random data), :class:`SessionFileError` when the file cannot be read.
    ``blob_store`` (default: omp's blob directory) is only used to report missing blobs.
    The file is read a chunk at a time and its records decoded one at a time: memory does not
    grow with its size.

    ``digest=False``: a plan to be looked at only. The file's SHA-256 (``sha256``, and
    ``output_sha256`` when the file is its own repair) is left empty unless deciding needs it,
    which saves hashing a big file beside the read; :func:`apply_repair` refuses such a plan.
    """
    return _plan_file(os.fspath(path), blob_store, digest, None)


def _plan_file(name: str, blob_store: Any, digest: bool, copy: Pending | None) -> RepairPlan:
    """:func:`plan_repair`; every byte hashed also written to ``copy`` (see :func:`repair_to`)."""
    if os.path.isdir(name):
        raise NotASessionError(f"{name}: is a directory, not a session file")
    if name.endswith(".jsonl.gz"):
        raise RepairError(f"{name}: an archived session (.jsonl.gz); gunzip it, then repair the plain file")
    try:
        with open(name, "rb") as f:
            st = os.fstat(f.fileno())
            head, blank = _read_facts(f)
        _refuse(head, st.st_size, blank, name)
        del head
        # the file's SHA-256 (and the copy, see repair_to) from its first byte on, in a child,
        # while this process scans and plans (forked first: a process forks only while it runs
        # no thread of its own)
        digesting = _digest_in_child(name, st.st_size, copy) if digest else None
        try:
            j = scan_file(name)  # (before the thread below: the scan forks only a single-threaded process)
            later = prove_later(j)  # (so is this child)
        except BaseException:
            if digesting is not None:
                digesting.cancel()
            raise
    except FileNotFoundError:
        raise SessionFileError(name, "no such file") from None
    except OSError as e:
        raise SessionFileError(name, e.strerror or "cannot be read") from None
    # where no child is worth it, the digest in a thread while the records are read: hashlib
    # works without the interpreter lock, and a big file's digest took a sixth of the repair
    hashing = Background(lambda stop: _file_digest(name, stop, copy), "omp-session-repair-digest") \
        if digest and digesting is None else None

    def file_digest() -> str:
        try:
            if digesting is not None:
                made = digesting()
                if copy is not None and copy.written != j.size:
                    # the child, forked before the scan, read another file than the scan did (omp
                    # finished a line meanwhile): its copy is not what was planned, never placed
                    copy.failed = True
                return made
            return hashing.result() if hashing is not None else _file_digest(name, threading.Event())
        except OSError as e:
            raise SessionFileError(name, e.strerror or "cannot be read") from None

    try:
        if blob_store is None:
            from omp_session.format.blobs import BlobStore
            from omp_session.paths import blobs_dir

            blob_store = BlobStore(blobs_dir())
        return _plan(j, name, st.st_size, st.st_mtime_ns, file_digest, blob_store, source=name, later=later,
                     digest_wanted=digest)
    finally:
        if hashing is not None:
            hashing.cancel()
        if digesting is not None:
            digesting.cancel()
        if later is not None:
            later.result.cancel()  # (nothing to do once taken; after an error, the child goes)
        j.close()


class _ChildDigest:
    """:func:`_file_digest` of a big file made by a forked child (:func:`~omp_session.format.split.forked`)
    from the start of the plan; call for the digest. The child writes the copy too and says how
    much it wrote and whether a write failed, which ``copy`` then holds. Should the child fail,
    the digest is made here and the copy, which it may have written in part, is never placed."""

    def __init__(self, name: str, size: int, copy: Pending | None) -> None:
        self._copy = copy
        here = os.getpid()

        def digest() -> tuple[str, int, bool]:
            if os.getpid() == here:  # the child failed: this process makes the digest, no copy
                return _file_digest(name, threading.Event()), 0, True
            made = _file_digest(name, threading.Event(), copy)
            if copy is None:
                return made, 0, False
            try:
                copy.file.flush()  # (the child leaves without flushing what it buffered)
            except OSError:
                copy.failed = True
            return made, copy.written, copy.failed

        self._result = forked(digest, size)

    @property
    def forked(self) -> bool:
        return self._result.forked

    def __call__(self) -> str:
        made, written, failed = self._result()
        if self._copy is not None:
            self._copy.written, self._copy.failed = written, failed or self._copy.failed
        return made

    def cancel(self) -> None:
        self._result.cancel()


def _digest_in_child(name: str, size: int, copy: Pending | None) -> _ChildDigest | None:
    """A :class:`_ChildDigest` of the file, or None where no child is worth it."""
    child = _ChildDigest(name, size, copy)
    return child if child.forked else None


def _read_facts(f: BinaryIO) -> tuple[bytes, bool]:
    """(the first ``_SNIFF`` bytes, whether every byte is whitespace or NUL) of a file, read only
    as far as it takes to tell."""
    head = f.read(_SNIFF)
    blank = not head.strip(_PAD)
    while blank and (block := f.read(_CHUNK)):
        blank = not block.strip(_PAD)
    return head, blank


def _file_digest(path: str, stop: threading.Event, copy: Pending | None = None) -> str:
    """The SHA-256 of the file at ``path`` ("" once ``stop`` is set); what is hashed is also
    written to ``copy``."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            if stop.is_set():
                return ""
            sha.update(block)
            if copy is not None:
                copy.write(block)
    return sha.hexdigest()


def _refuse(head: bytes, size: int, blank: bool, path: str) -> None:
    if blank:
        what = "is empty" if not size else "holds only whitespace or NUL bytes"
        raise NotASessionError(f"{path}: {what}; there is nothing to repair (omp starts a new session in it)")
    if b'"type"' not in head[:_SNIFF]:
        raise NotASessionError(f"{path}: not an omp session file (no JSON record with a \"type\" near the start)")


def plan_repair_bytes(data: bytes, path: str = "session.jsonl", *, mtime_ns: int = 0,
                      blob_store: Any = None) -> RepairPlan:
    """:func:`plan_repair` on bytes already read (``path`` names the file in messages and is where
    a lost header's id and timestamp are taken from)."""
    _refuse(data[:_SNIFF], len(data), not data.strip(_PAD), path)
    return _plan(scan_bytes(data), path, len(data), mtime_ns, hashlib.sha256(data).hexdigest(), blob_store,
                 source=None)


def _plan(j: Journal, path: str, size: int, mtime_ns: int, digest: str | Callable[[], str], blob_store: Any,
          source: str | None, later: Later | None = None, digest_wanted: bool = True) -> RepairPlan:
    """The plan for the scanned file ``j``; ``source`` is its path when it is a file (else the
    repaired bytes are small enough to be kept in memory). ``digest``: the file's SHA-256, or what
    gives it (asked for once the records are read; without ``digest_wanted``, only when telling
    whether the repair changes anything needs it)."""
    with gc_paused():  # a record each, no cycles: every full collection walked them all (see gc_pause)
        return _planned(j, path, size, mtime_ns, digest, blob_store, source, later, digest_wanted)


def _planned(j: Journal, path: str, size: int, mtime_ns: int, digest: str | Callable[[], str], blob_store: Any,
             source: str | None, later: Later | None, digest_wanted: bool) -> RepairPlan:
    rs = read_records(j, later)
    if j.bom:
        rs.fixes.insert(0, Fix("bom", "leading UTF-8 BOM removed (omp never writes one, and cannot rewrite a "
                               "file that has one)", line=1, offset=0))
    near_miss = _take_near_miss_title(j, rs)
    if j.slot is None and near_miss is None and not any(isinstance(r.kind(), str) for r in rs.recs):
        raise NotASessionError(f"{path}: not an omp session file (no session record could be read)")
    quarantine_crashers(rs, 0)
    _fix_header(rs, path)
    if not needs_migration(rs.recs[0].value):  # v1/v2 ids are replaced by omp's migration anyway
        if not tree_is_clean(rs):
            drop_duplicates(rs)
            fresh_ids(rs)
            reattach_orphans(rs)
            break_cycles(rs)
    else:
        drop_duplicates(rs)
    slot = _fix_slot(j, near_miss, rs)
    recs = rs.recs

    def pieces() -> Iterator[bytes]:
        yield slot
        for rec in recs:
            yield rec.out()

    unchanged = _unchanged(j, slot, recs)
    checked: list[Fix] | None = None
    if unchanged and source is not None:
        # The file is its own repair (what a file omp wrote is): its scan is the output's, checked
        # now, while the thread hashing the file (what the plan waits for next) is still reading.
        recs.clear()
        checked = _output_fixes(path, j, blob_store)
    out_size, out_digest = (size, "") if unchanged else _measure(pieces())
    if callable(digest):
        # (a changed record may re-serialise to the very bytes it had: only the digests tell)
        digest = digest() if digest_wanted or (not unchanged and out_size == size) else ""
    if unchanged:
        out_digest = digest
    fixes = sorted(rs.fixes, key=lambda f: (f.line is not None, f.line or 0, f.offset or 0))
    plan = RepairPlan(path, size, mtime_ns, digest, pieces, fixes=fixes, quarantined=rs.quarantined,
                      output_size=out_size, output_sha256=out_digest)
    same = unchanged or (out_size == size and out_digest == digest)
    if same and not plan.quarantined:
        # a record-level fix that re-serialised to the very same bytes changed nothing
        plan.fixes = [f for f in plan.fixes if not f.changes]
    if source is None:
        _check_output(plan, scan_bytes(plan.output), blob_store)
        return plan
    if same:  # the file is its own repair: read it, not a copy (the scan is done: reuse it)
        plan.pieces_of = lambda: _file_chunks(source)
        check = j
    else:
        spool = _spool(plan)
        plan.pieces_of = lambda: _file_chunks(spool)
        check = scan_file(spool)
    if checked is not None:
        plan.fixes.extend(checked)
        return plan
    recs.clear()  # the records are written: what the check builds takes their place
    _check_output(plan, check, blob_store)
    return plan


def _unchanged(j: Journal, slot: bytes, recs: list[Rec]) -> bool:
    """Whether the repaired bytes are the file's, seen without reading them: the slot as it was,
    then every record as it was, in file order, one per line, nothing between or after them."""
    if j.bom or (slot and (j.slot is None or j.read(0, len(slot)) != slot)):
        return False
    end, line = len(slot) - 1, 1 if slot else 0  # where the previous line's LF is, and its number
    for rec in recs:
        span = rec.span()
        # (a record whose line is where it starts in the file is on the next line when it starts
        # just after the previous one's LF: asking would number every line of the file)
        if (span is None or rec.dirty or span[0] != end + 1
                or (not rec.line_is_positional and rec.line != line + 1)):
            return False  # a record that changed, moved, or has something before it on its line
        end, line = span[1], line + 1
    # (each record is one line: one holding a LF is dirty, so the byte after it is its line's LF)
    return end + 1 == j.size and j.final_newline


def _measure(pieces: Iterable[bytes]) -> tuple[int, str]:
    sha = hashlib.sha256()
    size = 0
    for piece in pieces:
        sha.update(piece)
        size += len(piece)
    return size, sha.hexdigest()


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            yield block


def _spool(plan: RepairPlan) -> str:
    """The repaired bytes written to a private temporary file (removed with the plan): read back
    to check them, and copied from there when the plan is applied."""
    fd, spool = tempfile.mkstemp(prefix="omp-repair-", suffix=".jsonl")
    weakref.finalize(plan, _unlink, spool)
    with os.fdopen(fd, "wb") as f:
        for piece in plan.pieces():
            f.write(piece)
    return spool


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _take_near_miss_title(j: Journal, rs: Records) -> Rec | None:
    """A first line that tries to be a title slot but is not a valid one (S1.2.5): omp then reads it
    as the first record and refuses the file, so it is taken out here and rebuilt later."""
    if j.slot is not None or not rs.recs:
        return None
    first = rs.recs[0]
    if first.line == 1 and isinstance(first.value, dict) and first.value.get("type") == "title":
        rs.recs.pop(0)
        return first
    return None


def _is_header(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def _fix_header(rs: Records, path: str) -> None:
    """The header must be the first record (S1.4.4, S2): move it there, or rebuild it."""
    recs = rs.recs
    at = next((i for i, r in enumerate(recs) if _is_header(r.value)), None)
    if at is None:
        base: dict[str, Any] = {}
        old = next((i for i, r in enumerate(recs)
                    if isinstance(r.value, dict) and r.value.get("type") == "session"), None)
        where: dict[str, Any] = {}
        if old is not None:
            rec = recs.pop(old)
            base = rec.value
            where = {"line": rec.line, "offset": rec.offset}
            rs.quarantine(rec.line, rec.offset, rec.raw, "a session header without a string id: omp refuses "
                          "the file; a header with the same fields and a valid id replaces it")
        header = _rebuild_header(base, path, recs)
        recs.insert(0, Rec(header, b"", 0, 0, dirty=True))
        source = "the file name" if _FILE_NAME.match(os.path.basename(path)) else "the entries"
        rs.fixes.append(Fix("header-rebuilt", f"no valid session header (omp refuses such a file); one was "
                            f"rebuilt with id {header['id']} from {source}", entry_id=None, **where))
    elif at > 0:
        rec = recs.pop(at)
        recs.insert(0, rec)
        rs.fixes.append(Fix("header-moved", "the session header was not the first record (omp refuses such a "
                            "file); moved to the front", line=rec.line, offset=rec.offset))
    head = recs[0]
    cwd = head.value.get("cwd", codec.UNDEFINED)
    if cwd is not codec.UNDEFINED and not isinstance(cwd, str):
        if head.raw:
            rs.quarantine(head.line, head.offset, head.raw, "the header's cwd is not a string (omp's open() "
                          "throws); the header is kept without it")
        del head.own()["cwd"]
        head.dirty = True
        rs.fixes.append(Fix("header-cwd", f"the header's cwd {codec.stringify(cwd)} is not a string (omp cannot "
                            "open the file); removed, original header quarantined", line=head.line or None,
                            offset=head.offset if head.raw else None))


def _rebuild_header(base: dict[str, Any], path: str, recs: list[Rec]) -> dict[str, Any]:
    m = _FILE_NAME.match(os.path.basename(path))
    stamps = [r.value.get("timestamp") for r in recs if isinstance(r.value, dict)]
    first_stamp = next((s for s in stamps if isinstance(s, str) and s), None)
    if m is not None:
        session_id = m.group(5).lower()
        timestamp = f"{m.group(1)}:{m.group(2)}:{m.group(3)}.{m.group(4)}"
    else:
        session_id = new_session_id()
        given = base.get("timestamp")
        timestamp = given if isinstance(given, str) else first_stamp or iso_timestamp()
    header: dict[str, Any] = {"type": "session"}
    if "version" in base:
        header["version"] = base["version"]
    elif any(isinstance(r.value, dict) and isinstance(r.value.get("id"), str) for r in recs):
        header["version"] = 3  # entries carry ids and parents: a v3 file, not one for v1 migration
    header["id"] = session_id
    header["timestamp"] = timestamp
    for key, value in base.items():
        if key not in header and key != "type" and not (key == "cwd" and not isinstance(value, str)):
            header[key] = value
    return header


def _fix_slot(j: Journal, near_miss: Rec | None, rs: Records) -> bytes:
    """The title slot (S1.2): kept when valid and 256 bytes; rebuilt from what it holds otherwise."""
    start = 3 if j.bom else 0
    if j.slot is not None:
        end = j.source.find(b"\n", start) + 1
        line = j.read(start, end)
        try:
            pad = codec.loads(line.decode("utf-8")).get("pad", "")
        except (ValueError, AttributeError):
            pad = None
        crlf = line.endswith(b"\r\n")
        if len(line) == TITLE_SLOT_BYTES and isinstance(pad, str) and not pad.strip(" ") and not crlf:
            return line
        slot = j.slot
        return _rebuilt_slot(slot.title, slot.source, slot.updated_at, line, start, rs,
                             f"the title slot is {len(line)} bytes, not 256 (omp's in-place title update would "
                             "overwrite the header)" if len(line) != TITLE_SLOT_BYTES else
                             "the title slot ends in CR LF" if crlf else
                             "the title slot's pad is not all spaces")
    if near_miss is None:
        return b""
    v = near_miss.value
    header_ts = rs.recs[0].value.get("timestamp")
    title = v.get("title") if isinstance(v.get("title"), str) else ""
    source = v.get("source") if v.get("source") in ("auto", "user") else None
    updated = v.get("updatedAt") if isinstance(v.get("updatedAt"), str) else (
        header_ts if isinstance(header_ts, str) else iso_timestamp())
    rs.quarantine(near_miss.line, near_miss.offset, near_miss.raw, "a title record that is not a valid title slot "
                  "(omp reads it as the first record and refuses the file)")
    return _rebuilt_slot(title, source, updated, None, near_miss.offset, rs,
                         "the first line is a title record with invalid fields (omp refuses the file)")


def _rebuilt_slot(title: str, source: str | None, updated: str, original: bytes | None, offset: int,
                  rs: Records, why: str) -> bytes:
    try:
        slot = build_title_slot(title, source, updated)
    except ValueError:
        if original is not None:
            rs.quarantine(1, offset, original.rstrip(b"\n"), "a title slot that cannot be rebuilt")
        rs.fixes.append(Fix("title-slot", f"{why}; it cannot be rebuilt (its updatedAt is too long), so it was "
                            "removed and quarantined", line=1, offset=offset))
        return b""
    kept = codec.loads(slot.decode("utf-8"))["title"]
    if original is not None and kept != title:
        rs.quarantine(1, offset, original.rstrip(b"\n"), "the original title slot (its title did not fit)")
    rs.fixes.append(Fix("title-slot", f"{why}; rebuilt at 256 bytes" +
                        ("" if kept == title else " (title shortened to fit; original quarantined)"),
                        line=1, offset=offset))
    return slot


def _check_output(plan: RepairPlan, output: Journal, blob_store: Any) -> None:
    """Read the repaired bytes back (``output``, scanned): see :func:`_output_fixes`."""
    plan.fixes.extend(_output_fixes(plan.path, output, blob_store))


def _output_fixes(path: str, output: Journal, blob_store: Any) -> list[Fix]:
    """What reading the repaired bytes back (``output``, scanned) finds: blob references omp
    cannot resolve are reported (left as they are: the blob may come back), and anything still
    wrong is reported rather than hidden."""
    from omp_session.model.session import Session

    found: list[Fix] = []
    with Session(output, path, blob_store) as s:
        for d in s.diagnostics:
            if d.code in ("blob-missing", "blob-malformed-ref"):
                found.append(Fix(d.code, d.message + " (left as is; the line is in the repaired file)",
                                 line=d.line, changes=False))
            elif d.severity is Severity.ERROR:
                found.append(Fix("unrepaired", f"still wrong after repair: {d.message} [{d.code}]",
                                 line=d.line, changes=False))
    return found


# ----- applying ---------------------------------------------------------------------------------


def apply_repair(plan: RepairPlan, *, out: str | os.PathLike[str] | None = None,
                 in_place: bool = False, force: bool = False) -> RepairResult:
    """Write the repaired file: a copy at ``out`` (an existing file there is refused unless
    ``force``), or over the original (``in_place``: atomic replace, the original kept as
    ``PATH.bak``). Quarantined records go to ``<target>.quarantine`` (appended to, never
    overwritten).

    In place, refuses with :class:`RepairConflictError` when the file changed since it was
    planned (size, mtime and SHA-256 compared), before anything is written.
    """
    if (out is None) == (not in_place):
        raise ValueError("give exactly one of out= or in_place=True")
    if not plan.sha256 or not plan.output_sha256:
        raise RepairError(f"{plan.path}: the plan was made without the file's digest (digest=False), so "
                          "nothing could tell whether the file changed since; plan again to write")
    if in_place:
        return _apply_in_place(plan)
    assert out is not None
    target = os.fspath(out)
    where = _check_target(plan.path, target, force)
    if where.kind == "stream" and plan.quarantined:
        # the quarantine goes beside the output, and a device has no "beside"
        raise RepairError(f"{target}: {len(plan.quarantined)} record(s) need a quarantine file beside the "
                          "output; write the repair to a file")
    quarantine = _write_quarantine(plan, target)
    # a copy of a session is never more readable than the session itself
    # (the pieces are read back and hashed, without forking: their writes overlap that)
    write_new_file(target, _as_planned(plan), force=force, error=RepairError, mode=copy_mode(plan.path),
                   overlap=True)
    return RepairResult(target, None, quarantine)


def _check_target(path: str, target: str, force: bool) -> Output:
    if os.path.exists(target) and os.path.samefile(target, path):
        raise RepairError(f"{target}: is the file being repaired; use in_place=True (--in-place) to replace it")
    if os.path.isdir(target):
        raise RepairError(f"{target}: is a directory")
    return check_output(target, force=force, error=RepairError)


def repair_to(path: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool = False,
              blob_store: Any = None) -> tuple[RepairPlan, RepairResult]:
    """:func:`plan_repair` then :func:`apply_repair` to ``out``, the common case done once: the
    file's bytes, read and hashed while it is planned, are written beside ``out`` as they are
    hashed, and when the file is its own repair that copy becomes ``out`` (checked as
    :func:`apply_repair` checks its copy: the planned size and digest); otherwise it is dropped
    and the repair written as :func:`apply_repair` writes it. Refusals of ``out`` come before
    the file is read."""
    name, target = os.fspath(path), os.fspath(out)
    if os.path.exists(name):
        _check_target(name, target, force)
    # (a copy of a session is never more readable than the session itself)
    copy = pending_output(target, force=force, error=RepairError, mode=copy_mode(name)) if os.path.isfile(name) else None
    try:
        plan = _plan_file(name, blob_store, True, copy)
        # (the copy holds what was hashed: of the planned size and digest, it is the planned output)
        if (copy is not None and not copy.failed and not plan.quarantined and copy.written == plan.output_size
                and plan.output_sha256 == plan.sha256):
            placing, copy = copy, None  # (placed or dropped by place itself, not again below)
            placing.place()
            return plan, RepairResult(target, None, None)
    finally:
        if copy is not None:
            copy.discard()
    return plan, apply_repair(plan, out=target, force=force)


def _as_planned(plan: RepairPlan) -> Iterator[bytes]:
    """The plan's pieces, checked against the bytes it planned (the file it reads from may have
    changed since): a difference raises before the last piece, so nothing is put in place."""
    yield from _checked(plan.pieces(), plan.output_size, plan.output_sha256, plan.path)


def _checked(pieces: Iterable[bytes], size: int, digest: str, path: str) -> Iterator[bytes]:
    sha = hashlib.sha256()
    n = 0
    for piece in pieces:
        sha.update(piece)
        n += len(piece)
        yield piece
    if n != size or sha.hexdigest() != digest:
        raise RepairConflictError(f"{path}: changed since the repair was planned; nothing was written "
                                  "(plan again)")


def _apply_in_place(plan: RepairPlan) -> RepairResult:
    path = plan.path
    _check_unchanged(plan)
    if plan.is_empty:
        return RepairResult(path, None, None, written=False)
    backup = path + ".bak"
    n = 0
    while os.path.lexists(backup):  # an earlier backup is somebody's data: never overwrite it
        n += 1
        backup = f"{path}.bak.{n}"
    write_new_file(backup, _checked(_file_chunks(path), plan.size, plan.sha256, path), force=False,
                   error=RepairError, mode=copy_mode(path))  # a link: never over a file
    quarantine = _write_quarantine(plan, path)
    try:
        _replace(path, _as_planned(plan), plan.size)
    except WriteConflictError as e:
        raise RepairConflictError(f"{path}: changed while being repaired; nothing was replaced ({e})") from None
    return RepairResult(path, backup, quarantine)


def _check_unchanged(plan: RepairPlan) -> None:
    digest = ""
    try:
        with open(plan.path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_size == plan.size and st.st_mtime_ns == plan.mtime_ns:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as e:
        raise RepairConflictError(f"{plan.path}: cannot be read again ({e.strerror}); nothing was written") from None
    if st.st_size != plan.size or st.st_mtime_ns != plan.mtime_ns or digest != plan.sha256:
        raise RepairConflictError(f"{plan.path}: changed since the repair was planned; nothing was written "
                                  "(plan again)")


def _replace(path: str, pieces: Iterable[bytes], expected_size: int) -> None:
    """FileStorage.replace, written piece by piece: atomically replace ``path`` if its size is
    still ``expected_size`` (omp's lock held for the check and the rename)."""
    directory, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
    try:
        # the repaired session is as readable as it was, never more (a 0600 session stays 0600)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, copy_mode(path))
        with write_behind(fd) as f:
            for piece in pieces:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        with publish_lock(path):
            found = os.stat(path).st_size if os.path.exists(path) else None
            if found != expected_size:
                raise WriteConflictError(conflict_message(path, expected_size, found))
            os.replace(tmp, path)
    except (WriteConflictError, RepairConflictError):
        raise
    except OSError as e:
        raise PersistenceError(path, "rewriting the session file", e) from e
    finally:
        _unlink(tmp)


def _write_quarantine(plan: RepairPlan, target: str) -> str | None:
    if not plan.quarantined:
        return None
    path = quarantine_path(target)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, copy_mode(plan.path))
    try:
        data = plan.quarantine_bytes()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    return path
