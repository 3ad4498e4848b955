"""redact streams (issue 16 item 2): records in, records out, in bounded memory, and a record the
prefilter lets through unwalked is one the walk would not have changed.

The reference is the walk over every record (the prefilter switched off), which is what redact
did before it streamed: same bytes, same report.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_redact_planted import BUILTIN, ENCODINGS, PLACES, SID, _entries, corpus

import builders
from builders import assistant, entry, tool_result, user
from omp_session.errors import RedactError
from omp_session.js import codec
from omp_session.model.session import open_session
from omp_session.ops.redact import prefilter as prefilter_module
from omp_session.ops.redact.detectors import Matcher
from omp_session.ops.redact.prefilter import Prefilter
from omp_session.ops.redact.rewrite import (
    RedactRules,
    _escaped,
    _literal_texts,
    _literals,
    _Redactor,
    build_matcher,
    redact,
    redact_to,
)

DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE = Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" / "sample.jsonl"
RULE_SETS = {
    "builtin": RedactRules(),
    "paths-and-drops": RedactRules(paths=True, home="/home/u", drop_images=True, drop_thinking=True,
                                   drop_tool_output=True, drop_custom=True),
    "paths": RedactRules(paths=True, home="/home/u"),
    "user-rules": RedactRules(secrets=["hunter2hunter2"], patterns=[r"(?P<secret>ticket-\d+)"]),
    "no-builtin": RedactRules(builtin=False, paths=True, home="/home/u"),
}


@contextmanager
def walk_everything() -> Iterator[None]:
    """The prefilter off: every record walked, as before redact streamed."""
    saved = Prefilter.may_change
    Prefilter.may_change = lambda self, raw, value: True  # type: ignore[method-assign]
    try:
        yield
    finally:
        Prefilter.may_change = saved  # type: ignore[method-assign]


def both(path: Path, rules: RedactRules, tmp: Path) -> tuple[tuple[bytes, list[Any]], tuple[bytes, list[Any]]]:
    """(streamed output, findings) with the prefilter, then with every record walked."""
    out = []
    for n, ctx in enumerate((nullcontext(), walk_everything())):
        target = tmp / f"out{n}.jsonl"
        with ctx:
            report = redact_to(path, rules, target, force=True)
        out.append((target.read_bytes(), [f.to_json() for f in report.findings]))
    return out[0], out[1]


def planted_sessions(tmp: Path) -> Iterator[Path]:
    """The built-in planted secrets, in every encoding and place (one session per encoding and place)."""
    for enc, encode in ENCODINGS.items():
        for place in PLACES:
            if place in ("header", "title-record"):
                continue
            texts = [encode(carrier) for carrier, _ in BUILTIN.values()]
            entries, head, slot = _entries(place, texts)
            yield builders.write_session(tmp / f"{enc}-{place}.jsonl", entries, head=builders.header(SID, **head),
                                         slot=slot)


def test_prefilter_changes_nothing_on_the_planted_secrets(tmp_path: Path) -> None:
    for path in planted_sessions(tmp_path):
        for name in ("builtin", "paths-and-drops"):
            fast, walked = both(path, RULE_SETS[name], tmp_path)
            assert fast == walked, (path.name, name)
            assert walked[1], path.name  # the secrets are found at all


@pytest.mark.parametrize("rules", sorted(RULE_SETS))
def test_streamed_is_the_in_memory_redaction_on_a_corpus(tmp_path: Path, rules: str) -> None:
    files = [SAMPLE, *sorted((DATA / "repair").glob("*.jsonl")), *sorted((DATA / "context" / "inputs").glob("*.jsonl"))[:30]]
    compared = 0
    for path in files:
        try:
            memory = redact(path, RULE_SETS[rules])
        except RedactError:
            with pytest.raises(RedactError):
                redact_to(path, RULE_SETS[rules], tmp_path / "refused.jsonl")
            assert not (tmp_path / "refused.jsonl").exists()
            continue
        with open_session(path) as s:
            migrated = s.migrated  # v1/v2 files get made-up ids, new ones each time
        fast, walked = both(path, RULE_SETS[rules], tmp_path)
        if not migrated:
            assert fast == walked, path.name
            assert fast[0] == memory.to_bytes(), path.name
            assert fast[1] == [f.to_json() for f in memory.findings], path.name
        compared += 1
    assert compared > 20


def test_realistic_code_goes_through_unchanged_and_mostly_unwalked(tmp_path: Path) -> None:
    entries = []
    for k, (_, text) in enumerate(corpus()):
        call = {"type": "toolCall", "id": f"c{k}", "name": "write", "arguments": {"path": "a.py", "content": text}}
        entries.append(entry(f"a{k:05d}", f"r{k - 1:05d}" if k else None, message=assistant([call], stop_reason="toolUse")))
        entries.append(entry(f"r{k:05d}", f"a{k:05d}", message=tool_result([{"type": "text", "text": text}],
                                                                              call_id=f"c{k}")))
    path = builders.write_session(tmp_path / "code.jsonl", entries, head=builders.header(SID))
    calls: list[bool] = []
    saved = Prefilter.may_change

    def counting(self: Prefilter, raw: bytes, value: Any) -> bool:
        calls.append(saved(self, raw, value))
        return calls[-1]

    Prefilter.may_change = counting  # type: ignore[method-assign]
    try:
        fast = redact_to(path, RedactRules(), tmp_path / "fast.jsonl")
    finally:
        Prefilter.may_change = saved  # type: ignore[method-assign]
    assert fast.findings == []
    assert (tmp_path / "fast.jsonl").read_bytes() == path.read_bytes()
    assert calls.count(False) > len(calls) // 2  # most records are copied without a walk


# ----- the prefilter's promise, record by record -------------------------------------------------

FRAGMENTS = [
    "token", "Token", "key", "KEY", "apiKey", "api_key", "pass", "PASSWORD", "secret", "auth", "Authorization",
    "credential", "cookie", "pwd", "sk-", "sk-ant-", "ghp_", "glpat-", "xoxb-", "hf_", "eyJ", "AIza", "AKIA",
    "_live_", "PRIVATE KEY", "-----BEGIN RSA", "://", "@", "user:", "=", ":", " = ", "+", "%3D", "%2F", "%",
    "\\u0041", "\\", "\\n", "\\t", '"', "'", "`", "\n", "\t", " ", "/home/u", "/home/u/app", "task-", "disk-",
    "Bearer ", "abcdefghijklmnop", "Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO", "0123456789", "x", "é", "data:image/png;base64,",
]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)


def _record(draw_texts: list[str], keys: list[str]) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in draw_texts[:3]]
    blocks += [{"type": "thinking", "thinking": t} for t in draw_texts[3:5]]
    args = {k: t for k, t in zip(keys, draw_texts, strict=False)}
    blocks.append({"type": "toolCall", "id": "c1", "name": "bash", "arguments": args})
    return entry("e0000001", None, message=assistant(blocks, stop_reason="toolUse"))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, min_size=1, max_size=6), st.lists(texts, max_size=3),
       st.sampled_from(sorted(RULE_SETS)))
def test_a_record_the_prefilter_passes_is_one_the_walk_leaves_alone(parts: list[str], keys: list[str],
                                                                     rules_name: str) -> None:
    rules = RULE_SETS[rules_name]
    header = {"type": "session", "id": SID, "cwd": "/home/u/app"}
    matcher: Matcher = build_matcher(rules)
    user_rules = any(d.category in ("secret", "secrets-file", "pattern") for d in matcher.detectors)
    pf = Prefilter(matcher.hits, builtin=rules.builtin, user_rules=user_rules,
                   literals=[_escaped(t) for t, _, _ in _literal_texts(rules, header)],
                   drop_images=rules.drop_images, drop_thinking=rules.drop_thinking,
                   drop_tool_output=rules.drop_tool_output, drop_custom=rules.drop_custom)
    value = _record(parts, keys)
    raw = codec.dumps_line(value)[:-1]
    if pf.may_change(raw, lambda: json.loads(raw)):
        return
    r = _Redactor(rules, matcher, _literals(rules, header))
    assert r.entry(json.loads(raw)) == value
    assert r.findings == [] and r.removed_calls == set()


@pytest.mark.parametrize("raw", [
    # a secret split across two text blocks: neither block holds the whole token
    b'{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"use sk-ant-api03-Zq8x"},'
    b'{"type":"text","text":"W2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO now"}]}}',
    # a name and its value in two blocks
    b'{"type":"message","message":{"role":"user","content":[{"type":"text","text":"DATABASE_PASS"},'
    b'{"type":"text","text":"WORD=Tr0ub4dor-and-3"}]}}',
    # escapes that decode to a token's letters or boundary
    b'{"type":"message","message":{"role":"user","content":"q=%73k-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"}}',
    b'{"type":"message","message":{"role":"user","content":"\\u0073k-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"}}',
    b'{"type":"message","message":{"role":"user","content":"x\\\\nsk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"}}',
    # a key naming a secret, whatever its value
    b'{"type":"custom","data":{"api_key":"plain"}}',
    b'{"type":"custom","data":{"a\\u0070iKey":"plain"}}',
])
def test_what_the_prefilter_must_send_to_the_walk(raw: bytes) -> None:
    pf = Prefilter(Matcher().hits, builtin=True, user_rules=False)
    assert pf.may_change(raw, lambda: json.loads(raw))
    r = _Redactor(RedactRules(), Matcher(), [])
    r.entry(json.loads(raw))
    assert r.findings  # and the walk does find something there


def test_plain_records_are_passed(tmp_path: Path) -> None:
    pf = Prefilter(Matcher().hits, builtin=True, user_rules=False)
    for raw in (b'{"type":"message","message":{"role":"user","content":"the task-list and disk-usage"},'
                b'"usage":{"totalTokens":12}}',
                b'{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"const key = '
                b'lookup(x)"},{"type":"text","text":"token: 3"}]}}',
                # (a string ending in a secret word: the bytes cannot tell it from a key, the keys are judged)
                b'{"type":"custom","data":{"note":"forgot my password"}}'):
        assert not pf.may_change(raw, _decoder(raw))
    assert prefilter_module._KEY_NAMES["note"] is False  # key names are remembered between records


def _decoder(raw: bytes) -> Callable[[], Any]:
    return lambda: json.loads(raw)


# ----- order, and memory ---------------------------------------------------------------------------

def test_a_tool_result_before_its_removed_signed_call_loses_its_content(tmp_path: Path) -> None:
    secret = "sk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"
    call = {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": f"echo {secret}"},
            "thoughtSignature": "c2ln"}
    entries = [entry("e0000001", None, message=tool_result("output of the call", call_id="call_1")),
               entry("e0000002", "e0000001", message=assistant([call], stop_reason="toolUse")),
               entry("e0000003", "e0000002", message=tool_result("output again", call_id="call_1"))]
    path = builders.write_session(tmp_path / "s.jsonl", entries, head=builders.header(SID))
    report = redact_to(path, RedactRules(), tmp_path / "out.jsonl")
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()[1:]]
    assert "output" not in json.dumps(out[0]) and "output" not in json.dumps(out[2])
    assert [f.category for f in report.findings][-2:] == ["tool-call-removed", "tool-call-removed"]
    memory = redact(path)
    assert (tmp_path / "out.jsonl").read_bytes() == memory.to_bytes()
    assert report.findings == memory.findings


def _big(tmp_path: Path, turns: int = 700, size: int = 6000) -> Path:
    entries, parent = [], None
    for n in range(turns):
        hint = f" token = v{n}" if n % 7 == 0 else ""  # some records are walked, most are copied
        entries.append(entry(f"u{n}", parent, message=user(f"question {n}{hint} " + "x" * size)))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n} " + "é" * size)))
        entries.append(entry(f"t{n}", f"a{n}", message=tool_result("out " + "y\\n" * (size // 2))))
        parent = f"t{n}"
    return builders.write_session(tmp_path / "big.jsonl", entries, head=builders.header(SID))


def test_redact_to_peak_memory_is_far_below_the_session(tmp_path: Path) -> None:
    path = _big(tmp_path)
    size = path.stat().st_size
    assert size > 15_000_000
    tracemalloc.start()
    try:
        redact_to(path, RedactRules(), tmp_path / "out.jsonl")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size // 4, (peak, size)
    with walk_everything():
        redact_to(path, RedactRules(), tmp_path / "walked.jsonl")
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "walked.jsonl").read_bytes()
