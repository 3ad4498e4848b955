"""What the pages say is what the library (and the command line) says: the list is ``list --all
--json``, search is ``search``, costs are ``stats --json``, a session is the HTML export."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from serve_corpus import sid

from builders import run
from conftest import COUNT, Served
from omp_session.cli import cli
from omp_session.cli.resume import resume_command
from omp_session.model.session import open_session
from omp_session.ops.search.query import search
from omp_session.serve.app import PER_PAGE
from omp_session.serve.viewer import SERVE_DATA_ID

_EXTRA = ("active", "url")


def _cli_json(*args: str) -> object:
    code, out, err = run(cli, *args)
    assert code == 0, err
    return json.loads(out)


def test_the_sessions_are_list_all_json(served: Served) -> None:
    listed = _cli_json("list", "--all", "--json", "--root", str(served.root))
    got = served.get("/api/sessions?per_page=100000").json()
    rows = [{k: v for k, v in r.items() if k not in _EXTRA} for r in got["sessions"]]
    assert rows == listed
    assert got["total"] == COUNT  # parents only; the subagent is under its parent
    sub = next(r for r in got["sessions"] if r["subagent_of"] is not None)
    assert sub["subagent_of"] == str(served.files["paths"][sid(2)])
    assert [r["archived"] for r in got["sessions"] if r.get("archived")] == [True]
    assert not any(r["active"] for r in got["sessions"])  # all written in 2026-01-01
    assert got["sessions"][0]["url"] == f"/s/{sid(COUNT - 1)}"


def test_a_session_written_to_just_now_is_active(served: Served) -> None:
    path = served.files["paths"][sid(4)]
    before = path.stat()
    os.utime(path)
    try:
        rows = served.get("/api/sessions?per_page=1").json()["sessions"]
        assert [(r["id"], r["active"]) for r in rows] == [(sid(4), True)]
        assert 'class="session is-active"' in served.get("/").text
    finally:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert served.get("/api/sessions?per_page=1").json()["sessions"][0]["id"] == sid(COUNT - 1)


def test_paging_filters_and_sorting(served: Served) -> None:
    everything = [r["id"] for r in served.get("/api/sessions?per_page=100000").json()["sessions"]
                  if r["subagent_of"] is None]
    first, second = (served.get(f"/api/sessions?per_page=7&page={p}").json() for p in (1, 2))
    assert first["pages"] == -(-COUNT // 7)
    assert [r["id"] for r in first["sessions"] + second["sessions"] if r["subagent_of"] is None] == everything[:14]
    beyond = served.get("/api/sessions?per_page=7&page=999").json()
    assert beyond["page"] == 999 and beyond["sessions"] == [] and beyond["total"] == COUNT
    proj = served.get("/api/sessions?per_page=1000&project=/home/u/proj3").json()
    assert proj["total"] == len([i for i in range(COUNT) if i % 7 == 3])
    assert {r["cwd"] for r in proj["sessions"]} == {"/home/u/proj3"}
    text = served.get("/api/sessions?text=QUESTION%205%20about").json()
    assert [r["id"] for r in text["sessions"]] == [sid(5)]
    day = served.get("/api/sessions?since=2026-01-02").json()
    assert day["total"] == 0
    by_size = served.get("/api/sessions?per_page=1000&sort=size").json()["sessions"]
    sizes = [r["size"] for r in by_size if r["subagent_of"] is None]
    assert sizes == sorted(sizes, reverse=True)
    oldest = served.get("/api/sessions?per_page=1&reverse=1").json()["sessions"][0]
    assert oldest["id"] == sid(0)
    assert served.get("/api/sessions?sort=bogus").status == 400
    assert served.get("/api/sessions?since=yesterday").status == 400
    assert served.get("/api/sessions?page=x").status == 400


def test_the_list_page(served: Served) -> None:
    page = served.get("/").text
    assert COUNT < PER_PAGE
    assert page.count('<tr class="session') == COUNT + 1  # and the subagent
    assert f'href="/s/{sid(COUNT - 1)}"' in page
    assert "archived</span>" in page and "subagent</span>" in page
    assert '<script src="/static/list.js"' in page and "<script>" not in page
    # a session's text is escaped, never markup
    filtered = served.get("/?text=%3Cscript%3E").text
    assert "&lt;script&gt;" in filtered and "No sessions match." in filtered


def test_search_is_the_librarys(served: Served) -> None:
    got = served.get("/api/search?q=unique7word").json()
    hits = search("unique7word", root=served.root)
    assert got == [h.to_json() for h in hits.hits]
    assert [h["session_id"] for h in got] == [sid(7)]
    also = served.get("/search?q=unique7word", headers={"Accept": "application/json"}).json()
    assert also == got
    grouped = served.get("/api/search?q=about&sessions=1&limit=500").json()
    assert len({h["path"] for h in grouped}) == len(grouped) == COUNT - 1  # the archive is not indexed
    assert served.get("/api/search?q=%22").status == 400
    assert served.get("/api/search").status == 400


def test_the_search_page_links_to_the_entry(served: Served) -> None:
    page = served.get("/search?q=zebraword").text
    assert f'href="/s/{sid(1)}#b2"' in page
    assert "<mark>zebraword</mark>" in page
    assert "1 match(es) in 1 session(s)" in page
    bad = served.get("/search?q=NOT")
    assert bad.status == 400 and 'class="error"' in bad.text


def test_costs_are_stats_json(served: Served) -> None:
    for by in ("day", "model", "project"):
        expected = _cli_json("stats", "--all", "--root", str(served.root), "--by", by, "--json")
        assert served.get(f"/api/costs?by={by}").json() == expected
    expected = _cli_json("stats", "--all", "--root", str(served.root), "--json")
    page = served.get("/costs").text
    shown = re.search(r'id="billed-cost" data-value="([^"]+)">\$([0-9.,]+)<', page)
    assert shown is not None
    assert float(shown.group(1)) == expected["total"]["billed"]["cost"]
    assert shown.group(2) == f"{expected['total']['billed']['cost']:,.2f}"
    assert "<svg" in page  # the stats report's charts
    assert served.get("/costs?by=nothing").status == 400


def test_a_session_is_the_html_export(served: Served, tmp_path: Path) -> None:
    path = served.files["paths"][sid(1)]
    exported = tmp_path / "s.html"
    code, _out, err = run(cli, "export", str(path), "--format", "html", "-o", str(exported))
    assert code == 0, err
    page = served.get(f"/s/{sid(1)}").body
    data = re.compile(rb'<script type="application/json" id="omp-session-data">(.*?)</script>', re.S)
    m_page, m_export = data.search(page), data.search(exported.read_bytes())
    assert m_page is not None and m_export is not None
    assert m_page.group(1) == m_export.group(1)
    serve_data = re.search(rb'id="' + SERVE_DATA_ID.encode() + rb'">(.*?)</script>', page)
    assert serve_data is not None
    info = json.loads(serve_data.group(1))
    cwd, argv = resume_command(Path(path))
    assert info["resume"] == f"cd {cwd} && {' '.join(argv)}"
    with open_session(path) as s:
        assert info["entries"] == len(s) and info["leaf"] == s.get_leaf_id()
    assert info["events"] == f"/events/{sid(1)}"


def test_archived_and_subagent_sessions_open(served: Served) -> None:
    archived = served.get(f"/s/{sid(COUNT - 1)}")
    assert archived.status == 200 and f"unique{COUNT - 1}word".encode() in archived.body
    assert b'"events": null' in archived.body
    sub = served.get("/s/sub-0002")
    assert sub.status == 200 and b"subagent task" in sub.body
