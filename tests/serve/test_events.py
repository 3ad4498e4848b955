"""``/events/<id>``: the follower's changes as server-sent events; the server lives through
whatever happens to a followed file (truncated, replaced, deleted)."""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import append, build, new_message, sid

from builders import line
from conftest import Served
from omp_session.serve.app import start

# the acceptance bound for a new entry to reach an open page; the server polls every 0.25 s
LIVE_DEADLINE = 2.0


class Stream:
    """An open event stream, read one event at a time."""

    def __init__(self, served: Served, path: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=LIVE_DEADLINE)
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {served.running.token}",
                                                "Accept": "text/event-stream"})
        self.reply = self.conn.getresponse()

    def next(self) -> tuple[str, Any]:
        """The next event (comments and retry lines skipped); raises TimeoutError past the deadline."""
        kind, data = "message", None
        deadline = time.monotonic() + LIVE_DEADLINE
        while time.monotonic() < deadline:
            raw = self.reply.readline()
            if not raw:
                raise ConnectionError("the stream ended")
            text = raw.decode().rstrip("\n")
            if text.startswith("event: "):
                kind = text[7:]
            elif text.startswith("data: "):
                data = json.loads(text[6:])
            elif text == "" and data is not None:
                return kind, data
        raise TimeoutError

    def until(self, wanted: str) -> Any:
        while True:
            kind, data = self.next()
            if kind == wanted:
                return data

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Served]:
    root = tmp_path / "sessions"
    files = build(root, 4)
    with start(root) as running:
        yield Served(root, files, running)


def test_an_append_arrives(live: Served) -> None:
    s = Stream(live, f"/events/{sid(0)}")
    try:
        assert s.reply.status == 200
        assert s.reply.getheader("content-type", "").startswith("text/event-stream")
        assert s.until("ready") == {"leaf": "a1", "entries": 2, "title": None}
        append(live.files["paths"][sid(0)], new_message("n1", "a1", "appended live"))
        assert s.until("appended") == {"id": "n1", "type": "message"}
        append(live.files["paths"][sid(0)], new_message("n2", "u1", "another branch"))
        switched = s.until("branch_switch")
        assert switched["new_leaf"] == "n2" and switched["fork_id"] == "u1"
    finally:
        s.close()


def test_the_server_survives_truncation_replacement_and_deletion(live: Served) -> None:
    path: Path = live.files["paths"][sid(1)]
    original = path.read_bytes()
    s = Stream(live, f"/events/{sid(1)}")
    try:
        s.until("ready")
        # truncated: omp's failed append rolled back, or another tool's rewrite
        with open(path, "r+b") as f:
            f.truncate(len(original) // 2)
        assert s.until("truncated")["new_leaf"] is not None
        # replaced: a rewrite renamed over the path (a new inode)
        tmp = path.with_name("tmp.jsonl.new")
        tmp.write_bytes(original + (line(new_message("r1", "b2", "after the rewrite")) + "\n").encode())
        os.replace(tmp, path)
        assert s.until("replaced")["new_leaf"] == "r1"
        path.unlink()
        s.until("deleted")
        # while it is gone: the pages answer, the session is not found
        assert live.get("/").status == 200
        assert live.get(f"/s/{sid(1)}").status == 404
        path.write_bytes(original)
        assert s.until("replaced")["new_leaf"] == "b2"
        assert live.get(f"/s/{sid(1)}").status == 200
    finally:
        s.close()
    # the server goes on after the client left
    assert live.get("/api/sessions").status == 200


def test_a_damaged_append_is_skipped_not_fatal(live: Served) -> None:
    path: Path = live.files["paths"][sid(2)]
    s = Stream(live, f"/events/{sid(2)}")
    try:
        s.until("ready")
        with open(path, "ab") as f:
            f.write(b'{"type":"message","id":\n')
        assert s.until("skipped")["length"] > 0
        append(path, new_message("ok1", "a1", "still followed"))
        assert s.until("appended")["id"] == "ok1"
    finally:
        s.close()


def test_an_archive_is_not_followed(live: Served) -> None:
    s = Stream(live, f"/events/{sid(3)}")
    try:
        assert s.until("ready") == {"leaf": None, "entries": None, "title": None}
    finally:
        s.close()
