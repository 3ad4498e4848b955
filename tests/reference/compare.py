#!/usr/bin/env python3
"""Field-by-field comparison of two outputs of ``load`` / ``run`` (JSON lines, one record per input).

    python3 compare.py ORACLE.jsonl OTHER.jsonl [--ignore PATH]... [--only PATH]...
        [--ids align|strict] [--timestamps auto|always|never] [--errors presence|name|exact]
        [--numbers double|exact] [--bytes text|ignore] [--match basename|file|index]
        [--max-diffs N] [--quiet]

ORACLE.jsonl is what the reference omp printed, OTHER.jsonl what the implementation under test
printed for the same inputs. Records are paired by the basename of their ``file`` (a record
missing on one side fails), every field is compared recursively, and each failing record is
listed with the dotted path of every difference. The last lines are a count of differences per
top-level field and ``N passed, N failed``; the exit status is 1 when anything failed.

Normalisation (defaults first):

* ``--ids align``: values omp generates and no other implementation can reproduce (entry ids
  at the same position of ``entries``, the header ``id``/``timestamp``/``parentSession``, the
  uuids and timestamps in session file names, short string step results) are mapped from OTHER
  onto ORACLE everywhere, file texts included. A mapping that is not one-to-one is reported as
  a note. ``strict`` compares verbatim.
* ``--timestamps auto``: in ``run`` records, ISO-8601 strings and file-name timestamps become
  ``<TS>`` and numeric ``timestamp``/``updatedAt``/``lastUsedAt`` fields ``<MS>``; ``always``
  does it for ``load`` records too; ``never`` not at all.
* ``--errors presence``: ``error``, ``view_errors`` values and step errors compare only by being
  there (``name``: the text before the first ``:``; ``exact``: verbatim).
* ``--numbers double``: numbers compare as IEEE doubles (``1 == 1.0``, and JavaScript's
  ``12345678901234567000`` equals ``12345678901234567890``); ``exact``: same type and value.
* ``--bytes text``: ``after_open``/``after_flush`` compare ``exists``, ``changed`` and the
  decoded text when changed (``size``/``sha256`` when not); ``ignore``: only ``exists``/``changed``.
* ``--ignore PATH`` / ``--only PATH``: dotted paths, ``*`` one segment, ``**`` any number of
  segments; a pattern covers its whole subtree.

Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ABSENT: Any = object()
FILE_STATES = ("after_open", "after_flush")
ERROR_TEXT = "<error>"
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")
_FILE_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# an id token inside a longer text: 8 hex digits or a uuid, not part of a longer hex run (a sha256)
_TOKEN = re.compile(r"(?<![0-9a-f-])[0-9a-f]{8}(?:-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?"
                    r"(?![0-9a-f])")
_TOKEN_KEY = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?\Z")
MS_FIELDS = frozenset(("timestamp", "updatedAt", "lastUsedAt"))
SHORT_RESULT = 200


@dataclass
class Options:
    ignore: list[list[str]] = field(default_factory=list)
    only: list[list[str]] = field(default_factory=list)
    ids: str = "align"
    timestamps: str = "auto"
    errors: str = "presence"
    numbers: str = "double"
    bytes: str = "text"


# -- path patterns ----------------------------------------------------------------------------------

def _match(pattern: list[str], path: list[str], *, prefix: bool) -> bool:
    """Whether ``pattern`` matches all of ``path`` (or, with ``prefix``, could match a longer path
    starting with ``path``)."""
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[i:], prefix=prefix) for i in range(len(path) + 1)) or (prefix and bool(path))
    if not path:
        return prefix
    return (head == "*" or head == path[0]) and _match(rest, path[1:], prefix=prefix)


def covered(patterns: list[list[str]], path: list[str]) -> bool:
    """A pattern covers its whole subtree: some prefix of ``path`` matches it."""
    return any(_match(p, path[:i], prefix=False) for p in patterns for i in range(len(path) + 1))


def wanted(opts: Options, path: list[str]) -> bool:
    """Compare (or descend into) ``path``?"""
    if covered(opts.ignore, path):
        return False
    return not opts.only or covered(opts.only, path) or any(_match(p, path, prefix=True) for p in opts.only)


# -- normalisation ------------------------------------------------------------------------------------

def file_state(state: Any, mode: str) -> Any:
    """A file state of ``load`` as compared: its text instead of base64, no hash when it changed."""
    if not isinstance(state, dict):
        return state
    out = {"exists": state.get("exists"), "changed": state.get("changed")}
    if mode == "ignore":
        return out
    if state.get("changed"):
        raw = state.get("b64")
        out["text"] = base64.b64decode(raw).decode("utf-8", "replace") if isinstance(raw, str) else raw
    else:
        out["size"], out["sha256"] = state.get("size"), state.get("sha256")
    return out


def mask_errors(record: dict[str, Any], mode: str) -> None:
    def one(text: Any) -> Any:
        if not isinstance(text, str) or mode == "exact":
            return text
        return ERROR_TEXT if mode == "presence" else text.split(":", 1)[0]

    if "error" in record:
        record["error"] = one(record["error"])
    if isinstance(record.get("view_errors"), dict):
        record["view_errors"] = {k: one(v) for k, v in record["view_errors"].items()}
    if isinstance(record.get("steps"), list):  # copied: the caller's record stays as it was
        record["steps"] = [_masked_step(s, one) for s in record["steps"]]


def _masked_step(step: Any, one: Any) -> Any:
    """A step with its error masked, and the view errors of a ``snapshot`` result too (a snapshot
    is a record's views: its errors are errors like the record's own)."""
    if not isinstance(step, dict):
        return step
    out = dict(step)
    if "error" in out:
        out["error"] = one(out["error"])
    result = out.get("result")
    if isinstance(result, dict) and isinstance(result.get("view_errors"), dict):
        out["result"] = dict(result, view_errors={k: one(v) for k, v in result["view_errors"].items()})
    return out


def mask_timestamps(value: Any, key: str | None = None) -> Any:
    if isinstance(value, str):
        return _FILE_TS.sub("<TS>", _ISO.sub("<TS>", value))
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and key in MS_FIELDS:
        return "<MS>"
    if isinstance(value, list):
        return [mask_timestamps(v) for v in value]
    if isinstance(value, dict):
        return {mask_timestamps(k): mask_timestamps(v, k) for k, v in value.items()}
    return value


def _parse(line: str) -> Any:
    try:
        return json.loads(line) if line.startswith("{") else None
    except ValueError:
        return None


class Aligner:
    """Maps generated values of OTHER onto ORACLE's, one to one."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {}
        self.back: dict[str, str] = {}
        self.notes: list[str] = []

    def pair(self, ours: Any, theirs: Any) -> None:
        if not isinstance(ours, str) or not isinstance(theirs, str) or ours == theirs or not ours:
            return
        if self.map.get(ours, theirs) != theirs:
            self.notes.append(f"inconsistent id mapping: other {ours!r} -> oracle {self.map[ours]!r} and {theirs!r}")
            return
        if self.back.get(theirs, ours) != ours:
            self.notes.append(f"inconsistent id mapping: oracle {theirs!r} <- other {self.back[theirs]!r} and "
                              f"{ours!r}")
            return
        self.map[ours], self.back[theirs] = theirs, ours

    def pair_names(self, theirs: Any, ours: Any) -> None:
        """Session file paths: the uuids and timestamps inside them, position by position."""
        if not isinstance(theirs, str) or not isinstance(ours, str):
            return
        for rx in (_UUID, _FILE_TS):
            a, b = rx.findall(theirs), rx.findall(ours)
            if len(a) == len(b):
                for x, y in zip(a, b, strict=True):
                    self.pair(y, x)

    def pair_entries(self, theirs: Any, ours: Any) -> None:
        if isinstance(theirs, list) and isinstance(ours, list):
            for a, b in zip(theirs, ours, strict=False):
                if isinstance(a, dict) and isinstance(b, dict):
                    self.pair(b.get("id"), a.get("id"))

    def pair_text(self, theirs: Any, ours: Any) -> None:
        """A session file's text: the records on the same line (entries that left the session,
        a title_change in the file a fork started from, ...)."""
        if isinstance(theirs, str) and isinstance(ours, str):
            self.pair_entries([_parse(x) for x in theirs.split("\n")], [_parse(x) for x in ours.split("\n")])

    def collect(self, oracle: dict[str, Any], other: dict[str, Any]) -> None:
        self.pair_entries(oracle.get("entries"), other.get("entries"))
        oh, uh = oracle.get("header"), other.get("header")
        if isinstance(oh, dict) and isinstance(uh, dict):
            for key in ("id", "timestamp"):
                self.pair(uh.get(key), oh.get(key))
            self.pair_names(oh.get("parentSession"), uh.get("parentSession"))
            self.pair(uh.get("parentSession"), oh.get("parentSession"))
        self.pair_names(oracle.get("session_file"), other.get("session_file"))
        ofs, ufs = oracle.get("files"), other.get("files")
        if isinstance(ofs, list) and isinstance(ufs, list):
            for a, b in zip(ofs, ufs, strict=False):
                if isinstance(a, dict) and isinstance(b, dict):
                    self.pair_names(a.get("path"), b.get("path"))
                    self.pair_text(a.get("text"), b.get("text"))
        for key in FILE_STATES:
            a, b = oracle.get(key), other.get(key)
            if isinstance(a, dict) and isinstance(b, dict):
                self.pair_text(a.get("text"), b.get("text"))
        osd, usd = oracle.get("session_dir_files"), other.get("session_dir_files")
        if isinstance(osd, list) and isinstance(usd, list):
            for a, b in zip(osd, usd, strict=False):
                self.pair_names(a, b)
        osteps, usteps = oracle.get("steps"), other.get("steps")
        if isinstance(osteps, list) and isinstance(usteps, list):
            for a, b in zip(osteps, usteps, strict=False):
                if isinstance(a, dict) and isinstance(b, dict):
                    ra, rb = a.get("result"), b.get("result")
                    if isinstance(ra, dict) and isinstance(rb, dict):  # snapshot, fork
                        self.pair_entries(ra.get("entries"), rb.get("entries"))
                        for k in ra.keys() & rb.keys():
                            self.pair_names(ra[k], rb[k])
                    if isinstance(ra, str) and isinstance(rb, str) and max(len(ra), len(rb)) <= SHORT_RESULT:
                        self.pair_names(ra, rb)
                        self.pair(rb, ra)

    def apply(self, value: Any) -> Any:
        if not self.map:
            return value
        tokens = {k: v for k, v in self.map.items() if _TOKEN_KEY.match(k)}
        others = sorted((k for k in self.map if k not in tokens), key=len, reverse=True)

        def text(s: str) -> str:
            if s in self.map:
                return self.map[s]
            if len(s) <= 8:
                return s
            if tokens:
                s = _TOKEN.sub(lambda m: tokens.get(m.group(0), m.group(0)), s)
            for k in others:
                if k in s:
                    s = s.replace(k, self.map[k])
            return s

        def walk(v: Any) -> Any:
            if isinstance(v, str):
                return text(v)
            if isinstance(v, list):
                return [walk(x) for x in v]
            if isinstance(v, dict):
                return {text(k): walk(x) for k, x in v.items()}
            return v

        return walk(value)


def normalise(oracle: dict[str, Any], other: dict[str, Any], opts: Options) -> tuple[Any, Any, list[str]]:
    a, b = dict(oracle), dict(other)
    for rec in (a, b):
        for key in FILE_STATES:
            if key in rec:
                rec[key] = file_state(rec[key], opts.bytes)
        mask_errors(rec, opts.errors)
    notes: list[str] = []
    if opts.ids == "align":
        aligner = Aligner()
        aligner.collect(a, b)
        b = aligner.apply(b)
        notes = list(dict.fromkeys(aligner.notes))
        if aligner.map:
            notes.insert(0, f"{len(aligner.map)} generated id(s) aligned")
    is_run = oracle.get("kind") == "run"
    if opts.timestamps == "always" or (opts.timestamps == "auto" and is_run):
        a, b = mask_timestamps(a), mask_timestamps(b)
    return a, b, notes


# -- comparison ---------------------------------------------------------------------------------------

def show(value: Any, limit: int = 140) -> str:
    if value is ABSENT:
        return "<absent>"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def show_text_diff(a: str, b: str) -> str:
    """The lines around the first differing column of two multi-line texts."""
    i = next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    line = a.count("\n", 0, i) + 1

    def around(s: str) -> str:
        start = s.rfind("\n", 0, i) + 1
        end = s.find("\n", i)
        end = len(s) if end < 0 else end
        lo = max(start, i - 60)
        return ("..." if lo > start else "") + s[lo:min(end, i + 60)] + ("..." if end > i + 60 else "")

    return f"line {line} col {i - a.rfind(chr(10), 0, i)}: oracle {show(around(a))} vs other {show(around(b))}"


def numbers_equal(a: Any, b: Any, mode: str) -> bool:
    if mode == "exact":
        return type(a) is type(b) and a == b
    try:
        return float(a) == float(b) or (math.isnan(float(a)) and math.isnan(float(b)))
    except OverflowError:
        return bool(a == b)


def kind_of(v: Any) -> str:
    if v is None or v is ABSENT:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(v), "other")


def diff(a: Any, b: Any, path: list[str], opts: Options, out: list[tuple[list[str], str]]) -> None:
    if not wanted(opts, path):
        return
    if opts.only and not isinstance(a, dict | list) and not isinstance(b, dict | list) \
            and not covered(opts.only, path):
        return  # a leaf no --only pattern reaches (``**.id`` could have led on, but a leaf ends here)
    where = ".".join(path) or "<record>"
    if a is ABSENT or b is ABSENT:
        if a is not b:
            out.append((path, f"{where}: oracle {show(a)} vs other {show(b)}"))
        return
    ka, kb = kind_of(a), kind_of(b)
    if ka != kb:
        out.append((path, f"{where}: type differs: oracle {show(a)} vs other {show(b)}"))
        return
    if ka == "object":
        for key in list(a) + [k for k in b if k not in a]:
            diff(a.get(key, ABSENT), b.get(key, ABSENT), [*path, key], opts, out)
    elif ka == "array":
        if len(a) != len(b):  # an element missing takes the wanted paths inside it along
            out.append((path, f"{where}: length differs: oracle {len(a)} vs other {len(b)}"))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff(x, y, [*path, str(i)], opts, out)
    elif ka == "number":
        if not numbers_equal(a, b, opts.numbers):
            out.append((path, f"{where}: oracle {show(a)} vs other {show(b)}"))
    elif a != b:
        if ka == "string" and ("\n" in a or "\n" in b) and max(len(a), len(b)) > 140:
            out.append((path, f"{where}: {show_text_diff(a, b)}"))
        else:
            out.append((path, f"{where}: oracle {show(a)} vs other {show(b)}"))


def compare_records(oracle: dict[str, Any], other: dict[str, Any], opts: Options) -> tuple[list[tuple[list[str], str]],
                                                                                           list[str]]:
    a, b, notes = normalise(oracle, other, opts)
    out: list[tuple[list[str], str]] = []
    diff(a, b, [], opts, out)
    return out, notes


# -- command line -------------------------------------------------------------------------------------

def read_records(path: Path) -> list[dict[str, Any]]:
    records = []
    # "\n" only: str.splitlines() would also split inside strings holding U+2028, U+0085, ...
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise SystemExit(f"compare.py: {path}:{n}: not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise SystemExit(f"compare.py: {path}:{n}: not a record (a JSON object)")
        records.append(value)
    return records


def key_of(record: dict[str, Any], index: int, match: str) -> str:
    if match == "index":
        return str(index)
    name = str(record.get("file", index))
    return Path(name).name if match == "basename" else name


def pattern(text: str) -> list[str]:
    return [p for p in text.split(".") if p != ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("oracle", type=Path, help="JSONL printed by the reference omp")
    parser.add_argument("other", type=Path, help="JSONL printed by the implementation under test")
    parser.add_argument("--match", choices=("basename", "file", "index"), default="basename")
    parser.add_argument("--ignore", action="append", default=[], metavar="PATH")
    parser.add_argument("--only", action="append", default=[], metavar="PATH")
    parser.add_argument("--ids", choices=("align", "strict"), default="align")
    parser.add_argument("--timestamps", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("--errors", choices=("presence", "name", "exact"), default="presence")
    parser.add_argument("--numbers", choices=("double", "exact"), default="double")
    parser.add_argument("--bytes", choices=("text", "ignore"), default="text")
    parser.add_argument("--max-diffs", type=int, default=12, help="differences shown per failing record")
    parser.add_argument("--quiet", action="store_true", help="print only the summary lines")
    args = parser.parse_args(argv)
    opts = Options([pattern(p) for p in args.ignore], [pattern(p) for p in args.only], args.ids, args.timestamps,
                   args.errors, args.numbers, args.bytes)
    try:
        oracle, other = read_records(args.oracle), read_records(args.other)
    except OSError as exc:
        print(f"compare.py: {exc}", file=sys.stderr)
        return 2
    theirs = {key_of(r, i, args.match): r for i, r in enumerate(oracle)}
    ours = {key_of(r, i, args.match): r for i, r in enumerate(other)}
    passed = failed = 0
    by_field: Counter[str] = Counter()
    lines: list[str] = []
    for key in list(theirs) + [k for k in ours if k not in theirs]:
        if key not in ours or key not in theirs:
            failed += 1
            by_field["<missing record>"] += 1
            lines.append(f"FAIL {key}: missing from {'other' if key not in ours else 'oracle'} output")
            continue
        diffs, notes = compare_records(theirs[key], ours[key], opts)
        if not diffs:
            passed += 1
            continue
        failed += 1
        by_field.update(p[0] if p else "<record>" for p, _ in diffs)
        lines.append(f"FAIL {key} ({len(diffs)} difference{'s' if len(diffs) != 1 else ''})")
        lines += [f"    note: {n}" for n in notes]
        lines += [f"  - {text}" for _, text in diffs[: args.max_diffs]]
        if len(diffs) > args.max_diffs:
            lines.append(f"  ... {len(diffs) - args.max_diffs} more")
    if not args.quiet:
        for line in lines:
            print(line)
    if by_field:
        print("differences by top-level field: " + ", ".join(f"{k}={n}" for k, n in by_field.most_common()))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
