"""The validator's strict fast path (validate_fast.py) must report exactly what the detailed path
reports: on every fixture, on the generated corpus, and on fixtures mutated field by field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.ops.validate import entries as validate_entries
from omp_session.ops.validate.check import validate
from omp_session.ops.validate.fast import decode_clean

DATA = Path(__file__).parents[2] / "data" / "validate"
BLOBS = DATA / "blobs"


def both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    def key(d: Any) -> tuple[Any, ...]:
        return (d.code, d.severity, d.line, d.offset, d.entry_id, d.message)

    fast = [key(d) for d in validate(path, blobs_dir=BLOBS)]
    with monkeypatch.context() as m:
        m.setattr(validate_entries, "decode_clean", lambda data, count: None)
        slow = [key(d) for d in validate(path, blobs_dir=BLOBS)]
    return fast, slow


@pytest.mark.parametrize("path", sorted(DATA.glob("*.jsonl")), ids=lambda p: p.name)
def test_fixtures_agree(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = both(path, monkeypatch)
    assert fast == slow


def test_generated_corpus_agrees(make_corpus: Callable[[int, int], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(make_corpus(7, 120).glob("*.jsonl"))
    assert len(files) >= 100
    for path in files:
        fast, slow = both(path, monkeypatch)
        assert fast == slow, path.name


def test_clean_records_take_the_fast_path() -> None:
    lines = (DATA / "clean.jsonl").read_bytes().splitlines()
    records = [ln for ln in lines if b'"type":"session"' not in ln and b'"type":"title"' not in ln]
    assert decode_clean(b"\n".join(records), len(records)) is not None


_ENTRY = {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
          "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "x"}],
                      "usage": {"cost": {"total": 1}}, "stopReason": "toolUse"}}
_PATHS = [("id",), ("parentId",), ("timestamp",), ("type",), ("message",), ("message", "role"),
          ("message", "content"), ("message", "usage"), ("message", "usage", "cost"),
          ("message", "usage", "cost", "total")]
_VALUES = [None, "", "x", 0, 1.5, True, [], {}, ["s"], "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000Z",
           "toolResult", "user", "label", "compaction", "custom_message", "model_change", "ttsr_injection",
           "\u0661\u0662\u0663\u0664-01-01T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-02-31T24:00:00.000Z"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_PATHS), st.sampled_from([*_VALUES, "DELETE"])), min_size=1,
                max_size=3))
def test_mutated_entries_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               edits: list[tuple[tuple[str, ...], Any]]) -> None:
    entry = json.loads(json.dumps(_ENTRY))
    for path, value in edits:
        target = entry
        for k in path[:-1]:
            target = target.get(k) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            continue
        if value == "DELETE":
            target.pop(path[-1], None)
        else:
            target[path[-1]] = json.loads(json.dumps(value))  # a copy: _VALUES holds mutable {} and []
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in (header, entry)))
    fast, slow = both(p, monkeypatch)
    assert fast == slow


def test_each_entry_type_declares_exactly_the_keys_omp_writes() -> None:
    """A block the strict types decode is proof that no record in it has a newer omp's key (the
    newer-features pass skips it), so each entry struct must know every key omp writes, and no more."""
    import typing

    from omp_session.ops.validate import fast
    from omp_session.ops.validate.newer import KNOWN_FIELDS

    declared = {t.__struct_config__.tag: {*t.__struct_fields__, "type"} for t in typing.get_args(fast._DECODER.type)}
    assert declared == {k: set(v) for k, v in KNOWN_FIELDS.items()}
    assert all(t.__struct_config__.forbid_unknown_fields for t in typing.get_args(fast._DECODER.type))


def test_a_newer_key_deep_in_a_clean_file_is_found_where_it_is(tmp_path: Path) -> None:
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": "/w"})]
    parent = None
    for k in range(3000):  # about 3 MB: several of the validator's 1 MiB blocks
        e: dict[str, Any] = {"type": "message", "id": f"m{k}", "parentId": parent,
                             "timestamp": "2026-01-01T00:00:00.000Z",
                             "message": {"role": "user", "content": "x" * 1000, "timestamp": 1}}
        if k == 2100:
            e["mood"] = "curious"
        lines.append(json.dumps(e))
        parent = e["id"]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found = [d for d in validate(path) if d.code == "newer-omp-features"]
    assert len(found) == 1 and "field message.mood" in found[0].message
    assert found[0].line == 2102
