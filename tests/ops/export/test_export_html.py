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
import subprocess
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import omp_session
import omp_session.model.session
from builders import assistant, entry, header, stamp, usage, user, write_session
from omp_session.cli.export import export as export_command
from omp_session.errors import EntryNotFoundError, SessionFileError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.js.codec import UNDEFINED
from omp_session.ops.export.formats import branch_tips, faithful_json
from omp_session.ops.export.html import DATA_ELEMENT_ID, SUBAGENT_ELEMENT_PREFIX, embed_json, render_html
from omp_session.ops.export.subagents import artifacts_dir, find_subagents, task_agent_ids
from omp_session.ops.export.viewer_js import VIEWER_JS

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"
BROWSER_DIR = ROOT / "tests" / "browser"

# a 2x2 red PNG: small enough to inline, real enough for the browser to decode
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZGgEC4m7Q4QAAAABJRU5ErkJggg==")
EVIL = '</script><script>window.pwned=1</script><!-- <img src="http://example.invalid/x.png"> \u2028 </SCRIPT >'


def _header(sid: str, cwd: str = "/home/dev/project") -> dict[str, Any]:
    return header(sid, timestamp=stamp(0), cwd=cwd)


def _message(eid: str, parent: str | None, n: int, message: dict[str, Any]) -> dict[str, Any]:
    return entry(eid, parent, timestamp=stamp(n), message=message)


def _assistant(content: list[Any], cost: float) -> dict[str, Any]:
    return assistant(content, model="claude-sonnet-4-5", timestamp=1767225600000,
                     usage=usage(1000, 50, cost, cost_input=0.003, cost_output=0.001))


def write_rich_session(path: Path, store_ref: str, missing_ref: str) -> Path:
    """Two branches, a label, thinking, a tool call with a long output, inline and blob images,
    and content that tries to break out of the script tag."""
    long_output = "\n".join(f"line {i}: needle-{i}" for i in range(120))
    entries = [
        {"type": "model_change", "id": "m0", "parentId": None, "timestamp": stamp(0),
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
        {"type": "label", "id": "l1", "parentId": "a2", "timestamp": stamp(5), "targetId": "a2", "label": "found-it"},
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
    return write_session(path, entries, head=_header("11111111-2222-4333-8444-555555555555"), compact=False)


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


def _data(page: str, element: str = DATA_ELEMENT_ID) -> Any:
    scripts = [body for attrs, body in _parse(page).scripts if attrs.get("id") == element]
    assert len(scripts) == 1
    return json.loads(scripts[0])


def _write(path: Path, sid: str, entries: list[dict[str, Any]]) -> Path:
    return write_session(path, entries, head=_header(sid), compact=False)


def _task(call_id: str, parent: str, n: int, agents: list[str], *, progress: Sequence[str] = ()) -> list[dict[str, Any]]:
    """An assistant turn calling the task tool and the tool result naming the agents it ran."""
    call = _message(f"c{n}", parent, n, _assistant([
        {"type": "toolCall", "id": call_id, "name": "task", "arguments": {"tasks": [{"name": a} for a in agents]}}],
        0.01))
    details = {"projectAgentsDir": None, "totalDurationMs": 10,
               "results": [{"index": i, "id": a, "agent": "task", "task": "look", "exitCode": 0, "output": "done",
                            "stderr": "", "truncated": False, "durationMs": 5, "tokens": 9, "requests": 1}
                           for i, a in enumerate(agents)],
               "progress": [{"index": 0, "id": a, "status": "running"} for a in progress]}
    result = _message(f"r{n}", f"c{n}", n + 1, {"role": "toolResult", "toolCallId": call_id, "toolName": "task",
                                                "content": [{"type": "text", "text": "agents finished"}],
                                                "details": details, "isError": False, "timestamp": n})
    return [call, result]


def write_task_sessions(root: Path) -> Path:
    """A session whose task results name Anna (embedded), Bob (no file) and ../evil (not a file
    name); Anna ran Anna.Carl in turn; Extra.jsonl and the advisor's transcript sit in the folder
    unnamed; an output spill and a backup are no transcripts."""
    parent = root / "2026-01-01T00-00-00-000Z_parent.jsonl"
    folder = artifacts_dir(parent)
    assert folder is not None
    _write(parent, "parent-session", [
        _message("u1", None, 1, {"role": "user", "timestamp": 1, "content": "Split the work."}),
        *_task("call_t1", "u1", 2, ["Anna", "Bob"]),
        *_task("call_t2", "r2", 4, ["../evil"], progress=["Anna"]),
        _message("a9", "r4", 9, _assistant([{"type": "text", "text": "Both done."}], 0.001)),
    ])
    _write(folder / "Anna.jsonl", "anna-session", [
        _message("au1", None, 1, {"role": "user", "timestamp": 1, "content": "Look at the parser " + EVIL}),
        *_task("call_a1", "au1", 2, ["Anna.Carl"]),
        _message("aa1", "r2", 4, _assistant([{"type": "text", "text": "Anna's answer: subagent-needle."}], 0.002)),
    ])
    _write(folder / "Anna" / "Anna.Carl.jsonl", "carl-session", [
        _message("cu1", None, 1, {"role": "user", "timestamp": 1, "content": "Carl's task."})])
    _write(folder / "Extra.jsonl", "extra-session", [
        _message("eu1", None, 1, {"role": "user", "timestamp": 1, "content": "An unnamed subagent."})])
    _write(folder / "__advisor.jsonl", "advisor-session", [])
    _write(folder / "Anna.jsonl.bak", "backup", [])
    (folder / "1.bash.log").write_text("output spill\n", encoding="utf-8")
    (root / "evil.jsonl").write_text("must never be read\n", encoding="utf-8")
    return parent


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


def test_hostile_header_fields_are_embedded_safely(tmp_path: Path) -> None:
    path = tmp_path / "evil.jsonl"
    write_session(path, [_message("u1", None, 1, user("\u2029" + EVIL))], head=_header(EVIL, cwd=EVIL), compact=False)
    with omp_session.open(path) as session:
        page = render_html(session)
    assert page.lower().count("</script") == 2 and "\u2028" not in page and "\u2029" not in page
    data = _data(page)
    assert data["cwd"] == data["session_id"] == data["header"]["id"] == EVIL
    assert data["entries"][0]["message"]["content"] == "\u2029" + EVIL


def test_embed_json_keeps_meaning() -> None:
    value = {"a": "</script><!--", "b": "\u2028\u2029", "c": ["<", "<<"]}
    assert json.loads(embed_json(json.dumps(value, ensure_ascii=False))) == value
    assert "</script" not in VIEWER_JS.lower() and "<!--" not in VIEWER_JS


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["\u2028", "\u2029", "\u2020", "\u2019", "\u202f", "\u2027", "<", "a", "é",
                                 "\u2080", "\u00a8"]), max_size=30))
def test_embedding_bytes_is_embedding_the_text(pieces: list[str]) -> None:
    from omp_session.ops.export.html import _embed_bytes

    text = json.dumps("".join(pieces), ensure_ascii=False)
    assert _embed_bytes(text.encode()) == embed_json(text).encode()


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


CORPUS = sorted([*(ROOT / "tests" / "data" / "listing" / "inputs" / "gen").glob("00[0-3]?_*.jsonl"),
                 *(ROOT / "tests" / "data" / "oracle_examples").glob("*.jsonl")])


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_page_entries_are_the_loaded_entries(path: Path) -> None:
    """The page copies unchanged lines from the file and serializes the entries loading changed
    (migrated, blob references, Copilot replay data): either way the browser gets the loaded
    entries, damaged files included."""
    with omp_session.open(path) as session:
        data = _data(render_html(session))
        assert data["entries"] == [session.entry_at(k) for k in range(len(session))]
        assert data["ids"] == [None if i is UNDEFINED else i for i in session.ids]


def test_copilot_replay_data_is_left_out_as_omp_loads_it(tmp_path: Path) -> None:
    replay = _assistant([{"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
                         {"type": "text", "text": "ok"}], 0.001)
    replay.update(provider="github-copilot", providerPayload={"type": "openaiResponsesHistory", "items": [1]})
    path = _write(tmp_path / "copilot.jsonl", "copilot", [
        _message("u1", None, 1, {"role": "user", "timestamp": 1, "content": "hi"}), _message("a1", "u1", 2, replay)])
    assert b"providerPayload" in path.read_bytes()
    with omp_session.open(path) as session:
        assert session.sanitized
        message = _data(render_html(session))["entries"][1]["message"]
    assert "providerPayload" not in message and "thinkingSignature" not in message["content"][0]


# ----- the page in a real browser --------------------------------------------------------------


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
        # indented only for side branches: at a fork the last child continues at the fork's indent
        parent, depth = session.parent_index, {r["k"]: r["depth"] for r in shown["tree"]}
        kids: dict[int, list[int]] = {}
        for k in range(len(session)):
            if parent[k] >= 0:
                kids.setdefault(parent[k], []).append(k)
        for k, d in depth.items():
            p = parent[k]
            assert d == (0 if p < 0 else depth[p] + (len(kids[p]) > 1 and kids[p][-1] != k)), ids[k]
        assert 0 in depth.values() and 1 in depth.values()  # (both sessions have side branches)
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


# ----- subagents ---------------------------------------------------------------------------------


def test_task_agent_ids_and_find_subagents(tmp_path: Path) -> None:
    parent = write_task_sessions(tmp_path)
    with omp_session.open(parent) as session:
        refs: dict[str, list[int]] = {}
        for k in range(len(session)):
            for agent in task_agent_ids(session.entry_at(k)):
                refs.setdefault(agent, []).append(k)
    assert refs == {"Anna": [2, 4], "Bob": [2], "../evil": [4]}
    found = find_subagents(parent, refs)
    assert [(f.agent_id, f.exists, f.refs) for f in found] == [
        ("Anna", True, (2, 4)), ("Bob", False, (2,)), ("../evil", False, (4,)), ("Extra", True, ()),
        ("__advisor", True, ())]
    assert found[0].path == tmp_path / "2026-01-01T00-00-00-000Z_parent" / "Anna.jsonl"
    assert found[2].path == Path("../evil.jsonl")  # never resolved against the folder
    assert task_agent_ids({"type": "message", "message": {"role": "toolResult", "toolName": "bash",
                                                          "details": {"results": [{"id": "x"}]}}}) == []
    assert artifacts_dir("s.json") is None and find_subagents(tmp_path / "none.jsonl", {}) == []


def test_subagents_embedded_as_lazy_blocks_and_linked(tmp_path: Path) -> None:
    parent = write_task_sessions(tmp_path)
    problems: list[str] = []
    with omp_session.open(parent) as session:
        page = render_html(session, on_problem=problems.append)
    data = _data(page)
    subs = {s["id"]: s for s in data["subagents"]}
    assert list(subs) == ["Anna", "Bob", "../evil", "Extra", "__advisor"]
    assert subs["__advisor"]["entries"] == 0 and subs["__advisor"]["doc"] is not None
    assert subs["Anna"]["refs"] == [2, 4] and subs["Anna"]["entries"] == 4
    assert subs["Anna"]["file"] == "2026-01-01T00-00-00-000Z_parent/Anna.jsonl"
    assert subs["Bob"]["doc"] is None and "not found" in subs["Bob"]["note"]
    assert subs["../evil"]["doc"] is None and subs["Extra"]["refs"] == []
    assert len(problems) == 2 and all("subagent transcript not found" in p for p in problems)
    anna = _data(page, f"{SUBAGENT_ELEMENT_PREFIX}{subs['Anna']['doc']}")
    with omp_session.open(artifacts_dir(parent) / "Anna.jsonl") as sub:  # type: ignore[operator]
        assert anna["entries"] == [sub.entry_at(k) for k in range(len(sub))]
        assert anna["ids"][anna["leaf"]] == sub.get_leaf_id()
    carl = anna["subagents"][0]
    assert carl["id"] == "Anna.Carl" and carl["refs"] == [2] and carl["doc"] is not None
    assert _data(page, f"{SUBAGENT_ELEMENT_PREFIX}{carl['doc']}")["entries"][0]["id"] == "cu1"
    assert "must never be read" not in page and "output spill" not in page and '"backup"' not in page
    assert str(tmp_path) not in page  # the page names files relative to the session; warnings in full
    assert subs["Bob"]["note"] == "2026-01-01T00-00-00-000Z_parent/Bob.jsonl: subagent transcript not found"
    assert str(tmp_path) in problems[0]
    # hostile text in a subagent cannot close its block either: one closing tag per script element
    assert page.lower().count("</script") == len(_parse(page).scripts) == 6


def test_subagents_off_and_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = write_task_sessions(tmp_path)
    with omp_session.open(parent) as session:
        page = render_html(session, subagents=False)
        assert _data(page)["subagents"] == [] and len(_parse(page).scripts) == 2
        real_open = omp_session.open

        def failing_open(path: Any, **kwargs: Any) -> Any:
            if str(path).endswith("Extra.jsonl"):
                raise SessionFileError(str(path), "permission denied")
            return real_open(path, **kwargs)

        monkeypatch.setattr(omp_session.model.session, "open_session", failing_open)
        problems: list[str] = []
        extra = {s["id"]: s for s in _data(render_html(session, on_problem=problems.append))["subagents"]}["Extra"]
    assert extra["doc"] is None
    assert extra["note"] == "2026-01-01T00-00-00-000Z_parent/Extra.jsonl: subagent transcript not readable: permission denied"
    assert any("Extra.jsonl: permission denied" in p for p in problems)


def test_cli_html_subagents(tmp_path: Path) -> None:
    parent = write_task_sessions(tmp_path)
    out = tmp_path / "out.html"
    result = CliRunner().invoke(export_command, [str(parent), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("omp-session: warning:") == 2 and "Bob.jsonl" in result.stderr
    assert [s["id"] for s in _data(out.read_text(encoding="utf-8"))["subagents"]] == [
        "Anna", "Bob", "../evil", "Extra", "__advisor"]
    result = CliRunner().invoke(export_command, [str(parent), "--format", "html", "--no-subagents", "-o", str(out), "--force"])
    assert result.exit_code == 0 and result.stderr == ""
    assert _data(out.read_text(encoding="utf-8"))["subagents"] == [] and len(_parse(out.read_text(encoding="utf-8")).scripts) == 2
    result = CliRunner().invoke(export_command, [str(parent), "--format", "md", "--no-subagents"])
    assert result.exit_code == 2 and "--no-subagents applies to --format html" in result.output


@pytest.mark.browser
def test_viewer_subagent_link_and_back(tmp_path: Path, browser_ready: None) -> None:
    parent = write_task_sessions(tmp_path)
    with omp_session.open(parent) as session:
        page_path = tmp_path / "task.html"
        page_path.write_text(render_html(session), encoding="utf-8")
        main_branch = [session.ids[k] for k in session.branch_indices(session.get_leaf_id())]
    with omp_session.open(artifacts_dir(parent) / "Anna.jsonl") as anna:  # type: ignore[operator]
        anna_branch = [anna.ids[k] for k in anna.branch_indices(anna.get_leaf_id())]
    run = subprocess.run(["node", str(BROWSER_DIR / "check_viewer.mjs"), str(page_path),
                          str(_artefacts(tmp_path) / "viewer-subagent.png"), "--subagent", "--no-filters",
                          "--no-branches"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    assert shown["errors"] == [] and shown["network"] == []
    sub = shown["subagent"]
    # the first link of the branch: on the task call (c2) that spawned Anna
    assert sub["from"]["entry"] == "c2" and "Anna" in sub["from"]["text"]
    assert sub["before"] == main_branch and sub["shown"] == anna_branch
    assert sub["tree"] == ["au1", "c2", "r2", "aa1"] == anna_branch and sub["backVisible"]
    assert sub["title"] == "Subagent Anna" and sub["crumbs"] == "\u2190 Back to omp sessionomp session \u203a Subagent Anna"
    assert [s.split(" ")[1] for s in sub["side"]] == ["Anna.Carl"]  # Anna's own subagents
    assert sub["after"] == main_branch and not sub["afterBackVisible"]
    assert Path(sub["screenshot"]).stat().st_size > 1000
    side = shown["sideSubagents"]
    assert len(side) == 5 and "open transcript" in side[0] and "not found" in side[1]
    assert "named by no task result" in side[3] and "advisor transcript" in side[4]


def write_long_session(path: Path, turns: int) -> tuple[Path, str, list[str]]:
    """A linear conversation of ``turns`` user/assistant/tool-result triples with a short side
    branch near the start; the only occurrence of the returned marker is in the last entry."""
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for t in range(turns):
        u, a, r = f"u{t:05d}", f"a{t:05d}", f"r{t:05d}"
        entries.append(_message(u, parent, 1, {"role": "user", "timestamp": t, "content": f"Turn {t}: go on."}))
        entries.append(_message(a, u, 2, _assistant([
            {"type": "text", "text": f"Working on turn {t}." + (" stepmark" if t % 50 == 0 else "")},
            {"type": "toolCall", "id": f"call{t}", "name": "bash", "arguments": {"command": f"echo {t}"}}], 0.001)))
        entries.append(_message(r, a, 3, {"role": "toolResult", "toolCallId": f"call{t}", "toolName": "bash",
                                          "content": [{"type": "text", "text": f"{t}\n" * 5}], "isError": False,
                                          "timestamp": t}))
        parent = r
    entries.append(_message("side1", "r00001", 4, {"role": "user", "timestamp": 1, "content": "A side branch."}))
    entries.append(_message("last", parent, 5, {"role": "user", "timestamp": 1, "content": "The end: zqxj-marker."}))
    _write(path, "long-session", entries)
    return path, "zqxj-marker", [f"a{t:05d}" for t in range(0, turns, 50)]


@pytest.mark.browser
def test_viewer_long_branch_search_and_lazy_tree(tmp_path: Path, browser_ready: None) -> None:
    path, marker, step_holders = write_long_session(tmp_path / "long.jsonl", 1000)
    with omp_session.open(path) as session:
        page_path = tmp_path / "long.html"
        page_path.write_text(render_html(session), encoding="utf-8")
        ids = session.ids
        total = len(session)
        branches = {ids[k]: [ids[i] for i in session.branch_indices(ids[k])] for k in branch_tips(session)}
    run = subprocess.run(["node", str(BROWSER_DIR / "check_viewer.mjs"), str(page_path),
                          str(_artefacts(tmp_path) / "viewer-long.png"), "--no-filters", "--end-query", marker,
                          "--step-query", "STEPMARK", "--steps", "2"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    assert shown["errors"] == [] and shown["network"] == []
    # the tree panel holds every entry, but builds only the rows in view
    assert len(shown["tree"]) == total and {r["id"] for r in shown["tree"]} == set(ids)
    assert 0 < shown["treeDomRows"] < total // 10
    assert shown["initialEntriesDom"] < len(branches["last"])  # the branch view is chunked too
    # every branch is reachable by clicking its tip; the view holds its whole path, the DOM only
    # the chunks rendered (the first and the one scrolled to: the tip's), in branch order
    assert set(shown["branches"]) == set(branches) == {"last", "side1"}
    for tip, view in shown["branches"].items():
        assert view["shownAll"] == branches[tip] and view["selected"] == [tip]
        position = {eid: i for i, eid in enumerate(branches[tip])}
        assert tip in view["shown"] and view["shown"][:100] == branches[tip][:100]
        assert [position[eid] for eid in view["shown"]] == sorted(position[eid] for eid in view["shown"])
        assert set(view["onPath"]) <= set(branches[tip]) and view["onPath"]
    # a search whose only hit is the last entry lands on it without rendering the branch
    end = shown["endSearch"]
    assert end["branchEnd"] == "last"
    for run_ in (end["first"], end["again"]):
        assert run_["count"] == "1/1" and run_["entry"] == "last" and run_["mark"] == marker
        assert run_["entriesDom"] < len(branches["last"]) // 2
    # stepping: from the first hit Prev wraps to the last one, at the far end, and Next comes back
    steps = shown["steps"]
    n = len(step_holders)
    assert steps["search"]["count"] == f"1/{n}" and steps["search"]["entry"] == step_holders[0]
    assert [s["count"] for s in steps["toEnd"]] == [f"{n}/{n}"] * 2
    assert [s["entry"] for s in steps["toEnd"]] == [step_holders[-1]] * 2
    assert [s["entry"] for s in steps["toStart"]] == [step_holders[0]] * 2
    assert [s["count"] for s in steps["next"]] == ["2/20", "3/20"] and steps["next"][1]["entry"] == step_holders[2]
    assert all(s["mark"] == "stepmark" for s in steps["toEnd"] + steps["next"])
