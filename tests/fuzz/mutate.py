"""Mutations of real omp session files, each reproducible from ``(run seed, case number)``.

A case picks one seed file and applies one to three mutations; ``make_case`` returns the mutated
bytes and a description of every step, so a saved failure says how it was made. Byte-level
mutations (truncate, bit flips, NUL, CR, BOM, invalid UTF-8) damage any file; record-level ones
parse a JSON line, change one value (deep nesting, huge numbers, wrong types, id cycles,
self-parents, 10 MB strings) and write it back, so they reach the code behind the parser.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MUTATIONS", "Case", "Seed", "load_seeds", "make_case"]

# A value we splice in as text after json.dumps: nesting 10^5 deep cannot go through json.dumps.
_HOLE = "\u0000fuzz-hole\u0000"
_HOLE_JSON = json.dumps(_HOLE)

# Fields the views read; deep or odd values there reach the most code.
HOT_KEYS = ("timestamp", "type", "id", "parentId", "targetId", "label", "model", "provider", "usage", "input",
            "output", "cost", "total", "content", "text", "message", "role", "summary", "details", "title",
            "firstKeptEntryId", "fromId", "data", "customType", "arguments", "toolCallId", "version", "cwd",
            "thinkingLevel", "stopReason", "errorMessage", "display", "name", "mimeType", "image")

HUGE_NUMBERS = ("1e400", "-1e400", "123456789012345678901234567890123456789", "-0", "1e-400", "0.1e309",
                "9007199254740993", "-9223372036854775809", "1" * 5000, "1e99999999999", "4.9e-324")

ODD_VALUES: tuple[Any, ...] = (None, True, False, 0, -1, 1.5, "", "x", [], {}, [None], {"": None}, "\u0000",
                               "\ud800", "blob:sha256:" + "0" * 64, "blob:sha256:zz", "NaN", "1970-01-01",
                               "9999-12-31T23:59:59.999Z", "\u202e", "\ufeff")

NEST_DEPTHS = (50, 200, 1_000, 2_000, 5_000, 20_000, 100_000)
NEST_WEIGHTS = (3, 3, 5, 4, 3, 2, 1)  # 10^5 deep costs ~1 s a case; Python's own limit is ~10^3
LONG_SIZES = (4_096, 65_536, 1 << 20, 10 << 20)
BAD_UTF8 = (b"\xff", b"\xfe\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
            b"\x80\x80", b"\xf0\x9f\x98")


@dataclass
class Seed:
    """A real session file to mutate: its name (for the record) and bytes."""

    name: str
    data: bytes
    lines: list[bytes] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = self.data.split(b"\n")


@dataclass
class Case:
    """One fuzz case: the bytes to write and how they were made."""

    seed: int
    number: int
    source: str
    mutations: list[str]
    data: bytes

    def describe(self) -> dict[str, Any]:
        return {"seed": self.seed, "case": self.number, "source": self.source, "mutations": self.mutations}


def load_seeds(paths: Sequence[Path], *, root: Path | None = None) -> list[Seed]:
    """The seed files, named relative to ``root`` when given; empty files are kept (they are real)."""
    seeds = []
    for p in sorted(set(paths)):
        name = str(p.relative_to(root)) if root is not None and p.is_relative_to(root) else p.name
        seeds.append(Seed(name, p.read_bytes()))
    return seeds


# ----- byte-level mutations -----------------------------------------------------------------------


def _truncate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    return data[:at], f"truncate(at={at})"


def _flip_bits(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    if not data:
        return data, "flip_bits(empty)"
    buf = bytearray(data)
    where = []
    for _ in range(rng.choice((1, 1, 2, 4, 8))):
        i = rng.randrange(len(buf))
        bit = rng.randrange(8)
        buf[i] ^= 1 << bit
        where.append(f"{i}.{bit}")
    return bytes(buf), f"flip_bits({','.join(where)})"


def _insert_at(rng: random.Random, data: bytes, what: bytes, name: str) -> tuple[bytes, str]:
    mode = rng.choice(("random", "line_start", "tail"))
    if mode == "tail":
        at = len(data)
    elif mode == "line_start":
        starts = [0] + [i + 1 for i in range(len(data)) if data[i] == 0x0A]
        at = rng.choice(starts)
    else:
        at = rng.randrange(len(data) + 1)
    return data[:at] + what + data[at:], f"{name}(at={at},{mode},{what[:8]!r}x{len(what)})"


def _nul(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    return _insert_at(rng, data, b"\x00" * rng.choice((1, 1, 16, 4096)), "nul")


def _cr(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    mode = rng.choice(("crlf", "lone_cr", "cr_only"))
    if mode == "crlf":
        return data.replace(b"\n", b"\r\n"), "cr(crlf)"
    if mode == "cr_only":
        return data.replace(b"\n", b"\r"), "cr(cr_only)"
    return _insert_at(rng, data, b"\r", "cr")


def _bom(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    if rng.random() < 0.5:
        return b"\xef\xbb\xbf" + data, "bom(start)"
    return _insert_at(rng, data, b"\xef\xbb\xbf", "bom")


def _bad_utf8(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    return _insert_at(rng, data, rng.choice(BAD_UTF8), "bad_utf8")


# ----- line-level mutations -----------------------------------------------------------------------


def _delete_line(rng: random.Random, lines: list[bytes]) -> str:
    i = rng.randrange(len(lines))
    del lines[i]
    return f"delete_line({i})"


def _duplicate_line(rng: random.Random, lines: list[bytes]) -> str:
    i = rng.randrange(len(lines))
    j = rng.randrange(len(lines) + 1)
    lines.insert(j, lines[i])
    return f"duplicate_line({i}->{j})"


def _swap_lines(rng: random.Random, lines: list[bytes]) -> str:
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return f"swap_lines({i},{j})"


def _garbage_line(rng: random.Random, lines: list[bytes]) -> str:
    i = rng.randrange(len(lines) + 1)
    kind = rng.choice(("bytes", "blank", "json", "long"))
    if kind == "bytes":
        junk = rng.randbytes(rng.randrange(1, 64))
    elif kind == "blank":
        junk = rng.choice((b"", b"   ", b"\t"))
    elif kind == "json":
        junk = rng.choice((b"null", b"0", b"[]", b"{}", b'"x"', b"true", b'{"type":"session"}', b"[1,2", b"{"))
    else:
        size = _long_size(rng)
        junk = rng.choice((b"x", b"{", b"[", b"\\")) * size
    lines.insert(i, junk)
    return f"garbage_line({i},{kind},{len(junk)})"


def _long_size(rng: random.Random) -> int:
    # 10 MB lines are rare: each costs ~0.1 s to write and read
    return rng.choices(LONG_SIZES, weights=(40, 30, 20, 3))[0]


# ----- record-level mutations ---------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> list[tuple[Any, ...]]:
    """Every path to a value inside a record (bounded: records can be large)."""
    out = [prefix]
    if depth > 12:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k), depth + 1))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            out.extend(_paths(v, (*prefix, i), depth + 1))
    return out


def _pick_path(rng: random.Random, record: Any) -> tuple[Any, ...]:
    paths = [p for p in _paths(record) if p]
    if not paths:
        return ()
    hot = [p for p in paths if isinstance(p[-1], str) and p[-1] in HOT_KEYS]
    return rng.choice(hot if hot and rng.random() < 0.75 else paths)


def _set(record: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    target = record
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    return record


def _nested(rng: random.Random, depth: int) -> str:
    kind = rng.choice(("list", "dict", "mixed"))
    leaf = rng.choice(("0", '"x"', "null", '"blob:sha256:' + "a" * 64 + '"', "{}", "[]"))
    if kind == "list":
        return "[" * depth + leaf + "]" * depth
    if kind == "dict":
        key = rng.choice(("a", "type", "content", "text", "input"))
        return f'{{"{key}":' * depth + leaf + "}" * depth
    return '[{"a":' * (depth // 2) + leaf + "}]" * (depth // 2)


def _json_lines(lines: list[bytes]) -> list[int]:
    out = []
    for i, raw in enumerate(lines):
        s = raw.strip()
        if s[:1] in (b"{", b"[") and len(raw) < (4 << 20):
            out.append(i)
    return out


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # an earlier mutation may have nested it past our own limit
        return None


def _record_mutation(name: str, mutate: Callable[[random.Random, Any], tuple[Any, str, str | None]]
                     ) -> Callable[[random.Random, list[bytes]], str]:
    """A line mutation from one that changes a parsed record; it returns (record, what, text for
    the hole) and the hole's text is spliced in after serialising."""

    def apply(rng: random.Random, lines: list[bytes]) -> str:
        candidates = _json_lines(lines)
        rng.shuffle(candidates)
        for i in candidates[:8]:
            record = _parse(lines[i])
            if isinstance(record, dict | list) and record:
                record, what, hole = mutate(rng, record)
                text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                if hole is not None:
                    text = text.replace(_HOLE_JSON, hole, 1)
                lines[i] = text.encode("utf-8", "surrogatepass")
                return f"{name}(line={i},{what})"
        return f"{name}(no record)"

    return apply


def _deep(rng: random.Random, record: Any) -> tuple[Any, str, str | None]:
    path = _pick_path(rng, record)
    depth = rng.choices(NEST_DEPTHS, weights=NEST_WEIGHTS)[0]
    return _set(record, path, _HOLE), f"path={'.'.join(map(str, path))},depth={depth}", _nested(rng, depth)


def _huge_number(rng: random.Random, record: Any) -> tuple[Any, str, str | None]:
    path = _pick_path(rng, record)
    number = rng.choice(HUGE_NUMBERS)
    return _set(record, path, _HOLE), f"path={'.'.join(map(str, path))},number={number[:24]}", number


def _odd_value(rng: random.Random, record: Any) -> tuple[Any, str, str | None]:
    path = _pick_path(rng, record)
    value = rng.choice(ODD_VALUES)
    return _set(record, path, value), f"path={'.'.join(map(str, path))},value={value!r}"[:200], None


def _long_string(rng: random.Random, record: Any) -> tuple[Any, str, str | None]:
    path = _pick_path(rng, record)
    size = _long_size(rng)
    text = json.dumps(rng.choice(("x", "é", "\\", "\n", "a b ", "AKIA")) * (size // 4 or 1), ensure_ascii=False)
    return _set(record, path, _HOLE), f"path={'.'.join(map(str, path))},size={size}", text


def _drop_key(rng: random.Random, record: Any) -> tuple[Any, str, str | None]:
    path = _pick_path(rng, record)
    if not path:
        return record, "nothing", None
    target = record
    for k in path[:-1]:
        target = target[k]
    del target[path[-1]]
    return record, f"path={'.'.join(map(str, path))}", None


# ----- tree mutations (ids and parents) -----------------------------------------------------------


def _entries(lines: list[bytes]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for i in _json_lines(lines):
        record = _parse(lines[i])
        if isinstance(record, dict) and "id" in record and record.get("type") != "session":
            out.append((i, record))
    return out


def _write(lines: list[bytes], i: int, record: dict[str, Any]) -> None:
    lines[i] = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _id_cycle(rng: random.Random, lines: list[bytes]) -> str:
    entries = _entries(lines)
    if len(entries) < 2:
        return "id_cycle(too few entries)"
    chosen = rng.sample(entries, min(len(entries), rng.choice((2, 2, 3, 5))))
    for (i, record), (_, nxt) in zip(chosen, [*chosen[1:], chosen[0]], strict=True):
        record["parentId"] = nxt["id"]
        _write(lines, i, record)
    return f"id_cycle(lines={[i for i, _ in chosen]})"


def _self_parent(rng: random.Random, lines: list[bytes]) -> str:
    entries = _entries(lines)
    if not entries:
        return "self_parent(no entries)"
    i, record = rng.choice(entries)
    record["parentId"] = record["id"]
    _write(lines, i, record)
    return f"self_parent(line={i})"


def _dup_id(rng: random.Random, lines: list[bytes]) -> str:
    entries = _entries(lines)
    if len(entries) < 2:
        return "dup_id(too few entries)"
    (i, a), (_, b) = rng.sample(entries, 2)
    a["id"] = b["id"]
    _write(lines, i, a)
    return f"dup_id(line={i})"


def _reparent(rng: random.Random, lines: list[bytes]) -> str:
    entries = _entries(lines)
    if not entries:
        return "reparent(no entries)"
    i, record = rng.choice(entries)
    record["parentId"] = rng.choice([*(r["id"] for _, r in entries), None, "missing", "", 0, ["x"]])
    _write(lines, i, record)
    return f"reparent(line={i},to={record['parentId']!r})"


def _long_chain(rng: random.Random, lines: list[bytes]) -> str:
    """Many tiny entries in one chain: deep trees without deep JSON."""
    count = rng.choice((1_000, 10_000, 50_000))
    parent = None
    for _, record in reversed(_entries(lines)):
        parent = record["id"]
        break
    new = []
    for n in range(count):
        eid = f"z{n:07x}"
        new.append(b'{"type":"label","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z",'
                   b'"targetId":null,"label":null}' % (eid.encode(), json.dumps(parent).encode()))
        parent = eid
    lines.extend(new)
    return f"long_chain({count})"


LineMutation = Callable[[random.Random, list[bytes]], str]
ByteMutation = Callable[[random.Random, bytes], tuple[bytes, str]]

LINE_MUTATIONS: dict[str, tuple[LineMutation, int]] = {
    "delete_line": (_delete_line, 6),
    "duplicate_line": (_duplicate_line, 6),
    "swap_lines": (_swap_lines, 6),
    "garbage_line": (_garbage_line, 5),
    "deep_nesting": (_record_mutation("deep_nesting", _deep), 12),
    "huge_number": (_record_mutation("huge_number", _huge_number), 6),
    "odd_value": (_record_mutation("odd_value", _odd_value), 12),
    "long_string": (_record_mutation("long_string", _long_string), 3),
    "drop_key": (_record_mutation("drop_key", _drop_key), 5),
    "id_cycle": (_id_cycle, 5),
    "self_parent": (_self_parent, 4),
    "dup_id": (_dup_id, 4),
    "reparent": (_reparent, 4),
    "long_chain": (_long_chain, 1),
}
BYTE_MUTATIONS: dict[str, tuple[ByteMutation, int]] = {
    "truncate": (_truncate, 6),
    "flip_bits": (_flip_bits, 8),
    "nul": (_nul, 3),
    "cr": (_cr, 3),
    "bom": (_bom, 2),
    "bad_utf8": (_bad_utf8, 4),
}
MUTATIONS = sorted([*LINE_MUTATIONS, *BYTE_MUTATIONS])
_NAMES = [*LINE_MUTATIONS, *BYTE_MUTATIONS]
_WEIGHTS = [w for _, w in LINE_MUTATIONS.values()] + [w for _, w in BYTE_MUTATIONS.values()]


def make_case(seeds: Sequence[Seed], seed: int, number: int, *, only: str | None = None) -> Case:
    """Case ``number`` of run ``seed``: the same arguments give the same bytes."""
    rng = random.Random(f"{seed}:{number}")
    source = seeds[rng.randrange(len(seeds))]
    lines = list(source.lines)
    data: bytes | None = None
    steps: list[str] = []
    for _ in range(rng.choices((1, 2, 3), weights=(5, 3, 2))[0]):
        name = only or rng.choices(_NAMES, weights=_WEIGHTS)[0]
        if name in LINE_MUTATIONS:
            if data is not None:
                lines, data = data.split(b"\n"), None
            if not lines:
                lines = [b""]
            steps.append(LINE_MUTATIONS[name][0](rng, lines))
        else:
            if data is None:
                data = b"\n".join(lines)
            data, step = BYTE_MUTATIONS[name][0](rng, data)
            steps.append(step)
    return Case(seed, number, source.name, steps, data if data is not None else b"\n".join(lines))
