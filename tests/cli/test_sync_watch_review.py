"""Review of ``sync --watch`` (folder to folder, no database): what it pushes is what ``sync``
pushes, whatever the folder holds — a project folder that appears after start under
``--project``, a folder reachable under two names through a symlink, a file name that is not
UTF-8 — and a target inside the watched folder is refused rather than copied into itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from omp_session.paths import project_dir_name
from stores.watchutil import append, lines, new_session, session_path, wait_for


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "omp_session", "sync", "--watch", *args], stdout=o, stderr=e)
    return proc, out, err


def stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def pushes(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.read_text("utf-8").splitlines() if line.strip()]


def copied(src: Path, dst: Path, session: Path) -> bool:
    copy = dst / session.relative_to(src)
    return copy.exists() and copy.read_bytes() == session.read_bytes()


def plain_sync(src: Path, dst: Path, *args: str) -> set[str]:
    """The keys a plain ``sync`` of the same folders copies (into a fresh target)."""
    done = subprocess.run([sys.executable, "-m", "omp_session", "sync", "--from", f"file:{src}", "--to",
                           f"file:{dst}", "--json", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {s["target"][len(str(dst)) + 1:] for s in json.loads(done.stdout)["sessions"]}


def test_a_project_folder_that_appears_after_start_is_pushed_with_project(tmp_path: Path) -> None:
    src, dst, staging = tmp_path / "src", tmp_path / "dst", tmp_path / "staging"
    dst.mkdir()
    new_session(session_path(src, "o1", bucket="--other--"), "o1", "another project", 1)
    bucket = project_dir_name("/w/late")
    first = session_path(src, "l1", bucket=bucket)
    new_session(session_path(staging, "l1", bucket=bucket), "l1", "made elsewhere", 2)
    proc, out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--project", "/w/late",
                           "--json")
    try:
        wait_for("the first push", lambda: bool(pushes(out)) or proc.poll() is not None)
        os.rename(staging / bucket, src / bucket)  # the project's folder arrives whole (a restore, a move)
        time.sleep(0.3)  # its own events come once the watch of the new folder is in place
        second = session_path(src, "l2", bucket=bucket)
        new_session(second, "l2", "written after the move", 1)
        wait_for("the later session", lambda: copied(src, dst, second) or proc.poll() is not None)
        assert copied(src, dst, first), "the session that came with the folder was not pushed"
    finally:
        code = stop(proc)
    assert code == 0, err.read_text()
    assert not (dst / "--other--").exists()


def test_a_file_name_that_is_not_utf8_does_not_stop_the_watcher(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dst.mkdir()
    session = session_path(src, "u1")
    new_session(session, "u1", "utf-8 only", 1)
    proc, _out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--json")
    try:
        wait_for("the first copy", lambda: copied(src, dst, session) or proc.poll() is not None)
        # any program may leave such a name in the folder (not a session: plain sync passes it by)
        with open(os.fsencode(session.parent) + b"/notes-\xff.txt", "wb") as f:
            f.write(b"latin-1 name\n")
        time.sleep(0.3)
        append(session, lines("u1", 2, 1))
        wait_for("the append", lambda: copied(src, dst, session) or proc.poll() is not None)
        assert proc.poll() is None, err.read_text()
    finally:
        code = stop(proc)
    said = err.read_text()
    assert code == 0 and "Traceback" not in said, said
    assert copied(src, dst, session)


def test_a_folder_linked_under_two_names_is_pushed_under_its_own_name_only(tmp_path: Path) -> None:
    src, dst, outside = tmp_path / "src", tmp_path / "dst", tmp_path / "outside"
    dst.mkdir()
    real = session_path(src, "r1", bucket="--real--")
    new_session(real, "r1", "the real folder", 1)
    (src / "--alias--").symlink_to("--real--")  # the same folder under a second name (sorted first)
    elsewhere = session_path(outside, "e1", bucket="--elsewhere--")
    new_session(elsewhere, "e1", "outside the folder", 1)
    (src / "--linked--").symlink_to(elsewhere.parent)  # a folder outside DIR: plain sync does not go in
    assert plain_sync(src, tmp_path / "plain") == {str(real.relative_to(src))}
    proc, _out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--json")
    try:
        wait_for("the first copy", lambda: copied(src, dst, real) or proc.poll() is not None)
        append(real, lines("r1", 2, 1))
        append(elsewhere, lines("e1", 2, 1))
        later = session_path(src, "n1", bucket="--later--")
        new_session(later, "n1", "after the appends", 1)
        # (one push may take both, in sorted order: --later-- before --real--; wait for both)
        wait_for("the append to the real folder, under its own name, and the later session",
                 lambda: (copied(src, dst, later) and copied(src, dst, real)) or proc.poll() is not None)
        assert copied(src, dst, real), "the append to the real folder was not pushed under its name"
        assert copied(src, dst, later)
    finally:
        code = stop(proc)
    assert code == 0, err.read_text()
    assert sorted(p.relative_to(dst).as_posix() for p in dst.rglob("*.jsonl")) == sorted(
        [str(real.relative_to(src)), str(later.relative_to(src))])


def test_a_link_to_a_folder_made_while_watching_is_not_followed(tmp_path: Path) -> None:
    src, dst, outside = tmp_path / "src", tmp_path / "dst", tmp_path / "outside"
    dst.mkdir()
    mine = session_path(src, "m1")
    new_session(mine, "m1", "mine", 1)
    elsewhere = session_path(outside, "e2", bucket="--elsewhere--")
    new_session(elsewhere, "e2", "outside the folder", 1)
    proc, _out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--json", "--poll")
    try:
        wait_for("the first copy", lambda: copied(src, dst, mine) or proc.poll() is not None)
        (src / "--linked--").symlink_to(elsewhere.parent)
        time.sleep(0.5)
        later = session_path(src, "n2", bucket="--later--")
        new_session(later, "n2", "after the link", 1)
        wait_for("the later session", lambda: copied(src, dst, later) or proc.poll() is not None)
    finally:
        code = stop(proc)
    assert code == 0, err.read_text()
    assert not (dst / "--linked--").exists()
    assert plain_sync(src, tmp_path / "plain") == {str(mine.relative_to(src)), str(later.relative_to(src))}


def test_a_target_inside_the_watched_folder_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    new_session(session_path(src, "i1"), "i1", "inside", 1)
    mirror = src / "mirror"
    proc, _out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{mirror}")
    try:
        # each push into the folder would be a write to push again: mirror/mirror/…, without end
        wait_for("the watcher to give up or copy its own copy",
                 lambda: proc.poll() is not None or (mirror / "mirror").exists())
    finally:
        code = stop(proc)
    said = err.read_text()
    assert not (mirror / "mirror").exists()
    assert code == 1, said
    assert said == (f"omp-session: file:{mirror}: the target is inside the watched folder {src}: "
                    "each push would be pushed again\n")


def test_a_record_of_the_last_sync_that_cannot_be_saved_does_not_stop_the_watcher(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dst.mkdir()
    session = session_path(src, "c1")
    new_session(session, "c1", "cache trouble", 1)
    records = Path(os.environ["XDG_CACHE_HOME"]) / "omp-session" / "sync"
    proc, _out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--json")
    try:
        wait_for("the first copy", lambda: copied(src, dst, session) or proc.poll() is not None)
        # (the record is saved after the copy: on a busy machine a moment later)
        wait_for("the first record", lambda: any(records.glob("*.json")) or proc.poll() is not None)
        saved = sorted(records.glob("*.json"))
        assert len(saved) == 1
        for made in records.iterdir():  # the record, and the watcher's lock beside it
            made.unlink()
        records.rmdir()
        records.write_bytes(b"")  # the record's folder cannot be made (as on a full or read-only disk)
        append(session, lines("c1", 2, 1))
        wait_for("the append", lambda: copied(src, dst, session) or proc.poll() is not None)
        wait_for("a word about it", lambda: "not saved" in err.read_text() or proc.poll() is not None)
        assert proc.poll() is None, err.read_text()
        records.unlink()  # the disk has room again: the record is written at the next attempt
        wait_for("the record saved again", lambda: saved[0].exists() or proc.poll() is not None)
        assert proc.poll() is None, err.read_text()
    finally:
        code = stop(proc)
    said = err.read_text()
    assert code == 0 and "Traceback" not in said, said
    assert json.loads(saved[0].read_text())["sessions"][str(dst / session.relative_to(src))][2] == \
        session.stat().st_size


def test_a_project_folder_that_is_a_link_is_followed_with_project_as_sync_does(tmp_path: Path) -> None:
    src, dst, outside = tmp_path / "src", tmp_path / "dst", tmp_path / "outside"
    dst.mkdir()
    bucket = project_dir_name("/w/moved")
    src.mkdir()
    moved = session_path(outside, "p1", bucket=bucket)
    new_session(moved, "p1", "kept on another disk", 1)
    (src / bucket).symlink_to(moved.parent)  # the project's sessions moved elsewhere, linked back
    session = src / bucket / moved.name
    assert plain_sync(src, tmp_path / "plain", "--project", "/w/moved") == {str(session.relative_to(src))}
    proc, _out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--project", "/w/moved",
                            "--json")
    try:
        wait_for("the first copy", lambda: copied(src, dst, session) or proc.poll() is not None)
        append(moved, lines("p1", 2, 1))
        wait_for("the append", lambda: copied(src, dst, session) or proc.poll() is not None)
        assert proc.poll() is None, err.read_text()
    finally:
        code = stop(proc)
    assert code == 0, err.read_text()


def test_a_second_watcher_of_the_same_two_stores_is_refused(tmp_path: Path) -> None:
    """Two would both see each write, both find the target's old size and both append the new
    entries: the store got entries twice, and the session was a conflict from then on."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    dst.mkdir()
    session = session_path(src, "t1")
    new_session(session, "t1", "twice", 1)
    first, _out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}")
    second = None
    try:
        wait_for("the first copy", lambda: copied(src, dst, session) or first.poll() is not None)
        (tmp_path / "second").mkdir()
        second, _out2, err2 = start(tmp_path / "second", "--from", f"file:{src}", "--to", f"file:{dst}")
        wait_for("the second one to give up or start", lambda: second.poll() is not None or "watching" in
                 err2.read_text())
        assert second.poll() == 1, err2.read_text()
        assert err2.read_text() == (f"omp-session: file:{dst}: another sync --watch from file:{src} to it is "
                                    "running on this machine (both would push every write)\n")
        append(session, lines("t1", 2, 1))
        wait_for("the append", lambda: copied(src, dst, session) or first.poll() is not None)
    finally:
        code = stop(first)
        if second is not None:
            stop(second)
    assert code == 0, err.read_text()
    # once the first has stopped, a new one starts
    third, _out3, err3 = start(tmp_path / "second", "--from", f"file:{src}", "--to", f"file:{dst}")
    try:
        wait_for("the third one to start", lambda: "watching" in err3.read_text() or third.poll() is not None)
    finally:
        assert stop(third) == 0, err3.read_text()
