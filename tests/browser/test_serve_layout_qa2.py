"""`omp-session serve`'s pages keep to the window (check_serve_layout_qa2.mjs in headless chromium):
a session title of one long word, and a month of costs, at 1280x800 and at a phone's 390x844."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import run_check

from builders import assistant, entry, header, usage, user, write_session
from omp_session.paths import project_dir_name
from omp_session.serve.app import start

LONG = "x" * 158  # one word, as the QA pass's title
DAY_MS = 86_400_000
BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _corpus(root: Path) -> None:
    """Three sessions in one project, one titled with a long word; 40 days of usage."""
    cwd = "/home/u/some-project"
    for i in range(3):
        sid = f"0197{i:08d}-aaaa-bbbb-cccc-{i:012d}"
        es = [entry("u1", None, message=user(LONG if i == 0 else f"question {i}"))]
        for d in range(40):
            if (d + i) % 3 == 0:
                es.append(entry(f"a{d}", es[-1]["id"], message=assistant(
                    "answer", usage=usage(input=1000 * d, output=10, cost=0.5 + d / 10),
                    timestamp=BASE_MS + d * DAY_MS + 3_600_000)))
        write_session(root / project_dir_name(cwd) / f"2026-01-01T00-00-00-000Z_{sid}.jsonl", es,
                      head=header(sid, cwd=cwd), slot=LONG if i == 0 else None)


@pytest.mark.browser
def test_a_long_title_and_the_costs_keep_to_the_window(tmp_path: Path, browser_ready: None) -> None:
    root = tmp_path / "sessions"
    _corpus(root)
    with start(root) as running:
        pages = run_check("check_serve_layout_qa2.mjs", {"url": running.url}, tmp_path)["pages"]
    desktop = pages["list-desktop"]
    # every column on screen, the project's path on one or two lines (not a letter a line)
    assert desktop["tableWidth"] <= desktop["viewport"], desktop
    assert desktop["columnsRightEdge"] <= desktop["viewport"], desktop
    assert 1 <= desktop["projectLines"] <= 2, desktop
    # a phone scrolls the table in its own box, never the page
    for name in ("list-desktop", "list-phone", "costs-desktop", "costs-phone"):
        assert pages[name]["scrollWidth"] <= pages[name]["viewport"], (name, pages[name])
    for name in ("costs-desktop", "costs-phone"):
        assert pages[name]["dayLines"] == 1, (name, pages[name])  # a date never wraps
        assert pages[name]["charts"] and max(pages[name]["charts"]) <= pages[name]["viewport"], (name, pages[name])
