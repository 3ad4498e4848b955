"""The persistence walk at any depth: the iterative walk writes what the recursive one it replaced
wrote (same bytes, same shared subtrees, same blobs in the same order), and a value nested
100,000 deep is appended and externalized like any other."""

from __future__ import annotations

import base64
import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import builders
import omp_session
from omp_session import SessionManager
from omp_session.cli import cli
from omp_session.format.blobs import BLOB_PREFIX, BlobSink, BlobStore, b64decode_lenient
from omp_session.js import codec
from omp_session.write import persist
from omp_session.write.persist import persist_transform, truncate_for_persistence

# ----------------------------------------------------------------- the recursive reference
# The walk as it was before it became iterative (recursive, so only for depths Python's stack takes).


def _ref_walk(obj: Any, key: str | None, sink: BlobSink) -> Any:
    if isinstance(obj, str):
        return _ref_walk_str(obj, key, sink)
    if isinstance(obj, list):
        return _ref_walk_list(obj, key, sink)
    if isinstance(obj, dict):
        return _ref_walk_dict(obj, key, sink)
    return obj


def _ref_walk_str(s: str, key: str | None, sink: BlobSink) -> str:
    if key == "image_url" and s.startswith("data:image/") and ";base64," in s:
        return persist._ref(sink, persist._data_url_bytes(s))
    if len(s) > persist._HALF_MAX and codec.utf16_len(s) > persist.MAX_PERSIST_CHARS:
        if key in persist._SIGNATURE_KEYS:
            return s
        return persist._truncate(s)
    return s


def _ref_walk_list(obj: list[Any], key: str | None, sink: BlobSink) -> list[Any]:
    new_list: list[Any] | None = None
    for i, item in enumerate(obj):
        new_item = _ref_walk(item, key, sink)
        if new_item is not item:
            if new_list is None:
                new_list = list(obj)
            new_list[i] = new_item
    return obj if new_list is None else new_list


def _ref_walk_dict(obj: dict[str, Any], key: str | None, sink: BlobSink) -> dict[str, Any]:
    t = obj.get("type")
    if t == "image_generation_call":
        result = obj.get("result")
        if (isinstance(result, str) and not result.startswith(BLOB_PREFIX)
                and persist._at_least_units(result, persist.BLOB_EXTERNALIZE_MIN)):
            out = dict(obj)
            out["result"] = persist._ref(sink, b64decode_lenient(result))
            return out
    if key in persist._IMAGE_KEYS and persist.is_externalizable_image_position(obj, key):
        data = obj["data"]
        if not data.startswith(BLOB_PREFIX) and persist._at_least_units(data, persist.BLOB_EXTERNALIZE_MIN):
            out = dict(obj)
            out["data"] = persist._ref(sink, b64decode_lenient(data), obj.get("mimeType"))
            return out
    if (t is not None or key == "anthropicCompaction") and persist._is_verbatim(obj, key):
        return obj
    new_obj: dict[str, Any] | None = None
    for k, v in obj.items():
        if k == "jsonlEvents":
            if new_obj is None:
                new_obj = persist._prefix_copy(obj, k)
            continue
        nv = _ref_walk(v, k, sink)
        if new_obj is None:
            if nv is v:
                continue
            new_obj = persist._prefix_copy(obj, k)
        new_obj[k] = nv
    if new_obj is None:
        return obj
    content = new_obj.get("content")
    line_count = new_obj.get("lineCount")
    if isinstance(content, str) and isinstance(line_count, (int, float)) and not isinstance(line_count, bool):
        new_obj["lineCount"] = content.count("\n") + 1
    return new_obj


class _Recording:
    def __init__(self) -> None:
        self.puts: list[tuple[str, str | None]] = []

    def put(self, data: bytes, mime_type: str | None = None) -> str:
        sha = hashlib.sha256(data).hexdigest()
        self.puts.append((sha, mime_type))
        return sha


def _sharing(out: Any, orig: Any) -> Iterator[tuple[bool, str]]:
    """Per node of ``out`` in depth-first order: whether it is the very node of ``orig``."""
    todo = [(out, orig)]
    while todo:
        a, b = todo.pop()
        yield a is b, type(a).__name__
        if a is b:
            continue
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            todo.extend(zip(a, b, strict=True))
        elif isinstance(a, dict) and isinstance(b, dict):
            todo.extend((v, b[k]) for k, v in a.items() if k in b)


# ----------------------------------------------------------------- random values, deep

_B64 = base64.b64encode(random.Random(1).randbytes(1500)).decode()  # 2,000 characters: moves
_SMALL_B64 = base64.b64encode(random.Random(2).randbytes(600)).decode()  # 800: stays inline
_HUGE = "w" * (persist.MAX_PERSIST_CHARS + 1)  # truncated
_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "a\nb", "text", BLOB_PREFIX + "0" * 64]),
    st.sampled_from([
        {"type": "image", "data": _B64, "mimeType": "image/png"},
        {"type": "image", "data": _SMALL_B64, "mimeType": "image/jpeg"},
        {"data": _B64, "mimeType": "image/gif"},
        {"type": "image_generation_call", "result": _B64},
        {"image_url": "data:image/png;base64," + _B64},
        {"image_url": ["data:image/webp;base64," + _SMALL_B64]},
        {"type": "text", "text": _HUGE},
        {"thinkingSignature": _HUGE},
        {"type": "thinking", "thinking": "t", "thinkingSignature": "sig", "x": _HUGE},
        {"content": "a\nb\nc", "lineCount": 1, "jsonlEvents": [1]},
        {"content": _HUGE, "lineCount": 0},
    ]),
)
_KEYS = st.sampled_from(["content", "images", "frames", "details", "x", "image_url", "jsonlEvents", "items"])
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=20)
_WRAPPERS = st.sampled_from(["list", "content", "images", "frames", "a", "details"])


def _wrap(value: Any, wrappers: list[str], depth: int) -> Any:
    for k in range(depth):
        w = wrappers[k % len(wrappers)]
        value = [value] if w == "list" else {w: value, "n": k}
    return value


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.lists(_WRAPPERS, min_size=1, max_size=5), st.integers(0, 480))
def test_the_iterative_walk_writes_what_the_recursive_one_wrote(value: Any, wrappers: list[str],
                                                               depth: int) -> None:
    value = _wrap(value, wrappers, depth)
    before = codec.dumps_line(value)
    got_sink, want_sink = _Recording(), _Recording()
    got = truncate_for_persistence(value, got_sink)
    want = _ref_walk(value, None, want_sink)
    assert codec.dumps_line(got) == codec.dumps_line(want)
    assert list(_sharing(got, value)) == list(_sharing(want, value))
    assert got_sink.puts == want_sink.puts
    assert codec.dumps_line(value) == before  # the input is never changed


# ----------------------------------------------------------------- 100,000 deep, public API

DEPTH = 100_000


def _deep_image(data: str) -> list[Any]:
    value: Any = {"type": "image", "data": data, "mimeType": "image/png"}
    for _ in range(DEPTH):  # array items inherit the array's key: "content" at every level
        value = [value]
    return value  # type: ignore[no-any-return]


def _dig(value: Any) -> Any:
    while isinstance(value, list):
        value = value[0]
    return value


def test_append_externalizes_an_image_nested_100_000_deep(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    sm = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), blob_store=store)
    sm.append_message({"role": "user", "content": [{"type": "text", "text": "deep"}, _deep_image(_B64)],
                       "timestamp": 1})
    sm.append_message(builders.assistant("ok"))
    path = sm.get_session_file() or ""
    sm.close()
    record = codec.loads(Path(path).read_bytes().splitlines()[2])
    ref = _dig(record["message"]["content"][1])["data"]
    assert ref == BLOB_PREFIX + hashlib.sha256(base64.b64decode(_B64)).hexdigest() and ref[12:] in store
    with omp_session.open(path) as s:
        assert [e["type"] for e in s.get_entries()] == ["message", "message"]


def test_cli_externalize_moves_an_image_nested_100_000_deep(tmp_path: Path) -> None:
    frames: Any = {"frames": [{"data": _B64, "mimeType": "image/png"}]}
    for _ in range(DEPTH):
        frames = {"a": frames}
    records = [
        builders.header("0199aaaa-0000-7000-8000-000000000002"),
        builders.entry("u1", None, message=builders.user([{"type": "text", "text": "deep"}, _deep_image(_B64)])),
        builders.entry("c1", "u1", type="custom", customType="x", data=frames),
        builders.entry("a1", "c1", message=builders.assistant("ok")),
    ]
    src = tmp_path / "s.jsonl"
    lines = [codec.dumps_line(r) for r in records]
    src.write_bytes(b"".join(lines))
    out = tmp_path / "o.jsonl"
    r = CliRunner().invoke(cli, ["externalize", str(src), "-o", str(out), "--blobs", str(tmp_path / "b"), "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["images_moved"] == 1 and report["records_changed"] == 1 and report["kept_frames"] == 1
    new = out.read_bytes().splitlines(keepends=True)
    assert new[0] == lines[0] and new[2:] == lines[2:]  # the frames stay inline: that record is copied
    moved = _dig(codec.loads(new[1])["message"]["content"][1])["data"]
    assert moved.startswith(BLOB_PREFIX) and (tmp_path / "b" / moved[12:]).exists()
    walked = persist_transform(records[2], None)["data"]  # omp's write moves frames; its loader keeps refs
    for _ in range(DEPTH):
        walked = walked["a"]
    assert walked["frames"][0]["data"].startswith(BLOB_PREFIX)
