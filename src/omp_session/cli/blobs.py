"""``omp-session blobs verify|gc|stats``: maintain omp's blob store (docs/blobs.md).

Exit status: 0 fine, 1 problems found by ``verify`` or a one-line error (a root that does not
exist, a session that cannot be scanned, gc refusing an empty root), 2 usage errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from omp_session.ops.blobs import (
    DEFAULT_MIN_AGE,
    collect_gc,
    default_roots,
    delete_blobs,
    store_stats,
    verify_store,
)

from ._errors import group
from ._options import json_option

__all__ = ["blobs"]

F = TypeVar("F", bound=Callable[..., Any])
_SHOWN = 50  # rows of a list shown without --json


def _common(fn: F) -> F:
    fn = json_option("Print one JSON object.")(fn)
    fn = click.option("--no-registered", is_flag=True,
                      help="Skip the session files omp registered outside its root "
                           "(<agent dir>/custom-session-files).")(fn)
    fn = click.option("--blobs", "store", type=click.Path(path_type=Path), metavar="DIR",
                      help="The blob store (default: omp's, <agent dir>/blobs).")(fn)
    return click.option("--root", "roots", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
                        help="A sessions root to scan for references (repeatable; default: omp's "
                             "sessions directory).")(fn)


def _roots(roots: tuple[Path, ...]) -> list[Path]:
    return list(roots) if roots else default_roots()


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


@group("blobs")
def blobs() -> None:
    """Check, clean and measure omp's blob store (images kept outside the session files).

    \b
    Example:
      omp-session blobs verify --root ~/.omp/agent/sessions
    """


@blobs.command("verify")
@_common
def verify(roots: tuple[Path, ...], store: Path | None, no_registered: bool, as_json: bool) -> None:
    """Check that every blob's content hashes to its name and that every blob:sha256: reference
    in every session under the roots (archives and subagent sessions too) names a stored blob.

    Exit 1 when a blob is corrupt, a reference is missing or malformed, or a file cannot be read.

    \b
    Example:
      omp-session blobs verify --json
    """
    res = verify_store(_roots(roots), store, registered=not no_registered)
    if as_json:
        click.echo(json.dumps(res.to_json(), ensure_ascii=False))
    else:
        click.echo(f"{res.store}: {res.blobs_checked} blob(s) hashed, {res.refs_checked} reference(s) in "
                   f"{res.files_scanned} session file(s)")
        for sha in res.corrupt:
            click.echo(f"  corrupt blob: {sha} (content hashes differently)")
        for name in res.bad_sidecars:
            click.echo(f"  sidecar differs from its blob: {name}")
        for ref in res.missing[:_SHOWN]:
            click.echo(f"  missing blob: {ref}")
        for ref in res.malformed[:_SHOWN]:
            click.echo(f"  malformed reference: {ref}")
        for f, err in res.unreadable:
            click.echo(f"  cannot read {f}: {err}")
        hidden = max(len(res.missing) - _SHOWN, 0) + max(len(res.malformed) - _SHOWN, 0)
        if hidden:
            click.echo(f"  ... and {hidden} more (use --json)")
        if res.orphan_sidecars:
            click.echo(f"  note: {len(res.orphan_sidecars)} sidecar(s) without their blob")
        if res.stray_files:
            click.echo(f"  note: {len(res.stray_files)} other file(s) in the store (e.g. {res.stray_files[0]})")
        click.echo("ok" if res.ok else "problems found")
    sys.exit(0 if res.ok else 1)


@blobs.command("gc")
@_common
@click.option("--apply", is_flag=True, help="Delete the unreferenced blobs (default: only list them).")
@click.option("--min-age", type=click.FloatRange(min=0), default=DEFAULT_MIN_AGE, show_default=True,
              metavar="SECONDS", help="Keep unreferenced blobs younger than this (omp writes a blob "
                                      "just before the line that uses it).")
@click.option("--allow-empty", is_flag=True, help="Proceed even when no session file is found under the roots.")
def gc(roots: tuple[Path, ...], store: Path | None, no_registered: bool, as_json: bool, apply: bool,
       min_age: float, allow_empty: bool) -> None:
    """List (or with --apply delete) the blobs no session references.

    Every file under every root whose name holds .jsonl is searched: live sessions, subagent
    sessions in artifact folders, .jsonl.gz archives, .bak backups. A blob referenced anywhere is
    kept. Dry run by default.

    \b
    Example:
      omp-session blobs gc                 # what would go, with sizes
      omp-session blobs gc --apply
    """
    res = collect_gc(_roots(roots), store, registered=not no_registered, min_age=min_age,
                     allow_empty=allow_empty)
    if apply:
        delete_blobs(res)
    if as_json:
        click.echo(json.dumps(res.to_json(), ensure_ascii=False))
        return
    verb = "deleted" if apply else "would delete"
    for info in res.unreferenced[:_SHOWN]:
        extra = f" (+{', '.join(info.sidecars)})" if info.sidecars else ""
        click.echo(f"  {info.sha}{extra}  {_size(info.size + info.sidecar_bytes)}")
    if len(res.unreferenced) > _SHOWN:
        click.echo(f"  ... and {len(res.unreferenced) - _SHOWN} more (use --json)")
    gone = set(res.deleted) if apply else {b.sha for b in res.unreferenced}
    size = sum(b.size + b.sidecar_bytes for b in res.unreferenced if b.sha in gone)
    click.echo(f"{res.files_scanned} session file(s) scanned, {res.referenced} blob(s) in use; {verb} "
               f"{len(gone)} blob(s), {_size(size)}"
               + (f"; kept {len(res.too_young)} younger than {min_age:g} s" if res.too_young else "")
               + (f"; kept {len(res.rewritten)} rewritten since the scan" if res.rewritten else ""))
    if not apply and res.unreferenced:
        click.echo("run again with --apply to delete them")


@blobs.command("stats")
@_common
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="Largest blobs shown.")
def stats(roots: tuple[Path, ...], store: Path | None, no_registered: bool, as_json: bool, top: int) -> None:
    """Count and size the blob store: in use or not, by image type, the largest blobs.

    \b
    Example:
      omp-session blobs stats --top 5
    """
    st = store_stats(_roots(roots), store, registered=not no_registered, top=top)
    if as_json:
        click.echo(json.dumps(st.to_json(), ensure_ascii=False))
        return
    click.echo(f"{st.store}: {st.blobs} blob(s), {_size(st.bytes)}")
    click.echo(f"  in use:     {st.referenced} ({_size(st.referenced_bytes)})")
    click.echo(f"  unused:     {st.unreferenced} ({_size(st.unreferenced_bytes)})")
    click.echo(f"  references: {st.refs} in {st.files_scanned} session file(s); {st.missing} missing blob(s), "
               f"{st.malformed} malformed")
    for kind, (count, size) in st.by_type.items():
        click.echo(f"  {kind or '(no type)':<10}  {count} blob(s), {_size(size)}")
    if st.largest:
        click.echo("largest:")
        for sha, size, n in st.largest:
            click.echo(f"  {sha}  {_size(size):>9}  {n} session file(s)")
