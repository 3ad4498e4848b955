"""A session's text never drives the terminal (docs/display.md): in ``tail`` (also ``-f``),
``tree``, ``context`` (also ``--transcript``) and ``show``, on a terminal and in a pipe, every
control character that comes from the session (ESC, BEL, CR, BS, NUL, C1 controls such as CSI) is
shown as U+FFFD. Only our own styles are escapes, and only on a terminal. ``--json`` is data: its
escapes are JSON's, and the entries are the stored ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from screen import OUR_STYLE, run_main

from builders import assistant, entry, header, stamp, text, tool_result, user, write_session
from omp_session.format.title import build_title_slot

# a window title, the clipboard (OSC 52), clear screen and home, a colour never reset, a bare CR,
# a backspace, a C1 CSI (8-bit) and a NUL
EVIL = "A\x1b]0;PWNED-TITLE\x07B\x1b]52;c;cHduZWQ=\x07C\x1b[2J\x1b[HD\x1b[31mE\rF\x08G\x9b31mH\x00I"
EVIL_ID = "e\x1b[31mvil"
# every character a terminal acts on but newline and tab
CONTROLS = frozenset(chr(c) for c in [*range(0x20), *range(0x7f, 0xa0)]) - {"\n", "\t"}
# what JSON escapes itself: C0 (DEL and the C1 controls are written as they are stored, as omp's
# JSON.stringify writes them: --json is the stored data)
JSON_ESCAPED = frozenset(chr(c) for c in range(0x20)) - {"\n"}


def run_cli(monkeypatch: pytest.MonkeyPatch, args: list[str], *, tty: bool, columns: int | None = None) -> str:
    """``omp-session ARGS``' stdout, a terminal or a pipe."""
    return run_main(monkeypatch, args, tty=tty, columns=columns)


def evil_records() -> list[dict[str, Any]]:
    """One entry of every kind the views summarise, each holding ``EVIL``, and a side branch."""
    call = {"type": "toolCall", "id": "c1", "name": "read" + EVIL, "arguments": {"path": EVIL}}
    return [
        entry("a0000001", None, timestamp=stamp(1), type="model_change", model="p/m" + EVIL),
        entry("a0000002", "a0000001", timestamp=stamp(2), type="thinking_level_change", thinkingLevel="x" + EVIL),
        entry("a0000003", "a0000002", timestamp=stamp(3), message=user(EVIL)),
        entry("a0000004", "a0000003", timestamp=stamp(4),
              message=assistant([text(EVIL), call], provider="p" + EVIL, model="m" + EVIL, stop_reason="error",
                                errorMessage=EVIL)),
        entry("a0000005", "a0000004", timestamp=stamp(5), message=tool_result(EVIL, name="read" + EVIL)),
        entry("a0000006", "a0000003", timestamp=stamp(6), message=user("side " + EVIL)),
        entry("a0000007", "a0000005", timestamp=stamp(7), type="branch_summary", fromId="a0000006", summary=EVIL),
        entry("a0000008", "a0000007", timestamp=stamp(8), type="compaction", summary=EVIL, shortSummary=EVIL,
              firstKeptEntryId="a0000003", tokensBefore=10),
        entry("a0000009", "a0000008", timestamp=stamp(9), type="label", targetId="a0000003", label=EVIL),
        entry("a0000010", "a0000009", timestamp=stamp(10), type="title_change", title=EVIL),
        entry("a0000011", "a0000010", timestamp=stamp(11), type="custom_message", customType="c" + EVIL,
              content=EVIL, display=True),
        entry(EVIL_ID, "a0000011", timestamp=stamp(12), message=user(EVIL)),
        entry("a0000013", EVIL_ID, timestamp=stamp(13), message=assistant(EVIL)),
    ]


@pytest.fixture
def evil_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return write_session(tmp_path / "evil.jsonl", evil_records(), slot="old title",
                         head=header(id="0197aaaa-0000-7000-8000-0000000000e1", cwd="/p/" + EVIL, title=EVIL))


def assert_harmless(out: str, tty: bool) -> None:
    """No control character but our own styles (and those only on a terminal)."""
    rest = OUR_STYLE.sub("", out)
    assert not CONTROLS & set(rest), repr(out)
    # the session's own colour codes look like ours: none of them may pass
    assert "D\x1b[31mE" not in out and "e\x1b[31mvil" not in out, repr(out)
    if tty:
        assert OUR_STYLE.search(out), "no styles on a terminal"
    else:
        assert "\x1b" not in out, repr(out)
    assert "PWNED-TITLE" in out  # shown, made harmless


VIEWS = [["show"], ["tree"], ["tree", "--only-messages"], ["tree", "--depth", "0"], ["context"],
         ["context", "--transcript"], ["context", "--leaf", "a0000006"], ["tail"], ["tail", "-n", "100"],
         ["tail", "-n", "2"]]


@pytest.mark.parametrize("columns", [None, 200])
@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("command", VIEWS, ids=" ".join)
def test_views_show_session_control_characters_harmlessly(evil_session: Path, monkeypatch: pytest.MonkeyPatch,
                                                          command: list[str], tty: bool, columns: int | None) -> None:
    out = run_cli(monkeypatch, [command[0], str(evil_session), *command[1:]], tty=tty, columns=columns)
    assert out.endswith("\n")
    assert_harmless(out, tty)
    assert "\ufffd]0;PWNED-TITLE" in out  # as harmless() shows them


def _follow_script(path: Path) -> list[Any]:
    """Polls of ``tail -f``: an appended message, a branch switch to an entry with a hostile id,
    the title slot rewritten to a hostile title."""
    def append(record: dict[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    def retitle() -> None:
        with path.open("r+b") as f:
            f.write(build_title_slot(EVIL, "user", "2026-01-01T00:01:00.000Z"))

    return [lambda: append(entry("b0000001", "a0000013", timestamp=stamp(20), message=user("live " + EVIL))),
            lambda: append(entry("x\x1b]0;PWNED-TITLE\x07", "a0000003", timestamp=stamp(21), message=user(EVIL))),
            retitle]


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_tail_follow_shows_appends_and_notices_harmlessly(evil_session: Path, monkeypatch: pytest.MonkeyPatch,
                                                          tty: bool) -> None:
    script = _follow_script(evil_session)
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    out = run_cli(monkeypatch, ["tail", str(evil_session), "-f", "--max-polls", "3", "-n", "1"], tty=tty)
    assert "live" in out and "branch switch" in out and "title:" in out, out
    assert_harmless(out, tty)


def test_tail_follow_json_notices_on_stderr_are_harmless(evil_session: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    script = _follow_script(evil_session)
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    capsys.readouterr()
    out = run_cli(monkeypatch, ["tail", str(evil_session), "-f", "--json", "--max-polls", "3", "-n", "0"], tty=True)
    err = capsys.readouterr().err
    assert "branch switch" in err and "PWNED-TITLE" in err
    assert not CONTROLS & set(err), repr(err)
    rows = [json.loads(x) for x in out.splitlines()]  # data: JSON's escapes, the entries as stored
    assert [r["message"]["content"] for r in rows] == ["live " + EVIL, EVIL]
    assert not JSON_ESCAPED & set(out)


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_tail_json_is_the_stored_entries(evil_session: Path, monkeypatch: pytest.MonkeyPatch, tty: bool) -> None:
    out = run_cli(monkeypatch, ["tail", str(evil_session), "--json", "-n", "100"], tty=tty)
    assert not JSON_ESCAPED & set(out)  # JSON escapes them itself
    assert [json.loads(x) for x in out.splitlines()] == [r for r in evil_records() if r["id"] != "a0000006"]


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("command", [["tree"], ["context"], ["tail"]], ids=" ".join)
def test_colour_codes_of_a_text_are_left_out_of_its_one_line_preview(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   command: list[str], tty: bool) -> None:
    # a tool's coloured output (a test run) read as "�[32m✓�[0m 12 passed" in every row, the
    # codes taking a preview's width; its colours and styles (SGR) are dropped from the text of
    # one-line previews, every other escape still shown harmlessly, and an id keeps its codes in
    # view (shown harmlessly: the id one would look for holds them)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    coloured = "\x1b[32m\u2713\x1b[0m 12 passed \x1b[1;31mred\x1b[m \x1b]0;T\x07done"
    path = write_session(tmp_path / "s.jsonl", [
        entry("a0000001", None, timestamp=stamp(1), message=user("run the tests")),
        entry("a0000002", "a0000001", timestamp=stamp(2), message=tool_result(coloured, name="bash")),
        entry(EVIL_ID, "a0000002", timestamp=stamp(3), message=assistant("all \x1b[32mgreen\x1b[0m")),
    ], head=header(id="0197aaaa-0000-7000-8000-0000000000e2", cwd="/p"))
    out = run_cli(monkeypatch, [command[0], str(path), *command[1:]], tty=tty, columns=200)
    assert not CONTROLS & set(OUR_STYLE.sub("", out)), repr(out)
    assert "\u2713 12 passed red \ufffd]0;T\ufffddone" in OUR_STYLE.sub("", out), repr(out)
    assert "all green" in OUR_STYLE.sub("", out)
    if command == ["tree"]:
        assert "e\ufffd[31mvil" in OUR_STYLE.sub("", out)
