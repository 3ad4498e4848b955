"""Subagent transcripts next to a session, for the HTML viewer (export_html.py, docs/export-html.md).

omp writes a subagent's transcript as ``<agentId>.jsonl`` in the parent session's artifacts
directory (the session path without ``.jsonl``, spec S9.5), and the ``task`` tool result that
spawned it names the agent in ``details.results[].id`` (``details.progress[].id`` while it ran).
A subagent's own subagents live in its own artifacts directory, ``<agentId>/``, the same way.

This module only finds them: which files exist, which task results name them, which names have
no file. Opening and embedding is export_html.py's job. Both go through a :class:`Transcripts`:
the files by default; ``serve --store`` gives one that reads the same layout from a store's keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omp_session.format.blobs import BlobReader
    from omp_session.model.session import Session

__all__ = ["FILE_TRANSCRIPTS", "SubagentFile", "Transcripts", "artifacts_dir", "find_subagents", "task_agent_ids"]


@dataclass(frozen=True)
class SubagentFile:
    """One subagent transcript: its agent id, where its file is (or would be), the parent's
    entries (indices) whose task result names it, and whether the file is there."""

    agent_id: str
    path: Path
    refs: tuple[int, ...]
    exists: bool


def artifacts_dir(session_path: str | os.PathLike[str]) -> Path | None:
    """The session's artifacts directory: its path without ``.jsonl`` (None for other names,
    where omp would not have one either). A transcript named ``..jsonl`` or ``...jsonl`` has none:
    its folder would be its session's own, or the one above it (every session of the project)."""
    text = os.fspath(session_path)
    if not text.endswith(".jsonl") or text[: -len(".jsonl")].rpartition("/")[2] in ("", ".", ".."):
        return None
    return Path(text[: -len(".jsonl")])


def _ids(items: Any) -> Iterable[str]:
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
                yield item["id"]


def task_agent_ids(entry: Any) -> list[str]:
    """The agent ids a ``task`` tool result names (results, then progress), each once; [] for
    any other entry."""
    if not isinstance(entry, dict) or entry.get("type") != "message":
        return []
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role") != "toolResult" or message.get("toolName") != "task":
        return []
    details = message.get("details")
    if not isinstance(details, dict):
        return []
    return list(dict.fromkeys([*_ids(details.get("results")), *_ids(details.get("progress"))]))


def _safe_name(agent_id: str) -> bool:
    # an id from the file is untrusted: it must name a file inside the folder, nothing else
    return agent_id not in ("", ".", "..") and "/" not in agent_id and "\\" not in agent_id and "\0" not in agent_id


def _files_in(folder: Path) -> list[str]:
    """The ``*.jsonl`` regular files directly in ``folder``, by name; [] when it cannot be read.
    omp writes real files there: a symlink (the folder or a transcript) could put any file on the
    disk into an export or a served page, so it is not followed."""
    if folder.is_symlink():
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [n for n in names if n.endswith(".jsonl") and (folder / n).is_file() and not (folder / n).is_symlink()]


def _open_file(path: Path, blob_store: BlobReader | None) -> Session:
    from omp_session.model.session import open_session

    return open_session(path, blob_store=blob_store)


@dataclass(frozen=True)
class Transcripts:
    """Where the transcripts are: ``names`` lists the ``*.jsonl`` files directly in an artifacts
    folder (by name, [] when there is none), ``open`` reads one (raising SessionError or OSError)."""

    names: Callable[[Path], list[str]]
    open: Callable[[Path, BlobReader | None], Session]


FILE_TRANSCRIPTS = Transcripts(_files_in, _open_file)


def find_subagents(session_path: str | os.PathLike[str], refs: Mapping[str, Iterable[int]],
                   transcripts: Transcripts = FILE_TRANSCRIPTS) -> list[SubagentFile]:
    """Subagent transcripts of the session at ``session_path``.

    ``refs`` maps each agent id named by a task result to the entries naming it (see
    :func:`task_agent_ids`). Named agents come first, in the order they are first named, each
    with ``exists`` telling whether its file is there; then the other ``*.jsonl`` files of the
    artifacts directory (advisor transcripts included, backups left out, as omp's own HTML export
    does), by name. Never raises for a missing or
    unreadable directory: it then finds only the named agents, none existing. ``transcripts``
    says which files the folder holds (default: the files on the disk).
    """
    folder = artifacts_dir(session_path)
    on_disk: dict[str, Path] = {}
    if folder is not None:
        for name in transcripts.names(folder):
            # as omp's own HTML export does: every transcript but backups (advisor ones too)
            if name.endswith(".jsonl") and ".bak" not in name and len(name) > len(".jsonl"):
                on_disk[name[: -len(".jsonl")]] = folder / name
    found: list[SubagentFile] = []
    named = {agent: tuple(sorted(set(ks))) for agent, ks in refs.items()}
    for agent in sorted((a for a in named if named[a]), key=lambda a: named[a][0]):
        entries = named[agent]
        if agent in on_disk:
            found.append(SubagentFile(agent, on_disk.pop(agent), entries, True))
        else:
            where = (folder / f"{agent}.jsonl") if folder is not None and _safe_name(agent) else Path(f"{agent}.jsonl")
            found.append(SubagentFile(agent, where, entries, False))
    found.extend(SubagentFile(agent, path, (), True) for agent, path in on_disk.items())
    return found
