"""``--jq EXPR`` and ``--json FIELDS`` over a command's ``--json`` output, as gh has them.

The command writes its JSON as it always does; stdout is swapped for a :class:`JsonFilter` that
reads it back and prints the picked fields, or what the jq program (the ``jq`` package, libjq's
own bindings: no hand-written jq) makes of it. JSON lines (``validate``, ``tail``, ``list
--jsonl``) are filtered line by line as they come, so ``tail -f --json --jq`` streams; one JSON
document over several lines is filtered when the command is done.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import click

from omp_session.errors import SessionError

__all__ = ["JsonFilter", "filtered_stdout", "parse_fields"]


def parse_fields(text: str) -> list[str]:
    fields = [f.strip() for f in text.split(",")]
    if not all(fields):
        raise click.UsageError(f"--json {text!r}: give field names separated by commas, e.g. --json id,title")
    return fields


def _pick(value: Any, fields: list[str]) -> Any:
    if isinstance(value, list):
        return [_pick(v, fields) for v in value]
    if not isinstance(value, dict):
        raise SessionError("--json FIELDS picks fields of JSON objects; this output holds "
                           f"{type(value).__name__} values (use --jq)")
    unknown = [f for f in fields if f not in value]
    if unknown:
        raise SessionError(f"unknown JSON field(s) {', '.join(map(repr, unknown))}; this output has: "
                           + ", ".join(value))
    return {f: value[f] for f in fields}


class _Bytes:
    """``sys.stdout.buffer`` of the filter: commands that copy bytes (cat, tail) write here."""

    def __init__(self, owner: JsonFilter) -> None:
        self._owner = owner

    def write(self, data: bytes) -> int:
        self._owner.write(data.decode("utf-8", "surrogateescape"))
        return len(data)

    def flush(self) -> None:
        self._owner.flush()


class JsonFilter(io.TextIOBase):
    """A text stream that filters the JSON written to it into ``out``."""

    def __init__(self, out: TextIO, *, jq: str | None, fields: list[str] | None) -> None:
        super().__init__()
        self._out = out
        self._fields = fields
        self._program: Any = None
        if jq is not None:
            from omp_session.extras import require

            module = require("jq")
            try:
                self._program = module.compile(jq)
            except ValueError as e:  # libjq's compile error, several lines: its first says it
                raise click.UsageError(f"--jq: {str(e).splitlines()[0]}") from None
        self._pending = ""
        self._document: list[str] | None = None  # lines of a document that is not JSON lines

    @property
    def buffer(self) -> _Bytes:
        return _Bytes(self)

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self._pending += s
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            self._line(line)
        return len(s)

    def _line(self, line: str) -> None:
        if self._document is not None:
            self._document.append(line)
            return
        if not line.strip():
            return
        try:
            value = json.loads(line)
        except ValueError:
            self._document = [line]  # the start of a document spread over lines
            return
        self._emit(value)

    def close_filter(self) -> None:
        if self._pending:
            self._line(self._pending)
            self._pending = ""
        if self._document is not None:
            text = "\n".join(self._document)
            self._document = None
            try:
                value = json.loads(text)
            except ValueError:
                raise SessionError("--jq/--json FIELDS: the command's output is not JSON") from None
            self._emit(value)
        self._out.flush()

    def _emit(self, value: Any) -> None:
        if self._fields is not None:
            value = _pick(value, self._fields)
        if self._program is None:
            self._out.write(json.dumps(value, ensure_ascii=False) + "\n")
            return
        try:
            results = self._program.input_value(value).all()
        except ValueError as e:
            raise SessionError(f"--jq: {e}") from None
        for r in results:  # as gh prints them: strings raw, anything else as compact JSON
            self._out.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")

    def flush(self) -> None:
        self._out.flush()


@contextmanager
def filtered_stdout(jq: str | None, fields: list[str] | None) -> Iterator[None]:
    real = sys.stdout
    sink = JsonFilter(real, jq=jq, fields=fields)
    sys.stdout = sink
    try:
        try:
            yield
        except SystemExit as e:  # a command that found problems (validate, sync) still printed them
            if e.code not in (None, 0, 1):
                raise
            sink.close_filter()
            raise
        sink.close_filter()
    finally:
        sys.stdout = real
