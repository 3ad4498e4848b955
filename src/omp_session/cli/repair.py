"""``omp-session repair SESSION [-o OUT] [--in-place] [--json]``: print the plan, or write it.

Without ``-o``/``--in-place`` nothing is written anywhere (not even a quarantine file).
Exit 0 on success, 1 when the file cannot be repaired (not a session, unreadable, changed
meanwhile), 2 on usage errors (click's convention).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from omp_session.errors import SessionError
from omp_session.ops.repair.plan import RepairPlan, RepairResult, apply_repair, plan_repair, repair_to

from ._errors import command, os_errors
from ._options import force_option, json_option, output_option, session_argument

__all__ = ["repair"]


def _human(plan: RepairPlan, result: RepairResult | None, dry_run: bool) -> None:
    changes, notes = plan.changes, plan.notes
    if plan.is_empty:
        click.echo(f"{plan.path}: nothing to repair" + (f" ({len(notes)} note(s))" if notes else ""))
    else:
        click.echo(f"{plan.path}: {len(changes)} fix(es), {len(plan.quarantined)} record(s) to quarantine, "
                   f"{len(notes)} note(s)")
    for fix in [*changes, *notes]:
        click.echo(f"  {fix}")
    if result is not None and result.written:
        click.echo(f"wrote {result.output}")
        if result.backup:
            click.echo(f"original kept as {result.backup}")
        if result.quarantine:
            click.echo(f"quarantined records appended to {result.quarantine}")
    elif dry_run and not plan.is_empty:
        click.echo("nothing written (use -o OUT for a repaired copy, or --in-place)")


def _json(plan: RepairPlan, result: RepairResult | None) -> None:
    out = plan.to_json()
    out["written"] = None if result is None or not result.written else {
        "output": result.output, "backup": result.backup, "quarantine": result.quarantine}
    click.echo(json.dumps(out, ensure_ascii=False))


def _check_out(path: Path, out: Path) -> None:
    """Refusals of -o OUT in the command line's words, before anything is written (the library
    names its own parameter, and would first try the quarantine beside a folder that is not there)."""
    if os.fspath(out) == "-":
        return  # stdout: the library says what it takes
    try:
        same = os.path.samefile(out, path)
    except OSError:
        same = False
    if same:
        raise SessionError(f"{out}: is the file being repaired; use --in-place to replace it")
    folder = out.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise SessionError(f"{out}: the folder {folder} {what}; nothing was written")


@command("repair")
@session_argument("path", resolve=True, as_given=True)
@output_option("Write the repaired session to OUT (quarantine: OUT.quarantine).")
@click.option("--in-place", is_flag=True, help="Replace SESSION's file atomically; the original is kept as "
              "FILE.bak.")
@force_option("With -o: replace OUT if it exists.")
@json_option("Print the plan as one JSON object.")
def repair(path: Path, out: Path | None, in_place: bool, force: bool, as_json: bool) -> None:
    """Repair a damaged session file so omp can open it, losing nothing readable.

    SESSION is a path, a session id or a unique prefix of one, or 'latest'. Without -o or
    --in-place, prints what would be fixed (what, where, why) and writes nothing. Unusable
    records go to a quarantine file next to the output, never silently dropped.

    \b
    Examples:
      omp-session repair broken.jsonl                  # the plan only
      omp-session repair broken.jsonl -o fixed.jsonl
      omp-session repair broken.jsonl --in-place       # keeps broken.jsonl.bak
    """
    if out is not None and in_place:
        raise click.UsageError("give either -o OUT or --in-place, not both")
    if out is not None:
        _check_out(path, out)
    with os_errors(path):
        # a plan only looked at, told in words, needs no digest of the file (a sixth of the work)
        result = None
        if out is not None:
            plan, result = repair_to(path, out, force=force)
        else:
            plan = plan_repair(path, digest=as_json or in_place)
            if in_place:
                result = apply_repair(plan, in_place=True)
    if as_json:
        _json(plan, result)
    else:
        _human(plan, result, out is None and not in_place)
