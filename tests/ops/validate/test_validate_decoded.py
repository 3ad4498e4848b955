"""A record the session keeps decoded (a label or title ``show`` asked for, a sanitized or
resolved one) is checked as the session holds it, and the records around it in its block from
their bytes, as if nothing were decoded: the same findings, and only the decoded records read
one by one (their whole block was)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builders import assistant, entry, header, stamp, user, write_session
from omp_session.format.blobs import BlobStore
from omp_session.model.session import open_session
from omp_session.ops.validate import entries as validate_entries
from omp_session.ops.validate.check import validate

DATA = Path(__file__).parents[2] / "data"
FIXTURES = sorted([*(DATA / "validate").glob("*.jsonl"), *(DATA / "context" / "inputs").glob("*.jsonl")])


def _key(d: Any) -> tuple[Any, ...]:
    return (d.code, d.severity, d.line, d.offset, d.entry_id, d.message)


def _findings(path: Path, decode: Callable[[int], bool]) -> list[tuple[Any, ...]]:
    with open_session(path, blob_store=BlobStore(DATA / "validate" / "blobs")) as s:
        for k in range(len(s)):
            if decode(k):
                s.entry_at(k)
        return [_key(d) for d in validate(s)]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_findings_do_not_depend_on_what_was_decoded(path: Path) -> None:
    none = _findings(path, lambda k: False)
    assert _findings(path, lambda k: k % 3 == 1) == none
    assert _findings(path, lambda k: k % 7 == 0 or k % 7 == 4) == none
    assert _findings(path, lambda k: True) == none


def test_only_the_decoded_records_are_read_one_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    es: list[Any] = []
    parent = None
    for n in range(100):
        es += [entry(f"u{n}", parent, timestamp=stamp(1), message=user(f"q{n}")),
               entry(f"a{n}", f"u{n}", timestamp=stamp(2), message=assistant(f"a{n}"))]
        parent = f"a{n}"
    es.append(entry("l1", parent, type="label", timestamp=stamp(3), targetId="u3", label="here"))
    path = write_session(tmp_path / "s.jsonl", es, head=header("s1"))
    slow: list[int] = []
    real = validate_entries._Checker.slow

    def spy(self: Any, i: int) -> Any:
        slow.append(i)
        return real(self, i)

    monkeypatch.setattr(validate_entries._Checker, "slow", spy)
    with open_session(path, blob_store=BlobStore(tmp_path / "blobs")) as s:
        s.entry_at(50)
        s.labels()
        decoded = sorted(i for i in s.journal.values if i > 0)
        assert 51 in decoded and len(decoded) < 5
        assert [d.code for d in validate(s)] == ["leaf-not-message"]  # (the label is the last record)
    assert sorted(slow) == decoded
