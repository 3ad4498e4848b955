"""The ``env-assignment`` detector: ``NAME=value`` / ``NAME: value`` where the value is a secret.

A regex alone cannot tell ``PASSWORD=hunter22`` (a ``.env`` line) from ``key = key[:state]`` or
``sorted(rows, key=lambda r: r.day)`` (code), so the regex only finds candidates and
:func:`secret_span` decides, from the name's word parts, the value's shape and what surrounds it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from string import ascii_letters, ascii_lowercase, ascii_uppercase, digits

__all__ = ["ASSIGNMENT", "NAME_HINTS", "ascii_lower", "find_assignments", "looks_secret", "name_strength", "secret_span"]

# Every candidate name holds one of these (lowercased).
NAME_HINTS = ("pass", "secret", "token", "key", "auth", "pwd", "credential")

# Candidates: a name holding a secret-ish word, a separator, a value (quoted or bare).
ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.])"
    r"(?P<name>(?=[A-Za-z0-9_.\-]*?(?i:pass|secret|token|key|auth|pwd|credential))[A-Za-z_][A-Za-z0-9_.\-]*)"
    r"(?P<nq>[\"']?)"
    # ":" only right after the name (YAML, JSON); "=" also with spaces (INI, code); not ==, =>, ::
    r"(?:(?P<colon>:(?![:=/]))|[ \t]*(?P<eq>:=|=(?![=>~])))"
    r"(?P<sp>[ \t]*)"
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)*)\"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`|[\"'`]?(?P<uq>[^\s\"'`,;&]+))")

# Word parts whose value is a secret whenever the name ends in them.
_STRONG = frozenset({"password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey",
                     "secretkey", "clientsecret", "secretaccesskey"})
# Word parts that also name ordinary things (a dict key, an auth mode, a directory): the value
# must look like a secret as well.
_WEAK = frozenset({"key", "auth", "pwd", "credential", "credentials", "pass"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

_KEYWORDS = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "nan", "self", "this", "lambda", "function", "new",
    "await", "async", "yield", "not", "typeof", "keyof", "void", "match", "if", "unsafe", "move", "static",
    "str", "string", "int", "integer", "bool", "boolean", "bytes", "number", "any", "unknown", "object",
    "optional", "secretstr", "text", "varchar", "char", "float", "double", "required", "sensitive", "default",
    "env", "file", "empty", "auto", "disabled", "enabled", "on", "off", "yes", "no", "try"})
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[*x.#_\-]+|\W+|.*(?:your[\s_\-]|<[^>]*>|\{\{|\$\{|%\(|\{[A-Za-z_]\w*\}|changeme|change[_\-]me|"
    r"replace[_\-]?me|placeholder|example|redacted|dummy).*)$")
# What may follow a value in code: an operator, a call, a subscript, a conditional.
# (a lone "&" is a query string's separator, not code)
_CODE_AFTER = re.compile(r"[ \t]*(?:&&|[-+*/%|^<>=!?.(\[{:]|(?:if|or|and|else|for|in|is|as)\b)")
# Things a bare value in code is, never in a .env line.
_EXPRESSION = re.compile(
    r"[()\[\]{}]|::|->|=>|^[-+*&!~@]|^[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)+$")
_PATH_START = ("./", "../", "/", "~/")
_TECH_WORD = re.compile(r"(?i)^(?:sha|md|utf|base|oauth|x|http|ipv|u?int|float|v|s|ec|h|aes|rsa|ed)\d+$")


def name_strength(name: str) -> int:
    """2: the name ends in a secret word (``DB_PASSWORD``, ``apiKey``, ``PGPASSWORD``); 1: it ends
    in a weak one (``key``, ``auth``) or holds a secret word elsewhere (``SECRET_KEY_BASE``); 0: neither."""
    parts = [p.lower() for p in _WORDS.findall(name)]
    if not parts:
        return 0
    last, pair = parts[-1], "".join(parts[-2:])
    if last in _STRONG or pair in _STRONG or "".join(parts[-3:]) in _STRONG \
            or last.endswith(("password", "passwd", "passphrase")):
        return 2
    if last in _WEAK or any(p in _STRONG or p in _WEAK for p in parts):
        return 1
    return 0


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def looks_secret(value: str) -> bool:
    """A run of 16+ random-looking characters: letters and digits mixed (a hex or base64 key), varied
    enough (``aaaa1111…`` is not), letters and digits alternating (``createdAtTimestamp`` has no
    digits, ``sha256WithRSAEncryption`` one group)."""
    for run in re.findall(r"[A-Za-z0-9+/=_\-]{16,}", value):
        core = re.sub(r"[+/=_\-]", "", run)
        if len(core) < 16 or _entropy(core) < 3.3:
            continue
        if len(re.findall(r"[0-9](?=[A-Za-z])|[A-Za-z](?=[0-9])", core)) < 3:
            continue  # digits in one place: a word with a number (``sha256WithRSA``, ``utf8Decoder``)
        n_digit = sum(c.isdigit() for c in core)
        n_upper = sum(c.isupper() for c in core)
        n_lower = sum(c.islower() for c in core)
        if n_digit >= 2 and n_upper + n_lower >= 4 and n_digit + n_upper >= 4:
            return True
        if n_upper >= 3 and n_lower >= 3 and n_digit >= 1:
            return True
    return False


def _line_start(text: str, pos: int) -> bool:
    """Only indentation, ``export``/``set``/``- `` or a flag's dashes between the line start and ``pos``."""
    start = max(text.rfind("\n", 0, pos) + 1, pos - 200)  # a longer run is not indentation
    before = text[start:pos]
    return re.fullmatch(r"[ \t]*(?:(?:export|set|env|declare)[ \t]+|-[ \t]+)?[\"']?|.*[ \t]-{1,2}|-{1,2}",
                        before) is not None


def _after(m: re.Match[str]) -> str:
    """The rest of the match's line (its first 200 characters: enough to judge, and a long line
    with many candidates is not copied once per candidate)."""
    cap = m.end() + 200
    nl = m.string.find("\n", m.end(), cap)
    return m.string[m.end():nl if nl >= 0 else cap]


def _char_before(text: str, pos: int) -> str:
    """The last character before ``pos`` that is not a blank or a quote ("" at the start)."""
    while pos > 0 and text[pos - 1] in " \t\"'":
        pos -= 1
    return text[pos - 1] if pos > 0 else ""


def secret_span(m: re.Match[str]) -> tuple[int, int] | None:
    """The value's span when this candidate is a secret assignment, else None."""
    strength = name_strength(m["name"])
    if strength == 0:
        return None
    group = next(g for g in ("dq", "sq", "bq", "uq") if m[g] is not None)
    value = m[group]
    if len(value) < 3 or value[0] in "$<[{(%" or _PLACEHOLDER.match(value):
        return None
    words = {p.lower() for p in _WORDS.findall(m["name"])} | {m["name"].lower()}
    if value.lower() in words or value.lower() in _KEYWORDS:
        return None
    span = m.span(group)
    followed_by_code = _CODE_AFTER.match(_after(m)) is not None
    if looks_secret(value):
        return span if not (group == "uq" and _EXPRESSION.search(value)) else None
    if strength < 2 or followed_by_code or group == "bq" or value.startswith(_PATH_START):
        return None  # (a `backquoted` value is a code span in Markdown, or a JS template)
    if group != "uq":
        return span  # a literal string assigned to a name that says "secret"
    if _EXPRESSION.search(value) or (value[0].isdigit() and not value.isdigit()):
        return None
    text, start = m.string, m.start("name")
    if _char_before(text, start) in ("(", ",") and not _line_start(text, start):
        return None  # a keyword argument or an object member: its bare value is a variable
    if m["colon"] is not None:
        # YAML (``password: hunter2``): an unquoted key at a line start, nothing after the value
        rest = _after(m).strip()
        return span if not m["nq"] and _line_start(text, start) and (not rest or rest.startswith("#")) else None
    if m["sp"] or text[m.start("eq") - 1] in " \t":
        # ``name = value`` is code more often than INI: only a value with letters and digits mixed
        mixed = re.search(r"[A-Za-z]", value) and re.search(r"[0-9]", value) and not _TECH_WORD.match(value)
        return span if mixed else None
    return span


_NAME_CHARS = frozenset(ascii_letters + digits + "_.-")
_NAME_START = frozenset(ascii_letters + "_")
_NOT_BEFORE = frozenset(ascii_letters + digits + "_.")
_ASCII_LOWER = str.maketrans(ascii_uppercase, ascii_lowercase)
# The only non-ASCII characters whose str.lower() is not one non-ASCII character: "\u0130" lowers to two
# (offsets would move), the Kelvin sign to "k" (a hint that is not in the text).
_LOWER_ODD = ("\u0130", "\u212a")


def ascii_lower(text: str) -> str:
    """``text`` with its ASCII letters lowercased and every other character where it was, as far
    as an ASCII hint can tell: ``str.lower()`` (fast) unless one of ``_LOWER_ODD`` is in it, then
    ``str.translate`` (slow on non-ASCII text: about 14x)."""
    if text.isascii() or not any(c in text for c in _LOWER_ODD):
        return text.lower()
    return text.translate(_ASCII_LOWER)


def find_assignments(text: str) -> Iterator[re.Match[str]]:
    """``ASSIGNMENT.finditer(text)``, faster: the regex is tried only on the names around each
    occurrence of a hint word (``str.find``), once per run of name characters (a name always ends
    where its run does, so a later start in the same run cannot match either). Linear in ``text``."""
    lower = ascii_lower(text)
    hits: list[int] = []
    for hint in NAME_HINTS:
        i = lower.find(hint)
        while i >= 0:
            hits.append(i)
            i = lower.find(hint, i + len(hint))
    run_end = end = 0
    n = len(text)
    for i in sorted(hits):
        if i < run_end or i < end:
            continue  # in a run already tried, or inside the last match
        p = i
        while p > run_end and text[p - 1] in _NAME_CHARS:
            p -= 1
        run_end = i
        while run_end < n and text[run_end] in _NAME_CHARS:
            run_end += 1
        while p < run_end and not (text[p] in _NAME_START and (p == 0 or text[p - 1] not in _NOT_BEFORE)):
            p += 1
        m = ASSIGNMENT.match(text, p) if p < run_end else None
        if m is not None:
            end = m.end()
            yield m
