"""The session viewer shows a tool's output as the terminal showed it: ANSI escape sequences
(colours, a hyperlink, the 8-bit CSI; the grammar search snippets drop) are not shown in the
tree or the messages, and search finds the text between them (check_viewer_text.mjs in headless
chromium). The JSON export keeps every byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import run_check

import omp_session
from builders import assistant, entry, header, tool_result, user, write_session
from omp_session.ops.export.html import render_html_bytes

OUTPUT = ("\x1b[32m✓\x1b[0m loads the config file \x1b[2m[357ms]\x1b[22m\n"
          "\x1b]8;;http://example.com\x07link\x1b]8;;\x1b\\ \x9b31mred\x9b0m config \x1b[1magain\x1b[22m")


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
    assert "\x1b" not in shown and "\x9b" not in shown and "[32m" not in shown and "8;;" not in shown
    assert "✓ loads the config file [357ms]" in got["main"] and "link red config again" in got["main"]
    assert any(row.endswith("bash: ✓ loads the config file [357ms] link red config again") for row in got["tree"])
    assert "run the tests" in got["main"]
    assert got["counts"] == {"config again": "1/1", "[32m": "no hits", "tests": "1/1"}
