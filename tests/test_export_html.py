"""The self-contained HTML viewer (export_html.py): the page itself, then the page in chromium.

The browser test runs tests/browser/check_viewer.mjs (playwright-core driving Debian's chromium)
and compares what the page shows with the session's own branches; tests/browser/setup.sh
installs both when missing.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import omp_session
from omp_session.blobs import MemoryBlobStore
from omp_session.errors import EntryNotFoundError
from omp_session.export import branch_tips, faithful_json
from omp_session.export_html import DATA_ELEMENT_ID, embed_json, render_html
from omp_session.export_viewer_js import VIEWER_JS

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"
BROWSER_DIR = ROOT / "tests" / "browser"
CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))

# a 2x2 red PNG: small enough to inline, real enough for the browser to decode
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZGgEC4m7Q4QAAAABJRU5ErkJggg==")
EVIL = '</script><script>window.pwned=1</script><!-- <img src="http://example.invalid/x.png"> \u2028 </SCRIPT >'


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _ts(n: int) -> str:
    return f"2026-01-01T00:00:{n:02d}.000Z"


def _message(eid: str, parent: str | None, n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": _ts(n), "message": message}


def _assistant(content: list[Any], cost: float) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "provider": "anthropic", "model": "claude-sonnet-4-5",
            "api": "anthropic-messages", "stopReason": "stop", "timestamp": 1767225600000,
            "usage": {"input": 1000, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1050,
                      "cost": {"input": 0.003, "output": 0.001, "cacheRead": 0, "cacheWrite": 0, "total": cost}}}


def write_rich_session(path: Path, store_ref: str, missing_ref: str) -> Path:
    """Two branches, a label, thinking, a tool call with a long output, inline and blob images,
    and content that tries to break out of the script tag."""
    long_output = "\n".join(f"line {i}: needle-{i}" for i in range(120))
    entries = [
        {"type": "model_change", "id": "m0", "parentId": None, "timestamp": _ts(0),
         "model": "anthropic/claude-sonnet-4-5"},
        _message("u1", "m0", 1, {"role": "user", "timestamp": 1, "content": [
            {"type": "text", "text": "Look at this screenshot " + EVIL},
            {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG).decode()}]}),
        _message("a1", "u1", 2, _assistant([
            {"type": "thinking", "thinking": "I should list the files first."},
            {"type": "text", "text": "Listing the files."},
            {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls -R", "evil": EVIL}}],
            0.0123)),
        _message("t1", "a1", 3, {"role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
                                  "content": [{"type": "text", "text": long_output}], "isError": False,
                                  "timestamp": 2}),
        _message("a2", "t1", 4, _assistant([{"type": "text", "text": "Found 120 needle lines."}], 0.002)),
        {"type": "label", "id": "l1", "parentId": "a2", "timestamp": _ts(5), "targetId": "a2", "label": "found-it"},
        _message("u2", "l1", 6, {"role": "user", "timestamp": 3, "content": "Now show the diagram."}),
        _message("a3", "u2", 7, _assistant([{"type": "text", "text": "Here it is."}], 0.001)),
        _message("t2", "a3", 8, {"role": "toolResult", "toolCallId": "call_2", "toolName": "render",
                                  "isError": False, "timestamp": 4, "content": [
                                      {"type": "text", "text": "rendered"},
                                      {"type": "image", "mimeType": "image/png", "data": store_ref},
                                      {"type": "image", "mimeType": "image/png", "data": missing_ref}]}),
        # a second branch forking at a2: the user went another way
        _message("u3", "a2", 9, {"role": "user", "timestamp": 5, "content": "Instead, count the needles."}),
        _message("a4", "u3", 10, _assistant([{"type": "text", "text": "There are 120 needles."}], 0.004)),
    ]
    header = {"type": "session", "version": 3, "id": "11111111-2222-4333-8444-555555555555",
              "timestamp": _ts(0), "cwd": "/home/dev/project"}
    path.write_text("".join(_line(v) + "\n" for v in [header, *entries]), encoding="utf-8")
    return path


@pytest.fixture
def rich(tmp_path: Path) -> tuple[Path, MemoryBlobStore]:
    store = MemoryBlobStore()
    ref = "blob:sha256:" + store.put(PNG, "image/png")
    missing = "blob:sha256:" + "0" * 64
    return write_rich_session(tmp_path / "rich.jsonl", ref, missing), store


class _Scripts(HTMLParser):
    """The script elements as an HTML parser sees them: breaking out would add one."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.refs: list[str] = []
        self._attrs: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]
        if tag == "script":
            self._attrs = dict(attrs)

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            self.scripts.append((self._attrs, data))
            self._attrs = None


def _parse(page: str) -> _Scripts:
    parser = _Scripts()
    parser.feed(page)
    return parser


def _data(page: str) -> Any:
    scripts = [body for attrs, body in _parse(page).scripts if attrs.get("id") == DATA_ELEMENT_ID]
    assert len(scripts) == 1
    return json.loads(scripts[0])


# ----- the page ----------------------------------------------------------------------------------


def test_self_contained_no_network_references(rich: tuple[Path, MemoryBlobStore]) -> None:
    path, store = rich
    with omp_session.open(path, blob_store=MemoryBlobStore()) as session:
        page = render_html(session, blob_store=store)
    parsed = _parse(page)
    assert [a.get("type") for a, _ in parsed.scripts] == ["application/json", None]
    assert not any(re.match(r"\s*(https?:)?//", ref, re.I) for ref in parsed.refs)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page  # the CSP is what forbids network access in the browser


def test_embedded_json_round_trips_the_entries() -> None:
    with omp_session.open(SAMPLE) as session:
        data = _data(render_html(session))
        faithful = json.loads(faithful_json(session))
        assert data["entries"] == faithful["entries"]
        assert data["ids"] == list(session.ids)
        assert data["parents"] == list(session.parent_index)
        assert data["tips"] == branch_tips(session)
        assert data["ids"][data["leaf"]] == session.get_leaf_id()
        assert data["title"] == session.get_session_name()
        assert {data["ids"][int(k)]: v for k, v in data["labels"].items()} == session.labels()


def test_script_tag_escaping_with_adversarial_content(rich: tuple[Path, MemoryBlobStore]) -> None:
    path, _ = rich
    with omp_session.open(path, blob_store=MemoryBlobStore()) as session:
        page = render_html(session)
        entries = [session.entry_at(k) for k in range(len(session))]
    assert page.lower().count("</script") == 2  # the two real closing tags, nothing from content
    assert "<!--" not in page and "\u2028" not in page
    data = _data(page)
    assert data["entries"] == entries
    assert EVIL in data["entries"][1]["message"]["content"][0]["text"]
    assert data["entries"][2]["message"]["content"][2]["arguments"]["evil"] == EVIL


def test_embed_json_keeps_meaning() -> None:
    value = {"a": "</script><!--", "b": "\u2028\u2029", "c": ["<", "<<"]}
    assert json.loads(embed_json(json.dumps(value, ensure_ascii=False))) == value
    assert "</script" not in VIEWER_JS.lower() and "<!--" not in VIEWER_JS


def test_leaf_option_and_unknown_leaf() -> None:
    with omp_session.open(SAMPLE) as session:
        data = _data(render_html(session, leaf="a1b45091"))
        assert data["ids"][data["leaf"]] == "a1b45091"
        with pytest.raises(EntryNotFoundError):
            render_html(session, leaf="nope")


def test_blob_refs_resolved_only_from_the_store(rich: tuple[Path, MemoryBlobStore]) -> None:
    path, store = rich
    with omp_session.open(path, blob_store=MemoryBlobStore()) as session:
        unresolved = _data(render_html(session))
        resolved = _data(render_html(session, blob_store=store))
    images = resolved["entries"][8]["message"]["content"]
    assert base64.b64decode(images[1]["data"]) == PNG
    assert images[2]["data"].startswith("blob:sha256:0000")  # not in the store: a placeholder
    assert unresolved["entries"][8]["message"]["content"][1]["data"].startswith("blob:sha256:")


# ----- the page in a real browser --------------------------------------------------------------


@pytest.fixture(scope="module")
def browser_ready() -> None:
    """Chromium and playwright-core, installed by tests/browser/setup.sh when missing (it is a
    no-op when both are there); a failure here fails the test rather than skipping it."""
    if not CHROMIUM.exists() or not (BROWSER_DIR / "node_modules" / "playwright-core").is_dir():
        subprocess.run(["bash", str(BROWSER_DIR / "setup.sh")], check=True)
    assert shutil.which("node"), "node is needed for the browser test"


def _artefacts(tmp_path: Path) -> Path:
    out = Path(os.environ.get("OMP_TEST_ARTIFACTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    return out


def _view(page_path: Path, shot: Path, query: str) -> dict[str, Any]:
    run = subprocess.run(["node", str(BROWSER_DIR / "check_viewer.mjs"), str(page_path), str(shot),
                          "--query", query], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    summary: dict[str, Any] = json.loads(run.stdout)
    return summary


def _role(entry: Any) -> Any:
    message = entry.get("message") if isinstance(entry, dict) else None
    return message.get("role") if isinstance(message, dict) else None


@pytest.mark.browser
@pytest.mark.parametrize("which", ["sample", "rich"])
def test_viewer_in_chromium(which: str, tmp_path: Path, rich: tuple[Path, MemoryBlobStore],
                            browser_ready: None) -> None:
    path, store = (SAMPLE, None) if which == "sample" else rich
    query = "csv" if which == "sample" else "needle-1"
    with omp_session.open(path, blob_store=MemoryBlobStore()) as session:
        page_path = tmp_path / f"{which}.html"
        page_path.write_text(render_html(session, blob_store=store), encoding="utf-8")
        shot = _artefacts(tmp_path) / f"viewer-{which}.png"
        shown = _view(page_path, shot, query)

        ids = session.ids
        assert shown["errors"] == [] and shown["network"] == []
        assert [r["id"] for r in shown["tree"]] and len(shown["tree"]) == len(session)
        assert shown["initial"]["selected"] == [session.get_leaf_id()]
        # every branch of the session is reachable from the tree, and shows exactly its path
        tips = {ids[k] for k in branch_tips(session)}
        assert set(shown["branches"]) == tips
        for tip, view in shown["branches"].items():
            path_ids = [ids[k] for k in session.branch_indices(tip)]
            assert view["shown"] == path_ids
            assert view["onPath"] == path_ids
        # filters on the first branch in tree order
        first = next(r["id"] for r in shown["tree"] if r["tip"])
        branch = list(session.branch_indices(first))
        entries = {ids[k]: session.entry_at(k) for k in branch}
        filters = shown["filters"]
        assert filters["all"]["shown"] == [ids[k] for k in branch]
        assert filters["user"]["shown"] == [i for i, e in entries.items() if _role(e) == "user"]
        assert filters["labeled"]["shown"] == [i for i in entries if session.get_label(i) is not None]
        assert filters["labeled"]["shown"]
        assert filters["no-tools"]["toolCalls"] == 0 and filters["default"]["toolCalls"] > 0
        assert not [i for i in filters["no-tools"]["shown"] if _role(entries[i]) == "toolResult"]
        assert set(filters["default"]["shown"]) - set(filters["no-tools"]["shown"]) == {
            i for i in filters["default"]["shown"] if _role(entries[i]) == "toolResult"}
    # search: highlighted hits, next/previous step through them
    hits = shown["search"]["hits"]
    assert hits and all(h.lower() == query for h in hits)
    n = len(hits)
    assert shown["search"]["countFirst"] == f"1/{n}"
    assert shown["search"]["countNext"] == (f"2/{n}" if n > 1 else "1/1")
    assert shown["search"]["countPrev"] == f"1/{n}"
    # a collapsed body is empty until opened
    assert shown["expand"] is not None and shown["expand"]["summary"].startswith(
        "Output" if which == "rich" else "Thinking")
    assert shown["expand"]["bodyBefore"] == 0 and shown["expand"]["open"] and shown["expand"]["bodyChars"] > 0
    assert Path(shown["screenshot"]).stat().st_size > 1000
    if which == "rich":
        # the long output was collapsed; search opened it to highlight its hits
        assert n == 1 + 10 + 20  # needle-1, needle-10..19, needle-100..119
        # the first branch: the inline image and the one from the store decode; the missing blob
        # is a placeholder
        assert [img["w"] for img in shown["images"]] == [2, 2]
        assert len(shown["placeholders"]) == 1 and "blob:sha256:0000" in shown["placeholders"][0]
        assert "pwned" not in json.dumps(shown["errors"])
