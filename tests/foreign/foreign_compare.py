"""Comparing an omp session file we imported with the one omp's importer wrote for the same source.

Byte for byte, except what omp draws at random: the session id and time (header, file name, title
slot ``updatedAt``), and the ids and times of the ``title_change`` and ``custom``
(``foreign_session_import``) entries; those are compared with the random values replaced by
placeholders (the ``parentId`` pointing at a random id too).
"""

from __future__ import annotations

import json
import re
from typing import Any

RANDOM_ENTRY_TYPES = ("title_change", "custom")
FILE_NAME = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                       r"[0-9a-f]{12}\.jsonl\Z")


def random_ids(data: bytes) -> dict[str, str]:
    """The random ids of one imported file -> their placeholders (times are replaced where they
    stand: two of them often fall in the same millisecond)."""
    lines = data.split(b"\n")
    out = {json.loads(lines[1])["id"]: "<SESSION_ID>"}
    for raw in lines[2:]:
        if raw:
            entry = json.loads(raw)
            if entry.get("type") in RANDOM_ENTRY_TYPES:
                out[entry["id"]] = f"<{entry['type']}_ID>"
    return out


def _replace(value: Any, table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, list):
        return [_replace(v, table) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, table) for k, v in value.items()}
    return value


def _entry(entry: Any, table: dict[str, str]) -> Any:
    if isinstance(entry, dict):
        if entry.get("type") == "session":
            entry = {**entry, "timestamp": "<SESSION_TIME>"}
        elif entry.get("type") in RANDOM_ENTRY_TYPES:
            entry = {**entry, "timestamp": f"<{entry['type']}_TIME>"}
    return _replace(entry, table)


def file_differences(ours: bytes, omp: bytes) -> list[str]:
    """Where our file differs from omp's, beyond the random values (empty: the same)."""
    problems: list[str] = []
    a, b = ours.split(b"\n"), omp.split(b"\n")
    if len(a) != len(b):
        problems.append(f"{len(a) - 1} lines, omp wrote {len(b) - 1}")
    if len(a[0]) != 255 or len(b[0]) != 255:
        problems.append("title slot is not 256 bytes")
    ta, tb = random_ids(ours), random_ids(omp)
    for n, (x, y) in enumerate(zip(a, b, strict=False)):
        if x == y:
            continue
        try:
            px, py = json.loads(x), json.loads(y)
        except ValueError:
            problems.append(f"line {n + 1}: {x[:120]!r} != {y[:120]!r}")
            continue
        if n == 0:
            for slot in (px, py):
                slot.pop("pad", None)
                slot["updatedAt"] = "<TITLE_TIME>"
        elif n > 1 and px.get("type") not in RANDOM_ENTRY_TYPES:
            problems.append(f"line {n + 1} ({px.get('type')} {px.get('id')}): bytes differ:\n  ours {x[:300]!r}\n"
                            f"  omp  {y[:300]!r}")
            continue
        if _entry(px, ta) != _entry(py, tb):
            problems.append(f"line {n + 1}: {_entry(px, ta)} != {_entry(py, tb)}")
    return problems


def views_differences(ours: dict[str, Any], omp: dict[str, Any], ours_file: bytes, omp_file: bytes) -> list[str]:
    """Where omp's views of our file (header, entries, context, ...) differ from its views of its own."""
    def norm(views: dict[str, Any], table: dict[str, str]) -> dict[str, Any]:
        out = {k: _replace(v, table) for k, v in views.items()}
        out["header"] = _entry(views.get("header"), table)
        if isinstance(views.get("entries"), list):
            out["entries"] = [_entry(e, table) for e in views["entries"]]
        return out

    a, b = norm(ours, random_ids(ours_file)), norm(omp, random_ids(omp_file))
    return [f"view {k}: differs" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def canonical(data: bytes, root: str) -> bytes:
    """An imported file with omp's random values replaced by placeholders (where they stand) and the
    directory ``root`` by ``<ROOT>``: what golden files hold, and what two imports of one source
    must agree on. Lines without random values stay byte for byte."""
    lines = data.split(b"\n")
    ids = random_ids(data)
    out: list[bytes] = []
    for n, raw in enumerate(lines):
        if not raw:
            out.append(raw)
            continue
        if n == 0:
            slot = json.loads(raw)
            slot.pop("pad", None)
            slot["updatedAt"] = "<TITLE_TIME>"
            raw = json.dumps(slot, ensure_ascii=False, separators=(",", ":")).encode()
        elif n == 1 or json.loads(raw).get("type") in RANDOM_ENTRY_TYPES:
            raw = json.dumps(_entry(json.loads(raw), ids), ensure_ascii=False, separators=(",", ":")).encode()
        out.append(raw.replace(root.encode(), b"<ROOT>"))
    return b"\n".join(out)
