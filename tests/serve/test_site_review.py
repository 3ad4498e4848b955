"""Review of ``export --site`` (omp_session.serve.site): each test is a bug found and fixed —
writes and deletions through a symlinked folder inside DIR, pages lost on a file system that
ignores case, unreadable sessions of the chosen project not reported, and a search page that a
lone surrogate in an entry id stopped."""

from __future__ import annotations

import builtins
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import build, session_path, sid

from builders import entry, header, user, write_session
from omp_session.errors import SessionError
from omp_session.serve.site import MANIFEST, build_site, page_stem


def _write(root: Path, name: str, session_id: str, text: str, *, cwd: str = "/p", mtime: int = 1_767_225_600,
           entry_id: str = "u1") -> Path:
    path = write_session(root / "--p--" / f"2026-01-01T00-00-00-000Z_{name}.jsonl",
                         [entry(entry_id, None, message=user(text))], head=header(session_id, cwd=cwd),
                         ensure_ascii=True)
    os.utime(path, (mtime, mtime))
    return path


# ----- 1. a folder of the site that is a symlink: nothing written or deleted through it --------


@pytest.mark.parametrize("folder", ["s", "search"])
def test_a_symlinked_folder_inside_the_site_is_never_written_or_deleted_through(tmp_path: Path, folder: str) -> None:
    root = tmp_path / "sessions"
    build(root, 3)
    site = tmp_path / "site"
    build_site(site, root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.html").write_text("mine")
    (elsewhere / "notes.json").write_text("mine")
    shutil.rmtree(site / folder)
    (site / folder).symlink_to(elsewhere, target_is_directory=True)
    manifest = json.loads((site / MANIFEST).read_text())
    manifest["sessions"]["gone"] = {"page": "s/notes.html", "search": "search/notes.json"}
    (site / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(SessionError, match=rf"{folder}: is a symbolic link"):
        build_site(site, root)
    assert sorted(os.listdir(elsewhere)) == ["notes.html", "notes.json"]
    assert (elsewhere / "notes.html").read_text() == "mine"


def test_the_site_folder_itself_may_be_a_symlink(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    build(root, 3)
    real = tmp_path / "real-site"
    real.mkdir()
    site = tmp_path / "site"
    site.symlink_to(real, target_is_directory=True)
    first = build_site(site, root)
    assert first.written == first.sessions > 0 and (real / "index.html").is_file()
    (real / "s" / f"{sid(0)}.html").unlink()
    again = build_site(site, root)
    assert (again.written, again.unchanged) == (1, first.sessions - 1) and (real / "s" / f"{sid(0)}.html").is_file()


# ----- 2. ids that differ only in case ---------------------------------------------------------


def test_page_names_of_ids_that_differ_in_case_do_not_depend_on_the_order(tmp_path: Path) -> None:
    """Which of "abc" and "ABC" is newer used to pick which got the plain name: touching the
    older one swapped the names, so both pages were made again and their links changed."""
    root = tmp_path / "sessions"
    _write(root, "a", "abc", "lower", mtime=1_767_225_700)
    older = _write(root, "b", "ABC", "upper", mtime=1_767_225_600)
    site = tmp_path / "site"
    build_site(site, root)
    before = json.loads((site / MANIFEST).read_text())["sessions"]
    os.utime(older, (1_767_225_800, 1_767_225_800))
    report = build_site(site, root)
    after = json.loads((site / MANIFEST).read_text())["sessions"]
    assert report.written == 1  # the touched one, under the same name
    assert {k: v["page"] for k, v in after.items()} == {k: v["page"] for k, v in before.items()}
    assert page_stem("x-" + "0" * 32).startswith("x-") and page_stem("x-" + "0" * 32) != "x-" + "0" * 32


def _case_blind(monkeypatch: pytest.MonkeyPatch, under: Path) -> None:
    """Make the files under ``under`` behave as on a file system that ignores case (macOS,
    Windows): a name finds the file of any case, a rename onto another case replaces it."""
    real_stat, real_lstat, real_unlink, real_replace, real_open = os.stat, os.lstat, os.unlink, os.replace, open
    top = str(under)

    def fold(path: Any) -> Any:
        if not isinstance(path, str) or not path.startswith(top):
            return path
        try:
            real_lstat(path)
            return path
        except OSError:
            pass
        folder, name = os.path.split(path)
        try:
            names = os.listdir(folder)
        except OSError:
            return path
        same = [n for n in names if n.lower() == name.lower()]
        return os.path.join(folder, same[0]) if same else path

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda path, *a, **k: fn(fold(path), *a, **k)

    monkeypatch.setattr(os, "stat", wrap(real_stat))
    monkeypatch.setattr(os, "lstat", wrap(real_lstat))
    monkeypatch.setattr(os, "unlink", wrap(real_unlink))
    monkeypatch.setattr(os, "replace", lambda src, dst, **k: real_replace(src, fold(dst), **k))
    monkeypatch.setattr(builtins, "open", wrap(real_open))


def test_on_a_case_blind_file_system_a_new_page_is_not_deleted_as_an_old_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session "abc" gone, session "ABC" new: s/ABC.html is written over s/abc.html (one file
    there), and removing the gone session's s/abc.html used to delete the new page."""
    root = tmp_path / "sessions"
    gone = _write(root, "a", "abc", "lower")
    site = tmp_path / "site"
    build_site(site, root)
    _case_blind(monkeypatch, site)
    gone.unlink()
    _write(root, "b", "ABC", "upper")
    report = build_site(site, root)
    monkeypatch.undo()
    manifest = json.loads((site / MANIFEST).read_text())["sessions"]
    assert list(manifest) == ["ABC"]
    files = {p.relative_to(site).as_posix().lower() for p in site.rglob("*") if p.is_file()}
    assert manifest["ABC"]["page"].lower() in files and manifest["ABC"]["search"].lower() in files
    assert report.removed == 0  # the one file is the new page
    assert "upper" in next((site / "s").iterdir()).read_text("utf-8")


# ----- 4. sessions that cannot be read ---------------------------------------------------------


def test_an_unreadable_session_of_the_chosen_project_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    build(root, 14)
    bad = session_path(root, 999, "/home/u/proj1")
    bad.write_bytes(b"\x00\x01 not json\n")
    other = session_path(root, 998, "/home/u/proj2")
    other.write_bytes(b"\x00\x01 not json\n")
    report = build_site(tmp_path / "site", root, project="/home/u/proj1")
    assert report.written == 2
    assert [p for p in report.problems if str(bad) in p] and not [p for p in report.problems if str(other) in p]


# ----- 2b. the search page and a lone surrogate ------------------------------------------------

_SEARCH = """
import { createRequire } from 'node:module';
const require = createRequire(process.argv[2]);
const { chromium } = require('playwright-core');
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const out = { errors: [] };
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => out.errors.push(String(e)));
  await page.goto(process.argv[3]);
  await page.fill('#q', process.argv[4]);
  await page.press('#q', 'Enter');
  out.hits = await page.$$eval('.hit-link', (h) => h.map((a) => a.getAttribute('href')));
} finally { await browser.close(); }
process.stdout.write(JSON.stringify(out) + '\\n');
"""


@pytest.mark.browser
def test_a_lone_surrogate_in_an_entry_id_does_not_stop_the_search(tmp_path: Path) -> None:
    """encodeURIComponent throws on a lone surrogate: the search page stopped at that hit."""
    tests = Path(__file__).resolve().parents[1]
    browser_dir = tests / "browser"
    if not Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")).exists() \
            or not (browser_dir / "node_modules" / "playwright-core").is_dir():
        subprocess.run(["bash", str(browser_dir / "setup.sh")], check=True)
    root = tmp_path / "sessions"
    _write(root, "a", "s-odd", "findme in the odd one", entry_id="e\ud800x", mtime=1_767_225_700)
    _write(root, "b", "s-plain", "findme in the plain one", entry_id="e2", mtime=1_767_225_600)
    site = tmp_path / "site"
    assert build_site(site, root).problems == []
    script = tmp_path / "search.mjs"
    script.write_text(_SEARCH)
    done = subprocess.run(["node", str(script), (browser_dir / "package.json").as_uri(),
                           (site / "search.html").as_uri(), "findme"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["errors"] == []
    assert sorted(got["hits"]) == ["s/s-odd.html", "s/s-plain.html#e2"]
