"""Differential tests of omp_session.js.codec against the real JavaScript runtimes.

* ``stringify`` / ``dumps_line`` against node's and Bun's ``JSON.stringify`` on random values;
* ``_parse_chunk`` / ``parse_jsonl`` / ``loads`` against ``Bun.JSONL.parseChunk``, omp's lenient loop
  over it and ``JSON.parse`` on random JSONL-ish texts;
* the assumptions behind the orjson fast paths, on random doubles and texts.

One node and one bun process serve the whole module (tests/property/js_oracle.js, line protocol).
node is found on PATH (or /usr/bin/node); bun in the omp oracle install ($OMP_ORACLE_HOME, default
~/.cache/omp-oracle), so the tests that use bun are marked ``oracle``. A missing runtime fails the
tests: ``./dev test`` installs the oracle first.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.errors import JSONSyntaxError
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED, JSONLScanner, dumps_line, loads, parse_jsonl, stringify, utf16_len

ORACLE_JS = Path(__file__).with_name("js_oracle.js")


def _node_path() -> str:
    found = shutil.which("node") or ("/usr/bin/node" if os.path.exists("/usr/bin/node") else None)
    if found is None:
        pytest.fail("node is not installed (needed for the JSON.stringify differential tests)")
    return found


def _bun_path() -> str:
    home = Path(os.environ.get("OMP_ORACLE_HOME", Path.home() / ".cache" / "omp-session-reference" / "18.2.3"))
    bun = home / "node_modules" / "bun" / "bin" / "bun.exe"
    if not bun.exists():
        pytest.fail(f"bun not found at {bun}: install the omp oracle first (tests/reference/install)")
    return str(bun)


class JSRuntime:
    def __init__(self, argv: list[str]) -> None:
        # stderr is inherited (pytest shows it on failure); a pipe nobody reads could block the child.
        self.proc = subprocess.Popen([*argv, str(ORACLE_JS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def call(self, request: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        # ensure_ascii: lone surrogates travel as \\udxxx escapes, which JSON.parse restores exactly.
        self.proc.stdin.write(json.dumps(request, ensure_ascii=True).encode() + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            pytest.fail(f"JS oracle {self.proc.args[0]} died (exit status {self.proc.wait()}); see stderr")
        reply = json.loads(line)
        if "fail" in reply:
            pytest.fail("JS oracle error: " + reply["fail"])
        return reply["ok"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def node() -> Iterator[JSRuntime]:
    rt = JSRuntime([_node_path()])
    yield rt
    rt.close()


@pytest.fixture(scope="module")
def bun() -> Iterator[JSRuntime]:
    rt = JSRuntime([_bun_path()])
    yield rt
    rt.close()


# --------------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------------

SPECIAL_CHARS = (
    "\x00\x01\x08\t\n\x0b\x0c\r\x1f \"\\/\x7f\x80\xa0\u2028\u2029\ufeff\uffff"
    "\ud800\udbff\udc00\udfff\U0001f600\U0010ffff0123456789e.-:,{}[]"
)
chars = st.one_of(
    st.sampled_from(SPECIAL_CHARS),
    st.characters(),
    st.characters(categories=["Cs"]),  # lone surrogates (st.characters() never yields them)
    st.characters(max_codepoint=0x7F),
)
texts = st.text(alphabet=chars, max_size=12)
keys = st.one_of(
    texts,
    st.integers(0, 2**33).map(str),
    st.sampled_from(["0", "01", "-1", "1.5", "4294967294", "4294967295", "__proto__", "1e3", " 1", "10", "2"]),
)


def _bits_to_float(b: int) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", b))[0])


SPECIAL_FLOATS = [
    0.0, -0.0, 1.0, -1.0, 1e21, 1e20, 1e-7, 1e-6, 1.5e-7, 5e-324, 1.7976931348623157e308,
    2.2250738585072014e-308, 0.1 + 0.2, 1e16, 1e17, 123456789012345680000.0, 0.000001, 9007199254740993.0,
    math.nan, math.inf, -math.inf,
]
floats = st.one_of(
    st.floats(),
    st.sampled_from(SPECIAL_FLOATS),
    st.integers(0, 2**64 - 1).map(_bits_to_float),
    st.floats(min_value=1e-8, max_value=1e-4),
    st.floats(min_value=1e14, max_value=1e23),
    st.integers(-(2**60), 2**60).map(float),
)
ints = st.one_of(
    st.integers(-1000, 1000),
    st.integers(-(2**70), 2**70),
    st.integers(2**53 - 3, 2**53 + 3),
    st.integers(2**63 - 2, 2**64 + 2),
    st.sampled_from([10**21, 10**22, 10**400, -(10**400), 2**1024 - 2**970, 2**1024 - 2**970 - 1, -(2**63) - 1]),
)
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts, st.just(UNDEFINED))
values = st.recursive(
    scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=5),
        st.lists(kids, max_size=3).map(tuple),
        st.dictionaries(keys, kids, max_size=6),
    ),
    max_leaves=30,
)


def tag(v: Any) -> Any:
    """The value in js_oracle.js's tagged transport."""
    if v is None or isinstance(v, bool):
        return v
    if v is UNDEFINED:
        return ["u"]
    if isinstance(v, str):
        return ["s", v]
    if isinstance(v, int):
        return ["i", str(v)]
    if isinstance(v, float):
        if math.isnan(v):
            return ["f", "NaN"]
        if math.isinf(v):
            return ["f", "Infinity" if v > 0 else "-Infinity"]
        return ["f", repr(v)]
    if isinstance(v, (list, tuple)):
        return ["a", [tag(x) for x in v]]
    if isinstance(v, dict):
        return ["o", [[k, tag(x)] for k, x in v.items()]]
    raise TypeError(type(v))


def _check_stringify(runtimes: list[JSRuntime], batch: list[Any]) -> None:
    request = {"op": "stringify", "values": [tag(v) for v in batch]}
    answers = [rt.call(request) for rt in runtimes]
    for i, value in enumerate(batch):
        expected = answers[0][i]
        # V8 (node) and JavaScriptCore (bun, what omp runs on) agree.
        assert all(a[i] == expected for a in answers), f"value={value!r}"
        assert stringify(value) == expected, f"value={value!r}"
        if expected is not None:
            assert dumps_line(value) == expected.encode() + b"\n", f"value={value!r}"
            # Whichever path stringify took, the exact encoder must agree on its own.
            assert codec._stringify_pure(value) == expected, f"value={value!r}"


HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@pytest.mark.oracle  # bun from the oracle install
@settings(max_examples=40, deadline=None, suppress_health_check=HEALTH)
@given(batch=st.lists(values, min_size=10, max_size=30))
def test_stringify_matches_node_and_bun(node: JSRuntime, bun: JSRuntime, batch: list[Any]) -> None:
    _check_stringify([node, bun], batch)


def _random_text(rnd: random.Random) -> str:
    out = []
    for _ in range(rnd.choice((0, 1, 2, 3, 5, 8, 12))):
        r = rnd.random()
        if r < 0.3:
            out.append(rnd.choice(SPECIAL_CHARS))
        elif r < 0.6:
            out.append(chr(rnd.randint(0x20, 0x7E)))
        elif r < 0.85:
            out.append(chr(rnd.randint(0, 0xFFFF)))  # includes lone surrogates
        else:
            out.append(chr(rnd.randint(0x10000, 0x10FFFF)))
    return "".join(out)


def _random_number(rnd: random.Random) -> int | float:
    r = rnd.random()
    if r < 0.15:
        return rnd.randint(-1000, 1000)
    if r < 0.3:
        return rnd.randint(-(2 ** rnd.randint(1, 80)), 2 ** rnd.randint(1, 80))
    if r < 0.35:
        return rnd.choice([10**21, 10**400, 2**53 + 1, 2**64, 2**1024 - 2**970])
    if r < 0.55:
        return _bits_to_float(rnd.getrandbits(64))
    if r < 0.65:
        return rnd.choice(SPECIAL_FLOATS)
    if r < 0.8:
        return float(rnd.randint(-(2**60), 2**60))
    return rnd.uniform(-1, 1) * 10.0 ** rnd.randint(-12, 25)


def _random_value(rnd: random.Random, depth: int = 0) -> Any:
    r = rnd.random()
    if depth < 4 and r < 0.3:
        size = rnd.randint(0, 5)
        kind = rnd.random()
        if kind < 0.4:
            return [_random_value(rnd, depth + 1) for _ in range(size)]
        if kind < 0.5:
            return tuple(_random_value(rnd, depth + 1) for _ in range(size))
        d = {}
        for _ in range(size):
            k = _random_text(rnd) if rnd.random() < 0.6 else str(rnd.choice([0, 1, 2, 10, 2**32 - 2, 2**32 - 1, 7, 99]))
            d[k] = _random_value(rnd, depth + 1)
        return d
    if r < 0.4:
        return _random_text(rnd)
    if r < 0.8:
        return _random_number(rnd)
    return rnd.choice([None, True, False, UNDEFINED])


@pytest.mark.oracle  # bun from the oracle install
@settings(max_examples=6, deadline=None, suppress_health_check=HEALTH)
@given(seed=st.integers(0, 2**32))
def test_stringify_bulk_random_values(node: JSRuntime, bun: JSRuntime, seed: int) -> None:
    # Many more values than the shrinking test above can afford; failures still print the value.
    rnd = random.Random(seed)
    _check_stringify([node, bun], [_random_value(rnd) for _ in range(2000)])


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(fs=st.lists(st.one_of(st.integers(0, 2**64 - 1).map(_bits_to_float), floats), min_size=50, max_size=100))
def test_orjson_float_spelling_assumptions(fs: list[float]) -> None:
    # The fast path only rewrites orjson floats spelled with "e+"/"e-" or ending in ".0"; everything
    # else must already be JavaScript's spelling, and every spelling must round-trip exactly.
    for f in fs:
        out = orjson.dumps(f).decode()
        if math.isnan(f) or math.isinf(f):
            assert out == "null"
            continue
        assert float(out) == f
        assert "E" not in out
        if "e" in out:
            assert "e+" in out or "e-" in out
        elif not out.endswith(".0"):
            assert out == codec._js_float(f), f


# --------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), ints, floats, texts),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(keys, kids, max_size=4)),
    max_leaves=12,
)


def _json_text(value: Any, pretty: bool) -> str:
    if pretty:
        # Multi-line, with spaces around separators: valid JSON spread over several lines.
        return json.dumps(_safe_json(value), indent=1, ensure_ascii=False, allow_nan=False)
    return stringify(value) or "null"


def _safe_json(v: Any) -> Any:
    """json.dumps-able copy (no NaN/inf)."""
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return 0.5
    if isinstance(v, list):
        return [_safe_json(x) for x in v]
    if isinstance(v, dict):
        return {k: _safe_json(x) for k, x in v.items()}
    return v


TOKENS = [
    "{", "}", "[", "]", ":", ",", '"a"', '"k"', '""', '"\\u00e9"', '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"',
    '"\\x"', '"\\u12"', '"\\u12', '"abc', '"\\', '"a\tb"', '"\x01"', '"\\u1234', "1", "-1", "0", "01", "-",
    "-0", "1.5", "1.", "1e5", "1e", "1e+", "1.5e-3", "12345678901234567890", "123456789012345678901234", "1e400",
    "true", "tru", "truex", "false", "fals", "null", "nul", "x", "NaN", "$", "_a", "(", ")", ".", "=", ";",
    "'", "/", "\ufeff", "\xa0", "\u2028", "\x00", "\x0b", "\x0c", "é", "😀", "\ud800", '{"a":1}', "[1,2]",
]
SEPARATORS = ["", "", "", " ", "\t", "\r", "\n", "\n", "\r\n", "  \n", "\n\n"]
token_soup = st.lists(st.tuples(st.sampled_from(TOKENS), st.sampled_from(SEPARATORS)), max_size=14).map(
    lambda parts: "".join(t + s for t, s in parts)
)

GARBAGE = [
    "not json", "}", "{broken", " trailing", "\xa0", "\ufeff", "\u2028", "  ", "", "\t", "x y", "\x1c", "\u200b",
    '{"x":', "[", "[1,", '"open', "1 2", "//", "\x00",
]


@st.composite
def jsonl_texts(draw: st.DrawFn) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 7))):
        kind = draw(st.integers(0, 7))
        if kind <= 1:
            line = _json_text(draw(json_values), pretty=False)
        elif kind == 2:
            line = _json_text(draw(json_values), pretty=True)
        elif kind == 3:
            full = _json_text(draw(json_values), pretty=draw(st.booleans()))
            line = full[: draw(st.integers(0, len(full)))]
        elif kind == 4:
            line = draw(st.sampled_from(GARBAGE))
        elif kind == 5:
            line = _json_text(draw(json_values), pretty=False) + draw(st.sampled_from([" ", "", "\t"]))
            line += draw(st.one_of(st.sampled_from(GARBAGE), json_values.map(lambda v: stringify(v) or "")))
        elif kind == 6:
            line = draw(token_soup)
        else:
            line = draw(texts)
        lines.append(line + draw(st.sampled_from(["\n", "\n", "\r\n", " \n"])))
    text = "".join(lines)
    if text and draw(st.booleans()):
        text = text[:-1]  # no final LF
    return text


def reader_with_fast_path(text: str) -> tuple[list[tuple[Any, int, int]], list[tuple[int, int]]]:
    """How a reader is meant to combine orjson per line with JSONLScanner.step (see its docstring)."""
    scanner = JSONLScanner(text)
    records: list[tuple[Any, int, int]] = []
    malformed: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl == -1 else nl
        line = text[pos:end]
        body = line.strip(" \t\r")
        if not body:
            pos = end + 1
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            got, bad, pos = scanner.step(pos)
            records += got
            malformed += bad
            continue
        start = pos + len(line) - len(line.lstrip(" \t\r"))
        records.append((value, start, start + len(body)))
        pos = end + 1
    return records, malformed


def _check_jsonl(texts_: list[str], results: list[dict[str, Any]]) -> None:
    for text, res in zip(texts_, results, strict=True):
        where = f"text={text!r}"
        # One parseChunk call.
        records: list[tuple[Any, int, int]] = []
        status, read, _ = codec._parse_chunk(text, 0, {}, records)
        values_json, bun_read, bun_done, bun_error = res["chunk"]
        assert stringify([v for v, _, _ in records]) == values_json, where
        assert utf16_len(text[:read]) == bun_read, where
        assert status == codec._DONE if bun_done else status != codec._DONE, where
        assert (status == codec._ERROR) == bun_error, where
        # omp's loop.
        recs, malformed = parse_jsonl(text)
        assert stringify([v for v, _, _ in recs]) == res["loop"]["records"], where
        spans = [[utf16_len(text[:a]), utf16_len(text[:b])] for a, b in malformed]
        assert spans == res["loop"]["malformed"], where
        for value, start, end in recs:
            assert codec.scan_value(text, start) == (value, end), where
        # A reader taking orjson-accepted lines directly and stepping through the rest agrees.
        fast_recs, fast_malformed = reader_with_fast_path(text)
        assert [(stringify(v), a, b) for v, a, b in fast_recs] == [(stringify(v), a, b) for v, a, b in recs], where
        assert fast_malformed == malformed, where
        # JSON.parse.
        parse = res["parse"]
        if "ok" in parse:
            assert stringify(loads(text)) == parse["ok"], where
        else:
            with pytest.raises(JSONSyntaxError):
                loads(text)


@pytest.mark.oracle  # bun from the oracle install
@settings(max_examples=80, deadline=None, suppress_health_check=HEALTH)
@given(batch=st.lists(st.one_of(jsonl_texts(), token_soup), min_size=5, max_size=25))
def test_jsonl_matches_bun(bun: JSRuntime, batch: list[str]) -> None:
    _check_jsonl(batch, bun.call({"op": "jsonl", "texts": batch}))


@pytest.mark.oracle  # bun from the oracle install
@settings(max_examples=50, deadline=None, suppress_health_check=HEALTH)
@given(batch=st.lists(json_values, min_size=5, max_size=25), pretty=st.booleans())
def test_valid_json_lines_match_bun(bun: JSRuntime, batch: list[Any], pretty: bool) -> None:
    # Valid values: exercises the orjson fast path of loads (it must accept only what JSON.parse does,
    # with the same result) and multi-line records in the lenient reader.
    texts_ = [_json_text(v, pretty) for v in batch]
    texts_.append("\n".join(texts_))
    _check_jsonl(texts_, bun.call({"op": "jsonl", "texts": texts_}))
    for text in texts_[:-1]:
        try:
            fast = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue  # the exact parser alone decides (checked against JSON.parse above)
        start = codec._WS.match(text).end()  # type: ignore[union-attr]
        exact, _ = codec._parse_value(text, start, len(text), None)
        # Same Python types from both parsers: a line's value must not depend on which one ran.
        assert _typed(fast) == _typed(exact)


def _typed(v: Any) -> Any:
    """Structure with Python number types made visible (1 vs 1.0, 0.0 vs -0.0)."""
    if isinstance(v, float):
        return ("float", repr(v))
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, list):
        return [_typed(x) for x in v]
    return [(k, _typed(x)) for k, x in v.items()]


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(
    numbers=st.lists(
        st.tuples(st.integers(0, 10**25), st.integers(-340, 320), st.integers(0, 25), st.booleans()),
        min_size=30,
        max_size=60,
    )
)
def test_orjson_float_parsing_is_correctly_rounded(numbers: list[tuple[int, int, int, bool]]) -> None:
    # loads() trusts orjson's decimal-to-double conversion; JSON.parse rounds correctly, as float() does.
    for mantissa, exponent, frac, neg in numbers:
        digits = str(mantissa)
        if 0 < frac < len(digits):
            digits = digits[:-frac] + "." + digits[-frac:]
        text = ("-" if neg else "") + digits + f"e{exponent}"
        expected = float(text)
        try:
            got = orjson.loads(text)
        except orjson.JSONDecodeError:
            assert math.isinf(expected), text  # orjson refuses overflow; the exact parser takes over
            assert loads(text) == expected
            continue
        assert got == expected, text
        assert math.copysign(1, got) == math.copysign(1, expected), text
