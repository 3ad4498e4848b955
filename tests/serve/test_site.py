"""``export --site DIR``: the static site (omp_session.serve.site) — its pages, links that resolve
from file://, no network, the incremental manifest, and that nothing of the user's is deleted."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from serve_corpus import append, build, new_message, session_path, sid

import builders
from builders import entry, header, user, write_session
from omp_session.cli import cli
from omp_session.errors import SessionError
from omp_session.serve.site import MANIFEST, build_site, page_stem

run = functools.partial(builders.run, cli)
COUNT = 50
PROJECTS = 7  # serve_corpus puts session i in /home/u/proj{i % 7}


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "sessions"
    return root, build(root, COUNT)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)


def _links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text("utf-8"))
    return parser.links


def _index(site: Path) -> Any:
    text = (site / "search-index.js").read_text("utf-8")
    prefix = "window.ompSiteIndex = "
    assert text.startswith(prefix) and text.endswith(";\n")
    return json.loads(text[len(prefix):-2])


def _pages(site: Path) -> set[str]:
    return {p.name for p in (site / "s").iterdir()}


def test_the_site_has_an_index_a_page_per_project_and_per_session(corpus: tuple[Path, dict[str, Any]],
                                                                    tmp_path: Path) -> None:
    root, _ = corpus
    site = tmp_path / "site"
    report = build_site(site, root)
    assert report.problems == []
    assert (report.sessions, report.written, report.unchanged, report.removed) == (COUNT + 1, COUNT + 1, 0, 0)
    assert _pages(site) == {f"{sid(i)}.html" for i in range(COUNT)} | {"sub-0002.html"}
    assert len(list((site / "projects").iterdir())) == PROJECTS
    index = (site / "index.html").read_text("utf-8")
    # newest first, the subagent right under its parent
    order = [index.index(f"s/{sid(i)}.html") for i in range(COUNT - 1, -1, -1)]
    assert order == sorted(order)
    assert index.index(f"s/{sid(2)}.html") < index.index("s/sub-0002.html") < index.index(f"s/{sid(1)}.html")
    # a session page is the export's viewer, with the session's own text
    page = (site / "s" / f"{sid(7)}.html").read_text("utf-8")
    assert 'id="omp-session-data"' in page and "unique7word" in page and 'href="../index.html"' in page
    project = next(p for p in (site / "projects").iterdir() if "proj3" in p.name).read_text("utf-8")
    assert f"../s/{sid(3)}.html" in project and f"../s/{sid(4)}.html" not in project


def test_every_link_resolves_to_a_file_and_nothing_reaches_the_network(corpus: tuple[Path, dict[str, Any]],
                                                                      tmp_path: Path) -> None:
    root, _ = corpus
    site = tmp_path / "site"
    build_site(site, root)
    checked = 0
    for page in site.rglob("*.html"):
        for link in _links(page):
            parts = urlsplit(link)
            assert not parts.scheme and not parts.netloc, (page, link)
            if not parts.path:
                continue  # "#entry" within the page
            target = (page.parent / unquote(parts.path)).resolve()
            assert target.is_file(), (page, link)
            assert target.is_relative_to(site.resolve()), (page, link)
            checked += 1
    assert checked > COUNT * 3
    for f in site.rglob("*"):
        if f.is_file() and f.suffix in (".html", ".js", ".css"):
            data = f.read_bytes()
            assert b"http://" not in data and b"https://" not in data, f
            assert b"fetch(" not in data and b"XMLHttpRequest" not in data, f


def test_a_second_run_renders_nothing_and_a_changed_session_only_itself(corpus: tuple[Path, dict[str, Any]],
                                                                      tmp_path: Path) -> None:
    root, files = corpus
    site = tmp_path / "site"
    build_site(site, root)
    again = build_site(site, root)
    assert (again.written, again.unchanged, again.removed) == (0, COUNT + 1, 0)
    before = {p.name: p.stat().st_ino for p in (site / "s").iterdir()}
    index_ino = (site / "index.html").stat().st_ino

    append(files["paths"][sid(9)], new_message("n1", "a1", "an appended papayaword"))
    third = build_site(site, root)
    assert (third.written, third.unchanged) == (1, COUNT)
    after = {p.name: p.stat().st_ino for p in (site / "s").iterdir()}
    assert [n for n in after if after[n] != before[n]] == [f"{sid(9)}.html"]
    assert "papayaword" in (site / "s" / f"{sid(9)}.html").read_text("utf-8")
    assert (site / "index.html").stat().st_ino != index_ino  # the index pages are written every run
    assert any(e[0] == "n1" for s in _index(site) if s["id"] == sid(9) for e in s["entries"])


def test_a_changed_subagent_renders_its_parent_again(corpus: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, files = corpus
    site = tmp_path / "site"
    build_site(site, root)
    append(files["subagent"], new_message("s2", "s1", "subagent says mangoword"))
    report = build_site(site, root)
    assert report.written == 2  # the subagent's own page and its parent's, which embeds it
    assert "mangoword" in (site / "s" / f"{sid(2)}.html").read_text("utf-8")


def test_a_deleted_session_loses_its_page_and_nothing_else_is_deleted(corpus: tuple[Path, dict[str, Any]],
                                                                    tmp_path: Path) -> None:
    root, files = corpus
    site = tmp_path / "site"
    build_site(site, root)
    (site / "notes.txt").write_text("mine")
    (site / "s" / "handmade.html").write_text("mine")
    (site / "projects" / "old.html").write_text("mine")
    files["paths"][sid(11)].unlink()
    report = build_site(site, root)
    assert (report.written, report.removed) == (0, 1)
    assert not (site / "s" / f"{sid(11)}.html").exists()
    assert not (site / "search" / f"{sid(11)}.json").exists()
    assert f"{sid(11)}.html" not in (site / "index.html").read_text("utf-8")
    assert all(s["id"] != sid(11) for s in _index(site))
    for stray in ("notes.txt", "s/handmade.html", "projects/old.html"):
        assert (site / stray).read_text() == "mine"


def test_a_project_gone_from_the_selection_loses_its_page(corpus: tuple[Path, dict[str, Any]],
                                                         tmp_path: Path) -> None:
    root, _ = corpus
    site = tmp_path / "site"
    build_site(site, root)
    report = build_site(site, root, project="/home/u/proj3")
    assert report.sessions == len(range(3, COUNT, 7)) and report.removed == COUNT + 1 - report.sessions
    assert [p.name for p in (site / "projects").iterdir() if "proj3" not in p.name] == []
    assert _pages(site) == {f"{sid(i)}.html" for i in range(3, COUNT, 7)}


def test_a_tampered_manifest_never_deletes_outside_the_site(corpus: tuple[Path, dict[str, Any]],
                                                           tmp_path: Path) -> None:
    root, _ = corpus
    site = tmp_path / "site"
    build_site(site, root)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (site / "keep.html").write_text("keep")
    manifest = json.loads((site / MANIFEST).read_text())
    manifest["sessions"]["gone"] = {"page": "../victim.txt", "search": str(victim)}
    manifest["sessions"]["gone2"] = {"page": "s/../keep.html", "search": "search/../../victim.txt"}
    manifest["files"] += ["../victim.txt", "keep.html", str(victim)]
    (site / MANIFEST).write_text(json.dumps(manifest))
    build_site(site, root)
    assert victim.read_text() == "keep" and (site / "keep.html").read_text() == "keep"


def test_a_non_empty_folder_without_a_manifest_is_refused_unless_forced(corpus: tuple[Path, dict[str, Any]],
                                                                       tmp_path: Path) -> None:
    root, _ = corpus
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("my own page")
    (site / "other.txt").write_text("mine")
    with pytest.raises(SessionError, match=r"holds no site\.json"):
        build_site(site, root)
    assert (site / "index.html").read_text() == "my own page" and not (site / "s").exists()
    (site / MANIFEST).write_text("{not json")
    with pytest.raises(SessionError, match="cannot be read"):
        build_site(site, root)
    report = build_site(site, root, force=True)
    assert report.written == COUNT + 1 and (site / "other.txt").read_text() == "mine"
    with pytest.raises(SessionError, match="inside the sessions root"):
        build_site(root / "site", root)


def test_search_has_a_client_side_index_up_to_a_cap(corpus: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, _ = corpus
    site = tmp_path / "site"
    build_site(site, root)
    hits = [(s["id"], e[0]) for s in _index(site) for e in s["entries"] if "kiwiword" in e[3]]
    assert hits == [(sid(1), "b1")]
    assert "search-index.js" in _links(site / "search.html")[1:]  # after the stylesheet
    small = build_site(site, root, search_cap=1000)
    assert not small.search_index and small.search_bytes > 1000
    assert not (site / "search-index.js").exists()
    assert "omp-session serve" in (site / "search.html").read_text("utf-8")
    assert build_site(site, root).search_index and (site / "search-index.js").is_file()


def test_ids_that_are_not_file_names_get_hashed_page_names(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    odd = ["../../escape", "a/b#c", "Same", "same"]
    for n, session_id in enumerate(odd):
        write_session(root / "--p--" / f"2026-01-01T00-00-0{n}-000Z_x{n}.jsonl",
                      [entry("u1", None, message=user(f"text {n}"))], head=header(session_id, cwd="/p"))
    site = tmp_path / "site"
    report = build_site(site, root)
    assert report.written == 4 and report.problems == []
    names = _pages(site)
    assert len(names) == 4 and all(n.endswith(".html") and "/" not in n for n in names)
    assert page_stem("../../escape").startswith("x-") and page_stem("a/b#c").startswith("x-")
    assert len({n.lower() for n in names}) == 4  # "Same" and "same" apart on a case-blind file system
    assert not (tmp_path / "escape.html").exists()


def test_the_command(corpus: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, _ = corpus
    site = tmp_path / "site"
    code, out, err = run("export", "--site", str(site), "--all", "--root", str(root), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert (got["written"], got["unchanged"], got["removed"], got["search_index"]) == (COUNT + 1, 0, 0, True)
    code, out, err = run("export", "--site", str(site), "--all", "--root", str(root))
    assert code == 0, err
    assert out == f"{site}: 0 page(s) written, {COUNT + 1} unchanged, 0 removed; {COUNT + 1} session(s), " \
                  "search index written\n"
    code, out, _ = run("export", "--site", str(site), "--project", "/home/u/proj0", "--root", str(root), "--json")
    assert code == 0 and json.loads(out)["sessions"] == len(range(0, COUNT, 7))


@pytest.mark.parametrize(("args", "message"), [
    (["export", "latest", "--site", "S"], "drop SESSION"),
    (["export", "--site", "S", "--format", "html"], "--format does not apply to --site"),
    (["export", "--site", "S", "-o", "x.html"], "-o does not apply to --site"),
    (["export", "--site", "S", "--all", "--project", "/p"], "--all and --project: choose one"),
    (["export", "latest", "--project", "/p"], "apply to --site only"),
    (["export"], "Missing argument 'SESSION'"),
])
def test_usage_errors(args: list[str], message: str) -> None:
    code, _, err = run(*args)
    assert code == 2 and message in err, err
    assert not Path("S").exists()


def test_a_session_that_cannot_be_read_is_one_line_and_exit_1(corpus: tuple[Path, dict[str, Any]],
                                                              tmp_path: Path) -> None:
    root, _ = corpus
    bad = session_path(root, 999, "/home/u/proj1")
    bad.write_bytes(b"\x00\x01 not json\n")
    site = tmp_path / "site"
    code, out, err = run("export", "--site", str(site), "--all", "--root", str(root))
    assert code == 1
    assert "Traceback" not in err and str(bad) in err
    assert f"{COUNT + 1} page(s) written" in out


@pytest.mark.browser
def test_the_site_opens_from_file_in_a_browser(corpus: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """Index -> a session's viewer -> search finds a word of one session (headless chromium)."""
    tests = Path(__file__).resolve().parents[1]
    browser_dir = tests / "browser"
    chromium = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
    if not chromium.exists() or not (browser_dir / "node_modules" / "playwright-core").is_dir():
        subprocess.run(["bash", str(browser_dir / "setup.sh")], check=True)
    assert shutil.which("node"), "node is needed for the browser test"
    root, _ = corpus
    site = tmp_path / "site"
    build_site(site, root)
    spec = {"index": (site / "index.html").as_uri(), "search": (site / "search.html").as_uri(),
            "session": sid(1), "word": "kiwiword", "entry": "b1"}
    done = subprocess.run(["node", str(Path(__file__).with_name("check_site.mjs")), json.dumps(spec)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["errors"] == [] and got["network"] == []
    assert (got["rows"], got["filtered"]) == (COUNT + 1, 1)  # site.js ran: the CSP let it
    assert got["viewer"] > 0 and got["back"] == (site / "index.html").as_uri()
    assert got["hits"] == 1 and got["landed"] == "b1"

