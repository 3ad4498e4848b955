"""Reading a file a chunk at a time into one reused buffer gives exactly the records of
scanning its bytes in one piece, whatever the chunk size (lines longer than a chunk included)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session.format import reader


def snapshot(j: reader.Journal) -> tuple[Any, ...]:
    heads = [None if h is None else (h.role, h.provider, h.model) for h in j.heads]
    values = [repr(j.value(i)) for i in range(len(j))]
    # linear flags are not compared: 0 "says nothing", and a chunk boundary is one
    return (list(j.starts), list(j.ends), j.types, j.ids, j.parents, heads, values,
            [(m.start, m.end) for m in j.malformed], j.blob_offsets, j.slot, j.body_start, j.final_newline)


@pytest.mark.parametrize("chunk", [37, 1000, 64 * 1024])
def test_buffered_chunks_equal_one_piece(make_corpus: Callable[[int, int], Path], monkeypatch: pytest.MonkeyPatch,
                                         chunk: int) -> None:
    monkeypatch.setenv("OMP_SESSION_WORKERS", "1")
    paths = sorted(make_corpus(5, 60).glob("*.jsonl"))
    whole = {p: snapshot(reader.scan_bytes(p.read_bytes())) for p in paths}
    monkeypatch.setattr(reader, "_IN_MEMORY", 0)
    monkeypatch.setattr(reader, "_CHUNK", chunk)
    for path in paths:
        j = reader.scan_file(path)
        try:
            assert j.source.can_read_into or reader._PREADV is None
            assert snapshot(j) == whole[path], path.name
            assert all(j.parents[i] is j.ids[i - 1] for i in range(1, len(j)) if j.linear[i]), path.name
        finally:
            j.close()


@pytest.mark.parametrize("chunk", [64, 300, 1000])
def test_a_blob_reference_in_a_value_running_past_its_chunk_is_found(monkeypatch: pytest.MonkeyPatch,
                                                                      chunk: int) -> None:
    """The scan decodes a value spanning lines past the chunk it started in; the blob references
    in the part past the chunk are found all the same (found in review: the image stayed a
    reference, resolved or not depending on where the chunks were cut)."""
    ref = "blob:sha256:" + "ab" * 32
    lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}',
             '{"type":"message","id":"b","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",',
             '"pad":"' + "y" * 700 + '","message":{"role":"user","content":[{"type":"image","data":"' + ref
             + '","mimeType":"image/png"}],"timestamp":1}}',
             '{"type":"custom","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z","customType":"x"}']
    data = ("\n".join(lines) + "\n").encode()
    monkeypatch.setenv("OMP_SESSION_WORKERS", "1")
    monkeypatch.setattr(reader, "_CHUNK", chunk)
    j = reader.scan_bytes(data)
    assert j.blob_offsets == [data.index(ref.encode())]
    assert len(j) == 3 and j.values[1]["id"] == "b"
