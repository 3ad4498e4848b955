"""Search snippets with ``--redact``: the secrets masked before the matches are bracketed.

Two ways a snippet hid a secret from the detectors: the ``[`` ``]`` around a match inside a key
(``sk-ant-[api03]-AAAA…``) broke the key's pattern, and a snippet cut into a key (``…AAAA…``)
no longer starts like one. So the detectors run on the snippet without its marks, and the
secrets of the whole entry the snippet was cut from are masked too: wherever they occur, and
where a snippet begins with the end of one or ends with the start of one.
"""

from __future__ import annotations

from collections.abc import Iterable

from omp_session.ops.redact.detectors import Hit, Matcher, marker, merge_hits

__all__ = ["EDGE_MIN", "redact_snippet"]

EDGE_MIN = 4  # a shorter piece of a secret at a snippet's edge is left: it gives nothing away
_ELLIPSIS = "…"


def _edge_hits(plain: str, secrets: Iterable[tuple[str, str]]) -> list[Hit]:
    found: list[Hit] = []
    head = 1 if plain.startswith(_ELLIPSIS) else None
    tail = len(plain) - 1 if plain.endswith(_ELLIPSIS) and len(plain) > 1 else None
    for secret, category in secrets:
        start = plain.find(secret)
        while start >= 0 and secret:
            found.append(Hit(start, start + len(secret), category))
            start = plain.find(secret, start + 1)
        if head is not None:  # cut into on the left: the snippet starts with the secret's end
            for k in range(min(len(secret), len(plain) - head), EDGE_MIN - 1, -1):
                if plain.startswith(secret[-k:], head):
                    found.append(Hit(head, head + k, category))
                    break
        if tail is not None:  # and on the right: it ends with the secret's start
            for k in range(min(len(secret), tail), EDGE_MIN - 1, -1):
                if plain.endswith(secret[:k], 0, tail):
                    found.append(Hit(tail - k, tail, category))
                    break
    return found


def redact_snippet(marked: str, marks: tuple[str, str], matcher: Matcher,
                   secrets: Iterable[tuple[str, str]] = (), shown: tuple[str, str] = ("[", "]")) -> str:
    """``marked`` (matches between ``marks``) with its secrets replaced by their markers and the
    matches shown between ``shown``; a match that overlaps a secret loses its marks.
    ``secrets``: (text, category) of the secrets of the text the snippet was cut from, its
    whitespace runs made single spaces as in the snippet."""
    plain_parts: list[str] = []
    opens: list[int] = []
    pairs: list[tuple[int, int]] = []
    at = 0
    for ch in marked:
        if ch == marks[0]:
            opens.append(at)
        elif ch == marks[1]:
            if opens:
                pairs.append((opens.pop(), at))
        else:
            plain_parts.append(ch)
            at += 1
    plain = "".join(plain_parts)
    hits = merge_hits([*matcher.hits(plain), *_edge_hits(plain, secrets)])
    kept = [(a, b) for a, b in pairs if not any(h.start < max(b, a + 1) and h.end > a for h in hits)]
    # at one place: the marks closing a match, then those of an empty one, then those opening one
    ordered = sorted([(b, 0, shown[1]) for a, b in kept if a < b] + [(a, 1, shown[0] + shown[1]) for a, b in kept
                     if a == b] + [(a, 2, shown[0]) for a, b in kept if a < b])
    inserts: dict[int, list[str]] = {}
    for at_, _rank, mark in ordered:
        inserts.setdefault(at_, []).append(mark)
    out: list[str] = []
    pos = 0
    for h in [*hits, Hit(len(plain), len(plain), "")]:
        for i in range(pos, h.start):
            out.extend(inserts.get(i, ()))
            out.append(plain[i])
        if h.category:
            out.extend(s for s in inserts.get(h.start, ()) if s == shown[1])  # a match ending here
            out.append(marker(h.category))
            pos = h.end
        else:
            out.extend(inserts.get(len(plain), ()))
    return "".join(out)
