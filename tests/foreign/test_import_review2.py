"""Review of the import speed-up (issue 19): inputs where a fast path gave other bytes than omp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omp_session.foreign.convert_claude import convert_claude
from omp_session.foreign.filetimes import file_times
from omp_session.foreign.lines import entry_line
from omp_session.foreign.sources import ForeignSession


def _js_sum(*values: int) -> float:
    """``a + b + c + d`` in JavaScript: each literal parsed to a double, added left to right."""
    total = 0.0
    for v in values:
        total += float(v)
    return total


@pytest.mark.parametrize("tokens", [
    (2**65 + 4096, 2**65 + 4096, 2**65 + 4096, 0),  # past 64 bits: msgspec kept exact ints
    (2**60 + 64, 2**60 + 64, 2**60 + 64, 0),  # past 2**53, within 64 bits
    (2**53 - 1, 2**53 - 1, 2**53 - 1, 2**53 - 1),  # safe ints whose sum is rounded twice
])
def test_total_tokens_is_the_double_sum_omp_computes(tmp_path: Path, tokens: tuple[int, ...]) -> None:
    i, o, r, w = tokens
    expected = _js_sum(i, o, r, w)
    usage = {"input_tokens": i, "output_tokens": o, "cache_read_input_tokens": r,
             "cache_creation_input_tokens": w}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "assistant", "uuid": "a1", "cwd": "/p", "timestamp": "2025-01-01T00:00:00.000Z",
                                "message": {"model": "m", "usage": usage,
                                            "content": [{"type": "text", "text": "hi"}]}}) + "\n")
    info = ForeignSession(source="claude", id="s", path=str(path), cwd="/p", created_ms=0.0, modified_ms=0.0)
    for raw in (True, False):
        entries = convert_claude(info, raw_text=raw).entries
        message = next(e for e in entries if e["type"] == "message")
        line = json.loads(entry_line(message, None, s20=False), parse_int=float)  # as JSON.parse reads it
        assert line["message"]["usage"]["totalTokens"] == expected
        for key, value in zip(("input", "output", "cacheRead", "cacheWrite"), tokens, strict=True):
            assert line["message"]["usage"][key] == float(value)


def test_total_tokens_rounds_each_partial_sum(tmp_path: Path) -> None:
    # 2**53 + 1 is 2**53 in doubles, then - 1: omp writes 9007199254740991, not 9007199254740992
    test_total_tokens_is_the_double_sum_omp_computes(tmp_path, (2**53, 1, -1, 0))


_HUGE = "1" + "0" * 400  # JSON.parse: Infinity; msgspec: an exact int


def _assistant_line(extra: str, usage: str = "{}") -> bytes:
    return ('{"type":"assistant","uuid":"a1","cwd":"/p",' + extra + '"message":{"model":"m","usage":' + usage
            + ',"content":[{"type":"text","text":"hi"}]}}\n').encode()


def _convert(tmp_path: Path, data: bytes) -> list[dict[str, object]]:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    info = ForeignSession(source="claude", id="s", path=str(path), cwd="/p", created_ms=0.0, modified_ms=0.0)
    entries = convert_claude(info, raw_text=True).entries
    return [json.loads(entry_line(e, None, s20=False)) for e in entries]


def test_an_integer_literal_past_the_doubles_is_infinity_as_omp_reads_it(tmp_path: Path) -> None:
    # the time is not finite: the file's mtime stands in; the status is not finite: left out;
    # token counts not finite: 0 (numberField)
    path = tmp_path / "s.jsonl"
    lines = _convert(tmp_path, _assistant_line(f'"timestamp":{_HUGE},"apiErrorStatus":-{_HUGE},"error":"e",',
                                               f'{{"input_tokens":{_HUGE},"output_tokens":2}}'))
    mtime_ms = file_times(path).mtime_ms
    message = lines[-1]["message"]
    assert isinstance(message, dict)
    assert "errorStatus" not in message
    assert message["timestamp"] == mtime_ms
    assert message["usage"]["input"] == 0 and message["usage"]["totalTokens"] == 2


@pytest.mark.parametrize("literal", [str(2**1024 - 2**969), "-" + str(2**1024 - 2**969)])
def test_a_time_just_past_the_doubles_is_not_a_time(tmp_path: Path, literal: str) -> None:
    path = tmp_path / "s.jsonl"
    lines = _convert(tmp_path, _assistant_line(f'"timestamp":{literal},'))
    message = lines[-1]["message"]
    assert isinstance(message, dict)
    assert message["timestamp"] == file_times(path).mtime_ms
