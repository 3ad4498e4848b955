"""The acceptance walk through a real server in headless chromium (check_serve.mjs): list ->
filter -> open -> switch a branch -> search -> land on the entry -> costs (and its 5-hour blocks)
-> a live append; no page error and no request outside the server. Screenshots go to $OMP_SESSION_ARTIFACTS (for CI) or
the test's temp dir."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from serve_corpus import build, new_message, sid

from builders import line, run
from omp_session.cli import cli
from omp_session.serve.app import start

TESTS = Path(__file__).resolve().parents[1]
BROWSER_DIR = TESTS / "browser"
COUNT = 210  # the issue: at least 200 sessions
LIVE_DEADLINE_MS = 2000  # the acceptance bound for an appended entry to show


@pytest.mark.browser
def test_the_walk_through_every_page(tmp_path: Path, browser_ready: None) -> None:
    root = tmp_path / "sessions"
    files = build(root, COUNT)
    shots = Path(os.environ.get("OMP_SESSION_ARTIFACTS", tmp_path)) / "serve-screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    code, out, err = run(cli, "stats", "--all", "--root", str(root), "--json")
    assert code == 0, err
    billed = json.loads(out)["total"]["billed"]["cost"]
    code, out, err = run(cli, "stats", "--all", "--root", str(root), "--blocks", "--json")
    assert code == 0, err
    blocks = [b for b in json.loads(out)["blocks"] if b["kind"] == "block"]
    live_path = files["paths"][sid(5)]
    with start(root) as running:
        spec = {
            "url": running.url, "shots": str(shots),
            "project": "/home/u/proj3", "text": "question 10 about", "textId": sid(10),
            "branchSession": sid(1), "branchId": "b1",
            "searchWord": "kiwiword", "searchEntry": "b1",
            "live": {"id": sid(5), "path": str(live_path), "entryId": "live1",
                     "line": line(new_message("live1", "a1", "appended by another process"))},
        }
        (tmp_path / "spec.json").write_text(json.dumps(spec), "utf-8")
        done = subprocess.run(["node", str(Path(__file__).with_name("check_serve.mjs")), str(tmp_path / "spec.json")],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["errors"] == []
    assert got["network"] == []
    steps = got["steps"]
    assert steps["list"]["path"] == "/"  # the token went into a cookie
    assert steps["list"]["rows"] == 100 and steps["list"]["pager"] == 1  # the 100 newest sessions
    assert steps["list"]["count"] == f"{COUNT} session(s)"
    assert steps["project"]["cwds"] == ["/home/u/proj3"]
    assert steps["text"]["ids"] == [sid(10)]
    assert steps["open"]["path"] == f"/s/{sid(10)}" and steps["open"]["shown"] == ["u1", "a1"]
    assert "copy resume command" in steps["open"]["bar"]
    assert steps["branch"]["before"] == ["u1", "a1", "b2"]
    assert steps["branch"]["after"] == ["u1", "a1", "b1"] and steps["branch"]["hash"] == "#b1"
    assert steps["search"]["hits"] == [f"/s/{sid(1)}#b1"]
    assert steps["search"]["url"] == f"/s/{sid(1)}#b1"
    assert steps["search"]["shown"] == ["u1", "a1", "b1"] and steps["search"]["selected"] == ["b1"]
    assert float(steps["costs"]["value"]) == billed
    assert steps["costs"]["text"] == f"${billed:,.2f}" and steps["costs"]["charts"] >= 1
    # the 5-hour blocks, newest first, as `stats --all --blocks --json` has them
    assert [(b["start"], float(b["cost"]), int(b["tokens"])) for b in steps["costs"]["blocks"]] == [
        (b["start"], b["billed"]["cost"], b["billed"]["totalTokens"]) for b in reversed(blocks)]
    assert steps["costs"]["blocks"] and steps["costs"]["blocksChart"] == 1
    live = steps["live"]
    assert live["ms"] is not None and live["ms"] <= LIVE_DEADLINE_MS, live
    assert live["notReloaded"] and live["updates"] >= 1
    assert "appended by another process" in live["text"]
    assert sorted(p.name for p in shots.iterdir()) == [
        "1-list.png", "2-filtered.png", "3-session.png", "4-branch.png", "5-search.png", "6-search-landed.png",
        "7-costs.png", "7b-costs-blocks.png", "8-live.png"]
