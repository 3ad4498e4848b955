"""Which records ``redact`` can copy without walking them: a conservative test on a record's raw bytes.

Walking a record (every string, and its ``%XX`` / ``\\uXXXX`` decoded views, through every
detector) is what makes ``redact`` slow, and most records of a session hold nothing to redact.
:meth:`Prefilter.may_change` answers False only when it can prove, from the JSON text alone, that
the walk would change nothing and report nothing; anything it cannot judge is True (walked).

The proof, for the built-in detectors (user ``--secret`` / ``--pattern`` rules have no such
test: with them every record is walked):

* Every built-in match holds one of its detector's hints. A string's characters appear literally
  in the record's JSON text except ``"``, ``\\`` and control characters (escaped), and no hint
  holds those; so a hint absent from the raw bytes is absent from every string.
* A decoded view can only make a hint where an escape is decoded: ``%XX`` and ``\\uXXXX`` can
  make any character (a record holding either is walked), ``\\/`` makes ``/`` (walked), the
  others make ``"``, ``\\`` or a control character (in no hint), ``+`` a space (the one hint with
  a space is tested by ``PRIVATE``). The same holds for the file's own ``\\u00XX`` escapes of
  control characters (ANSI colours in tool output): a record holding only those is judged like
  any other (a hint right after one may start a token); any other ``\\u`` escape, or a ``\\u``
  the string itself holds, makes it walked (and every ``\\u`` does under ``--paths``).
* Hints that are common words in sessions (``token``, ``key`` in ``totalTokens``, ``sk-`` in
  ``task-``) are looked at where they occur: ``env-assignment`` needs a ``:`` or ``=`` after the
  name (``totalTokens":`` ends a JSON string first), the ``sk-``-style tokens need a left
  boundary (``task-`` has a letter there), ``url-password`` needs an ``@``.
* A key naming a secret (``"apiKey":"…"``) redacts its value whatever it is: every object key
  with a non-empty string value is checked by name, in the decoded record (keys repeat from
  record to record, so each name is judged once), when the record may hold one: such a key,
  lowercased without ``_`` and ``-``, is one of the secret words or ends with one of the secret
  endings, and its JSON text (escapes that make a letter make the record walked) is that; so
  the record's bytes, lowercased without ``_`` and ``-``, hold ``"word"`` or ``ending"``. A
  record without is not decoded for it.
* Only ``env-assignment`` is common in code and prose (``token``, ``key`` are words), and its
  matches never cross a line (nor does any decoded view move a line break of the string): a
  string where only its hints may match is scanned line by line, each line holding such a hint.
  A string holding any other detector's hint is scanned whole.
* A secret split across adjacent text (or thinking) blocks is found in their joined text: a
  record that may hold such a run has each run's joined text tested the same way.
* The drop options and ``--paths`` are tested by the words and paths they act on.
* Hints and key words are looked for in the raw bytes lowercased as ASCII; the one non-ASCII
  character ``str.lower()`` turns into an ASCII letter (the Kelvin sign, "k") makes a record walked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import orjson
from ahocorasick_rs import BytesAhoCorasick

from .assign import NAME_HINTS
from .detectors import BUILTIN_DETECTORS, SECRET_KEY_ENDINGS, SECRET_KEY_WORDS, secret_key_name

__all__ = ["Prefilter", "u_escape_of_text"]

# A hint that starts its token, whose detector requires no word character before it
# (``_L`` in detectors.py): an occurrence after a letter or digit is no match.
_BOUNDED = (b"sk-", b"AIza", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"glpat-", b"xox", b"hf_",
            b"eyJ")
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
# escapes that can decode to any character, or to "/" (in "://"): %XX, \/ and \u, except (unless
# strict) a file's own escape of a control character (``\u001b``: JSON.stringify writes those);
# ``\\u`` is a \u the string holds, which a decoded view decodes
_PERCENT = re.compile(rb"%[0-9A-Fa-f]{2}")
_U_NOT_CONTROL = re.compile(rb"\\u(?!00[01][0-9A-Fa-f])")


def u_escape_of_text(raw: bytes) -> bool:
    """Whether ``raw`` holds a ``\\u`` escape that is not one of a control character: one that may
    spell a letter of a key (the only escape JSON decoding undoes in a key)."""
    return b"\\u" in raw and _U_NOT_CONTROL.search(raw) is not None


_NAME_HINTS = tuple(h.encode() for h in NAME_HINTS)
# The one character str.lower() (what the detectors' hint test uses) turns into an ASCII letter:
# "to\u212aen" holds "token" to a fold detector though the raw bytes, lowercased, hold no "token".
# ("\u0130" lowers to "i" and a combining dot, which no hint can take.)
_KELVIN = "\u212a".encode()


def _plain_hints() -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """(case-sensitive, lowercase) hints of the built-in detectors that are tested by presence
    alone (the rest are judged where they occur, see the module docstring)."""
    exact: set[bytes] = set()
    folded: set[bytes] = set()
    for d in BUILTIN_DETECTORS:
        if d.category in ("env-assignment", "url-password"):
            continue
        for h in d.hints:
            if h == " PRIVATE KEY":
                exact.add(b"PRIVATE")  # its space may be a "+" decoded in a query
            elif any(h.encode().startswith(b) for b in _BOUNDED):
                continue
            else:
                (folded if d.fold else exact).add(h.encode())
    return tuple(sorted(exact)), tuple(sorted(folded))


_EXACT, _FOLDED = _plain_hints()
# name hints worth a search of their own: one holding a folded hint ("secret") is in a string that
# is scanned whole anyway
_NAME_SCAN = tuple(h for h in _NAME_HINTS if not any(f in h for f in _FOLDED))


# Every hint, lowercased, in one automaton run over the record's lowercased bytes (a search of
# each hint in turn reads the record once per hint: two thirds of the prefilter). A match of a
# case-sensitive hint is kept where the raw bytes spell it; overlapping matches are all reported
# ("auth" in "authorization", the same place), so what it finds is what a search of each would.
# The escapes that may decode to a hint's character (see the module docstring) are found in the
# same run: a ``\\/``, a ``\\u`` (kept by what follows it), the Kelvin sign; and the words that
# tell a run of text (or thinking) blocks, counted.
_PLAIN, _TOKEN, _URL, _NAME, _ESCAPE, _U, _TEXT, _THINKING = range(8)


def _automaton() -> tuple[BytesAhoCorasick, tuple[tuple[tuple[int, bytes], ...], ...]]:
    kinds: dict[bytes, list[tuple[int, bytes]]] = {}
    for h in _EXACT:
        kinds.setdefault(h.lower(), []).append((_PLAIN, h))
    for h in _FOLDED:
        kinds.setdefault(h, []).append((_PLAIN, b""))
    for h in _BOUNDED:
        kinds.setdefault(h.lower(), []).append((_TOKEN, h))
    kinds.setdefault(b"://", []).append((_URL, b""))
    for h in _NAME_SCAN:
        kinds.setdefault(h, []).append((_NAME, h))
    for h in (b"\\/", _KELVIN):
        kinds.setdefault(h, []).append((_ESCAPE, b""))
    kinds.setdefault(b"\\u", []).append((_U, b"\\u"))
    kinds.setdefault(b'"text"', []).append((_TEXT, b'"text"'))
    kinds.setdefault(b'"thinking"', []).append((_THINKING, b'"thinking"'))
    patterns = list(kinds)
    return BytesAhoCorasick(patterns), tuple(tuple(kinds[p]) for p in patterns)


_HINTS, _HINT_KINDS = _automaton()
# What a key naming a secret leaves in the record's bytes lowercased without "_" and "-" (see the
# module docstring): the whole key, quoted, or its ending and its closing quote.
_KEY_HINTS = BytesAhoCorasick(sorted({b'"' + w.encode() + b'"' for w in SECRET_KEY_WORDS}
                                     | {e.encode() + b'"' for e in SECRET_KEY_ENDINGS}))


def _may_name_a_secret(low: bytes) -> bool:
    """Whether a record whose bytes lowercased are ``low`` may hold a key naming a secret."""
    return bool(_KEY_HINTS.find_matches_as_indexes(low.translate(None, b"_-")))


def _may_start_token(raw: bytes, i: int) -> bool:
    """Whether a bounded hint at ``i`` may start a token: not glued to a word on its left. A
    letter right after a backslash may be an escape (``\\n``) that decodes to a boundary, a
    hex digit may end a ``\\u00XX`` escape of a control character."""
    return (i == 0 or raw[i - 1] not in _WORD or (i >= 2 and raw[i - 2] == 0x5C)
            or (i >= 6 and raw[i - 6] == 0x5C and raw[i - 5] == 0x75))


# The rest of a name (letters, digits, "_", ".", "-"; lowercased) and, looked ahead, what may
# follow it, in its string or a decoded view of it, up to env-assignment's separator: blanks, "+"
# (a space in a query), "'", \" or \t (a quote and a tab), then ":", "=", "%", another escape
# than a line break (or CR, BS, FF, /), or the end. An unescaped quote ends the string first.
_NAME_THEN_SEPARATOR = re.compile(rb"""[a-z0-9_.\-]*+(?=(?:[ +'\t]|\\["t])*+(?:[:=%]|\\[^nrbf/"t]|\\?\Z))""")


_CONTROL_HEX = re.compile(rb"00[01][0-9A-Fa-f]")


def _hint_positions(raw: bytes, low: bytes, strict: bool = False) -> tuple[list[int], list[int], bool] | None:
    """Where a built-in detector may find something: every occurrence of a hint that cannot be
    ruled out by what surrounds it (see the module docstring); those of env-assignment's name
    hints apart (the second list); whether the record may hold a run of two text (or thinking)
    blocks (``"text"`` or ``"thinking"`` four times: twice as a type, twice as a key). None when
    ``raw`` holds an escape that may decode to a hint's character: a ``%XX``, a ``\\/``, a
    ``\\u`` unless (not ``strict``) it escapes a control character, or the Kelvin sign."""
    if b"%" in raw and _PERCENT.search(raw) is not None:
        return None
    found: list[int] = []
    names: list[int] = []
    texts = thinkings = 0
    url = b"@" in raw
    then = _NAME_THEN_SEPARATOR.match
    control = _CONTROL_HEX.match
    kinds = _HINT_KINDS
    for which, i, end in _HINTS.find_matches_as_indexes(low, overlapping=True):
        for kind, hint in kinds[which]:
            if kind == _NAME:
                if then(low, end) is not None:
                    names.append(i)
            elif kind == _PLAIN:
                if not hint or raw.startswith(hint, i):
                    found.append(i)
            elif kind == _TOKEN:
                if raw.startswith(hint, i) and _may_start_token(raw, i):
                    found.append(i)
            elif kind == _URL:
                if url:
                    found.append(i)
            elif kind == _ESCAPE:
                return None
            elif kind == _TEXT:
                texts += raw.startswith(hint, i)
            elif kind == _THINKING:
                thinkings += raw.startswith(hint, i)
            elif raw.startswith(hint, i) and (strict or (i > 0 and raw[i - 1] == 0x5C) or control(raw, end) is None):
                return None  # a \u of a letter, or one the string holds ("\\u")
    return found, names, texts >= 4 or thinkings >= 4


def _unescaped(raw: bytes, at: int) -> bool:
    """Whether the byte at ``at`` follows an even run of backslashes (is not escaped by one)."""
    k = at
    while k > 0 and raw[k - 1] == 0x5C:
        k -= 1
    return (at - k) % 2 == 0


def _quote(raw: bytes, at: int, step: int) -> int:
    """The nearest unescaped quote from ``at`` on (``step`` 1) or before ``at`` (``step`` -1), or -1."""
    while True:
        at = raw.find(b'"', at) if step > 0 else raw.rfind(b'"', 0, at)
        if at < 0 or _unescaped(raw, at):
            return at
        if step > 0:
            at += 1


def _line(raw: bytes, pos: int) -> tuple[int, int] | None:
    """The raw span of the line of a JSON string that holds ``pos``: from just after the ``\\n``
    escape or the opening quote before it to the ``\\n`` escape or the closing quote after it (the
    nearer one each way, so only the line is read); None when ``pos`` is in no string."""
    at = pos
    while True:
        q = raw.rfind(b'"', 0, at)
        if q < 0:
            return None
        e = raw.rfind(b"\\n", q + 1, at)
        while e >= 0 and not _unescaped(raw, e):  # an escaped backslash, then an "n"
            e = raw.rfind(b"\\n", q + 1, e)
        if e >= 0:
            start = e + 2
            break
        if _unescaped(raw, q):
            start = q + 1
            break
        at = q
    at = pos
    while True:
        q = raw.find(b'"', at)
        if q < 0:
            return None
        e = raw.find(b"\\n", at, q)
        while e >= 0 and not _unescaped(raw, e):
            e = raw.find(b"\\n", e + 1, q)
        if e >= 0:
            return start, e
        if _unescaped(raw, q):
            return start, q
        at = q + 1


def _decoded(raw: bytes) -> str | None:
    """The JSON string ``raw`` (quotes included), or None when it is not one."""
    try:
        text = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return text if isinstance(text, str) else None


def _texts_at(raw: bytes, found: list[int], names: list[int]) -> Iterator[str | None]:
    """What to scan for the hint positions ``found`` and ``names`` (see _hint_positions): each
    JSON string holding one of ``found``, whole; each line (of a string) holding one of ``names``
    (see the module docstring). None for a string that cannot be read."""
    whole: list[tuple[int, int]] = []
    end = -1
    for pos in sorted(found):
        if pos < end:
            continue
        start = _quote(raw, pos, -1)
        end = _quote(raw, pos, 1) + 1
        text = _decoded(raw[start:end]) if start >= 0 and end > 0 else None
        yield text
        if text is None:
            return
        whole.append((start, end))
    w, end = 0, -1
    for pos in sorted(names):
        while w < len(whole) and whole[w][1] <= pos:
            w += 1
        if pos < end or (w < len(whole) and whole[w][0] < pos):
            continue  # on a line already scanned, or in a string scanned whole
        span = _line(raw, pos)
        text = _decoded(b'"' + raw[span[0]:span[1]] + b'"') if span is not None else None
        yield text
        if span is None or text is None:
            return
        end = span[1]


def _secret_key_in(value: Any) -> bool:
    """Whether an object anywhere in ``value`` has a key naming a secret with a non-empty string
    value (which the walk redacts whatever it is), found without recursion. (Exact types: a
    decoded record holds no others, and anything else is left to the walk.)"""
    names = _KEY_NAMES
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            for k, sub in v.items():
                t = type(sub)
                if t is str:
                    if not sub:
                        continue
                    named = names.get(k)
                    if named is None:
                        named = secret_key_name(k)
                        if len(names) < 10_000:  # keys repeat from record to record: a few hundred distinct
                            names[k] = named
                    if named:
                        return True
                elif t is dict or t is list:
                    stack.append(sub)
                elif t not in _SCALARS:
                    return True
        elif type(v) is list:
            for sub in v:
                t = type(sub)
                if t is dict or t is list:
                    stack.append(sub)
                elif t is not str and t not in _SCALARS:
                    return True
        elif type(v) is not str and type(v) not in _SCALARS:
            return True
    return False


_SCALARS = frozenset({int, float, bool, type(None)})
_REMEMBERED = 8192  # texts found to hold nothing, kept: at most 8 M characters
_REMEMBERED_LEN = 1024
_KEY_NAMES: dict[str, bool] = {}


def joined_runs(value: Any) -> Iterator[str]:
    """The joined text of every run of two or more adjacent text (or thinking) blocks in any list
    under a ``content`` key (as ``_Redactor.joined_hits`` forms them), found without recursion."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, sub in v.items():
                if k == "content" and isinstance(sub, list):
                    yield from _runs(sub)
                if isinstance(sub, dict | list):
                    stack.append(sub)
        elif isinstance(v, list):
            stack.extend(sub for sub in v if isinstance(sub, dict | list))


def _runs(blocks: list[Any]) -> Iterator[str]:
    run: list[str] = []
    kind: Any = None
    for block in [*blocks, None]:
        t = block.get("type") if isinstance(block, dict) else None
        field = {"text": "text", "thinking": "thinking"}.get(t) if isinstance(t, str) else None
        text = block.get(field) if field is not None and isinstance(block, dict) else None
        if not isinstance(text, str) or t != kind:
            if len(run) > 1:
                yield "".join(run)
            run = []
            kind = t if isinstance(text, str) else None
        if isinstance(text, str):
            run.append(text)


class Prefilter:
    """``may_change(raw, value)``: False only when walking the record would neither change it nor
    report anything (see the module docstring). With user rules (``user_rules``) there is no such
    test: always True. ``hits``: the matcher's, run on each string a hint says may hold something."""

    def __init__(self, hits: Callable[[str], list[Any]], *, builtin: bool, user_rules: bool,
                 literals: Sequence[bytes] = (), drop_images: bool = False, drop_thinking: bool = False,
                 drop_tool_output: bool = False, drop_custom: bool = False) -> None:
        self.hits = hits
        self.walk_all = user_rules
        self.builtin = builtin
        words: list[bytes] = list(literals)
        if drop_images:
            words.append(b'"image')  # an image block, or an "images" list
        if drop_thinking:
            words += [b'hinking"', b'"reasoning"']  # thinking / redactedThinking blocks, reasoning items
        if drop_tool_output:
            words += [b'"toolResult"', b'Execution"']  # tool results, bash/python executions
        if drop_custom:
            words += [b'"custom', b'"hookMessage"']
        self.words = tuple(words)
        self.clean: dict[str, None] = {}  # texts the matcher found nothing in (see _any_hit)
        # a path may hold a control character, which another writer may have escaped otherwise
        self.strict = bool(literals)

    def may_change(self, raw: bytes, value_of: Callable[[], Any]) -> bool:
        """``raw``: the record's bytes; ``value_of()``: what they decode to (for keys and joined
        text blocks; asked for only when the bytes cannot rule them out)."""
        if self.walk_all or any(w in raw for w in self.words):
            return True
        low = raw.lower()
        hints = _hint_positions(raw, low, self.strict)
        if hints is None or (_may_name_a_secret(low) and _secret_key_in(value_of())):
            return True
        if not self.builtin:
            return False
        found, names, runs = hints
        if self._any_hit(_texts_at(raw, found, names)):
            return True
        return runs and self._any_hit(joined_runs(value_of()))

    def _any_hit(self, texts: Iterable[str | None]) -> bool:
        """Whether the matcher finds something in one of ``texts`` (None: a text that could not be
        read). The texts found to hold nothing are remembered (the matcher is a function of the
        text alone, and a session repeats its lines: a file read twice, the same code edited), up
        to ``_REMEMBERED`` of at most ``_REMEMBERED_LEN`` characters each; a text holding
        something is never remembered (its record is walked)."""
        clean = self.clean
        for text in texts:
            if text is None:
                return True
            if text in clean:
                continue
            if self.hits(text):
                return True
            if len(text) <= _REMEMBERED_LEN:
                if len(clean) >= _REMEMBERED:
                    clean.clear()
                clean[text] = None
        return False
