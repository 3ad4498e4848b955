"""persist_transform against lines the real omp 18.2.3 wrote (tests/data/persist, see record.py there)."""

from __future__ import annotations

import copy
import gzip
import hashlib
import importlib
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import builders
from omp_session.format.blobs import (
    BLOB_PREFIX,
    BlobStore,
    MemoryBlobStore,
    b64decode_lenient,
    resolve_blob_refs,
)
from omp_session.write.persist import (
    BLOB_EXTERNALIZE_MIN,
    MAX_PERSIST_CHARS,
    TRUNCATION_NOTICE,
    persist_transform,
    strip_replayed_reasoning_signatures,
    truncate_for_persistence,
)

DATA = Path(__file__).parents[1] / "data" / "persist"
SCRIPT_NAMES = ["truncation", "signed", "dedupe", "jsonl_events", "images", "image_gen_url"]


# ----------------------------------------------------------------- helpers

_SURROGATE = re.compile("[\ud800-\udfff]")


def js_stringify(value: Any) -> str:
    """Stand-in for JSON.stringify, exact for the data in these tests (str/int/small floats/bool/null)."""
    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    out = json.dumps(norm(value), ensure_ascii=False, separators=(",", ":"))
    # JSON.stringify escapes lone surrogates; test strings never hold split pairs.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def _serializers() -> list[Callable[[Any], str]]:
    out: list[Callable[[Any], str]] = [js_stringify]
    try:
        codec = importlib.import_module("omp_session.js.codec")
    except ImportError:
        return out
    stringify = getattr(codec, "stringify", None)
    if callable(stringify):
        out.append(stringify)
    return out


SERIALIZERS = _serializers()


def load_gz_json(path: Path) -> Any:
    with gzip.open(path, "rb") as f:
        return json.loads(f.read())


def load_case(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    return load_gz_json(DATA / "scripts" / f"{name}.json.gz"), load_gz_json(DATA / "expected" / f"{name}.run.json.gz")


def file_lines(record: dict[str, Any]) -> list[str]:
    text = record["files"][0]["text"]
    assert text.endswith("\n")
    return text[:-1].split("\n")


def script_entries(script: dict[str, Any], lines: list[str]) -> list[dict[str, Any]]:
    """The in-memory entries omp held: the script's messages with the envelope omp gave them."""
    messages = [op["message"] for op in script["ops"] if op["op"] == "appendMessage"]
    written = [json.loads(line) for line in lines[2:]]
    assert len(written) == len(messages)
    out = []
    for w, m in zip(written, messages, strict=True):
        out.append({"type": "message", "id": w["id"], "parentId": w["parentId"], "timestamp": w["timestamp"],
                    "message": m})
    return out


def blob_listing(blob_dir: Path) -> dict[str, Any]:
    files = {}
    inodes: dict[int, list[str]] = {}
    for p in sorted(blob_dir.iterdir()) if blob_dir.is_dir() else []:
        data = p.read_bytes()
        files[p.name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        inodes.setdefault(p.stat().st_ino, []).append(p.name)
    return {"files": files, "links": sorted(sorted(g) for g in inodes.values() if len(g) > 1)}


def first_diff(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"len {len(a)} vs {len(b)}, first difference at {i}: {a[max(0, i - 40):i + 40]!r} vs {b[max(0, i - 40):i + 40]!r}"


# ----------------------------------------------------------------- oracle byte-identity


@pytest.mark.parametrize("serialize", SERIALIZERS, ids=lambda f: f.__module__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_lines_match_omp(name: str, serialize: Callable[[Any], str], tmp_path: Path) -> None:
    script, record = load_case(name)
    assert record["error"] is None
    assert all(step["error"] is None for step in record["steps"])
    lines = file_lines(record)
    store = BlobStore(tmp_path / "blobs")
    header = json.loads(lines[1])
    assert serialize(persist_transform(header, store)) == lines[1]
    for entry, line in zip(script_entries(script, lines), lines[2:], strict=True):
        before = copy.deepcopy(entry)
        got = serialize(persist_transform(entry, store))
        assert got == line, first_diff(got, line)
        assert entry == before, "input mutated"


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_blob_dir_matches_omp(name: str, tmp_path: Path) -> None:
    """Same blob files (sha names, typed sidecars, content) and the same hard links as omp's store."""
    script, record = load_case(name)
    lines = file_lines(record)
    store = BlobStore(tmp_path / "blobs")
    for entry in script_entries(script, lines):
        persist_transform(entry, store)
    expected = json.loads((DATA / "expected" / f"{name}.blobs.json").read_text())
    assert blob_listing(tmp_path / "blobs") == expected
    for sha in store.iter_hashes():
        assert store.verify(sha)
    # Every ref omp wrote names a blob whose bytes hash to it.
    for sha in set(re.findall(r"blob:sha256:([a-f0-9]{64})", "\n".join(lines))):
        if sha in expected["files"]:
            assert store.verify(sha)


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_dry_run_and_memory_store_agree(name: str, tmp_path: Path) -> None:
    script, record = load_case(name)
    lines = file_lines(record)
    mem = MemoryBlobStore()
    expected = json.loads((DATA / "expected" / f"{name}.blobs.json").read_text())
    for entry, line in zip(script_entries(script, lines), lines[2:], strict=True):
        assert js_stringify(persist_transform(entry, None)) == line
        assert js_stringify(persist_transform(entry, mem)) == line
    names = set(mem.blobs) | {f"{sha}.{ext}" for sha, exts in mem.sidecars.items() for ext in exts}
    assert names == set(expected["files"])
    for sha, data in mem.blobs.items():
        assert expected["files"][sha]["sha256"] == hashlib.sha256(data).hexdigest() == sha


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_reload_resolution_matches_omp(name: str, tmp_path: Path) -> None:
    """After close + reopen omp shows the entries with blob refs resolved (C63)."""
    script, record = load_case(name)
    lines = file_lines(record)
    store = BlobStore(tmp_path / "blobs")
    for entry in script_entries(script, lines):
        persist_transform(entry, store)
    assert record["steps"][-1]["op"] == "reopen" and record["steps"][-1]["error"] is None
    on_disk = [json.loads(line) for line in lines[2:]]
    resolved = [resolve_blob_refs(e, store) for e in on_disk]
    assert resolved == record["entries"]


def _oracle() -> Path:
    base = Path(os.environ.get("OMP_ORACLE_DIR", Path(__file__).resolve().parents[2] / "tests" / "reference"))
    return base / "omp-reference"


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["dedupe", "images"])
def test_recording_still_matches_live_omp(name: str, tmp_path: Path) -> None:
    """The recorded run is what the installed omp does today (guards against stale data)."""
    script, record = load_case(name)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(script))
    res = subprocess.run([str(_oracle()), "run", str(path)], capture_output=True, text=True, timeout=300, check=True)
    live = json.loads(res.stdout)
    assert live["files"][0]["text"] == record["files"][0]["text"]
    assert live["entries"] == record["entries"]


def test_in_memory_entry_keeps_full_content() -> None:
    """C58: truncation is applied to a copy."""
    text = "q" * 600_000
    entry = {"type": "message", "id": "a", "parentId": None, "timestamp": "t",
             "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}}
    out = persist_transform(entry, None)
    assert out["message"]["content"][0]["text"] == "q" * (MAX_PERSIST_CHARS - len(TRUNCATION_NOTICE)) + TRUNCATION_NOTICE
    assert entry["message"]["content"][0]["text"] is text


# ----------------------------------------------------------------- scenario details (C58-C63)


def _entry(message: dict[str, Any]) -> dict[str, Any]:
    return builders.entry("e1", message=message)


def test_truncation_lengths() -> None:
    notice = TRUNCATION_NOTICE
    assert len(notice) == 47
    keep = MAX_PERSIST_CHARS - 47
    cases = {
        "a" * 500_000: "a" * 500_000,
        "a" * 500_001: "a" * keep + notice,
        "a" * (keep - 1) + "\U0001F600" + "b" * 99: "a" * (keep - 1) + notice,   # C59: high surrogate dropped
        "a" * (keep - 2) + "\U0001F600" + "b" * 99: "a" * (keep - 2) + "\U0001F600" + notice,
        "a" * (keep - 1) + "\ud800" + "b" * 99: "a" * (keep - 1) + notice,
        "a" * (keep - 1) + "\udc00" + "b" * 99: "a" * (keep - 1) + "\udc00" + notice,
        "\U0001F600" * 250_001: "\U0001F600" * (keep // 2) + notice,
        "\U0001F600" * 250_000: "\U0001F600" * 250_000,
    }
    for src, want in cases.items():
        got = persist_transform({"s": src}, None)["s"]
        assert got == want, (len(src), len(got))


def test_signature_keys_exempt_even_in_arrays() -> None:
    big = "z" * 600_001
    value = {"thinkingSignature": big, "textSignature": [big], "other": [big]}
    out = persist_transform(value, None)
    assert out["thinkingSignature"] is big and out["textSignature"] is value["textSignature"]
    assert out["other"][0].endswith(TRUNCATION_NOTICE)


def test_image_threshold_counts_utf16_units() -> None:
    # 600 astral chars = 1,200 UTF-16 units >= 1,024: omp externalizes (and decodes to nothing).
    block = {"type": "image", "data": "\U0001F600" * 600, "mimeType": "image/png"}
    out = persist_transform({"content": [block]}, None)
    assert out["content"][0]["data"] == BLOB_PREFIX + hashlib.sha256(b"").hexdigest()
    small = {"type": "image", "data": "A" * (BLOB_EXTERNALIZE_MIN - 1)}
    assert persist_transform({"content": [small]}, None)["content"][0] is small


def test_externalized_object_is_not_descended() -> None:
    block = {"type": "image", "data": "QUJD" * 300, "jsonlEvents": [1], "note": "n" * 600_000}
    out = persist_transform({"content": [block]}, None)["content"][0]
    assert list(out) == list(block)
    assert out["jsonlEvents"] == [1] and out["note"] is block["note"]


def test_line_count_recomputed_only_on_change() -> None:
    same = {"content": "a\nb", "lineCount": 99}
    assert persist_transform({"details": same}, None)["details"] is same
    out = persist_transform({"details": {"lineCount": 99, "content": "a\nb", "jsonlEvents": []}}, None)
    assert out["details"] == {"lineCount": 2, "content": "a\nb"}
    assert list(out["details"]) == ["lineCount", "content"]


def test_dedupe_then_truncate() -> None:
    sig = json.dumps({"type": "reasoning", "id": "r1", "encrypted_content": "E"})
    block = {"type": "thinking", "thinking": "t" * 600_000, "thinkingSignature": sig}
    msg = {"role": "assistant", "content": [block],
           "providerPayload": {"type": "openaiResponsesHistory",
                               "items": [{"type": "reasoning", "id": "r1", "encrypted_content": "E"}]}}
    entry = _entry(msg)
    stripped = strip_replayed_reasoning_signatures(entry)
    assert "thinkingSignature" not in stripped["message"]["content"][0]
    out = persist_transform(entry, None)
    assert out["message"]["content"][0]["thinking"].endswith(TRUNCATION_NOTICE)
    assert entry["message"]["content"][0] is block and block["thinkingSignature"] == sig


def test_dedupe_rejects_js_invalid_json() -> None:
    items = [{"type": "reasoning", "id": "r1"}]
    for sig in ('{"type":"reasoning","id":"r1","n":NaN}', '{"type":"reasoning","id":"r1","n":Infinity}',
                "\u00a0" + json.dumps({"type": "reasoning", "id": "r1"})):
        entry = _entry({"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "thinkingSignature": sig}],
                        "providerPayload": {"type": "openaiResponsesHistory", "items": items}})
        assert persist_transform(entry, None) is entry


def test_header_goes_through_the_transform() -> None:
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "c" * 600_000}
    assert persist_transform(header, None)["cwd"].endswith(TRUNCATION_NOTICE)


def test_odd_values_pass_through() -> None:
    for v in (None, 1, 2.5, True, "s", [], {}, [None, 1, "x"], {"a": None}):
        assert persist_transform(v, None) is v
    long_str = "x" * 600_000
    assert persist_transform(long_str, None).endswith(TRUNCATION_NOTICE)
    # Values orjson cannot encode take the slow path and still work.
    weird = {"n": 2**70, "s": "lone \ud800", "jsonlEvents": 1}
    assert persist_transform(weird, None) == {"n": 2**70, "s": "lone \ud800"}
    assert persist_transform({1: "x"}, None) == {1: "x"}


_IMG = "QUJD" * 300


@pytest.mark.parametrize("value", [
    {"details": {"jsonlEvents": []}},
    {"x": {"image_url": "data:image/png;base64,QUJD"}},
    {"x": {"image_url": ["data:image/gif;base64,"]}},
    {"x": {"type": "image_generation_call", "result": _IMG}},
    {"x": {"content": [{"type": "image", "data": _IMG}]}},
    {"x": {"content": {"type": "image", "data": _IMG}}},
    {"x": {"images": [{"data": _IMG, "mimeType": "Image/Png"}]}},
    {"x": {"frames": [{"data": _IMG, "mimeType": "image/png"}]}},
    {"x": {"frames": [{"type": "image", "data": _IMG}]}},
    {"x": "y" * 500_001},
    {"x": "\U0001F600" * 250_001},
    _entry({"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "thinkingSignature":
                                              '{"type":"reasoning","id":"r"}'}],
            "providerPayload": {"type": "openaiResponsesHistory", "items": [{"type": "reasoning", "id": "r"}]}}),
])
def test_each_trigger_alone_changes_the_value(value: Any) -> None:
    out = persist_transform(value, None)
    assert out is not value and out != value
    assert out == _ref_walk(strip_replayed_reasoning_signatures(value), None)


# ----------------------------------------------------------------- copy-on-write


def test_copy_on_write_shares_unchanged_subtrees() -> None:
    untouched = {"type": "text", "text": "keep"}
    other = {"k": [1, 2, {"z": "y"}]}
    msg = {"role": "user", "content": [untouched, {"type": "text", "text": "x" * 600_000}], "other": other,
           "timestamp": 1}
    entry = _entry(msg)
    before = copy.deepcopy(entry)
    out = persist_transform(entry, None)
    assert entry == before
    assert out is not entry and out["message"] is not msg
    assert out["message"]["content"][0] is untouched
    assert out["message"]["other"] is other
    assert list(out) == list(entry) and list(out["message"]) == list(msg)


def test_unchanged_entry_is_returned_as_is() -> None:
    msg = {"role": "assistant", "content": [{"type": "text", "text": "image data:image/ frames images"}],
           "details": {"content": "a\nb", "lineCount": 9, "image": {"type": "image", "data": "x" * 5000}}}
    entry = _entry(msg)
    assert persist_transform(entry, None) is entry


# ----------------------------------------------------------------- differential: a naive reference


def _u16(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _ref_walk(obj: Any, key: str | None) -> Any:
    """S8.7 step 2 written as plainly as possible (no fast paths), to cross-check the real one."""
    def sha_ref(data: bytes) -> str:
        return BLOB_PREFIX + hashlib.sha256(data).hexdigest()

    def nonempty(v: object) -> bool:
        return isinstance(v, str) and v != ""

    if obj is None:
        return obj
    if isinstance(obj, dict):
        t = obj.get("type")
        r = obj.get("result")
        if t == "image_generation_call" and isinstance(r, str) and not r.startswith(BLOB_PREFIX) and _u16(r) >= 1024:
            return {**obj, "result": sha_ref(b64decode_lenient(r))}
        d = obj.get("data")
        mime = obj.get("mimeType")
        is_block = t == "image" and isinstance(d, str)
        payload = isinstance(d, str) and (is_block or (isinstance(mime, str) and mime.lower().startswith("image/")))
        positioned = payload and ((key == "content" and is_block) or key in ("images", "frames"))
        if positioned and not d.startswith(BLOB_PREFIX) and _u16(d) >= 1024:
            return {**obj, "data": sha_ref(b64decode_lenient(d))}
        if t == "anthropicServerTool" and "block" in obj:
            b = obj["block"]
            bt = b.get("type") if isinstance(b, dict) else None
            use_ok = (bt == "server_tool_use" and nonempty(b.get("id"))
                      and b.get("name") in ("web_search", "tool_search_tool_regex", "tool_search_tool_bm25"))
            result_ok = (bt in ("web_search_tool_result", "tool_search_tool_result")
                         and nonempty(b.get("tool_use_id")) and "content" in b)
            if use_ok or result_ok:
                return obj
        if t == "anthropicCompaction" or (key == "anthropicCompaction" and isinstance(obj.get("content"), str)):
            return obj
        if ((t == "thinking" and nonempty(obj.get("thinkingSignature")))
                or (t == "text" and nonempty(obj.get("textSignature")))
                or (t == "toolCall" and nonempty(obj.get("thoughtSignature")))
                or (t == "redactedThinking" and nonempty(obj.get("data")))
                or (t == "reasoning" and nonempty(obj.get("encrypted_content")))):
            return obj
    if isinstance(obj, str):
        if key == "image_url" and obj.startswith("data:image/") and ";base64," in obj:
            return sha_ref(obj.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode())
        if _u16(obj) > 500_000:
            if key in ("thinkingSignature", "thoughtSignature", "textSignature"):
                return obj
            units = obj.encode("utf-16-le", "surrogatepass")[:2 * 499_953]
            if 0xD800 <= int.from_bytes(units[-2:], "little") <= 0xDBFF:
                units = units[:-2]
            return units.decode("utf-16-le", "surrogatepass") + TRUNCATION_NOTICE
        return obj
    if isinstance(obj, list):
        items = [_ref_walk(x, key) for x in obj]
        return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
    if isinstance(obj, dict):
        pairs = [(k, _ref_walk(v, k)) for k, v in obj.items() if k != "jsonlEvents"]
        if len(pairs) == len(obj) and all(nv is obj[k] for k, nv in pairs):
            return obj
        out = dict(pairs)
        lc = out.get("lineCount")
        if isinstance(out.get("content"), str) and isinstance(lc, (int, float)) and not isinstance(lc, bool):
            out["lineCount"] = len(out["content"].split("\n"))
        return out
    return obj


_KEYS = st.sampled_from(["type", "content", "data", "mimeType", "images", "frames", "image", "result",
                         "image_url", "jsonlEvents", "lineCount", "thinkingSignature", "textSignature",
                         "thoughtSignature", "encrypted_content", "block", "anthropicCompaction", "x", "role",
                         "message", "providerPayload", "items", "id", "thinking", "name", "tool_use_id"])
_STRS = st.one_of(
    st.sampled_from(["image", "images", "frames", "image_generation_call", "thinking", "text", "toolCall",
                     "redactedThinking", "reasoning", "anthropicCompaction", "anthropicServerTool",
                     "server_tool_use", "web_search", "web_search_tool_result", "tool_search_tool_result",
                     "openaiResponsesHistory", "assistant", "message", "image/png", "IMAGE/JPEG",
                     "data:image/png;base64,QUJD", "data:image/x;base64,\ud800", "blob:sha256:" + "0" * 64,
                     "a\nb", "", "sig", '{"type":"reasoning","id":"r"}', "r"]),
    st.text(max_size=8),
    st.builds(lambda n, c: c * n, st.sampled_from([511, 512, 1023, 1024, 1100]),
              st.sampled_from(["Q", "\U0001F600", "\u00e9", "\ud800"])),
)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), _STRS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=6)),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(_JSON)
def test_walk_matches_naive_reference(value: Any) -> None:
    before = copy.deepcopy(value)
    got = truncate_for_persistence(value, None)
    want = _ref_walk(value, None)
    assert got == want
    assert (got is value) == (want is value)
    assert value == before


@pytest.mark.parametrize("n", [250_001, 260_000])
def test_long_strings_match_reference(n: int) -> None:
    for s in ("\U0001F600" * n, "a" + "\U0001F600" * n, "\ud800" * (2 * n), "x" * (2 * n)):
        value = {"content": [{"type": "text", "text": s}], "k": [s]}
        assert truncate_for_persistence(value, None) == _ref_walk(value, None)


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_message_shaped_values(value: Any) -> None:
    entry = _entry({"role": "assistant", "content": [value], "providerPayload": {
        "type": "openaiResponsesHistory", "items": [value, {"type": "reasoning", "id": "r"}]}})
    before = copy.deepcopy(entry)
    assert persist_transform(entry, None) == _ref_walk(strip_replayed_reasoning_signatures(entry), None)
    assert entry == before


def test_env_has_oracle_data() -> None:
    # Guards against an accidentally emptied data directory making everything vacuous.
    for name in SCRIPT_NAMES:
        assert (DATA / "scripts" / f"{name}.json.gz").is_file()
        assert (DATA / "expected" / f"{name}.run.json.gz").is_file()
    assert os.path.getsize(DATA / "expected" / "images.blobs.json") > 100
