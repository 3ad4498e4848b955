"""``/s/<id>`` is sent as the export makes it: a big session's page is never one ``bytes`` in the
server, the first piece is the head, the reader going away closes the file, and a read error
after the first byte ends the page with the reason instead of a cut connection."""

from __future__ import annotations

import os
import re
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import sid

from builders import assistant, entry, header, run, user, write_session
from conftest import Served
from omp_session.cli import cli
from omp_session.paths import project_dir_name
from omp_session.serve import viewer
from omp_session.serve.app import start
from omp_session.serve.sessions import Catalog
from omp_session.serve.viewer import _inline_script_hashes, session_stream

MB = 1024 * 1024
ENTRIES = 120
TEXT = 100 * 1024  # 120 answers of 100 KB: a 12 MB file, past the 8 MB a file is read whole below
_DATA = re.compile(rb'<script type="application/json" id="omp-session-data">(.*?)</script>', re.S)


def _big(root: Path) -> Path:
    es: list[dict[str, Any]] = []
    parent = None
    for k in range(ENTRIES):
        es.append(entry(f"u{k}", parent, message=user(f"question {k}")))
        es.append(entry(f"a{k}", f"u{k}", message=assistant(f"answer {k} " + "x<y " * (TEXT // 4))))
        parent = f"a{k}"
    path = root / project_dir_name("/w") / f"2026-01-01T00-00-00-000Z_{sid(1)}.jsonl"
    return write_session(path, es, head=header(sid(1), cwd="/w"))


@pytest.fixture(scope="module")
def big_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stream") / "sessions"
    _big(root)
    return root


def _stream(root: Path) -> viewer.SessionStream:
    catalog = Catalog(root, cache=False)
    row = catalog.find(sid(1))
    assert row is not None
    return session_stream(catalog, row)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_page_comes_in_pieces_and_is_the_export(big_root: Path, tmp_path: Path) -> None:
    size = sum(f.stat().st_size for f in big_root.rglob("*.jsonl"))
    assert size > 10 * MB
    stream = _stream(big_root)
    pieces = list(stream.pieces)
    head = pieces[0]
    assert len(head) < 64 * 1024 and b"</head>" in head and b'<link rel="stylesheet" href="/static/serve.css">' in head
    assert b'http-equiv="Content-Security-Policy"' not in head
    assert len(pieces) >= 10 and max(len(p) for p in pieces) < 3 * MB
    page = b"".join(pieces)
    assert page.rstrip().endswith(b"</html>") and page.count(b'<script src="/static/session.js">') == 1
    # the data block is the one `export --format html` writes
    exported = tmp_path / "s.html"
    path = next(big_root.rglob("*.jsonl"))
    code, _out, err = run(cli, "export", str(path), "--format", "html", "-o", str(exported))
    assert code == 0, err
    got, want = _DATA.search(page), _DATA.search(exported.read_bytes())
    assert got is not None and want is not None and got.group(1) == want.group(1)
    # the header names the hash of every inline script the page runs, worked out before the first byte
    hashes = _inline_script_hashes(page)
    assert hashes and all(h in stream.csp for h in hashes)


def test_the_page_is_never_held_whole(big_root: Path) -> None:
    tracemalloc.start()
    try:
        total = 0
        for piece in _stream(big_root).pieces:
            total += len(piece)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 10 * MB
    # the file's index and a piece or two, never the page (nor the file read whole)
    assert peak < total / 2, (peak, total)


def test_a_reader_going_away_closes_the_file(big_root: Path) -> None:
    before = _open_fds()
    stream = _stream(big_root)
    assert _open_fds() == before + 1  # the big file is read through its handle as the page goes
    next(stream.pieces)
    next(stream.pieces)
    stream.pieces.close()  # type: ignore[attr-defined]
    assert _open_fds() == before


def test_over_http_the_page_is_chunked_with_its_hashes(big_root: Path) -> None:
    with start(big_root) as running:
        served = Served(big_root, {}, running)
        reply = served.get(f"/s/{sid(1)}")
        assert reply.status == 200
        assert reply.headers.get("transfer-encoding") == "chunked" and "content-length" not in reply.headers
        csp = reply.headers["content-security-policy"]
        assert all(h in csp for h in _inline_script_hashes(reply.body))
        assert reply.body.count(b"x\\u003cy ") == ENTRIES * (TEXT // 4)


def test_a_read_error_after_the_first_byte_ends_the_page_with_its_reason(
        big_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = viewer.render_html_pieces

    def failing(*args: Any, **kw: Any) -> Iterator[bytes]:
        pieces = real(*args, **kw)

        def gen() -> Iterator[bytes]:
            yield next(pieces)
            yield next(pieces)
            raise OSError(5, "Input/output error")

        return gen()

    monkeypatch.setattr(viewer, "render_html_pieces", failing)
    with start(big_root) as running:
        served = Served(big_root, {}, running)
        reply = served.get(f"/s/{sid(1)}")
        assert reply.status == 200  # sent before the error
        ending = reply.body[-400:].decode()
        assert 'id="serve-error"' in ending and "could not be read to its end" in ending
        assert "Input/output error" in ending and ending.rstrip().endswith("</html>")
        monkeypatch.setattr(viewer, "render_html_pieces", real)
        assert served.get(f"/s/{sid(1)}").status == 200  # and the server goes on
