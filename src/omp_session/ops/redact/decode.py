"""Decoded views of a string, for scanning: ``%XX`` runs, ``\\uXXXX`` and JSON's short escapes,
and ``+`` inside URL query strings, each mapped back to the span of the original it came from.

Why: the built-in detectors look for a token's left boundary (``ghp_`` must not continue a word),
and in ``?q=%22ghp_…`` or ``\\u0022ghp_…`` the character before the token is an escape's hex
digit. Scanning the decoded text finds the token; the map says which original characters to
replace, so the escape sequences that encode it are redacted too.
"""

from __future__ import annotations

import re
from bisect import bisect_right

__all__ = ["View", "decoded_views"]

# (every branch starts with a literal, so the regex engine skips ahead to "%", "\\" or "+" at C speed:
# ``(?:%XX)+`` first made it try every position, 9x slower on long text)
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}(?:%[0-9A-Fa-f]{2})*|\\u[0-9A-Fa-f]{4}|\\[\"\\/bfnrt]|\+")
_QUERY = re.compile(r"[?&][^\s#\"'<>`]*")
_SHORT = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# Each round undoes one layer (``%2522`` is ``%22`` once decoded); three cover what tools stack.
_MAX_ROUNDS = 3


class View:
    """``text``: the decoded string; :meth:`span` maps a span of it to the original's.

    The map is kept as segments (an unchanged run maps one to one, a decoded character to its
    whole escape), so building a view costs one step per escape, not per character.
    """

    __slots__ = ("_seg_start", "_segs", "parent", "text")

    def __init__(self, text: str, segs: list[tuple[int, int, int, bool]], parent: View | None) -> None:
        self.text = text
        self._segs = segs  # (decoded start, source start, source length, unchanged run?)
        self._seg_start = [x[0] for x in segs]
        self.parent = parent  # the view this one was decoded from (None: the original)

    def _char(self, i: int) -> tuple[int, int]:
        d, src, n, same = self._segs[bisect_right(self._seg_start, i) - 1]
        return (src + i - d, src + i - d + 1) if same else (src, src + n)

    def span(self, s: int, e: int) -> tuple[int, int]:
        a, b = self._char(s)[0], self._char(e - 1)[1]
        return self.parent.span(a, b) if self.parent is not None else (a, b)


def _utf8_len(b: int) -> int:
    return 1 if b < 0x80 else 2 if 0xC0 <= b < 0xE0 else 3 if 0xE0 <= b < 0xF0 else 4 if 0xF0 <= b < 0xF8 else 0


def _percent(run: str, at: int, out: list[str], segs: list[tuple[int, int, int, bool]], dpos: int) -> int:
    """Decode one ``%XX`` run into ``out``; returns the decoded position after it."""
    data = bytes(int(run[i + 1:i + 3], 16) for i in range(0, len(run), 3))
    i = 0
    while i < len(data):
        n = _utf8_len(data[i])
        try:
            ch = data[i:i + n].decode("utf-8") if n else None
        except UnicodeDecodeError:
            ch = None
        if ch is None:  # not UTF-8: the escape stays as written
            out.append(run[3 * i:3 * i + 3])
            segs.append((dpos, at + 3 * i, 3, True))
            dpos += 3
            i += 1
        else:
            out.append(ch)
            segs.append((dpos, at + 3 * i, 3 * n, False))
            dpos += 1
            i += n
    return dpos


def _decode_once(text: str, parent: View | None) -> View | None:
    query = [m.span() for m in _QUERY.finditer(text)] if "+" in text else []
    out: list[str] = []
    segs: list[tuple[int, int, int, bool]] = []
    pos = dpos = 0
    for m in _ESCAPE.finditer(text):
        a, b = m.span()
        tok = m.group()
        if tok == "+" and not any(qa < a < qb for qa, qb in query):
            continue
        if a > pos:
            out.append(text[pos:a])
            segs.append((dpos, pos, a - pos, True))
            dpos += a - pos
        pos = b
        if tok[0] == "%":
            dpos = _percent(tok, a, out, segs, dpos)
            continue
        # a \uXXXX surrogate pair stays two code units: still scannable
        out.append(" " if tok == "+" else chr(int(tok[2:], 16)) if tok[1] == "u" else _SHORT[tok[1]])
        segs.append((dpos, a, b - a, False))
        dpos += 1
    if not segs:
        return None
    if pos < len(text):
        out.append(text[pos:])
        segs.append((dpos, pos, len(text) - pos, True))
    return View("".join(out), segs, parent)


def decoded_views(text: str) -> list[View]:
    """One view per decoding round that changed something (none for text without escapes)."""
    if "%" not in text and "\\" not in text and "+" not in text:
        return []
    views: list[View] = []
    view: View | None = None
    for _ in range(_MAX_ROUNDS):
        view = _decode_once(view.text if view is not None else text, view)
        if view is None:
            break
        views.append(view)
    return views
