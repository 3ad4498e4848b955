"""``omp-session serve`` as a user starts it: a process that prints its URL and answers it."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
from pathlib import Path

from serve_corpus import build


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(sys.path)}


def test_the_command_prints_its_url_and_serves_it(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    build(root, 3)
    proc = subprocess.Popen([sys.executable, "-m", "omp_session", "serve", "--root", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"omp-session serve: {root}"
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        port = int(url.split(":")[2].split("/")[0])
        token = url.split("token=")[1]
        assert len(token) >= 40

        def get(path: str, headers: dict[str, str]) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request("GET", path, headers=headers)
                return conn.getresponse().status
            finally:
                conn.close()

        assert get("/", {}) == 403
        assert get(f"/?token={token}", {"Accept": "text/html"}) == 303
        assert get("/", {"Authorization": f"Bearer {token}"}) == 200
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_without_the_extra_it_says_which_to_install(tmp_path: Path) -> None:
    code = ("import sys\nsys.modules['starlette'] = None\nfrom omp_session.cli import main\n"
            f"sys.argv = ['omp-session', 'serve', '--root', {str(tmp_path)!r}]\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(tmp_path),
                          timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "omp-session: omp-session serve needs the starlette package: pip install 'omp-session[serve]' "
        "(or omp-session[all])"]


def test_a_missing_root_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "omp_session", "serve", "--root", str(tmp_path / "nope")],
                          capture_output=True, text=True, env=_env(tmp_path), timeout=60)
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "no such sessions directory" in done.stderr
