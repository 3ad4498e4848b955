"""Review of the streamed session page, the 5-hour blocks and the listing refresh (issue 18):
each test failed before its fix."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import sid

from builders import assistant, entry, header, user, write_session
from omp_session.catalog import listing
from omp_session.paths import project_dir_name
from omp_session.serve.app import build_app
from omp_session.serve.sessions import Catalog
from omp_session.serve.viewer import session_stream

ENTRIES = 100
TEXT = 100 * 1024  # 100 answers of 100 KB: a 10 MB file, read through its handle as the page goes


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _big(root: Path) -> Path:
    es: list[dict[str, Any]] = []
    parent = None
    for k in range(ENTRIES):
        es.append(entry(f"u{k}", parent, message=user(f"question {k}")))
        es.append(entry(f"a{k}", f"u{k}", message=assistant(f"answer {k} " + "x" * TEXT)))
        parent = f"a{k}"
    path = root / project_dir_name("/w") / f"2026-01-01T00-00-00-000Z_{sid(1)}.jsonl"
    return write_session(path, es, head=header(sid(1), cwd="/w"))


def _held(path: Path) -> int:
    """Descriptors of this process open on ``path``."""
    real, n = os.path.realpath(path), 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since it was listed
            n += os.readlink(f"/proc/self/fd/{fd}") == real
    return n


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Only what the code closes is closed: no collection cleans up after it."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


# ----- the streamed page ----------------------------------------------------------------------


def test_a_session_truncated_while_its_page_is_sent_ends_with_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = _big(root)
    catalog = Catalog(root, cache=False)
    row = catalog.find(sid(1))
    assert row is not None
    pieces = session_stream(catalog, row).pieces
    sent = [next(pieces), next(pieces)]
    os.truncate(path, path.stat().st_size // 2)  # cut in place while the reader is on the page
    sent += list(pieces)
    page = b"".join(sent)
    # not a whole-looking page whose data block is cut JSON: the page ends saying what happened
    ending = page[-600:].decode("utf-8", "replace")
    assert 'id="serve-error"' in ending and "could not be read to its end" in ending and "truncated" in ending, ending
    assert b'<script src="/static/session.js">' not in page
    assert _held(path) == 0


def test_a_reader_gone_before_the_first_piece_closes_the_file(tmp_path: Path, no_gc: None) -> None:
    root = tmp_path / "sessions"
    path = _big(root)
    port = 8123
    app = build_app(root, token="t", port=port, cache=False)
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": f"/s/{sid(1)}", "raw_path": f"/s/{sid(1)}".encode(),
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", port), "client": ("127.0.0.1", 5),
             "headers": [(b"host", f"127.0.0.1:{port}".encode()), (b"authorization", b"Bearer t")]}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}  # the reader is already gone

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent and sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert _held(path) == 0


# ----- the listing refresh --------------------------------------------------------------------


def test_a_file_swapped_for_a_symlink_during_the_scan_is_not_listed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "sessions"
    bucket = root / project_dir_name("/w")
    target = write_session(bucket / f"2026-01-01T00-00-00-000Z_{sid(1)}.jsonl",
                           [entry("u1", None, message=user("the real one"))], head=header(sid(1), cwd="/w"))
    swapped = write_session(bucket / f"2026-01-02T00-00-00-000Z_{sid(2)}.jsonl",
                            [entry("u1", None, message=user("soon a link"))], head=header(sid(2), cwd="/w"))
    real = listing.is_quarantine_name

    def swap_then_answer(name: str) -> bool:
        # between the scan's "regular file" and its lstat, the file becomes a symlink
        if name == swapped.name and not swapped.is_symlink():
            swapped.unlink()
            swapped.symlink_to(target)
        return real(name)

    monkeypatch.setattr(listing, "is_quarantine_name", swap_then_answer)
    catalog = Catalog(root, cache=False)
    paths = [r.path for r in catalog.rows()]
    assert paths == [str(target)]
