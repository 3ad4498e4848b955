"""``--json FIELDS`` and ``--jq EXPR`` on every command with ``--json`` (cli/_jsonout.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from tests.builders import assistant, user

from omp_session.cli import cli
from omp_session.cli._errors import json_fields_args
from omp_session.format.blobs import MemoryBlobStore
from omp_session.write.manager import SessionManager


@pytest.fixture
def sid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    sm = SessionManager.create(str(work), blob_store=MemoryBlobStore())
    sm.append_message(user("pick my fields"))
    sm.append_message(assistant("fine"))
    sm.set_session_name("Picked", "user")
    sm.close()
    return sm.get_session_id()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="omp-session")
    return result.exit_code, result.stdout, result.stderr


def test_json_fields_as_gh_takes_them(sid: str) -> None:
    for args in (["list", "--json", "id,title"], ["list", "--json=id,title"], ["list", "--json", "id,title", "--all"]):
        code, out, err = run(*args)
        assert code == 0 and json.loads(out) == [{"id": sid, "title": "Picked"}], (args, err)
    code, out, _ = run("list", "--json", "title")  # list takes no argument: one field needs no comma
    assert json.loads(out) == [{"title": "Picked"}]
    code, out, _ = run("show", "latest", "--json=id")
    assert json.loads(out) == {"id": sid}
    code, out, _ = run("show", "--json", "latest")  # a flag as ever: latest is the session
    assert code == 0 and json.loads(out)["id"] == sid and "entries" in json.loads(out)


def test_jq_prints_strings_raw_and_values_as_json(sid: str) -> None:
    assert run("show", "latest", "--jq", ".title") == (0, "Picked\n", "")
    assert run("list", "--jq", ".[] | {id, n: 1}") == (0, json.dumps({"id": sid, "n": 1}) + "\n", "")
    code, out, _ = run("list", "--jsonl", "--jq", ".id")  # JSON lines: one program run per line
    assert (code, out) == (0, sid + "\n")
    code, out, _ = run("tail", "latest", "-n", "2", "--jq", ".type")
    assert out.splitlines() == ["message", "title_change"]


def test_errors_are_one_line(sid: str) -> None:
    code, out, err = run("show", "latest", "--json", "nope,id")
    assert code == 1 and out == "" and err.startswith("omp-session: unknown JSON field(s) 'nope'; this output has: path, id")
    code, out, err = run("show", "latest", "--jq", ".[")
    assert code == 2 and out == "" and err.startswith("omp-session show: --jq: jq: error: syntax error") \
        and err.count("\n") == 1
    code, _, err = run("show", "latest", "--jq", ".title.x")
    assert code == 1 and err.startswith("omp-session: --jq: Cannot index string") and err.count("\n") == 1
    code, _, err = run("list", "--json", "a,,b")
    assert code == 2 and "field names separated by commas" in err


def _command() -> click.Command:
    ctx = click.Context(cli)
    command = cli.get_command(ctx, "show")
    assert command is not None
    return command


def test_only_json_words_are_rewritten() -> None:
    show = _command()
    assert json_fields_args(show, ["latest", "--json"]) == ["latest", "--json"]
    assert json_fields_args(show, ["--json", "latest"]) == ["--json", "latest"]
    assert json_fields_args(show, ["--json", "a,b", "x"]) == ["--json", "--json-fields", "a,b", "x"]
    assert json_fields_args(show, ["--json=a"]) == ["--json", "--json-fields", "a"]
    assert json_fields_args(show, ["--store", "--json", "x"]) == ["--store", "--json", "x"]  # --store's value
    assert json_fields_args(show, ["--", "--json=a"]) == ["--", "--json=a"]


@given(st.lists(st.sampled_from(["latest", "x,y", "--json", "--jq", ".a", "--all", "--store", "-h", "--", "a"]),
                max_size=8))
def test_without_a_json_word_args_are_left_alone(args: list[str]) -> None:
    show = _command()
    if not any(a == "--json" or a.startswith("--json=") for a in args):
        assert json_fields_args(show, args) == args


def test_a_document_printed_before_exit_1_is_filtered_too(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from omp_session.cli._jsonout import filtered_stdout

    with pytest.raises(SystemExit), filtered_stdout(".conflicts", None):
        print(json.dumps({"conflicts": 2, "items": []}, indent=2))  # as sync --json prints, then exits 1
        sys.exit(1)
    assert capsys.readouterr().out == "2\n"
