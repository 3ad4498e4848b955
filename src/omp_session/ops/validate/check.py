"""Validate a session file: every check of spec S14 (V1-V20), the damage classes of issue 4, and
what makes omp 18.2.3 throw, hang or silently stop saving on the file (S1.4.6-S1.4.9, S1.6.1).

``validate(path)`` reports and never writes. It streams: the reader keeps byte offsets and
envelopes, one pass decodes entries a block at a time (``validate_entries``), and the tree checks
work on the reader's columns (``validate_tree``). Each code's severity comes from the registry,
``omp_session.diagnostics.CODES`` (docs/diagnostics.md shows it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from omp_session.catalog.not_a_session import (
    SNIFF,
    is_quarantine,
    not_a_session_message,
    why_not_a_session,
    why_not_by_fd,
    why_not_by_start,
)
from omp_session.catalog.quarantine import QUARANTINE_SUFFIX
from omp_session.diagnostics import Diagnostic, Severity
from omp_session.errors import FormatError
from omp_session.format.blobs import BLOB_PREFIX, BlobStore, parse_blob_ref
from omp_session.format.migrate import needs_migration
from omp_session.format.reader import STREAMING_THRESHOLD, Journal, decode_record, scan_file
from omp_session.format.title import TITLE_SLOT_BYTES
from omp_session.format.utf8 import first_invalid_utf8
from omp_session.model.session import Session, scan_archived

from .entries import scan_entries
from .newer import newer_features
from .report import Report, show
from .tree import check_tree

__all__ = ["validate"]

_FILENAME_ID = re.compile(r"\A\d{4}-\d\d-\d\dT[\d-]+Z_([0-9A-Za-z-]+)\.jsonl\Z")  # omp's own names (S9)
_SESSION_CODES_REPLACED = {"duplicate-id", "malformed-record", "blob-missing", "blob-malformed-ref", "invalid-utf8"}


def validate(path_or_session: str | os.PathLike[str] | Session, *, blobs_dir: str | os.PathLike[str] | None = None
             ) -> list[Diagnostic]:
    """Every problem found in one session file, in file order within each kind of check.

    ``blobs_dir`` is where blob references are looked up (default: omp's blob store). A file that
    is not a session at all gives one ``not-a-session`` error. Raises OSError only when the file
    cannot be read (missing, a directory, no permission).
    """
    if isinstance(path_or_session, Session):
        session = path_or_session
        path = session.path
    else:
        path = os.path.expanduser(os.fspath(path_or_session))
        if path.endswith(".jsonl.gz"):  # archived by omp's gc: checked as the plain file it was
            try:
                journal = scan_archived(path)
            except FormatError as e:
                return [Diagnostic.of("not-a-session", not_a_session_message(str(e).removeprefix(path + ": ")),
                                      path=path)]
            head, size = journal.read(0, SNIFF), journal.size
            _decided, reason = why_not_by_start(journal.read, size)
        else:
            journal = None
            with open(path, "rb") as f:
                fd = f.fileno()
                size = os.fstat(fd).st_size
                head = f.read(SNIFF)
                # the rule every command opens by (past a megabyte of padding, as omp reads)
                _decided, reason = why_not_by_fd(fd, size)
        if is_quarantine(head):
            return [_quarantine_finding(path)]
        if reason:  # decided by the first megabyte: the file is not scanned
            return [Diagnostic.of("not-a-session", not_a_session_message(reason), path=path)]
        # no blob store: refs are checked here instead
        session = Session(journal if journal is not None else scan_file(path), path, None)
    try:
        return _validate(session, path, blobs_dir)
    finally:
        if not isinstance(path_or_session, Session):
            session.close()


def _quarantine_finding(path: str) -> Diagnostic:
    name = os.path.basename(path)
    of = name.removesuffix(".jsonl").removesuffix(QUARANTINE_SUFFIX)
    return Diagnostic.of("repair-quarantine", f"not a session: the quarantine omp-session repair wrote for {of} "
                         "(records taken out of it, one JSON object each; see docs/repair.md); not checked",
                         path=path)


def _validate(s: Session, path: str | None, blobs_dir: str | os.PathLike[str] | None) -> list[Diagnostic]:
    j = s.journal
    report = Report(path, j)
    reason = why_not_a_session(s) if path is not None else None  # the rule every command refuses with
    if reason is not None:
        return [Diagnostic.of("not-a-session", not_a_session_message(reason), path=path)]
    for d in s.diagnostics:
        if d.code not in _SESSION_CODES_REPLACED:
            report.keep(d)
    _spans(j, report)
    _title_slot(j, report)
    _header(s, path, report)
    _encoding(s, report)
    got = scan_entries(j, report, None if s.ids_made_up else s.ids)  # a v1 file's ids are random
    _utf8(s, report, got.bad_utf8)
    for k in got.headers_after_first:
        report.add("header-not-first" if s.header is None else "extra-header",
                   "a session header that is not the first record: omp reads it as an ordinary entry"
                   if s.header is not None else "the session header is here, not first: omp cannot open "
                   "the file", offset=j.starts[k])
    if got.crlf:
        report.add("crlf", f"{len(got.crlf)} line(s) end in CRLF: omp reads them, but appends "
                   "LF lines, so the file mixes line endings", offset=got.crlf[0])
    if s.header is not None:
        check_tree(s, report, got)
    _blobs(s, report, blobs_dir)
    newer_features(j, s.raw_header, report, got.unclean)
    return report.result()


# ----------------------------------------------------------------- physical layout (V1, V13)


def _spans(j: Journal, report: Report) -> None:
    """Classify every span omp skips (S1.4.3), so the report says what happened there."""
    for span in j.malformed:
        raw = j.read(span.start, min(span.end, span.start + 4096))
        at_end = span.end >= j.size and not j.final_newline
        i = j.record_at(span.start - 1) if span.start else None
        if raw.strip(b"\x00 \t\r\n") == b"" and b"\x00" in raw:
            report.add("nul-fill", f"{span.end - span.start} bytes of NUL padding (a block "
                       "preallocated before a crash): omp skips it and drops it on its next rewrite",
                       offset=span.start)
        elif i is not None and j.ends[i] == span.start:
            glued = raw.lstrip(b" \t").startswith(b"{")
            report.add("glued-records" if glued else "trailing-garbage",
                       "a second record glued onto the end of this line (a missing LF, or two writers): "
                       "omp keeps the first and loses this one" if glued else
                       "text after the record on the same line: omp keeps the record and drops the rest",
                       offset=span.start)
        elif at_end:
            lines = j.read(span.start, span.end).count(b"\n")
            cut = _cut_utf8(j.read(max(span.start, span.end - 4), span.end))
            report.add("truncated-record",
                       "the last record is cut off (a crash mid-write)"
                       + (" inside a multi-byte UTF-8 character" if cut else "")
                       + (f"; it swallows the {lines} complete line(s) after it" if lines else "")
                       + ": omp skips it", offset=span.start)
        else:
            report.add("malformed-record", "not a JSON value: omp skips this record and "
                       "drops it on its next rewrite", offset=span.start)


def _cut_utf8(tail: bytes) -> bool:
    """Whether ``tail`` ends inside a multi-byte UTF-8 sequence."""
    for back in range(1, min(4, len(tail)) + 1):
        b = tail[-back]
        if b & 0xC0 == 0x80:
            continue
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return back < need
        return False
    return False


# ----------------------------------------------------------------- title slot and header (V2-V4, V17, V18, V20)


def _title_slot(j: Journal, report: Report) -> None:
    start = 3 if j.bom else 0
    line = j.read(start, start + 4096)
    lf = line.find(b"\n")
    if lf >= 0:
        line = line[:lf]
    if j.slot is not None:
        line = j.read(start, j.body_start - 1)  # the whole slot: the reader parsed it in full already
        width = len(line) + 1
        if width < TITLE_SLOT_BYTES:
            report.add("title-slot-short", f"the title slot is {width} bytes, not 256: omp's "
                       "next title update overwrites 256 bytes in place and destroys the header", offset=start)
        elif width > TITLE_SLOT_BYTES:
            report.add("title-slot-long", f"the title slot is {width} bytes, not 256: omp's "
                       "next title update leaves its tail as a malformed line", offset=start)
        pad = _first_value(line).get("pad", "")
        if isinstance(pad, str) and pad.strip(" "):
            report.add("title-slot-pad", "the title slot's pad holds more than spaces",
                       offset=start)
        return
    value = _first_value(line)
    if value.get("type") == "title":
        report.add("title-slot-invalid", "the first line is a title record omp does not "
                   f"accept ({_slot_problem(value)}): it becomes the first record and omp cannot open the file",
                   offset=start)


def _first_value(line: bytes) -> dict[str, Any]:
    try:
        value = decode_record(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _slot_problem(value: dict[str, Any]) -> str:
    v = value.get("v")
    if isinstance(v, bool) or v != 1:
        return f"v is {show(v)}, not 1"
    for key in ("title", "updatedAt", "pad"):
        if not isinstance(value.get(key), str):
            return f"{key} is not a string"
    return f"source is {show(value.get('source'))}, not \"auto\" or \"user\""


def _header(s: Session, path: str | None, report: Report) -> None:
    header = s.header
    if header is None:
        return
    at = s.journal.starts[0]
    on_disk = _first_value(s.journal.raw(0))  # migration changed the header in memory
    version = on_disk.get("version")
    if "version" not in on_disk or version is None or (
            isinstance(version, int | float) and not isinstance(version, bool) and version < 2):
        report.add("version-legacy", f"a {'version ' + repr(version) if 'version' in on_disk else 'no-version'} (v1) session: omp "
                   "regenerates every id and chains the entries in file order, flattening branches",
                   severity=Severity.WARNING, offset=at)
    elif isinstance(version, bool) or not isinstance(version, int | float):
        report.add("version-invalid", f"version is {show(version)}, not a number", offset=at)
    elif isinstance(version, float) and not version.is_integer():  # int() of 1e999 (inf) overflows
        report.add("version-invalid", f"version {version!r} is not an integer", offset=at)
    elif version == 2:
        report.add("version-legacy", "a version 2 session: omp migrates it to 3 on its next write",
                   severity=Severity.INFO, offset=at)
    elif version > 3:
        report.add("version-future", f"version {version!r} is newer than 3: omp 18.2.3 reads "
                   "it as version 3", offset=at)
    if "cwd" not in header:
        report.add("header-cwd-missing", "the header has no cwd", offset=at)
    slot = s.title_slot
    raw_title = on_disk.get("title")
    if slot is not None and isinstance(raw_title, str) and raw_title != slot.title:
        report.add("title-mismatch", f"the header title {raw_title[:60]!r} differs from the "
                   f"title slot's {slot.title[:60]!r}: omp shows the slot's" if slot.title else
                   "the title slot is empty while the header has a title: omp drops the header's title",
                   offset=at)
    parent = header.get("parentSession")
    if parent is not None:
        report.add("parent-session", f"forked or branched from {show(parent)} (a path or a "
                   "session id; it may no longer exist)", offset=at)
    m = _FILENAME_ID.search(Path(path).name) if path else None
    if m and isinstance(header.get("id"), str) and m.group(1) != header["id"]:
        report.add("filename-id-mismatch", f"the file name says session {m.group(1)!r}, the "
                   f"header {header['id']!r}", offset=at)
    j = s.journal
    migrates = needs_migration(on_disk)
    if j.size < STREAMING_THRESHOLD and (j.bom or j.invalid_utf8) and (j.malformed or migrates):
        # located at its cause: the byte order mark, else the first invalid byte
        offset, cause = (0, "a byte order mark") if j.bom else (_first_invalid_utf8(j), "invalid UTF-8 here")
        n = len(j.malformed)
        rewrite = f"{n} malformed record{'s' if n != 1 else ''}" if n else "a migration"
        report.add("omp-stops-saving", f"omp measures this file by its decoded text ({cause}) and must "
                   f"rewrite it ({rewrite}): the rewrite fails and nothing added after resuming reaches "
                   "the disk", offset=offset)


def _first_invalid_utf8(j: Journal) -> int:
    """Offset of the first byte that is not UTF-8 (the file is below the streaming size)."""
    return first_invalid_utf8(j.read(0, j.size)) or 0


def _encoding(s: Session, report: Report) -> None:
    """Give invalid UTF-8 a location; large files (streamed by the reader) are checked here only."""
    j = s.journal
    for i in j.values:
        if i > 0 and b"\n" in j.raw(i).rstrip():
            report.add("multiline-record", "a record spread over several lines: omp reads it "
                       "as one", offset=j.starts[i])


def _utf8(s: Session, report: Report, found: int | None) -> None:
    """V14 with a location: the streaming pass found the first bad byte inside records; the
    reader knows about the whole file (below 8 MiB), which also covers skipped spans."""
    j = s.journal
    if found is None:
        for span in j.malformed:
            bad = first_invalid_utf8(j.read(span.start, span.end))
            if bad is not None:
                found = span.start + bad
                break
    if found is not None or j.invalid_utf8:
        report.add("invalid-utf8", "invalid UTF-8: omp reads U+FFFD in its place"
                   + (" and can never rewrite the file" if j.size < STREAMING_THRESHOLD else ""), offset=found)


# ----------------------------------------------------------------- blobs (V9)


def _blobs(s: Session, report: Report, blobs_dir: str | os.PathLike[str] | None) -> None:
    j = s.journal
    if not j.blob_offsets:
        return
    if blobs_dir is None:
        from omp_session.paths import blobs_dir as default_blobs_dir

        blobs_dir = default_blobs_dir()
    store = BlobStore(blobs_dir)
    checked: dict[str, str | None] = {}
    for offset in j.blob_offsets:
        raw = j.read(offset, offset + len(BLOB_PREFIX) + 65)
        ref = raw[: len(BLOB_PREFIX) + 64].decode("ascii", "replace")
        closed = raw[len(BLOB_PREFIX) + 64: len(BLOB_PREFIX) + 65] == b'"'
        sha = parse_blob_ref(ref) if closed else None
        if sha is None:
            report.add("blob-malformed-ref", "a blob:sha256: string that is not "
                       "blob:sha256:<64 lowercase hex>: omp never resolves it", offset=offset)
            continue
        if sha not in checked:
            checked[sha] = _blob_problem(store, sha)
        problem = checked[sha]
        if problem:
            report.add("blob-missing" if problem == "missing" else "blob-hash-mismatch",
                       f"{ref} is not in the blob store {os.fspath(blobs_dir)}: the image stays a reference"
                       if problem == "missing" else f"the blob {sha} does not hash to its name", offset=offset)


def _blob_problem(store: BlobStore, sha: str) -> str | None:
    path = store.path(sha)
    if not path.is_file():
        return "missing"
    import hashlib  # OpenSSL behind it: only when a blob is checked, not on show's start-up

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return None if digest.hexdigest() == sha else "mismatch"
