"""Snapcompact archives: the runtime-only blocks omp re-attaches to compaction summaries.

A snapcompact compaction keeps its transcript as text edges plus archived image
frames in ``preserveData.snapcompact``; omp renders them back as text/image
blocks within a per-request byte budget, with notices for frames it leaves out.
"""

from __future__ import annotations

import binascii
import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

from omp_session.js.codec import UNDEFINED
from omp_session.js.date import js_number_string
from omp_session.js.value import JS_S, JS_SPACE_SET, get_opt, is_number, is_undef, truthy, utf16_len

__all__ = [
    "SNAP_FRAME_BUDGET",
    "FrameDataResolver",
    "blob_frame_resolver",
    "default_frame_data",
    "history_blocks",
    "is_crash_risk_legacy_archive",
    "preserved_archive",
]

FrameDataResolver = Callable[[str], "tuple[int, Callable[[], str]] | None"]
"""Prices and resolves a snapcompact frame payload: ``data -> (base64 length, read) | None``.

omp passes its blob store here (``lazyImageDataSync``): a ``blob:sha256:<hex>``
reference resolves to ``(ceil(size / 3) * 4, read-as-base64)`` or ``None`` when
the blob is missing or the reference malformed; other data is ``(len, data)``.
The default behaves like an empty blob store.
"""

SNAP_FRAME_BUDGET: Final = 3_000_000
_SNAP_LEGACY_FRAME_COUNT: Final = 16
_SNAP_LEGACY_TEXT: Final = 250_000
_SNAP_LEGACY_TRUNCATED: Final = 1_000_000
_NEWLINE_GLYPH: Final = "\u2588"
_BLOB_PREFIX: Final = "blob:sha256:"
_MARKER: Final = r"\[(?:…|\.{3})[0-9]+ch elided(?:…|\.{3})\]"
_MEDIA_TOKEN: Final = r"[A-Za-z0-9_!#$%&'*+.^|~-]+"
_DATA_URL_ATOM: Final = re.compile(
    r"data:([A-Za-z][A-Za-z0-9_.+-]*/[A-Za-z0-9_.+-]+(?:;" + _MEDIA_TOKEN + "=" + _MEDIA_TOKEN + r")*);base64,"
    r"([A-Za-z0-9+/=]*(?:" + JS_S + "*" + _MARKER + JS_S + r"*[A-Za-z0-9+/=]*)?)"
    r"(" + JS_S + r"*\))?",
    re.IGNORECASE | re.ASCII,
)
_ELIDED_MARKER: Final = re.compile(JS_S + "*" + _MARKER + JS_S + "*")
_BASE64_FLAG: Final = re.compile(";base64,", re.IGNORECASE | re.ASCII)


def default_frame_data(data: str) -> tuple[int, Callable[[], str]] | None:
    if data.startswith(_BLOB_PREFIX):
        return None  # no blob store here: a reference cannot be resolved
    return utf16_len(data), lambda: data


_BLOB_HASH: Final = re.compile("[a-f0-9]{64}")


def blob_frame_resolver(get: Callable[[str], bytes | None]) -> FrameDataResolver:
    """A :data:`FrameDataResolver` over a blob store's ``get(sha256_hex) -> bytes | None``.

    Mirrors omp's ``lazyImageDataSync``: a well-formed ``blob:sha256:<hex>``
    reference to a stored blob is priced at its base64 length and read as
    base64; a missing blob or malformed reference is unavailable; any other
    string is inline data.
    """
    def resolve(data: str) -> tuple[int, Callable[[], str]] | None:
        if not data.startswith(_BLOB_PREFIX):
            return utf16_len(data), lambda: data
        sha = data[len(_BLOB_PREFIX):]
        blob = get(sha) if _BLOB_HASH.fullmatch(sha) else None
        if blob is None:
            return None
        return (len(blob) + 2) // 3 * 4, lambda: binascii.b2a_base64(blob, newline=False).decode("ascii")
    return resolve


def preserved_archive(preserve: Any) -> dict[str, Any] | None:
    candidate = get_opt(preserve, "snapcompact")
    if not isinstance(candidate, dict):
        return None  # arrays pass omp's typeof check but carry none of the fields
    raw_frames = candidate.get("frames")
    frames = [frame for frame in raw_frames if _valid_frame(frame)] if isinstance(raw_frames, list) else []
    archive: dict[str, Any] = {"frames": frames}
    for name in ("totalChars", "truncatedChars"):
        value = candidate.get(name)
        archive[name] = value if is_number(value) else 0
    for name in ("text", "textHead", "textTail"):
        value = candidate.get(name)
        if isinstance(value, str) and value:
            archive[name] = value
    if not frames and not any(name in archive for name in ("text", "textHead", "textTail")):
        return None
    return archive


def _valid_frame(frame: Any) -> bool:
    if not isinstance(frame, dict):
        return False
    data = frame.get("data")
    return (isinstance(data, str) and len(data) > 0 and isinstance(frame.get("mimeType"), str)
            and all(is_number(frame.get(name)) for name in ("cols", "rows", "chars")))


def _to_plain_text(text: str) -> str:
    return text.replace("\x0e", "").replace("\x0f", "").replace(_NEWLINE_GLYPH, "\n")


def _markdown_opener_start(text: str, data_index: int, cursor: int) -> int | None:
    i = data_index
    while i > cursor and text[i - 1] in JS_SPACE_SET:
        i -= 1
    if i - 2 < cursor or text[i - 1] != "(" or text[i - 2] != "]":
        return None
    opener = -1
    for j in range(i - 3, cursor - 1, -1):
        c = text[j]
        if c == "]" or c == "\n":
            break
        if c == "[":
            opener = j
    if opener < 0:
        return None
    return opener - 1 if opener > cursor and text[opener - 1] == "!" else opener


def _elide_archive_data_urls(text: str) -> str:
    """Replace every inline base64 data URL (archive text: always treated as damaged)."""
    if not _BASE64_FLAG.search(text):
        return text
    out: list[str] = []
    cursor = 0
    for match in _DATA_URL_ATOM.finditer(text):
        url_start, url_end = match.start(), match.end()
        mime = match.group(1) or ""
        payload = match.group(2) or ""
        closer = match.group(3)
        marker = _ELIDED_MARKER.search(payload)
        if marker:
            digits = re.search("[0-9]+", marker.group(0))
            count: float = len(payload) - len(marker.group(0)) + float(digits.group(0) if digits else 0)
        else:
            count = len(payload)
        placeholder = f"[data URL omitted: {mime}, {js_number_string(count)} base64 chars]"
        found = _markdown_opener_start(text, url_start, cursor)
        opener_start = found if found is not None and found >= cursor else None
        emit_start = opener_start if opener_start is not None else url_start
        out.append(text[cursor:emit_start])
        if opener_start is not None and closer is not None:
            out.append(placeholder)
        else:
            out.append(text[opener_start:url_start] if opener_start is not None else "")
            out.append(placeholder)
            out.append(closer or "")
        cursor = url_end
    out.append(text[cursor:])
    return "".join(out)


def _archive_source_text(archive: dict[str, Any]) -> str | None:
    text = archive.get("text")
    if text is None:
        text = _NEWLINE_GLYPH.join(part for part in (archive.get("textHead"), archive.get("textTail")) if part)
    return _elide_archive_data_urls(_to_plain_text(text)) if text else None


def _frame_data_bytes(frames: list[dict[str, Any]], resolve: FrameDataResolver) -> int:
    total = 0
    for frame in frames:
        lazy = resolve(frame["data"])
        total += lazy[0] if lazy is not None else utf16_len(frame["data"])
    return total


def is_crash_risk_legacy_archive(archive: dict[str, Any], resolve: FrameDataResolver) -> bool:
    frames = archive["frames"]
    if not any(is_undef(frame.get("font", UNDEFINED)) and is_undef(frame.get("variant", UNDEFINED))
               for frame in frames):
        return False
    many = len(frames) >= _SNAP_LEGACY_FRAME_COUNT
    if not (many or _frame_data_bytes(frames, resolve) >= SNAP_FRAME_BUDGET):
        return False
    source = _archive_source_text(archive)
    return (many or archive["truncatedChars"] >= _SNAP_LEGACY_TRUNCATED
            or utf16_len(source or "") >= _SNAP_LEGACY_TEXT)


def _to_fixed_1(value: float) -> str:
    if not math.isfinite(value) or abs(value) >= 1e21:
        return js_number_string(value)
    return str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _format_frame_bytes(count: float) -> str:
    if count >= 1_000_000:
        return f"{_to_fixed_1(count / 1_000_000)} MB"
    if count >= 1_000:
        return f"{_to_fixed_1(count / 1_000)} KB"
    return f"{js_number_string(count)} B"


def _gap_notice(kind: str, frames: int, omitted_bytes: float) -> str:
    plural = "" if frames == 1 else "s"
    if kind == "unavailable":
        return f"-------------- {frames:,} archived image frame{plural} unavailable here --------------"
    budget = (f" {_format_frame_bytes(omitted_bytes)} of base64 exceeded the per-request snapcompact payload"
              " budget.") if omitted_bytes > 0 else ""
    return "\n".join((
        "-------------- snapcompact image middle omitted",
        f"{frames:,} archived image frame{plural} could not be included.{budget} The compacted summary and"
        " visible text edges remain available.",
        "--------------",
    ))


def history_blocks(archive: dict[str, Any], max_bytes: int | None,
                   resolve: FrameDataResolver) -> list[dict[str, Any]]:
    # Newest frames get the byte budget first; gaps keep their chronological place.
    used = 0
    slots: list[tuple[str, Any, Any]] = []
    for frame in reversed(archive["frames"]):
        lazy = resolve(frame["data"])
        if lazy is None:
            slots.append(("unavailable", None, 0))
            continue
        size, read = lazy
        if max_bytes is not None and used + size > max_bytes:
            slots.append(("budget", None, size))
            continue
        used += size
        slots.append(("frame", frame, read()))
    slots.reverse()

    middle: list[dict[str, Any]] = []
    gap: str | None = None
    gap_frames = 0
    gap_bytes: float = 0

    def flush() -> None:
        nonlocal gap, gap_frames, gap_bytes
        if gap is not None:
            middle.append({"type": "text", "text": _gap_notice(gap, gap_frames, gap_bytes)})
        gap, gap_frames, gap_bytes = None, 0, 0

    for kind, frame, extra in slots:
        if kind == "frame":
            flush()
            image: dict[str, Any] = {"type": "image", "data": extra, "mimeType": frame["mimeType"]}
            detail = frame.get("detail", UNDEFINED)
            if truthy(detail):
                image["detail"] = detail
            middle.append(image)
            continue
        if gap is not None and gap != kind:
            flush()
        gap = kind
        gap_frames += 1
        if kind == "budget":
            gap_bytes += extra
    flush()

    has_images = any(block["type"] == "image" for block in middle)
    has_omitted = any(block["type"] == "text" for block in middle)
    blocks: list[dict[str, Any]] = []
    head = archive.get("textHead")
    if head:
        suffix = "\n-------------- imaged middle below\n" if has_images else ""
        blocks.append({"type": "text", "text": _elide_archive_data_urls(_to_plain_text(head)) + suffix})
    blocks.extend(middle)
    tail = archive.get("textTail")
    if tail:
        if has_images:
            prefix = "-------------- imaged middle above\n"
        elif archive["truncatedChars"] > 0 or has_omitted:
            prefix = "\n-------------- middle history omitted above\n"
        else:
            prefix = ""
        tail_text = prefix + _elide_archive_data_urls(_to_plain_text(tail))
        if blocks and blocks[-1]["type"] == "text":
            blocks[-1]["text"] += tail_text
        else:
            blocks.append({"type": "text", "text": tail_text})
    return blocks
