"""Blob references are resolved on decode for exactly the records that hold one: the session
takes them from the offsets the reader found while scanning (model/session.py), not by searching
each record's bytes again. Checked against that search on mutated files with references planted
in random records, with chunks small enough that lines, multi-line values and long lines cross
chunk boundaries."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.fuzz import campaign
from tests.fuzz.mutate import Seed, make_case

from omp_session.format import reader
from omp_session.format.blobs import MemoryBlobStore
from omp_session.format.reader import scan_bytes
from omp_session.model.session import Session

_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
_SHA = hashlib.sha256(_PNG).hexdigest()
_REF = f"blob:sha256:{_SHA}".encode()


@pytest.fixture(scope="module")
def seeds(make_corpus: Callable[[int, int], Path]) -> list[Seed]:
    return campaign.seeds_from(campaign.golden_paths() + sorted(make_corpus(9, 20).glob("*.jsonl")),
                               max_size=1 << 19)


def _plant(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    for _ in range(3):
        k = rng.randrange(len(lines))
        at = lines[k].find(b'"text":"')
        if at >= 0:
            lines[k] = lines[k][:at + 8] + _REF + lines[k][at + 8:]
    return b"\n".join(lines)


@pytest.mark.parametrize("chunk", [1 << 20, 4096, 300])
def test_every_record_decoded_later_that_holds_a_reference_was_found_by_the_scan(
        seeds: list[Seed], chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "_CHUNK", chunk)
    planted = 0
    for number in range(120):
        data = _plant(make_case(seeds, 21, number).data, random.Random(number))
        j = scan_bytes(data)
        # what the decode hook used to search each record's bytes for
        holding = {i for i in range(1, len(j)) if i not in j.values and b"blob:sha256:" in j.raw(i)}
        found = {i for i in map(j.record_at, j.blob_offsets) if i is not None}
        assert holding <= found, number
        planted += len(holding)
    assert planted > 30


def test_a_reference_in_a_record_decoded_later_is_resolved() -> None:
    store = MemoryBlobStore()
    store.put(_PNG)
    image = b'{"type":"image","data":"' + _REF + b'","mimeType":"image/png"}'
    data = (b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
            b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
            b'"message":{"role":"user","content":[' + image + b'],"timestamp":1}}\n'
            b'{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z",'
            b'"message":{"role":"user","content":"blob:sha256: is only text here","timestamp":1}}\n')
    s = Session(scan_bytes(data), None, store)
    block = s.peek_entry(0)["message"]["content"][0]
    assert block["data"] != _REF.decode() and not block["data"].startswith("blob:")
    assert s.peek_entry(1)["message"]["content"] == "blob:sha256: is only text here"
