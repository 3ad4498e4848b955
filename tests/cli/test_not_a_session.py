"""Every command that reads one session refuses a file that is not an omp session with the same
one line, ``omp-session: PATH: not an omp session file: <why>``, exit 1, nothing written (issue 15
item 12; catalog/not_a_session.py holds the rule, cli/_store.open_one applies it). A session that is
merely damaged still opens everywhere; ``validate`` reports the same words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import builders
from builders import entry, header, jsonl, stamp, user
from omp_session.cli import _fast_view
from omp_session.cli._group import cli

# (file name, bytes, why) — what validate reports as not-a-session, for every command alike
NOT_SESSIONS = [
    ("empty.jsonl", b"", "the file is empty (omp would start a new session in it)"),
    ("hello.jsonl", b'{"hello":"world"}\n', "no record is an object with a string type"),
    ("array.jsonl", b"[1,2]\n", "no JSON object in its first megabyte"),
]
# argv before the file; the ones that write name an output under the test's folder, {out}
COMMANDS = [
    ["show"], ["show", "--json"], ["tree"], ["context"], ["cat"], ["cat", "--whole-file"],
    ["export", "--format", "md"], ["export", "-o", "{out}.html"], ["stats"], ["stats", "-o", "{out}.json"],
    ["resume"], ["size"], ["redact", "-o", "{out}.jsonl"], ["externalize", "-o", "{out}.jsonl"],
    ["prune", "--keep-branch", "-o", "{out}.jsonl"], ["tail"],
]
STORE_COMMANDS = [["show"], ["tree"], ["context"], ["cat"], ["export", "--format", "md"], ["stats"], ["tail"]]


@pytest.fixture(autouse=True)
def _agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("OMP_SESSION_PAGER", "0")


def _run(*args: str) -> tuple[int, str, str]:
    return builders.run(cli, *args)


def _ids(case: tuple[str, bytes, str]) -> str:
    return case[0]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("case", NOT_SESSIONS, ids=_ids)
def test_every_command_refuses_it_in_one_line(argv: list[str], case: tuple[str, bytes, str], tmp_path: Path) -> None:
    name, data, why = case
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / "out"
    code, stdout, stderr = _run(*[a.format(out=out) for a in argv], str(path))
    assert (code, stdout) == (1, ""), stderr
    assert stderr == f"omp-session: {path}: not an omp session file: {why}\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "agent") == [name]  # nothing written


@pytest.mark.parametrize("argv", STORE_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("case", NOT_SESSIONS, ids=_ids)
def test_a_key_in_a_store_that_holds_no_session_gets_the_same_line(argv: list[str], case: tuple[str, bytes, str],
                                                                  tmp_path: Path) -> None:
    from omp_session.store import open_store

    name, data, why = case
    url = f"sqlite:{tmp_path / 'store.db'}"
    key = str(tmp_path / "sessions" / "-tmp-" / name)
    storage = open_store(url)
    try:
        storage.replace(key, data, None)
    finally:
        storage.close()
    code, stdout, stderr = _run(*argv, "--store", url, key)
    assert (code, stdout) == (1, ""), stderr
    assert stderr == f"omp-session: {key}: not an omp session file: {why}\n"


@pytest.mark.parametrize("case", NOT_SESSIONS, ids=_ids)
def test_validate_reports_it_in_the_same_words(case: tuple[str, bytes, str], tmp_path: Path) -> None:
    name, data, why = case
    path = tmp_path / name
    path.write_bytes(data)
    code, stdout, _ = _run("validate", "--json", str(path))
    [found] = [json.loads(line) for line in stdout.splitlines()]
    assert code == 1 and (found["code"], found["message"]) == ("not-a-session", f"not an omp session file: {why}")


@pytest.mark.parametrize("command", _fast_view.COMMANDS)
def test_the_fast_path_leaves_it_to_the_click_command(command: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hello.jsonl"
    path.write_bytes(b'{"hello":"world"}\n')
    assert _fast_view.answer_view([command, str(path)]) is False
    assert capsys.readouterr() == ("", "")


def test_a_quarantine_is_named_as_one(tmp_path: Path) -> None:
    path = tmp_path / "s.quarantine"
    path.write_text(json.dumps({"line": 3, "offset": 120, "reason": "malformed-record", "text": "{\"type\":\"mess"})
                    + "\n")
    code, _, stderr = _run("show", str(path))
    assert code == 1 and stderr.startswith(f"omp-session: {path}: not an omp session file: the quarantine ")


DATA = Path(__file__).resolve().parents[1] / "data" / "validate"
HEADERLESS = jsonl([entry("aaaaaaaa", None, timestamp=stamp(1), message=user("hello"))])
DAMAGED = {
    "headerless": HEADERLESS.encode(),
    "malformed": (DATA / "malformed.jsonl").read_bytes(),
    "truncated": (DATA / "truncated.jsonl").read_bytes(),
    "v1 without a title slot": (DATA / "version_v1.jsonl").read_bytes(),
    "v2 without a title slot": (DATA / "version_v2.jsonl").read_bytes(),
    "header only": jsonl([header()]).encode(),
}
# what reads a damaged session; size and resume need a header and say so in their own words
READERS = [["show"], ["tree"], ["context"], ["cat"], ["cat", "--whole-file"], ["export", "--format", "md"],
           ["stats"], ["size"], ["resume"]]


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_a_damaged_session_still_opens(argv: list[str], kind: str, tmp_path: Path) -> None:
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(DAMAGED[kind])
    code, _, stderr = _run(*argv, str(path))
    assert "not an omp session" not in stderr
    needs_header = argv[0] in ("size", "resume") and kind == "headerless"
    assert code == (1 if needs_header else 0), stderr


def test_the_rule_is_one_function() -> None:
    from omp_session.catalog.not_a_session import why_not_by_head

    assert why_not_by_head(b'{"type":"session","id":"s"}\n', 27) == (True, None)
    assert why_not_by_head(b'{"hello":"world"}\n', 18) == (False, None)  # only its records can tell
    assert why_not_by_head(b"\x00" * 8, 8)[1] == "the file holds only whitespace or NUL bytes"


# A session after more than the first megabyte of blank lines, NUL padding or one long garbage line:
# omp reads past it (its header too, when the padding ends in a newline), so no command may refuse it.
_MB = 1024 * 1024
_SESSION = jsonl([header(), entry("aaaaaaaa", None, timestamp=stamp(1), message=user("hello"))]).encode()
PADDED = {
    "blank lines": b"\n" * (_MB + 10) + _SESSION,
    "NUL padding, then a newline": b"\0" * (_MB + 10) + b"\n" + _SESSION,
    "NUL padding glued to the header": b"\0" * (_MB + 10) + _SESSION,  # header lost: a damaged session
    "a garbage line longer than a megabyte": b"x" * (_MB + 10) + b"\n" + _SESSION,
}
PADDED_READERS = [["show"], ["tree"], ["context"], ["cat"], ["export", "--format", "md"], ["stats"], ["size"]]


@pytest.mark.parametrize("argv", PADDED_READERS, ids=" ".join)
@pytest.mark.parametrize("kind", sorted(PADDED))
def test_a_session_after_a_megabyte_of_padding_still_opens(argv: list[str], kind: str, tmp_path: Path) -> None:
    path = tmp_path / "padded.jsonl"
    path.write_bytes(PADDED[kind])
    code, _, stderr = _run(*argv, str(path))
    assert "not an omp session" not in stderr
    needs_header = argv[0] == "size" and kind == "NUL padding glued to the header"
    assert code == (1 if needs_header else 0), stderr


@pytest.mark.parametrize("kind", sorted(PADDED))
def test_the_rule_reads_past_a_megabyte_of_padding(kind: str, tmp_path: Path) -> None:
    from omp_session.catalog.not_a_session import why_not_a_session, why_not_a_session_file
    from omp_session.model.session import open_session

    path = tmp_path / "padded.jsonl"
    path.write_bytes(PADDED[kind])
    assert why_not_a_session_file(path) is None
    with open_session(path) as s:
        assert why_not_a_session(s) is None


def test_a_megabyte_of_padding_and_nothing_after_it_is_still_refused(tmp_path: Path) -> None:
    from omp_session.catalog.not_a_session import why_not_a_session_file

    path = tmp_path / "padding.jsonl"
    path.write_bytes(b"\0" * (_MB + 10) + b"\n  \n")
    assert why_not_a_session_file(path) == "the file holds only whitespace or NUL bytes"
    path.write_bytes(b"no brace here\n" * (_MB // 10))
    assert why_not_a_session_file(path) == "no JSON object in its first megabyte"


def test_a_session_whose_text_holds_raw_del_characters_still_opens(tmp_path: Path) -> None:
    # JSON escapes only U+0000-U+001F: omp (JSON.stringify) writes DEL, U+007F, as the raw byte 0x7f,
    # e.g. in what was typed at a terminal whose backspace key sends it; omp reads such a file.
    path = tmp_path / "del.jsonl"
    path.write_text(jsonl([header(), entry("aaaaaaaa", None, timestamp=stamp(1), message=user("ab\x7f" * 300))]),
                    encoding="utf-8")
    assert b"\x7f" in path.read_bytes()
    for argv in (["show"], ["tree"], ["cat"], ["stats"], ["size"]):
        code, _, stderr = _run(*argv, str(path))
        assert (code, "not an omp session" in stderr) == (0, False), (argv, stderr)


@pytest.mark.parametrize("kind", sorted(PADDED))
def test_validate_agrees_a_padded_session_is_one(kind: str, tmp_path: Path) -> None:
    """validate judged by the first megabyte alone, so it called these not-a-session while every
    other command opened them."""
    from omp_session.ops.validate.check import validate

    path = tmp_path / "padded.jsonl"
    path.write_bytes(PADDED[kind])
    assert "not-a-session" not in {d.code for d in validate(path, blobs_dir=tmp_path / "blobs")}
