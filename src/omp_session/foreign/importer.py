"""Persist a converted foreign session as a new omp session, as omp's ``persistForeignSession`` does.

omp loads the transcript into an in-memory manager, names it (``title_change``), appends a
``foreign_session_import`` custom entry (source, id, path and cwd of the original), moves it to the
current directory when its project directory no longer exists, and writes a copy under a fresh
session id into the project folder of its cwd. We build the same file: the title slot, a header
(``version`` 3, new id and time, cwd, title and its source), then every entry, each line through
omp's persistence transform (images into the blob store, huge strings truncated) and
``JSON.stringify``; the file appears whole (a temporary file, then a link) and never replaces one.

Random in omp as here: the session id and its time (header, file name, title slot), and the ids
and times of the ``title_change`` and ``custom`` entries. Everything else is derived from the
source.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from typing import Any

from omp_session.errors import SessionError
from omp_session.format.blobs import BlobStore
from omp_session.format.title import build_title_slot
from omp_session.js import codec
from omp_session.js.date import new_date_ms, now_iso
from omp_session.model.omp_version import has_s20
from omp_session.model.omp_version import resolve as resolve_omp
from omp_session.paths import blobs_dir, default_session_dir
from omp_session.store.atomic import place
from omp_session.write.entries import clean_title, file_safe_timestamp, generate_id, record
from omp_session.write.ids import new_session_id, new_session_timestamp
from omp_session.write.persist import persist_transform

from .convert_claude import convert_claude
from .convert_codex import convert_codex
from .converted import Converted
from .lines import entry_line
from .sources import ForeignSession

__all__ = ["IMPORT_CUSTOM_TYPE", "Prepared", "Staged", "convert", "discard_staged", "persist", "place_staged", "prepare",
           "stage"]

IMPORT_CUSTOM_TYPE = "foreign_session_import"
_MODE = 0o666  # minus the umask, as every file omp-session writes (store.atomic)


@dataclass
class Prepared:
    """A foreign session ready to be written: what omp's in-memory manager holds just before
    ``persistCopy``. ``moved``: its recorded cwd is not a directory, so ``cwd`` is the fallback."""

    info: ForeignSession
    converted: Converted
    cwd: str
    recorded_cwd: str
    moved: bool
    entries: list[dict[str, Any]]
    title: str | None
    title_source: str | None
    title_updated_at: str


def convert(info: ForeignSession, *, raw_text: bool = False) -> Converted:
    """The entries omp's store ``load`` gives for ``info`` (raises OSError, FormatError); with
    ``raw_text``, texts copied from a Claude transcript are :class:`~.lines.RawText`."""
    return convert_claude(info, raw_text=raw_text) if info.source == "claude" else convert_codex(info)


def prepare(info: ForeignSession, *, fallback_cwd: str | None) -> Prepared:
    """Convert ``info`` and add what ``persistForeignSession`` adds before writing."""
    created_at = now_iso()  # the in-memory session's own time: the title slot's when it gets no title
    converted = convert(info, raw_text=True)
    entries = list(converted.entries)
    ids = {e["id"] for e in entries}
    leaf = entries[-1]["id"] if entries else None
    title: str | None = None
    source: str | None = None
    updated = created_at
    cleaned = clean_title(converted.title) if converted.title else ""
    if cleaned:
        title, source, updated = cleaned, converted.title_source, now_iso()
        entry_id = generate_id(ids)
        ids.add(entry_id)
        entries.append(record(("type", "title_change"), ("id", entry_id), ("parentId", leaf), ("timestamp", updated),
                              ("title", cleaned), ("source", source),
                              ("trigger", converted.title_trigger or codec.UNDEFINED)))
        leaf = entry_id
    entries.append({"type": "custom", "customType": IMPORT_CUSTOM_TYPE,
                    "data": {"source": info.source, "sourceId": info.id, "sourcePath": info.path,
                             "sourceCwd": info.cwd},
                    "id": generate_id(ids), "parentId": leaf, "timestamp": now_iso()})
    cwd = converted.cwd
    moved = False
    if fallback_cwd and not os.path.isdir(cwd):
        cwd, moved = os.path.abspath(fallback_cwd), True
    return Prepared(info=info, converted=converted, cwd=cwd, recorded_cwd=converted.cwd, moved=moved,
                    entries=entries, title=title, title_source=source, title_updated_at=updated)


def _body(prepared: Prepared, header: dict[str, Any], blob_store: Any, s20: bool) -> list[bytes]:
    lines = [build_title_slot(prepared.title or "", prepared.title_source, prepared.title_updated_at),
             codec.dumps_line(persist_transform(header, blob_store, s20=s20))]
    lines.extend(entry_line(value, blob_store, s20=s20) for value in prepared.entries)
    return lines


_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") and "SC_IOV_MAX" in os.sysconf_names else 16


def _write_lines(fd: int, lines: list[bytes]) -> None:
    """Write ``lines`` one after the other, gathered by the kernel (no joined copy of the file)."""
    if not hasattr(os, "writev"):
        os.write(fd, b"".join(lines))  # no gather on this system: one copy
        return
    start = 0
    while start < len(lines):
        batch = lines[start:start + _IOV_MAX]
        want = sum(map(len, batch))
        done = os.writev(fd, batch)
        start += len(batch)
        if done < want:  # a short write (a signal, a full disk on the next call): the rest one by one
            rest = memoryview(b"".join(batch))[done:]
            while rest:
                rest = rest[os.write(fd, rest):]


@dataclass(frozen=True)
class Staged:
    """A session written under a temporary name beside ``path``, the name it is to take."""

    path: str
    tmp: str


def stage(prepared: Prepared, *, session_dir: str | None = None, blob_store: Any = None,
          omp: str | None = None) -> Staged:
    """Write ``prepared`` as a new omp session under a hidden temporary name (one write; see
    :func:`persist` for ``session_dir``); :func:`place_staged` gives it its name. Raises OSError,
    SessionError; on failure nothing is left behind but blobs already stored.

    The file is not synced, as omp's importer does not sync it either: see docs/import.md for what
    that means after a crash of the machine.
    """
    version = resolve_omp(omp)
    directory = session_dir or default_session_dir(prepared.cwd)
    os.makedirs(directory, exist_ok=True)
    timestamp = new_session_timestamp()
    session_id = new_session_id(int(new_date_ms(timestamp)))
    header = record(("type", "session"), ("version", 3), ("id", session_id), ("timestamp", timestamp),
                    ("cwd", prepared.cwd), ("title", prepared.title or codec.UNDEFINED),
                    ("titleSource", prepared.title_source or codec.UNDEFINED))
    name = f"{file_safe_timestamp(timestamp)}_{session_id}.jsonl"
    store = blob_store if blob_store is not None else BlobStore(blobs_dir())
    lines = _body(prepared, header, store, has_s20(version))
    path = os.path.join(directory, name)
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _MODE)
        except FileExistsError:
            continue
        except OSError as e:
            raise SessionError(f"{path}: cannot write: {e.strerror or e}") from None
        break
    else:
        raise SessionError(f"{path}: cannot write: no free temporary name")
    try:
        try:
            _write_lines(fd, lines)
        finally:
            os.close(fd)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise SessionError(f"{path}: cannot write: {e.strerror or e}") from None
        raise
    return Staged(path, tmp)


def place_staged(staged: Staged) -> str:
    """Give a staged session its name (never replacing a file); returns its path. Raises OSError,
    SessionError; the temporary file is gone either way."""
    try:
        place(staged.tmp, staged.path, force=False)  # removes the temporary name once placed
    except FileExistsError:
        discard_staged(staged)
        raise SessionError(f"{staged.path}: already exists; nothing was written") from None
    except OSError as e:
        discard_staged(staged)
        raise SessionError(f"{staged.path}: cannot write: {e.strerror or e}") from None
    except BaseException:
        discard_staged(staged)
        raise
    return staged.path


def discard_staged(staged: Staged) -> None:
    with contextlib.suppress(OSError):
        os.unlink(staged.tmp)


def persist(prepared: Prepared, *, session_dir: str | None = None, blob_store: Any = None,
            omp: str | None = None) -> str:
    """Write ``prepared`` as a new omp session; returns its path.

    ``session_dir``: the folder to write into (default: the project folder of the session's cwd
    under the sessions root; omp's importer passes no session dir, so ``$PI_CODING_AGENT_SESSION_DIR``
    plays no part). Raises SessionError or OSError; on failure nothing is left behind but blobs
    already stored.
    """
    return place_staged(stage(prepared, session_dir=session_dir, blob_store=blob_store, omp=omp))
