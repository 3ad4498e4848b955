"""What the public API returns is plain JSON (issue 15 item 6).

``json.dumps(omp_session.open(p).build_session_context())`` used to raise ``TypeError`` on
``UNDEFINED`` (a sanitized ``providerPayload``, an absent ``serviceTier``...). JavaScript
``undefined`` stays inside the library; every public view is dicts, lists, str, int, float,
bool and None (docs/compatibility.md, "JSON out").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import omp_session
from builders import assistant, entry, header, stamp, user, write_session
from omp_session.format.blobs import BlobStore
from omp_session.model.session import Session


def _views(s: Session) -> dict[str, Callable[[], Any]]:
    leaf = s.get_leaf_id()
    return {
        "header": s.get_header,
        "entries": lambda: list(s.entries),
        "get_entries": s.get_entries,
        "leaf_id": s.get_leaf_id,
        "branch": s.get_branch,
        "context": s.build_session_context,
        "transcript": lambda: s.build_session_context(transcript=True),
        "collapsed": lambda: s.build_session_context(collapse_compacted_history=True),
        "labels": s.labels,
        "usage": s.get_usage_statistics,
        "session_name": s.get_session_name,
        "children": lambda: [s.get_children(p) for p in {e.get("parentId") for e in s.entries
                                                           if isinstance(e, dict) and isinstance(e.get("parentId"), str)}],
        "entry": lambda: s.get_entry(leaf) if isinstance(leaf, str) else None,
        "tree": lambda: [(n.id, n.label) for n in s.get_tree()] if not s.get_tree().hangs_in_omp else [],
    }


def _dump(value: Any) -> str:
    # allow_nan: omp's usage sums can be NaN (a non-numeric cost); that is a number, not a leak
    return json.dumps(value, allow_nan=True)


def _copilot_session(tmp_path: Path) -> Path:
    turn = assistant([{"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
                      {"type": "text", "text": "hi"}], provider="github-copilot", api="openai-responses",
                     providerPayload={"type": "openaiResponsesHistory", "items": []})
    return write_session(tmp_path / "s.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user("hello")),
        entry("a1", "u1", timestamp=stamp(2), message=turn),
    ])


def test_sanitized_copilot_turn_is_json(tmp_path: Path) -> None:
    s = omp_session.open(_copilot_session(tmp_path))
    for name, view in _views(s).items():
        assert isinstance(_dump(view()), str), name
    message = s.build_session_context()["messages"][1]
    assert "providerPayload" not in message
    assert all("thinkingSignature" not in b for b in message["content"])


def test_context_of_a_header_only_session_is_json(tmp_path: Path) -> None:
    s = omp_session.open(write_session(tmp_path / "s.jsonl", [], head=header()))
    assert _dump(s.build_session_context())


def test_every_view_of_the_corpus_is_json(make_corpus: Callable[[int, int], Path]) -> None:
    corpus = make_corpus(15, 120)
    store = BlobStore(corpus / "blobs")
    failures: list[str] = []
    for path in sorted(corpus.glob("*.jsonl")):
        try:
            s = omp_session.open(path, blob_store=store)
        except omp_session.SessionError:
            continue
        with s:
            for name, view in _views(s).items():
                try:
                    value = view()
                except omp_session.SessionError:
                    continue
                except (TypeError, AttributeError, KeyError, IndexError) as e:  # omp throws on these shapes too
                    if "JSON" in str(e) or "serializable" in str(e):
                        failures.append(f"{path.name} {name}: {e}")
                    continue
                try:
                    _dump(value)
                except (TypeError, ValueError) as e:
                    failures.append(f"{path.name} {name}: {e}")
    assert failures == []


@pytest.mark.parametrize("kind", ["context", "transcript"])
def test_absent_optional_fields_are_absent_not_undefined(tmp_path: Path, kind: str) -> None:
    s = omp_session.open(write_session(tmp_path / "s.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user("hello")),
    ]))
    ctx = s.build_session_context(transcript=kind == "transcript")
    assert all(v is not omp_session.UNDEFINED for v in ctx.values())
    assert "serviceTier" not in ctx and "modeData" not in ctx
