"""JSON with JavaScript semantics: ``JSON.stringify``, ``JSON.parse`` and Bun's lenient JSONL scanner.

omp (a Bun program) writes every session line with ``JSON.stringify`` and reads files with
``Bun.JSONL.parseChunk`` driven by a skip-on-error loop (spec S1.1.3, S1.4.3, S19.1, S19.3). Python's
``json`` and orjson differ from both in small ways (number formatting, key order, lone surrogates,
``undefined``), so this module reproduces them byte for byte.

Speed strategy: ``stringify``/``loads`` run orjson first and only fall back to the exact pure-Python
code when orjson refuses the input or when a cheap byte scan of orjson's output finds a construct whose
spelling may differ from JavaScript's (see ``_orjson_stringify``).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from json.encoder import encode_basestring as _quote_plain  # C-accelerated in CPython
from typing import Any, Final, NoReturn

import orjson

from omp_session.bytesearch import automaton
from omp_session.errors import JSONSyntaxError

_scanstring: Callable[[str, int, bool], tuple[str, int]]
try:
    from _json import scanstring as _scanstring  # the C version behind json.decoder.scanstring
except ImportError:  # pragma: no cover - not CPython
    from json.decoder import py_scanstring as _scanstring  # type: ignore[attr-defined,no-redef]

__all__ = [
    "UNDEFINED",
    "JSONIncomplete",
    "JSONLScanner",
    "UndefinedType",
    "dumps_bytes",
    "dumps_line",
    "loads",
    "parse_jsonl",
    "scan_value",
    "stringify",
    "utf16_len",
]


class UndefinedType:
    """Type of :data:`UNDEFINED`, the stand-in for JavaScript ``undefined`` (``None`` is ``null``)."""

    __slots__ = ()
    _instance: UndefinedType | None = None

    def __new__(cls) -> UndefinedType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        # Unpickling must yield the module's singleton, not a copy, so identity checks keep working.
        return "UNDEFINED"

    def __copy__(self) -> UndefinedType:
        return self

    def __deepcopy__(self, memo: object) -> UndefinedType:
        return self


UNDEFINED: Final = UndefinedType()


class JSONIncomplete(ValueError):
    """The text ended while a value was still open; ``pos`` is where that value started."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"{message} (value starts at offset {pos})")
        self.pos = pos


# --------------------------------------------------------------------------------------------------
# Serializer
# --------------------------------------------------------------------------------------------------

_MAX_SAFE_INT: Final = 2**53
_INF: Final = float("inf")
_MAX_ARRAY_INDEX: Final = 4294967294  # 2**32 - 2: larger integer-like keys keep insertion order in JS
_INDEX_KEY = re.compile(r"0|[1-9][0-9]{0,9}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_OR_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _surrogate_repl(m: re.Match[str]) -> str:
    s = m.group()
    if len(s) == 2:
        # A high+low pair is one character to JavaScript, which writes it raw.
        return chr(0x10000 + ((ord(s[0]) - 0xD800) << 10) + (ord(s[1]) - 0xDC00))
    return f"\\u{ord(s):04x}"


def _quote(s: str) -> str:
    out: str = _quote_plain(s)
    if not s.isascii() and _SURROGATE.search(s) is not None:
        out = _SURROGATE_OR_PAIR.sub(_surrogate_repl, out)
    return out


def _js_float(f: float) -> str:
    """ECMAScript Number::toString for a double."""
    r = float.__repr__(f)
    # In the range where repr() uses plain decimal notation (1e-4 <= |f| < 1e16) its shortest
    # round-trip digits are exactly what JavaScript prints, except for the ".0" of integral values.
    if "e" not in r and "n" not in r:
        if not r.endswith(".0"):
            return r
        return r[:-2] if f != 0 else "0"  # JSON.stringify(-0) is "0"
    if f != f or f in (_INF, -_INF):
        return "null"
    sign = ""
    if r[0] == "-":
        sign = "-"
        r = r[1:]
    mant, _, exp = r.partition("e")
    int_part, _, frac_part = mant.partition(".")
    digits = int_part + frac_part
    point = len(int_part) + (int(exp) if exp else 0)  # value == 0.<digits> * 10**point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    e = point - 1
    exp_text = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + exp_text
    return sign + digits[0] + "." + digits[1:] + exp_text


def _js_int(n: int) -> str:
    if -_MAX_SAFE_INT <= n <= _MAX_SAFE_INT:
        return int.__repr__(n)
    # omp only ever holds doubles: a bigger literal was rounded when it was parsed.
    try:
        return _js_float(float(n))
    except OverflowError:
        return "null"  # the literal parsed to Infinity


def _js_items(d: dict[Any, Any]) -> list[tuple[str, Any]]:
    """Members of ``d`` in JavaScript enumeration order, without ``undefined`` ones."""
    items: list[tuple[str, Any]] = []
    digit_key = False
    for k, v in d.items():
        if not isinstance(k, str):
            raise TypeError(f"dict keys must be str, not {type(k).__name__}")
        if v is UNDEFINED:
            continue
        if k and "0" <= k[0] <= "9":
            digit_key = True
        items.append((k, v))
    if not digit_key:
        return items
    indexed: list[tuple[int, str, Any]] = []
    named: list[tuple[str, Any]] = []
    for k, v in items:
        if _INDEX_KEY.fullmatch(k) is not None and int(k) <= _MAX_ARRAY_INDEX:
            indexed.append((int(k), k, v))
        else:
            named.append((k, v))
    if not indexed:
        return items
    indexed.sort(key=lambda t: t[0])
    return [(k, v) for _, k, v in indexed] + named


_END: Final[Any] = object()


def _one_member(v: Any) -> tuple[str | None, Any] | None:
    """(key, value) of a plain list or dict with exactly one member written (key None for a list)."""
    t = type(v)
    if t is list:
        return (None, v[0]) if len(v) == 1 else None
    if t is dict and len(v) == 1:
        for k, x in v.items():
            if type(k) is str and x is not UNDEFINED:
                return k, x
    return None


def _stringify_pure(value: Any) -> str:
    """Exact JSON.stringify; iterative so that any nesting depth ``loads`` accepts can be written back."""
    out: list[str] = []
    ap = out.append
    # Frame: [iterator over children, closing bracket(s), "a child was already written", id, or the
    # ids of a chain of one-member containers ([[[…]]], {"a":{"a":…}}), opened and closed at once].
    stack: list[list[Any]] = []
    open_ids: set[int] = set()  # JSON.stringify throws on cycles; without this we would loop forever
    v = value
    while True:
        if isinstance(v, str):
            ap(_quote(v))
        elif v is None or v is UNDEFINED:
            ap("null")  # UNDEFINED only gets here inside arrays, where JavaScript writes null
        elif v is True:
            ap("true")
        elif v is False:
            ap("false")
        elif isinstance(v, int):
            ap(_js_int(v))
        elif isinstance(v, float):
            ap(_js_float(v))
        elif isinstance(v, (dict, list, tuple)):
            if id(v) in open_ids:
                raise ValueError("Circular reference detected")
            member = _one_member(v)
            if member is not None:
                ids: list[int] = []
                closers: list[str] = []
                last_key, opener = None, ""
                while member is not None:
                    key = member[0]
                    if key is None:  # a run of one-element arrays, in a tight loop
                        run = len(ids)
                        while type(v) is list and len(v) == 1:
                            ident = id(v)
                            if ident in open_ids:
                                raise ValueError("Circular reference detected")
                            open_ids.add(ident)
                            ids.append(ident)
                            v = v[0]
                        run = len(ids) - run
                        ap("[" * run)
                        closers.append("]" * run)
                    else:  # a run of one-member objects, in a tight loop
                        run = len(ids)
                        while type(v) is dict and len(v) == 1:
                            ((key, inner),) = v.items()
                            if type(key) is not str or inner is UNDEFINED:
                                break
                            ident = id(v)
                            if ident in open_ids:
                                raise ValueError("Circular reference detected")
                            open_ids.add(ident)
                            ids.append(ident)
                            if key is not last_key:  # a deep chain repeats one key: quoted once
                                last_key, opener = key, "{" + _quote(key) + ":"
                            ap(opener)
                            v = inner
                        closers.append("}" * (len(ids) - run))
                    member = _one_member(v)
                closers.reverse()
                stack.append([iter(()), "".join(closers), True, ids])
                continue  # v is the chain's innermost member
            open_ids.add(id(v))
            if isinstance(v, dict):
                ap("{")
                stack.append([iter(_js_items(v)), "}", False, id(v)])
            else:
                ap("[")
                stack.append([iter(v), "]", False, id(v)])
        else:
            raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")
        while stack:
            frame = stack[-1]
            nxt = next(frame[0], _END)
            if nxt is _END:
                ap(frame[1])
                stack.pop()
                if frame[3].__class__ is list:
                    open_ids.difference_update(frame[3])
                else:
                    open_ids.discard(frame[3])
                continue
            if frame[2]:
                ap(",")
            else:
                frame[2] = True
            if frame[1] == "}":
                ap(_quote(nxt[0]))
                ap(":")
                v = nxt[1]
            else:
                v = nxt
            break
        else:
            return "".join(out)


# Fast path: orjson agrees with JSON.stringify on string escapes (verified by the tests: same short
# escapes, lowercase \u00xx, raw "/", DEL, U+2028/2029) and on most numbers. It refuses (so we fall back)
# lone surrogates, ints beyond 2**53 (OPT_STRICT_INTEGER), non-str keys, depth > 254. Both print a
# double's shortest round-trip digits; they place them differently in three cases only (checked over
# every exponent by the tests), each with a byte pattern in orjson's output:
#   "+1" / "+20"  exponents 16 to 20: orjson writes 1e+16 from 1e16, JavaScript from 1e21;
#   "-6"          exponent -6: orjson writes 1e-6 below 1e-5, JavaScript below 1e-6;
#   ".0" before ",", "}", "]" or at the end: an integral float (1.0, -0.0; JavaScript 1, 0).
# And a key ending in a digit (a digit before '":') may be all digits: JavaScript puts those first.
# Each hit is checked to look like a whole number token (or key); hits inside strings that still pass
# (e.g. the text "[1.0,") only cost an exact tokenizing pass over the output.
_UNDEF_MARK: Final = orjson.Fragment(b"\x00")  # a raw NUL never occurs in orjson output otherwise
_ORJSON_OPTS: Final = (
    orjson.OPT_STRICT_INTEGER | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)
_JSON_STR_B = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_UNDEF_MEMBER = re.compile(rb"," + _JSON_STR_B + rb":\x00")
_UNDEF_FIRST_MEMBER = re.compile(rb"\{" + _JSON_STR_B + rb":\x00,?")
# Everything up to the next number whose orjson spelling may differ from JavaScript's: strings,
# structure, literals, integers, and decimals without exponent whose last digit is not a lone ".0".
_SKIP_SAME_SPELLING = re.compile(
    rb"(?:" + _JSON_STR_B + rb"|[^\"\-0-9]++|-?[0-9]++(?![0-9.eE])|-?[0-9]++\.[0-9]*[1-9](?![0-9eE]))*+"
)
_NUMBER_B = re.compile(rb"-?[0-9]++(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+")
_DIGITS: Final = frozenset(b"0123456789")
_MANTISSA: Final = frozenset(b"0123456789.")
_VALUE_BEFORE: Final = b":,["  # what precedes a value token in compact output


def _orjson_default(obj: Any) -> Any:
    if obj is UNDEFINED:
        return _UNDEF_MARK
    raise TypeError


def _number_token_before(out: bytes, last: int) -> bool:
    """Whether the digits ending at ``out[last]`` begin where a value token can (not inside text)."""
    if last < 0 or out[last] not in _DIGITS:
        return False
    j = last
    while j > 0 and out[j - 1] in _MANTISSA:
        j -= 1
    if j > 0 and out[j - 1] == 0x2D:  # a minus sign
        j -= 1
    return j == 0 or out[j - 1] in _VALUE_BEFORE


# Searched in orjson's own bytes: mapping digits to one digit first (so three patterns did) cost a
# pass of its own and made every one-decimal number ("0.5,") a hit to check. One automaton finds
# the six number patterns (first bytes "+", "-", "."), then the ten of keys ending in a digit, in
# one leftmost-first pass: its vectorized prefilter made the one pass a third of the two standard
# passes this took before (0.09 s against 0.30 s for 200 MB of records). Leftmost-first reports
# every match the standard search would where none can start inside another: none of the number
# patterns can; a key's pattern can start inside a number's ("+1" then '1":'), and then its digits
# follow a "+", "-" or "." and so are no key of digits only, the one kind that matters.
_NUMBER_PATTERNS: Final = (b"+1", b"+20", b"-6", b".0,", b".0}", b".0]")
_KEY_AFTER: Final = len(_NUMBER_PATTERNS)  # patterns from here on are keys ending in a digit
_fix_automaton: Final = automaton(_NUMBER_PATTERNS + tuple(bytes((d,)) + b'":' for d in b"0123456789"),
                                  leftmost=True)


def _number_fix_hits(out: bytes) -> list[int] | None:
    """Where a number token orjson may spell unlike JavaScript has a digit: one position inside
    each such token (inside a string too, when the text looks like one); None when a key may be
    all digits (JavaScript enumerates those first, in numeric order: orjson's order is not its)."""
    hits: list[int] = []
    for which, i, _end in _fix_automaton().find_matches_as_indexes(out):
        if which >= _KEY_AFTER:
            j = i
            while j > 0 and out[j - 1] in _DIGITS:
                j -= 1
            # j is the key's first digit: an all-digit key is preceded by its quote and "{" or ","
            if j >= 2 and out[j - 1] == 0x22 and out[j - 2] in b"{,":
                return None
        elif which < 3:  # an exponent's sign: "e" and a digit before it
            if i >= 2 and out[i - 1] == 0x65 and _number_token_before(out, i - 2):
                hits.append(i - 2)
        elif _number_token_before(out, i - 1):
            hits.append(i - 1)
    if out.endswith(b".0") and _number_token_before(out, len(out) - 3):
        hits.append(len(out) - 3)
    return hits


_NUMBER_CHARS: Final = frozenset(b"0123456789.-+eE")
_OPENS_OR_ESCAPES: Final = frozenset(b"{[,:\\")  # what may come before a string's opening quote, and a backslash


def _fix_numbers_at(out: bytes, hits: list[int]) -> bytes | None:
    """``_fix_numbers`` for the tokens at ``hits`` only, skipping those inside strings (told by
    counting the quotes before them that are not escaped); None when a token is not one."""
    quotes: bytes | None = None  # (made when first needed: most records need none)
    parts: list[bytes] = []
    last = prev = 0
    inside = False
    for pos in sorted(hits):
        if pos < last:
            continue  # a second hit in a token already fixed
        start = pos
        while start > 0 and out[start - 1] in _NUMBER_CHARS:
            start -= 1
        if start >= 3 and out[start - 1] == 0x3A and out[start - 2] == 0x22 and out[start - 3] not in _OPENS_OR_ESCAPES:
            # the value of a key: in compact output every quote in a string is escaped, and a
            # string's opening quote follows one of "{[,:", so this unescaped quote closes a key
            # (counting every quote before it would tell the same, reading the record up to here)
            inside = False
        else:
            if quotes is None:
                # an escaped backslash, paired left to right as a parser pairs them, can't escape a quote
                quotes = out.replace(b"\\\\", b"__") if b"\\\\" in out else out
            # a quote starts or ends a string unless escaped; prev and pos are digits, never split "\""
            inside ^= (quotes.count(b'"', prev, pos) - quotes.count(b'\\"', prev, pos)) & 1 == 1
        prev = pos
        if inside:
            continue
        end = pos + 1
        while end < len(out) and out[end] in _NUMBER_CHARS:
            end += 1
        tok = out[start:end]
        if _NUMBER_B.fullmatch(tok) is None:
            return None
        fixed = _js_float(float(tok)).encode()
        if fixed != tok:
            parts += (out[last:start], fixed)
            last = end
    if not parts:
        return out
    parts.append(out[last:])
    return b"".join(parts)


def _fix_numbers(out: bytes) -> bytes | None:
    parts: list[bytes] = []
    last = pos = 0
    n = len(out)
    while True:
        pos = _SKIP_SAME_SPELLING.match(out, pos).end()  # type: ignore[union-attr]  # "*" always matches
        if pos >= n:
            break
        m = _NUMBER_B.match(out, pos)
        if m is None:
            return None  # not orjson output as we know it: let the exact encoder decide
        tok = m.group()
        fixed = _js_float(float(tok)).encode()
        if fixed != tok:
            parts.append(out[last:pos])
            parts.append(fixed)
            last = m.end()
        pos = m.end()
    if not parts:
        return out
    parts.append(out[last:])
    return b"".join(parts)


def _orjson_stringify(value: Any) -> bytes | None:
    """orjson's output when it provably equals JSON.stringify after fix-ups, else None."""
    try:
        out = orjson.dumps(value, default=_orjson_default, option=_ORJSON_OPTS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    if b"\x00" in out:
        out = _UNDEF_MEMBER.sub(b"", out)
        out = _UNDEF_FIRST_MEMBER.sub(b"{", out)
        out = out.replace(b"\x00", b"null")  # what is left sits in arrays
    hits = _number_fix_hits(out)
    if hits is None:
        return None
    if hits:
        fixed = _fix_numbers_at(out, hits)
        return fixed if fixed is not None else _fix_numbers(out)
    return out


def stringify(value: Any) -> str | None:
    """``JSON.stringify(value)`` (no indentation), byte for byte; ``None`` when JavaScript returns undefined.

    Accepts dict (str keys), list, tuple, str, int, float, bool, None and :data:`UNDEFINED`; raises
    ``TypeError`` for anything else. Python ints beyond 2**53 are rounded to the nearest double first,
    as omp would have parsed them.
    """
    if value is UNDEFINED:
        return None
    out = _orjson_stringify(value)
    if out is not None:
        return out.decode()
    return _stringify_pure(value)


def orjson_line(value: Any) -> bytes | None:
    """:func:`dumps_line` when orjson can write ``value`` (with the fix-ups that make its text
    JavaScript's), else None: nothing deeper than 254 levels, among others."""
    out = _orjson_stringify(value) if value is not UNDEFINED else None
    return None if out is None else out + b"\n"


def dumps_line(value: Any) -> bytes:
    """One JSONL record as omp writes it: ``JSON.stringify(value) + "\\n"`` in UTF-8."""
    return dumps_bytes(value) + b"\n"  # (the one copy, to the text's size: see dumps_bytes)


def dumps_bytes(value: Any) -> bytes:
    """``JSON.stringify(value)`` in UTF-8, without :func:`dumps_line`'s newline (no copy to add
    it, none to take it off). Often orjson's own output, whose memory is several times its
    length: copy what is to be kept (joining it with something does)."""
    if value is UNDEFINED:
        raise ValueError("UNDEFINED has no JSON text")
    out = _orjson_stringify(value)
    # (lone surrogates were escaped, so the exact encoder's text always encodes)
    return out if out is not None else _stringify_pure(value).encode()


# --------------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------------
#
# One tokenizer/parser serves JSON.parse (``loads``) and Bun's JSONL scanner (``scan_value``). Both
# are JavaScriptCore's JSON grammar; JSONL additionally classifies a failure as "needs more data"
# (JSONIncomplete) exactly when the token the parser failed on reaches the end of the text. The
# token rules below were probed against Bun 1.4.4 (tests/test_codec.py lists the cases):
#   * a number is -?(0|[1-9][0-9]*), then "." which must be followed by a digit, then an exponent
#     that is taken only when complete ("1e" is the number 1 followed by the identifier "e");
#   * "true" / "false" / "null" match as prefixes ("truex" is true then x); other runs of
#     [A-Za-z0-9_$] starting with a letter, "_" or "$" are one (invalid) identifier token;
#   * ( ) . = ; are one-character (invalid) tokens, like the structural characters;
#   * any other character (', /, NBSP, BOM, control characters, ...) fails where it stands;
#   * in strings, "\u" needs four more characters present (else it fails where it stands), and raw
#     characters below U+0020 fail.

_WS = re.compile(r"[ \t\n\r]*")
# Runs of one opener repeated with nothing between (``[[[[`` or ``{"a":{"a":{"a":``): the shape of
# deep nesting; the parser takes a run in one step (see _parse_value).
_ARRAY_RUN = re.compile(r"\[{2,}")
_OBJECT_RUN = re.compile(r'(\{"([^"\\\x00-\x1f]*)":)\1+')
_CLOSE_ARRAYS = re.compile(r"\]+")
_CLOSE_OBJECTS = re.compile(r"\}+")
_LINE_WS = re.compile(r"[ \t\r]*")
_STR_SIMPLE = re.compile(r'"([^"\\\x00-\x1f]*)"')
_STR_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]*)?([eE][+-]?[0-9]+)?")
_IDENT_REST = re.compile(r"[A-Za-z0-9_$]*")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_IDENT_START: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")
_ONE_CHAR_TOKENS: Final = frozenset("{}[]:,().=;")
_NUMBER_START: Final = frozenset("-0123456789")
_VALUE_START: Final = frozenset('"{[tfn') | _NUMBER_START
# orjson returns ints only within this range and floats beyond it; the fallback does the same so that
# a value's Python type does not depend on which parser handled its line.
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1


class _Fail(Exception):
    """Parse failure. ``end`` is where the lexer stood (== len(text) means "needs more data")."""

    def __init__(self, end: int, where: int, message: str) -> None:
        self.end = end
        self.where = where
        self.message = message


def _lex_string(text: str, i: int, n: int) -> tuple[str, int]:
    """The string starting with the quote at ``i``; returns (value, end)."""
    m = _STR_SIMPLE.match(text, i)
    if m is not None:
        return m.group(1), m.end()
    try:
        # CPython's C string scanner accepts exactly the JSON string grammar (strict mode) and decodes
        # escapes like JSON.parse, including lone surrogates; it is only unfit for error positions.
        s, end = _scanstring(text, i + 1, True)
    except ValueError:
        pass
    else:
        if not s.isascii() and _SURROGATE.search(s) is not None:
            s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return s, end
    parts: list[str] = []
    surrogate = False
    j = i + 1
    while True:
        k = _STR_RUN.match(text, j).end()  # type: ignore[union-attr]  # "*" always matches
        if k > j:
            parts.append(text[j:k])
        if k >= n:
            raise _Fail(n, i, "Unterminated string")
        c = text[k]
        if c == '"':
            s = "".join(parts)
            if surrogate:
                # JavaScript strings are UTF-16: escaped pairs form one character, lone halves stay.
                s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
            return s, k + 1
        if c != "\\":
            raise _Fail(k, k, "Control character in string")
        k += 1
        if k >= n:
            raise _Fail(n, i, "Unterminated string")
        e = text[k]
        if e == "u":
            if n - k < 5 or _HEX4.fullmatch(text, k + 1, k + 5) is None:
                raise _Fail(k, k - 1, "Invalid \\u escape")
            cp = int(text[k + 1 : k + 5], 16)
            if 0xD800 <= cp <= 0xDFFF:
                surrogate = True
            parts.append(chr(cp))
            j = k + 5
        else:
            r = _ESCAPES.get(e)
            if r is None:
                raise _Fail(k, k - 1, "Invalid escape")
            parts.append(r)
            j = k + 1


def _lex_number(text: str, i: int, n: int) -> tuple[int | float, int]:
    m = _NUMBER.match(text, i)
    if m is None:  # "-" not followed by a digit
        raise _Fail(i + 1, i, "Invalid number")
    frac, exp = m.group(1), m.group(2)
    if frac == ".":
        raise _Fail(m.start(1) + 1, i, "Missing digits after decimal point")
    tok = m.group()
    if frac or exp:
        return float(tok), m.end()
    if len(tok) < 19:
        return int(tok), m.end()
    if len(tok) <= 21:
        v = int(tok)
        if _INT_MIN <= v <= _INT_MAX:
            return v, m.end()
    return float(tok), m.end()


def _token_end(text: str, i: int, n: int) -> int:
    """Where the lexer stands after reading the (unexpected) token at ``i``."""
    if i >= n:
        return n
    c = text[i]
    if c == '"':
        try:
            return _lex_string(text, i, n)[1]
        except _Fail as f:
            return f.end
    if c in _NUMBER_START:
        try:
            return _lex_number(text, i, n)[1]
        except _Fail as f:
            return f.end
    if c in _IDENT_START:
        for word in ("true", "false", "null"):
            if text.startswith(word, i):
                return i + len(word)
        return _IDENT_REST.match(text, i + 1).end()  # type: ignore[union-attr]
    if c in _ONE_CHAR_TOKENS:
        return i + 1
    return i


def _unexpected(text: str, i: int, n: int) -> NoReturn:
    if i >= n:
        raise _Fail(n, n, "Unexpected end of input")
    raise _Fail(_token_end(text, i, n), i, f"Unexpected {text[i]!r}")


# memo: start offset -> failure, for containers that begin a line and failed. After a syntax error the
# JSONL loop restarts at the next line start, which may lie inside the failed value; a container that
# starts there fails again at the same token, so the answer is reused. Without this, N lines of "[" (or
# '{"k":') before an error cost O(N^2). Completed values need no memo: they are accepted as records
# and the loop continues after them.
_Memo = dict[int, "_Fail"]


def _parse_value(text: str, i: int, n: int, memo: _Memo | None) -> tuple[Any, int]:
    """:func:`_parse_values` with no cyclic garbage collection meanwhile: JSON makes no cycles, and
    a value nested 100,000 deep is as many live containers, which every collection its allocations
    trigger would walk again (3x the parse time at 400,000 levels)."""
    if not gc.isenabled():
        return _parse_values(text, i, n, memo)
    gc.disable()
    try:
        return _parse_values(text, i, n, memo)
    finally:
        gc.enable()


def _parse_values(text: str, i: int, n: int, memo: _Memo | None) -> tuple[Any, int]:
    """Parse the value starting exactly at ``i`` (no leading whitespace); returns (value, end).

    Iterative, so any depth parses. A run of one opener repeated with nothing between (``[[[`` or
    ``{"k":{"k":``) is pushed as one run frame: nothing is built for it until values arrive, so a
    megabyte of ``[`` costs one regex match and a deep value costs one wrap per level.
    """
    ws = _WS.match
    # Frame: [container, pending key (None for arrays), start offset, starts a line]; a run frame is
    # [None, count, start offset, starts a line, key (None for arrays), width of one opener]: ``count``
    # containers opened at start, start + width, ..., each still waiting for its first value.
    stack: list[list[Any]] = []
    line_first = memo is not None
    val: Any
    try:
        while True:
            # ---- a value starts at i
            if i >= n:
                raise _Fail(n, n, "Unexpected end of input")
            c = text[i]
            if c == '"':
                val, i = _lex_string(text, i, n)
            elif c == "{" or c == "[":
                if line_first and memo is not None:
                    hit = memo.get(i)
                    if hit is not None:
                        raise _Fail(hit.end, hit.where, hit.message)
                run = (_ARRAY_RUN if c == "[" else _OBJECT_RUN).match(text, i)
                if run is not None:
                    # all but the last opener form the run; the last one is parsed as usual, so
                    # that what follows the run (``]``, a value, an error) needs no case of its own
                    width = 1 if c == "[" else len(run.group(1))
                    count = (run.end() - i) // width - 1
                    stack.append([None, count, i, line_first, None if c == "[" else run.group(2), width])
                    i += count * width
                    line_first = False
                    continue
                start = i
                j = ws(text, i + 1).end()  # type: ignore[union-attr]
                if c == "{":
                    if j < n and text[j] == "}":
                        val, i = {}, j + 1
                    else:
                        if j >= n or text[j] != '"':
                            _unexpected(text, j, n)
                        key, j = _lex_string(text, j, n)
                        j = ws(text, j).end()  # type: ignore[union-attr]
                        if j >= n or text[j] != ":":
                            _unexpected(text, j, n)
                        stack.append([{}, key, start, line_first])
                        i0 = j + 1
                        i = ws(text, i0).end()  # type: ignore[union-attr]
                        line_first = memo is not None and text.find("\n", i0, i) != -1
                        continue
                elif j < n and text[j] == "]":
                    val, i = [], j + 1
                else:
                    stack.append([[], None, start, line_first])
                    line_first = memo is not None and text.find("\n", i + 1, j) != -1
                    i = j
                    continue
            elif c in _NUMBER_START:
                val, i = _lex_number(text, i, n)
            elif c == "t" and text.startswith("true", i):
                val, i = True, i + 4
            elif c == "f" and text.startswith("false", i):
                val, i = False, i + 5
            elif c == "n" and text.startswith("null", i):
                val, i = None, i + 4
            else:
                _unexpected(text, i, n)
            # ---- a value ended at i: hand it to the enclosing containers
            while True:
                if not stack:
                    return val, i
                frame = stack[-1]
                container = frame[0]
                if container is None:  # a run frame
                    j = ws(text, i).end()  # type: ignore[union-attr]
                    key = frame[4]
                    if j < n and text[j] == ("]" if key is None else "}"):
                        # closers right after one another close as many containers of the run
                        closers = (_CLOSE_ARRAYS if key is None else _CLOSE_OBJECTS).match(text, j)
                        t = min(closers.end() - j, frame[1])  # type: ignore[union-attr]
                        if key is None:
                            for _ in range(t):
                                val = [val]
                        else:
                            for _ in range(t):
                                val = {key: val}
                        i = j + t
                        frame[1] -= t
                        if not frame[1]:
                            stack.pop()
                        continue
                    # anything else: the run's innermost container becomes an ordinary frame
                    frame[1] -= 1
                    count = frame[1]
                    if not count:
                        stack.pop()
                    stack.append([[] if key is None else {}, key, frame[2] + count * frame[5],
                                  frame[3] and not count])
                    continue
                is_obj = frame[1] is not None
                if is_obj:
                    container[frame[1]] = val  # duplicate keys: last value, first position (as JS)
                else:
                    container.append(val)
                j = ws(text, i).end()  # type: ignore[union-attr]
                if j >= n:
                    raise _Fail(n, n, "Unexpected end of input")
                c = text[j]
                if c == ",":
                    i0 = j + 1
                    j = ws(text, i0).end()  # type: ignore[union-attr]
                    if is_obj:
                        if j >= n or text[j] != '"':
                            _unexpected(text, j, n)
                        key, j = _lex_string(text, j, n)
                        j = ws(text, j).end()  # type: ignore[union-attr]
                        if j >= n or text[j] != ":":
                            _unexpected(text, j, n)
                        frame[1] = key
                        i0 = j + 1
                        j = ws(text, i0).end()  # type: ignore[union-attr]
                    i = j
                    line_first = memo is not None and text.find("\n", i0, i) != -1
                    break
                if c == ("}" if is_obj else "]"):
                    stack.pop()
                    val, i = container, j + 1
                    continue
                _unexpected(text, j, n)
    except _Fail as f:
        if memo is not None:
            # A fresh object: storing the raised one would keep its traceback (and text) alive.
            record = _Fail(f.end, f.where, f.message)
            for frame in stack:
                if frame[3]:
                    memo[frame[2]] = record
        raise


def scan_value(text: str, pos: int) -> tuple[Any, int]:
    """Parse one JSON value at ``pos`` the way Bun's JSONL scanner does; returns ``(value, end)``.

    Leading space, tab, CR and LF are skipped (values may span lines). Nothing after the value is
    looked at. Raises :class:`JSONIncomplete` when the parse failed at the very end of ``text`` (Bun's
    "needs more data": ``{"a":``, ``"abc``, ``tru``, ``-``, ``1.``, but also ``[1,]`` and ``x``), or
    when only whitespace remains (``pos`` is then ``len(text)``); :class:`JSONSyntaxError` otherwise.
    """
    n = len(text)
    i = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if i >= n:
        raise JSONIncomplete("No value before the end of input", n)
    try:
        return _parse_value(text, i, n, None)
    except _Fail as f:
        if f.end >= n:
            raise JSONIncomplete(f.message, i) from None
        raise JSONSyntaxError(f.message, f.where) from None


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """``JSON.parse``: exactly one JSON value with optional JSON whitespace around it.

    Integers within [-2**63, 2**64-1] become ``int``, other numbers ``float`` (``1e400`` is ``inf``).
    Escaped lone surrogates (``"\\udc00"``) stay lone surrogates in the ``str``. Bytes are decoded as
    UTF-8 with replacement characters, as omp's file reader does. Raises :class:`JSONSyntaxError`.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass  # orjson refuses some texts JSON.parse accepts (see the module tests); decide exactly
    if isinstance(data, str):
        text = data
    elif isinstance(data, (bytes, bytearray, memoryview)):
        text = bytes(data).decode("utf-8", "replace")
    else:
        raise TypeError(f"loads() needs bytes or str, not {type(data).__name__}")
    n = len(text)
    i = _WS.match(text).end()  # type: ignore[union-attr]
    try:
        value, end = _parse_value(text, i, n, None)
    except _Fail as f:
        raise JSONSyntaxError(f.message, f.where) from None
    j = _WS.match(text, end).end()  # type: ignore[union-attr]
    if j != n:
        raise JSONSyntaxError(f"Unexpected {text[j]!r} after the value", j)
    return value


# --------------------------------------------------------------------------------------------------
# Lenient JSONL (omp's parseJsonlLenient over Bun.JSONL.parseChunk)
# --------------------------------------------------------------------------------------------------

# JavaScript String.prototype.trim() whitespace (WhiteSpace + LineTerminator); unlike str.strip() it
# includes U+FEFF and excludes U+001C-U+001F and U+0085.
_JS_NON_BLANK = re.compile("[^\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")

_DONE: Final = 0
_ERROR: Final = 1
_INCOMPLETE: Final = 2
_LINE_END: Final = 3  # single-value mode: a value and its LF were consumed

Record = tuple[Any, int, int]
Span = tuple[int, int]


def _parse_chunk(
    text: str, pos: int, memo: _Memo, records: list[Record], single: bool = False
) -> tuple[int, int, int]:
    """One ``Bun.JSONL.parseChunk(text.slice(pos))`` call (``single``: stop after the first value).

    Appends the values it accepts to ``records`` and returns (status, read, at): ``read`` is the offset
    just after the last accepted value (``pos`` if none); ``at`` is where the open value began for
    _INCOMPLETE and the offset after the LF for _LINE_END.
    """
    n = len(text)
    read = pos
    i = pos
    while True:
        i = _WS.match(text, i).end()  # type: ignore[union-attr]
        if i >= n:
            return _DONE, read, i
        if text[i] not in _VALUE_START:
            # Typical garbage: decided by its first token, without the cost of raising.
            return (_INCOMPLETE if _token_end(text, i, n) >= n else _ERROR), read, i
        try:
            value, end = _parse_value(text, i, n, memo)
        except _Fail as f:
            return (_INCOMPLETE if f.end >= n else _ERROR), read, i
        records.append((value, i, end))
        read = end
        # Only spaces, tabs and CRs may separate a value from the end of its line.
        j = _LINE_WS.match(text, end).end()  # type: ignore[union-attr]
        if j >= n:
            return _DONE, read, j
        if text[j] != "\n":
            return _ERROR, read, j
        i = j + 1
        if single:
            return _LINE_END, read, i


def _round(text: str, pos: int, memo: _Memo, records: list[Record], malformed: list[Span], single: bool) -> int:
    """One turn of omp's skip-on-error loop from ``pos``; returns where the next turn starts."""
    n = len(text)
    status, read, at = _parse_chunk(text, pos, memo, records, single)
    if status == _ERROR:
        nl = text.find("\n", read)
        span_end = n if nl == -1 else nl
        if _JS_NON_BLANK.search(text, read, span_end) is not None:
            malformed.append((read, span_end))
        return n if nl == -1 else nl + 1
    if status == _INCOMPLETE:
        if read == pos:
            # The open value begins with a JSON token, so the dropped remainder is never blank.
            malformed.append((at, n))
            return n
        return read  # omp re-parses from the last value; the next turn reports the open one
    if status == _LINE_END:
        return at
    return n


def parse_jsonl(text: str, start: int = 0) -> tuple[list[Record], list[Span]]:
    """omp's lenient JSONL reading of ``text[start:]`` (spec S1.4.3).

    Returns ``(records, malformed)``: ``records`` holds ``(value, start, end)`` for every accepted value
    (``start`` = offset of its first character, ``end`` = just after it); ``malformed`` holds one
    ``(start, end)`` span per malformed record omp counts. A span is what omp discards: after a syntax
    error, from the end of the last accepted value (or the restart point) up to, not including, the next
    LF; for a value still open at the end of the text, from that value's first character to the end.
    Discarded spans that are blank by JavaScript ``trim()`` rules are not reported (omp skips them
    silently). ``start`` must be 0 or just after an LF.
    """
    records: list[Record] = []
    malformed: list[Span] = []
    memo: _Memo = {}
    n = len(text)
    pos = start
    while pos < n:
        pos = _round(text, pos, memo, records, malformed, False)
    return records, malformed


class JSONLScanner:
    """omp's lenient JSONL loop one line-level step at a time, for readers with their own fast path.

    The loop has no state besides its position, and every step ends at a line start (or the end), so a
    reader may take each line that ``orjson.loads`` accepts as one record, skip blank lines, and call
    :meth:`step` at the start of any other line; the results equal :func:`parse_jsonl` on the whole
    text. Keep one scanner per text: it remembers failed multi-line values between steps, which keeps
    files with many unclosed values linear.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._memo: _Memo = {}

    def step(self, pos: int) -> tuple[list[Record], list[Span], int]:
        """Handle the text from line start ``pos``: whitespace, then at most one value and the rest of
        its last line. Returns ``(records, malformed, next_pos)`` (see :func:`parse_jsonl`);
        ``next_pos`` is a line start or ``len(text)``.
        """
        records: list[Record] = []
        malformed: list[Span] = []
        nxt = _round(self.text, pos, self._memo, records, malformed, True)
        return records, malformed, nxt


def utf16_len(s: str) -> int:
    """JavaScript ``s.length``: UTF-16 code units (astral characters count 2, lone surrogates 1)."""
    if s.isascii():
        return len(s)
    return len(s.encode("utf-16-le", "surrogatepass")) >> 1
