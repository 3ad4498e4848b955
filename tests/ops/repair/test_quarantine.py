"""repair's quarantine file never passes for a session (issue 15 item 3).

``repair --in-place`` used to write ``<session>.jsonl.quarantine.jsonl`` beside the session: the
id lookup then matched two files, ``validate <bucket>`` failed on it with ``invalid-header`` and
``list`` reported a skipped file. The quarantine is now ``<session>.jsonl.quarantine`` (not a
``*.jsonl`` name, so no listing globs it), and files of the old name are ignored by our listings
and lookups and named for what they are by ``validate``.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import builders
from builders import ORACLE
from omp_session.catalog.listing import is_quarantine_name, list_all_sessions, list_sessions
from omp_session.catalog.resolve import resolve_session
from omp_session.cli.list import list_command
from omp_session.cli.validate import validate as validate_cmd
from omp_session.ops.repair.plan import apply_repair, plan_repair, quarantine_path
from omp_session.ops.validate.check import validate
from omp_session.paths import project_dir_name, sessions_dir

DATA = Path(__file__).resolve().parents[2] / "data" / "repair"
SID = "019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6071"
NAME = f"2026-03-01T09-00-00-000Z_{SID}.jsonl"
CWD = "/home/dev/proj"

run_validate = functools.partial(builders.run, validate_cmd)
run_list = functools.partial(builders.run, list_command)


def _repaired_bucket() -> Path:
    """A project bucket under omp's sessions root holding one session repaired in place."""
    bucket = sessions_dir() / project_dir_name(CWD)
    bucket.mkdir(parents=True)
    path = bucket / NAME
    shutil.copyfile(DATA / "null_record.jsonl", path)
    result = apply_repair(plan_repair(path), in_place=True)
    assert result.quarantine is not None and os.path.exists(result.quarantine)
    return bucket


def test_quarantine_name_is_not_a_session_name(tmp_path: Path) -> None:
    q = quarantine_path(tmp_path / NAME)
    assert q == f"{tmp_path / NAME}.quarantine"
    assert not q.endswith((".jsonl", ".jsonl.gz"))
    assert is_quarantine_name(os.path.basename(q))
    assert is_quarantine_name(NAME + ".quarantine.jsonl")  # the name repair used to write
    assert not is_quarantine_name(NAME)


def test_in_place_repair_leaves_one_session_in_the_bucket() -> None:
    bucket = _repaired_bucket()
    assert sorted(p.name for p in bucket.iterdir()) == [NAME, NAME + ".bak", NAME + ".quarantine"]
    quarantined = [json.loads(line) for line in (bucket / (NAME + ".quarantine")).read_text().splitlines()]
    assert [q["text"] for q in quarantined] == ["null"]
    assert [s.path for s in list_sessions(bucket, pins=())] == [str(bucket / NAME)]
    assert [s.path for s in list_all_sessions(pins=())] == [str(bucket / NAME)]
    assert resolve_session(SID[:8], CWD) == str(bucket / NAME)
    code, out, err = run_validate(str(bucket))
    assert code == 0, out + err
    code, out, err = run_list("--all")
    assert code == 0 and "skipped" not in err and SID[:8] in out + err


def test_files_of_the_old_name_are_ignored_and_named(tmp_path: Path) -> None:
    bucket = _repaired_bucket()
    legacy = bucket / (NAME + ".quarantine.jsonl")
    os.replace(bucket / (NAME + ".quarantine"), legacy)
    assert [s.path for s in list_sessions(bucket, pins=())] == [str(bucket / NAME)]
    assert [s.path for s in list_all_sessions(pins=())] == [str(bucket / NAME)]
    assert resolve_session(SID[:8], CWD) == str(bucket / NAME)
    found = validate(legacy)
    assert [(d.code, d.severity.value) for d in found] == [("repair-quarantine", "info")]
    assert "quarantine" in found[0].message and NAME in found[0].message
    code, out, _err = run_validate(str(legacy))
    assert code == 0 and "repair-quarantine" in out and "invalid-header" not in out


def test_a_session_named_like_a_quarantine_is_still_validated(tmp_path: Path) -> None:
    # the finding goes by what the file holds: a session file of any name is checked as a session
    path = tmp_path / "odd.quarantine.jsonl"
    shutil.copyfile(DATA / "valid.jsonl", path)
    assert [d.code for d in validate(path) if d.code == "repair-quarantine"] == []


@pytest.mark.oracle
def test_omp_lists_only_the_session(tmp_path: Path) -> None:
    """omp's own ``SessionManager.list`` over the bucket after the repair (both quarantine names)."""
    bucket = _repaired_bucket()
    shutil.copyfile(bucket / (NAME + ".quarantine"), bucket / (NAME + ".quarantine.jsonl"))
    script = tmp_path / "list.json"
    script.write_text(json.dumps({"ops": [{"op": "static", "method": "list", "args": [CWD, str(bucket)]}]}))
    out = subprocess.run([str(ORACLE / "omp-reference"), "run", str(script)], capture_output=True, text=True,
                         check=True).stdout
    step = json.loads(out)["steps"][0]
    assert step["error"] is None
    assert [s["path"] for s in step["result"]] == [str(bucket / NAME)]


def test_an_error_turn_with_string_content_is_quarantined(tmp_path: Path) -> None:
    """omp checks an error turn's content with content.some(): a string throws in
    buildSessionContext, so repair quarantines the record (found by the project's own corpus)."""
    from builders import assistant, entry, header, user, write_session
    from omp_session.ops.repair.plan import plan_repair

    bad = assistant("x", stop_reason="error")
    bad["content"] = "boom"
    path = write_session(tmp_path / "s.jsonl", [entry("u1", None, message=user("hi")),
                                                 entry("a1", "u1", message=bad)], head=header("s"))
    plan = plan_repair(path)
    assert [f.code for f in plan.fixes] == ["quarantined-record"]
    assert b'"boom"' not in plan.output
