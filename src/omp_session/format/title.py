"""The fixed-width title record on the first physical line (spec S1.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omp_session.js import codec

__all__ = ["TITLE_SLOT_BYTES", "TitleSlot", "build_title_slot", "parse_title_slot", "title_slot_record"]

TITLE_SLOT_BYTES = 256
_SOURCES = ("auto", "user")


@dataclass(frozen=True, slots=True)
class TitleSlot:
    title: str
    source: str | None
    updated_at: str

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title}
        if self.source is not None:
            out["source"] = self.source
        out["updatedAt"] = self.updated_at
        return out


def title_slot_record(value: Any) -> TitleSlot | None:
    """The slot a parsed first line holds, or None when it is not a valid slot.

    The byte width is deliberately not checked: omp does not check it on read (S1.2.5).
    """
    if not isinstance(value, dict) or value.get("type") != "title":
        return None
    v = value.get("v")
    if isinstance(v, bool) or not isinstance(v, int | float) or v != 1:
        return None
    title, updated, pad = value.get("title"), value.get("updatedAt"), value.get("pad")
    if not (isinstance(title, str) and isinstance(updated, str) and isinstance(pad, str)):
        return None
    if "source" in value:
        source = value["source"]
        if source not in _SOURCES or not isinstance(source, str):
            return None
    else:
        source = None
    return TitleSlot(title, source, updated)


def parse_title_slot(line: bytes | str) -> TitleSlot | None:
    """Recognise a title slot in the text of the first physical line (without its LF)."""
    if isinstance(line, bytes):
        if b'"title"' not in line:
            return None
        line = line.decode("utf-8", "replace")
    if '"title"' not in line:
        return None
    try:
        value = codec.loads(line)
    except ValueError:
        return None
    return title_slot_record(value)


def _slot_line(title: str, source: str | None, updated_at: str, pad: str) -> str:
    obj: dict[str, Any] = {"type": "title", "v": 1, "title": title}
    if source is not None:
        obj["source"] = source
    obj["updatedAt"] = updated_at
    obj["pad"] = pad
    text = codec.stringify(obj)
    assert text is not None
    return text + "\n"


def build_title_slot(title: str, source: str | None, updated_at: str) -> bytes:
    """The exactly-256-byte slot line omp writes, the title cut to the longest fitting prefix.

    The cut is measured on the serialized bytes (escapes count) and never splits a code point
    (S1.2.3, S1.2.4).
    """

    def size(n: int) -> int:
        return len(_slot_line(title[:n], source, updated_at, "").encode("utf-8", "surrogatepass"))

    keep = len(title)
    if size(keep) > TITLE_SLOT_BYTES:
        lo, hi = 0, keep  # size(lo) fits (or nothing does), size(hi) does not
        if size(0) > TITLE_SLOT_BYTES:
            raise ValueError("title slot metadata alone exceeds 256 bytes")
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if size(mid) <= TITLE_SLOT_BYTES:
                lo = mid
            else:
                hi = mid
        keep = lo
    cut = title[:keep]
    used = len(_slot_line(cut, source, updated_at, "").encode("utf-8"))
    return _slot_line(cut, source, updated_at, " " * (TITLE_SLOT_BYTES - used)).encode("utf-8")
