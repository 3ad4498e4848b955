"""The import's fast paths give what the exact paths give (issue 19's speed work), and the pool of
workers imports each source once.

* :func:`entry_line` (orjson's bytes when nothing can differ) == the persistence transform then
  ``JSON.stringify`` as :func:`codec.dumps_line` writes it, for any value;
* :func:`read_claude_records` (msgspec, the fields omp reads) == :func:`read_records` (``JSON.parse``
  of every line), records, line numbers and warnings;
* the listing's recorded cwd by whole lines == omp's lenient parse of the first 64 KiB;
* a transcript's canonical times == ``Date.parse`` then ``toISOString``;
* a source another run imports while this one converts it is not imported twice, and nothing is
  left behind; ``OMP_SESSION_WORKERS`` sets the number of processes.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omp_session.foreign import batch
from omp_session.foreign.batch import find_sessions, import_sessions, workers_for
from omp_session.foreign.claude import CWD_PREFIX_BYTES, _recorded_cwd, string_field, timestamp_ms
from omp_session.foreign.claude_records import (
    ClaudeBlock,
    ClaudeMessage,
    ClaudeRecord,
    read_claude_records,
    tool_result_blocks,
)
from omp_session.foreign.convert_claude import _Clock, _js_time
from omp_session.foreign.jsonl import read_records
from omp_session.foreign.ledger import Ledger
from omp_session.foreign.lines import RawText, entry_line, is_plain, materialize, raw_text
from omp_session.js import codec
from omp_session.js.date import to_iso
from omp_session.write.persist import MAX_PERSIST_CHARS, persist_transform

# --- entry_line ----------------------------------------------------------------------------------

_KEYS = st.sampled_from(["type", "id", "text", "content", "data", "image_url", "jsonlEvents", "lineCount",
                         "structuredContent", "images", "frames", "mimeType", "thinkingSignature", "result",
                         "providerPayload", "items", "details", "0", "12", "4294967295", "a1", "é"]) | st.text(max_size=4)
_ATOMS = (st.none() | st.booleans() | st.integers(-2**64, 2**64) | st.sampled_from([0, -1, 2**53, 2**53 + 1])
          | st.floats() | st.sampled_from([1.0, -0.0, 1e16, 1e21, 1e-5, 1e-7, 0.1, 123.456, 1e300, 5e-324])
          | st.text(max_size=8) | st.sampled_from(["image", "image_generation_call", "openaiResponsesHistory",
                                                    "reasoning", "\ud800", "a\udc00b", "\U0001f600", "\u2028",
                                                    "data:image/png;base64," + "iVBORw0K" * 200, "QUJD" * 300])
          | st.just(codec.UNDEFINED)
          | st.text(max_size=8).map(lambda t: RawText((codec.stringify(t) or "").encode()))
          | st.just({"type": "image", "data": "QUJD" * 300, "mimeType": "image/png"}))
_VALUES = st.recursive(_ATOMS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
                       max_leaves=25)


def _general(value: Any, s20: bool) -> bytes | type[BaseException]:
    try:
        return codec.dumps_line(persist_transform(materialize(value), None, s20=s20))
    except (ValueError, TypeError) as e:
        return type(e)


def _fast(value: Any, s20: bool) -> bytes | type[BaseException]:
    try:
        return entry_line(value, None, s20=s20)
    except (ValueError, TypeError) as e:
        return type(e)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, st.booleans())
def test_entry_line_writes_what_the_general_path_writes(value: Any, s20: bool) -> None:
    assert _fast(value, s20) == _general(value, s20)


def _claude_message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "claude-u1-message-1", "parentId": None, "timestamp": "2026-01-02T03:04:05.000Z",
            "message": {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "text", "text": text},
                {"type": "toolCall", "id": "t1", "name": "Read", "arguments": {"file_path": "/a", "limit": 20}}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-x",
                "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "toolUse", "timestamp": 1767323045000, "responseId": "msg_1"}}


@pytest.mark.parametrize(("entry", "plain"), [
    (_claude_message("hello"), True),  # what an import is made of takes the fast path
    ({"a": 1.5, "b": [0.25, "x"]}, True),
    ({"timestamp": 1767323045000.0}, False),  # orjson writes "1767323045000.0", JavaScript "...000"
    ({"x": 1e16}, False),
    ({"x": 1e-7}, False),
    ({"12": "a", "b": 1}, False),  # JavaScript writes integer-like keys first
    ({"content": [{"type": "image", "data": "QUJD" * 300, "mimeType": "image/png"}]}, False),
    ({"details": {"jsonlEvents": []}}, False),
    ({"type": "image_generation_call", "result": "QUJD" * 300}, False),
])
def test_is_plain_sends_only_what_may_differ_the_general_way(entry: dict[str, Any], plain: bool) -> None:
    assert is_plain(entry) is plain
    assert entry_line(entry, None, s20=False) == codec.dumps_line(persist_transform(entry, None))


@pytest.mark.parametrize("size", [MAX_PERSIST_CHARS - 200, MAX_PERSIST_CHARS + 10])
def test_long_strings_are_cut_as_omp_cuts_them(size: int) -> None:
    entry = _claude_message("é" * (size // 2) + "x" * (size - size // 2))
    line = entry_line(entry, None, s20=False)
    assert line == codec.dumps_line(persist_transform(entry, None))
    assert (b"[Session persistence truncated large content]" in line) is (size > MAX_PERSIST_CHARS)


@given(st.text(), st.sampled_from(["js", "ascii", "slash"]))
def test_raw_text_is_kept_only_as_json_stringify_writes_it(text: str, spelling: str) -> None:
    token = json.dumps(text, ensure_ascii=spelling == "ascii")  # "\u00e9" where JavaScript writes "é"
    if spelling == "slash":
        token = token.replace("/", "\\/")
    try:
        data = token.encode()
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 file holds it raw
        return
    got = raw_text(data)
    if isinstance(got, RawText):
        assert got.json.decode() == codec.stringify(text)
        assert got.text == text
    else:
        assert got == text
    if data.decode() == codec.stringify(text) and "\\u" not in text and "\\/" not in text:
        assert isinstance(got, RawText)  # what Claude Code writes is kept as it is


def test_raw_texts_decode_to_the_strings_an_exact_conversion_holds(tmp_path: Path) -> None:
    from omp_session.foreign.convert_claude import convert_claude
    from omp_session.foreign.sources import ForeignSession

    path = tmp_path / "s.jsonl"
    path.write_bytes(_line({"type": "user", "uuid": "u1", "cwd": "/p", "message": {"content": [
        {"type": "text", "text": "caf\u00e9 \"q\" \n"}, {"type": "tool_result", "tool_use_id": "t",
                                                       "content": [{"type": "text", "text": "a/b"}]}]}})
                     + b'{"type":"assistant","uuid":"a1","message":{"content":[{"type":"thinking","thinking":'
                       b'"\\u00e9\\/","signature":"s"},{"type":"text","text":"plain"}]}}\n')
    info = ForeignSession(source="claude", id="s", path=str(path), cwd="/p", created_ms=0.0, modified_ms=0.0)
    raw, exact = convert_claude(info, raw_text=True), convert_claude(info)
    assert any(isinstance(v, RawText) for e in raw.entries for v in _leaves(e))  # the fast form is used
    assert not any(isinstance(v, RawText) for e in exact.entries for v in _leaves(e))
    assert [materialize(e) for e in raw.entries] == exact.entries
    assert [entry_line(e, None, s20=False) for e in raw.entries] == [
        codec.dumps_line(persist_transform(e, None)) for e in exact.entries]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


# --- the Claude record reader -------------------------------------------------------------------

_LINES = st.sampled_from([
    b'{"type":"user","uuid":"u1","parentUuid":null,"cwd":"/p","timestamp":"2026-01-02T03:04:05.000Z",'
    b'"message":{"role":"user","content":"hi"},"toolUseResult":{"stdout":"x\\ny"}}',
    b'{"type":"assistant","uuid":"a1","message":{"content":[{"type":"text","text":"caf\xc3\xa9"}]},'
    b'"isApiErrorMessage":true,"apiErrorStatus":529,"error":"overloaded"}',
    b'{"type":"user","type":"assistant","message":1,"message":{"content":[]}}',  # the last of a key wins
    b'{"type":"custom-title","customTitle":"T","aiTitle":"A","isSidechain":true,"isMeta":false}',
    b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text",'
    b'"text":"a\\nb \\u00e9"},{"type":"image","source":{"data":"QUJD","media_type":"image/png"}},7]},'
    b'{"type":"text","text":5},"x",{"type":"thinking","thinking":"\\ud83d\\ude00","signature":"s"}]}}',
    b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Read","input":{"a":[1]}},'
    b'{"type":"text","text":"\\/\\u0041"}],"model":"m","usage":{"input_tokens":1.5},"id":"r"}}',
    b'{"type":"user","message":{"content":{"text":"an object"}}}',
    b'{"type":"user","message":"a string"}',
    b'{"type":"user","timestamp":12345678901234567890123,"uuid":"\\u00e9\\ud83d\\ude00"}',
    b'{"type":"user","timestamp":1e400}',
    b'{"type":"user","uuid":"\\ud800"}',  # an escaped lone surrogate: JSON.parse keeps it
    b'{"type":"user","uuid":"bad \xff byte"}',  # invalid UTF-8 becomes U+FFFD
    b'\xef\xbb\xbf{"type":"summary"}',  # a BOM
    b'  {"type":"progress"}  \r',
    b'[1,2]', b'"text"', b'null', b'12', b'', b'   ', b'\t\r',
    b'{"type":"user"} {"type":"user"}', b'{"type":', b'not json', b'{"a":NaN}',
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_LINES, max_size=12), st.booleans())
def test_claude_records_are_what_json_parse_gives(tmp_path: Path, lines: list[bytes], end: bool) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if end and lines else b""))
    fast, exact = read_claude_records(path), read_records(path)
    assert fast.size == exact.size
    assert fast.problems == exact.problems
    assert [line for _, line in fast.records] == [line for _, line in exact.records]
    for (rec, _), (value, _) in zip(fast.records, exact.records, strict=True):
        assert isinstance(rec, ClaudeRecord)
        for name in ClaudeRecord.__struct_fields__:
            got, want = getattr(rec, name), value.get(name)
            if name == "message":
                got, want = _seen_message(got), _message_view(want)
            if isinstance(want, float) and isinstance(got, int):
                got = float(got)  # past 64 bits: msgspec keeps the int, JSON.parse the double (written alike)
            assert got == want or (got != got and want != want), name


_BLOCK_FIELDS = ("type", "signature", "id", "name", "input", "tool_use_id", "is_error", "source")


def _message_view(value: Any) -> Any:
    """What the converter may read of a parsed ``message``, in plain values."""
    if not isinstance(value, dict):
        return None
    content = value.get("content")
    return {"content": content if isinstance(content, str) else _blocks_view(content),
            **{k: value.get(k) for k in ("model", "usage", "stop_reason", "id")}}


def _blocks_view(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    return [_block_view(b) if isinstance(b, dict) else None for b in value]


def _block_view(block: dict[str, Any]) -> dict[str, Any]:
    out = {k: block.get(k) for k in _BLOCK_FIELDS}
    for k in ("text", "thinking"):
        out[k] = block.get(k) if isinstance(block.get(k), str) else None
    content = block.get("content")
    out["content"] = content if isinstance(content, str) else _blocks_view(content)
    return out


def _seen_json(value: Any, blocks: bool) -> Any:
    """A ClaudeBlock field: JSON text (msgspec.Raw) or, from the exact path, a Python value."""
    if isinstance(value, msgspec.Raw):
        token = bytes(value)
        if token[:1] == b'"':
            return codec.loads(token)
        return [_seen_block(b) for b in tool_result_blocks(token)] if blocks and token[:1] == b"[" else None
    if isinstance(value, list):
        return [_seen_block(b) for b in value]
    return value


def _seen_block(block: Any) -> Any:
    if not isinstance(block, ClaudeBlock):
        return None
    out = {k: getattr(block, k) for k in _BLOCK_FIELDS}
    out["text"], out["thinking"] = _seen_json(block.text, False), _seen_json(block.thinking, False)
    out["content"] = _seen_json(block.content, True)
    return out


def _seen_message(message: Any) -> Any:
    if not isinstance(message, ClaudeMessage):
        return None
    content = message.content
    return {"content": [_seen_block(b) for b in content] if isinstance(content, list) else content,
            **{k: getattr(message, k) for k in ("model", "usage", "stop_reason", "id")}}


# --- the listing's recorded cwd ------------------------------------------------------------------

def _exact_recorded_cwd(path: Path) -> str | None:
    text = path.read_bytes()[:CWD_PREFIX_BYTES].decode("utf-8", "replace")
    text = text[1:] if text.startswith("\ufeff") else text
    for value, _start, _end in codec.parse_jsonl(text)[0]:
        if isinstance(value, dict) and string_field(value, "cwd"):
            return string_field(value, "cwd")
    return None


_CWD_LINES = st.sampled_from([
    b'{"type":"summary"}', b'{"cwd":""}', b'{"cwd":7}', b'{"cwd":"/a"}', b'{"cwd":"/b","cwd":"/c"}',
    b'{"cwd":"/d"} {"cwd":"/e"}', b'{"cwd":', b'"/x"}', b'[{"cwd":"/f"}]', b'', b'  ', b'garbage',
    b'\xef\xbb\xbf{"cwd":"/g"}', b'{"cwd":"/h\xff"}', b'{"x":"' + b"y" * (CWD_PREFIX_BYTES - 20) + b'","cwd":"/i"}',
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_CWD_LINES, max_size=6), st.booleans())
def test_recorded_cwd_is_what_the_lenient_parse_finds(tmp_path: Path, lines: list[bytes], end: bool) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if end else b""))
    assert _recorded_cwd(str(path)) == _exact_recorded_cwd(path)


# --- times ------------------------------------------------------------------------------------------

_TIMES = (st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z")
          | st.sampled_from(["2025-02-29T10:00:00.000Z", "2024-02-29T10:00:00.000Z", "2025-02-30T00:00:00.000Z",
                             "2025-04-31T00:00:00.000Z", "2025-13-01T00:00:00.000Z", "2025-00-10T00:00:00.000Z",
                             "2025-06-01T24:00:00.000Z", "2025-06-01T23:60:00.000Z", "2025-06-01T10:00:00Z",
                             "0000-01-01T00:00:00.000Z", "2025-06-01T10:00:00.000+01:00", "garbage"])
          | st.none() | st.floats() | st.integers(-10**17, 10**17))


@given(_TIMES)
def test_canonical_times_are_what_date_parse_gives(value: Any) -> None:
    fallback = 1767323045123.456
    ms, iso = _Clock(fallback).time(value)
    want = timestamp_ms(value, fallback)
    assert ms == want or (ms != ms and want != want)
    assert type(ms) is type(_js_time(want))
    try:
        want_iso: str | None = to_iso(want)
    except ValueError:
        want_iso = None
    if iso is not None:
        assert iso == want_iso
    elif want_iso is not None:
        assert to_iso(ms) == want_iso


# --- the pool and the ledger ------------------------------------------------------------------------

def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode() + b"\n"


def _claude_sessions(home: Path, count: int) -> None:
    project = home / "proj"
    folder = home / ".claude" / "projects" / str(project).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"00000000-0000-4000-8000-{n:012d}.jsonl").write_bytes(
            _line({"type": "user", "uuid": f"u{n}", "parentUuid": None, "cwd": str(project),
                   "timestamp": f"2026-01-02T03:04:{n:02d}.000Z", "message": {"content": f"hello {n}"}}))


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.is_file())


def test_a_pool_imports_each_source_once_in_order(home: Path, tmp_path: Path) -> None:
    _claude_sessions(home, 7)
    found = find_sessions("claude")
    ledger = Ledger(tmp_path / "ledger.jsonl")
    outcomes = list(import_sessions(found, fallback_cwd=str(home / "proj"), ledger=ledger, workers=3))
    assert [o.info.path for o in outcomes] == [s.path for s in found]
    assert [o.status for o in outcomes] == ["imported"] * 7
    sessions = Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions"
    assert sorted(Path(o.session or "").name for o in outcomes) == _files(sessions)  # no temporary file left
    assert len((tmp_path / "ledger.jsonl").read_bytes().splitlines()) == 7
    assert all(ledger.latest(s.path) is not None for s in found)  # the workers' records, read back
    again = list(import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(tmp_path / "ledger.jsonl"),
                                 workers=2))
    assert [o.status for o in again] == ["already imported"] * 7


def test_a_source_another_run_imports_meanwhile_is_not_placed(home: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _claude_sessions(home, 1)
    found = find_sessions("claude")
    ledger_file = tmp_path / "ledger.jsonl"
    real_stage = batch.stage
    other: list[batch.Outcome] = []
    started: list[bool] = []

    def stage_after_another_run(*args: Any, **kwargs: Any) -> Any:
        if not started:  # the other run starts after we looked in the ledger, and finishes first
            started.append(True)
            other.extend(import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(ledger_file),
                                         workers=1))
        return real_stage(*args, **kwargs)

    monkeypatch.setattr(batch, "stage", stage_after_another_run)
    [out] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(ledger_file), workers=1)
    assert [o.status for o in other] == ["imported"]
    assert (out.status, out.session) == ("already imported", other[0].session)
    sessions = Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions"
    assert _files(sessions) == [Path(other[0].session or "").name]  # ours was never placed, nor left behind
    assert len(ledger_file.read_bytes().splitlines()) == 1


@pytest.mark.parametrize(("setting", "count", "expected"), [
    ("1", 10, 1), ("3", 10, 3), ("3", 2, 2), ("0", 10, 1), ("lots", 10, 1), ("", 1, 1)])
def test_workers_follow_omp_session_workers(monkeypatch: pytest.MonkeyPatch, setting: str, count: int,
                                            expected: int) -> None:
    monkeypatch.setenv("OMP_SESSION_WORKERS", setting)
    assert workers_for(count) == expected


def test_two_workers_by_default_where_two_cpus_are_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_SESSION_WORKERS", raising=False)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert workers_for(100) == min(2, cpus)


def test_an_import_left_empty_by_a_crash_is_imported_again(home: Path, tmp_path: Path) -> None:
    # sessions are not synced one by one (as omp's importer does not sync): after a crash of the
    # machine the ledger may name a session whose file came back empty
    _claude_sessions(home, 1)
    found = find_sessions("claude")
    ledger_file = tmp_path / "ledger.jsonl"
    [first] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(ledger_file))
    assert first.status == "imported" and first.session is not None
    Path(first.session).write_bytes(b"")
    [second] = import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(ledger_file))
    assert second.status == "imported" and second.session != first.session
    assert Path(second.session or "").stat().st_size > 0


_doomed: list[str] = []  # set before the pool forks: its workers see it


def _killed_on_the_doomed(info: Any) -> Any:
    # runs in a forked worker (sent to it by reference, as the real one): os._exit is its death. The
    # other worker waits first, so that the pool is broken (and it stopped) before it writes anything.
    if info.id in _doomed:
        os._exit(9)
    time.sleep(1)
    return batch._Job.run(batch._worker_job, info)  # type: ignore[arg-type]


def test_a_worker_killed_midway_leaves_the_rest_to_this_process(home: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _claude_sessions(home, 6)
    found = find_sessions("claude")
    monkeypatch.setattr(batch, "_run_in_worker", _killed_on_the_doomed)
    monkeypatch.setattr(sys.modules[__name__], "_doomed", [found[0].id])
    ledger_file = tmp_path / "ledger.jsonl"
    outcomes = list(import_sessions(found, fallback_cwd=str(home / "proj"), ledger=Ledger(ledger_file), workers=2))
    assert [o.info.path for o in outcomes] == [s.path for s in found]
    assert [o.status for o in outcomes] == ["imported"] * 6  # by this process, once the pool broke
    sessions = Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions"
    assert len(_files(sessions)) == 6  # each source once, nothing else
    recorded = [json.loads(line)["source_path"] for line in ledger_file.read_bytes().splitlines()]
    assert sorted(recorded) == sorted(s.path for s in found)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=60),
       short=st.lists(st.integers(min_value=0, max_value=200), max_size=4), iov=st.integers(min_value=1, max_value=8))
def test_lines_are_written_whole_through_short_gathered_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               lines: list[bytes], short: list[int],
                                                               iov: int) -> None:
    # a gathered write may write less than asked (a signal): the file still holds every line, in order
    from omp_session.foreign import importer

    real = os.writev
    cuts = list(short)

    def writev(fd: int, buffers: list[bytes]) -> int:
        if cuts:
            whole = b"".join(buffers)
            return os.write(fd, whole[:min(cuts.pop(0), len(whole))])
        return real(fd, buffers)

    monkeypatch.setattr(importer.os, "writev", writev)
    monkeypatch.setattr(importer, "_IOV_MAX", iov)
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        importer._write_lines(fd, lines)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"".join(lines)
