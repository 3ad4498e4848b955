"""Deeply nested values never make a view raise (issue 16 item 3).

A fuzz run found ``RecursionError`` in ``open`` (the blob-reference walk), ``get_usage_statistics``
(``usage.input`` nested 2,000 levels), the context (a nested assistant ``model``) and ``get_tree``
(a nested ``timestamp``); the CLI printed tracebacks. Every walk over user values is iterative
now. Each shape is tested at 10^3, 10^4 and 10^5 levels; the JSON text is built by hand since
Python's ``json`` cannot write it. Where omp 18.2.3 still answers (about 2,000 levels; it throws
``RangeError`` deeper, docs/compatibility.md), we give its answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import omp_session
from omp_session.cli import cli

DEPTHS = [1_000, 10_000, 100_000]
TS = '"2026-01-01T00:00:0{}.000Z"'
HEADER = '{"type":"session","version":3,"id":"s","timestamp":' + TS.format(0) + ',"cwd":"/tmp"}'
USAGE = ('{"input":%s,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":1,'
         '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}')


def nest(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def _user(ident: str, parent: str | None, *, extra: str = "", ts: str = TS.format(1), content: str = '"hi"') -> str:
    par = "null" if parent is None else f'"{parent}"'
    return (f'{{"type":"message","id":"{ident}","parentId":{par},"timestamp":{ts},'
            f'"message":{{"role":"user","content":{content},"timestamp":1{extra}}}}}')


def _assistant(ident: str, parent: str, *, model: str = '"m"', usage_input: str = "1") -> str:
    return (f'{{"type":"message","id":"{ident}","parentId":"{parent}","timestamp":{TS.format(2)},'
            f'"message":{{"role":"assistant","content":[{{"type":"text","text":"x"}}],"api":"anthropic-messages",'
            f'"provider":"p","model":{model},"usage":{USAGE % usage_input},"stopReason":"stop","timestamp":2}}}}')


SHAPES: dict[str, Callable[[int], list[str]]] = {
    "blob-ref": lambda d: [HEADER, _user("u", None, content='[{"type":"image","data":"blob:sha256:' + "0" * 64
                                         + '","mimeType":"image/png"}]', extra=',"x":' + nest(d))],
    "usage-input": lambda d: [HEADER, _user("u", None), _assistant("a", "u", usage_input=nest(d))],
    "entry-type": lambda d: [HEADER, _user("u", None),
                             f'{{"type":{nest(d)},"id":"t","parentId":"u","timestamp":{TS.format(2)}}}',
                             _user("v", "t", ts=TS.format(3))],
    "assistant-model": lambda d: [HEADER, _user("u", None), _assistant("a", "u", model=nest(d))],
    "timestamp": lambda d: [HEADER, _user("u", None), _user("a", "u", ts=nest(d, TS.format(2))),
                            _user("b", "u", ts=TS.format(3))],
    "content": lambda d: [HEADER, _user("u", None, content=nest(d, '{"type":"text","text":"deep"}'))],
    "label": lambda d: [HEADER, _user("u", None),
                        f'{{"type":"label","id":"l","parentId":"u","timestamp":{TS.format(2)},'
                        f'"targetId":{nest(d, chr(34) + "u" + chr(34))},"label":{nest(d)}}}'],
    "ids": lambda d: [HEADER, f'{{"type":"message","id":{nest(d)},"parentId":null,"timestamp":{TS.format(1)},'
                      f'"message":{{"role":"user","content":"x","timestamp":1}}}}',
                      f'{{"type":"message","id":"b","parentId":{nest(d)},"timestamp":{TS.format(2)},'
                      f'"message":{{"role":"user","content":"y","timestamp":1}}}}'],
    "session-name": lambda d: [HEADER, _user("u", None),
                               f'{{"type":"session_info","id":"i","parentId":"u","timestamp":{TS.format(2)},'
                               f'"name":{nest(d)}}}'],
}


def _write(tmp_path: Path, shape: str, depth: int) -> Path:
    path = tmp_path / f"{shape}-{depth}.jsonl"
    path.write_text("\n".join(SHAPES[shape](depth)) + "\n")
    return path


def _views(s: omp_session.Session) -> dict[str, Callable[[], Any]]:
    return {
        "tree": lambda: [(n.id, n.label, len(n.children)) for n in s.get_tree()],
        "branch": s.get_branch,
        "context": s.build_session_context,
        "transcript": lambda: s.build_session_context(transcript=True),
        "usage": s.get_usage_statistics,
        "labels": s.labels,
        "session_name": s.get_session_name,
        "entries": lambda: list(s.entries),
        "diagnostics": lambda: list(s.diagnostics),
    }


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_view_returns(tmp_path: Path, shape: str, depth: int) -> None:
    path = _write(tmp_path, shape, depth)
    with omp_session.open(path) as s:
        for view in _views(s).values():
            view()
    omp_session.validate(path)


@pytest.mark.parametrize("depth", [1_000, 2_000])
def test_omp_answers_where_it_still_answers(tmp_path: Path, depth: int) -> None:
    """What omp 18.2.3 gives at these depths (oracle): ``String([[...[1]...]])`` is ``"1"``, so
    ``usage.input`` adds as ``0 + "1"`` and the model is ``p/1``; a nested timestamp parses as
    its inner text."""
    with omp_session.open(_write(tmp_path, "usage-input", depth)) as s:
        assert s.get_usage_statistics()["input"] == "01"
    with omp_session.open(_write(tmp_path, "assistant-model", depth)) as s:
        assert s.build_session_context()["models"] == {"default": "p/1"}
    with omp_session.open(_write(tmp_path, "timestamp", depth)) as s:
        # a and b are siblings: sorted by timestamp, a (…:02) before b (…:03)
        (root,) = s.get_tree()
        assert [c.id for c in root.children] == ["a", "b"]
    with omp_session.open(_write(tmp_path, "entry-type", depth)) as s:
        assert [e["id"] for e in s.get_branch()] == ["u", "t", "v"]


COMMANDS = [
    ["show"], ["tree"], ["tree", "--json"], ["context"], ["context", "--transcript"], ["cat"], ["tail"],
    ["export", "--format", "md"], ["export", "--format", "json"], ["export", "--format", "html"], ["stats"],
    ["validate"], ["size"], ["size", "--json"],
]


@pytest.mark.parametrize("depth", [1_000, 100_000])  # the views above cover 10^4; each command reopens
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_read_command_returns_or_reports(tmp_path: Path, shape: str, depth: int) -> None:
    path = _write(tmp_path, shape, depth)
    runner = CliRunner()
    failed = []
    for args in COMMANDS:
        out = ["-o", str(tmp_path / "out")] if args[0] == "export" else []
        result = runner.invoke(cli, [*args, str(path), *out, *(["--force"] if out else [])])
        if result.exit_code not in (0, 1) or (result.exception is not None and not isinstance(result.exception,
                                                                                             SystemExit)):
            failed.append(f"{' '.join(args)}: exit {result.exit_code} {result.exception!r}"[:200])
    result = runner.invoke(cli, ["externalize", str(path), "-o", str(tmp_path / "ext.jsonl"), "--blobs",
                                 str(tmp_path / "blobs")])
    if result.exit_code not in (0, 1) or (result.exception is not None
                                          and not isinstance(result.exception, SystemExit)):
        failed.append(f"externalize: exit {result.exit_code} {result.exception!r}"[:200])
    result = runner.invoke(cli, ["search", "deep", "--session", str(path)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        failed.append(f"search: {result.exception!r}"[:200])
    assert failed == []
