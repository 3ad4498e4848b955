"""Golden tests for omp_session.js.codec.

The expected outputs below were produced by the real runtimes, not by this library:
STRINGIFY_CASES by node 20 ``JSON.stringify`` (identical under Bun 1.4.4), CHUNK_CASES by Bun 1.4.4
``Bun.JSONL.parseChunk`` (``read`` is in UTF-16 units). tests/property/test_codec_node.py re-checks
the same contracts against live node/bun on random inputs.
"""

from __future__ import annotations

import copy
import pickle
import random
import time
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.errors import JSONSyntaxError
from omp_session.js import codec
from omp_session.js.codec import (
    UNDEFINED,
    JSONIncomplete,
    JSONLScanner,
    dumps_line,
    loads,
    parse_jsonl,
    scan_value,
    stringify,
    utf16_len,
)

# --------------------------------------------------------------------------------------------------
# UNDEFINED
# --------------------------------------------------------------------------------------------------


def test_undefined_is_a_falsy_singleton_distinct_from_none() -> None:
    assert UNDEFINED is not None
    assert not UNDEFINED
    assert repr(UNDEFINED) == "UNDEFINED"
    assert type(UNDEFINED)() is UNDEFINED
    assert copy.copy(UNDEFINED) is UNDEFINED
    assert copy.deepcopy({"a": UNDEFINED})["a"] is UNDEFINED
    assert pickle.loads(pickle.dumps(UNDEFINED)) is UNDEFINED


def test_dumps_bytes_of_undefined_is_refused_as_dumps_line_refuses_it() -> None:
    with pytest.raises(ValueError):
        codec.dumps_bytes(UNDEFINED)
    with pytest.raises(ValueError):
        dumps_line(UNDEFINED)


def test_stringify_undefined_top_level() -> None:
    assert stringify(UNDEFINED) is None
    with pytest.raises(ValueError):
        dumps_line(UNDEFINED)


# --------------------------------------------------------------------------------------------------
# stringify
# --------------------------------------------------------------------------------------------------

STRINGIFY_CASES: list[tuple[Any, str]] = [
    (None, 'null'),
    (True, 'true'),
    (False, 'false'),
    (0, '0'),
    (-0.0, '0'),
    (0.0, '0'),
    (1.0, '1'),
    (-1.0, '-1'),
    (100.0, '100'),
    (1.5, '1.5'),
    (-2.5, '-2.5'),
    (0.1 + 0.2, '0.30000000000000004'),
    (1e21, '1e+21'),
    (1e20, '100000000000000000000'),
    (123456789012345678901.0, '123456789012345680000'),
    (1e-7, '1e-7'),
    (1.5e-7, '1.5e-7'),
    (1e-6, '0.000001'),
    (0.000001234, '0.000001234'),
    (1e-5, '0.00001'),
    (0.0001, '0.0001'),
    (1e16, '10000000000000000'),
    (1e17, '100000000000000000'),
    (12345678901234567.0, '12345678901234568'),
    (5e-324, '5e-324'),
    (-5e-324, '-5e-324'),
    (2.2250738585072014e-308, '2.2250738585072014e-308'),
    (1.7976931348623157e308, '1.7976931348623157e+308'),
    (-1.7976931348623157e308, '-1.7976931348623157e+308'),
    (float("nan"), 'null'),
    (float("inf"), 'null'),
    (float("-inf"), 'null'),
    (2**53, '9007199254740992'),
    (2**53 + 1, '9007199254740992'),
    (-(2**53) - 1, '-9007199254740992'),
    (2**63, '9223372036854776000'),
    (2**64, '18446744073709552000'),
    (2**64 + 1, '18446744073709552000'),
    (12345678901234567890, '12345678901234567000'),
    (10**21, '1e+21'),
    (10**22, '1e+22'),
    (10**400, 'null'),
    (-(10**400), 'null'),
    (2**1024 - 2**970, 'null'),
    (2**1024 - 2**970 - 1, '1.7976931348623157e+308'),
    ("", '""'),
    ("plain", '"plain"'),
    ("\"\\/\b\f\n\r\t", '"\\"\\\\/\\b\\f\\n\\r\\t"'),
    ("\x00\x01\x07\x0b\x0e\x1a\x1f", '"\\u0000\\u0001\\u0007\\u000b\\u000e\\u001a\\u001f"'),
    ("\x7f\x80\xa0\u2028\u2029\ufeff\uffff", '"\x7f\x80\xa0\u2028\u2029\ufeff\uffff"'),
    ("\U0001f600 \U0010ffff", '"\U0001f600 \U0010ffff"'),
    ("\ud800", '"\\ud800"'),
    ("\udfff", '"\\udfff"'),
    ("a\udc00b\ud83d", '"a\\udc00b\\ud83d"'),
    ("\ud83d\ude00", '"\U0001f600"'),
    ("\udc00\ud800", '"\\udc00\\ud800"'),
    ([], '[]'),
    ({}, '{}'),
    ([UNDEFINED], '[null]'),
    ([1, UNDEFINED, None], '[1,null,null]'),
    ({"a": UNDEFINED}, '{}'),
    ({"a": UNDEFINED, "b": 1}, '{"b":1}'),
    ({"a": 1, "b": UNDEFINED}, '{"a":1}'),
    ({"a": 1, "b": UNDEFINED, "c": UNDEFINED, "d": 2}, '{"a":1,"d":2}'),
    ({"x": {"y": UNDEFINED}, "z": [UNDEFINED, {"q": UNDEFINED}]}, '{"x":{},"z":[null,{}]}'),
    ({"b": 1, "10": 2, "2": 3, "a": 4, "0": 5}, '{"0":5,"2":3,"10":2,"b":1,"a":4}'),
    ({"b": 1, "01": 2, "-1": 3, "1.5": 4, "4294967294": 5, "4294967295": 6, "1e3": 7, " 1": 8, "9": 9}, '{"9":9,"4294967294":5,"b":1,"01":2,"-1":3,"1.5":4,"4294967295":6,"1e3":7," 1":8}'),
    ({"z": {"3": 1, "1": 2}, "1": [{"b": 0, "0": 1}]}, '{"1":[{"0":1,"b":0}],"z":{"1":2,"3":1}}'),
    ({"__proto__": 1, "constructor": 2}, '{"__proto__":1,"constructor":2}'),
    ({"k\"ey\\": "v", "\ud800": "\udc00", "\u2028": "\x00"}, '{"k\\"ey\\\\":"v","\\ud800":"\\udc00","\u2028":"\\u0000"}'),
    ((1, 2.0, "3"), '[1,2,"3"]'),
    ([[[[[]]]]], '[[[[[]]]]]'),
    ({"a": [1, 2.5, {"b": None, "c": True, "d": [False, "x", -0.0]}]}, '{"a":[1,2.5,{"b":null,"c":true,"d":[false,"x",0]}]}'),
    ({"cost": {"input": 0.003702, "output": 0.008505, "cacheRead": 0, "total": 0.012207}, "ts": 1767225601000}, '{"cost":{"input":0.003702,"output":0.008505,"cacheRead":0,"total":0.012207},"ts":1767225601000}'),
    (["1.0,", "1e+21", "0.0]", "3e-4", {"1": "x"}], '["1.0,","1e+21","0.0]","3e-4",{"1":"x"}]'),
    ({"line1": 1, "v2": 2, "x": "\"1\":"}, '{"line1":1,"v2":2,"x":"\\"1\\":"}'),
]


@pytest.mark.parametrize(("value", "expected"), STRINGIFY_CASES)
def test_stringify_golden(value: Any, expected: str) -> None:
    assert stringify(value) == expected
    assert dumps_line(value) == (expected + "\n").encode()
    assert codec.dumps_bytes(value) == expected.encode()
    # The exact encoder must agree on its own, whichever path stringify took.
    assert codec._stringify_pure(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        # Byte patterns the fast path treats as possible number/key problems, inside strings only.
        {"a": "1.0,", "b": "x0.0}", "c": "2e+5", "d": "7e-1", "e": "\"3\":", "f": ["0.0"]},
        ["line1", {"key1": "v", "k2": 0.5}],
        {"x": "1.0"},
        [1.0],
        1.0,
        -0.0,
        # escaped backslashes and quotes before a number: counting quotes must pair them as a parser does
        {"a": "\\", "b": 2.0, "c": "x\\\":1.0,", "d": [3.0, "\\\\\"", 1e-7, "\\"], "e": 4.0},
        ["\\\"", 5.0, ":1.0,", 1e16, "\\", 6.0],
        # a number after '":' is a key's value unless the quote opens a string (after "{[,:") or
        # may be escaped (after a backslash): each such look-alike inside a string, beside a real one
        {"k": ":1.0,", "l": 1.0}, ["\":2.0,", 2.0], {"a": {"b": "\":3.0}"}, "c": 3.0},
        {"q": ",\":4.0]", "r": [4.0]}, {"s": "[\":5.0,", "t": 5.0}, {"u": "{\":6.0,", "v": 6.0},
        {"w": "\\\\\":7.0,", "x": 7.0}, {"a\"": 8.0, "": 8.0, "b:": 8.0, "c,": 8.0, "d\\": 8.0},
        [":1.0,", 1.0], [0, ":1.0]", 1.0], {":1.0,": 1.0}, {"a": ":1.0}", "b": 1.0}, {"a": 1, ":2.0,": [":3.0]"]},
    ],
)
def test_fast_path_false_alarms_and_fixups(value: Any) -> None:
    assert stringify(value) == codec._stringify_pure(value)


def test_stringify_long_and_non_ascii_strings() -> None:
    s = "é😀\u2028" * 10000 + "\x01"
    assert stringify(s) == '"' + "é😀\u2028" * 10000 + '\\u0001"'
    assert dumps_line([s]).decode() == '["' + "é😀\u2028" * 10000 + '\\u0001"]\n'


def test_stringify_lone_surrogate_output_is_valid_utf8() -> None:
    line = dumps_line({"s": "x\ud800y", "t": "\ud83d\ude00"})
    assert line == '{"s":"x\\ud800y","t":"\U0001f600"}\n'.encode()
    line.decode("utf-8")  # strict


def test_stringify_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        stringify({1: "a"})
    with pytest.raises(TypeError):
        stringify({"a": object()})
    with pytest.raises(TypeError):
        stringify({"a", "b"})
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError):
        stringify(cyclic)


def test_stringify_shared_subtrees_are_not_cycles() -> None:
    shared = {"a": 1}
    assert stringify([shared, shared, [shared]]) == '[{"a":1},{"a":1},[{"a":1}]]'


def test_stringify_deep_nesting_beyond_orjson_limit() -> None:
    depth = 100_000
    value: Any = []
    for _ in range(depth):
        value = [value]
    assert stringify(value) == "[" * (depth + 1) + "]" * (depth + 1)


def test_stringify_subclasses_behave_like_their_base() -> None:
    class D(dict[str, Any]):
        pass

    class L(list[Any]):
        pass

    class S(str):
        pass

    assert stringify(D(b=L([S("x"), 2]), a=UNDEFINED)) == '{"b":["x",2]}'


# --------------------------------------------------------------------------------------------------
# loads
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 1),
        (" \t\r\n[1, 2.5, -3]\r\n ", [1, 2.5, -3]),
        ('{"a":1,"a":2,"b":3,"a":4}', {"a": 4, "b": 3}),
        ('"\\ud800"', "\ud800"),
        ('"\\udc00x\\ud83d"', "\udc00x\ud83d"),
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ('["\\ud83d\\ude00", "\\ud800"]', ["\U0001f600", "\ud800"]),
        ("1e400", float("inf")),
        ("-1e400", float("-inf")),
        ("1e-400", 0.0),
        ("[1e400, \"\\ud800\"]", [float("inf"), "\ud800"]),
        ("12345678901234567890", 12345678901234567890),
        ("18446744073709551615", 18446744073709551615),
        ("-9223372036854775808", -9223372036854775808),
        ("1E5", 100000.0),
        ('"\\/\\b\\f\\n\\r\\t\\"\\\\\\u00e9"', '/\b\f\n\r\t"\\é'),
        ('"\x7f\u2028\U0001f600"', "\x7f\u2028\U0001f600"),
        ('{"__proto__": null}', {"__proto__": None}),
    ],
)
def test_loads_golden(text: str, expected: Any) -> None:
    for data in (text, text.encode()):
        got = loads(data)
        assert got == expected
        assert type(got) is type(expected)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # Outside orjson's integer range orjson gives floats; the exact parser must do the same so the
        # result type never depends on which parser ran (both spell the same JSON.stringify output).
        ("18446744073709551616", 18446744073709551616.0),
        ("-9223372036854775809", -9223372036854775809.0),
        ("123456789012345678901234567890", 1.2345678901234568e29),
        ("1" + "0" * 5000, float("inf")),
    ],
)
def test_loads_big_integers_are_doubles(text: str, value: float) -> None:
    for t in (text, '["\\ud800",' + text + "]"):  # orjson path, then the exact path
        got = loads(t)
        num = got if not isinstance(got, list) else got[1]
        assert type(num) is float
        assert num == value


def test_loads_negative_zero() -> None:
    assert loads("-0") == 0
    assert str(loads("-0.0")) == "-0.0"
    assert str(loads('["\\ud800", -0.0]')[1]) == "-0.0"
    assert loads('["\\ud800", -0]')[1] == 0


def test_loads_exact_path_handles_raw_lone_surrogates_and_depth() -> None:
    assert loads('["\ud800"]') == ["\ud800"]
    deep = "[" * 50_000 + "]" * 50_000
    value = loads(deep)
    for _ in range(49_999):
        value = value[0]
    assert value == []


def test_loads_bytes_decode_with_replacement() -> None:
    assert loads(b'"a\xffb"') == "a\ufffdb"


@pytest.mark.parametrize(
    "text",
    [
        "", " ", "[1,]", '{"a":1,}', "01", "1.", ".5", "+1", "-", "1e", "1e+", "NaN", "Infinity", "tru",
        "truex", "'a'", '"\t"', '"a\nb"', '"\\x"', '"\\u12"', '"\\U0041"', "\ufeff1", "\xa01", "1\xa0",
        "\x0b1", "1 2", "[1] x", "{a:1}", '{"a" 1}', '"abc', "[", "/*c*/1", "1\x00", '["\\ud800"] x',
    ],
)
def test_loads_rejects(text: str) -> None:
    with pytest.raises(JSONSyntaxError) as info:
        loads(text)
    assert 0 <= info.value.pos <= len(text)
    assert isinstance(info.value, ValueError)


def test_loads_error_positions() -> None:
    with pytest.raises(JSONSyntaxError) as info:
        loads('["\\ud800", 1 x]')
    assert info.value.pos == 13
    with pytest.raises(JSONSyntaxError) as info:
        loads('"\\ud800" x')
    assert info.value.pos == 9


# --------------------------------------------------------------------------------------------------
# scan_value
# --------------------------------------------------------------------------------------------------


def test_scan_value_basics() -> None:
    assert scan_value('  {"a": [1, "x"]} tail', 0) == ({"a": [1, "x"]}, 17)
    assert scan_value('xx\n\r\n\t{\n "a":\n 1\n}\nrest', 2) == ({"a": 1}, 18)
    assert scan_value("truex", 0) == (True, 4)
    assert scan_value("1e", 0) == (1, 1)
    assert scan_value("01", 0) == (0, 1)
    assert scan_value("-01", 0) == (0, 2)
    assert scan_value("12", 0) == (12, 2)  # a number may end at the end of the text
    assert scan_value('"\\ud800"', 0) == ("\ud800", 8)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ('{"a":', 0), ('  "abc', 2), ("tru", 0), ("[1,", 0), ("[1,]", 0), ("x", 0), ("\n  -", 3),
        ("1.", 0), ('"a\\', 0), ('"a\\u1234', 0), ("[1e", 0), ('{"a":1 x', 0), ("", 0), ("  \n ", 4),
    ],
)
def test_scan_value_incomplete(text: str, start: int) -> None:
    with pytest.raises(JSONIncomplete) as info:
        scan_value(text, 0)
    assert info.value.pos == start


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("x\n", 0), ("[1 2]", 3), ('"a\\u12"', 2), ('"a\x01"', 2), ("1.a", 0), ("[1e+", 2), ("'", 0),
        ("\xa01", 0), ('{"a",}', 4), ("[tru]", 1),
    ],
)
def test_scan_value_syntax_error(text: str, where: int) -> None:
    with pytest.raises(JSONSyntaxError) as info:
        scan_value(text, 0)
    assert info.value.pos == where


# --------------------------------------------------------------------------------------------------
# Bun.JSONL.parseChunk contract (one call), as recorded from Bun 1.4.4
# --------------------------------------------------------------------------------------------------

# (text, JSON.stringify(values), read in UTF-16 units, done, error)
CHUNK_CASES: list[tuple[str, str, int, bool, bool]] = [
    ('{"a":1}\n{"b"', '[{"a":1}]', 7, False, False),
    ('{"a":1} x\n{"b":2}\n', '[{"a":1}]', 7, False, True),
    ('x\n{"b":2}\n', '[]', 0, False, True),
    ('1', '[1]', 1, True, False),
    ('1 ', '[1]', 1, True, False),
    ('1\n', '[1]', 1, True, False),
    ('[1,', '[]', 0, False, False),
    ('tru', '[]', 0, False, False),
    ('"abc', '[]', 0, False, False),
    ('{"a":"\xe9"}\n{"b"', '[{"a":"\xe9"}]', 9, False, False),
    ('{"a":"\U0001f600"}\n{"b"', '[{"a":"\U0001f600"}]', 10, False, False),
    ('1.', '[]', 0, False, False),
    ('1.\n', '[]', 0, False, True),
    ('01', '[0]', 1, False, True),
    ('-', '[]', 0, False, False),
    ('-\n', '[]', 0, False, True),
    ('1e', '[1]', 1, False, True),
    ('1e5', '[100000]', 3, True, False),
    ('-0', '[0]', 2, True, False),
    ('NaN', '[]', 0, False, False),
    ('NaN\n', '[]', 0, False, True),
    ('Infinity', '[]', 0, False, False),
    ('\ufeff1', '[]', 0, False, True),
    ('\xa01', '[]', 0, False, True),
    ('1\xa0', '[1]', 1, False, True),
    ('"a\x01b"', '[]', 0, False, True),
    ('"a\nb"', '[]', 0, False, True),
    ('"a\tb"', '[]', 0, False, True),
    ('"\\ud800"', '["\\ud800"]', 8, True, False),
    ('"\\udc00x"', '["\\udc00x"]', 9, True, False),
    ('"\\x"', '[]', 0, False, True),
    ('"\\u12"', '[]', 0, False, True),
    ('"\\u12', '[]', 0, False, True),
    ('"\\', '[]', 0, False, False),
    ('"\\u1234', '[]', 0, False, False),
    ('1 2', '[1]', 1, False, True),
    ('1\n2', '[1,2]', 3, True, False),
    ('1\r\n2\r\n', '[1,2]', 4, True, False),
    ('1\r2', '[1]', 1, False, True),
    ('1\r', '[1]', 1, True, False),
    ('1\t\n', '[1]', 1, True, False),
    ('', '[]', 0, True, False),
    ('\n\n', '[]', 0, True, False),
    ('  ', '[]', 0, True, False),
    ('\n  x', '[]', 0, False, False),
    ('[1,]', '[]', 0, False, False),
    ('[1,]\n', '[]', 0, False, True),
    ('{"a":1,}', '[]', 0, False, False),
    ('{"a":', '[]', 0, False, False),
    ('{"a":1', '[]', 0, False, False),
    ('t', '[]', 0, False, False),
    ('true', '[true]', 4, True, False),
    ('truex', '[true]', 4, False, True),
    ('true x', '[true]', 4, False, True),
    ('nul', '[]', 0, False, False),
    ('nulll', '[null]', 4, False, True),
    ('fals', '[]', 0, False, False),
    ('falsey', '[false]', 5, False, True),
    ('1x', '[1]', 1, False, True),
    ('[1] [2]', '[[1]]', 3, False, True),
    ('[1]\n[2] x\n[3]', '[[1],[2]]', 7, False, True),
    ('{}\n\n{}\n', '[{},{}]', 6, True, False),
    ('\u2028 1', '[]', 0, False, True),
    ('1\x0b', '[1]', 1, False, True),
    ('\x0c1', '[]', 0, False, True),
    ('-a', '[]', 0, False, True),
    ('1.a', '[]', 0, False, True),
    ('1ea', '[1]', 1, False, True),
    ('1e+', '[1]', 1, False, True),
    ('0x1', '[0]', 1, False, True),
    ('.5', '[]', 0, False, True),
    ('+1', '[]', 0, False, True),
    ('"\x00"', '[]', 0, False, True),
    ('"\x7f\u2028"', '["\x7f\u2028"]', 4, True, False),
    ('\x00', '[]', 0, False, True),
    ('x', '[]', 0, False, False),
    ('x\n', '[]', 0, False, True),
    ('[1 2]', '[]', 0, False, True),
    ('[1 2', '[]', 0, False, False),
    ('{"a" 1}', '[]', 0, False, True),
    ('{1:2}', '[]', 0, False, True),
    ('{"a":}', '[]', 0, False, False),
    ('[,]', '[]', 0, False, True),
    ('[,', '[]', 0, False, False),
    ('tx', '[]', 0, False, False),
    ('t ', '[]', 0, False, True),
    ('"a\\q', '[]', 0, False, True),
    ('1.5e', '[1.5]', 3, False, True),
    ('1.5e+', '[1.5]', 3, False, True),
    ('[1e', '[]', 0, False, False),
    ('[1e]', '[]', 0, False, True),
    ('[1e+', '[]', 0, False, True),
    ('[1.5e', '[]', 0, False, False),
    ('[1.5e+', '[]', 0, False, True),
    ('[1ex', '[]', 0, False, False),
    ('[01', '[]', 0, False, False),
    ('[01]', '[]', 0, False, True),
    ('[0x', '[]', 0, False, False),
    ('(', '[]', 0, False, False),
    ('(\n', '[]', 0, False, True),
    ('.', '[]', 0, False, False),
    ('$', '[]', 0, False, False),
    ('_', '[]', 0, False, False),
    ("'", '[]', 0, False, True),
    ("['", '[]', 0, False, True),
    ('/', '[]', 0, False, True),
    ('[1.]', '[]', 0, False, True),
    ('[1.', '[]', 0, False, False),
    ('{"a",}', '[]', 0, False, True),
    ('{"a",', '[]', 0, False, False),
    ('{a', '[]', 0, False, False),
    ('{a:1}', '[]', 0, False, True),
    ('[truex', '[]', 0, False, False),
    ('[truex]', '[]', 0, False, True),
    ('[tru\n', '[]', 0, False, True),
    ('[1,\n', '[]', 0, False, False),
    ('{"a":\n', '[]', 0, False, False),
    ('"\\ud83d\\ude00"', '["\U0001f600"]', 14, True, False),
    ('{"a":1,"a":2,"b":3,"a":4}', '[{"a":4,"b":3}]', 25, True, False),
    ('{"__proto__":1}', '[{"__proto__":1}]', 15, True, False),
    ('1E400', '[null]', 5, True, False),
    ('-1e400', '[null]', 6, True, False),
    ('12345678901234567890', '[12345678901234567000]', 20, True, False),
    ('123456789012345678901234567890', '[1.2345678901234568e+29]', 30, True, False),
    ('1e-400', '[0]', 6, True, False),
    ('-0.0', '[0]', 4, True, False),
    ('[1,2]\n  [3]\n\t{}  \r\n', '[[1,2],[3],{}]', 15, True, False),
    ('{\n "a": 1\n}\n', '[{"a":1}]', 11, True, False),
    ('{"x":\n{"a":1}\n{"b":2}\n', '[]', 0, False, True),
    ('\xe9', '[]', 0, False, True),
    ('\ud800', '[]', 0, False, True),
    ('["\ud800"]', '[["\\ud800"]]', 5, True, False),
]


@pytest.mark.parametrize(("text", "values", "read", "done", "error"), CHUNK_CASES)
def test_parse_chunk_matches_bun(text: str, values: str, read: int, done: bool, error: bool) -> None:
    records: list[tuple[Any, int, int]] = []
    status, got_read, _ = codec._parse_chunk(text, 0, {}, records)
    assert stringify([v for v, _, _ in records]) == values
    assert utf16_len(text[:got_read]) == read
    assert (status == codec._DONE, status == codec._ERROR) == (done, error)


# --------------------------------------------------------------------------------------------------
# parse_jsonl (omp's skip-on-error loop), spec S1.4.3 and S15
# --------------------------------------------------------------------------------------------------

H = '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp"}'


def U(id_: str, parent: str | None = None) -> str:
    return stringify({"type": "message", "id": id_, "parentId": parent, "message": {"role": "user", "content": "hi"}}) or ""


def A(id_: str, parent: str | None = None) -> str:
    return stringify({"type": "message", "id": id_, "parentId": parent, "message": {"role": "assistant"}}) or ""


def ids(text: str) -> tuple[list[Any], list[str]]:
    records, malformed = parse_jsonl(text)
    out = [v.get("id") if isinstance(v, dict) else v for v, _, _ in records]
    return out, [text[a:b] for a, b in malformed]


def test_c15_garbage_and_value_swallowing_the_last_line() -> None:
    text = "\n".join([H, "not json", U("a"), '{"broken":', A("b", "a")]) + "\n"
    assert ids(text) == (["s", "a"], ["not json", '{"broken":\n' + A("b", "a") + "\n"])


def test_c16_open_value_followed_by_lines_loses_only_its_line() -> None:
    text = "\n".join([H, '{"x":', U("a"), U("b", "a")]) + "\n"
    assert ids(text) == (["s", "a", "b"], ['{"x":'])


def test_c17_incomplete_last_line_without_lf() -> None:
    text = H + "\n" + U("a") + '\n{"type":"message","id":"c","par'
    assert ids(text) == (["s", "a"], ['{"type":"message","id":"c","par'])


def test_c18_missing_final_lf_and_glued_append() -> None:
    assert ids(H + "\n" + U("a")) == (["s", "a"], [])
    assert ids(H + "\n" + U("a") + U("b", "a") + "\n") == (["s", "a"], [U("b", "a")])


def test_c19_crlf() -> None:
    text = "\r\n".join([H, U("a"), U("b", "a")]) + "\r\n"
    records, malformed = parse_jsonl(text)
    assert [v["id"] for v, _, _ in records] == ["s", "a", "b"]
    assert malformed == []
    assert [text[a:b] for _, a, b in records] == [H, U("a"), U("b", "a")]


def test_c22_non_object_records() -> None:
    text = "\n".join([H, "42", '"s"', "[1]", "true", U("a")]) + "\n"
    assert ids(text) == (["s", 42, "s", [1], True, "a"], [])


def test_c25_two_objects_on_one_line() -> None:
    assert ids(H + "\n" + U("a") + " " + A("b", "a") + "\n") == (["s", "a"], [" " + A("b", "a")])


def test_c26_pretty_printed_header() -> None:
    text = '{\n  "type": "session",\n  "id": "s"\n}\n' + U("a") + "\n"
    records, malformed = parse_jsonl(text)
    header_end = text.index("}\n") + 1
    expected = [("s", 0, header_end), ("a", header_end + 1, header_end + 1 + len(U("a")))]
    assert [(v["id"], a, b) for v, a, b in records] == expected
    assert malformed == []


def test_example_10_trailing_garbage() -> None:
    e, f = '{"type":"custom","id":"e"}', '{"type":"custom","id":"f"}'
    text = H + "\n" + U("a") + " trailing\n" + e + " " + f + "\n"
    assert ids(text) == (["s", "a", "e"], [" trailing", " " + f])


def test_example_11_multiline_record() -> None:
    text = H + "\n" + U("a") + '\n{\n "type": "custom",\n "id": "e"\n}\n'
    assert ids(text) == (["s", "a", "e"], [])


def test_blank_and_whitespace_lines_are_not_malformed() -> None:
    # JavaScript trim() blanks: NBSP, BOM, U+2028, VT, FF are not JSON whitespace, so the parser rejects
    # them, but the discarded span is blank and not counted.
    text = "\n".join([H, "", "   ", "\t\r", "\xa0", "\ufeff", "\u2028 \u3000", "\x0b\x0c", U("a")])
    assert ids(text) == (["s", "a"], [])


def test_non_js_whitespace_lines_are_malformed() -> None:
    # str.strip() would call these blank; JavaScript trim() does not.
    text = "\n".join([H, "\x1c", "\x85", "\u200b", U("a")])
    assert ids(text) == (["s", "a"], ["\x1c", "\x85", "\u200b"])


def test_invalid_multiline_value_resumes_line_by_line() -> None:
    text = '1\n{"a":\n"b" x}\n2\n'
    records, malformed = parse_jsonl(text)
    assert [(v, a, b) for v, a, b in records] == [(1, 0, 1), ("b", 8, 11), (2, 15, 16)]
    assert [text[a:b] for a, b in malformed] == ['{"a":', " x}"]


def test_trailing_spaces_tabs_cr_after_values() -> None:
    assert ids("1 \t\r\n2\r\r\n3 ") == ([1, 2, 3], [])
    assert ids("1\r2\n3") == ([1, 3], ["\r2"])


def test_empty_and_blank_texts() -> None:
    assert parse_jsonl("") == ([], [])
    assert parse_jsonl(" \n\r\n\t") == ([], [])


def test_incomplete_after_whitespace_reports_the_open_value() -> None:
    text = "1\n\n  [1,\n 2"
    records, malformed = parse_jsonl(text)
    assert [v for v, _, _ in records] == [1]
    assert malformed == [(5, len(text))]


def test_start_offset() -> None:
    text = "garbage\n1\n"
    assert parse_jsonl(text, 8) == ([(1, 8, 9)], [])


def test_astral_characters_keep_python_offsets() -> None:
    text = '"😀" x\n"é"\n'
    records, malformed = parse_jsonl(text)
    assert records == [("😀", 0, 3), ("é", 6, 9)]
    assert malformed == [(3, 5)]


@pytest.mark.parametrize(
    "text",
    [
        "[\n" * 30_000 + "x\n",  # every line re-parsed to the far error without memoisation
        "[\n" + "[\n" * 30_000 + "]" * 30_000 + ",\n" + "x\n",  # nested values completing on one line
        '{"k":\n' * 30_000 + "}\n",
    ],
)
def test_pathological_nesting_is_not_quadratic(text: str) -> None:
    started = time.perf_counter()
    parse_jsonl(text)
    assert time.perf_counter() - started < 5.0


def test_large_garbage_is_fast() -> None:
    line = 'not json {"a": [1, 2, tru] "\\x" \ufeff\n'
    text = line * 50_000  # about 2 MB
    started = time.perf_counter()
    records, malformed = parse_jsonl(text)
    assert records == []
    assert len(malformed) == 50_000
    assert time.perf_counter() - started < 5.0


def test_scanner_steps_end_at_line_starts() -> None:
    text = '\n\n  {"a":\n 1} x\n2\n{"b":\n[1,\n'
    scanner = JSONLScanner(text)
    assert scanner.step(0) == ([({"a": 1}, 4, 13)], [(13, 15)], 16)
    assert text[13:15] == " x"
    assert scanner.step(16) == ([(2, 16, 17)], [], 18)
    assert scanner.step(18) == ([], [(18, len(text))], len(text))
    assert scanner.step(len(text) - 1) == ([], [], len(text))  # only whitespace left


def test_scanner_blank_garbage_line() -> None:
    text = "\xa0\nx\n1"
    scanner = JSONLScanner(text)
    assert scanner.step(0) == ([], [], 2)
    assert scanner.step(2) == ([], [(2, 3)], 4)
    assert scanner.step(4) == ([(1, 4, 5)], [], 5)


def test_scanner_reuses_failures_across_steps() -> None:
    text = "[\n" * 30_000 + "x\n"
    scanner = JSONLScanner(text)
    started = time.perf_counter()
    pos = 0
    while pos < len(text):
        _, _, pos = scanner.step(pos)
    assert time.perf_counter() - started < 5.0


# --------------------------------------------------------------------------------------------------
# utf16_len
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("s", "n"),
    [("", 0), ("abc", 3), ("é", 1), ("😀", 2), ("a😀b", 4), ("\ud800", 1), ("\ud83d\ude00", 2), ("\U0010ffff" * 3, 6)],
)
def test_utf16_len(s: str, n: int) -> None:
    assert utf16_len(s) == n


_NUMBERY = st.text(alphabet='"\\:,[]{}0123.e+-x', max_size=10)
_FLOATS = st.one_of(st.floats(allow_nan=False), st.integers(-10, 10).map(float),
                    st.sampled_from([1e16, 1e21, 1e-7, 1.5e-6, 2.5, -0.0]))


@settings(max_examples=500, deadline=None)
@given(st.recursive(st.one_of(_NUMBERY, _FLOATS, st.integers(-5, 5)),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_NUMBERY, inner, max_size=5),
                    max_leaves=20))
def test_number_fixups_skip_look_alikes_in_strings(value: Any) -> None:
    # strings made of quotes, backslashes and number-like text around floats orjson spells unlike
    # JavaScript: the fast path fixes the numbers and only them
    assert stringify(value) == codec._stringify_pure(value)


def test_fast_path_numbers_over_every_exponent() -> None:
    # The fast path relies on orjson placing a double's digits as JavaScript does except at
    # exponents 16-20 and -6 and for integral values: every decimal exponent, a spread of
    # mantissas, each alone, in an array, as a member and negated.
    rng = random.Random(16)
    for exp in range(-324, 309):
        for mantissa in (1.0, 1.5, 9.999999999999999, rng.uniform(1, 10), rng.uniform(1, 10)):
            try:
                f = float(f"{mantissa!r}e{exp}")
            except OverflowError:
                continue
            for value in (f, -f, [f, 0.5], [0.5, f], {"a": -f, "b": 1}, {"b": 1, "a": f}):
                assert stringify(value) == codec._stringify_pure(value), (exp, mantissa, value)


def test_orjson_line_is_dumps_line_or_nothing() -> None:
    """``orjson_line``: the exact line where orjson can write the value, None where it cannot
    (deeper than 254 levels, a lone surrogate, an all-digit key), never another text."""
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    shallow: Any = "x"
    for _ in range(250):
        shallow = {"a": shallow}
    cases: list[Any] = [{"a": 1.0, "b": [1e21, 1e-7, -0.0]}, {"x": "\ud800"}, {"b": 1, "2": 3}, deep, shallow,
                        {"t": "é\u2028\x00"}, [None, True, 5]]
    got = [codec.orjson_line(v) for v in cases]
    assert [g is None for g in got] == [False, True, True, True, False, False, False]
    for value, line in zip(cases, got, strict=True):
        if line is not None:
            assert line == codec.dumps_line(value)
    assert codec.orjson_line(UNDEFINED) is None


def _fix_hits_by_two_standard_searches(out: bytes) -> list[int] | None:
    """What the fast path's one leftmost-first search must find, found the slow way: every
    occurrence of each pattern (overlapping ones too), an all-digit key giving None."""
    import re as _re

    for m in _re.finditer(rb'(?=[0-9]":)', out):
        j = m.start()
        while j > 0 and out[j - 1] in b"0123456789":
            j -= 1
        if j >= 2 and out[j - 1] == 0x22 and out[j - 2] in b"{,":
            return None
    hits: set[int] = set()
    for pattern in codec._NUMBER_PATTERNS:
        for m in _re.finditer(b"(?=" + _re.escape(pattern) + b")", out):
            i = m.start()
            if pattern[0] in b"+-":
                if i >= 2 and out[i - 1] == 0x65 and codec._number_token_before(out, i - 2):
                    hits.add(i - 2)
            elif codec._number_token_before(out, i - 1):
                hits.add(i - 1)
    if out.endswith(b".0") and codec._number_token_before(out, len(out) - 3):
        hits.add(len(out) - 3)
    return sorted(hits)


@settings(max_examples=1000, deadline=None)
@given(st.recursive(st.one_of(_NUMBERY, _FLOATS, st.integers(-5, 5)),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_NUMBERY, inner, max_size=5),
                    max_leaves=20))
def test_one_leftmost_search_finds_what_every_pattern_search_does(value: Any) -> None:
    # the number and key patterns are searched in one leftmost-first pass, which skips a match
    # starting inside another: it must give the very hits of searching each pattern everywhere
    out = orjson.dumps(value)
    hits = codec._number_fix_hits(out)
    assert (sorted(set(hits)) if hits is not None else None) == _fix_hits_by_two_standard_searches(out)


@pytest.mark.parametrize(("value", "index_like"), [
    ({"+1": 1.0, "12": 2}, True),  # a number pattern's "+1" right before the key: the key still found
    ({"x+1": 1.0}, False), ({"-6": 1e-6}, False), ({"a": "1e+20\":"}, False), ({"0": 0}, True),
    ([{"b": 1}, {"1e+1": 2}, {"7": 1}], True), ({"a": "+20\":", "b": {"20": 1.0}}, True),
])
def test_all_digit_keys_found_next_to_number_patterns(value: Any, index_like: bool) -> None:
    assert (codec._number_fix_hits(orjson.dumps(value)) is None) is index_like
    assert stringify(value) == codec._stringify_pure(value)
