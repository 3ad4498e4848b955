"""redact and repair write their output record by record (issue 16 item 2) and still go through
store/atomic.py: a file appears whole or not at all, a FIFO is streamed into, an existing file
needs --force, and a failure part-way leaves nothing behind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from click.testing import CliRunner

from builders import assistant, entry, tool_result, user, write_session
from omp_session.cli.redact import redact as redact_cmd
from omp_session.cli.repair import repair as repair_cmd

SECRET = "sk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"


def _session(tmp_path: Path, turns: int = 50) -> Path:
    entries, parent = [], None
    for n in range(turns):
        entries.append(entry(f"u{n}", parent, message=user(f"question {n}" + (f" key {SECRET}" if n == 7 else ""))))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n}")))
        entries.append(entry(f"t{n}", f"a{n}", message=tool_result(f"out {n}")))
        parent = f"t{n}"
    return write_session(tmp_path / "s.jsonl", entries)


def _read_fifo(fifo: Path, into: list[bytes]) -> threading.Thread:
    def run() -> None:
        with open(fifo, "rb") as f:
            into.append(f.read())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_redact_into_a_fifo_is_the_file_it_writes(tmp_path: Path) -> None:
    src = _session(tmp_path)
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(redact_cmd, [str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert SECRET.encode() not in out.read_bytes() and b"[REDACTED:anthropic-api-key]" in out.read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    r = CliRunner().invoke(redact_cmd, [str(src), "-o", str(fifo)])
    reader.join(10)
    assert r.exit_code == 0, r.output
    assert got == [out.read_bytes()]


def test_redact_refuses_an_existing_file_and_replaces_it_with_force(tmp_path: Path) -> None:
    src = _session(tmp_path)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"keep me")
    r = CliRunner().invoke(redact_cmd, [str(src), "-o", str(out)])
    assert r.exit_code == 1 and "already exists" in r.output and out.read_bytes() == b"keep me"
    r = CliRunner().invoke(redact_cmd, [str(src), "-o", str(out), "--force"])
    assert r.exit_code == 0 and out.read_bytes().startswith(b'{"type":"session"')


def test_redact_failing_part_way_leaves_nothing(tmp_path: Path) -> None:
    src = _session(tmp_path, turns=30)
    deep = '{"type":"custom","id":"deep","parentId":"t29","data":' + '{"a":' * 3000 + "1" + "}" * 3000 + "}\n"
    with open(src, "a") as f:
        f.write(deep)
    out = tmp_path / "out.jsonl"
    r = CliRunner().invoke(redact_cmd, [str(src), "-o", str(out)])
    assert r.exit_code == 1 and "nested too deeply" in r.output and len(r.output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_repair_into_a_fifo_and_a_file(tmp_path: Path) -> None:
    src = _session(tmp_path)
    data = src.read_bytes()
    src.write_bytes(data.replace(b"\n", b"\r\n"))  # CR LF: a plan with a change, no quarantine
    out = tmp_path / "fixed.jsonl"
    r = CliRunner().invoke(repair_cmd, [str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == data
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    r = CliRunner().invoke(repair_cmd, [str(src), "-o", str(fifo)])
    reader.join(10)
    assert r.exit_code == 0, r.output
    assert got == [data]


def test_repair_in_place_keeps_a_backup_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    src = _session(tmp_path)
    data = src.read_bytes()
    lines = data.split(b"\n")
    src.write_bytes(b"\n".join([*lines[:10], b'{"type":"message","id":"torn"', *lines[10:]]))
    damaged = src.read_bytes()
    r = CliRunner().invoke(repair_cmd, [str(src), "--in-place"])
    assert r.exit_code == 0, r.output
    assert src.read_bytes() == data
    assert (tmp_path / "s.jsonl.bak").read_bytes() == damaged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl", "s.jsonl.bak", "s.jsonl.quarantine"]
