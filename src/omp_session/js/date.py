"""JavaScript `Date` arithmetic as omp runs it (Bun 1.4.4, `TZ=UTC`).

omp turns entry timestamps into message times with ``new Date(x).getTime()``
and back with ``toISOString()``; sorting the tree uses the same conversion.
Bun's ``Date.parse`` accepts the ECMAScript date-time format *and* a lenient
legacy syntax (``"Jan 2 2026"``, ``"2026/01/02 10:00 PM"``, ``"0"`` = year
2000, ...), with the same results as V8's date parser; this module implements
that grammar from its observable behaviour so a damaged timestamp gets the
same value (or NaN) as in omp. Local time is UTC, as in the oracle.

Public helpers:

* :func:`date_parse` -- ``Date.parse(String(value))``.
* :func:`new_date_ms` -- ``new Date(value).getTime()`` (numbers are ms).
* :func:`to_iso` -- ``Date.prototype.toISOString``.
* :func:`js_string` -- JavaScript ``String(value)`` for parsed-JSON values.
* :func:`now_iso`, :func:`now_ms` -- the current time in those forms.
"""

from __future__ import annotations

import math
import re
import sys
import time
from array import array
from collections.abc import Iterator
from typing import Any

__all__ = [
    "MAX_TIME_MS",
    "date_parse",
    "js_number_string",
    "js_string",
    "new_date_ms",
    "now_iso",
    "now_ms",
    "time_clip",
    "to_iso",
]

MAX_TIME_MS = 8.64e15
_MS_PER_DAY = 86_400_000
_NAN = math.nan

# ---------------------------------------------------------------------------
# JavaScript ToString for JSON values


def js_number_string(x: float | int) -> str:
    """``Number.prototype.toString()`` (radix 10) of ``x`` taken as a double."""
    try:
        v = float(x)
    except OverflowError:  # a JSON integer beyond the double range reads as Infinity in JS
        v = math.inf if x > 0 else -math.inf
    if v != v:
        return "NaN"
    if v == math.inf:
        return "Infinity"
    if v == -math.inf:
        return "-Infinity"
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    text = repr(abs(v))  # shortest round-trip digits, like ECMAScript's Number::toString
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    point = len(int_part) + exponent  # value = 0.<digits> * 10**point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k = len(digits)
    n = point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp_str = ("+" if e >= 0 else "-") + str(abs(e))
        out = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + exp_str
    return sign + out


def js_string(value: Any) -> str:
    """JavaScript ``String(value)`` for a parsed-JSON value (``None`` is ``null``).

    Objects give ``"[object Object]"``; arrays join their elements with ``,``
    (``null`` elements as empty strings). Anything that is not a JSON type
    (e.g. an "undefined" sentinel) gives ``"undefined"``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return js_number_string(value)
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list | tuple):
        return _join_arrays(value)
    return "undefined"


def _join_arrays(value: list[Any] | tuple[Any, ...]) -> str:
    # String([[...]]) flattens nested arrays into one join; iterative, so any depth is fine
    out: list[str] = []
    stack: list[Iterator[Any]] = [iter(value)]  # one iterator per open array
    first = True  # the innermost open array has written no element yet
    while stack:
        for item in stack[-1]:
            if first:
                first = False
            else:
                out.append(",")
            # an element [x] joins to what x does: a deep chain of one-element arrays in one loop
            while type(item) is list and len(item) == 1:
                item = item[0]
            if isinstance(item, list | tuple):
                stack.append(iter(item))
                first = True
                break
            if item is not None and not _is_undefined_like(item):
                out.append(js_string(item))
        else:
            stack.pop()
            first = False  # back in the parent, which has just written this array
    return "".join(out)


def _is_undefined_like(value: Any) -> bool:
    return not isinstance(value, str | int | float | bool | dict | list | tuple) and value is not None


# ---------------------------------------------------------------------------
# Calendar arithmetic (proleptic Gregorian, ECMAScript MakeDay/MakeDate)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 for a proleptic Gregorian date (month 1..12)."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (1 if m <= 2 else 0), m, d)


def _make_ms(year: int, month0: int, day: int, hour: int, minute: int, second: int, ms: int) -> float:
    """ECMAScript MakeDate(MakeDay(...), MakeTime(...)) with month overflow, as a float."""
    year += month0 // 12
    month0 %= 12
    if abs(year) > 1_000_000:
        return _NAN
    days = _days_from_civil(year, month0 + 1, 1) + day - 1
    return float(days * _MS_PER_DAY + hour * 3_600_000 + minute * 60_000 + second * 1000 + ms)


def time_clip(value: float) -> float:
    """ECMAScript TimeClip: NaN outside +-8.64e15, else truncated toward zero."""
    if value != value or math.isinf(value) or abs(value) > MAX_TIME_MS:
        return _NAN
    return float(math.trunc(value)) + 0.0


# ---------------------------------------------------------------------------
# Date.parse: tokenizer + ES date-time format + legacy grammar

_KW_INVALID, _KW_MONTH, _KW_ZONE, _KW_TSEP, _KW_AMPM = range(5)
_KEYWORDS: tuple[tuple[str, int, int], ...] = (
    ("jan", _KW_MONTH, 1), ("feb", _KW_MONTH, 2), ("mar", _KW_MONTH, 3), ("apr", _KW_MONTH, 4),
    ("may", _KW_MONTH, 5), ("jun", _KW_MONTH, 6), ("jul", _KW_MONTH, 7), ("aug", _KW_MONTH, 8),
    ("sep", _KW_MONTH, 9), ("oct", _KW_MONTH, 10), ("nov", _KW_MONTH, 11), ("dec", _KW_MONTH, 12),
    ("am", _KW_AMPM, 0), ("pm", _KW_AMPM, 12),
    ("ut", _KW_ZONE, 0), ("utc", _KW_ZONE, 0), ("z", _KW_ZONE, 0), ("gmt", _KW_ZONE, 0),
    ("cdt", _KW_ZONE, -5), ("cst", _KW_ZONE, -6), ("edt", _KW_ZONE, -4), ("est", _KW_ZONE, -5),
    ("mdt", _KW_ZONE, -6), ("mst", _KW_ZONE, -7), ("pdt", _KW_ZONE, -7), ("pst", _KW_ZONE, -8),
    ("t", _KW_TSEP, 0),
)
_NONE = 2**31 - 1  # "missing" marker; never a legal field value
_MAX_SIGNIFICANT_DIGITS = 9
# Bun's separators: tab, LF, FF, CR, space, the Unicode space separators and BOM. VT is
# not one (it is ignored like other punctuation); other non-ASCII code units (including
# U+2028/2029 and U+0085) are word characters.
_SPACE = frozenset((0x09, 0x0A, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B),
                    0x202F, 0x205F, 0x3000, 0xFEFF))
# ...except in strings the engine stores as UTF-16 (any code unit above U+00FF), where VT
# also separates: Bun scans the two string representations with different predicates.
_SPACE_WIDE = _SPACE | {0x0B}

_T_INVALID, _T_UNKNOWN, _T_SPACE, _T_NUMBER, _T_SYMBOL, _T_END, _T_KEYWORD = range(7)


class _Token:
    __slots__ = ("kind", "kw_type", "length", "ms", "value")

    def __init__(self, kind: int, length: int = 0, value: int = -1, kw_type: int = _KW_INVALID) -> None:
        self.kind = kind
        self.length = length
        self.value = value
        self.kw_type = kw_type
        self.ms = 0  # a numeral read as a fraction of a second: its first three digits

    def is_symbol(self, ch: str) -> bool:
        return self.kind == _T_SYMBOL and self.value == ord(ch)

    def is_sign(self) -> bool:
        return self.kind == _T_SYMBOL and self.value in (0x2B, 0x2D)

    def sign(self) -> int:
        return 1 if self.value == 0x2B else -1

    def is_fixed_number(self, length: int) -> bool:
        return self.kind == _T_NUMBER and self.length == length

    def is_keyword_type(self, kw_type: int) -> bool:
        return self.kind == _T_KEYWORD and self.kw_type == kw_type

    def is_z(self) -> bool:
        return self.kind == _T_KEYWORD and self.kw_type == _KW_ZONE and self.length == 1 and self.value == 0


_END = _Token(_T_END)
_INVALID = _Token(_T_INVALID)


class _Scanner:
    """Tokenizer over UTF-16 code units; a NUL code unit ends the input, as in the engine."""

    def __init__(self, text: str) -> None:
        units = array("H", text.encode("utf-16-le", "surrogatepass"))
        if sys.byteorder == "big":
            units.byteswap()
        self._units = units
        self._space = _SPACE_WIDE if max(units, default=0) > 0xFF else _SPACE
        self._pos = 0
        self._next = self._scan()

    def _ch(self) -> int:
        return self._units[self._pos] if self._pos < len(self._units) else 0

    def _scan(self) -> _Token:
        # local names in the loops: a long text (a megabyte of words) is one step per character
        units, pos = self._units, self._pos
        n = len(units)
        ch = units[pos] if pos < n else 0
        if ch == 0:
            return _END
        start = pos
        if 0x30 <= ch <= 0x39:
            while pos < n and 0x30 <= units[pos] <= 0x39:
                pos += 1
            self._pos = pos
            digits = "".join(map(chr, units[start:pos]))
            # Bun keeps the first 9 *significant* digits (leading zeros do not count)
            # but remembers the full length, which field-width checks use.
            token = _Token(_T_NUMBER, len(digits), int(digits.lstrip("0")[:_MAX_SIGNIFICANT_DIGITS] or "0"))
            token.ms = _read_ms(token.value, len(digits))
            return token
        if ch in (0x3A, 0x2D, 0x2B, 0x2E, 0x29):  # : - + . )
            self._pos = pos + 1
            return _Token(_T_SYMBOL, 1, ch)
        space = self._space
        if ch in space:
            self._pos = pos + 1
            return _Token(_T_SPACE, 1)
        if ch >= 0x41:
            while pos < n and units[pos] >= 0x41 and units[pos] not in space:
                pos += 1
            self._pos = pos
            length = pos - start
            kw_type, kw_value = _lookup_keyword([u | 0x20 for u in units[start:start + min(length, 3)]], length)
            return _Token(_T_KEYWORD, length, kw_value, kw_type)
        if ch == 0x28:  # '(' starts a comment that runs to its matching ')'
            balance = 0
            while True:
                c = units[pos] if pos < n else 0
                if c == 0x29:
                    balance -= 1
                elif c == 0x28:
                    balance += 1
                pos += 1
                if not (balance > 0 and (units[pos] if pos < n else 0)):
                    break
            self._pos = pos
            return _Token(_T_UNKNOWN, 1)
        self._pos = pos + 1
        return _Token(_T_UNKNOWN, 1)

    def next(self) -> _Token:
        token = self._next
        self._next = self._scan()
        return token

    def peek(self) -> _Token:
        return self._next

    def skip_symbol(self, ch: str) -> bool:
        if self._next.is_symbol(ch):
            self._next = self._scan()
            return True
        return False


# (first three code units, lowercased and padded with 0) -> (type, value)
_KEYWORD_TABLE: dict[tuple[int, ...], tuple[int, int]] = {
    tuple([ord(c) for c in word] + [0] * (3 - len(word))): (kw_type, value) for word, kw_type, value in _KEYWORDS}
assert len(_KEYWORD_TABLE) == len(_KEYWORDS)  # distinct prefixes: one lookup answers


def _lookup_keyword(prefix: list[int], length: int) -> tuple[int, int]:
    found = _KEYWORD_TABLE.get(tuple([*prefix, 0, 0, 0][:3]))
    if found is not None and (length <= 3 or found[0] == _KW_MONTH):
        return found
    return _KW_INVALID, 0


def _between(x: int, lo: int, hi: int) -> bool:
    return lo <= x <= hi


class _Day:
    def __init__(self) -> None:
        self.comp: list[int] = []
        self.named_month = _NONE
        self.iso = False

    def add(self, n: int) -> bool:
        if len(self.comp) < 3:
            self.comp.append(n)
            return True
        return False

    def write(self) -> tuple[int, int, int] | None:
        if not self.comp:
            return None
        # Missing fields are padded with 1 *before* the field order is chosen, so a
        # lone "Jan 2" or "12" takes its year from the padding (1 -> 2001).
        comp = self.comp + [1] * (3 - len(self.comp))
        if self.named_month == _NONE:
            if self.iso or not _between(comp[0], 1, 31):
                year, month, day = comp[0], comp[1], comp[2]
            else:
                month, day, year = comp[0], comp[1], comp[2]
        else:
            month = self.named_month
            if not _between(comp[0], 1, 31):
                year, day = comp[0], comp[1]
            else:
                day, year = comp[0], comp[1]
        if not self.iso:
            if _between(year, 0, 49):
                year += 2000
            elif _between(year, 50, 99):
                year += 1900
        if not (_between(month, 1, 12) and _between(day, 1, 31)):
            return None
        return year, month - 1, day


class _Time:
    def __init__(self) -> None:
        self.comp: list[int] = []
        self.hour_offset = _NONE

    def empty(self) -> bool:
        return not self.comp

    def expecting(self, n: int) -> bool:
        i = len(self.comp)
        return (i == 1 and _between(n, 0, 59)) or (i == 2 and _between(n, 0, 59)) or (
            i == 3 and _between(n, 0, 999))

    def add(self, n: int) -> bool:
        if len(self.comp) < 4:
            self.comp.append(n)
            return True
        return False

    def add_final(self, n: int) -> bool:
        if not self.add(n):
            return False
        self.comp += [0] * (4 - len(self.comp))
        return True

    def write(self) -> tuple[int, int, int, int] | None:
        hour, minute, second, ms = self.comp + [0] * (4 - len(self.comp))
        if self.hour_offset != _NONE:
            if not _between(hour, 0, 12):
                return None
            hour = hour % 12 + self.hour_offset
        if not (_between(hour, 0, 23) and _between(minute, 0, 59) and _between(second, 0, 59)
                and _between(ms, 0, 999)) and (hour != 24 or minute or second or ms):
            return None
        return hour, minute, second, ms


class _Zone:
    def __init__(self) -> None:
        self.sign = _NONE
        self.hour = _NONE
        self.minute = _NONE

    def set(self, offset_hours: int) -> None:
        self.sign = -1 if offset_hours < 0 else 1
        self.hour = offset_hours * self.sign
        self.minute = 0

    def expecting(self, n: int) -> bool:
        return self.hour != _NONE and self.minute == _NONE and _between(n, 0, 59)

    def is_utc(self) -> bool:
        return self.hour == 0 and self.minute == 0

    def empty(self) -> bool:
        return self.hour == _NONE

    def write(self) -> float | None:
        """Offset in seconds, NaN when no zone was given, None when unusable."""
        if self.sign == _NONE:
            return _NAN
        hour = 0 if self.hour == _NONE else self.hour
        minute = 0 if self.minute == _NONE else self.minute
        total = (hour * 3600 + minute * 60) % 2**32  # the engine computes this in unsigned 32 bits
        if total > 2**31 - 1:
            return None
        return float(-total if self.sign < 0 else total)


def _read_ms(number: int, length: int) -> int:
    """A numeral read as a fraction of a second: its leading three digits as milliseconds."""
    if length == 1:
        return number * 100
    if length == 2:
        return number * 10
    if length > 3:
        divisor: int = 10 ** (min(length, _MAX_SIGNIFICANT_DIGITS) - 3)
        return number // divisor
    return number


def _parse_iso(scanner: _Scanner, day: _Day, tm: _Time, zone: _Zone) -> _Token:
    """The ECMAScript date-time format; returns the token the legacy grammar resumes with."""
    if scanner.peek().is_sign():
        sign_token = scanner.next()
        if not scanner.peek().is_fixed_number(6):
            return sign_token
        year = scanner.next().value
        if sign_token.sign() < 0 and year == 0:
            return sign_token
        day.add(sign_token.sign() * year)
    elif scanner.peek().is_fixed_number(4):
        day.add(scanner.next().value)
    else:
        return scanner.next()
    if scanner.skip_symbol("-"):
        if not scanner.peek().is_fixed_number(2) or not _between(scanner.peek().value, 1, 12):
            return scanner.next()
        day.add(scanner.next().value)
        if scanner.skip_symbol("-"):
            if not scanner.peek().is_fixed_number(2) or not _between(scanner.peek().value, 1, 31):
                return scanner.next()
            day.add(scanner.next().value)
    if not scanner.peek().is_keyword_type(_KW_TSEP):
        if scanner.peek().kind != _T_END:
            return scanner.next()
    else:
        scanner.next()
        if not scanner.peek().is_fixed_number(2) or not _between(scanner.peek().value, 0, 24):
            return _INVALID
        hour_is_24 = scanner.peek().value == 24
        tm.add(scanner.next().value)
        if not scanner.skip_symbol(":"):
            return _INVALID
        if (not scanner.peek().is_fixed_number(2) or not _between(scanner.peek().value, 0, 59)
                or (hour_is_24 and scanner.peek().value > 0)):
            return _INVALID
        tm.add(scanner.next().value)
        if scanner.skip_symbol(":"):
            if (not scanner.peek().is_fixed_number(2) or not _between(scanner.peek().value, 0, 59)
                    or (hour_is_24 and scanner.peek().value > 0)):
                return _INVALID
            tm.add(scanner.next().value)
            if scanner.skip_symbol("."):
                if scanner.peek().kind != _T_NUMBER or (hour_is_24 and scanner.peek().value > 0):
                    return _INVALID
                tm.add(scanner.next().ms)
        if scanner.peek().is_z():
            scanner.next()
            zone.set(0)
        elif scanner.peek().is_symbol("+") or scanner.peek().is_symbol("-"):
            zone.sign = 1 if scanner.next().is_symbol("+") else -1
            if scanner.peek().is_fixed_number(4):
                hourmin = scanner.next().value
                hour, minute = divmod(hourmin, 100)
                if not (_between(hour, 0, 23) and _between(minute, 0, 59)):
                    return _INVALID
                zone.hour, zone.minute = hour, minute
            else:
                if not scanner.peek().is_fixed_number(2) or not _between(scanner.peek().value, 0, 23):
                    return _INVALID
                zone.hour = scanner.next().value
                if not scanner.skip_symbol(":"):
                    return _INVALID
                if not scanner.peek().is_fixed_number(2) or not _between(scanner.peek().value, 0, 59):
                    return _INVALID
                zone.minute = scanner.next().value
        if scanner.peek().kind != _T_END:
            return _INVALID
    if zone.empty() and tm.empty():
        zone.set(0)  # date-only forms are UTC; date-time forms are local time (= UTC here anyway)
    day.iso = True
    return _END


_DIGIT = re.compile("[0-9]")


def _parse_fields(text: str) -> tuple[tuple[int, int, int], tuple[int, int, int, int], float] | None:
    if _DIGIT.search(text) is None:
        # only numerals make day fields, so there is no date, whatever the rest says: no need to
        # tokenize (a megabyte of words would be a million tokens)
        return None
    scanner = _Scanner(text)
    day, tm, zone = _Day(), _Time(), _Zone()
    token = _parse_iso(scanner, day, tm, zone)
    if token.kind == _T_INVALID:
        return None
    has_number = bool(day.comp)
    while token.kind != _T_END:
        if token.kind == _T_NUMBER:
            has_number = True
            n = token.value
            if scanner.skip_symbol(":"):
                if scanner.skip_symbol(":"):
                    if not tm.empty():
                        return None
                    tm.add(n)
                    tm.add(0)
                else:
                    if not tm.add(n):
                        return None
                    if scanner.peek().is_symbol("."):
                        scanner.next()
            elif scanner.skip_symbol(".") and tm.expecting(n):
                # the '.' is consumed even when the number is not a time field
                tm.add(n)
                if scanner.peek().kind != _T_NUMBER:
                    return None
                tm.add_final(scanner.next().ms)
            elif zone.expecting(n):
                zone.minute = n
            elif tm.expecting(n):
                tm.add_final(n)
                peek = scanner.peek()
                if not (peek.kind in (_T_END, _T_SPACE) or peek.is_z() or peek.is_sign()):
                    return None
            else:
                if not day.add(n):
                    return None
                scanner.skip_symbol("-")
        elif token.kind == _T_KEYWORD:
            if token.kw_type == _KW_AMPM and not tm.empty():
                tm.hour_offset = token.value
            elif token.kw_type == _KW_MONTH:
                day.named_month = token.value
                scanner.skip_symbol("-")
            elif token.kw_type == _KW_ZONE and has_number:
                zone.set(token.value)
            else:
                if has_number:
                    return None
                if scanner.peek().kind == _T_NUMBER:
                    return None
        elif token.is_sign() and (zone.is_utc() or not tm.empty()):
            zone.sign = token.sign()
            n = 0
            length = 0
            if scanner.peek().kind == _T_NUMBER:
                number = scanner.next()
                length, n = number.length, number.value
            has_number = True
            if scanner.peek().is_symbol(":"):
                zone.hour = n
                zone.minute = _NONE
            elif length in (1, 2):
                zone.hour, zone.minute = n, 0
            elif length in (3, 4):
                zone.hour, zone.minute = divmod(n, 100)
            else:
                return None
        elif (token.is_sign() or token.is_symbol(")")) and has_number:
            return None
        token = scanner.next()
    ymd = day.write()
    hms = tm.write()
    offset = zone.write()
    if ymd is None or hms is None or offset is None:
        return None
    return ymd, hms, offset


# What omp itself writes (toISOString): parsed directly, the full grammar handles the rest.
_CANONICAL = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")


def _parse_string(text: str) -> float:
    match = _CANONICAL.fullmatch(text)
    if match:
        year, month, day, hour, minute, second, ms = map(int, match.groups())
        if 1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59 and (
                hour <= 23 or (hour == 24 and minute == second == ms == 0)):
            return _make_ms(year, month - 1, day, hour, minute, second, ms)
    fields = _parse_fields(text)
    if fields is None:
        return _NAN
    (year, month0, day), (hour, minute, second, ms), offset = fields
    value = _make_ms(year, month0, day, hour, minute, second, ms)
    if value != value:
        return _NAN
    if offset != offset:
        # Local time, and local time is UTC: only the engine's wider pre-conversion range applies.
        if abs(value) > MAX_TIME_MS + _MS_PER_DAY:
            return _NAN
    else:
        value -= offset * 1000.0
        if abs(value) > MAX_TIME_MS:
            return _NAN
    return time_clip(value)


def date_parse(value: object) -> float:
    """``Date.parse(String(value))`` under Bun with ``TZ=UTC``; NaN when unparseable."""
    return _parse_string(js_string(value))


def new_date_ms(value: object) -> float:
    """``new Date(value).getTime()`` for a parsed-JSON value.

    Numbers are milliseconds (time-clipped); strings are parsed; ``None``
    (JSON null) is 0; booleans 0/1; objects and arrays go through their string
    form; anything else (an "undefined" sentinel) is NaN.
    """
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        try:
            return time_clip(float(value))
        except OverflowError:
            return _NAN
    if value is None:
        return 0.0
    if isinstance(value, str | dict | list | tuple):
        return _parse_string(js_string(value))
    return _NAN


def to_iso(ms: float) -> str:
    """``new Date(ms).toISOString()``; ``ValueError`` for an invalid time (JS throws RangeError)."""
    t = time_clip(float(ms))
    if t != t:
        raise ValueError("Invalid time value")
    whole = int(t)
    days, rem = divmod(whole, _MS_PER_DAY)
    year, month, day = _civil_from_days(days)
    hour, rem = divmod(rem, 3_600_000)
    minute, rem = divmod(rem, 60_000)
    second, milli = divmod(rem, 1000)
    year_text = f"{year:04d}" if 0 <= year <= 9999 else ("-" if year < 0 else "+") + f"{abs(year):06d}"
    return f"{year_text}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"


def now_ms() -> int:
    """The current time in Unix milliseconds, like ``Date.now()``."""
    return time.time_ns() // 1_000_000


def now_iso() -> str:
    """The current time like ``new Date().toISOString()``."""
    return to_iso(now_ms())
