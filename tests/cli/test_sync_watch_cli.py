"""``omp-session sync --watch`` on the command line, folder to folder (no database): a line or a
JSON object per push, SIGINT and SIGTERM stop it cleanly (exit 0), polling for network file
systems, and every bad start is one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from builders import run as run_command
from omp_session.cli import cli
from stores.watchutil import append, lines, new_session, session_path, wait_for


def run(*args: str) -> tuple[int, str, str]:
    return run_command(cli, *args)


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = tmp_path / "out", tmp_path / "err"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "omp_session", "sync", "--watch", *args], stdout=o, stderr=e)
    return proc, out, err


def stop(proc: subprocess.Popen[bytes], how: signal.Signals) -> int:
    proc.send_signal(how)
    try:
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("how", "extra"), [(signal.SIGINT, []), (signal.SIGTERM, ["--poll"])],
                         ids=["SIGINT", "SIGTERM-poll"])
def test_a_watched_folder_is_copied_write_by_write_and_a_signal_stops_it(
        how: signal.Signals, extra: list[str], tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dst.mkdir()
    session = session_path(src, "f1")
    new_session(session, "f1", "watched", 2)
    copy = dst / session.relative_to(src)
    proc, out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "-v", *extra)
    try:
        wait_for("the first copy", lambda: copy.exists() and copy.read_bytes() == session.read_bytes())
        append(session, lines("f1", 3, 1))
        wait_for("the append", lambda: copy.read_bytes() == session.read_bytes())
        later = session_path(src, "f2", bucket="--later--")
        new_session(later, "f2", "later", 1)
        wait_for("the new session", lambda: (dst / later.relative_to(src)).exists())
    finally:
        code = stop(proc, how)
    assert code == 0, err.read_text()
    said = err.read_text().splitlines()
    polling = "by polling" if extra else "for file events"
    assert said[0] == f"omp-session: watching file:{src} {polling}, pushing to file:{dst} (Ctrl-C stops)"
    assert said[-1] == "omp-session: stopped"
    shown = out.read_text().splitlines()
    assert any(line.endswith(f" appended {copy} ({len(lines('f1', 3, 1))} bytes)") for line in shown), shown
    assert any("1 session(s): 1 copied; moved" in line for line in shown)


def test_json_lines_one_per_push(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    dst.mkdir()
    session = session_path(src, "j1")
    new_session(session, "j1", "json", 1)
    copy = dst / session.relative_to(src)
    proc, out, err = start(tmp_path, "--from", f"file:{src}", "--to", f"file:{dst}", "--json")
    try:
        wait_for("the first copy", lambda: copy.exists())
        append(session, lines("j1", 2, 1))
        wait_for("the append", lambda: copy.read_bytes() == session.read_bytes())
        wait_for("its line", lambda: len(out.read_text().splitlines()) >= 2)
    finally:
        code = stop(proc, signal.SIGTERM)
    assert code == 0 and err.read_text() == ""  # --json: no chatter on stderr either
    pushes = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["full"] for p in pushes] == [True, False]
    assert [p["counts"]["copied"] for p in pushes] == [1, 0] and pushes[1]["counts"]["appended"] == 1
    assert pushes[1]["bytes"] == len(lines("j1", 2, 1))
    assert pushes[1]["time"].endswith("Z")


@pytest.mark.parametrize(("args", "message"), [
    (["--poll"], "--poll goes with --watch"),
    (["--watch", "--dry-run"], "--watch does not take --dry-run"),
    (["--watch", "--since", "7d"], "--watch does not take --since"),
])
def test_options_that_do_not_go_with_watch_are_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    code, _out, err = run("sync", "--from", f"file:{tmp_path}", "--to", f"sqlite:{tmp_path / 'x.db'}", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.db").exists()


def test_a_bad_start_is_one_line(tmp_path: Path) -> None:
    code, _out, err = run("sync", "--watch", "--from", f"sqlite:{tmp_path / 'a.db'}", "--to", f"file:{tmp_path}")
    assert code == 1 and err.strip() == (f"omp-session: sqlite:{tmp_path / 'a.db'}: sync --watch follows a folder: "
                                         "the source must be a file: store")
    code, _out, err = run("sync", "--watch", "--from", f"file:{tmp_path / 'none'}", "--to", f"file:{tmp_path}")
    assert code == 1 and err.strip() == f"omp-session: file:{tmp_path / 'none'}: no such directory {tmp_path / 'none'}"
    code, _out, err = run("sync", "--watch", "--from", f"file:{tmp_path}", "--to", f"file:{tmp_path}")
    assert code == 1 and "the source and the target are the same store" in err
    code, _out, err = run("sync", "--watch", "--from", f"file:{tmp_path}", "--to",
                          "postgresql://nobody@127.0.0.1:1/none", "--timeout", "1")
    assert code == 1 and "cannot connect" in err and len(err.strip().splitlines()) == 1


def test_without_watchfiles_it_says_which_extra_to_install(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['watchfiles'] = None\n"
            "from omp_session.cli import main; sys.argv[0] = 'omp-session'; main()")
    out = subprocess.run([sys.executable, "-c", code, "sync", "--watch", "--from", f"file:{tmp_path}", "--to",
                          f"sqlite:{tmp_path / 'x.db'}"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out
    assert out.stderr == ("omp-session: sync --watch needs the watchfiles package: "
                          "pip install 'omp-session[watch]' (or omp-session[all])\n")
    assert not (tmp_path / "x.db").exists()
