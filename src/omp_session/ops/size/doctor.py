"""Where a session's bytes go, and what would shrink it: ``omp-session size`` (docs/size.md).

Every byte of the file is accounted to exactly one record: an entry's share is its line (record
bytes plus its end of line); the title slot, the header, unreadable records and blank space are
overhead. Entries are then split by type, by message role and by tool name (tool results), and
cross-cut by what usually makes sessions big: inline images, long tool outputs, thinking blocks
and branches that are no longer on the path the session resumes on.

The savings are not estimates: each one is the exact size of the file the remedy would write,
computed by the remedy's own code in a dry run (:func:`omp_session.externalize.externalize_records`,
:func:`omp_session.prune.plan_prune`) — except the archive figure, which is zlib's level-6 gzip
size of the file, what a ``.jsonl.gz`` archive holds, estimated from samples past 16 MiB.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from omp_session.errors import EditError, FormatError, SessionError
from omp_session.format.background import Background
from omp_session.format.blobs import BLOB_PREFIX
from omp_session.format.split import Forked, forked, later_part
from omp_session.js import codec
from omp_session.paths import sessions_dir

from .externalize import ExternalizeResult, externalize_record
from .marks import IMAGE, record_marks
from .prune import open_tree_session, plan_prune

__all__ = [
    "LONG_TOOL_OUTPUT_BYTES",
    "Bucket",
    "SizeReport",
    "Suggestion",
    "analyze_size",
    "biggest_sessions",
]

# A tool result whose line is longer than this counts as a long tool output (about 4,000 tokens).
LONG_TOOL_OUTPUT_BYTES = 16 * 1024
_TOP = 10
_CHUNK = 1 << 20


@dataclass(slots=True)
class Bucket:
    count: int = 0
    bytes: int = 0

    def add(self, n: int, count: int = 1) -> None:
        self.count += count
        self.bytes += n

    def to_json(self) -> dict[str, int]:
        return {"count": self.count, "bytes": self.bytes}


@dataclass(frozen=True, slots=True)
class Suggestion:
    action: str  # "externalize", "prune", "archive"
    command: str
    saves: int
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "command": self.command, "saves": self.saves, "note": self.note}


@dataclass(slots=True)
class SizeReport:
    path: str
    bytes: int
    entries: int = 0
    header_bytes: int = 0  # BOM, title slot and header line
    other_bytes: int = 0  # unreadable records, blank lines, whitespace
    by_type: dict[str, Bucket] = field(default_factory=dict)
    by_role: dict[str, Bucket] = field(default_factory=dict)
    by_tool: dict[str, Bucket] = field(default_factory=dict)
    inline_images: Bucket = field(default_factory=Bucket)  # base64 characters held inline
    image_refs: int = 0
    thinking: Bucket = field(default_factory=Bucket)  # serialized thinking blocks
    long_tool_outputs: Bucket = field(default_factory=Bucket)
    longest_tool_outputs: list[tuple[Any, str, int]] = field(default_factory=list)  # (id, tool, bytes)
    abandoned: Bucket = field(default_factory=Bucket)  # entries off the current path
    externalize: ExternalizeResult | None = None
    prune_saves: int = 0
    archive_bytes: int | None = None
    archive_estimated: bool = False  # from samples: a file over EXACT_ARCHIVE_BYTES
    suggestions: list[Suggestion] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def table(d: dict[str, Bucket]) -> list[dict[str, Any]]:
            return [{"name": k, **b.to_json()} for k, b in _ranked(d)]

        return {
            "path": self.path, "bytes": self.bytes, "entries": self.entries,
            "header_bytes": self.header_bytes, "other_bytes": self.other_bytes,
            "by_type": table(self.by_type), "by_role": table(self.by_role), "by_tool": table(self.by_tool),
            "inline_images": self.inline_images.to_json(), "image_refs": self.image_refs,
            "thinking": self.thinking.to_json(),
            "long_tool_outputs": {"threshold": LONG_TOOL_OUTPUT_BYTES, **self.long_tool_outputs.to_json(),
                                  "longest": [{"id": i, "tool": t, "bytes": b}
                                              for i, t, b in self.longest_tool_outputs]},
            "abandoned": self.abandoned.to_json(),
            "externalize": None if self.externalize is None else self.externalize.to_json(),
            "prune_saves": self.prune_saves, "archive_bytes": self.archive_bytes,
            "archive_estimated": self.archive_estimated,
            "suggestions": [s.to_json() for s in self.suggestions],
        }


def _ranked(d: dict[str, Bucket]) -> list[tuple[str, Bucket]]:
    return sorted(d.items(), key=lambda kv: (-kv[1].bytes, kv[0]))


def _decode(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return codec.loads(raw.decode("utf-8", "replace"))


def _name(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _count_images(record: Any, report: SizeReport) -> None:
    """Inline images and refs anywhere in a record (image blocks, ``images`` lists, data URLs);
    a stack, not recursion: a record may be nested any depth (issue 16)."""
    stack = [record]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
            continue
        if not isinstance(value, dict):
            continue
        data = value.get("data")
        mime = value.get("mimeType")  # (not str() of it: the repr of a value nested deep raises)
        if isinstance(data, str) and (value.get("type") == "image"
                                      or (isinstance(mime, str) and mime.lower().startswith("image/"))):
            if data.startswith(BLOB_PREFIX):
                report.image_refs += 1
            else:
                report.inline_images.add(len(data))
        url = value.get("image_url")
        if isinstance(url, str):
            if url.startswith(BLOB_PREFIX):
                report.image_refs += 1
            elif url.startswith("data:image/"):
                report.inline_images.add(len(url))
        stack.extend(v for k, v in value.items() if k != "data" and isinstance(v, (dict, list)))


def _thinking(message: dict[str, Any], report: SizeReport) -> None:
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, dict) and block.get("type") in ("thinking", "redactedThinking"):
            text = codec.stringify(block)
            report.thinking.add(len(text.encode("utf-8")) if text else 0)


# Past this size the gzip figure is estimated from evenly spread samples: deflating 100 MB takes
# seconds, ten times the rest of the analysis, for a figure that only says whether gzip is worth it.
EXACT_ARCHIVE_BYTES = 16 * 1024 * 1024
_SAMPLES = 128
_SAMPLE = 64 * 1024
_WINDOW = 32 * 1024  # deflate's window: each sample is primed with the bytes before it
_GZIP_FRAME = 18  # gzip's header (no name) and trailer


def _deflated_samples(fd: int, size: int, which: range, *stops: threading.Event | None) -> int | None:
    """The deflated size of samples ``which`` of :func:`_gzip_size`'s estimate, read from ``fd``
    with ``pread`` (two threads share the one open file: the same bytes, no shared offset);
    None once one of ``stops`` is set."""
    n = 0
    for i in which:
        if any(stop is not None and stop.is_set() for stop in stops):
            return None
        at = (size - _SAMPLE) * i // (_SAMPLES - 1)
        before = min(at, _WINDOW)
        primer, sample = os.pread(fd, before, at - before), os.pread(fd, _SAMPLE, at)
        z = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=primer) if primer else \
            zlib.compressobj(6, zlib.DEFLATED, -15)
        n += len(z.compress(sample)) + len(z.flush())
    return n


def _gzip_size(path: str, stop: threading.Event | None = None) -> tuple[int, bool]:
    """(zlib's level-6 gzip size of the file, whether it was estimated). A file over
    :data:`EXACT_ARCHIVE_BYTES` is estimated: 128 pieces of 64 KiB spread evenly, each deflated
    after the 32 KiB before it as deflate's window would hold them, scaled to the whole file
    (on the generated 100 MB session: 0.3 % under the exact figure, in a fourteenth of the time)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > EXACT_ARCHIVE_BYTES:
            # half the samples in a second thread (zlib lets go of the interpreter lock): the
            # estimate was most of `size` on a file of a few dozen megabytes
            half, fd = _SAMPLES // 2, f.fileno()
            other = Background(lambda own: _deflated_samples(fd, size, range(half, _SAMPLES), stop, own),
                               "omp-session-gzip-size-2")
            try:
                mine = _deflated_samples(fd, size, range(half), stop)
            except BaseException:
                other.cancel()
                raise
            theirs = other.result()
            if mine is None or theirs is None:
                return 0, True
            return round((mine + theirs) * size / (_SAMPLES * _SAMPLE)) + _GZIP_FRAME, True
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        n = 0
        while chunk := f.read(_CHUNK):
            if stop is not None and stop.is_set():
                return 0, False
            n += len(z.compress(chunk))
    return n + len(z.flush()), False


def analyze_size(path: str | os.PathLike[str], *, archive: bool = True, top: int = _TOP) -> SizeReport:
    """Account for every byte of one session file and compute what each remedy saves."""
    src = os.fspath(path)
    archived = src.endswith(".jsonl.gz")  # reported as the plain file it holds; already archived
    s = open_tree_session(src, archives=True)
    gzip: Background[tuple[int, bool]] | None = None
    later: Forked[tuple[SizeReport, ExternalizeResult, int, int]] | None = None
    try:
        j = s.journal
        report = SizeReport(src, j.size, entries=len(s))
        report.header_bytes = min(j.end(0) + 1, j.size) if len(j) else 0
        on_path = bytearray(len(s))
        for k in s.branch_indices():
            on_path[k] = 1
        # On a large file a forked child accounts for the later records while this process takes
        # the first (started before the thread below: a process with threads is not forked)
        n = len(s)
        mid = later_part(n, j.size, 55)
        later = forked(lambda: _part(s, on_path, mid, n, top), j.size) if mid < n else None
        prune_saves = _prune_saves(s) if later is None else 0  # else the child's
        # in a thread alongside the analysis: zlib compresses without the interpreter lock, and the
        # compression may be most of the work (after the open: the open's errors come first)
        if archive and not archived:
            gzip = Background(lambda stop: _gzip_size(src, stop), "omp-session-gzip-size")
        ext = ExternalizeResult(src, bytes_before=j.size, bytes_after=j.size)  # the dry run, record by record
        accounted = report.header_bytes + _account(s, on_path, 0, mid, report, ext)
        if later is not None:
            part, part_ext, part_accounted, prune_saves = later()
            accounted += part_accounted
            _take_in(report, ext, part, part_ext)
        report.other_bytes = j.size - accounted
        report.longest_tool_outputs.sort(key=lambda x: -x[2])
        del report.longest_tool_outputs[top:]
        report.externalize = ext
        report.prune_saves = prune_saves
    except BaseException:
        if gzip is not None:
            gzip.cancel()
        if later is not None:
            later.cancel()  # (nothing to do once taken)
        raise
    finally:
        s.close()
    if gzip is not None:
        report.archive_bytes, report.archive_estimated = gzip.result()
    # prune and externalize write from a plain file: an archive is to be unpacked first
    report.suggestions = [] if archived else _suggest(report)
    return report


def _part(s: Any, on_path: bytearray, lo: int, hi: int, top: int) -> tuple[SizeReport, ExternalizeResult, int, int]:
    """Entries ``lo``..``hi - 1`` accounted for in a report and a dry run of their own (sent back
    from a child: see :func:`_take_in`), and what pruning saves: the child takes that too, as it
    has the fewer entries (at 1 GB pruning's plan is a fifth of the child's work, and done after
    the child's part in this process it was all waited for)."""
    report = SizeReport("", 0)
    ext = ExternalizeResult("")
    accounted = _account(s, on_path, lo, hi, report, ext)
    report.longest_tool_outputs.sort(key=lambda x: -x[2])  # (stable: file order among equals)
    del report.longest_tool_outputs[top:]
    return report, ext, accounted, _prune_saves(s)


def _prune_saves(s: Any) -> int:
    try:
        return plan_prune(s).saved
    except EditError:
        return 0


def _take_in(report: SizeReport, ext: ExternalizeResult, part: SizeReport, part_ext: ExternalizeResult) -> None:
    """What :func:`_part` found after ``report``'s entries, added as one pass adds it."""
    for mine, theirs in ((report.by_type, part.by_type), (report.by_role, part.by_role),
                         (report.by_tool, part.by_tool)):
        for name, b in theirs.items():
            mine.setdefault(name, Bucket()).add(b.bytes, b.count)
    for mine_b, theirs_b in ((report.abandoned, part.abandoned), (report.inline_images, part.inline_images),
                             (report.thinking, part.thinking), (report.long_tool_outputs, part.long_tool_outputs)):
        mine_b.add(theirs_b.bytes, theirs_b.count)
    report.image_refs += part.image_refs
    report.longest_tool_outputs += part.longest_tool_outputs  # sorted, stable, once all are in
    ext.take_in(part_ext)


def _heads(s: Any) -> Any:
    """The reader's message heads of ``s``'s records, or None where they may not be its entries'
    (a migration may change what an entry holds)."""
    return None if s.migrated else s.journal.heads


def _account(s: Any, on_path: bytearray, lo: int, hi: int, report: SizeReport, ext: ExternalizeResult) -> int:
    """Entries ``lo``..``hi - 1`` counted into ``report`` and the dry run ``ext`` (whose
    ``bytes_after`` takes each record's change in size); the bytes of their lines.

    A message's role and tool name are the reader's (its message head, read from the same bytes);
    a record is decoded only for what the head does not hold: images, an assistant's thinking
    blocks, a long tool output's id."""
    j = s.journal
    types = s.types
    heads = _heads(s)
    longest = report.longest_tool_outputs
    accounted = 0
    for k in range(lo, hi):
        start, end = j.start(k + 1), j.end(k + 1)
        n = min(end + 1, j.size) - start  # the record and its end of line
        accounted += n
        t = types[k]
        report.by_type.setdefault(_name(t, "<no type>"), Bucket()).add(n)
        if not on_path[k]:
            report.abandoned.add(n)
        raw = j.read(start, end)
        marks = record_marks(raw)
        new = externalize_record(j, k + 1, raw, ext, None, marks)
        if new is not None:
            ext.bytes_after += len(new) - len(raw)
        images = bool(marks & IMAGE)
        if t != "message" and not images:
            continue
        value: Any = None
        if images or heads is None:
            value = _decode(raw)
            if not isinstance(value, dict):
                continue
            if images:
                _count_images(value, report)
            message = value.get("message")
            if t != "message" or not isinstance(message, dict):
                continue
            role, tool = message.get("role"), message.get("toolName")
        else:
            head = heads[k + 1]
            if head is None:  # the message is no object
                continue
            role, tool = head.role, head.toolName
        role = _name(role, "<no role>")
        report.by_role.setdefault(role, Bucket()).add(n)
        if role == "toolResult":
            tool = _name(tool, "<no tool name>")
            report.by_tool.setdefault(tool, Bucket()).add(n)
            if n > LONG_TOOL_OUTPUT_BYTES:
                report.long_tool_outputs.add(n)
                if value is None:
                    value = _decode(raw)
                longest.append((value.get("id") if isinstance(value, dict) else None, tool, n))
        elif role == "assistant":
            # a thinking block's type is written "thinking" or "redactedThinking" (a \u escape
            # could spell it otherwise: then the record is decoded to know)
            if value is None and (b'hinking"' in raw or b"\\u" in raw):
                value = _decode(raw)
            message = value.get("message") if isinstance(value, dict) else None
            if isinstance(message, dict):
                _thinking(message, report)
    return accounted


def _suggest(r: SizeReport) -> list[Suggestion]:
    out: list[Suggestion] = []
    q = _quote(r.path)
    if r.externalize is not None and r.externalize.saved > 0:
        e = r.externalize
        out.append(Suggestion("externalize", f"omp-session externalize {q} -o NEW.jsonl", e.saved,
                              f"moves {e.images_moved} inline image(s) into the blob store; omp's context "
                              f"is unchanged"))
    if r.prune_saves > 0:
        out.append(Suggestion("prune", f"omp-session prune {q} --keep-branch -o NEW.jsonl", r.prune_saves,
                              f"keeps only the current branch; {r.abandoned.count:,} "
                              f"{'entry' if r.abandoned.count == 1 else 'entries'} on abandoned branches stay "
                              f"in the original"))
    if r.archive_bytes is not None and r.archive_bytes < r.bytes:
        out.append(Suggestion("archive", f"gzip -k {q}  (a .jsonl.gz archive)", r.bytes - r.archive_bytes,
                              ("about, estimated from 8 MiB of samples; " if r.archive_estimated else "")
                              + "for a session you will not resume soon: omp does not read .jsonl.gz "
                              "(omp-session does; gunzip it to resume)"))
    out.sort(key=lambda x: -x.saves)
    return out


def _quote(path: str) -> str:
    safe = all(c.isalnum() or c in "/._-+=:@%," for c in path)
    return path if safe else "'" + path.replace("'", "'\\''") + "'"


# ----------------------------------------------------------------- --all


def _session_files(roots: Iterable[str | os.PathLike[str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for root in roots:
        r = os.fspath(root)
        if not os.path.isdir(r):
            raise FormatError("no such sessions directory", path=r)
        for dirpath, _, names in os.walk(r):
            for name in names:
                if name.endswith(".jsonl"):
                    p = os.path.join(dirpath, name)
                    try:
                        out.append((os.stat(p).st_size, p))
                    except OSError:
                        continue
    out.sort(key=lambda x: (-x[0], x[1]))
    return out


def biggest_sessions(roots: Iterable[str | os.PathLike[str]] | None = None, *, top: int = 20,
                     ) -> tuple[int, int, list[SizeReport], list[tuple[str, str]]]:
    """The ``top`` biggest ``.jsonl`` sessions under ``roots`` (default omp's sessions dir), each
    analysed (no archive figure). Returns (files seen, their total bytes, reports, failures)."""
    files = _session_files([sessions_dir()] if roots is None else roots)
    reports: list[SizeReport] = []
    failures: list[tuple[str, str]] = []
    for _, p in files[:top]:
        try:
            reports.append(analyze_size(p, archive=False, top=3))
        except SessionError as e:
            failures.append((p, str(e)))
    return len(files), sum(n for n, _ in files), reports, failures
