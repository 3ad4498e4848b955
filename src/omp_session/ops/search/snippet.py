"""The snippet shown with a search hit, cut in Python instead of by FTS5's ``snippet()``.

``snippet()`` tokenizes the whole text of every hit it is asked for, and a hit can be a tool
output of 500 KB: that was most of a query's time. Here the hit's first occurrence of a query
term is found with one regular expression built from the FTS5 expression (phrases as runs of
words, ``prefix*`` as a word start), and a window of about the same number of words as
``snippet()`` gives is cut around it, every term in it marked with the HIGHLIGHT characters.

Words are runs of letters and digits, as FTS5's unicode61 tokenizer sees them (an underscore
separates words). The tokenizer also folds diacritics, which a regular expression does not: where
the pattern finds nothing in a hit's text, the caller falls back to ``snippet()`` for that hit.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["HitPattern", "cut_snippet", "hit_pattern"]

_TERM = re.compile(r'"((?:[^"]|"")*)"(\*?)')
_WORD = re.compile(r"[^\W_]+")
_REACH: Final = 48  # characters looked at per word wanted, before or after the hit


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
    them wrapped in ``marks``, with "…" where the text goes on; None when nothing matches."""
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
    return ("…" if start > 0 else "") + marked + ("…" if end < len(text) else "")
