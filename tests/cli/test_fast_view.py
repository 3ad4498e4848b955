"""``show``/``tree``/``context SESSION`` without click (cli/_fast_view.py): the same bytes on
stdout and stderr and the same exit status as the click command, or no answer at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session.cli import _fast_view
from omp_session.cli._group import cli

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = Path(__file__).resolve().parents[2] / "src" / "omp_session" / "samples" / "sample.jsonl"
FILES = sorted([*(DATA / "validate").glob("*.jsonl"), *(DATA / "context" / "inputs").glob("*.jsonl"), SAMPLE])


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("OMP_SESSION_PAGER", "0")


def _fast(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[bool, str, str]:
    try:
        done = _fast_view.answer_view(argv)
        code = 0
    except SystemExit as e:
        done, code = True, int(e.code or 0)
    out, err = capsys.readouterr()
    return done, out, err + f"exit {code}" if done else err


class _Ids:
    """A v1 file gets new random ids when it is read (format/migrate.py): the same ones twice here."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, nbytes: int = 8) -> str:
        self.n += 1
        return f"{self.n:0{nbytes * 2}x}"


@pytest.mark.parametrize("command", _fast_view.COMMANDS)
def test_every_answer_is_the_click_commands(command: str, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import secrets

    answered = 0
    for path in FILES:
        monkeypatch.setattr(secrets, "token_hex", _Ids())
        done, out, err = _fast([command, str(path)], capsys)
        monkeypatch.setattr(secrets, "token_hex", _Ids())
        if not done:
            assert out == err == "", path  # gave up before writing anything
            continue
        answered += 1
        ran = CliRunner().invoke(cli, [command, str(path)])
        assert (out, err) == (ran.stdout, ran.stderr + f"exit {ran.exit_code}"), path
    assert answered >= len(FILES) - 5  # only the files that are not sessions go to click


def test_what_it_leaves_to_click(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_session = tmp_path / "notes.jsonl"
    not_a_session.write_text('"just a string"\n')
    for argv in (["show", "--json", str(SAMPLE)], ["show", str(SAMPLE), "--json"], ["tree"], ["list", str(SAMPLE)],
                 ["show", "-"], ["show", ""], ["show", str(tmp_path / "missing.jsonl")], ["show", "nosuchid"],
                 ["show", str(not_a_session)], ["tree", str(not_a_session)], ["show", str(tmp_path)]):
        assert _fast(argv, capsys) == (False, "", ""), argv
    monkeypatch.setattr(_fast_view, "MAX_BYTES", SAMPLE.stat().st_size - 1)
    assert _fast(["show", str(SAMPLE)], capsys) == (False, "", "")


def test_an_id_and_latest_resolve_as_the_click_command_does(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.paths import project_dir_name, sessions_dir

    monkeypatch.chdir(tmp_path)
    bucket = sessions_dir() / project_dir_name(str(tmp_path))
    bucket.mkdir(parents=True)
    header = next(r for r in map(json.loads, SAMPLE.read_text(encoding="utf-8").splitlines())
                  if r.get("type") == "session")
    copy = bucket / f"2026-01-01T00-00-00-000Z_{header['id']}.jsonl"
    copy.write_bytes(SAMPLE.read_bytes())
    for arg in ("latest", header["id"][:8]):
        done, out, _err = _fast(["tree", arg], capsys)
        ran = CliRunner().invoke(cli, ["tree", arg])
        assert done and ran.exit_code == 0 and out == ran.stdout and out


def test_main_draws_a_small_session_without_importing_click() -> None:
    script = ("import sys; sys.argv = ['omp-session', 'show', sys.argv[1]]\n"
              "from omp_session.cli import main\nmain()\n"
              "sys.stderr.write(str('click' in sys.modules))")
    env = {**os.environ, "OMP_SESSION_PAGER": "0"}
    done = subprocess.run([sys.executable, "-c", script, str(SAMPLE)], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stderr == "False"
    assert done.stdout == CliRunner().invoke(cli, ["show", str(SAMPLE)]).stdout


def test_a_closed_pipe_ends_quietly_with_status_0() -> None:
    script = ("import sys; sys.argv = ['omp-session', 'tree', sys.argv[1]]\n"
              "from omp_session.cli import main\nmain()\n")
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: the first write fails with EPIPE
    done = subprocess.run([sys.executable, "-c", script, str(SAMPLE)], stdout=writer, stderr=subprocess.PIPE,
                          text=True, env={**os.environ, "OMP_SESSION_PAGER": "0"})
    os.close(writer)
    assert (done.returncode, done.stderr) == (0, "")  # as every command (cli/_pipe.py)


def test_a_library_error_while_drawing_reads_as_the_click_commands(capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.cli import _render
    from omp_session.errors import SessionError

    def fail(*_args: object, **_kwargs: object) -> None:
        raise SessionError("drawing failed")

    monkeypatch.setattr(_render, "tree", fail)
    fast = _fast(["tree", str(SAMPLE)], capsys)
    ran = CliRunner().invoke(cli, ["tree", str(SAMPLE)])
    assert fast == (True, "", "omp-session: drawing failed\nexit 1")
    assert (ran.stdout, ran.stderr, ran.exit_code) == ("", "omp-session: drawing failed\n", 1)
