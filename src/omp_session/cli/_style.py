"""Plain text for the terminal, without rich: ANSI styles, widths, clipping and the pager.

rich costs more to import than the rest of a small ``show`` (issue 15): the views that people
run most (``show``, ``tree``, ``context``, ``list``) write text themselves. Styles are ANSI
escapes, only when stdout is a terminal and ``NO_COLOR`` is unset (https://no-color.org), so piped
output is plain text.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from bisect import bisect_right
from itertools import accumulate

__all__ = ["HarmlessOut", "Styler", "clip", "clip_start", "harmless", "inert", "page", "terminal_width", "uncoloured",
           "width"]

# C0 and C1 controls but newline and tab, and any ESC that does not start one of our own colour
# codes: a session's text must not clear the screen, retitle the window or hide a line (CR, BS)
# control characters a terminal acts on, and lone surrogates (a session may hold one, escaped):
# no terminal encoding can write those
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\ud800-\udfff]|\x1b(?!\[[0-9;]*m)")
# the same and every ESC: in a session's own text a colour code is not ours (it would colour the
# rest of the screen, or pass into a pipe), so text taken from a session goes through this first
_CONTENT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36"}


class Styler:
    """``s("text", "bold", "red")``: the text in those styles, or the text itself when off."""

    def __init__(self, on: bool | None = None) -> None:
        self.on = _colour_wanted() if on is None else on

    def __call__(self, text: str, *styles: str) -> str:
        if not self.on or not styles or not text:
            return text
        return f"\x1b[{';'.join(_CODES[s] for s in styles)}m{text}\x1b[0m"


def _colour_wanted() -> bool:
    # NO_COLOR counts only when non-empty, as no-color.org says
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def terminal_width(default: int | None = None) -> int | None:
    """``COLUMNS`` when set (a test, or the user), else the terminal's width when stdout is one,
    else ``default``."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        try:
            return os.get_terminal_size(sys.stdout.fileno()).columns
        except OSError:
            return default
    return default


class _Cells(dict[str, int]):
    """Cells per character, each worked out once: a long session's tree measures millions."""

    def __missing__(self, c: str) -> int:
        cells = self[c] = 0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        return cells


_CELLS = _Cells()


def width(text: str) -> int:
    """Cells ``text`` takes on a terminal: East Asian wide characters take two, combining marks
    none (what rich's cell_len counts, without its tables)."""
    if text.isascii():
        return len(text)
    return sum(map(_CELLS.__getitem__, text))


def clip(text: str, cells: int) -> str:
    """``text`` cut to ``cells`` terminal cells, ending in "…" when cut."""
    if text.isascii():
        if len(text) <= cells:
            return text
        return text[:cells - 1] + "…" if cells > 0 else ""
    used = list(accumulate(map(_CELLS.__getitem__, text)))
    if used[-1] <= cells:
        return text
    if cells <= 0:
        return ""
    return text[:bisect_right(used, cells - 1)] + "…"  # the longest start that leaves a cell for "…"


def clip_start(text: str, cells: int) -> str:
    """``text`` cut to ``cells`` terminal cells from the start, beginning with "…" when cut: the
    end of a path tells most."""
    if width(text) <= cells:
        return text
    if cells <= 0:
        return ""
    used = list(accumulate(map(_CELLS.__getitem__, reversed(text))))
    kept = bisect_right(used, cells - 1)
    return "…" + text[len(text) - kept:] if kept else "…"


def inert(text: str) -> str:
    """Text from a session as it may be shown: every control character but newline and tab (ESC
    too, whatever follows it) and every lone surrogate as U+FFFD. Our own styles are added after."""
    # (a printable string holds no control character and no surrogate: the check is twice as
    # fast as a search that finds nothing, and tree asks it of every row)
    return text if text.isprintable() else _CONTENT_CONTROL.sub("\ufffd", text)


_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def uncoloured(text: str) -> str:
    """``text`` without its colour and style codes (SGR: ``ESC [ 32 m``), what a tool's output
    holds most: for a one-line preview of a message's text, where the codes would show as
    ``\ufffd[32m`` and take the width. Any other escape is left for :func:`inert` to show; an id
    or a name keeps its codes (the thing one would look for holds them)."""
    return _SGR.sub("", text) if "\x1b[" in text else text


def harmless(text: str) -> str:
    """``text`` with every control character a terminal would act on, and every lone surrogate,
    shown as U+FFFD instead."""
    if text.replace("\n", "").replace("\t", "").isprintable():  # (three times as fast, see inert)
        return text
    return _CONTROL.sub("\ufffd", text)


class HarmlessOut:
    """stdout for a rich Console drawing text from sessions (model names, titles): every write
    goes through :func:`harmless` (rich's own colour codes pass, a session's other escapes not)."""

    def __init__(self) -> None:
        self._out = sys.stdout

    def write(self, text: str) -> int:
        return self._out.write(harmless(text))

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()

    def fileno(self) -> int:
        return self._out.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._out, "encoding", None) or "utf-8"


def paged() -> bool:
    """Whether :func:`page` goes through a pager (stdout a terminal, ``OMP_SESSION_PAGER`` not 0)."""
    return sys.stdout.isatty() and os.environ.get("OMP_SESSION_PAGER", "1") != "0"


def page(text: str) -> None:
    """Write ``text``; on a terminal, through ``$PAGER`` (else ``less -FRX``: it quits at once when
    the text fits on one screen and keeps colours), never when piped or with
    ``OMP_SESSION_PAGER=0``."""
    text = harmless(text)
    if not paged():
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    import pydoc  # only on a terminal: it costs more than a small show

    os.environ.setdefault("LESS", "-FRX")
    pydoc.pager(text.removesuffix("\n"))
