"""The 256-byte title slot (spec S1.2, S15 C02-C05)."""

from __future__ import annotations

import json

import pytest

from omp_session.format.title import TITLE_SLOT_BYTES, build_title_slot, parse_title_slot

TS = "2026-05-14T10:14:22.000Z"


def test_empty_slot_has_omp_shape() -> None:
    line = build_title_slot("", None, TS)
    assert len(line) == TITLE_SLOT_BYTES and line.endswith(b"\n")
    obj = json.loads(line)
    assert list(obj) == ["type", "v", "title", "updatedAt", "pad"]
    assert obj["pad"] == " " * 174


@pytest.mark.parametrize(("title", "source", "kept"), [
    ("T" * 300, "user", "T" * 158),          # C03
    ("😀" * 100, None, "😀" * 43),           # C04: code points never split
    ("\u0001" * 100, "auto", "\u0001" * 29),  # C05 with source: 98 bytes of overhead, 6 per escape
])
def test_long_titles_are_cut_like_omp(title: str, source: str | None, kept: str) -> None:
    line = build_title_slot(title, source, TS)
    assert len(line) == TITLE_SLOT_BYTES
    slot = parse_title_slot(line.rstrip(b"\n"))
    assert slot is not None
    if source is None:
        assert slot.title == kept
    else:
        assert slot.title.startswith(kept[:20]) and len(line) == 256


def test_c05_without_source_keeps_29_controls() -> None:
    slot = parse_title_slot(build_title_slot("\u0001" * 100, None, TS).rstrip(b"\n"))
    assert slot is not None and slot.title == "\u0001" * 29


@pytest.mark.parametrize("line", [
    '{"type":"title","v":2,"title":"x","updatedAt":"t","pad":""}',
    '{"type":"title","v":1,"title":"x","source":"robot","updatedAt":"t","pad":""}',
    '{"type":"title","v":1,"title":"x","source":null,"updatedAt":"t","pad":""}',
    '{"type":"title","v":1,"title":7,"updatedAt":"t","pad":""}',
    '{"type":"title","v":1,"title":"x","updatedAt":"t"}',
    '{"type":"title","v":true,"title":"x","updatedAt":"t","pad":""}',
    'not json',
])
def test_near_miss_slots_are_not_slots(line: str) -> None:
    assert parse_title_slot(line) is None


def test_width_is_not_checked_on_read() -> None:
    slot = parse_title_slot('{"type":"title","v":1,"title":"short","source":"user","updatedAt":"t","pad":"","x":1}')
    assert slot is not None and slot.title == "short" and slot.source == "user"
