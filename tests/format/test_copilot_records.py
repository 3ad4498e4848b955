"""``copilot_records`` finds, from the envelope heads alone, exactly the records whose decoded
message is a GitHub Copilot assistant's (the ones omp sanitizes on open)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session.format import reader
from omp_session.format import split as scan_split


def by_value(j: reader.Journal) -> list[int]:
    def copilot(value: Any) -> bool:
        message = value.get("message") if isinstance(value, dict) else None
        return (isinstance(message, dict) and message.get("role") == "assistant"
                and message.get("provider") == "github-copilot")

    return [i for i in range(len(j)) if copilot(j.value(i))]


def message(i: int, provider: Any, model: Any = "m", role: Any = "assistant") -> str:
    return json.dumps({"type": "message", "id": f"e{i}", "parentId": f"e{i - 1}" if i else None,
                       "message": {"role": role, "provider": provider, "model": model, "content": []}})


LINES = [
    '{"type":"session","id":"s","version":3}',
    message(0, "github-copilot"),
    message(1, "openai"),
    message(2, "github-copilot", role="user"),
    message(3, "github-copilot", model=["unhashable"]),  # a head that cannot be shared
    message(4, "github-copilot", model={"x": 1}),
    '{"type":"message","id":"e5","parentId":"e4","message":{"role":"assistant","provider":"github\\u002dcopilot"}}',
    '{"type":"message","id":"e6","message":{"provider":"github-copilot","role":"assistant","provider":"x"}}',
    '{"type":"message","id":"e7","message":{"provider":"x","role":"assistant","provider":"github-copilot"}}',
    '{"type":"message","id":"e8",\n"message":{"role":"assistant","provider":"github-copilot"}}',  # spans lines
    '{"type":"note","id":"e9","note":"github-copilot"}',
    message(10, "github-copilot"),
]


@pytest.mark.parametrize("drop", [(), (4, 5), (4, 5, 9)])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_heads_find_what_decoding_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drop: tuple[int, ...],
                                         workers: str) -> None:
    monkeypatch.setattr(scan_split, "MIN_SPLIT_SIZE", 0)
    monkeypatch.setenv("OMP_SESSION_WORKERS", workers)
    lines = [line for k, line in enumerate(LINES) if k not in drop]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines * 30) + "\n")
    j = reader.scan_file(path)
    expected = by_value(j)
    assert expected
    assert reader.copilot_records(j) == expected


def test_on_every_corpus_kind(make_corpus: Callable[[int, int], Path]) -> None:
    for path in sorted(make_corpus(5, 60).glob("*.jsonl")):
        j = reader.scan_file(path)
        assert reader.copilot_records(j) == by_value(j), path.name
