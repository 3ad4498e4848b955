"""Which of the byte marks ``size`` and ``externalize`` test a record for it holds, from one pass.

Every record was searched for up to six marks (``"image"``, ``"images"``, ``"data":"``,
``"result":"``, an image data URL, ``"image``), one ``in`` test each: about 3 s of a 1 GB
session's 6 s. One non-overlapping run of an Aho-Corasick automaton (the redact prefilter's
dependency) over three patterns finds the same: ``"image`` (which the other image marks start
with), ``"data":`` and ``"result":``, each of the last two then followed by a quote or not.

Non-overlapping matching reports every occurrence of a pattern except one that starts inside an
earlier reported match; no pattern here starts with a byte another one ends with (``e``, ``:``),
nor holds another, so none is ever hidden. (A fourth, ``hinking"``, would end with the quote the
others start with, and made the run two and a half times slower: thinking is looked for apart.)
"""

from __future__ import annotations

from typing import Final

from omp_session.bytesearch import automaton

__all__ = ["DATA", "IMAGE", "RESULT", "record_marks"]

IMAGE: Final = 1  # b'"image' (in "image", "images", "image_url", an image data URL's key)
DATA: Final = 2  # b'"data":"'
RESULT: Final = 4  # b'"result":"'

_automaton: Final = automaton((b'"image', b'"data":', b'"result":'))


def record_marks(raw: bytes) -> int:
    """The marks ``raw`` holds, as the bits above."""
    found = 0
    for which, _start, end in _automaton().find_matches_as_indexes(raw):
        if which == 0:
            found |= IMAGE
        elif raw[end:end + 1] == b'"':
            found |= DATA if which == 1 else RESULT
    return found
