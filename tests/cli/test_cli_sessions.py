"""list, cat and SESSION resolution (ids, prefixes, latest), and docs/cli.md covering every command."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session.catalog.resolve import resolve_session
from omp_session.cli import cli
from omp_session.errors import AmbiguousSessionError, SessionNotFoundError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.write.manager import SessionManager

ROOT = Path(__file__).resolve().parents[2]
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "done"}], "provider": "p", "model": "m",
             "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
             "stopReason": "stop", "timestamp": 2}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def make(cwd: Path, text: str, title: str | None = None) -> SessionManager:
    sm = SessionManager.create(str(cwd), blob_store=MemoryBlobStore())
    sm.append_message({"role": "user", "content": text, "timestamp": 1})
    sm.append_message(ASSISTANT)
    if title:
        sm.set_session_name(title, "user")
    sm.close()
    return sm


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_resolve_by_path_id_prefix_and_latest(project: Path) -> None:
    first = make(project, "one")
    time.sleep(0.01)
    second = make(project, "two")
    os.utime(first.get_session_file() or "", (1, 1))  # the other one is the most recent
    assert resolve_session(second.get_session_id()) == second.get_session_file()
    assert resolve_session(second.get_session_id()[:30].upper()) == second.get_session_file()
    assert resolve_session("latest") == second.get_session_file()
    assert resolve_session(first.get_session_file() or "") == first.get_session_file()
    with pytest.raises(SessionNotFoundError):
        resolve_session("ffffffff-nothing")
    with pytest.raises(AmbiguousSessionError) as err:
        resolve_session("20")  # both file names start with the year
    assert len(err.value.candidates) == 2


def test_list_shows_this_projects_sessions_with_stable_fields(project: Path, tmp_path: Path) -> None:
    a = make(project, "fix the importer", title="Importer")
    b = make(project, "write docs")
    other = tmp_path / "other"
    other.mkdir()
    make(other, "elsewhere")
    sub_dir = Path((a.get_session_file() or "")[: -len(".jsonl")])
    sub_dir.mkdir()
    sub = SessionManager.open(sub_dir / "agent-1.jsonl", blob_store=MemoryBlobStore(), initial_cwd=str(project))
    sub.append_message({"role": "user", "content": "subtask", "timestamp": 1})
    sub.close()
    code, out, _ = run("list", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and {r["path"] for r in rows if r["subagent_of"] is None} == {a.get_session_file(),
                                                                                b.get_session_file()}
    assert set(rows[0]) == {"path", "id", "title", "cwd", "created", "modified", "messages", "size", "status",
                            "first_message", "parent_session", "subagent_of"}
    subs = [r for r in rows if r["subagent_of"]]
    assert len(subs) == 1 and subs[0]["subagent_of"] == a.get_session_file()
    assert next(r for r in rows if r["path"] == a.get_session_file())["title"] == "Importer"
    code, out, _ = run("list", "--all", "--json", "--no-subagents")
    assert code == 0 and len(json.loads(out)) == 3
    code, out, _ = run("list", "--jsonl", "--grep", "IMPORT*", "--no-subagents")
    assert [json.loads(x)["path"] for x in out.splitlines()] == [a.get_session_file()]
    code, out, _ = run("list", "--jsonl", "--limit", "1", "--no-subagents")
    assert len(out.splitlines()) == 1
    code, out, _ = run("list", "--since", "not a date")
    assert code == 2
    code, out, _ = run("list")
    assert code == 0 and "Importer" in out


def test_cat_prints_records_as_stored(project: Path) -> None:
    sm = make(project, "hello")
    path = sm.get_session_file() or ""
    code, out, _ = run("cat", path, "--whole-file")
    assert code == 0 and out == Path(path).read_text()  # every byte, the title slot included (issue 15)
    code, out, _ = run("cat", sm.get_session_id(), "--type", "message")
    assert [json.loads(x)["type"] for x in out.splitlines()] == ["message", "message"]
    code, _, err = run("cat", "no-such-session")
    assert code == 1 and "no session matches" in err


def test_every_command_is_in_docs_cli() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    for name in cli.commands:
        assert f"omp-session {name}" in text, name


SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"


def test_show_reports_branches_models_and_cost() -> None:
    code, out, _ = run("show", str(SAMPLE), "--json")
    info = json.loads(out)
    assert code == 0 and info["branches"] == 2 and info["leaf_id"] in info["branch_tips"]
    assert info["entry_types"]["message"] == 8 and info["models"] == ["anthropic/claude-sonnet-4-5"]
    assert info["usage"]["all"]["cost"] > info["usage"]["branch"]["cost"] > 0
    assert info["labels"] == {"52592a2f": "diagnosis"} and info["diagnostics_summary"]["error"] == 0


def test_tree_depth_and_only_messages() -> None:
    _, out, _ = run("tree", str(SAMPLE), "--json")
    everything = json.loads(out)
    _, out, _ = run("tree", str(SAMPLE), "--json", "--only-messages")
    messages = json.loads(out)
    assert {r["type"] for r in messages} <= {"message", "compaction", "branch_summary", "custom_message"}
    assert len(messages) < len(everything) and messages[0]["depth"] == 0
    _, out, _ = run("tree", str(SAMPLE), "--json", "--depth", "0")  # the run only: the side branch goes
    assert len(json.loads(out)) == len(everything) - 4 and max(r["fork_depth"] for r in json.loads(out)) == 0


def test_context_at_another_leaf() -> None:
    _, out, _ = run("context", str(SAMPLE), "--json")
    _, other, _ = run("context", str(SAMPLE), "--json", "--leaf", "a1b45091")
    assert json.loads(out)["messages"] != json.loads(other)["messages"]
    code, _, err = run("context", str(SAMPLE), "--leaf", "nope")
    assert code == 1 and "no entry nope" in err


def test_long_output_is_paged_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    import pydoc

    from omp_session.cli import _style

    calls: list[str] = []
    monkeypatch.setattr(pydoc, "pager", calls.append)
    run("tree", str(SAMPLE))
    assert calls == []  # not a terminal: never paged
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    _style.page("text\n")
    assert calls == ["text"]
    monkeypatch.setenv("OMP_SESSION_PAGER", "0")
    _style.page("more\n")
    assert calls == ["text"] and capsys.readouterr().out == "more\n"


def test_a_repeated_listing_is_reprinted_until_a_file_changes(project: Path) -> None:
    a = make(project, "first")
    code, first, _ = run("list", "--jsonl")
    code2, again, _ = run("list", "--jsonl")
    assert code == code2 == 0 and first == again
    sm = SessionManager.open(a.get_session_file() or "", blob_store=MemoryBlobStore())
    sm.append_message({"role": "user", "content": "more", "timestamp": 3})
    sm.close()
    _, changed, _ = run("list", "--jsonl")
    assert json.loads(changed)["size"] > json.loads(first)["size"]
    b = make(project, "second")
    _, grown, _ = run("list", "--jsonl")
    assert {json.loads(x)["path"] for x in grown.splitlines()} == {a.get_session_file(), b.get_session_file()}
    Path(b.get_session_file() or "").unlink()
    _, shrunk, _ = run("list", "--jsonl")
    assert [json.loads(x)["path"] for x in shrunk.splitlines()] == [a.get_session_file()]


def test_list_goes_on_past_files_that_are_not_sessions(project: Path) -> None:
    a = make(project, "good")
    bad = Path(a.get_session_file() or "").with_name("broken.jsonl")
    bad.write_bytes(b"\x89PNG not a session")
    code, out, err = run("list", "--jsonl")
    assert code == 0 and [json.loads(x)["path"] for x in out.splitlines()] == [a.get_session_file()]
    assert "skipped 1 file" in err and "broken.jsonl" in err


def test_cat_of_a_directory_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["cat", str(tmp_path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)  # not a traceback
    assert result.stderr.startswith("omp-session: ") and "directory" in result.stderr
    assert result.stderr.count("\n") == 1


def test_sort_created_orders_by_the_header_timestamp_not_the_mtime(project: Path) -> None:
    made = []
    for text in ("first", "second", "third"):
        made.append(make(project, text).get_session_file() or "")
        time.sleep(0.01)  # distinct header timestamps (ms)
    for path, mtime in zip(made, (3e9, 1e9, 2e9), strict=True):  # modified order: first, third, second
        os.utime(path, (mtime, mtime))
    code, out, _ = run("list", "--json", "--sort", "created", "--no-cache")
    assert code == 0 and [r["first_message"] for r in json.loads(out)] == ["third", "second", "first"]
    code, out, _ = run("list", "--json", "--sort", "created", "--reverse", "--no-cache")
    assert code == 0 and [r["first_message"] for r in json.loads(out)] == ["first", "second", "third"]


def test_an_unreadable_subagent_folder_is_not_a_traceback(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = make(project, "parent")
    folder = Path((a.get_session_file() or "")[: -len(".jsonl")])
    folder.mkdir()  # omp's artifacts folder, here one we may not read (another user's, or deleted meanwhile)
    real = os.listdir

    def listdir(path: str) -> list[str]:
        if os.fspath(path) == os.fspath(folder):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    code, out, _ = run("list", "--jsonl")
    assert code == 0 and [json.loads(x)["path"] for x in out.splitlines()] == [a.get_session_file()]


def test_validate_and_repair_take_ids_prefixes_and_latest(project: Path) -> None:
    sm = make(project, "check me")
    path, sid = sm.get_session_file() or "", sm.get_session_id()
    for arg in (sid, sid[:8], "latest"):
        code, out, err = run("validate", arg)
        assert code == 0 and path in out and "1 file(s) checked" in out, err
        code, out, err = run("repair", arg)
        assert code == 0 and out == f"{path}: nothing to repair\n", err
    code, _, err = run("validate", "zzzz-none")
    assert code == 1 and err.startswith("omp-session: no session matches 'zzzz-none'")
    code, _, err = run("repair", "nothere.jsonl")
    assert code == 1 and err == "omp-session: nothere.jsonl: no such file\n"


def test_list_sort_cost_turns_on_stats(project: Path) -> None:
    make(project, "cheap")
    code, out, err = run("list", "--sort", "cost", "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert "cost" in row and "entries" in row  # the --stats fields


def test_list_and_search_take_project_and_the_old_cwd_spelling(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    make(other, "elsewhere")
    for flag in ("--project", "--cwd"):
        code, out, err = run("list", flag, str(other), "--json")
        assert code == 0 and [r["first_message"] for r in json.loads(out)] == ["elsewhere"], err
        code, out, err = run("search", "elsewhere", flag, str(other), "--json",
                             "--index", str(tmp_path / f"i{flag}.sqlite"))
        assert code == 0 and len(json.loads(out)) >= 1, err


def test_latest_with_all_is_the_newest_session_of_every_project(project: Path, tmp_path: Path) -> None:
    here = make(project, "here")
    other = tmp_path / "other"
    other.mkdir()
    there = make(other, "there")
    os.utime(here.get_session_file() or "", (10, 10))
    os.utime(there.get_session_file() or "", (20, 20))
    assert resolve_session("latest") == here.get_session_file()
    assert resolve_session("latest", every_project=True) == there.get_session_file()
    for args in (["show", "latest", "--all", "--json"], ["show", "--all", "latest", "--json"]):
        code, out, err = run(*args)
        assert code == 0 and json.loads(out)["path"] == there.get_session_file(), err
    code, out, _ = run("show", "latest", "--json")
    assert json.loads(out)["path"] == here.get_session_file()
    for command in (["tail"], ["context"], ["tree"], ["export", "--format", "md"], ["repair"], ["validate"]):
        code, out, err = run(*command[:1], "latest", "--all", *command[1:])
        if command[0] in ("repair", "validate"):
            assert code == 0 and (there.get_session_file() or "") in out, (command, err)
        else:
            assert code == 0 and "there" in out and "here" not in out.replace("there", ""), (command, out, err)
    # a prefix with --all is looked for in every project at once: both ids start alike here
    code, _, err = run("show", "--all", "latest-none")
    assert code == 1 and "in any project under" in err


def test_cat_refuses_its_old_all_rather_than_copy_one_branch(project: Path) -> None:
    make(project, "x")
    code, out, err = run("cat", "latest", "--all")
    assert code == 2 and out == "" and "--whole-file" in err and err.count("\n") == 1


def test_latest_outside_any_project_names_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``latest`` is the current project's newest: run from another folder it finds nothing, and
    the one line says that ``--all`` looks in every project."""
    from builders import entry, header, user, write_session

    agent = tmp_path / "agent"
    write_session(agent / "sessions" / "--w--" / "2026-01-01T00-00-00-000Z_s1.jsonl",
                  [entry("u1", None, message=user("hello"))], head=header("s1", cwd="/w"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["show", "latest"])
    assert r.exit_code == 1
    assert r.stderr.strip().endswith("(--all: the newest of every project)") and len(r.stderr.splitlines()) == 1
    r = CliRunner().invoke(cli, ["show", "latest", "--all"])
    assert r.exit_code == 0 and "s1" in r.stdout
    # cat's --all is its old --whole-file, refused: no hint to it
    r = CliRunner().invoke(cli, ["cat", "latest"])
    assert r.exit_code == 1 and "--all" not in r.stderr and "no session for this project" in r.stderr


@pytest.mark.parametrize("args", [["redact", "latest", "--all", "--check"],
                                  ["externalize", "latest", "--all", "--dry-run"],
                                  ["prune", "latest", "--all", "--keep-branch", "--dry-run"]])
def test_all_finds_latest_in_every_project_for_the_writing_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    args: list[str]) -> None:
    """redact, externalize and prune take --all for SESSION as every other command does."""
    from builders import assistant, entry, header, user, write_session

    agent = tmp_path / "agent"
    write_session(agent / "sessions" / "--w--" / "2026-01-01T00-00-00-000Z_s1.jsonl",
                  [entry("u1", None, message=user("key ghp_R4nD0mT0k3nV4lu3F0rT3st1ngPurp0s3sXy")),
                   entry("a1", "u1", message=assistant("ok"))], head=header("s1", cwd="/w"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, args)
    assert "no session for this project" not in r.stderr, r.stderr
    assert r.exit_code == (1 if args[0] == "redact" else 0), (r.stdout, r.stderr)
    if args[0] == "redact":
        assert "github-token" in r.stdout
