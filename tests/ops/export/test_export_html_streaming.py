"""The HTML page is written in pieces (issue 16 item 2): the entries' bytes are copied one at a
time into the page, never held together; the page is the one the whole-page renderer makes.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import assistant, entry, tool_result, usage, user, write_session
from omp_session.cli.export import export as export_command
from omp_session.errors import EntryNotFoundError
from omp_session.js import codec
from omp_session.model.session import open_session
from omp_session.ops.export.html import (
    DATA_ELEMENT_ID,
    embed_json,
    render_html_bytes,
    render_html_pieces,
    viewer_data,
)

DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE = Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" / "sample.jsonl"
FILES = [SAMPLE, *sorted((DATA / "repair").glob("*.jsonl")), *sorted((DATA / "context" / "inputs").glob("*.jsonl"))[:40]]


def _data_block(page: bytes) -> bytes:
    m = re.search(rb'<script type="application/json" id="' + DATA_ELEMENT_ID.encode() + rb'">(.*?)</script>', page,
                  re.S)
    assert m is not None
    return m.group(1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_pieces_make_the_page_of_the_loaded_entries(path: Path) -> None:
    with open_session(path) as s:
        if s.header is None:
            return
        page = b"".join(render_html_pieces(s, subagents=False))
        assert page == render_html_bytes(s, subagents=False)
        data = viewer_data(s)
        entries = [s.entry_at(k) for k in range(len(s))]
    block = _data_block(page)
    # the data block is the viewer's data, embedded: "<" and U+2028/9 escaped, nothing else changed
    assert codec.loads(block.decode("utf-8", "replace")) == data
    assert data["entries"] == json.loads(json.dumps(entries, default=str)) or s.migrated
    assert b"</" not in block


def _big(tmp_path: Path, turns: int = 800, size: int = 6000) -> Path:
    entries, parent = [], None
    for n in range(turns):
        entries.append(entry(f"u{n}", parent, message=user(f"question {n} <b>" + "x" * size)))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n} \u2028" + "é" * size,
                                                                 usage=usage(n, 2 * n, 0.01))))
        entries.append(entry(f"t{n}", f"a{n}", message=tool_result("out " + "y" * size)))
        parent = f"t{n}"
    return write_session(tmp_path / "big.jsonl", entries)


def test_pieces_are_small_and_no_entry_is_kept_decoded(tmp_path: Path) -> None:
    path = _big(tmp_path, turns=300)
    with open_session(path) as s:
        before = len(s.journal.values)
        pieces = list(render_html_pieces(s, subagents=False))
        assert len(s.journal.values) <= before + 2
    assert len(pieces) > 5
    assert max(len(p) for p in pieces) < 2 * 1024 * 1024 + 100_000
    page = b"".join(pieces)
    lines = path.read_bytes().splitlines()[1:]
    # each entry's own line, embedded, in file order, comma-separated
    embedded = b",".join(embed_json(line.decode()).encode() for line in lines)
    assert b'"entries":[' + embedded + b"]}</script>" in page


def test_peak_memory_is_far_below_the_session(tmp_path: Path) -> None:
    path = _big(tmp_path)
    size = path.stat().st_size
    assert size > 15_000_000
    with open_session(path) as s:
        tracemalloc.start()
        try:
            written = sum(len(p) for p in render_html_pieces(s, subagents=False))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert written > size
    assert peak < size // 4, (peak, size)


def test_an_unknown_leaf_is_refused_before_any_piece(tmp_path: Path) -> None:
    path = _big(tmp_path, turns=2)
    with open_session(path) as s, pytest.raises(EntryNotFoundError):
        render_html_pieces(s, leaf="nope")  # not iterated: the refusal comes from the call
    out = tmp_path / "page.html"
    r = CliRunner().invoke(export_command, [str(path), "--format", "html", "--leaf", "nope", "-o", str(out)])
    assert r.exit_code == 1 and not out.exists()


def test_cli_file_and_stdout_are_the_page(tmp_path: Path) -> None:
    path = _big(tmp_path, turns=40)
    out = tmp_path / "page.html"
    r = CliRunner().invoke(export_command, [str(path), "--format", "html", "-o", str(out)])
    assert r.exit_code == 0, r.output
    with open_session(path) as s:
        page = render_html_bytes(s)
    assert out.read_bytes() == page
    r = CliRunner().invoke(export_command, [str(path), "--format", "html"])
    assert r.exit_code == 0 and r.stdout_bytes == page


def test_task_results_are_found_however_their_name_is_spelled(tmp_path: Path) -> None:
    """The page links a task result to its agents' transcripts; a toolName JSON spells with an
    escaped letter is still "task" (omp's JSON.parse reads it so), and a user message that only
    mentions "task" and "toolResult" names no agent."""
    import omp_session
    from omp_session.ops.export.html import _Document

    lines = [
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}',
        '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"the \\"task\\" toolResult","timestamp":1}}',
        '{"type":"message","id":"t1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":'
        '{"role":"toolResult","toolCallId":"c1","toolName":"t\\u0061sk","content":[],'
        '"details":{"results":[{"id":"AgentA"}]},"timestamp":2}}',
        '{"type":"message","id":"t2","parentId":"t1","timestamp":"2026-01-01T00:00:03.000Z","message":'
        '{"role":"toolResult","toolCallId":"c2","toolName":"task","content":[],'
        '"details":{"results":[{"id":"AgentB"}]},"timestamp":3}}',
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with omp_session.open(path) as s:
        assert _Document(s, None, None).task_refs == {"AgentA": [1], "AgentB": [2]}
