"""``omp-session pack`` and ``omp-session unpack``: move sessions between machines and agent dirs
(docs/pack.md). Exit 0 when done, 1 on a one-line error (nothing half-written), 2 on usage errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from omp_session.catalog.resolve import resolve_session
from omp_session.ops.pack.archive import PackResult, all_sessions, blobs_dir_for_root, project_sessions
from omp_session.ops.pack.archive import pack as pack_sessions
from omp_session.ops.pack.unpack import UnpackResult, parse_map
from omp_session.ops.pack.unpack import unpack as unpack_archive

from ._errors import command
from ._options import force_option, json_option, output_option, session_argument

__all__ = ["pack", "unpack"]


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)  # pragma: no cover


def _print_pack(result: PackResult, as_json: bool) -> None:
    err = result.output == "-"  # stdout holds the archive: the summary goes to stderr
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False), err=err)
        return
    click.echo(f"wrote {result.output} ({result.compression}, {_size(result.size)}): "
               f"{len(result.sessions)} session(s), {result.blobs} blob(s)", err=err)
    for s in result.sessions:
        click.echo(f"  {s.id}  {s.cwd}  {s.path}", err=err)
    if result.missing_blobs:
        click.echo(f"  {len(result.missing_blobs)} referenced blob(s) were not in the store and are not packed",
                   err=True)
    for p in result.skipped:
        click.echo(f"  skipped (a link or special file): {p}", err=True)


@command("pack")
@session_argument("sessions", many=True)
@output_option("The archive to write: .tar, .tar.gz/.tgz or .tar.zst (the name picks the compression); "
               "- for stdout (gzip unless --compression; the summary goes to stderr).", name="output",
               required=True)
@click.option("--project", "project", type=click.Path(file_okay=False), metavar="DIR",
              help="Add every session of the project whose working directory is DIR.")
@click.option("--all", "all_projects", is_flag=True, help="Add every session of every project.")
@click.option("--archived", is_flag=True, help="With --project/--all: also the sessions omp's gc --archive "
              "moved to archive/sessions (they unpack as live sessions).")
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's).")
@click.option("--blobs", "blobs", type=click.Path(file_okay=False), metavar="DIR",
              help="Blob store to take blobs from (default: omp's, or 'blobs' beside --root).")
@click.option("--compression", type=click.Choice(["none", "gzip", "zstd"]), help="Override the name's choice.")
@click.option("--allow-missing-blobs", is_flag=True, help="Pack even when a referenced blob is not in the "
              "store (the manifest lists it as missing).")
@force_option("Replace OUTPUT if it exists.")
@json_option("Print the summary as one JSON object.")
def pack(sessions: tuple[str, ...], output: Path, project: str | None, all_projects: bool, archived: bool,
         root: str | None, blobs: str | None, compression: str | None, allow_missing_blobs: bool, force: bool, as_json: bool) -> None:
    """Pack sessions, their artifact folders (subagent transcripts, tool output) and every blob
    they reference into one archive, with a manifest of ids, working directories, paths, sizes and
    SHA-256 hashes. Files are streamed: memory stays flat on a 1 GB session.

    SESSION is a path (.jsonl or an archived .jsonl.gz), a session id or a unique prefix of one, or
    'latest'.

    \b
    Examples:
      omp-session pack latest -o last.tar.gz
      omp-session pack --project ~/src/app -o app.tar.zst
      omp-session pack --all -o - | ssh other 'cat > all.tar.gz'
    """
    if not sessions and project is None and not all_projects:
        raise click.UsageError("name at least one SESSION, or --project DIR, or --all")
    paths = [resolve_session(s, root=root) for s in sessions]
    if project is not None:
        paths += project_sessions(os.path.abspath(os.path.expanduser(project)), root=root, archived=archived)
    if all_projects:
        paths += all_sessions(root=root, archived=archived)
    store = blobs if blobs is not None else blobs_dir_for_root(root)
    result = pack_sessions(paths, output, compression=compression,  # type: ignore[arg-type]
                           blobs_dir=store, allow_missing_blobs=allow_missing_blobs, force=force)
    _print_pack(result, as_json)


def _print_unpack(result: UnpackResult, as_json: bool) -> None:
    if result.stale_removed:  # said even with --json: files were deleted
        click.echo(f"omp-session: removed {len(result.stale_removed)} staging folder(s) left by an interrupted "
                   "unpack: " + ", ".join(result.stale_removed), err=True)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False))
        return
    verb = "would unpack" if result.dry_run else "unpacked"
    click.echo(f"{verb} {len(result.sessions)} session(s) from {result.archive}; blobs: "
               f"{result.blobs_added} added, {result.blobs_present} already there")
    for s in result.sessions:
        moved = f"  (cwd {s.old_cwd} -> {s.new_cwd})" if s.old_cwd != s.new_cwd else ""
        click.echo(f"  {s.id}  {s.target}{moved}")
        if s.backup:
            click.echo(f"    the session that was there is now {s.backup}")
    if result.missing_blobs:
        click.echo(f"  {len(result.missing_blobs)} blob(s) were already missing when packed", err=True)


@command("unpack")
@click.argument("archive", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's).")
@click.option("--blobs", "blobs", type=click.Path(file_okay=False), metavar="DIR",
              help="Blob store to add blobs to (default: omp's, or 'blobs' beside --root).")
@click.option("--new-cwd", "cwd", metavar="DIR", help="Give every session this working directory.")
@click.option("--cwd", "cwd_alias", hidden=True)  # the old name of --new-cwd
@click.option("--map", "maps", multiple=True, metavar="OLD=NEW",
              help="Rewrite working directories under OLD to NEW (repeatable; the longest OLD wins).")
@force_option("Replace sessions that are in the way, keeping a backup of each.")
@click.option("--dry-run", is_flag=True, help="Verify the archive and show where each session would go.")
@json_option("Print the summary as one JSON object.")
def unpack(archive: Path, root: str | None, blobs: str | None, cwd: str | None, cwd_alias: str | None, maps: tuple[str, ...],
           force: bool, dry_run: bool, as_json: bool) -> None:
    """Unpack an archive made by 'pack': every hash is verified before anything is placed; each
    session goes to the project folder of its (new) working directory, its header's cwd rewritten;
    ids are kept; existing sessions are never overwritten (--force keeps a backup).

    \b
    Examples:
      omp-session unpack app.tar.zst --new-cwd ~/work/app
      omp-session unpack all.tar.gz --map /home/old=/home/new --dry-run
    """
    cwd = cwd or cwd_alias
    if cwd is not None and maps:
        raise click.UsageError("--new-cwd and --map are exclusive")
    rules = [parse_map(m) for m in maps]
    result = unpack_archive(archive, root=root, blobs_dir=blobs, cwd=cwd, maps=rules, force=force,
                            dry_run=dry_run)
    _print_unpack(result, as_json)
