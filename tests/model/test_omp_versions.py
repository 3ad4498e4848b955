"""Which omp we imitate (issue 17): the version choice, and each S20 difference between omp 18.2.3
and 18.3.4 through the library, for both versions (18.2.9 derives as 18.2.3)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import omp_session
from builders import assistant, entry, header, run, stamp, tool_result, user, write_session
from omp_session.catalog.listing import find_most_recent_session, list_sessions
from omp_session.catalog.resolve import resolve_session
from omp_session.cli import cli
from omp_session.errors import SessionError
from omp_session.model import omp_version
from omp_session.ops.validate.check import validate
from omp_session.write.manager import SessionManager

OLD, NEW = "18.2.3", "18.3.4"


@pytest.fixture(autouse=True)
def _no_env_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(omp_version.ENV_VAR, raising=False)


# ----- the choice ----------------------------------------------------------------------------------


def test_default_is_the_newest_we_implement() -> None:
    assert omp_version.resolve() == "18.3.4" == omp_version.KNOWN[-1]


@pytest.mark.parametrize(("given", "resolved"), [("18.2.3", "18.2.3"), ("18.2.9", "18.2.9"), ("18.3.4", "18.3.4"),
                                                 ("18.2", "18.2.9"), ("18.3", "18.3.4"), (" 18.3 ", "18.3.4")])
def test_accepted_versions(given: str, resolved: str) -> None:
    assert omp_version.resolve(given) == resolved


@pytest.mark.parametrize("bad", ["18.2.4", "18", "19.0.0", "latest", "", "18.4"])
def test_anything_else_is_one_clear_error(bad: str, tmp_path: Path) -> None:
    with pytest.raises(SessionError, match=r"not one we imitate .*18\.2\.3, 18\.2\.9, 18\.3\.4"):
        omp_version.resolve(bad)
    with pytest.raises(SessionError):
        SessionManager.create(tmp_path, tmp_path / "s", omp=bad)


def test_env_var_chooses_and_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [entry("u1", None, message=user("q"))])
    monkeypatch.setenv("OMP_SESSION_OMP", "18.2")
    assert omp_session.open(path).omp == "18.2.9"
    assert omp_session.open(path, omp="18.3").omp == "18.3.4"  # an explicit choice wins
    monkeypatch.setenv("OMP_SESSION_OMP", "nine")
    with pytest.raises(SessionError, match="OMP_SESSION_OMP 'nine'"):
        omp_session.open(path)


# ----- S20.1: read side ---------------------------------------------------------------------------


def _anthropic_session(tmp_path: Path, *, first_kept: str, through: str | None = None) -> Path:
    compaction: dict[str, Any] = {"summary": "S", "shortSummary": "s", "firstKeptEntryId": first_kept,
                                  "tokensBefore": 100}
    if through is not None:
        compaction["providerReplayThroughEntryId"] = through
    compaction["preserveData"] = {"anthropicCompaction": {"provider": "anthropic", "content": "native"}}
    return write_session(tmp_path / "s.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user("one")),
        entry("a1", "u1", timestamp=stamp(2), message=assistant("r1")),
        entry("u2", "a1", timestamp=stamp(3), message=user("two")),
        entry("a2", "u2", timestamp=stamp(4), message=assistant("r2")),
        entry("c1", "a2", type="compaction", timestamp=stamp(5), **compaction),
        entry("u3", "c1", timestamp=stamp(6), message=user("three")),
    ])


def _ms(second: int) -> int:
    return 1_767_225_600_000 + second * 1000


@pytest.mark.parametrize("version", [OLD, "18.2.9"])
def test_anthropic_summary_is_dated_before_the_kept_entry_in_18_2(tmp_path: Path, version: str) -> None:
    s = omp_session.open(_anthropic_session(tmp_path, first_kept="u2"), omp=version)
    summary = s.build_session_context()["messages"][0]
    assert summary["timestamp"] == _ms(3) - 1 and "historyRewriteAt" not in summary


def test_anthropic_summary_keeps_its_own_time_in_18_3(tmp_path: Path) -> None:
    s = omp_session.open(_anthropic_session(tmp_path, first_kept="u2"), omp=NEW)
    summary = s.build_session_context()["messages"][0]
    assert summary["timestamp"] == _ms(5) and summary["historyRewriteAt"] == _ms(3) - 1
    # the transcript is the same in both versions
    assert s.build_session_context(transcript=True) == \
        omp_session.open(s.path, omp=OLD).build_session_context(transcript=True)


def _texts(context: dict[str, Any]) -> list[Any]:
    return [m.get("content") if isinstance(m.get("content"), str) else m["content"][0]["text"]
            for m in context["messages"][1:]]


def test_provider_replay_tail_is_kept_in_18_3_only(tmp_path: Path) -> None:
    path = _anthropic_session(tmp_path, first_kept="", through="a1")
    old = omp_session.open(path, omp=OLD).build_session_context()
    new = omp_session.open(path, omp=NEW).build_session_context()
    assert _texts(old) == ["three"]
    assert _texts(new) == ["two", "r2", "three"]
    assert new["messages"][0]["historyRewriteAt"] == _ms(3) - 1  # dated from the tail's first entry
    # the builder on a plain entry list (no windowing) says the same
    from omp_session.model.context import build_session_context

    s = omp_session.open(path)
    assert build_session_context(list(s.entries), s.raw_leaf, None, omp=NEW) == new
    assert build_session_context(list(s.entries), s.raw_leaf, None, omp=OLD) == old


def test_manager_derives_for_its_version(tmp_path: Path) -> None:
    path = _anthropic_session(tmp_path, first_kept="", through="a1")
    for version, count in ((OLD, 2), (NEW, 4)):
        with SessionManager.open(path, omp=version) as sm:
            assert sm.omp == version and len(sm.build_session_context()["messages"]) == count


# ----- S20.2: write side --------------------------------------------------------------------------


def _spilled(artifact: bool = True) -> dict[str, Any]:
    details: dict[str, Any] = {"serverName": "srv", "mcpToolName": "x", "structuredContent": {"big": [1, 2, 3]}}
    details["meta"] = {"truncation": {"artifactId": "art1"}} if artifact else {}
    return tool_result("spilled", name="mcp_x", details=details)


def _records(path: str | Path) -> list[Any]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()[2:]]


@pytest.mark.parametrize(("version", "kept"), [(OLD, True), ("18.2.9", True), (NEW, False)])
def test_spilled_mcp_structured_content_on_append(tmp_path: Path, version: str, kept: bool) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "s", omp=version)
    sm.append_message(user("q"))
    sm.append_message(assistant("a"))
    sm.append_message(_spilled())
    sm.append_message(_spilled(artifact=False))
    sm.flush()
    on_disk = [r["message"]["details"] for r in _records(sm.get_session_file() or "") if
               r["message"]["role"] == "toolResult"]
    assert ("structuredContent" in on_disk[0]) is kept
    assert "structuredContent" in on_disk[1]  # not spilled: kept by every version
    assert "structuredContent" in sm.get_entries()[2]["message"]["details"]  # memory keeps it
    sm.close()


def test_spilled_mcp_structured_content_on_rewrite(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", [
        entry("u1", None, message=user("q")), entry("a1", "u1", message=assistant("a")),
        entry("t1", "a1", message=_spilled())])
    for version, kept in ((OLD, True), (NEW, False)):
        with SessionManager.open(path, omp=version) as sm:
            sm.rewrite_entries()
        assert ("structuredContent" in _records(path)[2]["message"]["details"]) is kept


@pytest.mark.parametrize("version", [OLD, NEW])
def test_session_init_compaction_threshold_is_kept(tmp_path: Path, version: str) -> None:
    init = {"systemPrompt": "sp", "task": "t", "tools": ["read"],
            "compactionThreshold": {"thresholdPercent": 80, "thresholdTokens": 1000}}
    sm = SessionManager.create(tmp_path, tmp_path / "s", omp=version)
    sm.append_session_init(init)
    sm.append_message(user("q"))
    sm.append_message(assistant("a"))
    sm.close()
    with SessionManager.open(sm.get_session_file() or "", omp=version) as again:
        assert again.get_entries()[0]["compactionThreshold"] == init["compactionThreshold"]
    assert validate(sm.get_session_file() or "") == []  # a field we know: no newer-omp finding


@pytest.mark.parametrize(("version", "moved"), [(OLD, False), (NEW, True)])
def test_new_session_in_another_directory(tmp_path: Path, version: str, moved: bool) -> None:
    sm = SessionManager.create(tmp_path, tmp_path / "s", omp=version)
    other = tmp_path / "other" / "deeper"
    new_file = sm.new_session(session_dir=other)
    assert new_file is not None and os.path.isfile(new_file)
    assert (Path(new_file).parent == other) is moved
    sm.close()


# ----- S20.3.9: listing and resume ---------------------------------------------------------------


def _bucket(tmp_path: Path) -> Path:
    bucket = tmp_path / "bucket"
    write_session(bucket / "2026-01-01T00-00-01-000Z_aaa.jsonl",
                  [entry("u1", None, message=user("q")), entry("a1", "u1", message=assistant("a"))],
                  head=header("aaa"))
    write_session(bucket / "2026-01-01T00-00-02-000Z_bbb.jsonl", [entry("u1", None, message=user("only"))],
                  head=header("bbb"))
    os.utime(bucket / "2026-01-01T00-00-01-000Z_aaa.jsonl", (1_000_000, 1_000_000))
    os.utime(bucket / "2026-01-01T00-00-02-000Z_bbb.jsonl", (2_000_000, 2_000_000))
    return bucket


def test_listing_has_assistant_turns_in_18_3_only(tmp_path: Path) -> None:
    bucket = _bucket(tmp_path)
    new = {i.id: i.to_dict() for i in list_sessions(bucket, pins=(), omp=NEW)}
    old = {i.id: i.to_dict() for i in list_sessions(bucket, pins=(), omp=OLD)}
    assert (new["aaa"]["assistantTurns"], new["aaa"]["isEmptySession"]) == (1, False)
    assert (new["bbb"]["assistantTurns"], new["bbb"]["isEmptySession"]) == (0, True)
    assert all("assistantTurns" not in d and "isEmptySession" not in d for d in old.values())


def test_latest_and_continue_skip_untitled_sessions_without_assistant_turn_in_18_3(tmp_path: Path) -> None:
    bucket = _bucket(tmp_path)
    newest, with_turn = (str(bucket / f"2026-01-01T00-00-0{n}-000Z_{i}.jsonl") for n, i in ((2, "bbb"), (1, "aaa")))
    assert find_most_recent_session(bucket, omp=OLD) == newest
    assert find_most_recent_session(bucket, omp=NEW) == with_turn
    with SessionManager.continue_recent(tmp_path, bucket, omp=NEW) as sm:
        assert sm.get_session_file() == with_turn
    with SessionManager.continue_recent(tmp_path, bucket, omp=OLD) as sm:
        assert sm.get_session_file() == newest
    root = tmp_path / "root"
    from omp_session.paths import project_dir_name

    (root / project_dir_name(str(tmp_path))).parent.mkdir(parents=True)
    os.rename(bucket, root / project_dir_name(str(tmp_path)))
    assert resolve_session("latest", str(tmp_path), root=root, omp=OLD).endswith("_bbb.jsonl")
    assert resolve_session("latest", str(tmp_path), root=root, omp=NEW).endswith("_aaa.jsonl")


def test_a_titled_session_without_assistant_turn_is_not_skipped(tmp_path: Path) -> None:
    bucket = tmp_path / "bucket"
    write_session(bucket / "2026-01-01T00-00-02-000Z_ccc.jsonl", [entry("u1", None, message=user("q"))],
                  head=header("ccc", title="named"))
    assert find_most_recent_session(bucket, omp=NEW) is not None


# ----- the CLI ------------------------------------------------------------------------------------


def test_cli_omp_option_selects_the_derivation(tmp_path: Path) -> None:
    path = str(_anthropic_session(tmp_path, first_kept="u2"))
    code, out_new, _ = run(cli, "--omp", "18.3", "context", "--json", path)
    assert code == 0
    code, out_old, _ = run(cli, "--omp", "18.2.3", "context", "--json", path)
    assert code == 0
    assert "historyRewriteAt" in out_new and "historyRewriteAt" not in out_old
    code, out_default, _ = run(cli, "context", "--json", path)  # the choice lasted one command
    assert out_default == out_new


def test_cli_bad_omp_is_a_usage_error(tmp_path: Path) -> None:
    code, _out, err = run(cli, "--omp", "17", "show", str(tmp_path))
    assert code == 2 and "'17' is not an omp version we imitate" in err


def test_cli_bad_env_var_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_session(tmp_path / "s.jsonl", [entry("u1", None, message=user("q"))])
    monkeypatch.setenv("OMP_SESSION_OMP", "x")
    code, _out, err = run(cli, "context", str(path))
    assert code == 1 and err.count("\n") == 1 and "OMP_SESSION_OMP 'x'" in err


# ----- detect and tell: a file from an omp newer than any we know ---------------------------------


def _from_the_future(tmp_path: Path, extra_types: int = 1) -> Path:
    entries = [entry("u1", None, timestamp=stamp(1), message=user("q"), mood="curious"),
               entry("a1", "u1", timestamp=stamp(2), message=assistant("a"))]
    parent = "a1"
    for n in range(extra_types):
        entries.append(entry(f"f{n}", parent, type=f"future_{n}", timestamp=stamp(3), payload={"n": n}))
        parent = f"f{n}"
    entries.append(entry("l1", parent, type="label", timestamp=stamp(4), targetId="u1", label="x", color="red"))
    return write_session(tmp_path / "s.jsonl", entries, head=header("fut", version=4))


def test_newer_features_are_one_info_finding(tmp_path: Path) -> None:
    path = _from_the_future(tmp_path)
    found = [d for d in validate(path) if d.code == "newer-omp-features"]
    assert len(found) == 1 and found[0].severity == "info"
    assert ("header version 4, field message.mood, entry type 'future_0', field label.color"
            in found[0].message)
    assert found[0].line == 1  # the header
    assert not [d for d in validate(path) if d.severity == "error"]


def test_only_the_first_few_are_named(tmp_path: Path) -> None:
    found = [d for d in validate(_from_the_future(tmp_path, extra_types=9)) if d.code == "newer-omp-features"]
    assert len(found) == 1 and "and 7 more" in found[0].message


def test_a_file_of_a_known_omp_has_no_such_finding(tmp_path: Path) -> None:
    path = _anthropic_session(tmp_path, first_kept="", through="a1")
    assert [d for d in validate(path) if d.code == "newer-omp-features"] == []


def test_newer_features_load_losslessly_and_show_tells(tmp_path: Path) -> None:
    path = _from_the_future(tmp_path)
    before = path.read_bytes()
    s = omp_session.open(path)
    assert s.get_entry("u1")["mood"] == "curious" and s.get_entry("f0")["payload"] == {"n": 1 - 1}
    with SessionManager.open(path, omp=OLD) as sm:
        sm.rewrite_entries()
    assert path.read_bytes().endswith(before)  # every record written back as it was (after a title slot)
    code, out, _ = run(cli, "show", str(path))
    assert code == 0 and "newer-omp-features" in out and "future_0" in out
    code, out, _ = run(cli, "validate", str(path))
    assert "newer-omp-features" in out
