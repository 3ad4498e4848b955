"""``omp-session size``, ``externalize`` and ``prune`` (docs/size.md, docs/blobs.md).

``size`` never writes. ``externalize`` and ``prune`` write a new session (``-o``), never the
input. Exit status: 0 done, 1 a one-line error (unreadable session, not a session, OUT exists
without --force, unknown leaf), 2 usage errors.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import click

from omp_session.catalog.resolve import resolve_session
from omp_session.js.codec import stringify
from omp_session.model.text import shown
from omp_session.ops.size.doctor import (
    LONG_TOOL_OUTPUT_BYTES,
    Bucket,
    SizeReport,
    analyze_size,
    biggest_sessions,
)
from omp_session.ops.size.externalize import externalize as externalize_session
from omp_session.ops.size.prune import prune as prune_session

from ._errors import command
from ._options import force_option, json_option, output_option, session_argument
from ._store import refuse_non_session_file, resolve_any
from ._style import clip, terminal_width

__all__ = ["externalize", "prune", "size"]


def _dumps(value: object) -> str:
    """JSON of a report whose entry ids may be any value, nested deeper than json.dumps goes."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return stringify(value) or "null"


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(value) < 1024 or unit == "GB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:5.1f}%" if total else "    -"


def _table(title: str, rows: list[tuple[str, Bucket]], total: int) -> None:
    if not rows:
        return
    click.echo(title)
    for name, b in rows:
        click.echo(f"  {name:<24} {b.count:>7,}  {_size(b.bytes):>10}  {_pct(b.bytes, total)}")


def _print_report(r: SizeReport) -> None:
    t = r.bytes
    click.echo(f"{r.path}: {_size(t)}, {r.entries:,} entries")
    click.echo(f"  header and title slot {_size(r.header_bytes):>10}" +
               (f"; other (unreadable, blank) {_size(r.other_bytes)}" if r.other_bytes else ""))

    def ranked(d: dict[str, Bucket]) -> list[tuple[str, Bucket]]:
        return sorted(d.items(), key=lambda kv: (-kv[1].bytes, kv[0]))

    _table("by entry type:", ranked(r.by_type), t)
    _table("by message role:", ranked(r.by_role), t)
    _table("tool results by tool:", ranked(r.by_tool), t)
    click.echo("cross-cuts:")
    rows = [("inline images", r.inline_images), ("thinking blocks", r.thinking),
            (f"tool outputs > {LONG_TOOL_OUTPUT_BYTES // 1024} KB", r.long_tool_outputs),
            ("abandoned branches", r.abandoned)]
    for name, b in rows:
        click.echo(f"  {name:<24} {b.count:>7,}  {_size(b.bytes):>10}  {_pct(b.bytes, t)}")
    if r.image_refs:  # what the store holds is validate's question (blob-missing)
        n = r.image_refs
        click.echo(f"  ({n} image{'s' if n != 1 else ''} stored as {'' if n != 1 else 'a '}blob "
                   f"reference{'s' if n != 1 else ''}, not counted above)")
    if r.longest_tool_outputs:
        click.echo("  largest tool outputs:")
    for entry_id, tool, n in r.longest_tool_outputs:
        # an id can be any JSON value, nested thousands deep: shown as compact JSON, cut short
        click.echo(f"    {clip(shown(entry_id), 10):<10} {tool:<14} {_size(n):>10}")
    if r.suggestions:
        click.echo("what would help:")
        cells = terminal_width()
        for s in r.suggestions:
            about = "~" if s.action == "archive" and r.archive_estimated else ""
            click.echo(f"  {s.action:<12} saves {about + _size(s.saves):>10} ({_pct(s.saves, t).strip()})  {s.command}")
            for line in _wrapped(s.note, cells):
                click.echo(f"  {'':<12} {line}")
    else:
        click.echo("nothing to gain: no inline images to move, no abandoned branches")


def _wrapped(note: str, cells: int | None) -> list[str]:
    """``note`` in lines that fit a terminal ``cells`` wide after the 15 cells of its indent (prose:
    a pipe, ``cells`` None, keeps it one line for whoever reads it by program)."""
    room = (cells or 0) - 15
    return (textwrap.wrap(note, room, break_on_hyphens=False) or [note]) if room >= 20 else [note]


def _output_or_dry_run(out: Path | None, dry_run: bool) -> None:
    if out is not None and dry_run:
        raise click.UsageError("give -o OUT or --dry-run, not both")
    if out is None and not dry_run:
        raise click.UsageError("give -o OUT, or --dry-run")


@command("size")
@session_argument(required=False, every_project=False)
@click.option("--all", "all_sessions", is_flag=True, help="The biggest sessions under the root, as a table.")
@click.option("--root", "roots", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
              help="With --all: the sessions root (repeatable; default omp's).")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="With --all: how many of the biggest sessions.")
@click.option("--no-archive", is_flag=True, help="Skip the gzip figure (it reads the file once more).")
@json_option("Print one JSON object.")
def size(session: str | None, all_sessions: bool, roots: tuple[Path, ...], top: int, no_archive: bool,
         as_json: bool) -> None:
    """Show where a session's bytes go (entry types, roles, tools, images, long tool outputs,
    thinking, abandoned branches) and what would shrink it, with the exact bytes each remedy saves.

    The gzip figure of a file over 16 MiB is estimated from samples (marked ~).

    \b
    Examples:
      omp-session size latest
      omp-session size --all --top 10 --json
    """
    if all_sessions == (session is not None):
        raise click.UsageError("give a SESSION or --all (not both)")
    if not all_sessions:
        assert session is not None
        path = resolve_session(session)
        refuse_non_session_file(path)  # a file that is not a session is one line, exit 1
        report = analyze_size(path, archive=not no_archive)
        if as_json:
            click.echo(_dumps(report.to_json()))
        else:
            _print_report(report)
        return
    count, total, reports, failures = biggest_sessions(list(roots) or None, top=top)
    if as_json:
        click.echo(_dumps({"files": count, "bytes": total, "sessions": [_row(r) for r in reports],
                           "failures": [{"path": p, "error": m} for p, m in failures]}))
        return
    click.echo(f"{count} session file(s), {_size(total)}; the {len(reports)} biggest:")
    click.echo(f"  {'size':>10} {'entries':>8} {'images':>10} {'abandoned':>10} {'externalize':>12} "
               f"{'prune':>10}  path")
    for r in reports:
        ext = r.externalize.saved if r.externalize else 0
        click.echo(f"  {_size(r.bytes):>10} {r.entries:>8} {_size(r.inline_images.bytes):>10} "
                   f"{_size(r.abandoned.bytes):>10} {_size(ext):>12} {_size(r.prune_saves):>10}  {r.path}")
    for p, m in failures:
        click.echo(f"  skipped {p}: {m}")


def _row(r: SizeReport) -> dict[str, object]:
    return {"path": r.path, "bytes": r.bytes, "entries": r.entries, "inline_image_bytes": r.inline_images.bytes,
            "abandoned_bytes": r.abandoned.bytes, "thinking_bytes": r.thinking.bytes,
            "long_tool_output_bytes": r.long_tool_outputs.bytes,
            "externalize_saves": r.externalize.saved if r.externalize else 0, "prune_saves": r.prune_saves}


@command("externalize")
@session_argument()
@output_option("Where to write the new session (required unless --dry-run; never in place).")
@click.option("--blobs", "store", type=click.Path(path_type=Path), metavar="DIR",
              help="The blob store to move images into (default: omp's, <agent dir>/blobs).")
@click.option("--dry-run", is_flag=True, help="Only say what would move and the bytes saved.")
@force_option("Replace OUT if it exists.")
@json_option("Print the result as one JSON object.")
def externalize(session: str, out: Path | None, store: Path | None, dry_run: bool, force: bool,
                as_json: bool) -> None:
    """Write a copy of SESSION with its inline images moved into the blob store, by omp's own
    rules (1,024-character threshold, SHA-256 of the decoded bytes); omp loads the same entries
    and context from the copy.

    \b
    Example:
      omp-session externalize latest -o smaller.jsonl
    """
    _output_or_dry_run(out, dry_run)
    path = resolve_any(session)  # (with --all, in every project)
    refuse_non_session_file(path)
    res = externalize_session(path, out, store=store, force=force)
    if as_json:
        click.echo(json.dumps(res.to_json(), ensure_ascii=False))
        return
    verb = "would move" if out is None else f"wrote {out}: moved"
    click.echo(f"{verb} {res.images_moved} image(s) ({len(res.blobs)} blob(s)); {_size(res.bytes_before)} -> "
               f"{_size(res.bytes_after)}, saves {_size(res.saved)}")
    kept = [(res.below_threshold, "below omp's 1,024-character threshold"),
            (res.kept_noncanonical, "with non-canonical base64 (omp would load them re-encoded)"),
            (res.kept_frames, "snapcompact frames (omp does not resolve them on load)")]
    for n, why in kept:
        if n:
            click.echo(f"  kept inline: {n} image(s) {why}")


@command("prune")
@session_argument()
@click.option("--keep-branch", "keep_branch", is_flag=False, flag_value="", default=None, metavar="[LEAF]",
              help="Keep the branch root -> LEAF (default LEAF: the session's leaf).")
@output_option("Where to write the new session (required unless --dry-run; never in place).")
@click.option("--dry-run", is_flag=True, help="Only say what would be kept and the bytes saved.")
@force_option("Replace OUT if it exists.")
@json_option("Print the result as one JSON object.")
def prune(session: str, keep_branch: str | None, out: Path | None, dry_run: bool, force: bool,
          as_json: bool) -> None:
    """Write a new session holding only one branch of SESSION (entries copied byte for byte,
    labels carried); the abandoned branches stay in the original, which is never changed.

    \b
    Example:
      omp-session prune latest --keep-branch -o lean.jsonl
      omp-session prune latest --keep-branch 3f813a95 --dry-run
    """
    if keep_branch is None:
        raise click.UsageError("prune needs --keep-branch [LEAF]")
    _output_or_dry_run(out, dry_run)
    path = resolve_any(session)  # (with --all, in every project)
    refuse_non_session_file(path)
    plan = prune_session(path, out, leaf=keep_branch or None, force=force)
    if as_json:
        click.echo(json.dumps(plan.to_json(), ensure_ascii=False))
        return
    verb = "would keep" if out is None else f"wrote {out}: kept"
    click.echo(f"{verb} {len(plan.path)} of {plan.entries_before} entries (leaf {plan.leaf})"
               + (f", {len(plan.labels)} label(s) carried" if plan.labels else "")
               + f"; {_size(plan.bytes_before)} -> {_size(plan.bytes_after)}, saves {_size(plan.saved)}")
