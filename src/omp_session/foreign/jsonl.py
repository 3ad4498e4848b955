"""A foreign transcript's lines -> JSON object records, as omp's ``readForeignJsonRecords`` reads them.

omp splits the file at LF bytes, decodes each line as UTF-8 (invalid bytes become U+FFFD, a leading
BOM is dropped), runs ``JSON.parse`` and keeps the objects; every other line is skipped without a
word. We keep exactly the same records and line numbers (Claude ids of records without a uuid are
``line-<n>``), and also say which lines were skipped and why.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import orjson

from omp_session.js import codec

__all__ = ["ForeignRecords", "Problem", "decode_line", "is_finite_number", "kind_of", "read_records"]

_BOM = "\ufeff"


@dataclass(frozen=True)
class Problem:
    """Something in a foreign file worth telling: where (file, line when known) and what."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


@dataclass
class ForeignRecords:
    """The object records of a file with their 1-based line numbers, and the lines left out."""

    records: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    size: int = 0


def is_finite_number(value: Any) -> bool:
    """JavaScript ``typeof value === "number" && Number.isFinite(value)``: a JSON ``1e400`` parses
    to an infinity, which omp's readers treat as no number at all."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def decode_line(raw: bytes) -> Any:
    """``JSON.parse(new TextDecoder().decode(raw))``; raises ``JSONSyntaxError`` (a ValueError)."""
    try:  # straight from the bytes: valid UTF-8 without a BOM decodes to the same text
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    text = raw.decode("utf-8", "replace")
    if text.startswith(_BOM):
        text = text[1:]
    return codec.loads(text)


def _lines(data: bytes) -> list[bytes]:
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()  # the LF ending the last line starts no line of its own
    return pieces


def read_records(path: str | os.PathLike[str], *, first_only: bool = False) -> ForeignRecords:
    """Every JSON object line of ``path`` (raises OSError when it cannot be read).

    ``first_only``: stop at the first object record (omp's ``firstJsonRecord``); no problems are
    collected then.
    """
    name = os.fspath(path)
    if first_only:
        return _first_record(name)
    with open(name, "rb") as f:
        data = f.read()
    out = ForeignRecords(size=len(data))
    lines = _lines(data)
    last = len(lines)
    for number, raw in enumerate(lines, 1):
        if not raw.strip(b" \t\r"):
            continue  # a blank line: JSON.parse throws, omp skips it; nothing worth saying
        try:
            value = decode_line(raw)
        except (ValueError, RecursionError):  # JSONSyntaxError is one
            if number == last and not data.endswith(b"\n"):
                out.problems.append(Problem(name, number, f"truncated last line ({len(raw)} bytes without "
                                                          "an end): skipped, as omp does"))
            else:
                out.problems.append(Problem(name, number, "not JSON: skipped, as omp does"))
            continue
        if not isinstance(value, dict):
            out.problems.append(Problem(name, number,
                                        f"a JSON {kind_of(value)}, not an object: skipped, as omp does"))
            continue
        out.records.append((value, number))
    return out


def _first_record(name: str) -> ForeignRecords:
    # line by line: a listing reads a rollout's first record, not the gigabytes after it
    with open(name, "rb") as f:
        out = ForeignRecords(size=os.fstat(f.fileno()).st_size)
        for number, line in enumerate(f, 1):  # a binary file's lines end at LF, as omp splits them
            raw = line[:-1] if line.endswith(b"\n") else line
            if not raw.strip(b" \t\r"):
                continue
            try:
                value = decode_line(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                out.records.append((value, number))
                break
    return out


def kind_of(value: Any) -> str:
    """What JSON value ``value`` is, in a warning's words."""
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"
