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

import orjson

from omp_session.catalog.quarantine import QUARANTINE_SUFFIX
from omp_session.diagnostics import Diagnostic, Severity
from omp_session.errors import FormatError
from omp_session.format.blobs import BLOB_PREFIX, BlobStore, parse_blob_ref
from omp_session.format.migrate import needs_migration
from omp_session.format.reader import STREAMING_THRESHOLD, Journal, decode_record, scan_file
from omp_session.format.title import TITLE_SLOT_BYTES
from omp_session.model.session import Session, scan_archived

from .entries import scan_entries
from .newer import newer_features
from .report import Report, show
from .tree import check_tree

__all__ = ["validate"]

_SNIFF = 1024 * 1024
_FILENAME_ID = re.compile(r"\A\d{4}-\d\d-\d\dT[\d-]+Z_([0-9A-Za-z-]+)\.jsonl\Z")  # omp's own names (S9)
# bytes that never occur in JSON text outside a broken string: many of them mean binary data
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13)) + b"\x7f"
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
                return [Diagnostic.of("not-a-session", f"not an omp session file: {str(e).removeprefix(path + ': ')}",
                                      path=path)]
            head, size = journal.read(0, _SNIFF), journal.size
        else:
            journal = None
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                head = f.read(_SNIFF)
        if _is_quarantine(head):
            return [_quarantine_finding(path)]
        reason = _not_a_session(head, size)
        if reason:
            return [Diagnostic.of("not-a-session", f"not an omp session file: {reason}", path=path)]
        # no blob store: refs are checked here instead
        session = Session(journal if journal is not None else scan_file(path), path, None)
    try:
        return _validate(session, path, blobs_dir)
    finally:
        if not isinstance(path_or_session, Session):
            session.close()


_QUARANTINE_KEYS = frozenset({"line", "offset", "reason", "text", "base64"})


def _is_quarantine(head: bytes) -> bool:
    """Whether the file starts like repair's quarantine (docs/repair.md): its first line an object of
    ``line``, ``offset``, ``reason`` and ``text`` or ``base64``; no session record looks so."""
    first = head.lstrip(b" \t\r\n").split(b"\n", 1)[0]
    try:
        value = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and "reason" in value and "line" in value and value.keys() <= _QUARANTINE_KEYS


def _quarantine_finding(path: str) -> Diagnostic:
    name = os.path.basename(path)
    of = name.removesuffix(".jsonl").removesuffix(QUARANTINE_SUFFIX)
    return Diagnostic.of("repair-quarantine", f"not a session: the quarantine omp-session repair wrote for {of} "
                         "(records taken out of it, one JSON object each; see docs/repair.md); not checked",
                         path=path)


def _not_a_session(head: bytes, size: int) -> str | None:
    if not size:
        return "the file is empty (omp would start a new session in it)"
    text = head.replace(b"\x00", b"")
    if not text.strip():
        return "the file holds only whitespace or NUL bytes"
    if sum(text.count(bytes([c])) for c in _CONTROL) * 100 > len(text):
        return "binary data"
    if b"{" not in text:
        return "no JSON object in its first megabyte"
    return None


def _validate(s: Session, path: str | None, blobs_dir: str | os.PathLike[str] | None) -> list[Diagnostic]:
    j = s.journal
    report = Report(path, j)
    if path is not None and s.header is None and not _looks_like_session(s):
        return [Diagnostic.of("not-a-session", "not an omp session file: no record is an object with a "
                              "string type", path=path)]
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
    newer_features(j, s.raw_header, report)
    return report.result()


def _looks_like_session(s: Session) -> bool:
    """Whether a file without a valid header still looks like a damaged session (then the report
    says what is wrong with it) rather than some other file."""
    if s.title_slot is not None or b'"type"' in s.journal.read(0, _SNIFF):
        return True
    return isinstance(s.raw_header, dict) or any(isinstance(t, str) for t in s.types[:1000])


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
    try:
        j.read(0, j.size).decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start
    return 0


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
            try:
                j.read(span.start, span.end).decode("utf-8")
            except UnicodeDecodeError as e:
                found = span.start + e.start
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
