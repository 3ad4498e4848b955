"""The session viewer (``export --format html``, and serve's ``/s/<id>``) on a phone and under
serve's toolbar (check_viewer_phone.mjs in headless chromium): at 390x844 the panes stack, the
messages take the width and nothing makes the page wider than the screen; at 390x844 and at
1280x800 the toolbar covers no message, the last one (a tool result) included."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from harness import run_check

import omp_session
from builders import assistant, entry, header, tool_result, user, write_session
from omp_session.ops.export.html import render_html_bytes
from omp_session.paths import project_dir_name
from omp_session.serve.app import start

SID = "01970000-aaaa-bbbb-cccc-000000000001"
LINE = "drwxr-xr-x 2 user user 4096 Jan  1 00:00 some-directory-with-a-long-name/and/a/path/under/it.txt"


def _entries() -> list[dict[str, Any]]:
    """Twelve rounds of question, tool call and a 20-line tool result; the branch ends on a result."""
    es: list[dict[str, Any]] = []
    for i in range(12):
        parent = es[-1]["id"] if es else None
        es.append(entry(f"u{i}", parent, message=user(f"question {i}: list the files of the project " * 3)))
        es.append(entry(f"a{i}", f"u{i}", message=assistant([
            {"type": "text", "text": f"Looking at it ({i})."},
            {"type": "toolCall", "id": f"c{i}", "name": "bash", "arguments": {"command": f"ls -la /srv/{i}"}}])))
        es.append(entry(f"r{i}", f"a{i}", message=tool_result("\n".join([LINE] * 20), call_id=f"c{i}")))
    return es


def _rect_overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


@pytest.mark.browser
def test_the_viewer_fits_a_phone_and_the_toolbar_covers_no_message(tmp_path: Path, browser_ready: None) -> None:
    root = tmp_path / "sessions"
    path = write_session(root / project_dir_name("/home/u/p") / f"2026-01-01T00-00-00-000Z_{SID}.jsonl", _entries(),
                         head=header(SID, cwd="/home/u/p"))
    page = tmp_path / "session.html"
    with omp_session.open(path) as s:
        page.write_bytes(render_html_bytes(s))
    shots = Path(os.environ.get("OMP_TEST_ARTIFACTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with start(root) as running:
        pages = run_check("check_viewer_phone.mjs", {"file": str(page), "url": running.url, "session": f"/s/{SID}",
                                                     "shots": str(shots)}, tmp_path)["pages"]
    for name, p in pages.items():
        assert p["entries"] > 0 and p["atEnd"], (name, p)
        assert p["scrollWidth"] <= p["viewport"], (name, p)  # the page never scrolls sideways
        assert p["search"]["right"] <= p["viewport"], (name, p)
        assert p["treeRows"] > 0 and p["tree"]["height"] >= 90, (name, p)  # a few rows of the tree in view
    for name in ("file-phone", "served-phone"):
        p = pages[name]
        # stacked: the tree above, the messages below it across the screen
        assert p["main"]["width"] >= 300, (name, p)
        assert p["side"]["bottom"] <= p["main"]["top"], (name, p)
        assert p["main"]["bottom"] - p["main"]["top"] >= 300, (name, p)  # most of the screen for the messages
    for name in ("file-desktop", "served-desktop"):
        p = pages[name]
        # side by side, as before
        assert p["side"]["right"] <= p["main"]["left"] and p["main"]["top"] < p["side"]["bottom"], (name, p)
    for name in ("served-phone", "served-desktop"):
        p = pages[name]
        bar = p["toolbar"]
        assert bar is not None and bar["width"] > 0, (name, p)
        assert bar["bottom"] <= p["viewportHeight"] and bar["right"] <= p["viewport"], (name, p)  # on screen
        assert not _rect_overlap(bar, p["lastEntry"]), (name, p)
        assert not _rect_overlap(bar, p["lastResult"]), (name, p)
        # nor over any other message as they scroll by: the toolbar is outside the message column
        assert not _rect_overlap(bar, p["mainVisible"]), (name, p)
