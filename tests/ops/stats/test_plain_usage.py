"""The stats fast path (ops/stats/plain_usage.py) gives the usage records and omp's totals the
full decode gives: on the generated corpus, and on assistant usages of every odd shape (strings,
booleans, null, huge or infinite numbers, missing fields, orchestration and premium parts)
mixed with plain ones, so that a total turning into a string midway is followed exactly."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omp_session.model import usage_plain
from omp_session.model.usage_plain import plain_assistant
from omp_session.ops.stats import report


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = report.read_file_usage(path).to_json()
    with monkeypatch.context() as m:
        m.setattr(usage_plain, "plain_reader", lambda s: lambda k: None)
        slow = report.read_file_usage(path).to_json()
    return fast, slow


def test_generated_sessions_agree(make_corpus: Callable[[int, int], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(make_corpus(3, 60).glob("*.jsonl"))
    assert files
    for path in files:
        fast, slow = _both(path, monkeypatch)
        assert _same(fast, slow), path.name


# JSON texts spliced into a usage: what json.dumps cannot write (1e400) is written as text
_NUMBER = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["1e400", "-1e400", "12345678901234567890123"]))
_ODD = st.sampled_from(['"12"', "true", "null", "[]", "{}", '"x"'])
_FIELD = st.one_of(_NUMBER, _NUMBER, _NUMBER, _ODD, st.just(None))  # None: the field is absent
_KEYS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")


@st.composite
def _usage(draw: st.DrawFn) -> str:
    parts = []
    for key in _KEYS:
        value = draw(_FIELD)
        if value is not None:
            parts.append(f'"{key}":{value if isinstance(value, str) else json.dumps(value)}')
    cost = draw(st.one_of(_FIELD, st.just("object")))
    if cost == "object":
        total = draw(_FIELD)
        parts.append('"cost":{' + ("" if total is None else f'"total":{total if isinstance(total, str) else json.dumps(total)}') + "}")
    elif cost is not None:
        parts.append(f'"cost":{cost if isinstance(cost, str) else json.dumps(cost)}')
    if draw(st.booleans()) and draw(st.booleans()):
        parts.append('"orchestration":{"input":' + draw(st.sampled_from(["1", '"2"', "null"])) + "}")
    if draw(st.booleans()) and draw(st.booleans()):
        parts.append('"premiumRequests":' + draw(st.sampled_from(["1", '"p"', "null", "0.5"])))
    return "{" + ",".join(parts) + "}"


_PLAIN = '{"input":10,"output":5,"cacheRead":1,"cacheWrite":0,"totalTokens":16,"cost":{"total":0.25}}'
# plain counts with the parts the fast path leaves to the full decode (one may turn a total into a string)
_PLAIN_AND = st.sampled_from([_PLAIN[:-1] + extra + "}" for extra in (
    ',"orchestration":{"input":"2"}', ',"orchestration":{"output":3}', ',"premiumRequests":"p"',
    ',"premiumRequests":1', ',"orchestration":null')])


@settings(max_examples=150, deadline=None)
@given(usages=st.lists(st.one_of(_usage(), _PLAIN_AND, st.just(_PLAIN), st.just(_PLAIN)), min_size=1, max_size=12),
       message_time=st.sampled_from(["1784982777969", '"x"', "null", "0"]))
def test_odd_usages_agree(usages: list[str], message_time: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}']
    parent = "null"
    for n, u in enumerate(usages):
        lines.append(f'{{"type":"message","id":"u{n}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{n % 10}.000Z",'
                     f'"message":{{"role":"user","content":"q","timestamp":1}}}}')
        lines.append(f'{{"type":"message","id":"a{n}","parentId":"u{n}","timestamp":"2026-01-01T00:00:0{n % 10}.500Z",'
                     f'"message":{{"role":"assistant","content":[{{"type":"text","text":"a"}}],"provider":"p",'
                     f'"model":"m","usage":{u},"stopReason":"stop","timestamp":{message_time}}}}}')
        parent = f'"a{n}"'
    path = tmp_path_factory.mktemp("odd") / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as mp:
        fast, slow = _both(path, mp)
    assert _same(fast, slow)
    # show's sums of the branch and of every entry (the side branch: every third assistant)
    import omp_session
    from omp_session.cli._render import _plain_numbers
    from omp_session.errors import ContextError
    from omp_session.model.usage import branch_and_all_usage

    def sums(numbers: Any) -> Any:
        try:
            return list(branch_and_all_usage(s.peek_entry, branch, every, numbers))
        except ContextError as e:
            return str(e)

    for keep in (False, True):  # numbers read from the entries' bytes, or kept by the scan
        with omp_session.open(path, usage=keep) as s:
            every = list(range(len(s)))
            branch = [k for k in every if k % 3]
            assert _same(sums(_plain_numbers(s)), sums(None))


def test_only_the_plain_shape_is_taken() -> None:
    entry = '{"type":"message","id":"a","timestamp":"t","message":{"role":"assistant","usage":%s,"content":[]}}'
    assert plain_assistant((entry % _PLAIN).encode()) is not None
    for odd in ('{"input":1}', "null", '{"input":1,"output":1,"cacheRead":1,"cacheWrite":1,"totalTokens":1,'
                '"cost":{"total":"1"}}', _PLAIN[:-1] + ',"premiumRequests":1}', _PLAIN[:-1] + ',"orchestration":{}}',
                _PLAIN.replace("10", "true")):
        assert plain_assistant((entry % odd).encode()) is None, odd
    assert plain_assistant(b'{"type":"message","message":"text"}') is None
    assert plain_assistant(b"[1]") is None


def test_a_task_result_whose_name_is_escaped_is_counted(tmp_path: Path) -> None:
    """omp sums a tool result whose toolName JSON.parse reads as "task", however it is spelled."""
    import omp_session
    from omp_session.model.session import usage_or_model_candidates
    from omp_session.model.usage import usage_statistics

    task_usage = '{"input":7,"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":10,"cost":{"total":0.5}}'
    lines = [
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}',
        '{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"run the \\"task\\" tool","timestamp":1}}',
        '{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":'
        '{"role":"assistant","content":[],"provider":"p","model":"m","usage":' + _PLAIN + ',"timestamp":2}}',
        '{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","message":'
        '{"role":"toolResult","toolCallId":"c1","toolName":"t\\u0061sk","content":[],"details":{"usage":'
        + task_usage + '},"timestamp":3}}',
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with omp_session.open(path) as s:
        assert list(usage_or_model_candidates(s)) == [0, 1, 1]  # the user's "task" is no candidate
        want = usage_statistics([s.entry_at(k) for k in range(len(s))])
    assert want["input"] == 17
    got = report.read_file_usage(path)
    assert got.omp_usage == want
    assert [r.kind for r in got.records] == ["assistant", "task"]


@pytest.mark.parametrize("field", [*_KEYS, "cost"])
@pytest.mark.parametrize("huge", ["12345678901234567890123", "-12345678901234567890123", "18446744073709551616"])
def test_an_integer_beyond_64_bits_is_read_as_the_full_decode_reads_it(field: str, huge: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # msgspec keeps an integer of any size; orjson (and the exact decoder after it) give a float
    # beyond 64 bits, as omp's JSON.parse gives a double
    usage = json.loads(_PLAIN)
    if field == "cost":
        usage["cost"]["total"] = "HUGE"
    else:
        usage[field] = "HUGE"
    text = json.dumps(usage, separators=(",", ":")).replace('"HUGE"', huge)
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
        '{"type":"message","id":"a0","parentId":null,"timestamp":"2026-01-01T00:00:00.500Z","message":'
        '{"role":"assistant","content":[{"type":"text","text":"a"}],"provider":"p","model":"m","usage":'
        + text + ',"stopReason":"stop","timestamp":1}}\n')
    fast, slow = _both(path, monkeypatch)
    assert _same(fast, slow)
    assert plain_assistant(path.read_bytes().splitlines()[1]) is None


def test_the_reader_shares_each_name_and_keeps_equal_keys_apart(tmp_path: Path) -> None:
    """One object per provider and model name (a forked reader pickles each once); a model
    ``true`` and a model ``1`` are equal dict keys, and each stays what its entry says."""
    from builders import assistant, entry, header, write_session
    from omp_session.model.session import open_session

    entries = [entry(f"a{k}", f"a{k - 1}" if k else None, message=assistant("hi", model=m))
               for k, m in enumerate(["claude-x", "claude-x", "gpt-y"])]
    odd = [entry(f"b{k}", "a2", message={**assistant("hi"), "model": m, "provider": m})
           for k, m in enumerate([True, 1, 1.0])]
    path = write_session(tmp_path / "s.jsonl", [*entries, *odd], head=header("s"))
    with open_session(path) as s:
        read = usage_plain.plain_reader(s)
        got = [read(k) for k in range(len(s))]
    assert all(p is not None for p in got)
    models = [p.model for p in got if p is not None]
    assert models[0] == "claude-x" and models[1] is models[0] and models[2] == "gpt-y"
    odd_models = [(type(m), m) for m in models[3:]]
    assert odd_models == [(bool, True), (int, 1), (float, 1.0)]
    assert [type(p.provider) for p in got[3:] if p is not None] == [bool, int, float]
