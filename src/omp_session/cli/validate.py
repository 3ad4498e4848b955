"""``omp-session validate PATH...``: check session files against spec S14 (issue 4). Never writes.

Exit status: 0 no errors, 1 errors found (with ``--strict`` warnings count too), 2 usage errors.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from omp_session.catalog.listing import is_quarantine_name
from omp_session.diagnostics import Diagnostic, Severity, severity_count
from omp_session.errors import SessionNotFoundError
from omp_session.ops.validate.check import validate as validate_file
from omp_session.paths import sessions_dir

from ._errors import command
from ._options import every_project_option, json_option
from ._store import KeyOrPath, active_store, open_stored, store_option, stored_keys

__all__ = ["validate"]

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_SHOWN = 100  # characters of the offending line


def _sessions_in(path: Path, recursive: bool) -> list[Path]:
    prefix = "**/" if recursive else ""
    found = [*path.glob(prefix + "*.jsonl"), *path.glob(prefix + "*.jsonl.gz")]  # .gz: omp's archives
    # repair's quarantine files are not sessions (an old *.quarantine.jsonl too)
    return sorted(p for p in found if p.is_file() and not is_quarantine_name(p.name))


def _files(paths: tuple[Path, ...], recursive: bool, given: bool) -> Iterator[Path]:
    """The files to check. A PATH the user ``given`` that is no file, or a directory holding no
    session, is refused (a one-line error, exit 1) before anything is checked, as every other
    command refuses a SESSION that is not there."""
    if active_store() is not None:
        yield from paths
        return
    listed: list[list[Path]] = []
    for path in paths:
        if not path.exists():
            raise SessionNotFoundError(f"{path}: no such file")
        if not path.is_dir():
            listed.append([path])
            continue
        found = _sessions_in(path, recursive)
        if not found and given:
            if recursive:
                raise SessionNotFoundError(f"{path}: no session file in it or its subfolders")
            deeper = bool(_sessions_in(path, True))
            raise SessionNotFoundError(f"{path}: no session file here" + (
                " (the sessions are in its subfolders: add -r/--recursive)" if deeper else ""))
        listed.append(found)
    for files in listed:
        yield from files


def _check(path: Path) -> list[Diagnostic]:
    try:
        if active_store() is not None:  # a key in the --store store
            with open_stored(path) as s:
                return validate_file(s)
        return validate_file(path)
    except OSError as e:
        return [Diagnostic("unreadable", Severity.ERROR, f"cannot read the file: {os.strerror(e.errno or 5)}",
                           path=str(path))]


def _line_text(path: str, offset: int | None) -> str | None:
    """The physical line holding ``offset``, shortened: read around the offset, never the whole file."""
    if offset is None:
        return None
    try:
        with open(path, "rb") as f:
            start = max(0, offset - 4096)
            f.seek(start)
            data = f.read(8192)
    except OSError:
        return None
    rel = offset - start
    begin = data.rfind(b"\n", 0, rel) + 1 if rel <= len(data) else 0
    end = data.find(b"\n", begin)
    raw = data[begin: end if end >= 0 else len(data)]
    text = raw.decode("utf-8", "replace").replace("\r", "\\r").replace("\x00", "\\0")
    text = "".join(c if c.isprintable() else "\ufffd" for c in text)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


@command("validate")
@click.argument("paths", nargs=-1, type=KeyOrPath(path_type=Path))
@every_project_option
@store_option
@click.option("-r", "--recursive", is_flag=True, help="Descend into subdirectories of directory PATHs.")
@click.option("--strict", is_flag=True, help="Count warnings as errors for the exit status.")
@json_option("One JSON object per diagnostic per line.")
def validate(paths: tuple[Path, ...], recursive: bool, strict: bool, as_json: bool) -> None:
    """Check session files and report every problem: what it is, where, and what omp does with it.

    PATH is a session file or a directory of them (*.jsonl, and *.jsonl.gz archives), a session
    id or a unique prefix of one, or 'latest'; without PATH, omp's session root (all projects). Exit status 0 when no errors were found, 1 otherwise. Never writes.

    \b
    Examples:
      omp-session validate ~/.omp/agent/sessions/-src-app/ --strict
      omp-session validate --json | jq -r 'select(.severity=="error") | .path'
    """
    given = bool(paths)
    if active_store() is not None:
        paths, recursive = tuple(stored_keys(paths)), False
    elif not paths:
        root = sessions_dir()
        if not root.is_dir():
            raise click.UsageError(f"no PATH given and the session root {root} does not exist")
        paths, recursive = (root,), True
    console = Console(highlight=False, soft_wrap=True)
    failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
    failed = False
    checked = 0
    for path in list(_files(paths, recursive, given)):
        checked += 1
        found = _check(path)
        failed = failed or any(d.severity in failing for d in found)
        if as_json:
            for d in found:
                record = {"path": str(path), "code": d.code, "severity": d.severity.value, "message": d.message,
                          "line": d.line, "offset": d.offset, "entry_id": d.entry_id}
                text = json.dumps(record, ensure_ascii=False)
                if not _encodable(text):  # lone surrogates (\ud800 escapes, undecodable file names)
                    text = json.dumps(record)
                sys.stdout.write(text + "\n")
            continue
        _render(console, path, found)
    if not as_json:
        console.print(f"{checked} file(s) checked" + (", problems found" if failed else ", no errors"))
    sys.exit(1 if failed else 0)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_MESSAGE = 500  # characters of a message shown: one can quote a megabyte-long value (--json has it whole)


def _cut(text: str) -> str:
    """A message as a line shows it: a value it quotes can be a megabyte long, and rich's markup
    escaping is quadratic on a long run of backslashes."""
    return text if len(text) <= _MESSAGE else text[: _MESSAGE - 1] + "…"


def _safe(text: str) -> str:
    """``text`` with lone surrogates written as escapes: the terminal cannot take them."""
    return text if _encodable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _render(console: Console, path: Path, found: list[Diagnostic]) -> None:
    if not found:
        console.print(f"[green]ok[/] {escape(_safe(str(path)))}")
        return
    counts = {s: sum(d.severity is s for d in found) for s in Severity}
    summary = ", ".join(severity_count(n, s.value) for s, n in counts.items() if n)
    console.print(f"[bold]{escape(_safe(str(path)))}[/]: {summary}")
    for d in sorted(found, key=lambda d: (d.line is None, d.line or 0)):
        where = ", ".join(p for p in (f"line {d.line}" if d.line is not None else "",
                                      f"byte {d.offset}" if d.offset is not None else "",
                                      f"entry {d.entry_id}" if d.entry_id else "") if p)
        style = _STYLE[d.severity]
        console.print(f"  [{style}]{d.severity.value}[/] [dim]{escape(d.code)}[/]"
                      + (f" ({escape(_safe(_cut(where)))})" if where else "") + f": {escape(_safe(_cut(d.message)))}")
        # offsets of an archive or a --store key point into content this path does not hold as is
        text = _line_text(str(path), d.offset) if active_store() is None and path.suffix != ".gz" else None
        if text:
            console.print(f"      [dim]{escape(text)}[/]")
