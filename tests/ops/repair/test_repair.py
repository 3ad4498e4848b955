"""repair: every damage class of issue 4 on a test input, the guarantees, the CLI, and omp itself.

Inputs are in tests/data/repair/ (``make_data.py`` writes them). The guarantees checked on every
repaired file: nothing parsable is lost (each record is in the output or the quarantine), a
second repair changes nothing, and the output reads with no error diagnostics. The ``oracle``
tests run the real omp on repaired files.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import ORACLE, entry, user
from omp_session.cli.repair import repair as repair_cmd
from omp_session.diagnostics import Severity
from omp_session.format.reader import scan_bytes
from omp_session.format.title import build_title_slot
from omp_session.js import codec
from omp_session.model.session import Session
from omp_session.ops.repair.plan import (
    NotASessionError,
    RepairConflictError,
    RepairError,
    RepairPlan,
    apply_repair,
    plan_repair,
    plan_repair_bytes,
    quarantine_path,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "repair"
ADAPTER = Path(__file__).resolve().parents[2] / "conformance" / "adapter.py"
HEADERLESS = "2026-03-01T09-00-00-000Z_019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6071.jsonl"
_REFS = ("id", "parentId", "targetId", "firstKeptEntryId", "providerReplayThroughEntryId")


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read or write the real ~/.omp (the blob store lives there)."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("agent")))
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)


# ----- the guarantees ------------------------------------------------------------------------


def _records(data: bytes) -> list[Any]:
    j = scan_bytes(data)
    return [j.value(i) for i in range(len(j))]


def _key(value: Any) -> str | None:
    """A record compared without the id fields repair may change (and a header without cwd)."""
    if isinstance(value, dict):
        header = value.get("type") == "session"
        value = {k: v for k, v in value.items() if k not in _REFS and not (header and k in ("cwd", "version"))}
    return codec.stringify(value)


def assert_nothing_lost(data: bytes, plan: RepairPlan) -> None:
    kept = {_key(v) for v in _records(plan.output)}
    quarantined = set()
    for q in plan.quarantined:
        with contextlib.suppress(ValueError):
            quarantined.add(_key(codec.loads(q.raw.decode("utf-8", "replace"))))
    for value in _records(data):
        key = _key(value)
        assert key in kept or key in quarantined, f"lost: {key[:200] if key else key}"


def assert_no_errors(output: bytes, path: str = "s.jsonl") -> None:
    with Session(scan_bytes(output), path) as s:
        errors = [d for d in s.diagnostics if d.severity is Severity.ERROR]
        assert not errors, errors
        s.get_tree()
        assert not [d for d in s.diagnostics if d.severity is Severity.ERROR]


def check_guarantees(data: bytes, plan: RepairPlan, name: str = "s.jsonl") -> None:
    assert_nothing_lost(data, plan)
    assert_no_errors(plan.output, name)
    again = plan_repair_bytes(plan.output, name)
    assert again.is_empty, [str(f) for f in again.changes]
    assert again.output == plan.output
    assert plan.output.endswith(b"\n")
    assert not plan.output.startswith(b"\xef\xbb\xbf")
    assert b"\r" not in plan.output.replace(b"\\r", b"")


# ----- every damage class --------------------------------------------------------------------

CASES = {
    "truncated_mid_record.jsonl": {"malformed-record", "no-final-newline"},
    "truncated_mid_utf8.jsonl": {"malformed-record", "no-final-newline"},
    "no_final_newline.jsonl": {"no-final-newline"},
    "duplicate_line.jsonl": {"duplicate-record"},
    "two_writers.jsonl": {"rescued-record", "duplicate-record", "rejoined-record"},
    "nul_tail.jsonl": {"nul-padding", "malformed-record", "no-final-newline"},
    "bom.jsonl": {"bom"},
    "crlf.jsonl": {"crlf"},
    "title_wrong_width.jsonl": {"title-slot"},
    "title_invalid.jsonl": {"title-slot"},
    HEADERLESS: {"header-rebuilt"},
    "header_not_first.jsonl": {"header-moved"},
    "duplicate_ids.jsonl": {"duplicate-id", "repointed-reference"},
    "missing_parent.jsonl": {"malformed-record", "reattached-parent"},
    "cycle.jsonl": {"parent-cycle"},
    "malformed_middle.jsonl": {"malformed-record"},
    "null_record.jsonl": {"quarantined-record"},
    "message_without_message.jsonl": {"quarantined-record", "reattached-parent"},
    "numeric_cwd.jsonl": {"header-cwd"},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_damage_is_repaired(name: str) -> None:
    data = (DATA / name).read_bytes()
    plan = plan_repair(DATA / name)
    assert {f.code for f in plan.changes} == CASES[name], [str(f) for f in plan.fixes]
    for fix in plan.changes:
        assert fix.message and (fix.line is not None or fix.code in ("crlf", "blank-lines", "header-rebuilt",
                                                                     "no-final-newline", "nul-padding"))
    check_guarantees(data, plan, name)


def test_valid_file_has_an_empty_plan() -> None:
    plan = plan_repair(DATA / "valid.jsonl")
    assert plan.is_empty and not plan.fixes
    assert plan.output == (DATA / "valid.jsonl").read_bytes()


def _branch_ids(output: bytes) -> list[Any]:
    with Session(scan_bytes(output)) as s:
        return [e.get("id") for e in s.get_branch()]


def test_duplicate_id_children_follow_the_later_entry() -> None:
    plan = plan_repair(DATA / "duplicate_ids.jsonl")
    fresh = next(f for f in plan.changes if f.code == "duplicate-id").message.split("'")[-2]
    assert _branch_ids(plan.output) == ["aaaa0001", "aaaa0002", "aaaa0003", fresh, "aaaa0005", "aaaa0006"]


def test_missing_parent_reattached_from_quarantined_evidence_else_kept_as_root() -> None:
    plan = plan_repair(DATA / "missing_parent.jsonl")
    notes = [f for f in plan.notes if f.code == "missing-parent"]
    assert [f.entry_id for f in notes] == ["dddd0002"]
    recs = {r["id"]: r for r in _records(plan.output)[1:]}
    assert recs["aaaa0004"]["parentId"] == "aaaa0002"
    assert recs["dddd0002"]["parentId"] == "ffff9999"  # evidence kept; omp treats it as a root


def test_cycles_are_cut_at_the_first_entry_of_the_cycle() -> None:
    plan = plan_repair(DATA / "cycle.jsonl")
    recs = {r["id"]: r for r in _records(plan.output)[1:]}
    assert recs["aaaa0002"]["parentId"] is None and recs["eeee0001"]["parentId"] is None
    assert _branch_ids(plan.output) == ["aaaa0002", "aaaa0003", "aaaa0004", "eeee0002"]


_H = (b'{"type":"session","version":3,"id":"019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6071",'
      b'"timestamp":"2026-03-01T09:00:00.000Z","cwd":"/p"}\n')


def _msg(entry_id: str, parent: str | None, text: str) -> bytes:
    return codec.dumps_line(entry(entry_id, parent, timestamp="2026-03-01T09:00:01.000Z", message=user(text)))


def test_copy_written_again_after_another_entry_reused_its_id_keeps_its_children() -> None:
    """x, then a different entry with id x, then x again: omp resolves x to that last copy, so
    the child written after it must stay on x's content, not move to the other entry."""
    data = _H + _msg("x", None, "first") + _msg("x", "x", "other") + _msg("x", None, "first") + _msg("c", "x", "child")
    with Session(scan_bytes(data)) as s:
        before = [e["message"]["content"] for e in s.get_branch()]
    plan = plan_repair_bytes(data)
    check_guarantees(data, plan)
    with Session(scan_bytes(plan.output)) as s:
        assert [e["message"]["content"] for e in s.get_branch()] == before == ["first", "child"]


def test_a_deeply_nested_torn_line_is_quarantined_without_quadratic_search() -> None:
    """Each '{"' of a torn line was tried as the start of a glued record, each try parsing to the
    line's end: 8000 nested objects took half a minute, 100000 hours. A glued record ends the line."""
    data = _H + b'{"a":' * 100_000 + b"\n" + _msg("a1", None, "kept")
    plan = plan_repair_bytes(data)
    assert [f.code for f in plan.changes] == ["malformed-record", "rescued-record"]
    check_guarantees(data, plan)


def test_a_crlf_title_slot_of_256_bytes_is_written_with_lf() -> None:
    slot = build_title_slot("hello", "user", "2026-03-01T09:00:00.000Z")
    data = slot[:-4] + b'"}\r\n' + _H.replace(b"\n", b"\r\n")  # one pad space less: still 256 bytes
    assert scan_bytes(data).slot is not None
    plan = plan_repair_bytes(data)
    assert plan.output[:256] == slot
    check_guarantees(data, plan)


def test_header_rebuilt_from_file_name() -> None:
    plan = plan_repair(DATA / HEADERLESS)
    header = _records(plan.output)[0]
    assert header == {"type": "session", "version": 3, "id": "019a2b3c-4d5e-7f60-8a1b-2c3d4e5f6071",
                      "timestamp": "2026-03-01T09:00:00.000Z"}


def test_title_slots_rebuilt_at_256_bytes() -> None:
    for name, source in (("title_wrong_width.jsonl", "user"), ("title_invalid.jsonl", None)):
        out = plan_repair(DATA / name).output
        first = out[: out.index(b"\n") + 1]
        assert len(first) == 256
        slot = json.loads(first)
        assert slot["title"] == "café fix" and slot.get("source") == source


def test_quarantine_records_line_offset_and_raw_bytes(tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    shutil.copy(DATA / "truncated_mid_utf8.jsonl", src)
    plan = plan_repair(src)
    res = apply_repair(plan, out=tmp_path / "fixed.jsonl")
    assert res.quarantine == str(tmp_path / "fixed.jsonl.quarantine")
    rows = [json.loads(line) for line in Path(res.quarantine).read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["line"] == 5 and rows[0]["offset"] == 942
    raw = base64.b64decode(rows[0]["base64"])  # cut inside a character: not UTF-8, so base64
    assert src.read_bytes()[942:] == raw
    mid = plan_repair(DATA / "malformed_middle.jsonl").quarantined
    assert mid[0].to_json() == {"line": 4, "offset": 751, "reason": mid[0].reason, "text": '{"type":"message","id":"zz'}


def test_missing_blob_is_reported_and_left() -> None:
    plan = plan_repair(DATA / "missing_blob.jsonl")
    assert plan.is_empty and [f.code for f in plan.notes] == ["blob-missing"]


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: p.write_bytes((DATA / "not_a_session.png").read_bytes()),
                                  lambda p: p.write_bytes(random.Random(1).randbytes(300_000)),
                                  lambda p: p.write_bytes(b"")])
def test_not_a_session_is_refused(tmp_path: Path, make: Any) -> None:
    target = tmp_path / "x.jsonl"
    make(target)
    with pytest.raises(NotASessionError):
        plan_repair(target)


# ----- applying ------------------------------------------------------------------------------


def test_in_place_keeps_backup_and_quarantine(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    original = (DATA / "null_record.jsonl").read_bytes()
    path.write_bytes(original)
    plan = plan_repair(path)
    res = apply_repair(plan, in_place=True)
    assert res.backup == f"{path}.bak" and Path(res.backup).read_bytes() == original
    assert path.read_bytes() == plan.output
    assert json.loads(Path(quarantine_path(path)).read_text())["text"] == "null"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "s.jsonl.bak", "s.jsonl.quarantine"]
    # a second repair finds nothing, writes nothing, and never overwrites the backup
    again = plan_repair(path)
    assert again.is_empty and not apply_repair(again, in_place=True).written
    assert Path(res.backup).read_bytes() == original


def test_in_place_refuses_when_file_changed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes((DATA / "bom.jsonl").read_bytes())
    plan = plan_repair(path)
    with path.open("ab") as f:
        f.write(b'{"type":"label","id":"x1","parentId":null,"timestamp":"2026-03-01T09:01:00.000Z"}\n')
    with pytest.raises(RepairConflictError):
        apply_repair(plan, in_place=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
    # same size, different bytes
    path.write_bytes((DATA / "bom.jsonl").read_bytes().replace(b"hello", b"HELLO"))
    with pytest.raises(RepairConflictError):
        apply_repair(plan, in_place=True)


def test_apply_needs_one_target(tmp_path: Path) -> None:
    plan = plan_repair(DATA / "bom.jsonl")
    with pytest.raises(ValueError):
        apply_repair(plan)
    with pytest.raises(ValueError):
        apply_repair(plan, out=tmp_path / "o.jsonl", in_place=True)
    src = tmp_path / "s.jsonl"
    shutil.copy(DATA / "bom.jsonl", src)
    with pytest.raises(RepairError):
        apply_repair(plan_repair(src), out=src)


# ----- CLI -----------------------------------------------------------------------------------


def test_cli_dry_run_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    shutil.copy(DATA / "missing_parent.jsonl", src)
    r = CliRunner().invoke(repair_cmd, [str(src)])
    assert r.exit_code == 0, r.output
    assert "reattached-parent" in r.output and "line 5" in r.output and "nothing written" in r.output
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]
    r = CliRunner().invoke(repair_cmd, [str(src), "--json"])
    out = json.loads(r.output)
    assert {f["code"] for f in out["fixes"]} == {"malformed-record", "reattached-parent"}
    assert out["notes"][0]["entry_id"] == "dddd0002" and out["written"] is None
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_cli_output_and_in_place(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    shutil.copy(DATA / "two_writers.jsonl", src)
    r = CliRunner().invoke(repair_cmd, [str(src), "-o", str(tmp_path / "out.jsonl")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "out.jsonl").read_bytes() == plan_repair(src).output
    r = CliRunner().invoke(repair_cmd, [str(src), "--in-place"])
    assert r.exit_code == 0 and (tmp_path / "s.jsonl.bak").exists()
    assert "nothing to repair" in CliRunner().invoke(repair_cmd, [str(src)]).output


@pytest.mark.parametrize("name", ["dir", "png", "missing"])
def test_cli_refuses_non_sessions(tmp_path: Path, name: str) -> None:
    target = {"dir": tmp_path, "png": DATA / "not_a_session.png", "missing": tmp_path / "nope.jsonl"}[name]
    before = sorted(tmp_path.iterdir())
    r = CliRunner().invoke(repair_cmd, [str(target), "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 1
    assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("omp-session: ")
    assert sorted(tmp_path.iterdir()) == before


def test_cli_usage_errors() -> None:
    assert CliRunner().invoke(repair_cmd, []).exit_code == 2
    r = CliRunner().invoke(repair_cmd, [str(DATA / "bom.jsonl"), "-o", "x", "--in-place"])
    assert r.exit_code == 2


# ----- property test: random damage to valid files written by the oracle's generator ---------


@functools.cache
def _valid_files() -> tuple[bytes, ...]:
    out = Path(tempfile.mkdtemp(prefix="repair-corpus-"))
    try:
        subprocess.run([sys.executable, str(ORACLE / "gen_sessions.py"), "--seed", "5", "--count", "30",
                        "--kinds", "valid", "--out", str(out)], check=True, capture_output=True)
        return tuple(p.read_bytes() for p in sorted(out.glob("*.jsonl")))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def damage(data: bytes, rnd: random.Random, ops: int) -> bytes:
    lines = data.split(b"\n")
    for _ in range(ops):
        op = rnd.choice(["truncate", "flip", "dup", "delete", "swap", "nul", "nul_tail", "crlf", "bom", "tear",
                         "null", "glue"])
        i = rnd.randrange(len(lines))
        if op == "truncate":
            cut = rnd.randrange(len(data) + 1)
            lines = b"\n".join(lines)[:cut].split(b"\n")
        elif op == "flip" and lines[i]:
            k = rnd.randrange(len(lines[i]))
            lines[i] = lines[i][:k] + bytes([rnd.randrange(256)]) + lines[i][k + 1:]
        elif op == "dup":
            lines.insert(rnd.randrange(len(lines) + 1), lines[i])
        elif op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "swap":
            j = rnd.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "nul" and lines[i]:
            k = rnd.randrange(len(lines[i]))
            lines[i] = lines[i][:k] + b"\x00" * rnd.randrange(1, 64)
        elif op == "nul_tail":
            lines[-1] += b"\x00" * rnd.choice([1, 512, 4096])
        elif op == "crlf":
            lines = [x + b"\r" if x else x for x in lines]
        elif op == "bom":
            lines[0] = b"\xef\xbb\xbf" + lines[0]
        elif op == "tear" and len(lines) > 2 and lines[i]:
            k = rnd.randrange(len(lines[i]))
            j = rnd.randrange(len(lines))
            head, tail = lines[i][:k], lines[i][k:]
            lines[i] = head + lines[j]
            lines.insert(i + 1, tail)
        elif op == "null":
            lines.insert(i, b"null")
        elif op == "glue" and i + 1 < len(lines):
            lines[i] += lines.pop(i + 1)
    return b"\n".join(lines)


def _repair_or_refuse(data: bytes, name: str = "s.jsonl") -> RepairPlan | None:
    try:
        return plan_repair_bytes(data, name)
    except NotASessionError:
        # only when nothing session-like survived the damage
        assert not any(isinstance(v, dict) and isinstance(v.get("type"), str) for v in _records(data)) \
            or b'"type"' not in data[:1 << 20]
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, 29), seed=st.integers(0, 2**32 - 1), ops=st.integers(1, 5))
def test_random_damage_is_repaired(index: int, seed: int, ops: int) -> None:
    files = _valid_files()
    data = damage(files[index % len(files)], random.Random(seed), ops)
    plan = _repair_or_refuse(data)
    if plan is not None:
        check_guarantees(data, plan)


# ----- the real omp opens what we write ------------------------------------------------------


def _oracle_check(files: list[Path], blobs: Path | None = None) -> None:
    listing = files[0].parent / "inputs.txt"
    listing.write_text("\n".join(map(str, files)) + "\n")
    extra = ["--blobs", str(blobs)] if blobs else []
    omp = subprocess.run([str(ORACLE / "omp-reference"), "load", "--timeout", "10", *extra, "--list", str(listing)],
                         check=True, capture_output=True, text=True).stdout
    ours = subprocess.run([sys.executable, str(ADAPTER), "load", *extra, *map(str, files)],
                          check=True, capture_output=True, text=True).stdout
    records = [json.loads(line) for line in omp.splitlines()]
    assert len(records) == len(files)
    for rec in records:
        assert rec["error"] is None and rec["view_errors"] == {} and rec["tree"] is not None, \
            (rec["file"], rec["error"], rec["view_errors"])
    a, b = files[0].parent / "omp.jsonl", files[0].parent / "ours.jsonl"
    a.write_text(omp)
    b.write_text(ours)
    cmp = subprocess.run([sys.executable, str(ORACLE / "compare.py"), str(a), str(b), "--only", "branch",
                          "--only", "context"], capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stdout[-3000:]


@pytest.mark.oracle
def test_omp_opens_every_repaired_test_input(tmp_path: Path) -> None:
    outs = []
    for name in [*sorted(CASES), "missing_blob.jsonl", "valid.jsonl"]:
        out = tmp_path / name
        apply_repair(plan_repair(DATA / name), out=out)
        outs.append(out)
    _oracle_check(outs)


@pytest.mark.oracle
def test_omp_opens_randomly_damaged_repaired_files(tmp_path: Path) -> None:
    files, rnd, outs = _valid_files(), random.Random(20260301), []
    for n in range(300):
        data = damage(files[n % len(files)], rnd, rnd.randint(1, 5))
        plan = _repair_or_refuse(data)
        if plan is None:
            continue
        out = tmp_path / f"{n:04d}.jsonl"
        out.write_bytes(plan.output)
        outs.append(out)
    assert len(outs) > 250
    _oracle_check(outs)


@pytest.mark.oracle
def test_omp_opens_repaired_damaged_corpus(tmp_path: Path, make_corpus: Any) -> None:
    corpus = make_corpus(23, 150)
    outs = []
    for src in sorted(corpus.glob("*.jsonl")):
        try:
            plan = plan_repair(src)
        except NotASessionError:
            continue
        check_guarantees(src.read_bytes(), plan, src.name)
        out = tmp_path / src.name
        out.write_bytes(plan.output)
        outs.append(out)
    _oracle_check(outs, corpus / "blobs")


def test_repaired_files_pass_the_validator_when_present(tmp_path: Path) -> None:
    """The validator is written alongside this module; checked only when it is there."""
    validate = pytest.importorskip("omp_session.ops.validate.check").validate
    bad = {}
    for name in [*sorted(CASES), "missing_blob.jsonl"]:
        out = tmp_path / name
        apply_repair(plan_repair(DATA / name), out=out)
        errors = [str(d) for d in validate(out, blobs_dir=tmp_path / "blobs") if d.severity is Severity.ERROR]
        if errors:
            bad[name] = errors
    assert not bad, bad


def test_an_existing_output_is_refused_without_force(tmp_path: Path) -> None:
    out = tmp_path / "fixed.jsonl"
    out.write_bytes(b"somebody's file\n")
    plan = plan_repair(DATA / "duplicate_line.jsonl")
    with pytest.raises(RepairError, match="already exists"):
        apply_repair(plan, out=out)
    assert out.read_bytes() == b"somebody's file\n"
    result = CliRunner().invoke(repair_cmd, [str(DATA / "duplicate_line.jsonl"), "-o", str(out)])
    assert result.exit_code == 1 and "already exists" in result.stderr
    assert CliRunner().invoke(repair_cmd, [str(DATA / "duplicate_line.jsonl"), "-o", str(out), "--force"]).exit_code == 0
    assert out.read_bytes() != b"somebody's file\n"
