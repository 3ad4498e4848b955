"""Every line of ``show`` and ``tail`` (also ``-f``) and ``context``'s first line fits ``$COLUMNS``,
else the terminal's width, cut with "…" (docs/display.md); piped without ``COLUMNS``, as before.
East Asian wide characters count two cells."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from screen import OUR_STYLE, run_main

from builders import assistant, entry, header, stamp, text, tool_result, user, write_session
from omp_session.cli._style import width
from omp_session.format.title import build_title_slot

LONG = "The importer splits on every newline, even inside quotes; " * 4 + "日本語のテキスト" * 6
MODEL = "a-provider-with-a-long-name/a-model-with-an-even-longer-name-" + "x" * 40
TITLE = "Fix the CSV importer's handling of quoted newlines and carriage returns " * 2


def run_cli(monkeypatch: pytest.MonkeyPatch, args: list[str], *, tty: bool, columns: int | None = None,
            terminal: int | None = None) -> list[str]:
    """The lines ``omp-session ARGS`` prints (our styles taken out), stdout a terminal (of
    ``terminal`` columns) or a pipe, ``COLUMNS`` set to ``columns`` or unset."""
    return OUR_STYLE.sub("", run_main(monkeypatch, args, tty=tty, columns=columns, terminal=terminal)).splitlines()


def long_records() -> list[dict[str, Any]]:
    """A session whose every shown value is long: text, tool calls, an error, a tool result, many
    models, labels, a compaction, two branches and twelve missing blobs (findings)."""
    image = {"type": "image", "data": "blob:sha256:" + "ab" * 32, "mimeType": "image/png"}
    call = {"type": "toolCall", "id": "c1", "name": "read_a_file_with_a_long_tool_name", "arguments": {"path": LONG}}
    records = [entry("a0000001", None, timestamp=stamp(1), type="model_change",
                     model=MODEL),
               entry("a0000002", "a0000001", timestamp=stamp(2), message=user(LONG)),
               entry("a0000003", "a0000002", timestamp=stamp(3),
                     message=assistant([text(LONG), call], model="model-" + "m" * 60, stop_reason="error",
                                       errorMessage=LONG)),
               entry("a0000004", "a0000003", timestamp=stamp(4), message=tool_result(LONG, name="read_" + "r" * 50)),
               entry("a0000005", "a0000002", timestamp=stamp(5), message=user("a side branch: " + LONG)),
               entry("a0000006", "a0000004", timestamp=stamp(6), type="label", targetId="a0000002", label=LONG[:120]),
               entry("a0000007", "a0000006", timestamp=stamp(7), type="compaction", summary=LONG,
                     firstKeptEntryId="a0000002", tokensBefore=10)]
    parent = "a0000007"
    for k in range(12):
        ident = f"b{k:07d}"
        records.append(entry(ident, parent, timestamp=stamp(10 + k), message=user([image, text(LONG)])))
        parent = ident
    records.append(entry("c0000001", parent, timestamp=stamp(30),
                         message=assistant(LONG, provider="another-provider", model="another-" + "n" * 60)))
    return records


@pytest.fixture
def long_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    where = tmp_path / ("a-project-directory-with-a-rather-long-name-" * 2) / "sessions"
    return write_session(where / "2026-01-01T00-00-00-000Z_0197aaaa-0000-7000-8000-000000000001.jsonl",
                         long_records(), slot=TITLE,
                         head=header(id="0197aaaa-0000-7000-8000-000000000001", title=TITLE,
                                     cwd="/home/someone/projects/" + "deeply/nested/" * 8 + "importer"))


def assert_fits(lines: list[str], cells: int) -> None:
    """Every line within ``cells``, but a command to copy (show's ``validate`` line for the other
    findings, on a line of its own where it does not fit): that one is whole."""
    assert lines
    commands = [x for x in lines if x.startswith("  omp-session validate ")]
    assert all(x.rstrip("'").endswith(".jsonl") for x in commands), commands
    too_wide = [(width(x), x) for x in lines if width(x) > cells and x not in commands]
    assert not too_wide, too_wide


VIEWS = [["show"], ["tail"], ["tail", "-n", "100"], ["tail", "-n", "3"]]


@pytest.mark.parametrize("cells", [60, 80])
@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("command", VIEWS, ids=" ".join)
def test_show_and_tail_fit_columns(long_session: Path, monkeypatch: pytest.MonkeyPatch, command: list[str],
                                   tty: bool, cells: int) -> None:
    lines = run_cli(monkeypatch, [command[0], str(long_session), *command[1:]], tty=tty, columns=cells)
    assert_fits(lines, cells)
    assert any(x.endswith("…") for x in lines)  # cut, not left out
    if command == ["show"]:
        keys = [x.split()[0] for x in lines if x.startswith(" ") and not x.startswith("  ")]
        assert keys[:3] == ["path", "id", "title"] and "problems" in keys
        path = next(x for x in lines if x.startswith(" path"))
        assert path.endswith("000000000001.jsonl") and "…" in path  # its end kept


@pytest.mark.parametrize("cells", [60, 80])
@pytest.mark.parametrize("command", VIEWS, ids=" ".join)
def test_the_terminals_own_width_without_columns(long_session: Path, monkeypatch: pytest.MonkeyPatch,
                                                 command: list[str], cells: int) -> None:
    lines = run_cli(monkeypatch, [command[0], str(long_session), *command[1:]], tty=True, terminal=cells)
    assert_fits(lines, cells)


@pytest.mark.parametrize("cells", [60, 80])
@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_tail_follow_lines_and_notices_fit(long_session: Path, monkeypatch: pytest.MonkeyPatch, tty: bool,
                                           cells: int) -> None:
    def append(record: dict[str, Any]) -> None:
        with long_session.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    def retitle() -> None:
        with long_session.open("r+b") as f:
            f.write(build_title_slot("Another long title " * 8, "user", "2026-01-01T00:01:00.000Z"))

    script = [lambda: append(entry("d0000001", "c0000001", timestamp=stamp(40), message=user("live " + LONG))),
              lambda: append(entry("d0000002", "a0000002", timestamp=stamp(41), message=user("forked " + LONG))),
              retitle]
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    lines = run_cli(monkeypatch, ["tail", str(long_session), "-f", "--max-polls", "3", "-n", "1"], tty=tty,
                    columns=cells)
    assert any("live" in x for x in lines) and any("branch switch" in x for x in lines)
    assert any("title:" in x for x in lines)
    assert_fits(lines, cells)


@pytest.mark.parametrize("cells", [60, 80])
@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("command", [["context"], ["context", "--transcript"]], ids=" ".join)
def test_context_fits_columns(long_session: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], tty: bool,
                              cells: int) -> None:
    lines = run_cli(monkeypatch, [command[0], str(long_session), *command[1:]], tty=tty, columns=cells)
    assert_fits(lines, cells)
    assert lines[0].startswith("context: ") and lines[0].endswith("…")


def test_piped_without_columns_nothing_changes(long_session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = run_cli(monkeypatch, ["show", str(long_session)], tty=False)
    assert any(x.startswith(" title") and TITLE.strip() in x for x in lines)  # whole
    head = run_cli(monkeypatch, ["context", str(long_session)], tty=False)[0]
    assert head.startswith("context: ") and head.endswith(f"models default={MODEL}")  # whole
    lines = run_cli(monkeypatch, ["tail", str(long_session), "-n", "100"], tty=False)
    user_line = next(x for x in lines if " user " in x and "side branch" not in x)
    assert len(user_line.split(" user ", 1)[1]) == 100  # the fixed cut, as before


@pytest.mark.parametrize(("messages", "words"), [(1, "1 message ·"), (2, "2 messages ·")])
def test_context_counts_messages_in_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, messages: int,
                                          words: str) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    records = [entry("a0000001", None, timestamp=stamp(1), message=user("hello")),
               entry("a0000002", "a0000001", timestamp=stamp(2), message=assistant("hi"))]
    path = write_session(tmp_path / "s.jsonl", records[:messages], head=header(id="s1", cwd="/p"))
    for tty in (True, False):
        head = run_cli(monkeypatch, ["context", str(path)], tty=tty, columns=80)[0]
        assert head.startswith(f"context: {words}"), head


def test_tree_keeps_one_row_per_entry_when_a_value_holds_newlines(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A model name, tool name or entry type with a newline or tab (summary() leaves those as
    stored) is still one row of tree, within the width; whitespace shown as spaces."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    records = [entry("a0000001", None, timestamp=stamp(1), type="model_change", model="p/m\nsecond\tline"),
               entry("a0000002", "a0000001", timestamp=stamp(2), type="thinking_level_change",
                     thinkingLevel="hi\ngh"),
               entry("a0000003", "a0000002", timestamp=stamp(3), message=tool_result("out", name="ba\nsh")),
               entry("a0000004", "a0000003", timestamp=stamp(4), type="cus\ntom")]
    path = write_session(tmp_path / "s.jsonl", records, head=header(id="s1", cwd="/p"))
    for tty in (True, False):
        for columns in (None, 80):
            lines = run_cli(monkeypatch, ["tree", str(path)], tty=tty, columns=columns)
            assert len(lines) == 1 + len(records), lines
            assert "model_change p/m second line" in lines[1] and "toolResult ba sh: out" in lines[3], lines
            assert not any("\t" in x for x in lines), lines
            if columns:
                assert_fits(lines, columns)


def test_tail_follow_on_a_store_flushes_the_deletion_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tail -f`` prints each line as it happens (rich flushed every print): the notice that the
    session was deleted from the store is on stdout before the next poll, not held in a buffer."""
    from omp_session.format.blobs import MemoryBlobStore
    from omp_session.store import open_store
    from omp_session.write.manager import SessionManager

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    url = f"sqlite:{tmp_path / 'store.db'}"
    stored = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), storage=url,
                                   blob_store=MemoryBlobStore())
    stored.append_message(user("hello"))
    stored.append_message(assistant("hi"))  # omp stores a session from its first reply
    stored.flush()
    key = stored.get_session_file()
    assert key is not None

    class Pipe(io.StringIO):
        flushed = ""

        def flush(self) -> None:
            self.flushed = self.getvalue()

    out = Pipe()
    seen_at_next_poll: list[str] = []

    def delete() -> None:
        storage = open_store(url)
        storage.delete(key)
        storage.close()

    script = [delete, lambda: seen_at_next_poll.append(out.flushed)]
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    from omp_session.cli import main

    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", out)
        m.setattr(sys, "argv", ["omp-session", "tail", key, "--store", url, "-f", "--max-polls", "2", "-n", "0"])
        m.delenv("COLUMNS", raising=False)
        try:
            main()
        except SystemExit as e:
            assert e.code in (0, None), out.getvalue()
    stored.close()
    assert "deleted from the store" in out.getvalue()
    assert seen_at_next_poll and "deleted from the store" in seen_at_next_poll[0], seen_at_next_poll


@pytest.mark.parametrize("columns", [None, 200])
def test_tail_follow_title_notice_keeps_the_titles_as_they_are(long_session: Path, monkeypatch: pytest.MonkeyPatch,
                                                                columns: int | None) -> None:
    """The title notice shows both titles as stored (their repr): a change of white space only
    still reads as a change, not ``'a b' → 'a b'``."""
    def retitle() -> None:
        with long_session.open("r+b") as f:
            f.write(build_title_slot("Fix  the   importer", "user", "2026-01-01T00:01:00.000Z"))

    def retitle_again() -> None:
        with long_session.open("r+b") as f:
            f.write(build_title_slot("Fix the importer", "user", "2026-01-01T00:02:00.000Z"))

    script = [retitle, retitle_again]
    monkeypatch.setattr("omp_session.cli.tail._sleep", lambda _s: script.pop(0)())
    lines = run_cli(monkeypatch, ["tail", str(long_session), "-f", "--max-polls", "2", "-n", "0"], tty=False,
                    columns=columns)
    notices = [x for x in lines if "title:" in x]
    assert len(notices) == 2, lines
    assert notices[1].endswith("title: 'Fix  the   importer' → 'Fix the importer'"), notices
