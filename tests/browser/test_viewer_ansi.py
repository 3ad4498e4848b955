"""The session viewer shows a tool's output as the terminal showed it: ANSI escape sequences
(colours, a hyperlink; the grammar search snippets drop) are not shown in the tree or the
messages, and search finds the text between them (check_viewer_text.mjs in headless chromium);
a mis-decoded text keeps its words. The JSON export keeps every byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import run_check

import omp_session
from builders import assistant, entry, header, tool_result, user, write_session
from omp_session.ops.export.html import render_html_bytes

OUTPUT = ("\x1b[32m✓\x1b[0m loads the config file \x1b[2m[357ms]\x1b[22m\n"
          "\x1b]8;;http://example.com\x07link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m config \x1b[1magain\x1b[22m")


@pytest.mark.browser
def test_terminal_codes_are_not_shown(tmp_path: Path, browser_ready: None) -> None:
    es = [entry("u1", None, message=user("run the \x1b[1mtests\x1b[0m")),
          entry("a1", "u1", message=assistant([{"type": "toolCall", "id": "c1", "name": "bash",
                                                "arguments": {"command": "bun test"}}])),
          entry("r1", "a1", message=tool_result(OUTPUT, call_id="c1"))]
    path = write_session(tmp_path / "s.jsonl", es, head=header("s1"))
    with omp_session.open(path) as s:
        page = tmp_path / "s.html"
        page.write_bytes(render_html_bytes(s))
    got = run_check("check_viewer_text.mjs", {"file": str(page), "queries": ["config again", "[32m", "tests"]},
                    tmp_path)
    shown = "\n".join(got["tree"]) + got["main"]
    assert "\x1b" not in shown and "[32m" not in shown and "8;;" not in shown
    assert "✓ loads the config file [357ms]" in got["main"] and "link red config again" in got["main"]
    assert any(row.endswith("bash: ✓ loads the config file [357ms] link red config again") for row in got["tree"])
    assert "run the tests" in got["main"]
    assert got["counts"] == {"config again": "1/1", "[32m": "no hits", "tests": "1/1"}


def _page(tmp_path: Path, es: list[Any]) -> Path:
    path = write_session(tmp_path / "s.jsonl", es, head=header("s1"))
    with omp_session.open(path) as s:
        page = tmp_path / "s.html"
        page.write_bytes(render_html_bytes(s))
    return page


@pytest.mark.browser
def test_no_entry_s_tree_row_shows_terminal_codes(tmp_path: Path, browser_ready: None) -> None:
    """Summaries and extension messages too, not only messages."""
    page = _page(tmp_path, [
        entry("u1", None, message=user("hello")),
        entry("c1", "u1", type="compaction", summary="\x1b[32mcompacted\x1b[0m summary", firstKeptEntryId="u1",
              tokensBefore=10),
        entry("x1", "c1", type="custom_message", customType="ext", content="\x1b[1mext\x1b[0m says", display=True)])
    got = run_check("check_viewer_text.mjs", {"file": str(page), "queries": ["compacted summary"]}, tmp_path)
    assert "compacted summary" in got["main"] and "ext says" in got["main"]
    assert [row for row in got["tree"] if "\x1b" in row] == []
    assert got["counts"] == {"compacted summary": "1/1"}


@pytest.mark.browser
def test_a_mis_decoded_output_keeps_its_words(tmp_path: Path, browser_ready: None) -> None:
    """UTF-8 read as Latin-1 (” is "â\\x80\\x9d", “ is "â\\x80\\x9c"): not taken for 8-bit controls,
    which lost the words between them."""
    out = "“Hello.” He left the building at noon. “Bye.”".encode().decode("latin-1")
    page = _page(tmp_path, [
        entry("u1", None, message=user("fetch it")),
        entry("a1", "u1", message=assistant([{"type": "toolCall", "id": "c1", "name": "bash",
                                              "arguments": {"command": "python fetch.py"}}])),
        entry("r1", "a1", message=tool_result(out, call_id="c1"))])
    got = run_check("check_viewer_text.mjs", {"file": str(page), "queries": ["left the building"]}, tmp_path)
    assert "He left the building at noon." in got["main"]
    assert got["counts"] == {"left the building": "1/1"}
