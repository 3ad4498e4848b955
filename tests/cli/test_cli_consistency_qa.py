"""Commands that behaved unlike their siblings (a QA pass over the command line): a missing file,
a directory without sessions, a closed pipe, repair's refusals, export's flags, list's empty
answer, search's resume line, ``stats -o -``, a group without a subcommand."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import entry, header, project_session, stamp, user, write_session
from omp_session.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="omp-session")
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, Path]:
    """One session of the project the test runs in: (its id, its file, the project's folder)."""
    return project_session(tmp_path, monkeypatch, "my work", "the pagination is broken", "fixed the pagination")


def _damaged(tmp_path: Path) -> Path:
    """A session with a line repair quarantines."""
    path = write_session(tmp_path / "bad.jsonl", [entry("u1", None, timestamp=stamp(1), message=user("hi"))])
    with path.open("a", encoding="utf-8") as f:
        f.write("not json at all\n")
    return path


# ----- 1. validate: a missing file is the shared one-line error --------------------------------


@pytest.mark.parametrize("command", ["validate", "repair"])
def test_a_missing_file_is_the_shared_one_line_error(command: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(command, "nope.jsonl") == (1, "", "omp-session: nope.jsonl: no such file\n")
    assert run("show", "nope.jsonl") == (1, "", "omp-session: nope.jsonl: no such file\n")


def test_validate_refuses_a_missing_file_among_others_before_checking_any(tmp_path: Path) -> None:
    code, out, err = run("validate", str(SAMPLE), str(tmp_path / "gone.jsonl"))
    assert (code, out, err) == (1, "", f"omp-session: {tmp_path / 'gone.jsonl'}: no such file\n")


def test_validate_a_directory_named_like_a_session_without_one_is_an_error(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.jsonl").mkdir()
    code, out, err = run("validate", "x.jsonl")
    assert (code, out) == (1, "")
    assert err.startswith("omp-session: x.jsonl: no session file") and err.count("\n") == 1


# ----- 2. validate DIR: sessions one folder down -------------------------------------------------


def test_validate_a_directory_whose_sessions_are_one_folder_down_says_so(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    write_session(root / "--work--" / "s.jsonl", [entry("u1", None, timestamp=stamp(1), message=user("hi"))])
    code, out, err = run("validate", str(root))
    assert (code, out) == (1, "")
    assert err == f"omp-session: {root}: no session file here (the sessions are in its subfolders: add " \
                  "-r/--recursive)\n"
    code, out, _err = run("validate", "-r", str(root))
    assert code == 0 and out.endswith("1 file(s) checked, no errors\n")


def test_validate_an_empty_directory_is_an_error(tmp_path: Path) -> None:
    code, _out, err = run("validate", str(tmp_path))
    assert (code, err) == (1, f"omp-session: {tmp_path}: no session file here\n")
    code, _out, err = run("validate", "-r", str(tmp_path))
    assert (code, err) == (1, f"omp-session: {tmp_path}: no session file in it or its subfolders\n")


# ----- 3. a closed pipe ends every command quietly with status 0 --------------------------------


@pytest.mark.parametrize("args", [
    ["validate", str(SAMPLE)], ["cat", str(SAMPLE)], ["export", str(SAMPLE), "--format", "md"],
    ["show", str(SAMPLE)], ["tree", str(SAMPLE)], ["context", str(SAMPLE)], ["list", "--all"],
    ["size", str(SAMPLE)], ["search", "pagination"], ["stats", "--all"], ["--version"], ["--help"],
    ["blobs", "--help"],
])
def test_a_closed_pipe_ends_quietly_with_status_0(args: list[str], project: tuple[str, str, Path]) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: the first write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "omp_session", *args], stdout=writer, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "OMP_SESSION_PAGER": "0"})
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (0, "")


# ----- 4. repair -o: the CLI's words, and a missing folder --------------------------------------


def test_repair_onto_itself_names_the_cli_option(tmp_path: Path) -> None:
    bad = _damaged(tmp_path)
    before = bad.read_bytes()
    code, out, err = run("repair", str(bad), "-o", str(bad))
    assert (code, out) == (1, "")
    assert err == f"omp-session: {bad}: is the file being repaired; use --in-place to replace it\n"
    assert "in_place" not in err and bad.read_bytes() == before


def test_repair_into_a_missing_folder_says_so_and_writes_nothing(tmp_path: Path) -> None:
    bad = _damaged(tmp_path)
    out_path = tmp_path / "missing" / "dir" / "x.jsonl"
    code, out, err = run("repair", str(bad), "-o", str(out_path))
    assert (code, out) == (1, "")
    assert err == f"omp-session: {out_path}: the folder {out_path.parent} does not exist; nothing was written\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


# ----- 5. export --all-branches --format json ----------------------------------------------------


def test_export_json_refuses_all_branches_as_html_does() -> None:
    code, out, err = run("export", str(SAMPLE), "--all-branches", "--format", "json")
    assert (code, out) == (2, "")
    assert err.startswith("omp-session export: --all-branches applies to md") and err.count("\n") == 1
    assert run("export", str(SAMPLE), "--all-branches", "--format", "html")[0] == 2
    assert run("export", str(SAMPLE), "--all-branches", "--format", "md")[0] == 0


# ----- 6. list: filters that match nothing ------------------------------------------------------


@pytest.mark.parametrize("args", [["--grep", "zzzz"], ["--until", "2000-01-01"]])
def test_list_says_the_filters_match_nothing(args: list[str], project: tuple[str, str, Path]) -> None:
    from omp_session.paths import sessions_dir

    code, out, _err = run("list", "--all", *args)
    assert (code, out) == (0, f"no session matches the filters (1 session under {sessions_dir()})\n")
    code, out, _err = run("list", *args)
    assert (code, out) == (0, f"no session matches the filters (1 session under {sessions_dir()} for this "
                              "project)\n")


def test_list_without_sessions_still_says_there_are_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    code, out, _err = run("list", "--all", "--grep", "zzzz")
    assert (code, out.startswith("no sessions under ")) == (0, True)


# ----- 7. search prints the command resume prints -----------------------------------------------


def test_search_prints_the_resume_line_of_resume(project: tuple[str, str, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    sid, _path, work = project
    monkeypatch.delenv("COLUMNS", raising=False)
    code, resume_line, _err = run("resume", sid[:8])
    assert code == 0 and resume_line == f"cd {shlex.quote(str(work))} && omp --resume {sid}\n"
    code, out, _err = run("search", "pagination", "--index", str(tmp_path / "i.db"))
    assert code == 0
    shown = [line.strip() for line in out.splitlines() if line.strip().startswith("resume:")]
    assert shown and set(shown) == {"resume: " + resume_line.strip()}


def test_search_names_a_session_kept_outside_its_bucket_by_path(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    root = tmp_path / "elsewhere"
    path = write_session(root / "not-the-bucket" / "s.jsonl",
                         [entry("u1", None, timestamp=stamp(1), message=user("pagination"))],
                         head=header("abc", cwd="/home/dev/app"))
    code, out, _err = run("search", "pagination", "--root", str(root), "--index", str(tmp_path / "i.db"))
    assert code == 0
    assert f"resume: cd /home/dev/app && omp --resume {path.resolve()}" in out


# ----- 8. stats -o - -----------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_stats_dash_output_is_stdout_in_the_chosen_format(flag: str, project: tuple[str, str, Path],
                                                          tmp_path: Path) -> None:
    code, plain, _ = run("stats", "--all", flag)
    assert code == 0
    code, out, err = run("stats", "--all", flag, "-o", "-")
    assert (code, out, err) == (0, plain, "")
    if flag == "--json":
        json.loads(out)
    assert not (tmp_path / "my work" / "-").exists()


def test_stats_dash_output_without_a_format_is_a_usage_error(project: tuple[str, str, Path]) -> None:
    code, out, err = run("stats", "--all", "-o", "-")
    assert (code, out) == (2, "")
    assert "--json or --csv" in err and err.count("\n") == 1


# ----- 9. a group without a subcommand; a missing choice ----------------------------------------


@pytest.mark.parametrize("args", [["blobs"], []])
def test_a_group_without_a_subcommand_prints_its_help(args: list[str]) -> None:
    code, out, err = run(*args)
    help_code, help_out, _ = run(*args, "--help")
    assert (code, out, err) == (0, help_out, "") and help_code == 0
    assert out.startswith("Usage: ")


def test_a_bare_omp_session_prints_the_help() -> None:
    done = subprocess.run([sys.executable, "-m", "omp_session"], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "") and done.stdout.startswith("Usage: omp-session ")


def test_a_missing_choice_is_one_line() -> None:
    code, out, err = run("completion")
    assert (code, out) == (2, "")
    assert err == "omp-session completion: Missing argument '{bash|zsh|fish}'. Choose from: bash, zsh, fish " \
                  "(see 'omp-session completion --help')\n"


# ----- review: what the closed-pipe handling and the one-line usage errors missed ----------------


def _closed_pipe(*args: str) -> tuple[int, str]:
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run([sys.executable, "-m", "omp_session", *args], stdout=writer, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "OMP_SESSION_PAGER": "0"})
    finally:
        os.close(writer)
    return done.returncode, done.stderr


@pytest.mark.parametrize("args", [[], ["export", str(SAMPLE), "--format", "json", "-o", "-"],
                                  ["pack", str(SAMPLE), "-o", "-"]])
def test_a_closed_pipe_ends_the_bare_help_and_export_to_dash_quietly(args: list[str],
                                                                     project: tuple[str, str, Path]) -> None:
    assert _closed_pipe(*args) == (0, "")


@pytest.mark.parametrize("command", ["validate", "cat", "export --format md"])
def test_a_stdout_that_is_not_open_at_all_is_no_traceback(project: tuple[str, str, Path], command: str) -> None:
    # `omp-session validate S >&-` (a daemon, a cron job): Python has no sys.stdout at all; what
    # goes to stdout goes nowhere, as click's own echo does then (cat and export wrote to
    # sys.stdout.buffer: a traceback)
    done = subprocess.run(["sh", "-c", f'"$0" -m omp_session {command.split()[0]} "$1" {command.partition(" ")[2]} >&-',
                           sys.executable, str(SAMPLE)],
                          stderr=subprocess.PIPE, text=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_redirect_to_the_null_device_keeps_the_exit_status_of_errors(tmp_path: Path) -> None:
    bad = write_session(tmp_path / "bad.jsonl", [entry("u1", None, timestamp=stamp(1),
                                                       message={"role": "assistant", "content": 5})])
    with open(os.devnull, "w") as null:  # `validate BAD > /dev/null`: the user's own choice, not rich's
        done = subprocess.run([sys.executable, "-m", "omp_session", "validate", str(bad)], stdout=null,
                              stderr=subprocess.PIPE, text=True)
    assert (done.returncode, done.stderr) == (1, "")


def test_global_options_without_a_command_are_a_one_line_usage_error() -> None:
    code, out, err = run("--omp", "18.2.3")
    assert (code, out) == (2, "")
    assert err == "omp-session: Missing command (see 'omp-session --help')\n"
