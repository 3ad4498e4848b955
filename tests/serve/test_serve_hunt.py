"""Bugs found by using ``omp-session serve`` as a demanding and a hostile user: each test failed
before its fix."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_corpus import build, iso, sid
from test_events import Stream

from builders import entry, header, user, write_session
from conftest import Served
from omp_session.ops.search.query import SearchHit
from omp_session.paths import project_dir_name
from omp_session.serve.app import MAX_SEARCH_LIMIT, start
from omp_session.serve.pages import SearchCut, search_page
from omp_session.serve.site import build_site

CWD = "/home/u/hunt"
SURROGATE_ID = "hunt-\ud800-id"  # a lone surrogate in the header's id (a JSON \ud800 escape)
SLASH_ID = "hunt/a/../b"  # an id is the file's own word: a "/" in it is only text
NEWLINE_ID = "hunt\nline/x"  # and so is a line break


def _session(path: Path, id_json: str, text: str) -> None:
    """A session whose header's id is ``id_json``, a JSON string literal written as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = ('{"type":"session","version":3,"id":' + id_json + ',"timestamp":"' + iso(0) + '","cwd":'
            + json.dumps(CWD) + "}")
    msg = json.dumps({"type": "message", "id": "u1", "parentId": None, "timestamp": iso(1),
                      "message": {"role": "user", "content": text, "timestamp": 1}})
    path.write_text(head + "\n" + msg + "\n")


@pytest.fixture(scope="module")
def hunt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("hunt")
    root = base / "sessions"
    files = build(root, 3)
    bucket = root / project_dir_name(CWD)
    _session(bucket / "2026-01-01T00-00-00-000Z_surrogate.jsonl", r'"hunt-\ud800-id"', "surrogate id here")
    _session(bucket / "2026-01-01T00-00-00-000Z_slash.jsonl", json.dumps(SLASH_ID), "slash id here")
    _session(bucket / "2026-01-01T00-00-00-000Z_newline.jsonl", json.dumps(NEWLINE_ID), "newline id here")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        with start(root) as running:
            yield Served(root, files, running)


def _row(served: Served, text: str) -> dict[str, object]:
    reply = served.get(f"/api/sessions?text={text}")
    assert reply.status == 200, reply.text
    [row] = reply.json()["sessions"]
    return row  # type: ignore[no-any-return]


# ----- a lone surrogate in a session's id ----------------------------------------------------------


def test_a_lone_surrogate_in_a_session_id_does_not_break_the_list(hunt: Served) -> None:
    """Was 500 on ``/`` and ``/api/sessions`` (every session unlisted for one damaged header): the
    id's URL was quoted as UTF-8, which a lone surrogate is not."""
    assert hunt.get("/").status == 200
    row = _row(hunt, "surrogate")
    assert row["id"] == SURROGATE_ID
    # and its link opens it, live updates included
    page = hunt.get(str(row["url"]))
    assert page.status == 200, page.text
    assert b"surrogate id here" in page.body
    data = json.loads(page.text.split('id="omp-serve-session">')[1].split("</script>")[0])
    stream = Stream(hunt, data["events"])
    try:
        said = stream.until("ready")
        assert said["entries"] == 1
    finally:
        stream.close()


def test_a_search_hit_in_a_session_with_a_surrogate_id_links_to_it(hunt: Served) -> None:
    """The search index keeps the id as U+FFFD: its link must open the session too."""
    found = hunt.get("/search?q=surrogate")
    assert found.status == 200
    link = found.text.split('<h2><a href="')[1].split('"')[0]
    assert hunt.get(link).status == 200


# ----- a "/" in a session's id ------------------------------------------------------------------------


def test_a_session_whose_id_holds_a_slash_opens_from_its_link(hunt: Served) -> None:
    """Was 404: the listed URL ``/s/hunt%2Fa%2F..%2Fb`` is decoded to a path of several segments,
    which ``/s/{sid}`` does not match; the id is only looked up in the listing, never a path."""
    row = _row(hunt, "slash")
    assert row["url"] == "/s/hunt%2Fa%2F..%2Fb"
    page = hunt.get(str(row["url"]))
    assert page.status == 200, page.text
    assert b"slash id here" in page.body
    stream = Stream(hunt, "/events/hunt%2Fa%2F..%2Fb")
    try:
        stream.until("ready")
    finally:
        stream.close()
    row = _row(hunt, "newline")
    assert row["url"] == "/s/hunt%0Aline%2Fx"
    assert b"newline id here" in hunt.get(str(row["url"])).body
    stream = Stream(hunt, "/events/hunt%0Aline%2Fx")
    try:
        stream.until("ready")
    finally:
        stream.close()
    # still nothing but listed ids: a path is never taken from the URL
    for path in ["/s/hunt/a/../b/x", "/s/hunt%2Fa", "/s//etc/passwd", "/events/..%2F..%2Fetc%2Fpasswd"]:
        assert hunt.get(path).status == 404, path


# ----- search limits ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/search", "/search"])
@pytest.mark.parametrize("limit", ["9223372036854775807", "99999999999999999999999999"])
def test_a_huge_search_limit_is_not_a_500(hunt: Served, path: str, limit: str) -> None:
    """Was 500 with a traceback: the limit went to SQLite, which takes 64-bit integers only."""
    reply = hunt.get(f"{path}?q=unique1word&limit={limit}")
    assert reply.status == 200, reply.text
    assert b"unique1word" in reply.body
    if path == "/api/search":  # cut to the largest limit, as the JSON says
        assert hunt.get(f"{path}?q=unique1word&meta=1&limit={limit}").json()["limit"] == 1_000_000


# ----- a session's page opened on a malformed #hash -----------------------------------------------

_HASH_CHECK = """
import { launchChromium } from %(launch)s;
const spec = %(spec)s;
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(spec.url);  // the token becomes a cookie
  await page.goto(spec.base + spec.path);
  let status = '';
  try {
    await page.waitForFunction(() => window.ompServe && window.ompServe.status === 'live', null, { timeout: 10000 });
  } catch (e) { /* said below */ }
  status = await page.evaluate(() => window.ompServe ? window.ompServe.status : null);
  console.log(JSON.stringify({ status, errors }));
} finally {
  await browser.close();
}
"""


@pytest.mark.browser
def test_a_malformed_hash_does_not_stop_the_page_going_live(tmp_path: Path, browser_ready: None) -> None:
    """Was: ``/s/<id>#%E0%A4%A`` (a hand-made or cut permalink) threw URIError in the toolbar
    script before the event stream was opened: the page never went live, and later #hashes were
    not followed. The static site's page already caught it."""
    root = tmp_path / "sessions"
    build(root, 2)
    with start(root) as running:
        spec = {"url": running.url, "base": running.base, "path": f"/s/{sid(0)}#%E0%A4%A"}
        launch = (Path(__file__).resolve().parents[1] / "browser" / "launch.mjs").as_uri()
        script = tmp_path / "check_hash.mjs"
        script.write_text(_HASH_CHECK % {"launch": json.dumps(launch), "spec": json.dumps(spec)}, "utf-8")
        done = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["errors"] == []
    assert got["status"] == "live"


# ----- export --site ----------------------------------------------------------------------------------


def test_a_copied_session_is_in_the_site_search_index_once(tmp_path: Path) -> None:
    """Was twice: the index took one search text per listed file, and a copy of a session under
    another name (its id the same) shares the one page, so every hit of it was shown twice."""
    root = tmp_path / "sessions"
    first = write_session(root / "--p--" / "2026-01-01T00-00-00-000Z_a.jsonl",
                          [entry("u1", None, message=user("copied kiwiword"))], head=header("copied-1", cwd="/p"))
    (first.parent / "2026-01-01T00-00-00-000Z_b.jsonl").write_bytes(first.read_bytes())
    site = tmp_path / "site"
    report = build_site(site, root)
    assert report.problems == [] and report.sessions == 1
    text = (site / "search-index.js").read_text("utf-8")
    index = json.loads(text.removeprefix("window.ompSiteIndex = ").rstrip().removesuffix(";"))
    assert [s["id"] for s in index] == ["copied-1"]


# ----- an id's U+FFFD form shared by a genuine id -------------------------------------------------


def test_an_id_holding_u_fffd_opens_itself_not_a_damaged_id_of_that_form(tmp_path: Path) -> None:
    """Was the newer damaged session: an id with a lone surrogate was filed under its U+FFFD form
    first when it was the newer, so the listed link of the session whose id really is that form
    (``x-\\ufffd-id``) opened the other one, and it could not be opened at all. A URL names the
    session whose id it spells; a damaged id is found by its U+FFFD form only when none does."""
    root = tmp_path / "sessions"
    bucket = root / project_dir_name(CWD)
    genuine = bucket / "2026-01-01T00-00-00-000Z_genuine.jsonl"
    damaged = bucket / "2026-01-01T00-00-01-000Z_damaged.jsonl"
    _session(genuine, json.dumps("x-\ufffd-id"), "genuine kiwi")
    _session(damaged, r'"x-\ud800-id"', "damaged kiwi")
    os.utime(genuine, (1_700_000_000, 1_700_000_000))
    os.utime(damaged, (1_700_000_100, 1_700_000_100))  # the damaged one is the newer
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        with start(root) as running:
            served = Served(root, {}, running)
            rows = {r["id"]: r for r in served.get("/api/sessions").json()["sessions"]}
            assert len(rows) == 2 and "x-\ud800-id" in rows  # both listed
            page = served.get(str(rows["x-\ufffd-id"]["url"]))
            assert page.status == 200 and b"genuine kiwi" in page.body
            data = json.loads(page.text.split('id="omp-serve-session">')[1].split("</script>")[0])
            assert data["id"] == "x-\ufffd-id"


# ----- the link to more hits at the largest limit -------------------------------------------------


@pytest.mark.parametrize("sessions", [False, True])
def test_the_search_page_offers_no_more_than_the_largest_limit(sessions: bool) -> None:
    """Was a link to ``limit=2000000`` when 1,000,000 hits were shown and more matched: the limit
    is cut to 1,000,000, so it showed the same hits with the same link again; short of the cap,
    the link asked for more than it gives."""
    hit = SearchHit("s1", "t", "/r/s1.jsonl", "/p", "e1", "message", "user", "text", None, "kiwi", 0.0, None)
    at_cap = search_page("kiwi", [hit], None, cut=SearchCut(MAX_SEARCH_LIMIT, "", sessions))
    assert "limit=2000000" not in at_cap and "show 2000000" not in at_cap
    assert "first 1 " in at_cap  # still said to be cut
    near = search_page("kiwi", [hit], None, cut=SearchCut(600_000, "", sessions))
    assert "limit=1000000" in near and "show 1000000" in near and "1200000" not in near
