"""``serve --store`` subagent transcripts: only the files or keys of the session's own folder are
ever embedded, exactly as the file page embeds them: a ``file:`` store follows no symlink (the
file page's rule), a key that is not written as its path would be (``//``) does not make the
page read another folder's keys, and a transcript named with dots (``...jsonl``: agent ``..``)
names no folder above its own, on the files as on a store."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from storeutil import PORT, TOKEN, store_app
from storeutil import client as http_client
from team_corpus import TASK_SESSION, build_member

import omp_session
from builders import entry, header, user, write_session
from omp_session.ops.export.html import render_html
from omp_session.ops.export.subagents import artifacts_dir, find_subagents
from omp_session.serve.app import build_app
from omp_session.serve.store_source import StoreCatalog
from stores.sqlutil import fresh_table

_BLOCK = re.compile(rb'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


def _blocks(body: bytes) -> dict[str, Any]:
    out = {name.decode(): json.loads(data) for name, data in _BLOCK.findall(body)}
    out.pop("omp-serve-session", None)
    return out


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


@contextlib.contextmanager
def _store_client(url: str, *, create: bool = False) -> Iterator[tuple[TestClient, StoreCatalog]]:
    made, catalog = store_app(url, create=create)
    try:
        yield made, catalog
    finally:
        catalog.close()
        catalog.storage.close()


def _secret(path: Path, sid: str, word: str) -> Path:
    """A session file outside the served root: nothing of it may reach a page."""
    return write_session(path, [entry("s1", None, timestamp="2026-01-02T10:00:00.000Z", message=user(word))],
                         head=header(sid, cwd="/elsewhere", timestamp="2026-01-02T10:00:00.000Z"))


@pytest.mark.parametrize("link", ["transcript", "folder"])
def test_a_file_store_follows_no_symlink_to_a_transcript(agent_dir: Path, link: str) -> None:
    root = agent_dir / "alice"
    parent = build_member(root, "alice")[TASK_SESSION]
    folder = parent.with_suffix("")
    outside = agent_dir / "outside"
    secret = _secret(outside / "Zlinked.jsonl", "secret-session", "SECRETWORD")
    if link == "transcript":
        (folder / "Zlinked.jsonl").symlink_to(secret)
    else:  # the whole artifacts folder, as a link to one elsewhere
        for f in sorted(folder.rglob("*.jsonl"), reverse=True):
            target = outside / f.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            f.rename(target)
        for d in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
            d.rmdir()
        folder.rmdir()
        folder.symlink_to(outside, target_is_directory=True)
    files = http_client(build_app(root, token=TOKEN, port=PORT, cache=False)).get(f"/s/{TASK_SESSION}")
    with _store_client(f"file:{root}") as (client, _catalog):
        stored = client.get(f"/s/{TASK_SESSION}")
        assert files.status_code == stored.status_code == 200, stored.text
        assert "SECRETWORD" not in files.text
        assert "SECRETWORD" not in stored.text and "secret-session" not in stored.text
        assert _blocks(stored.content) == _blocks(files.content)


@pytest.mark.parametrize(("session_key", "other_key"), [
    # an empty bucket: the page's folder, read through Path, would be the bucket "…_mine"
    ("/team/sessions//2026-01-02T10-00-00-000Z_mine.jsonl",
     "/team/sessions/2026-01-02T10-00-00-000Z_mine/2026-01-02T10-00-00-000Z_other.jsonl"),
    # a "." in a bucket's place: the folder would be bucket b's session X's
    ("/team/sessions/./2026-01-02T10-00-00-000Z_mine.jsonl",
     "/team/sessions/2026-01-02T10-00-00-000Z_mine/2026-01-02T10-00-00-000Z_other.jsonl"),
])
def test_a_stored_page_embeds_no_key_outside_its_own_folder(agent_dir: Path, session_key: str,
                                                           other_key: str) -> None:
    url = f"sqlite:{agent_dir / 'keys.db'}?table={fresh_table()}&root=/team/sessions/"
    mine = write_session(agent_dir / "mine.jsonl", [entry("u1", None, timestamp="2026-01-02T10:00:00.000Z",
                                                          message=user("my own words"))],
                         head=header("mine", cwd="/w", timestamp="2026-01-02T10:00:00.000Z"))
    other = _secret(agent_dir / "other.jsonl", "other-session", "SECRETWORD of another folder")
    with _store_client(url, create=True) as (client, catalog):
        catalog.storage.replace(session_key, mine.read_bytes(), None)
        catalog.storage.replace(other_key, other.read_bytes(), None)
        listed = {r["id"]: r["path"] for r in client.get("/api/sessions").json()["sessions"]}
        assert listed.get("mine") == session_key  # the page is served: it must not show the other's
        page = client.get("/s/mine")
        assert page.status_code == 200, page.text
        assert _blocks(page.content)["omp-session-data"]["subagents"] == []
        assert "SECRETWORD" not in page.text and "other-session" not in page.text


def _sessions_in(body: bytes) -> list[str]:
    return sorted(d["session_id"] for d in _blocks(body).values())


@pytest.mark.parametrize("name", ["..jsonl", "...jsonl"])
def test_a_transcript_named_dots_opens_no_folder_but_its_own(agent_dir: Path, name: str) -> None:
    """``<session>/...jsonl`` is agent ``..``: its own subagents' folder would be ``<session>/..``,
    the project folder, and every session there would be embedded as a subagent of it;
    ``..jsonl`` (agent ``.``) would find its session's folder again, and embed it all again."""
    root = agent_dir / "alice"
    parent = build_member(root, "alice")[TASK_SESSION]
    write_session(parent.with_suffix("") / name, [entry("d1", None, timestamp="2026-01-02T10:00:00.000Z",
                                                        message=user("dots"))],
                  head=header("dots-session", cwd="/work/alice/p0", timestamp="2026-01-02T10:00:00.000Z"))
    assert any(p.name.endswith("_alice-plain-0000.jsonl") for p in parent.parent.iterdir())  # a sibling session
    files = http_client(build_app(root, token=TOKEN, port=PORT, cache=False)).get(f"/s/{TASK_SESSION}")
    with _store_client(f"file:{root}") as (client, _catalog):
        stored = client.get(f"/s/{TASK_SESSION}")
        for page in (files, stored):
            assert page.status_code == 200, page.text
            # each transcript once (the transcript named with dots too), nothing from elsewhere
            assert _sessions_in(page.content) == ["advisor-session", "alice-task-0001", "anna-session",
                                                  "carl-session", "dots-session", "extra-session"]
        assert _blocks(stored.content) == _blocks(files.content)


def test_the_export_names_no_folder_above_a_dots_transcript(agent_dir: Path) -> None:
    parent = build_member(agent_dir / "alice", "alice")[TASK_SESSION]
    dots = write_session(parent.with_suffix("") / "...jsonl", [entry("d1", None, timestamp="2026-01-02T10:00:00.000Z",
                                                                     message=user("dots"))],
                         head=header("dots-session", cwd="/work/alice/p0", timestamp="2026-01-02T10:00:00.000Z"))
    assert artifacts_dir(dots) is None and artifacts_dir(parent.with_suffix("") / "..jsonl") is None
    assert artifacts_dir(parent) == parent.with_suffix("")
    with omp_session.open(parent) as session:
        assert find_subagents(dots, {}) == []  # no folder: nothing found, nothing listed from above
        page = render_html(session)
    assert "dots-session" in page and "alice-plain-0000" not in page
