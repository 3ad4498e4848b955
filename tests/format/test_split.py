"""Scanning a file's halves in two processes gives exactly the sequential result."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session.format import reader
from omp_session.format import split as scan_split


def snapshot(j: reader.Journal) -> tuple[Any, ...]:
    heads = [None if h is None else (h.role, h.provider, h.model) for h in j.heads]
    values = [repr(j.value(i)) for i in range(len(j))]  # decoded now or at scan time: same values
    return (list(j.starts), list(j.ends), j.types, j.ids, j.parents, heads, values,
            [(m.start, m.end) for m in j.malformed], j.blob_offsets, j.slot, j.body_start)


def scan(path: Path, workers: str, monkeypatch: pytest.MonkeyPatch) -> reader.Journal:
    monkeypatch.setenv("OMP_SESSION_WORKERS", workers)
    return reader.scan_file(path)


@pytest.fixture(scope="module")
def corpus(make_corpus: Callable[[int, int], Path]) -> Path:
    return make_corpus(5, 60)


def test_split_equals_sequential_on_every_kind(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_split, "MIN_SPLIT_SIZE", 0)
    split_used = 0
    for path in sorted(corpus.glob("*.jsonl")):
        seq = scan(path, "1", monkeypatch)
        par = scan(path, "2", monkeypatch)
        assert snapshot(seq) == snapshot(par), path.name
        split_used += scan_split._midpoint(par.source, par.size, par.body_start) is not None
    assert split_used > 40


@pytest.mark.parametrize("damage", ["multiline", "open-value", "garbage", "two-values", "truncated"])
def test_damage_at_the_midpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    monkeypatch.setattr(scan_split, "MIN_SPLIT_SIZE", 0)
    line = '{"type":"message","id":"%s","parentId":%s,"timestamp":"t","message":{"role":"user","content":"x"}}'
    lines = ['{"type":"session","id":"s"}'] + [line % (f"e{i}", f'"e{i - 1}"' if i else "null") for i in range(200)]
    bad = {"multiline": ['{"type":"custom",', '"id":"m"}'], "open-value": ['{"broken":'],
           "garbage": ["not json"], "two-values": ['{"a":1} {"b":2}'], "truncated": ['{"type":"mess']}[damage]
    for at in (98, 99, 100, 101, 102):
        body = lines[:at] + bad + lines[at:]
        if damage == "truncated":
            body = lines + bad
        path = tmp_path / f"{damage}-{at}.jsonl"
        path.write_text("\n".join(body) + ("" if damage == "truncated" else "\n"))
        assert snapshot(scan(path, "1", monkeypatch)) == snapshot(scan(path, "2", monkeypatch)), (damage, at)


def test_not_used_for_small_files_or_when_disabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"session","id":"s"}\n' * 10)
    j = reader.scan_file(path)
    assert not scan_split._worth_splitting(j.size, 0)
    monkeypatch.setattr(scan_split, "MIN_SPLIT_SIZE", 0)
    assert scan_split._worth_splitting(j.size, 0)
    monkeypatch.setenv("OMP_SESSION_WORKERS", "1")
    assert not scan_split._worth_splitting(j.size, 0)


def test_a_child_sends_through_a_pipe_of_a_megabyte() -> None:
    # pieces of a megabyte or more cross in one write where the system allows such a pipe
    import fcntl

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    data = bytes(range(256)) * 8192  # 2 MiB
    got: list[int] = []

    def work(send: Any) -> None:
        send(data)

    child = scan_split._child(work)
    assert child is not None
    pid, read_end = child
    try:
        got.append(fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ))
        assert scan_split._read_all(read_end) == data
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    assert status == 0
    assert got == [min(limit, 1 << 20)] and got[0] > 65536
