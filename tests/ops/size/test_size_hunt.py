"""Regressions found by hunting bugs in ``externalize`` / ``prune`` / ``size``."""

from __future__ import annotations

import base64
import hashlib
import json
import random
from pathlib import Path

import pytest

from omp_session.ops.size.externalize import externalize


def _png(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": "), (",", ": "), (",", ":\t"), (",", " : ")])
def test_externalize_moves_images_of_a_session_written_with_spaces_after_the_colons(
        tmp_path: Path, separators: tuple[str, str]) -> None:
    """A session written by another tool (Python's json.dumps puts a space after ':') is what
    externalize is for; its byte prefilter only knew '"data":"' and '"result":"', so such a
    file kept every image inline and externalize reported nothing to move."""
    data = _png(3000, 1)
    url = "data:image/png;base64," + base64.b64encode(_png(3000, 2)).decode()
    h = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
    e = {"type": "message", "id": "e0", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "toolResult", "toolCallId": "t", "toolName": "read", "timestamp": 1,
                     "content": [{"type": "image", "data": base64.b64encode(data).decode(),
                                  "mimeType": "image/png"}]}}
    e2 = {"type": "message", "id": "e1", "parentId": "e0", "timestamp": "2026-01-01T00:00:02.000Z",
          "message": {"role": "user", "timestamp": 2,
                      "content": [{"type": "input_image", "image_url": url}]}}
    src = tmp_path / "s.jsonl"
    src.write_text("".join(json.dumps(v, separators=separators) + "\n" for v in (h, e, e2)))
    store = tmp_path / "blobs"
    res = externalize(src, tmp_path / "out.jsonl", store=store)
    sha = hashlib.sha256(data).hexdigest()
    url_sha = hashlib.sha256(url.encode()).hexdigest()
    assert res.images_moved == 2, res
    out = (tmp_path / "out.jsonl").read_text()
    assert f"blob:sha256:{sha}" in out and (store / sha).read_bytes() == data
    assert f"blob:sha256:{url_sha}" in out and (store / url_sha).read_bytes() == url.encode()
