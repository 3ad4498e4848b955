"""Find a session from what a user types: a path, a session id or its prefix, or ``latest``.

Like omp's ``--resume`` (spec S10.3 ``resolveResumableSession``): an existing path wins; ``latest``
is the most recently modified session of the current project's bucket (omp 18.3: skipping untitled
sessions without an assistant turn, S20.3.9); otherwise the argument is
matched, case-insensitively, as a prefix of the session id in the file name
(``<timestamp>_<id>.jsonl``) or of the file name itself, first in the current project's bucket,
then in every bucket under the sessions root.
"""

from __future__ import annotations

import os
from pathlib import Path

from omp_session.errors import AmbiguousSessionError, SessionNotFoundError
from omp_session.paths import project_dir_name, sessions_dir

from .quarantine import is_quarantine_name

__all__ = ["name_matches", "pick_one", "resolve_session", "session_ids"]


_SUFFIXES = (".jsonl", ".jsonl.gz")  # .jsonl.gz: a session archived by omp's gc --archive


def _session_id(name: str) -> str:
    stem = name.removesuffix(".gz").removesuffix(".jsonl")
    return stem.split("_", 1)[1] if "_" in stem else stem


def session_ids(bucket: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """(id, creation time as the file name gives it) of the sessions in ``bucket``, newest name
    first, from the file names alone (shell completion). Raises OSError for a missing bucket."""
    names = sorted((n for n in os.listdir(bucket) if n.endswith(_SUFFIXES) and not n.startswith(".")
                    and not is_quarantine_name(n)), reverse=True)
    out = []
    for n in names:
        stem = n.removesuffix(".gz").removesuffix(".jsonl")
        stamp, _, _ = stem.partition("_")
        out.append((_session_id(n), stamp if "_" in stem else ""))
    return out


def name_matches(name: str, prefix: str) -> bool:
    """Whether the session file ``name`` (no folder) is named by the id or name ``prefix``."""
    p = prefix.lower()
    return _session_id(name).lower().startswith(p) or name.lower().startswith(p)


def pick_one(candidates: list[str], arg: str, nowhere: str) -> str:
    """The one candidate ``arg`` names; else SessionNotFoundError(``nowhere``) or AmbiguousSessionError."""
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise SessionNotFoundError(nowhere)
    shown = "\n  ".join(candidates[:20]) + ("\n  …" if len(candidates) > 20 else "")
    raise AmbiguousSessionError(f"{arg!r} matches {len(candidates)} sessions:\n  {shown}", candidates)


def _matches(directory: Path, prefix: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(directory)
                       if n.endswith(_SUFFIXES) and not n.startswith(".") and not is_quarantine_name(n))
    except OSError:
        return []
    return [str(directory / n) for n in names if name_matches(n, prefix)]


def resolve_session(arg: str, cwd: str | None = None, *, root: str | os.PathLike[str] | None = None,
                    omp: str | None = None, every_project: bool = False) -> str:
    """The session file ``arg`` names. Raises :class:`SessionNotFoundError` or
    :class:`AmbiguousSessionError` (with the candidates) with a one-line message. ``omp``: with
    18.3 (the default), ``latest`` passes over untitled sessions without an assistant turn.
    ``every_project``: ``latest`` is the newest of every project, and a prefix is matched in
    every project at once (not the current one first)."""
    if os.path.exists(arg) or os.sep in arg or arg.endswith(_SUFFIXES):
        if not os.path.exists(arg):
            raise SessionNotFoundError(f"{arg}: no such file")
        return arg
    base = Path(root) if root is not None else sessions_dir()
    bucket = base / project_dir_name(cwd if cwd is not None else os.getcwd())
    if every_project:
        return _everywhere(arg, base, omp)
    if arg == "latest":
        from .listing import list_sessions  # not imported for a path, an id or a prefix

        # omp's ordering (newest modified first), without the backup recovery that renames files
        listed = list_sessions(bucket, pins=(), recover_backups=False, omp=omp)
        sessions = [s for s in listed if not s.skipped_by_resume]
        if not sessions:
            raise SessionNotFoundError(f"no session for this project in {bucket}")
        return sessions[0].path
    local = _matches(bucket, arg)
    if len(local) == 1:
        return local[0]
    candidates = local
    if not local:
        try:
            buckets = sorted(d for d in base.iterdir() if d.is_dir())
        except OSError:
            buckets = []
        candidates = [m for d in buckets for m in _matches(d, arg)]
    return pick_one(candidates, arg, f"no session matches {arg!r} (looked in {bucket} and every project under {base})")


def _everywhere(arg: str, base: Path, omp: str | None) -> str:
    try:
        buckets = sorted(d for d in base.iterdir() if d.is_dir())
    except OSError:
        buckets = []
    if arg == "latest":
        from .listing import list_sessions

        firsts = (next((s for s in list_sessions(d, pins=(), recover_backups=False, omp=omp)
                        if not s.skipped_by_resume), None) for d in buckets)
        newest = [s for s in firsts if s is not None]
        if not newest:
            raise SessionNotFoundError(f"no session in any project under {base}")
        # omp's order within a bucket, applied across them: modified, then created, then path
        return max(newest, key=lambda s: (s.modified, s.created, s.path)).path
    candidates = [m for d in buckets for m in _matches(d, arg)]
    return pick_one(candidates, arg, f"no session matches {arg!r} in any project under {base}")
