"""A session header holding a lone surrogate (omp writes it as an escape) is indexed, and the
other sessions stay searchable."""

from __future__ import annotations

from pathlib import Path

from omp_session.ops.search.query import search


def test_a_lone_surrogate_in_a_header_does_not_break_search(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    bucket = root / "-w"
    bucket.mkdir(parents=True)
    for name, cwd, word in (("a", "/w\\ud800", "alphaword"), ("b", "/w", "betaword")):
        (bucket / f"2026-01-01T00-00-00-000Z_{name}.jsonl").write_text(
            f'{{"type":"session","version":3,"id":"{name}\\udc00","timestamp":"2026-01-01T00:00:00.000Z",'
            f'"cwd":"{cwd}"}}\n'
            f'{{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
            f'"message":{{"role":"user","content":"find {word}","timestamp":1}}}}\n')
    index = tmp_path / "i.sqlite"
    for word in ("alphaword", "betaword"):
        result = search(word, index_path=index, root=root)
        assert len(result.hits) == 1, word
