"""Builders for the sessions, entries and messages the tests write, and for running click commands.

Every builder returns a fresh dict whose keys come in the order omp writes them; keyword arguments
override the defaults, and ``**extra`` keys go last (an extra key that is already there keeps its
place and takes the new value). A test that needs other defaults passes them, or wraps the builder
in a one-line local helper::

    from builders import assistant, entry, header, stamp, user, write_session

    path = write_session(tmp_path / "s.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user("hello")),
        entry("a1", "u1", timestamp=stamp(2), message=assistant("hi")),
    ])
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner, Result

from omp_session.format.title import build_title_slot

# the reference harness (the real omp): tests/reference, or OMP_ORACLE_DIR (docs/reference.md)
ORACLE = Path(os.environ.get("OMP_ORACLE_DIR", Path(__file__).resolve().parent / "reference"))
TS = "2026-01-01T00:00:00.000Z"
"""The default timestamp of headers, entries and title slots."""


def stamp(second: int, date: str = "2026-01-01") -> str:
    """An ISO timestamp ``second`` seconds after midnight of ``date`` (``stamp(3)`` is ...T00:00:03.000Z)."""
    return f"{date}T00:00:{second:02d}.000Z"


# ----- messages -----------------------------------------------------------------------------------


def text(t: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": t}


def usage(input: int = 1, output: int = 1, cost: float = 0.001, *, cache_read: int = 0, cache_write: int = 0,
          cost_input: float = 0, cost_output: float = 0) -> dict[str, Any]:
    """An assistant's usage; ``totalTokens`` is the sum of the four counts, ``cost`` the total cost."""
    return {"input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
            "totalTokens": input + output + cache_read + cache_write,
            "cost": {"input": cost_input, "output": cost_output, "cacheRead": 0, "cacheWrite": 0, "total": cost}}


_usage = usage  # ``assistant``'s parameter hides the function


def user(content: Any = "hello", *, timestamp: Any = 1, **extra: Any) -> dict[str, Any]:
    """A user message; ``content`` as given (a string or a list of blocks)."""
    return {"role": "user", "content": content, "timestamp": timestamp, **extra}


def assistant(content: str | list[Any] = "hi", *, api: str | None = "anthropic-messages", provider: str = "anthropic",
              model: str = "m", usage: dict[str, Any] | None = None, stop_reason: str = "stop",
              timestamp: Any = 2, **extra: Any) -> dict[str, Any]:
    """An assistant message omp accepts: a string ``content`` is one text block; ``api=None`` leaves
    the key out; ``usage`` defaults to ``usage()`` (1 in, 1 out, cost 0.001)."""
    message: dict[str, Any] = {"role": "assistant", "content": [text(content)] if isinstance(content, str) else content}
    if api is not None:
        message["api"] = api
    message.update({"provider": provider, "model": model, "usage": _usage() if usage is None else usage,
                    "stopReason": stop_reason, "timestamp": timestamp, **extra})
    return message


def tool_result(content: str | list[Any], *, name: str = "bash", call_id: str = "c1", is_error: bool = False,
                timestamp: Any = 3, **extra: Any) -> dict[str, Any]:
    """A tool result message; a string ``content`` is one text block."""
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [text(content)] if isinstance(content, str) else content, "isError": is_error,
            "timestamp": timestamp, **extra}


ASSISTANT: dict[str, Any] = assistant()
"""The assistant turn the manager and store tests append (``assistant()``; do not mutate it)."""


# ----- records ------------------------------------------------------------------------------------


def header(id: Any = "s", *, timestamp: Any = TS, cwd: Any = "/tmp", version: Any = 3, **extra: Any) -> dict[str, Any]:
    """A session header (the first record of a session file)."""
    return {"type": "session", "version": version, "id": id, "timestamp": timestamp, "cwd": cwd, **extra}


def entry(id: Any, parent: Any = None, *, type: str = "message", timestamp: Any = TS, **fields: Any) -> dict[str, Any]:
    """An entry: ``type``, ``id``, ``parentId``, ``timestamp``, then ``fields`` (``message=user(...)``
    for a message entry)."""
    return {"type": type, "id": id, "parentId": parent, "timestamp": timestamp, **fields}


# ----- files --------------------------------------------------------------------------------------


def line(value: Any, *, compact: bool = True, ensure_ascii: bool = False) -> str:
    """One JSON text, no newline: compact and non-ASCII kept, as omp writes it, unless told otherwise
    (``compact=False, ensure_ascii=True`` is plain ``json.dumps``)."""
    return json.dumps(value, separators=(",", ":") if compact else None, ensure_ascii=ensure_ascii)


def jsonl(records: Iterable[Any], *, compact: bool = True, ensure_ascii: bool = False) -> str:
    """JSON lines, each ended by a newline; a ``str`` record is written as it is (a damaged line)."""
    return "".join((r if isinstance(r, str) else line(r, compact=compact, ensure_ascii=ensure_ascii)) + "\n"
                   for r in records)


def write_jsonl(path: Path, records: Iterable[Any], *, prefix: bytes = b"", compact: bool = True,
                ensure_ascii: bool = False) -> Path:
    """Write ``prefix`` (e.g. a title slot) and the records as JSON lines (UTF-8), creating the
    parent directories; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(prefix + jsonl(records, compact=compact, ensure_ascii=ensure_ascii).encode("utf-8"))
    return path


def write_session(path: Path, entries: Iterable[Any], *, head: dict[str, Any] | None = None, slot: str | None = None,
                  slot_source: str | None = "user", slot_timestamp: str = TS, compact: bool = True,
                  ensure_ascii: bool = False) -> Path:
    """A session file: ``head`` (default ``header()``) and the entries, after a title slot holding
    ``slot`` when one is given."""
    prefix = build_title_slot(slot, slot_source, slot_timestamp) if slot is not None else b""
    return write_jsonl(path, [header() if head is None else head, *entries], prefix=prefix, compact=compact,
                       ensure_ascii=ensure_ascii)


def turns_session(path: Path, turns: int, *, reused_id: bool = False) -> Path:
    """A session of ``turns`` question-and-answer pairs in one chain (ids ``u{n}``, ``a{n}``);
    ``reused_id``: one more answer reusing the id ``a5``, which gives repair work to do."""
    es: list[Any] = []
    parent = None
    for n in range(turns):
        es.append(entry(f"u{n}", parent, message=user(f"question {n}")))
        es.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n}")))
        parent = f"a{n}"
    if reused_id:
        es.append(entry("a5", "u7", message=assistant("a duplicate id: repair has work to do")))
    return write_session(path, es)


# ----- the command line ---------------------------------------------------------------------------


def invoke(command: click.Command, *args: str, **kw: Any) -> Result:
    """``command`` run in a ``CliRunner`` with ``args`` (``kw`` goes to ``CliRunner.invoke``)."""
    return CliRunner().invoke(command, list(args), **kw)


def run(command: click.Command, *args: str) -> tuple[int, str, str]:
    """``command`` run with ``args``: its exit code, stdout and stderr. A test module binds its
    command once: ``run = functools.partial(builders.run, tail)``."""
    result = invoke(command, *args)
    return result.exit_code, result.stdout, result.stderr


def project_session(tmp_path: Path, monkeypatch: Any, folder: str, question: str,
                    answer: str) -> tuple[str, str, Path]:
    """One session of a project the test then runs in (the cwd, with ``PI_CODING_AGENT_DIR`` under
    ``tmp_path``): a question and its answer, written by the session manager. Returns (its id, its
    file, the project's folder ``tmp_path / folder``)."""
    from omp_session.format.blobs import MemoryBlobStore
    from omp_session.write.manager import SessionManager

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    work = tmp_path / folder
    work.mkdir()
    monkeypatch.chdir(work)
    sm = SessionManager.create(str(work), blob_store=MemoryBlobStore())
    sm.append_message(user(question))
    sm.append_message(assistant(answer))
    sm.close()
    return sm.get_session_id(), sm.get_session_file() or "", work
