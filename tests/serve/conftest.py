"""A real server (uvicorn on a free port, in a thread) over a small corpus, and a raw HTTP client
that sends exactly the path and headers a test gives (no normalisation of ``..``)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import build

from omp_session.serve.app import Running, start

COUNT = 30


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


@dataclass
class Served:
    root: Path
    files: dict[str, Any]
    running: Running

    @property
    def port(self) -> int:
        return self.running.port

    def get(self, path: str, *, token: bool = True, headers: dict[str, str] | None = None,
            method: str = "GET") -> Reply:
        """``path`` sent as it is; the token as a bearer header unless ``token=False`` or given."""
        sent = {"Host": f"127.0.0.1:{self.port}"}
        if token:
            sent["Authorization"] = f"Bearer {self.running.token}"
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for k, v in sent.items():
                conn.putheader(k, v)
            conn.endheaders()
            r = conn.getresponse()
            return Reply(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("serve")
    root = base / "sessions"
    files = build(root, COUNT)
    with pytest.MonkeyPatch.context() as mp:
        # the listing cache of the module's server: never the real one
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        with start(root) as running:
            yield Served(root, files, running)
