"""``omp-session redact SESSION -o OUT``: a copy of a session with secrets removed (docs/redact.md).

Never in place. Exit 0 when written, 1 on a one-line error (unreadable session, a secrets file
that does not parse, an invalid regex, OUT exists without --force), 2 on usage errors.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from omp_session.errors import SessionError
from omp_session.ops.redact.rewrite import RedactReport, RedactRules, redact_to
from omp_session.store.atomic import check_output

from ._errors import command, os_errors
from ._options import force_option, json_option, output_option, session_argument
from ._store import refuse_non_session_file, resolve_any

__all__ = ["redact"]


def _print_report(result: RedactReport, out: Path | None, as_json: bool, report: bool) -> None:
    if as_json:
        payload = {"output": None if out is None else str(out), "counts": result.counts(),
                   "findings": [f.to_json() for f in result.findings] if report else None}
        click.echo(json.dumps(payload, ensure_ascii=False))
        return
    counts = result.counts()
    total = sum(counts.values())
    said = f"wrote {out}: {total} redaction(s)" if out is not None else \
        f"{result.source}: {total} redaction(s) to make, nothing written" if total else \
        f"{result.source}: nothing to redact"
    click.echo(said + (" (" + ", ".join(f"{c} {n}" for c, n in counts.items()) + ")" if counts else ""))
    if report:
        for f in result.findings:
            click.echo(f"  {f}")


@command("redact")
@session_argument()
@output_option("Where to write the redacted copy (required unless --check; never in place).")
@click.option("--check", is_flag=True, help="Write nothing: list what would be redacted (as --report) and exit 1 "
              "when anything would be, 0 when nothing.")
@click.option("--report", is_flag=True, help="List every redaction: category and location, never the value.")
@json_option("Print the summary (and --report) as one JSON object.")
@click.option("--secret", "secrets", multiple=True, metavar="VALUE", help="A value to redact (repeatable).")
@click.option("--secrets-from", "secrets_files", multiple=True, type=click.Path(path_type=Path), metavar="FILE",
              help="A .env file: each of its values is redacted, also base64- and URL-encoded.")
@click.option("--pattern", "patterns", multiple=True, metavar="REGEX",
              help="A regex to redact (repeatable); a group named 'secret' limits it to that group.")
@click.option("--paths", is_flag=True, help="Replace the session's cwd by <cwd> and the home directory by ~.")
@click.option("--drop-tool-output", is_flag=True, help="Replace every tool result by a marker.")
@click.option("--drop-images", is_flag=True, help="Replace every image by a marker.")
@click.option("--drop-thinking", is_flag=True, help="Remove thinking blocks and reasoning replay data.")
@click.option("--drop-custom", is_flag=True, help="Empty custom entries and custom messages (entries stay).")
@click.option("--no-builtin", is_flag=True, help="Only the --secret/--secrets-from/--pattern rules.")
@force_option("Replace OUT if it exists.")
def redact(session: str, out: Path | None, check: bool, report: bool, as_json: bool, secrets: tuple[str, ...],
                   secrets_files: tuple[Path, ...], patterns: tuple[str, ...], paths: bool,
                   drop_tool_output: bool, drop_images: bool, drop_thinking: bool, drop_custom: bool,
                   no_builtin: bool, force: bool) -> None:
    """Write a copy of SESSION with secrets redacted; ids and the tree stay as they were.

    Built in: provider API keys, AWS key pairs, private keys, JWTs, passwords in URLs,
    Authorization headers and .env-style secret assignments (not code), also inside %XX- and
    JSON-escaped text and across adjacent text blocks (docs/redact.md). Signed blocks that hold
    a secret are removed whole, with a marker.

    \b
    Examples:
      omp-session redact latest -o shared.jsonl --paths --secrets-from .env \\
          --report
      omp-session redact latest --check          # exit 1 when a secret is found
    """
    if check and (out is not None or force):
        raise click.UsageError(f"--check writes nothing: leave out {'-o' if out is not None else '--force'}")
    if not check and out is None:
        raise click.UsageError("Missing option '-o' / '--output' (or --check to write nothing)")
    path = resolve_any(session)  # (with --all, in every project)
    refuse_non_session_file(path)  # a file that is not a session is one line, exit 1, nothing written
    rules = _rules(secrets, secrets_files, patterns, paths, drop_tool_output, drop_images, drop_thinking, drop_custom,
                   no_builtin)
    if out is None:  # --check: the report alone
        checked = _redact(path, rules, None, force)
        _print_report(checked, None, as_json, True)
        if checked.findings:
            raise SystemExit(1)
        return
    try:
        out_exists = out.exists()  # stat() can fail, e.g. "File name too long"
        same = os.path.abspath(out) == os.path.abspath(path) or (out_exists and os.path.samefile(out, path))
    except OSError as e:
        raise SessionError(f"{out}: {e.strerror or e}") from None
    if same:
        raise SessionError(f"{out}: is the input session; redact never writes in place (choose another -o)")
    check_output(out, force=force, error=SessionError)  # before the work, not after
    result = _redact(path, rules, out, force)
    _print_report(result, result.output, as_json, report)


def _rules(secrets: tuple[str, ...], secrets_files: tuple[Path, ...], patterns: tuple[str, ...], paths: bool,
           drop_tool_output: bool, drop_images: bool, drop_thinking: bool, drop_custom: bool,
           no_builtin: bool) -> RedactRules:
    return RedactRules(secrets=secrets, secrets_files=secrets_files, patterns=patterns, builtin=not no_builtin,
                       paths=paths, drop_tool_output=drop_tool_output, drop_images=drop_images,
                       drop_thinking=drop_thinking, drop_custom=drop_custom)


def _redact(path: str, rules: RedactRules, out: Path | None, force: bool) -> RedactReport:
    try:
        with os_errors(path):
            return redact_to(path, rules, out, force=force)  # record by record: bounded memory
    except RecursionError:  # the reader's JSON parser has a depth limit too
        raise SessionError(f"{path}: nested too deeply to read") from None
