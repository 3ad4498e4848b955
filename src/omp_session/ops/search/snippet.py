"""The snippet shown with a search hit, cut in Python instead of by FTS5's ``snippet()``.

``snippet()`` tokenizes the whole text of every hit it is asked for, and a hit can be a tool
output of 500 KB: that was most of a query's time. Here the hit's first occurrence of a query
term is found with one regular expression built from the FTS5 expression (phrases as runs of
words, ``prefix*`` as a word start), and a window of about the same number of words as
``snippet()`` gives is cut around it, every term in it marked with the HIGHLIGHT characters.

Words are runs of letters and digits, as FTS5's unicode61 tokenizer sees them (an underscore
separates words). The tokenizer also folds diacritics, which a regular expression does not: where
the pattern finds nothing in a hit's text, the caller falls back to ``snippet()`` for that hit.

Tool outputs often hold terminal colour codes. A snippet shows none: :func:`cut_snippet` takes
every escape sequence out of the stretch of a hit's text it cuts the snippet from (so the window
and the marks are those of the plain text, and a window never starts inside a sequence), and
:func:`plain_snippet` takes any sequence and control character out of a finished snippet (FTS5's
``snippet()``, a store's), keeping the marks. The index keeps the text as it was: old indexes
need no rebuild.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["HitPattern", "cut_snippet", "hit_pattern", "plain_snippet", "strip_ansi"]

_TERM = re.compile(r'"((?:[^"]|"")*)"(\*?)')
_WORD = re.compile(r"[^\W_]+")
_REACH: Final = 48  # characters looked at per word wanted, before or after the hit

# ECMA-48 escape sequences, whole: CSI (ESC [; parameter bytes, intermediate bytes, a final
# byte), OSC and the other strings (ESC ] P X ^ _, up to BEL or ST), and the short ones (ESC ( B,
# ESC 7, ESC =). A string without its end loses only its introducer, and so does an ESC before a
# space. Not their 8-bit forms (U+009B, U+009D, ...): in text decoded from UTF-8 such a character
# is a mis-decoded one far more often than a control (UTF-8 read as Latin-1 turns ” into
# "â\x80\x9d" and “ into "â\x80\x9c": taken for a string from one to the next, the words between
# were lost); plain_snippet drops the character alone.
_CSI = r"\x1b\[[\x30-\x3f{marks}]*[\x20-\x2f]*[\x40-\x7e]"
_STRING = r"\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
_SHORT = r"\x1b[\x21-\x2f]?[\x30-\x7e]"
_ANSI = re.compile("|".join((_CSI.format(marks=""), _STRING, _SHORT)))
_INTRODUCER_CHARS: Final = "\x1b"
_INTRODUCERS = re.compile(f"[{_INTRODUCER_CHARS}]")
_STRADDLE: Final = 512  # how far back a sequence may start and still reach into a stretch (an OSC 8 link)
# in a finished snippet: a mark may sit inside a sequence (FTS5 marked its "32m"); what is left of
# C0 and C1 controls but the marks (\x02, \x03) goes too (whitespace among them becomes a space)
_MARKED_ANSI = re.compile("|".join((_CSI.format(marks="\x02\x03"), _STRING, _SHORT)))
_CONTROL = re.compile(r"[\x00\x01\x04-\x1f\x7f-\x9f]")


def strip_ansi(text: str) -> str:
    """``text`` without its terminal escape sequences (each one whole)."""
    if _INTRODUCERS.search(text) is None:  # the usual case: one scan, nothing copied
        return text
    return _ANSI.sub("", text)


def plain_snippet(snippet: str) -> str:
    """A finished snippet without escape sequences or control characters; the ``\\x02``/``\\x03``
    marks inside a sequence are kept (still paired), and a pair left around nothing goes."""
    if _CONTROL.search(snippet) is None:
        return snippet
    out = _MARKED_ANSI.sub(lambda m: "".join(c for c in m.group() if c in "\x02\x03"), snippet)
    return _CONTROL.sub(lambda m: " " if m.group().isspace() else "", out).replace("\x02\x03", "")


class HitPattern:
    """The terms of one query: ``full`` matches any of them; ``first(text)`` finds the earliest
    match without running a regular expression over the whole text."""

    def __init__(self, terms: list[tuple[str, str]]) -> None:
        self.full = re.compile("|".join(r"(?<![^\W_])" + body for _, body in terms), re.IGNORECASE)
        # (the term's first word, lowercased; the term anchored at a position)
        self.starts = [(word, re.compile(body, re.IGNORECASE)) for word, body in terms]

    def first(self, text: str) -> re.Match[str] | None:
        lowered = text.lower()
        if len(lowered) != len(text):  # a few characters lowercase to two: offsets would drift
            return self.full.search(text)
        best: re.Match[str] | None = None
        for word, term in self.starts:
            at = lowered.find(word)
            while at >= 0 and (best is None or at < best.start()):
                if at == 0 or not _is_word_char(text[at - 1]):
                    m = term.match(text, at)
                    if m is not None:
                        best = m
                        break
                at = lowered.find(word, at + 1)
        return best


def _is_word_char(c: str) -> bool:
    return c.isalnum()


def hit_pattern(fts: str) -> HitPattern | None:
    """The terms of the FTS5 expression ``fts`` (as search.to_fts writes it), or None when it has
    none."""
    terms = []
    for m in _TERM.finditer(fts):
        words = _WORD.findall(m.group(1).replace('""', '"'))
        if not words:
            continue
        body = r"[\W_]+".join(re.escape(w) for w in words)
        terms.append((words[0].lower(), body + (r"[^\W_]*" if m.group(2) else r"(?![^\W_])")))
    if not terms:
        return None
    terms.sort(key=lambda t: len(t[1]), reverse=True)  # a phrase before a word it starts with
    return HitPattern(terms)


def cut_snippet(text: str, pattern: HitPattern, words: int, marks: tuple[str, str]) -> str | None:
    """About ``words`` words of ``text`` around its first match of ``pattern``, every match in
    them wrapped in ``marks``, with "…" where the text goes on; None when nothing matches. The
    snippet is cut from the text without its escape sequences (``strip_ansi``): where the text has
    any, only a stretch around the first match is made plain (a coloured 500 KB tool output would
    take tens of ms whole), widened to the escape sequence that may straddle its start."""
    if _INTRODUCERS.search(text) is None:
        return _cut(text, pattern, words, marks, False, False)
    first = pattern.first(text)
    if first is None:
        return None
    reach = words * _REACH * 4
    lo = max(0, first.start() - reach)
    hi = min(len(text), first.end() + reach)
    if lo > 0:
        back = max(text.rfind(c, max(0, lo - _STRADDLE), lo) for c in _INTRODUCER_CHARS)
        lo = back if back >= 0 else lo
    return _cut(_ANSI.sub("", text[lo:hi]), pattern, words, marks, lo > 0, hi < len(text))


def _cut(text: str, pattern: HitPattern, words: int, marks: tuple[str, str], more_before: bool,
         more_after: bool) -> str | None:
    """cut_snippet in ``text``, a stretch of a longer text when ``more_before``/``more_after``."""
    first = pattern.first(text)
    if first is None:
        return None
    before_wanted = words // 3
    after_wanted = max(words - before_wanted - 1, 1)
    lo = max(0, first.start() - before_wanted * _REACH)
    found = [m.start() for m in _WORD.finditer(text, lo, first.start())]
    if lo == 0 and len(found) <= before_wanted:
        start = 0  # the text's beginning is near: show it all
    elif before_wanted and found:
        start = found[-min(before_wanted, len(found))]
    else:
        start = first.start()
    end = first.end()
    for n, m in enumerate(_WORD.finditer(text, first.end(), first.end() + after_wanted * _REACH), 1):
        end = m.end()
        if n == after_wanted:
            break
    if end >= len(text.rstrip()):
        end = len(text)
    window = text[start:end]
    marked = pattern.full.sub(lambda m: marks[0] + m.group() + marks[1], window)
    return (("…" if start > 0 or more_before else "") + marked
            + ("…" if end < len(text) or more_after else ""))
