"""The faster prefilter (issue 16 item 2, time): what it lets through unwalked is still what the walk
would leave alone, now that

* a record holding only the file's own ``\\u00XX`` escapes of control characters (ANSI colours in
  tool output) is judged like any other instead of always walked;
* a string where only env-assignment's name hints may match is scanned line by line;
* secret key names are looked up in the decoded record, not by a regex over its bytes.

The reference is the walk over every record, as in test_redact_review.py, whose grammar this
extends with control escapes, escaped newlines and several spots in one string.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from string import ascii_lowercase, ascii_uppercase
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_redact_review import BLAND, LEFT, RIGHT, SECRETISH, SEPS, SID, TS, VALUES, _plain, both

import builders
from omp_session.ops.redact import prefilter as prefilter_module
from omp_session.ops.redact.assign import NAME_HINTS, ascii_lower, find_assignments
from omp_session.ops.redact.decode import _ESCAPE
from omp_session.ops.redact.detectors import Matcher
from omp_session.ops.redact.prefilter import Prefilter
from omp_session.ops.redact.rewrite import (
    RedactRules,
    _escaped,
    _literal_texts,
    _literals,
    _Redactor,
    build_matcher,
)

ANSI = ["\\u001b", "\\u001B", "\\u001b[31m", "\\u001b[0m", "\\u0000", "\\u0009", "\\u000a", "\\u001f"]
# contexts, as raw JSON string text
LEFT2 = [*LEFT, *ANSI, "\\n\\n", "line one\\n", "\\\\u001b", "\\u0041", "x\\u001b"]
RIGHT2 = [*RIGHT, *ANSI, "\\u0009=x9Y8z7W6v5U4t3S2r1Q0", "\\n=Tr0ub4dor-and-3", "=\\u001b[0mTr0ub4dor-and-3",
          ":\\nTr0ub4dor-and-3", "\\\\n=Tr0ub4dor-and-3"]
BLAND2 = [*BLAND, *ANSI, "\\n", "line\\nline", "key", "token", "token = 3", "const key = lookup(x)", "task-"]
CORES = [_plain(c) for c in SECRETISH] + ["token", "key", "apiKey", "DB_PASSWORD", "pass", "secret", "auth",
                                          "sk-", "AKIA", "eyJ", "xox", "hf_", "ghp_", "PRIVATE", "://", "@"]

bland2 = st.lists(st.sampled_from(BLAND2), max_size=4).map("".join)
assignment = st.tuples(st.sampled_from(["DB_PASSWORD", "api_key", "token", "secretKey", "auth"]),
                       st.sampled_from(SEPS), st.sampled_from(VALUES)).map("".join)
spot2 = st.tuples(st.sampled_from(LEFT2), st.one_of(st.sampled_from(CORES), assignment),
                  st.sampled_from(RIGHT2)).map("".join)
# several lines, several spots: a hint on one line and a secret on another
body2 = st.lists(st.tuples(bland2, st.sampled_from(["", "", "spot"]), bland2), min_size=1, max_size=4).flatmap(
    lambda parts: st.tuples(*[st.tuples(st.just(a), spot2 if s else st.just(""), st.just(b)) for a, s, b in parts])
).map(lambda parts: "\\n".join("".join(p) for p in parts))


@st.composite
def record2(draw: st.DrawFn) -> str:
    env = f'"id":"e0000001","parentId":null,"timestamp":"{TS}"'
    kind = draw(st.sampled_from(["user", "tool", "assistant", "custom"]))
    if kind == "user":
        return f'{{"type":"message",{env},"message":{{"role":"user","content":"{draw(body2)}","timestamp":1}}}}'
    if kind == "tool":
        blocks = ",".join(f'{{"type":"text","text":"{draw(body2)}"}}' for _ in range(draw(st.integers(1, 3))))
        return (f'{{"type":"message",{env},"message":{{"role":"toolResult","toolCallId":"c1","toolName":"bash",'
                f'"content":[{blocks}],"isError":false,"timestamp":3}}}}')
    if kind == "assistant":
        return (f'{{"type":"message",{env},"message":{{"role":"assistant","content":[{{"type":"toolCall",'
                f'"id":"c1","name":"bash","arguments":{{"command":"{draw(body2)}"}}}}],"api":"a","provider":"p",'
                f'"model":"m","usage":{{"input":1,"output":1,"totalTokens":2}},"stopReason":"toolUse",'
                f'"timestamp":2}}}}')
    key = draw(st.sampled_from(["x", "note", "apiKey", "password", "totalTokens", "maxTokens"]))
    return f'{{"type":"custom",{env},"customType":"c","data":{{"{key}":"{draw(body2)}","n":[1,{{"k":"v"}}]}}}}'


RULES = {
    "builtin": RedactRules(),
    "paths": RedactRules(paths=True, home="/home/u"),
    "no-builtin": RedactRules(builtin=False),
}


def _prefilter(rules: RedactRules) -> Prefilter:
    header = builders.header(SID, cwd="/home/u/app")
    matcher = build_matcher(rules)
    return Prefilter(matcher.hits, builtin=rules.builtin, user_rules=False,
                     literals=[_escaped(t) for t, _, _ in _literal_texts(rules, header)])


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(record2(), st.sampled_from(sorted(RULES)))
def test_a_record_passed_unwalked_is_one_the_walk_leaves_alone(line: str, rules: str) -> None:
    r = RULES[rules]
    raw = line.encode("utf-8")
    value = json.loads(raw)
    if _prefilter(r).may_change(raw, lambda: value):
        return
    walker = _Redactor(r, build_matcher(r), _literals(r, builders.header(SID, cwd="/home/u/app")))
    assert walker.entry(json.loads(raw)) == value
    assert walker.findings == [] and walker.removed_calls == set()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(record2(), min_size=1, max_size=6), st.sampled_from(sorted(RULES)))
def test_redact_writes_what_the_walk_of_every_record_writes(lines: list[str], rules: str) -> None:
    lines = [line.replace('"e0000001"', f'"e{k:07d}"', 1) for k, line in enumerate(lines)]
    head = json.dumps(builders.header(SID, cwd="/home/u/app"), separators=(",", ":"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_text("\n".join([head, *lines]) + "\n", encoding="utf-8")
        fast, walked = both(path, RULES[rules], Path(tmp))
    assert fast == walked


# ----- pinned: each a case the new shortcuts must still send to the walk -----------------------

TOKEN = "sk-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO"


def _user(content: str) -> bytes:
    return ('{"type":"message","id":"e1","parentId":null,"timestamp":"' + TS
            + '","message":{"role":"user","content":"' + content + '","timestamp":1}}').encode()


@pytest.mark.parametrize("content", [
    "\\u001b" + TOKEN,  # the escape's hex digit is no boundary: the ESC it decodes to is
    "\\u001B[0m\\u001b" + TOKEN,
    "\\u001bAKIAZ7QX4MPLR2VN8KTY",
    "ok\\nall good\\nDATABASE_PASSWORD=Tr0ub4dor-and-3\\nbye",  # the secret on a line of its own
    "token = 3\\nDATABASE_PASSWORD=Tr0ub4dor-and-3",  # a harmless name on the line before
    "DATABASE_PASSWORD\\u0009=Tr0ub4dor-and-3",  # a tab written as \\u0009
    "use \\u0073k-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO",  # \\u0073 is "s": walked
    "see \\\\u0073k-ant-api03-Zq8xW2vK9mNpL4rT7yHbC1dF6gJ0sA3eU5iO",  # a \\u the string holds
    "q=\\\\u001b" + TOKEN,  # ... decoded by a view to an ESC before the token
])
def test_what_is_still_walked(content: str) -> None:
    raw = _user(content)
    assert _prefilter(RedactRules()).may_change(raw, lambda: json.loads(raw))
    r = _Redactor(RedactRules(), Matcher(), [])
    r.entry(json.loads(raw))
    assert r.findings


def test_ansi_colours_alone_are_copied_without_a_walk() -> None:
    raw = _user("\\u001b[31merror\\u001b[0m: the task-list has 3 keys\\ntoken: 3")
    assert not _prefilter(RedactRules()).may_change(raw, lambda: json.loads(raw))


def test_under_paths_every_u_escape_is_walked() -> None:
    # a cwd may hold a control character, which another writer escapes otherwise than omp
    raw = _user("\\u001b[31merror\\u001b[0m")
    assert _prefilter(RedactRules(paths=True, home="/home/u")).may_change(raw, lambda: json.loads(raw))


def test_a_string_of_many_lines_is_scanned_at_the_lines_holding_a_name() -> None:
    lines = [f"line {n} of plain output" for n in range(2000)]
    lines[700] = "const token = compute(x)"
    lines[1500] = "key: 42"
    raw = _user("\\n".join(lines))
    scanned: list[str] = []

    def hits(text: str) -> list[Any]:
        scanned.append(text)
        return Matcher().hits(text)

    assert not Prefilter(hits, builtin=True, user_rules=False).may_change(raw, lambda: json.loads(raw))
    assert scanned == ["const token = compute(x)", "key: 42"]


def test_a_string_holding_another_hint_is_scanned_whole() -> None:
    raw = _user("sk-\\nconst token = compute(x)\\nmore")
    scanned: list[str] = []

    def hits(text: str) -> list[Any]:
        scanned.append(text)
        return Matcher().hits(text)

    Prefilter(hits, builtin=True, user_rules=False).may_change(raw, lambda: json.loads(raw))
    assert scanned == ["sk-\nconst token = compute(x)\nmore"]


@pytest.mark.parametrize(("value", "named"), [
    ({"a": [{"b": {"apiKey": "v"}}]}, True),
    ([1, [{"password": "p"}]], True),
    ({"apiKey": ""}, False),  # an empty value is not redacted
    ({"apiKey": 3, "totalTokens": "12", "maxTokens": "x"}, False),
    ({"data": {"note": "apiKey"}}, False),
])
def test_secret_keys_are_found_in_the_decoded_record(value: Any, named: bool) -> None:
    assert prefilter_module._secret_key_in(value) is named


def test_a_value_of_another_type_is_left_to_the_walk() -> None:
    class Odd(dict[str, Any]):
        pass

    assert prefilter_module._secret_key_in({"a": Odd(password="p")})
    assert prefilter_module._secret_key_in([("password", "p")])


# ----- the speed-ups of the matcher are the same functions ----------------------------------

ODD_TEXT = st.lists(st.sampled_from(
    [*ascii_lowercase[:12], *ascii_uppercase[:12], *"_.-=: \n\t\"'",
     "token", "Key", "PASS", "secret", "AUTH", "pwd", "Credential", "\u212a", "\u0130", "\u017f", "\u03a3",
     "\u00e9", "\U0001f680", "%20", "\\u0041", "+", "=Tr0ub4dor-and-3", "x9Y8z7W6v5U4t3S2r1Q0"]),
    max_size=30).map("".join)
_TRANSLATE = str.maketrans(ascii_uppercase, ascii_lowercase)


@settings(max_examples=1500, deadline=None)
@given(ODD_TEXT)
def test_ascii_lower_puts_every_hint_where_translate_does(text: str) -> None:
    fast, slow = ascii_lower(text), text.translate(_TRANSLATE)
    for hint in NAME_HINTS:
        assert [m.start() for m in re.finditer(re.escape(hint), fast)] == \
               [m.start() for m in re.finditer(re.escape(hint), slow)]


@settings(max_examples=1500, deadline=None)
@given(ODD_TEXT)
def test_find_assignments_is_the_regex_over_the_text(text: str) -> None:
    from omp_session.ops.redact.assign import ASSIGNMENT

    assert [m.span() for m in find_assignments(text)] == [m.span() for m in ASSIGNMENT.finditer(text)]


_OLD_ESCAPE = re.compile(r"(?:%[0-9A-Fa-f]{2})+|\\u[0-9A-Fa-f]{4}|\\[\"\\/bfnrt]|\+")


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("%2Ffz\\u0041\"/bn+x ")), max_size=40))
def test_the_escape_regex_finds_what_it_found_before(text: str) -> None:
    assert [m.span() for m in _ESCAPE.finditer(text)] == [m.span() for m in _OLD_ESCAPE.finditer(text)]


def _separator_may_follow_loop(raw: bytes, e: int) -> bool:
    """The loop the prefilter's regex replaced (kept here as the reference)."""
    while e < len(raw):
        c = raw[e]
        if c == 0x22:
            return False
        if c in b":=%":
            return True
        if c in b" +'\t":
            e += 1
            continue
        if c == 0x5C:
            nxt = raw[e + 1] if e + 1 < len(raw) else 0
            if nxt in b'"t':
                e += 2
                continue
            return nxt not in b"nrbf/"
        return False
    return True


def _assignment_loop(low: bytes) -> list[tuple[int, int]]:
    """The name hints' candidates as the loop found them, each with the end of its name."""
    out = []
    for hint in prefilter_module._NAME_SCAN:
        i = low.find(hint)
        while i >= 0:
            e = i + len(hint)
            while e < len(low) and low[e] in b"abcdefghijklmnopqrstuvwxyz0123456789_.-":
                e += 1
            if _separator_may_follow_loop(low, e):
                out.append((i, e))
            i = low.find(hint, e)
    return sorted(out)


def _hints_loop(raw: bytes) -> list[int]:
    """Where the other hints may start a match, found by a search of each hint in turn (what the
    automaton replaced)."""
    low = raw.lower()
    out = []
    for hints, where, bounded in ((prefilter_module._EXACT, raw, False), (prefilter_module._FOLDED, low, False),
                                  (prefilter_module._BOUNDED, raw, True), ((b"://",) if b"@" in raw else (), raw, False)):
        for hint in hints:
            i = where.find(hint)
            while i >= 0:
                if not bounded or prefilter_module._may_start_token(raw, i):
                    out.append(i)
                i = where.find(hint, i + 1)
    return sorted(out)


RAW_BITS = [b"token", b"key", b"pass", b"pwd", b"auth", b"credential", b"x", b"_", b".", b"-", b" ", b"+", b"'",
            b"\t", b"\\", b'"', b"t", b"n", b"r", b"/", b":", b"=", b"%", b"u", b"0"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(RAW_BITS), max_size=14).map(b"".join))
def test_name_candidates_are_those_of_the_loop(low: bytes) -> None:
    # every candidate of the loop, and no other but one inside a candidate's name (on its line)
    hints = prefilter_module._hint_positions(low, low)
    if hints is None:
        assert _escape_loop(low, False)
        return
    names = sorted(hints[1])
    loop = _assignment_loop(low)
    assert {i for i, _ in loop} <= set(names)
    assert all(any(i <= n < e for i, e in loop) for n in names)


HINT_BITS = [b"sk-", b"SK-", b"AIza", b"aiza", b"AKIA", b"Asia", b"ABIA", b"ACCA", b"acca", b"ghp_", b"GHO_", b"ghu_",
             b"ghs_", b"ghr_", b"github_pat_", b"glpat-", b"xox", b"XOX", b"hf_", b"eyJ", b"EYJ", b"_live_",
             b"_test_", b"_TEST_", b"PRIVATE", b"private", b"Secret", b"AUTHORIZATION", b"://", b"@", b"a", b"Z",
             b"9", b"_", b"-", b"\\", b"u", b"\\u001b", b"\\u001B", b"\\U0041", b"\\u0041", b"/", b"%2f", b"%", b"n", b" ",
             b'"', b"\xe2\x84\xaa", b'"text"', b'"TEXT"', b'"thinking"', b'"text"' * 3, b'"thinking"' * 3]


def _escape_loop(raw: bytes, strict: bool) -> bool:
    """Whether ``raw`` holds an escape that may decode to a hint's character, as the searches the
    automaton replaced told it."""
    if b"\\/" in raw or re.search(rb"%[0-9A-Fa-f]{2}", raw) or "\u212a".encode() in raw:
        return True
    return b"\\u" in raw and (strict or b"\\\\u" in raw or re.search(rb"\\u(?!00[01][0-9A-Fa-f])", raw) is not None)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(HINT_BITS), max_size=12).map(b"".join), st.booleans())
def test_hint_positions_are_those_of_a_search_of_each_hint(raw: bytes, strict: bool) -> None:
    hints = prefilter_module._hint_positions(raw, raw.lower(), strict)
    assert (hints is None) == _escape_loop(raw, strict)
    if hints is not None:
        assert sorted(hints[0]) == _hints_loop(raw)
        assert hints[2] == (raw.count(b'"text"') >= 4 or raw.count(b'"thinking"') >= 4)
