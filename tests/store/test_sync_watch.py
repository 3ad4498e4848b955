"""``sync --watch`` (docs/team.md, "Continuous upload") on SQLite and PostgreSQL: appends, new
sessions and title changes reach the store while it runs, a deleted session stays there, the
search tables equal a rebuild; and through a restart of a private PostgreSQL mid-stream nothing
is lost or duplicated."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from omp_session.catalog.derived import refresh_url
from omp_session.ops.sync_watch import Batch, StopFlag, watch_sync
from omp_session.store.derived import derived_names, open_derived
from stores.sqlutil import POSTGRES_URL
from stores.watchutil import (
    append,
    differences,
    drop_tables,
    lines,
    new_session,
    private_postgres,
    retitle,
    same_as_rebuild,
    session_path,
    snapshot,
    stored,
    wait_for,
    wait_stored,
)

pytestmark = pytest.mark.db


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store URL with its search tables made (``index --store`` once); dropped afterwards."""
    table = f"t_{uuid.uuid4().hex[:16]}"
    root = tmp_path / "sessions"
    base = f"sqlite:{tmp_path / 'team.db'}" if request.param == "sqlite" else POSTGRES_URL
    url = f"{base}?table={table}&root={root}"
    refresh_url(url, create=True)
    try:
        yield url
    finally:
        if request.param == "postgres":
            drop_tables(POSTGRES_URL, table)


@contextmanager
def watching(source: str, target: str, **options: object) -> Iterator[tuple[list[Batch], list[str]]]:
    """``watch_sync`` in a thread (as the command runs it, less the signal handlers); stopped and
    joined on the way out, its exception raised here."""
    batches: list[Batch] = []
    notices: list[str] = []
    stop = StopFlag()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            watch_sync(source, target, on_batch=batches.append, on_notice=notices.append, stop=stop,
                       **options)  # type: ignore[arg-type]
        except BaseException as e:  # handed to the test's thread
            failed.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield batches, notices
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive(), "the watcher did not stop"
    if failed:
        raise failed[0]


def actions(batches: list[Batch]) -> list[str]:
    return [i.action for b in batches for i in b.report.items if i.action != "unchanged"]


def test_appends_new_sessions_title_changes_and_deletes_reach_the_store(target: str, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    first, second = session_path(root, "s1"), session_path(root, "s2", bucket="--other--")
    new_session(first, "s1", "first title", 3)
    with watching(f"file:{root}", target, namespace="alice@laptop") as (batches, notices):
        wait_stored(target, first)  # the whole sync on start
        append(first, lines("s1", 4, 1))
        wait_stored(target, first)
        append(first, lines("s1", 5, 2))
        wait_stored(target, first)
        new_session(second, "s2", "second", 2)  # a new project folder and its first session
        wait_stored(target, second)
        retitle(first, "renamed while watched")  # the slot rewritten in place, the size unchanged
        wait_stored(target, first)
        retitle(first, "renamed again")
        append(first, lines("s1", 7, 1))  # and as omp records a title change: slot and a new entry
        wait_stored(target, first)
        kept = second.read_bytes()
        second.unlink()
        append(first, lines("s1", 8, 1))  # pushed after the delete was seen
        wait_stored(target, first)
        assert stored(target, str(second)) == kept  # a deleted session stays in the store, as with sync
    assert notices == []
    assert batches[0].full and not any(b.full for b in batches[1:])
    moved = actions(batches)
    assert moved[0] == "copied" and moved.count("copied") == 2
    assert moved.count("appended") >= 3 and moved.count("titled") >= 2
    assert set(moved) == {"copied", "appended", "titled"}
    kept_tables, rebuilt = same_as_rebuild(target)
    assert differences(kept_tables, rebuilt) == {}
    table = target.split("table=", 1)[1].split("&", 1)[0]
    with open_derived(target) as t:
        origins = dict(t.rows(f"SELECT key, namespace FROM {derived_names(table).sessions}"))
    assert origins == {str(first): "alice@laptop", str(second): "alice@laptop"}
    assert any("renamed again" in row[-1] for row in kept_tables["entries"])


def test_only_the_project_is_pushed_and_a_restart_moves_nothing_twice(target: str, tmp_path: Path) -> None:
    from omp_session.paths import project_dir_name

    root = tmp_path / "sessions"
    mine = session_path(root, "m1", bucket=project_dir_name("/w/mine"))
    other = session_path(root, "o1", bucket=project_dir_name("/w/other"))
    new_session(mine, "m1", "mine", 2)
    new_session(other, "o1", "other", 2)
    with watching(f"file:{root}", target, project="/w/mine"):
        wait_stored(target, mine)
        append(other, lines("o1", 3, 1))
        append(mine, lines("m1", 3, 1))
        wait_stored(target, mine)
    assert stored(target, str(other)) is None
    # a second watcher of the same pair starts from the record the first one left: nothing to move
    with watching(f"file:{root}", target, project="/w/mine") as (batches, _notices):
        wait_for("the first push", lambda: bool(batches))
    assert [i.action for i in batches[0].report.items] == ["unchanged"]


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_postgresql_restart_mid_stream_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    first, second = session_path(root, "r1"), session_path(root, "r2")
    third = session_path(root, "r3", bucket="--down--")  # written only while the database is down
    new_session(first, "r1", "restart", 2)
    with private_postgres() as pg:
        url = f"{pg.url}?table=omp_watch&root={root}"
        refresh_url(url, create=True)  # the search tables, as `index --store` makes them once
        out_file, err_file = tmp_path / "out", tmp_path / "err"
        with open(out_file, "wb") as out_fd, open(err_file, "wb") as err_fd:
            watcher = subprocess.Popen(
                [sys.executable, "-m", "omp_session", "sync", "--watch", "--from", f"file:{root}", "--to", url,
                 "--json", "--timeout", "2"], stdout=out_fd, stderr=err_fd)

        def said(text: str) -> int:
            return err_file.read_text("utf-8").count(text)

        writing = threading.Event()
        written = [0]
        last = {"r1": 4, "r2": 1}  # each session's entries chain on, as omp's do

        def keep_appending() -> None:
            """omp writing all along: an entry every 20 ms to one session or the other."""
            while writing.is_set():
                sid = "r2" if written[0] % 3 == 2 and second.exists() else "r1"
                last[sid] += 1
                append(first if sid == "r1" else second, lines(sid, last[sid], 1))
                written[0] += 1
                time.sleep(0.02)

        appender = threading.Thread(target=keep_appending, daemon=True)
        try:
            wait_stored(url, first)
            append(first, lines("r1", 3, 2))
            wait_stored(url, first)
            writing.set()
            appender.start()
            time.sleep(1.0)
            pg.stop()  # while writes go on
            new_session(second, "r2", "born while the database was down", 1)
            new_session(third, "r3", "only while down", 1)
            append(third, lines("r3", 2, 1))
            # down until the watcher has lost its connection and been refused a new one
            wait_for("the watcher trying to reconnect", lambda: said("trying again in") >= 2)
            pg.start()
            wait_for("the watcher connected again", lambda: said("connected again") >= 1)
            since = written[0]
            wait_for("writes after the restart", lambda: written[0] >= since + 30)
            writing.clear()
            appender.join(10)
            append(first, lines("r1", last["r1"] + 1, 1))
            wait_stored(url, first, seconds=120)
            wait_stored(url, second, seconds=120)
            wait_stored(url, third, seconds=120)
        finally:
            writing.clear()
            watcher.send_signal(signal.SIGTERM)
            try:
                watcher.wait(timeout=60)
            except subprocess.TimeoutExpired:
                watcher.kill()
                watcher.wait()
        out, err = out_file.read_text("utf-8"), err_file.read_text("utf-8")
        assert watcher.returncode == 0, err
        assert "Traceback" not in err
        assert "trying again in" in err and "connected again" in err, err
        # nothing lost, nothing twice: the store holds exactly each file's bytes
        assert stored(url, str(first)) == first.read_bytes()
        assert stored(url, str(second)) == second.read_bytes()
        assert stored(url, str(third)) == third.read_bytes()
        pushes = _json_lines(out)
        assert pushes[0]["full"] is True
        assert any(p["full"] for p in pushes[1:]), "no whole sync after reconnecting"
        kept, rebuilt = same_as_rebuild(url)
        assert differences(kept, rebuilt) == {}
        assert len(kept["sessions"]) == 3
        assert snapshot(url)["usage"], "the usage rows were derived"
    assert not Path(pg.home).exists()
