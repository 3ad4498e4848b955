"""Bugs found in the review of ``omp-session serve`` (issue 18): each test failed before its fix."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import build, iso, sid
from test_events import Stream

from builders import entry, header, user, write_session
from conftest import Served
from omp_session.paths import project_dir_name
from omp_session.serve.app import start
from omp_session.serve.sessions import Catalog, Query
from omp_session.serve.viewer import session_page

ODD_CWD = "/home/u/odd"
SURROGATE_ID = "odd-surrogate-0001"
SPACED_ID = "odd id #1?x"


def _raw_session(path: Path, sid_: str, text_json: str, *, cwd: str = ODD_CWD) -> Path:
    """A session whose first message is ``text_json``, a JSON string literal written as it is
    (so it may hold what Python cannot write, a lone surrogate escape)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = json.dumps({"type": "session", "version": 3, "id": sid_, "timestamp": iso(0), "cwd": cwd})
    msg = ('{"type":"message","id":"u1","parentId":null,"timestamp":"' + iso(1) + '","message":{"role":"user",'
           '"content":' + text_json + ',"timestamp":1}}')
    path.write_text(head + "\n" + msg + "\n")
    return path


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A root with sessions holding what a damaged or hostile file can hold."""
    base = tmp_path_factory.mktemp("odd")
    root = base / "sessions"
    files = build(root, 3)
    bucket = root / project_dir_name(ODD_CWD)
    _raw_session(bucket / f"2026-01-01T00-00-00-000Z_{SURROGATE_ID}.jsonl", SURROGATE_ID,
                 r'"lone \ud800 surrogate <script>alert(1)</script> \"onerror=x"')
    _raw_session(bucket / "2026-01-01T00-00-00-000Z_spaced.jsonl", SPACED_ID, '"an id with a space"')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        with start(root) as running:
            yield Served(root, files, running)


# ----- a lone surrogate in a session (a damaged file, or JavaScript's own strings) -------------


def test_a_lone_surrogate_in_one_session_does_not_break_the_pages(odd: Served) -> None:
    """Was: every route that lists answered 500 (the listing cache could not be saved, then the
    JSON and HTML could not be encoded)."""
    page = odd.get("/")
    assert page.status == 200
    assert "lone \ufffd surrogate &lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert b"<script>alert" not in page.body
    api = odd.get("/api/sessions?text=surrogate")
    assert api.status == 200
    [row] = api.json()["sessions"]
    assert row["first_message"].startswith("lone \ud800 surrogate <script>")  # \ud800 as JSON says it
    assert odd.get(f"/s/{SURROGATE_ID}").status == 200
    found = odd.get("/search?q=surrogate")
    assert found.status == 200 and b"<script>alert" not in found.body


def test_a_session_id_is_quoted_in_its_url(odd: Served) -> None:
    [row] = odd.get("/api/sessions?text=space").json()["sessions"]
    assert row["url"] == "/s/odd%20id%20%231%3Fx"
    assert odd.get(row["url"]).status == 200


# ----- the token ---------------------------------------------------------------------------------


@pytest.mark.parametrize("others", ['a="unterminated', 'j={"a":1}', "a b=c", "x=1; y=\\z"])
def test_the_cookie_is_found_among_other_cookies_of_localhost(served: Served, others: str) -> None:
    """Was 403: SimpleCookie stops at the first cookie it cannot parse (any other app on localhost
    may set one), so the token cookie after it was never seen."""
    cookie = f"{others}; omp_session_token_{served.port}={served.running.token}"
    assert served.get("/api/sessions", token=False, headers={"Cookie": cookie}).status == 200


@pytest.mark.parametrize(("path", "location"), [
    ("//evil.example/x", "/%2Fevil.example/x"),
    ("/\\evil.example/x", "/%5Cevil.example/x"),
    ("/s/a%0d%0aX-Evil:%201", "/s/a%0d%0aX-Evil:%201"),
    ("/s/%C3%A9", "/s/%C3%A9"),
    ("/s/a%2Fb", "/s/a%2Fb"),
])
def test_the_redirect_after_the_token_keeps_the_path_as_sent(served: Served, path: str, location: str) -> None:
    """Was: the decoded path went into Location: ``//evil.example`` became an open redirect,
    ``%0d%0a`` a header the server refused to send (no answer at all), ``%C3%A9`` mojibake."""
    r = served.get(f"{path}?token={served.running.token}&q=%C3%A9", token=False, headers={"Accept": "text/html"})
    assert r.status == 303
    assert r.headers["location"] == f"{location}?q=%C3%A9"
    assert "x-evil" not in r.headers


# ----- paging and filters ----------------------------------------------------------------------------


def test_paging_past_the_end_is_empty_not_the_last_page_again(served: Served) -> None:
    """Was: any page past the end answered the last page, so a script paging until an empty page
    never stopped, and every row of the last page came twice."""
    seen: list[str] = []
    for number in range(1, 20):
        doc = served.get(f"/api/sessions?per_page=7&page={number}").json()
        if not doc["sessions"]:
            assert number == doc["pages"] + 1 and doc["page"] == number
            break
        seen += [r["id"] for r in doc["sessions"] if r["subagent_of"] is None]
    else:
        pytest.fail("the pages never ended")
    assert len(seen) == len(set(seen)) == served.get("/api/sessions").json()["total"]
    assert served.get("/?page=99").status == 200


@pytest.mark.parametrize("page", ["0", "-3"])
def test_a_page_number_below_one_is_400(served: Served, page: str) -> None:
    assert served.get(f"/api/sessions?page={page}").status == 400
    assert served.get(f"/?page={page}").status == 400


@pytest.mark.parametrize("query", ["since=0001-01-01", "until=0001-01-01", "until=9999-12-31", "since=9999-12-31"])
def test_extreme_dates_are_answered_not_500(served: Served, query: str) -> None:
    r = served.get(f"/api/sessions?{query}")
    assert r.status in (200, 400), r.text
    assert r.headers["content-type"].startswith("application/json")


def test_until_is_the_whole_local_day_on_a_daylight_saving_day(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: ``until`` + 24 h, one hour into the next day when the clocks went forward."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        root = tmp_path / "sessions"
        path = write_session(root / project_dir_name("/p") / "2026-03-30T00-00-00-000Z_dst.jsonl",
                             [entry("u1", None, message=user("next day"))], head=header("dst-1", cwd="/p"))
        # 2026-03-30 00:30 in Berlin (summer time since 29 March 02:00): the day after the 29th
        mtime = time.mktime((2026, 3, 30, 0, 30, 0, 0, 0, -1))
        os.utime(path, (mtime, mtime))
        catalog = Catalog(root, cache=False)
        assert catalog.page(Query(until="2026-03-29")).total == 0
        assert catalog.page(Query(until="2026-03-30")).total == 1
        assert catalog.page(Query(since="2026-03-30")).total == 1
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


# ----- files that are not what the listing saw ---------------------------------------------------------


def _secret_session(folder: Path, sid_: str = "outside-secret") -> Path:
    return write_session(folder / "secret.jsonl", [entry("x1", None, message=user("SECRETWORD kept outside"))],
                         head=header(sid_, cwd="/elsewhere"))


def test_a_subagent_symlink_out_of_the_root_is_not_embedded(tmp_path: Path) -> None:
    """Was: the viewer embedded every ``*.jsonl`` of the session's folder, a symlink to a
    transcript anywhere on the disk included."""
    root = tmp_path / "sessions"
    files = build(root, 4)  # the last one is archived
    outside = _secret_session(tmp_path / "outside")
    folder = Path(str(files["paths"][sid(2)])[: -len(".jsonl")])
    os.symlink(outside, folder / "agent9.jsonl")
    # and a session whose whole artifacts folder is a link to somewhere else
    linked = Path(str(files["paths"][sid(1)])[: -len(".jsonl")])
    os.symlink(outside.parent, linked)
    with start(root) as running:
        served = Served(root, files, running)
        for n in (1, 2):
            page = served.get(f"/s/{sid(n)}")
            assert page.status == 200
            assert b"SECRETWORD" not in page.body
    # with no link among them, the subagents are embedded as before
    os.unlink(folder / "agent9.jsonl")
    with start(root) as running:
        assert b"subagent task" in Served(root, files, running).get(f"/s/{sid(2)}").body


def test_a_session_swapped_for_a_symlink_after_it_was_listed_is_not_read(tmp_path: Path) -> None:
    """Was: ``find`` checked the file, then the page opened the path again, following whatever it
    had become in between (the race is made here by swapping between the two)."""
    root = tmp_path / "sessions"
    files = build(root, 2)
    outside = _secret_session(tmp_path / "outside")
    catalog = Catalog(root, cache=False)
    row = catalog.find(sid(0))
    assert row is not None
    path = files["paths"][sid(0)]
    path.unlink()
    os.symlink(outside, path)
    with pytest.raises(OSError):
        session_page(catalog, row)
    # and a bucket swapped for a link
    row = catalog.find(sid(1))
    assert row is not None
    bucket = Path(row.path).parent
    os.rename(bucket, tmp_path / "moved")
    (tmp_path / "moved" / Path(row.path).name).unlink()
    os.symlink(tmp_path / "outside", bucket)
    os.symlink(outside, tmp_path / "outside" / Path(row.path).name)
    with pytest.raises(OSError):
        session_page(catalog, row)


def test_a_followed_session_swapped_for_a_symlink_reveals_nothing(tmp_path: Path) -> None:
    """Was: the follower opened the path on every poll, symlink or not, and told the page the
    outside file's title and entries."""
    root = tmp_path / "sessions"
    files = build(root, 2)
    outside = write_session(tmp_path / "outside" / "secret.jsonl",
                            [entry("x1", None, message=user("kept outside"))],
                            head=header("outside-secret", cwd="/elsewhere"), slot="SECRETTITLE")
    path: Path = files["paths"][sid(0)]
    with start(root, interval=0.05) as running:
        served = Served(root, files, running)
        s = Stream(served, f"/events/{sid(0)}")
        try:
            s.until("ready")
            path.unlink()
            os.symlink(outside, path)
            said: list[tuple[str, Any]] = []
            with pytest.raises(TimeoutError):
                while True:
                    said.append(s.next())
            assert said and all("SECRETTITLE" not in json.dumps(d) and "x1" not in json.dumps(d) for _, d in said)
            assert said[0][0] == "unreadable"
        finally:
            s.close()


# ----- stopping ------------------------------------------------------------------------------------------


def test_ctrl_c_with_open_streams_stops_cleanly(tmp_path: Path) -> None:
    """Was: exit status 1, ``Aborted!`` and a traceback per open event stream."""
    root = tmp_path / "sessions"
    build(root, 2)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "omp_session", "serve", "--root", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    socks = []
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        url = proc.stdout.readline().strip()
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(f"GET /events/{sid(0)} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         f"Authorization: Bearer {token}\r\n\r\n".encode())
            assert b"event: ready" in _read_until(sock, b"event: ready")
            socks.append(sock)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)  # a guard against a hang, not a measure
    finally:
        for sock in socks:
            sock.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Aborted" not in err


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    got = b""
    while marker not in got:
        chunk = sock.recv(4096)
        if not chunk:
            break
        got += chunk
    return got



# ----- another app of this machine ------------------------------------------------------------------


def test_a_page_of_another_local_port_cannot_fetch_the_apis(served: Served) -> None:
    """Was 200: a page of any other server on localhost is the same *site*, so the SameSite=Strict
    cookie goes with its requests (``<script src>``, ``<img>``, no-cors fetch); only the browser's
    resource policy stood between it and the JSON. Navigating here from it is still fine."""
    sub = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"}
    for path in ["/api/sessions", "/api/search?q=alpha", "/api/costs", f"/events/{sid(3)}"]:
        assert served.get(path, headers=sub).status == 403, path
    nav = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    assert served.get("/", headers=nav).status == 200
    own = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    assert served.get("/api/sessions", headers=own).status == 200
