"""Features of an omp newer than any we know (issue 17): a header ``version`` above 3, entry types
and fields on known entry types that no omp we imitate writes. Such a file still loads losslessly
(unknown types and fields are kept and written back as they are); this only says so, in one
``newer-omp-features`` info finding per file that names the first few.

One pass over the records, a block of lines at a time: each record is decoded to its top-level
keys only (values are skipped by the parser, never built), and each distinct key set of a type is
judged once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from omp_session.format.reader import Journal
from omp_session.model.omp_version import DEFAULT

from .report import Report

__all__ = ["KNOWN_FIELDS", "newer_features"]

_ENVELOPE: Final = ("type", "id", "parentId", "timestamp")
# per entry type, the keys omp 18.2.3 to 18.3.4 write (spec S3, S20.2.4), plus legacy keys older
# omps wrote (model_change's provider/modelId, fromHook, v1's firstKeptEntryIndex) so old files are
# not mistaken for new ones
KNOWN_FIELDS: Final[dict[str, frozenset[str]]] = {t: frozenset((*_ENVELOPE, *more)) for t, more in {
    "message": ("message",),
    "model_change": ("model", "role", "resolvedModelIsFallback", "provider", "modelId"),
    "thinking_level_change": ("thinkingLevel", "configured"),
    "service_tier_change": ("serviceTier",),
    "compaction": ("summary", "shortSummary", "firstKeptEntryId", "tokensBefore", "tokensAfter", "method",
                   "providerReplayThroughEntryId", "details", "fromExtension", "fromHook", "preserveData",
                   "warning", "firstKeptEntryIndex"),
    "branch_summary": ("fromId", "summary", "details", "fromExtension", "fromHook"),
    "custom": ("customType", "data"),
    "custom_message": ("customType", "content", "display", "details", "attribution"),
    "label": ("targetId", "label"),
    "ttsr_injection": ("injectedRules",),
    "session_init": ("systemPrompt", "task", "tools", "agent", "modelRole", "resolvedModel", "readOnly",
                     "outputSchema", "outputSchemaMode", "restrictToolNames", "spawns", "readSummarize",
                     "advisor", "isolated", "compactionThreshold"),
    "mode_change": ("mode", "data"),
    "title_change": ("title", "source", "previousTitle", "trigger"),
    "credential_pin": ("provider", "hash"),
    "model_usage": ("purpose", "role", "api", "provider", "model", "usage", "stopReason", "errorMessage"),
    "reset_boundary": (),
}.items()}
KNOWN_VERSION: Final = 3
SHOWN: Final = 5  # names listed in the finding; the rest are counted
_BLOCK: Final = 1024 * 1024
_KEYS = msgspec.json.Decoder(dict[str, msgspec.Raw])


_UNDECODABLE: Final = (msgspec.MsgspecError, UnicodeDecodeError, RecursionError)


def _type_of(raw: Any) -> Any:
    try:
        return msgspec.json.decode(raw) if raw is not None else None
    except _UNDECODABLE:
        return None


def _keys_of(j: Journal, i: int) -> Any:
    try:
        return _KEYS.decode(j.raw(i))
    except _UNDECODABLE:
        return None  # not an object, or not strict JSON: other checks report it


def newer_features(j: Journal, header: Any, report: Report,
                   ranges: Iterable[tuple[int, int]] | None = None) -> None:
    """Add one ``newer-omp-features`` finding when the file uses what no omp we know writes.

    ``ranges``: the (first, last) records to look at, when the others are known to hold only known
    keys (blocks the validator's strict types decoded); default every entry."""
    found: list[str] = []  # in file order, each name once
    first_at: int | None = None
    version = header.get("version") if isinstance(header, dict) else None
    # an integer only: a non-integer or infinite version is version-invalid, not a newer omp
    if (isinstance(version, int | float) and not isinstance(version, bool) and math.isfinite(version)
            and float(version).is_integer() and version > KNOWN_VERSION):
        found.append(f"header version {version:g}")
        first_at = j.start(0) if len(j) else None
    judged: dict[tuple[Any, ...], list[str]] = {}
    for lo, hi in [(1, len(j) - 1)] if ranges is None else ranges:
        first_at = _scan(j, lo, hi + 1, judged, found, first_at)
    if not found:
        return
    shown = ", ".join(found[:SHOWN]) + (f" and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
    report.add("newer-omp-features", f"written by an omp newer than {DEFAULT} (the newest we know)? "
               f"unknown to us: {shown}; loaded and kept as they are, but not understood",
               offset=first_at)


def _scan(j: Journal, lo: int, end: int, judged: dict[tuple[Any, ...], list[str]], found: list[str],
          first_at: int | None) -> int | None:
    """Records ``lo``..``end - 1`` into ``found``; returns the offset of the first record that added a name."""
    for i, b in j.runs(lo, end, _BLOCK):
        try:
            records: list[Any] = _KEYS.decode_lines(j.read(j.starts[i], j.ends[b]))
            if len(records) != b - i + 1:
                raise ValueError("records and lines differ")
        except (*_UNDECODABLE, ValueError):
            records = [_keys_of(j, k) for k in range(i, b + 1)]
        for k, keys in enumerate(records, i):
            if keys is None:
                continue
            kind = _type_of(keys.get("type"))
            if not isinstance(kind, str) or kind in ("session", "title"):
                continue  # a header or title slot out of place has findings of its own
            sig = (kind, *keys)
            names = judged.get(sig)
            if names is None:
                known = KNOWN_FIELDS.get(kind)
                if known is None:
                    names = [f"entry type {kind!r}"]
                else:
                    names = [f"field {kind}.{key}" for key in keys if key not in known]
                judged[sig] = names
            for name in names:
                if name not in found:
                    found.append(name)
                    if first_at is None:
                        first_at = j.start(k)
    return first_at
