"""``tree`` reads no blob for an image block (its row says "[image]" whatever the blob holds), and
resolves an entry whose summary could show a reference (a tool call's ``image_url``, a label):
the rows are those of every entry resolved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pytest import MonkeyPatch

import builders
from builders import assistant, entry, header, stamp, tool_result, user
from omp_session.cli import cli
from omp_session.cli._render import summary, summary_shows_blobs
from omp_session.format.blobs import BlobStore, MemoryBlobStore, resolve_blob_refs

STORE = MemoryBlobStore()
HELD = "blob:sha256:" + STORE.put(b"\x89PNG held", "image/png")
MISSING = "blob:sha256:" + "cd" * 32
REFS = st.sampled_from([HELD, MISSING, "blob:sha256:not-hex", "plain"])


def _image(ref: str) -> dict[str, Any]:
    return {"type": "image", "data": ref, "mimeType": "image/png"}


_places = st.one_of(  # where a reference can sit in what summary reads, or next to it
    REFS, REFS.map(lambda r: {"image_url": r}), REFS.map(_image), REFS.map(lambda r: [{"x": {"image_url": r}}]),
    REFS.map(lambda r: {"type": "image_generation_call", "result": r}), st.just("text"), st.none())
_blocks = st.one_of(
    REFS.map(_image),
    st.builds(lambda t: {"type": "text", "text": t}, _places),
    st.builds(lambda a: {"type": "toolCall", "name": "look", "arguments": a}, _places),
    st.builds(lambda t, d: {"type": t, "data": d}, st.sampled_from(["image", "thinking", "text"]), _places),
    _places)
_kinds = st.sampled_from(["message", "label", "title_change", "model_change", "compaction", "branch_summary",
                          "custom", "image"])


@settings(max_examples=1500, deadline=None)
@given(_kinds, st.sampled_from(["user", "assistant", "toolResult"]), st.one_of(st.lists(_blocks, max_size=4), _places),
       st.dictionaries(st.sampled_from(["label", "title", "model", "targetId", "summary", "shortSummary",
                                        "thinkingLevel", "image_url", "data"]), _places, max_size=3))
@example("message", "assistant", [{"type": "toolCall", "name": "look", "arguments": {"image_url": HELD}}], {})
@example("label", "user", [], {"label": {"image_url": HELD}})
def test_an_entry_said_not_to_show_its_blobs_sums_up_the_same_resolved(kind: str, role: str, content: Any,
                                                                      extra: dict[str, Any]) -> None:
    value = {"type": kind, "id": "e", "parentId": None, **extra,
             "message": {"role": role, "toolName": "read", "content": content}}
    resolved = resolve_blob_refs(value, STORE)
    if not summary_shows_blobs(value):
        assert summary(resolved) == summary(value)
        assert resolved.get("type") == value.get("type")


def test_the_usual_image_is_not_shown_and_a_tool_calls_reference_is() -> None:
    image_only = entry("e", message=user([{"type": "text", "text": "see"}, _image(HELD)]))
    assert not summary_shows_blobs(image_only)
    assert not summary_shows_blobs(entry("e", message=tool_result([_image(HELD)])))
    call = entry("e", message=assistant([{"type": "toolCall", "id": "c", "name": "look",
                                          "arguments": {"image_url": HELD}}]))
    assert summary_shows_blobs(call) and summary(resolve_blob_refs(call, STORE)) != summary(call)
    assert summary_shows_blobs(entry("e", type="label", targetId="x", label={"image_url": HELD}))
    assert summary_shows_blobs([_image(HELD)]) and summary_shows_blobs(entry("e", message="text"))


def test_tree_reads_only_the_blobs_a_row_could_show(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    home = tmp_path / "agent"
    store = BlobStore(home / "blobs")
    pictures = [store.put(f"picture {n}".encode(), "image/png") for n in range(3)]
    shown = store.put(b"https://example.invalid/image.png")
    records = [header("s1", cwd="/p"),
               entry("a0000001", None, timestamp=stamp(1), message=user([{"type": "text", "text": "look"},
                                                                        _image("blob:sha256:" + pictures[0])])),
               entry("a0000002", "a0000001", timestamp=stamp(2), message=assistant(
                   [{"type": "toolCall", "id": "c1", "name": "fetch",
                     "arguments": {"image_url": "blob:sha256:" + shown}}])),
               entry("a0000003", "a0000002", timestamp=stamp(3), message=tool_result(
                   [_image("blob:sha256:" + pictures[1]), _image("blob:sha256:" + pictures[2])], call_id="c1"))]
    path = tmp_path / "s.jsonl"
    path.write_text(builders.jsonl(records), encoding="utf-8")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home))
    read: list[str] = []
    real_get = BlobStore.get
    monkeypatch.setattr(BlobStore, "get", lambda self, sha: read.append(sha) or real_get(self, sha))
    outputs = {}
    for form in ([], ["--json"]):
        read.clear()
        code, out, err = builders.run(cli, "tree", str(path), *form)
        assert code == 0, err
        assert read == [shown], read  # the tool call's reference, resolved: its row shows it
        outputs[tuple(form)] = out
    assert '→ fetch({"image_url": "https://example.invalid/' in outputs[()]  # the resolved text, clipped
    # every entry resolved, as before: the very same rows
    monkeypatch.setattr("omp_session.cli._render.summary_shows_blobs", lambda entry: True)
    for form in ([], ["--json"]):
        read.clear()
        code, out, _ = builders.run(cli, "tree", str(path), *form)
        assert code == 0 and out == outputs[tuple(form)] and sorted(read) == sorted([shown, *pictures])
    assert json.loads(outputs[("--json",)])[0]["summary"] == "user: look [image]"
