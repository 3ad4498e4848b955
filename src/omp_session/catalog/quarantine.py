"""The names of ``repair``'s quarantine files: what every listing and id lookup passes over.

Apart from the listing so that a lookup by path (``show FILE``) need not import the listing.
"""

from __future__ import annotations

__all__ = ["LEGACY_QUARANTINE_SUFFIX", "QUARANTINE_SUFFIX", "is_quarantine_name"]

QUARANTINE_SUFFIX = ".quarantine"
"""What ``repair`` appends to a file's name for its quarantine: not ``.jsonl``, so no listing of
omp's or ours globs it as a session."""
LEGACY_QUARANTINE_SUFFIX = ".quarantine.jsonl"  # what repair wrote before issue 15


def is_quarantine_name(name: str) -> bool:
    """Whether the file ``name`` is one of repair's quarantine files (of today's or the old name)."""
    return name.endswith((QUARANTINE_SUFFIX, LEGACY_QUARANTINE_SUFFIX))
