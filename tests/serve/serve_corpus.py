"""A sessions root for the serve tests: projects, a branch, a subagent, an archive, and a way to
append to a session as omp does (one line through an O_APPEND write)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from builders import assistant, entry, header, line, usage, user, write_session
from omp_session.paths import project_dir_name

WORDS = ("alpha", "beta", "gamma", "delta", "pagination", "cursor", "blob", "index", "tree", "branch")
BASE_S = 1_767_225_600  # 2026-01-01T00:00:00Z


def sid(i: int) -> str:
    return f"0197{i:08d}-aaaa-bbbb-cccc-{i:012d}"


def iso(second: int) -> str:
    t = BASE_S + second
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z"


def session_path(root: Path, i: int, cwd: str) -> Path:
    return root / project_dir_name(cwd) / f"2026-01-01T00-00-00-000Z_{sid(i)}.jsonl"


def build(root: Path, count: int) -> dict[str, Any]:
    """``count`` sessions under ``root`` in 7 projects, each modified a minute after the previous.
    Session 1 has two branches (``b1`` and ``b2`` off ``a1``); session 2 has a subagent; the last
    one is archived (``.jsonl.gz``). Every session's answer holds the word ``unique<i>word``."""
    files: dict[str, Any] = {"paths": {}}
    for i in range(count):
        cwd = f"/home/u/proj{i % 7}"
        t = i * 60
        es = [entry("u1", None, timestamp=iso(t + 1), message=user(f"question {i} about {WORDS[i % len(WORDS)]}")),
              entry("a1", "u1", timestamp=iso(t + 2),
                    message=assistant(f"answer {i} unique{i}word", usage=usage(cost=0.01 * (i % 5 + 1)),
                                      timestamp=(BASE_S + t + 2) * 1000))]
        if i == 1:
            es += [entry("b1", "a1", timestamp=iso(t + 3), message=user("first branch kiwiword")),
                   entry("b2", "a1", timestamp=iso(t + 4), message=user("second branch zebraword"))]
        path = write_session(session_path(root, i, cwd), es, head=header(sid(i), cwd=cwd, timestamp=iso(t)))
        if i == 2:
            sub = path.with_suffix("") / "agent7.jsonl"
            write_session(sub, [entry("s1", None, timestamp=iso(t + 5), message=user("subagent task"))],
                          head=header("sub-0002", cwd=cwd, timestamp=iso(t + 5)))
            os.utime(sub, (BASE_S + t, BASE_S + t))
            files["subagent"] = sub
        if i == count - 1:
            gz = path.with_name(path.name + ".gz")
            gz.write_bytes(gzip.compress(path.read_bytes()))
            path.unlink()
            path = gz
            files["archived"] = gz
        os.utime(path, (BASE_S + t, BASE_S + t))
        files["paths"][sid(i)] = path
    return files


def append(path: Path, record: dict[str, Any]) -> None:
    """One entry appended as omp appends (a whole line through O_APPEND)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line(record) + "\n").encode())
    finally:
        os.close(fd)


def new_message(entry_id: str, parent: str, text: str) -> dict[str, Any]:
    return entry(entry_id, parent, timestamp=iso(99_000), message=user(text))


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
