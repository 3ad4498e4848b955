"""The guard (serve/security.py) over a real server: token, Host, Origin, CSP on every answer,
and no path from a URL ever reaching a file that the listing did not list."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from serve_corpus import sid

from builders import entry, header, run, user, write_session
from conftest import Served
from omp_session.cli import cli
from omp_session.paths import project_dir_name
from omp_session.serve.security import Guard

PAGES = ["/", "/api/sessions", f"/s/{sid(3)}", f"/events/{sid(3)}", "/search?q=alpha", "/api/search?q=alpha",
         "/costs", "/api/costs", "/static/serve.css", "/nowhere"]


@pytest.mark.parametrize("path", PAGES)
def test_no_token_is_403(served: Served, path: str) -> None:
    r = served.get(path, token=False)
    assert r.status == 403
    assert b"token" in r.body
    assert "default-src 'self'" in r.headers["content-security-policy"]


@pytest.mark.parametrize("how", ["query", "bearer", "cookie"])
def test_a_wrong_token_is_403(served: Served, how: str) -> None:
    wrong = served.running.token[:-1] + ("A" if served.running.token[-1] != "A" else "B")
    if how == "query":
        r = served.get(f"/api/sessions?token={wrong}", token=False)
    elif how == "bearer":
        r = served.get("/api/sessions", token=False, headers={"Authorization": f"Bearer {wrong}"})
    else:
        r = served.get("/api/sessions", token=False, headers={"Cookie": f"omp_session_token_{served.port}={wrong}"})
    assert r.status == 403


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_address_bar(served: Served) -> None:
    r = served.get(f"/?token={served.running.token}&sort=size", token=False, headers={"Accept": "text/html"})
    assert r.status == 303
    assert r.headers["location"] == "/?sort=size"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"omp_session_token_{served.port}={served.running.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    again = served.get("/?sort=size", token=False, headers={"Cookie": cookie.split(";")[0]})
    assert again.status == 200 and b"<table" in again.body
    # a script's request with ?token= is answered directly (and gets the cookie too)
    api = served.get(f"/api/sessions?token={served.running.token}", token=False)
    assert api.status == 200 and "set-cookie" in api.headers


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1", "127.0.0.2:{port}",
                                  "localhost.evil.example:{port}", "", "[::2]:{port}"])
def test_a_foreign_host_is_403(served: Served, host: str) -> None:
    r = served.get("/api/sessions", headers={"Host": host.format(port=served.port)})
    assert r.status == 403
    assert b"Host" in r.body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "[::1]:{port}"])
def test_the_local_names_are_accepted(served: Served, host: str) -> None:
    assert served.get("/api/sessions", headers={"Host": host.format(port=served.port)}).status == 200


def test_cross_site_requests_are_403(served: Served) -> None:
    assert served.get("/api/sessions", headers={"Origin": "http://evil.example"}).status == 403
    assert served.get("/api/sessions", headers={"Sec-Fetch-Site": "cross-site"}).status == 403
    assert served.get("/api/sessions", headers={"Origin": "null"}).status == 403
    own = f"http://127.0.0.1:{served.port}"
    assert served.get("/api/sessions", headers={"Origin": own}).status == 200
    # nothing but GET without the server's own origin; with it, there is still nothing to write
    assert served.get("/api/sessions", method="POST").status == 403
    assert served.get("/api/sessions", method="POST", headers={"Origin": "http://evil.example"}).status == 403
    assert served.get("/api/sessions", method="POST", headers={"Origin": own}).status == 405


def test_every_answer_has_the_csp(served: Served) -> None:
    for path in ["/", "/api/sessions", "/search?q=alpha", "/costs", "/static/session.js", "/s/nope", "/nowhere"]:
        r = served.get(path)
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp, path
        assert "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp.split("style-src")[0], path
        assert r.headers["x-content-type-options"] == "nosniff"
    page = served.get(f"/s/{sid(3)}")
    assert page.status == 200
    csp = page.headers["content-security-policy"]
    script_src = csp.split("script-src", 1)[1].split(";", 1)[0]
    assert "'self'" in script_src and "'sha256-" in script_src and "unsafe" not in script_src
    # the export's own meta policy (which would forbid the live script) is replaced by the header
    assert b'http-equiv="Content-Security-Policy"' not in page.body


@pytest.mark.parametrize("path", [
    "/s/..", "/s/../../etc/passwd", "/s/..%2F..%2Fetc%2Fpasswd", "/s/%2Fetc%2Fpasswd", "/s//etc/passwd",
    "/s/%2e%2e", "/s/etc%00", "/s/nope", "/s/" + sid(3)[:8], "/s/" + sid(3) + ".jsonl",
    "/events/..", "/events/%2Fetc%2Fpasswd", "/events/nope",
    "/static/..%2Fapp.py", "/static/../app.py", "/static/app.py", "/static/%2Fetc%2Fpasswd",
])
def test_paths_never_reach_a_file(served: Served, path: str) -> None:
    r = served.get(path)
    assert r.status == 404, (path, r.status)
    assert b"root:" not in r.body and b"import" not in r.body


def test_symlinks_out_of_the_root_are_not_served(served: Served, tmp_path: Path) -> None:
    outside = write_session(tmp_path / "outside.jsonl",
                            [entry("x1", None, message=user("a secret kept outside"))],
                            head=header("outside-0001", cwd="/home/u/proj0"))
    bucket = served.root / project_dir_name("/home/u/proj0")
    link = bucket / "2026-01-02T00-00-00-000Z_outside-0001.jsonl"
    os.symlink(outside, link)
    linked_bucket = served.root / "--linked--"
    os.symlink(tmp_path, linked_bucket)
    sub_folder = Path(str(served.files["paths"][sid(2)])[: -len(".jsonl")])
    os.symlink(outside, sub_folder / "agent9.jsonl")
    try:
        assert served.get("/s/outside-0001").status == 404
        assert served.get("/events/outside-0001").status == 404
        listed = served.get("/api/sessions?per_page=1000").json()["sessions"]
        assert all("outside" not in row["id"] for row in listed)
        assert all(not row["path"].startswith(str(tmp_path)) for row in listed)
    finally:
        for p in (link, linked_bucket, sub_folder / "agent9.jsonl"):
            p.unlink()


def test_remote_hosts_accept_addresses_not_names() -> None:
    async def app(scope: object, receive: object, send: object) -> None:  # never reached here
        raise AssertionError

    guard = Guard(app, token="t", host="0.0.0.0", port=8000, remote=True)
    assert guard.host_ok("192.168.1.20:8000") and guard.host_ok("[fe80::1]:8000") and guard.host_ok("localhost:8000")
    assert not guard.host_ok("evil.example:8000") and not guard.host_ok("192.168.1.20:8001")
    local = Guard(app, token="t", host="127.0.0.1", port=8000)
    assert not local.host_ok("192.168.1.20:8000") and local.host_ok("127.0.0.1:8000")


def test_another_host_needs_allow_remote(tmp_path: Path) -> None:
    code, _out, err = run(cli, "serve", "--root", str(tmp_path), "--host", "0.0.0.0")
    assert code == 2
    assert "--allow-remote" in err
