"""``sync --watch --poll`` sees every write: watchfiles' own polling compares modification times
in whole seconds, and missed a write made in the same second as the state before it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from omp_session.ops import sync_watch
from stores.watchutil import append, lines, new_session, session_path, wait_for


def _start(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    with open(tmp_path / "out", "wb") as o, open(tmp_path / "err", "wb") as e:
        return subprocess.Popen([sys.executable, "-m", "omp_session", "sync", "--watch", *args], stdout=o, stderr=e)


def test_a_write_in_the_same_second_as_the_state_before_it_is_pushed(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dst.mkdir()
    session = session_path(src, "p1")
    new_session(session, "p1", "polled", 2)
    second = 1_767_225_600 * 10**9  # a whole second: the writes below stay within it
    os.utime(session, ns=(second + 100_000_000, second + 100_000_000))
    copy = dst / session.relative_to(src)
    proc = _start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--poll")
    try:
        wait_for("the first copy", lambda: copy.exists() and copy.read_bytes() == session.read_bytes())
        append(session, lines("p1", 3, 1))
        os.utime(session, ns=(second + 200_000_000, second + 200_000_000))
        wait_for("the append", lambda: copy.read_bytes() == session.read_bytes())
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            assert proc.wait(timeout=60) == 0, (tmp_path / "err").read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_the_scan_names_new_and_changed_files_and_new_folders(tmp_path: Path) -> None:
    flag = sync_watch.StopFlag()
    bucket = tmp_path / "b"
    bucket.mkdir()
    old = bucket / "a.jsonl"
    old.write_bytes(b"x\n")
    (bucket / "notes.txt").write_bytes(b"not a session\n")
    rounds = sync_watch._polled(str(tmp_path), flag, added=1, modified=2)
    assert next(rounds) == set()
    assert next(rounds) == set()  # nothing changed
    with open(old, "ab") as f:
        f.write(b"y\n")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "new.jsonl").write_bytes(b"z\n")
    assert next(rounds) == {(2, str(old)), (1, str(tmp_path / "c")), (1, str(tmp_path / "c" / "new.jsonl"))}
    flag.set()
    assert list(rounds) == []
