"""Many byte patterns found in one pass: an Aho-Corasick automaton (ahocorasick-rs), built on first use.

``bytes.find`` reads about 1.3 GB/s here whatever the needle, and far slower when the needle's
first bytes are common (a quote in JSON, the lead bytes of U+2000-U+203F): searching a record for
several patterns cost a pass each. One automaton run finds them all. Importing the package takes
about a millisecond and most runs of a command search nothing large, so an automaton is made when
first asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["automaton"]


def automaton(patterns: Iterable[bytes], *, leftmost: bool = False) -> Callable[[], Any]:
    """What gives the ``BytesAhoCorasick`` of ``patterns`` (pattern ``k`` is reported as ``k``),
    made on the first call and kept.

    ``leftmost``: leftmost-first matching, which lets the search skip ahead with a vectorized
    prefilter (two to three times as fast on JSON for a few short patterns, see js/codec.py); it
    reports what the standard search does only where no match can start inside another one's
    bytes, which the caller must make sure of. No overlapping search then."""
    wanted = list(patterns)
    made: list[Any] = []

    def get() -> Any:
        if not made:
            from ahocorasick_rs import MATCHKIND_LEFTMOST_FIRST, BytesAhoCorasick

            made.append(BytesAhoCorasick(wanted, matchkind=MATCHKIND_LEFTMOST_FIRST) if leftmost
                        else BytesAhoCorasick(wanted))
        return made[0]

    return get
