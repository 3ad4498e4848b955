"""omp_session.ops.validate.check and ``omp-session validate`` (issue 4, spec S14).

Inputs live in tests/data/validate/ (written by make.py); oracle.json there records what the
real omp 18.2.3 does with each of them (record.py regenerates it), so no oracle is needed here.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import header, invoke, write_jsonl
from omp_session.cli.validate import validate as validate_cmd
from omp_session.diagnostics import Severity
from omp_session.ops.validate.check import validate

DATA = Path(__file__).parents[2] / "data" / "validate"
BLOBS = DATA / "blobs"
ORACLE = json.loads((DATA / "oracle.json").read_text())

# file -> (code, severity, line) that must be reported
EXPECTED = {
    "2026-01-01T00-00-00-000Z_other-id.jsonl": ("filename-id-mismatch", "info", 1),
    "assistant_error_string.jsonl": ("assistant-content-invalid", "error", 3),
    "assistant_no_content.jsonl": ("assistant-content-invalid", "error", 3),
    "assistant_string_content.jsonl": ("assistant-content-invalid", "warning", 3),
    "bom_malformed.jsonl": ("omp-stops-saving", "error", 1),
    "branch_summary_from.jsonl": ("branch-summary-from", "warning", 3),
    "compaction_missing.jsonl": ("compaction-ref-missing", "warning", 3),
    "compaction_off_path.jsonl": ("compaction-ref-off-path", "warning", 4),
    "crlf.jsonl": ("crlf", "info", 2),
    "custom_message.jsonl": ("custom-message-invalid", "warning", 3),
    "dup_cycle.jsonl": ("tree-cycle", "error", None),
    "duplicate_record.jsonl": ("duplicate-record", "warning", 4),
    "empty.jsonl": ("not-a-session", "error", None),
    "envelope.jsonl": ("entry-timestamp-invalid", "warning", 3),
    "extra_header.jsonl": ("extra-header", "warning", 3),
    "glued.jsonl": ("glued-records", "warning", 2),
    "header_not_first.jsonl": ("header-not-first", "error", 2),
    "invalid_utf8.jsonl": ("invalid-utf8", "warning", 3),
    "label_missing.jsonl": ("label-target-missing", "warning", 3),
    "leaf_label.jsonl": ("leaf-not-message", "info", 4),
    "leaf_model_usage.jsonl": ("leaf-not-message", "info", 4),
    "leaf_non_object.jsonl": ("leaf-not-message", "info", 4),
    "malformed.jsonl": ("malformed-record", "warning", 3),
    "message_without_message.jsonl": ("omp-cannot-open", "error", 3),
    "model_change_legacy.jsonl": ("model-change-legacy", "warning", 3),
    "multiline.jsonl": ("multiline-record", "info", 3),
    "no_cwd.jsonl": ("header-cwd-missing", "warning", 1),
    "no_final_newline.jsonl": ("no-final-newline", "warning", 2),
    "non_object.jsonl": ("non-object-record", "warning", 3),
    "not_png.jsonl": ("not-a-session", "error", None),
    "nul_tail.jsonl": ("nul-fill", "warning", 3),
    "null_record.jsonl": ("omp-cannot-open", "error", 3),
    "numeric_cwd.jsonl": ("omp-cannot-open", "error", 1),
    "parent_cycle.jsonl": ("parent-cycle", "warning", 3),
    "parent_empty.jsonl": ("entry-parent-invalid", "warning", 3),
    "parent_missing.jsonl": ("parent-missing", "warning", 3),
    "parent_session.jsonl": ("parent-session", "info", 1),
    "role_missing.jsonl": ("message-role-invalid", "warning", 3),
    "self_parent.jsonl": ("self-parent", "warning", 3),
    "text.jsonl": ("not-a-session", "error", None),
    "title_bad_source.jsonl": ("title-slot-invalid", "error", 1),
    "title_long.jsonl": ("title-slot-long", "warning", 1),
    "title_mismatch.jsonl": ("title-mismatch", "info", 2),
    "title_pad.jsonl": ("title-slot-pad", "warning", 1),
    "title_short.jsonl": ("title-slot-short", "error", 1),
    "tool_dangling.jsonl": ("tool-call-dangling", "warning", 3),
    "tool_orphan.jsonl": ("tool-result-orphan", "warning", 3),
    "trailing_garbage.jsonl": ("trailing-garbage", "warning", 2),
    "truncated.jsonl": ("truncated-record", "warning", 3),
    "truncated_content.jsonl": ("content-truncated", "info", 2),
    # where the first invalid byte is (a character cut by the truncation), not the file's first line
    "truncated_mid_utf8.jsonl": ("omp-stops-saving", "error", 3),
    "ttsr_mixed.jsonl": ("ttsr-rules-invalid", "warning", 3),
    "ttsr_number.jsonl": ("ttsr-rules-invalid", "error", 3),
    "usage_no_cost.jsonl": ("usage-cost-invalid", "error", 3),
    "version_future.jsonl": ("version-future", "info", 1),
    "version_string.jsonl": ("version-invalid", "warning", 1),
    "version_v1.jsonl": ("version-legacy", "warning", 1),
    "version_v2.jsonl": ("version-legacy", "info", 1),
}
EXTRA = {  # a second finding some inputs must also give
    "blobs.jsonl": [("blob-missing", "warning", 4), ("blob-hash-mismatch", "warning", 5),
                    ("blob-malformed-ref", "warning", 6)],
    "envelope.jsonl": [("entry-type-invalid", "warning", 3), ("entry-id-invalid", "warning", 3)],
    "dup_cycle.jsonl": [("duplicate-id", "warning", 4)],
    "bom_malformed.jsonl": [("bom", "warning", 1), ("malformed-record", "warning", 3)],
    "truncated_mid_utf8.jsonl": [("truncated-record", "warning", 3), ("invalid-utf8", "warning", 3)],
}


def found(name: str) -> list[tuple[str, str, int | None]]:
    return [(d.code, d.severity.value, d.line) for d in validate(DATA / name, blobs_dir=BLOBS)]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_check(name: str) -> None:
    got = found(name)
    assert EXPECTED[name] in got, got
    for extra in EXTRA.get(name, []):
        assert extra in got, got


def test_clean_file_has_no_findings() -> None:
    assert validate(DATA / "clean.jsonl", blobs_dir=BLOBS) == []


def test_omp_stops_saving_names_its_causes() -> None:
    [d] = [d for d in validate(DATA / "truncated_mid_utf8.jsonl", blobs_dir=BLOBS) if d.code == "omp-stops-saving"]
    text = (DATA / "truncated_mid_utf8.jsonl").read_bytes()
    assert d.offset == len(text) - 1  # the lead byte of the cut character
    assert "(invalid UTF-8 here)" in d.message and "(1 malformed record)" in d.message, d.message
    [d] = [d for d in validate(DATA / "bom_malformed.jsonl", blobs_dir=BLOBS) if d.code == "omp-stops-saving"]
    assert d.offset == 0 and "(a byte order mark)" in d.message, d.message


def test_location_fields() -> None:
    [d] = validate(DATA / "parent_missing.jsonl", blobs_dir=BLOBS)
    text = (DATA / "parent_missing.jsonl").read_bytes()
    assert d.offset == text.index(b'{"type":"message","id":"cccccccc"')
    assert d.entry_id == "cccccccc" and d.path == str(DATA / "parent_missing.jsonl")


@pytest.mark.parametrize("name", sorted(ORACLE))
def test_errors_agree_with_omp(name: str) -> None:
    """A file gets an error exactly when the real omp throws, hangs or loses writes on it, or
    (title-slot-short) when omp's next title update destroys it (spec S1.2.8, not a load effect)."""
    omp = ORACLE[name]
    omp_fails = bool(omp["open_error"] or omp["view_errors"] or omp["tree_hangs"] or omp["rewrite_fails"])
    errors = {c for c, s, _ in found(name) if s == "error"}
    if name == "empty.jsonl":  # omp writes a new session into an empty file; we call it not a session
        assert errors == {"not-a-session"} and not omp_fails
        return
    assert bool(errors - {"title-slot-short"}) == omp_fails, (omp, errors)
    if omp["tree_hangs"]:
        assert "tree-cycle" in errors
    if omp["rewrite_fails"]:
        assert "omp-stops-saving" in errors


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=600))
def test_never_raises_on_random_bytes(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(data)
    for d in validate(p, blobs_dir=BLOBS):
        assert isinstance(d.severity, Severity)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([*sorted(EXPECTED), "clean.jsonl", "blobs.jsonl"]), st.data())
def test_never_raises_on_damaged_files(tmp_path: Path, name: str, data: st.DataObject) -> None:
    raw = bytearray((DATA / name).read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["cut", "flip", "insert", "dup"]))
        at = data.draw(st.integers(0, len(raw)))
        if op == "cut":
            del raw[at:]
        elif op == "flip" and at < len(raw):
            raw[at] = data.draw(st.integers(0, 255))
        elif op == "insert":
            raw[at:at] = data.draw(st.sampled_from([b"\n", b"\x00", b"{", b"\xef\xbb\xbf", b"null\n", b"\r"]))
        elif op == "dup" and raw:
            raw += raw[raw.rfind(b"\n", 0, len(raw) - 1) + 1:]
    p = tmp_path / name
    p.write_bytes(bytes(raw))
    validate(p, blobs_dir=BLOBS)


def test_large_file_streams(tmp_path: Path) -> None:
    """Above 8 MiB the reader streams; the checks still find problems deep in the file."""
    lines = [(DATA / "clean.jsonl").read_bytes()]
    body = b"".join(b'{"type":"custom","customType":"x","id":"%08x","parentId":"%08x","timestamp":'
                    b'"2026-01-01T00:00:00.000Z","data":"%s"}\n' % (k + 1, k, b"y" * 200) for k in range(45000))
    p = tmp_path / "big.jsonl"
    p.write_bytes(lines[0] + b'{"type":"custom","customType":"x","id":"00000000","parentId":"bbbbbbbb",'
                  b'"timestamp":"2026-01-01T00:00:00.000Z"}\n' + body + b'{"type":"custom","id":"zz","parentId":'
                  b'"nowhere","timestamp":"2026-01-01T00:00:00.000Z","data":"\xff"}\n')
    codes = {d.code for d in validate(p, blobs_dir=BLOBS)}
    assert {"parent-missing", "invalid-utf8"} <= codes


def run(*args: str) -> tuple[int, str]:
    result = invoke(validate_cmd, *args)
    return result.exit_code, result.output


def test_cli_exit_codes() -> None:
    assert run(str(DATA / "clean.jsonl"))[0] == 0
    assert run(str(DATA / "parent_missing.jsonl"))[0] == 0  # warnings only
    assert run("--strict", str(DATA / "parent_missing.jsonl"))[0] == 1
    assert run(str(DATA / "null_record.jsonl"))[0] == 1
    assert run(str(DATA / "does-not-exist.jsonl"))[0] == 1  # "no such file", as every command says it
    assert run("--bogus")[0] == 2


def test_cli_human_output_shows_line() -> None:
    code, out = run(str(DATA / "null_record.jsonl"))
    assert code == 1 and "omp-cannot-open" in out and "line 3" in out and "null" in out


def test_cli_json() -> None:
    code, out = run("--json", str(DATA / "blobs.jsonl"))
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and {r["code"] for r in records} >= {"blob-missing", "blob-malformed-ref"}
    for r in records:
        assert list(r) == ["path", "code", "severity", "message", "line", "offset", "entry_id"]


def test_cli_directory_with_non_session(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes((DATA / "clean.jsonl").read_bytes())
    (tmp_path / "b.jsonl").write_bytes((DATA / "not_png.jsonl").read_bytes())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.jsonl").write_bytes((DATA / "null_record.jsonl").read_bytes())
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, out = run("--json", str(tmp_path))
    paths = {json.loads(line)["path"] for line in out.splitlines()}
    assert code == 1 and paths == {str(tmp_path / "b.jsonl")}
    code, out = run("--json", "--recursive", str(tmp_path))
    assert {json.loads(line)["code"] for line in out.splitlines()} == {"not-a-session", "omp-cannot-open"}
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # never writes


def test_cli_default_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert run()[0] == 2  # no session root yet


def test_archived_session_is_checked_as_the_plain_file(tmp_path: Path) -> None:
    import gzip

    plain = DATA / "malformed.jsonl"
    archived = tmp_path / "malformed.jsonl.gz"
    archived.write_bytes(gzip.compress(plain.read_bytes()))
    assert [(d.code, d.line) for d in validate(archived, blobs_dir=BLOBS)] == \
        [(d.code, d.line) for d in validate(plain, blobs_dir=BLOBS)]
    (tmp_path / "junk.jsonl.gz").write_bytes(b"\x1f\x8b not really gzip")
    code, out = run(str(tmp_path), "--json")
    found = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert code == 1 and {d["code"] for d in found} >= {"malformed-record", "not-a-session"}


def test_repair_refuses_an_archive(tmp_path: Path) -> None:
    import gzip

    from omp_session import RepairError, plan_repair

    archived = tmp_path / "s.jsonl.gz"
    archived.write_bytes(gzip.compress((DATA / "malformed.jsonl").read_bytes()))
    with pytest.raises(RepairError, match="gunzip"):
        plan_repair(archived)


_T = "2026-01-01T00:00:01.000Z"
_HEADER = header("s1", timestamp=_T)
_write = partial(write_jsonl, compact=False, ensure_ascii=True)  # json.dumps' spacing; str records as they are


def test_infinite_header_version_is_reported_not_raised(tmp_path: Path) -> None:
    # JSON numbers beyond double range parse as infinity; int(inf) raised OverflowError
    path = _write(tmp_path / "s.jsonl", ['{"type":"session","version":1e999,"id":"s1","timestamp":"' + _T + '","cwd":"/"}'])
    assert [(d.code, d.line) for d in validate(path)] == [("version-invalid", 1)]


def test_reused_tool_call_id_is_not_an_orphan(tmp_path: Path) -> None:
    # some providers number tool calls per turn ("call_0"): each result still answers the call above it
    def call(i: str, p: str) -> dict[str, object]:
        return {"type": "message", "id": i, "parentId": p, "timestamp": _T, "message": {
            "role": "assistant", "content": [{"type": "toolCall", "id": "call_0", "name": "x", "arguments": {}}],
            "usage": {"cost": {"total": 0}}}}

    def result(i: str, p: str) -> dict[str, object]:
        return {"type": "message", "id": i, "parentId": p, "timestamp": _T,
                "message": {"role": "toolResult", "toolCallId": "call_0", "content": []}}

    user = {"type": "message", "id": "u", "parentId": None, "timestamp": _T, "message": {"role": "user", "content": "hi"}}
    path = _write(tmp_path / "s.jsonl", [_HEADER, user, call("a1", "u"), result("r1", "a1"), call("a2", "r1"),
                                         result("r2", "a2")])
    assert validate(path) == []
    # the detailed path (a non-object record forces it) agrees
    path = _write(tmp_path / "t.jsonl", [_HEADER, user, call("a1", "u"), result("r1", "a1"), "1", call("a2", "r1"),
                                         result("r2", "a2")])
    assert [d.code for d in validate(path)] == ["non-object-record"]


def test_reader_findings_over_the_cap_are_summed_up(tmp_path: Path) -> None:
    from omp_session.ops.validate.report import MAX_PER_CODE

    path = _write(tmp_path / "s.jsonl", [_HEADER, *["null"] * (MAX_PER_CODE + 2)])
    found = [d for d in validate(path) if d.code == "omp-cannot-open"]
    assert len(found) == MAX_PER_CODE + 1
    assert found[-1].message == "2 more findings of this kind are not listed"


@pytest.mark.parametrize("stamp", ["2026-13-01T00:00:00.000Z", "2026-01-01T23:60:00.000Z", "2026-01-45T99:00:00.000Z"])
def test_iso_shaped_timestamp_date_parse_rejects(tmp_path: Path, stamp: str) -> None:
    user = {"type": "message", "id": "u", "parentId": None, "timestamp": stamp, "message": {"role": "user", "content": "hi"}}
    assert [(d.code, d.line) for d in validate(_write(tmp_path / "s.jsonl", [_HEADER, user]))] == [
        ("entry-timestamp-invalid", 2)]


def test_cli_prints_lone_surrogates_without_crashing(tmp_path: Path) -> None:
    # JSON allows "\ud800" escapes and JSON.stringify writes them; they cannot be encoded as UTF-8
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(_HEADER) + '\n{"type":"message","id":"\\ud800x","parentId":"gone","timestamp":"'
                    + _T + '","message":{"role":"user","content":"hi"}}\n')
    code, out = run(str(path))
    assert code == 0 and "parent-missing" in out and "1 file(s) checked" in out
    code, out = run("--json", str(path))
    assert code == 0 and json.loads(out)["entry_id"] == "\ud800x"


def test_cli_shows_no_compressed_bytes_for_an_archive(tmp_path: Path) -> None:
    import gzip

    archived = tmp_path / "s.jsonl.gz"
    archived.write_bytes(gzip.compress((DATA / "null_record.jsonl").read_bytes()))
    code, out = run(str(archived))
    assert code == 1 and "line 3" in out and "\ufffd" not in out


def test_truncation_notice_in_a_v1_file_names_no_made_up_id(tmp_path: Path) -> None:
    # v1 entries hold no ids: the ones omp's migration invents are random and name nothing on disk
    header = {"type": "session", "id": "s1", "timestamp": _T, "cwd": "/tmp"}
    user = {"type": "message", "timestamp": _T,
            "message": {"role": "user", "content": "x\n\n[Session persistence truncated large content]"}}
    found = [d for d in validate(_write(tmp_path / "s.jsonl", [header, user])) if d.code == "content-truncated"]
    assert [(d.line, d.entry_id) for d in found] == [(2, None)]


def test_long_title_slot_reports_its_real_width(tmp_path: Path) -> None:
    slot = '{"type":"title","v":1,"title":"' + "t" * 5000 + '","source":"user","updatedAt":"' + _T + '","pad":"x"}'
    found = validate(_write(tmp_path / "s.jsonl", [slot, _HEADER]))
    assert [(d.code, d.line) for d in found] == [("title-slot-long", 1), ("title-slot-pad", 1)]
    assert f"{len(slot) + 1} bytes" in found[0].message


_DEEP = "[" * 3000 + "]" * 3000  # valid JSON nested deeper than repr() can go


@pytest.mark.parametrize("record", [
    '{"type":"label","id":"a","parentId":"u","timestamp":"T","targetId":DEEP}',
    '{"type":"compaction","id":"a","parentId":"u","timestamp":"T","firstKeptEntryId":DEEP,"summary":"s"}',
    '{"type":"message","id":"a","parentId":"u","timestamp":"T","message":{"role":"toolResult","toolCallId":DEEP}}',
    '{"type":"message","id":"a","parentId":"u","timestamp":"T","message":{"role":"assistant","content":'
    '[{"type":"toolCall","id":DEEP}]}}',
])
def test_deeply_nested_references_are_reported_not_raised(tmp_path: Path, record: str) -> None:
    user = {"type": "message", "id": "u", "parentId": None, "timestamp": _T, "message": {"role": "user", "content": "x"}}
    path = _write(tmp_path / "s.jsonl", [_HEADER, user, record.replace("DEEP", _DEEP).replace('"T"', f'"{_T}"'),
                                         '{"type":"message","id":"z","parentId":"a","timestamp":"' + _T
                                         + '","message":{"role":"user","content":"x"}}'])
    found = validate(path)
    assert found and all(d.line == 3 and "object at 0x" not in d.message for d in found)


def test_deeply_nested_header_values_are_reported_not_raised(tmp_path: Path) -> None:
    deep = "[" * 1500 + "]" * 1500  # fits in the 4 KiB the title-slot check reads
    slot = '{"type":"title","v":' + deep + ',"title":"t","source":"user","updatedAt":"' + _T + '","pad":""}'
    assert "title-slot-invalid" in [d.code for d in validate(_write(tmp_path / "a.jsonl", [slot, _HEADER]))]
    header = {**_HEADER, "parentSession": "P"}
    path = _write(tmp_path / "b.jsonl", [json.dumps(header).replace('"P"', _DEEP)])
    assert [d.code for d in validate(path)] == ["parent-session"]


def test_tool_results_are_matched_to_a_call_on_their_own_branch(tmp_path: Path) -> None:
    # the call made right above the result (the common case), further up, on another branch, with
    # an id of another type, and made twice on two branches
    def entry(i: str, parent: str | None, message: dict[str, object]) -> dict[str, object]:
        return {"type": "message", "id": i, "parentId": parent, "timestamp": _T, "message": message}

    def call(*ids: object) -> dict[str, object]:
        return {"role": "assistant", "content": [{"type": "toolCall", "id": c, "name": "bash", "arguments": {}}
                                                 for c in ids],
                "usage": {"cost": {"total": 0}}}

    def result(call_id: object) -> dict[str, object]:
        return {"role": "toolResult", "toolCallId": call_id, "toolName": "bash", "content": [], "isError": False}

    rows = [_HEADER, entry("u", None, {"role": "user", "content": "x"}),
            entry("a1", "u", call("c1", "c2", "c3")),
            entry("r1", "a1", result("c1")),            # 4: right below its call
            entry("r2", "r1", result("c2")),            # 5: further up
            entry("b1", "u", call("c4", "c5")),         # 6: another branch from u
            entry("r3", "b1", result("c3")),            # 7: c3 was made on the other branch
            entry("r4", "b1", result(4)),               # 8: no call 4 (the number): "c4" is a string
            entry("a2", "r2", call("c5")),              # 9: c5 again, on the first branch
            entry("r5", "a2", result("c5")),            # 10
            entry("r6", "b1", result("c5")),            # 11
            entry("r7", "r3", result("c2")),            # 12: c2 only on the first branch
            entry("r8", "r5", result("c4"))]            # 13: c4 only on the other branch
    path = _write(tmp_path / "s.jsonl", [json.dumps(r) for r in rows])
    orphans = sorted(d.line for d in validate(path) if d.code == "tool-result-orphan")
    assert orphans == [7, 8, 12, 13]


def test_the_summary_line_counts_as_show_does(tmp_path: Path) -> None:
    # it said "2 warning(s), 1 info(s)" where show says "2 warnings, 1 info"
    path = tmp_path / "cut.jsonl"
    write_jsonl(path, [header()])
    with path.open("ab") as f:
        f.write(b'{"type":"message","id":"cc')
    result = invoke(validate_cmd, str(path))
    first = result.stdout.splitlines()[0]
    assert first == f"{path}: 2 warnings", result.stdout
