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
  a space is tested by ``PRIVATE``).
* Hints that are common words in sessions (``token``, ``key`` in ``totalTokens``, ``sk-`` in
  ``task-``) are looked at where they occur: ``env-assignment`` needs a ``:`` or ``=`` after the
  name (``totalTokens":`` ends a JSON string first), the ``sk-``-style tokens need a left
  boundary (``task-`` has a letter there), ``url-password`` needs an ``@``.
* A key naming a secret (``"apiKey":"…"``) redacts its value whatever it is: every object key
  with a string value is checked by name.
* A secret split across adjacent text (or thinking) blocks is found in their joined text: a
  record that may hold such a run has each run's joined text tested the same way.
* The drop options and ``--paths`` are tested by the words and paths they act on.
* Hints and key words are looked for in the raw bytes lowercased as ASCII; the one non-ASCII
  character ``str.lower()`` turns into an ASCII letter (the Kelvin sign, "k") makes a record walked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from .assign import NAME_HINTS
from .detectors import BUILTIN_DETECTORS, secret_key_name

__all__ = ["Prefilter"]

# A hint that starts its token, whose detector requires no word character before it
# (``_L`` in detectors.py): an occurrence after a letter or digit is no match.
_BOUNDED = (b"sk-", b"AIza", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"glpat-", b"xox", b"hf_",
            b"eyJ")
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# escapes that can decode to any character, or to "/" (in "://")
_WILD_ESCAPE = re.compile(rb"%[0-9A-Fa-f]{2}|\\u|\\/")
# a JSON object key whose value is a string (the only values a secret key name redacts)
_KEY_WITH_STRING = re.compile(rb'[{,]\s*"((?:[^"\\]|\\.)*)"\s*:\s*"')
# words one of which every secret key name holds, once lowercased without "_" and "-"
_KEY_WORDS = (b"pass", b"secret", b"token", b"key", b"authorization", b"credential", b"cookie")
_NAME_HINTS = tuple(h.encode() for h in NAME_HINTS)
# The one character str.lower() (what secret_key_name and the detectors' hint test use) turns into
# an ASCII letter: "api\u212aey" names a secret though the raw bytes, lowercased, hold no "key".
# ("\u0130" lowers to "i" and a combining dot, which no hint or key word can take.)
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


def _bounded_hint_may_match(raw: bytes, hint: bytes) -> Iterator[int]:
    """Occurrences of ``hint`` that may start a token: not glued to a word on their left. A
    letter right after a backslash may be an escape (``\\n``) that decodes to a boundary."""
    i = raw.find(hint)
    while i >= 0:
        if i == 0 or raw[i - 1] not in _WORD or (i >= 2 and raw[i - 2] == 0x5C):
            yield i
        i = raw.find(hint, i + 1)


def _all(raw: bytes, hint: bytes) -> Iterator[int]:
    i = raw.find(hint)
    while i >= 0:
        yield i
        i = raw.find(hint, i + 1)


def _separator_may_follow(raw: bytes, e: int) -> bool:
    """Whether the name ending at raw offset ``e`` may be followed, in its string or a decoded view
    of it, by env-assignment's separator: an optional quote, blanks, then ``:`` or ``=``."""
    n = len(raw)
    i = e
    while i < n:
        c = raw[i]
        if c == 0x22:  # an unescaped quote: the JSON string ends with the name
            return False
        if c in b":=%":
            return True
        if c in b" +'\t":
            i += 1
            continue
        if c == 0x5C:  # an escape: \" and \t are a quote and a tab in the string, \\ starts another layer
            nxt = raw[i + 1] if i + 1 < n else 0
            if nxt in b'"t':
                i += 2
                continue
            return nxt not in b"nrbf/"  # a newline (or CR, BS, FF, /) ends what the regex can take
        return False
    return True


def _assignment_may_match(low: bytes) -> Iterator[int]:
    """Occurrences of a name hint whose name may be followed by an assignment's separator."""
    for hint in _NAME_HINTS:
        i = low.find(hint)
        while i >= 0:
            e = i + len(hint)
            while e < len(low) and low[e] in _NAME:
                e += 1
            if _separator_may_follow(low, e):
                yield i
            i = low.find(hint, e)


def _hint_positions(raw: bytes, low: bytes) -> list[int]:
    """Where a built-in detector may find something: every occurrence of a hint that cannot be
    ruled out by what surrounds it (see the module docstring)."""
    found: list[int] = []
    for h in _EXACT:
        found.extend(_all(raw, h))
    for h in _FOLDED:
        found.extend(_all(low, h))
    for h in _BOUNDED:
        found.extend(_bounded_hint_may_match(raw, h))
    if b"@" in raw:
        found.extend(_all(raw, b"://"))
    found.extend(_assignment_may_match(low))
    return sorted(found)


def _quote(raw: bytes, at: int, step: int) -> int:
    """The nearest unescaped quote from ``at`` on (``step`` 1) or before ``at`` (``step`` -1), or -1."""
    while True:
        at = raw.find(b'"', at) if step > 0 else raw.rfind(b'"', 0, at)
        if at < 0:
            return -1
        k = at
        while k > 0 and raw[k - 1] == 0x5C:
            k -= 1
        if (at - k) % 2 == 0:
            return at
        if step > 0:
            at += 1


def _strings_at(raw: bytes, positions: list[int]) -> Iterator[str | None]:
    """The JSON strings holding ``positions`` (sorted), each once; None for one that cannot be read."""
    end = -1
    for pos in positions:
        if pos < end:
            continue
        start = _quote(raw, pos, -1)
        end = _quote(raw, pos, 1) + 1
        if start < 0 or end <= 0:
            yield None
            return
        try:
            text = orjson.loads(raw[start:end])
        except orjson.JSONDecodeError:
            yield None
            return
        yield text if isinstance(text, str) else None


def _secret_key_may_match(raw: bytes, low: bytes) -> bool:
    squeezed = low.replace(b"_", b"").replace(b"-", b"")
    if not any(w in squeezed for w in _KEY_WORDS):
        return False
    for m in _KEY_WITH_STRING.finditer(raw):
        key = m.group(1)
        named = _KEY_NAMES.get(key)
        if named is None:
            named = b"\\" in key or secret_key_name(key.decode("utf-8", "replace"))
            if len(_KEY_NAMES) < 10_000:  # keys repeat from record to record: a few hundred distinct
                _KEY_NAMES[key] = named
        if named:
            return True
    return False


_KEY_NAMES: dict[bytes, bool] = {}


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

    def may_change(self, raw: bytes, value: Any) -> bool:
        """``raw``: the record's bytes; ``value``: what they decode to (for joined text blocks)."""
        if self.walk_all or _WILD_ESCAPE.search(raw) is not None or any(w in raw for w in self.words):
            return True
        if _KELVIN in raw:
            return True
        low = raw.lower()
        if _secret_key_may_match(raw, low):
            return True
        if not self.builtin:
            return False
        if any(text is None or self.hits(text) for text in _strings_at(raw, _hint_positions(raw, low))):
            return True
        # a run of two text blocks has "text" twice as a type and twice as a key
        if raw.count(b'"text"') < 4 and raw.count(b'"thinking"') < 4:
            return False
        return any(self.hits(text) for text in joined_runs(value))
