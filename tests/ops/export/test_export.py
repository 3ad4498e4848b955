"""export: Markdown and JSON exports of a session (docs/export.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import builders
import omp_session
from builders import text, tool_result, usage, user
from omp_session.cli.export import export as export_command
from omp_session.errors import EntryNotFoundError, ExportError, SessionError, UnknownFormatError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.model.text import fence, inline, inline_code
from omp_session.ops.export.formats import branch_tips, export, lossy_transcript
from omp_session.write.manager import SessionManager

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "src" / "omp_session" / "samples" / "sample.jsonl"
GOLDEN_DIR = ROOT / "tests" / "data" / "export"

_spec = importlib.util.spec_from_file_location("export_regen", GOLDEN_DIR / "regen.py")
assert _spec is not None and _spec.loader is not None
_regen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_regen)
GOLDEN: dict[str, tuple[str, dict[str, Any]]] = _regen.GOLDEN

USAGE = usage(10, 5, 0.01)
run = partial(builders.run, export_command)


def assistant(*blocks: dict[str, Any], model: str = "m") -> dict[str, Any]:
    return builders.assistant(list(blocks), model=model, usage=USAGE)


def new_manager(tmp_path: Path) -> SessionManager:
    return SessionManager.create(str(tmp_path), str(tmp_path / "sessions"), blob_store=MemoryBlobStore())


def saved(sm: SessionManager) -> Path:
    path = sm.get_session_file()
    sm.close()
    assert path is not None
    return Path(path)


@pytest.fixture
def branched(tmp_path: Path) -> Path:
    """A session with three branches: main, one forking at the first answer, one forking off that."""
    sm = new_manager(tmp_path)
    u1 = sm.append_message(user("start"))
    a1 = sm.append_message(assistant(text("first answer")))
    sm.append_message(user("main follow-up"))
    sm.append_message(assistant(text("main answer")))
    sm.branch(a1)
    side = sm.append_message(user("side question"))
    sm.append_message(assistant(text("side answer"), model="other"))
    sm.branch(side)
    sm.append_message(user("side-of-side"))
    sm.branch(u1)
    sm.append_message(assistant(text("retry of the first answer")))
    sm.branch(a1)
    sm.append_message(user("back on main"))
    return saved(sm)


def md_tokens(md: str) -> list[Any]:
    return MarkdownIt("commonmark").parse(md)


def headings(md: str) -> list[str]:
    tokens = md_tokens(md)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]


def fences(md: str) -> list[str]:
    return [t.content for t in md_tokens(md) if t.type == "fence"]


# ----- golden files -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_exports_of_the_sample(name: str) -> None:
    fmt, options = GOLDEN[name]
    with omp_session.open(SAMPLE) as s:
        got = export(s, fmt, **options)
    assert got == (GOLDEN_DIR / name).read_text(encoding="utf-8"), "run tests/data/export/regen.py and review"


def test_sample_markdown_shows_what_happened_in_order() -> None:
    md = export(str(SAMPLE), "md")
    order = ["The CSV importer chokes", "Start by reading", "Let me look", '"path": "src/importer/csv.py"',
             "def split_rows", "`split_rows` splits", "Tried a hand-written", "Go with csv.reader",
             "The importer split rows on raw newlines", "Done: csv.reader"]
    positions = [md.index(o) for o in order]
    assert positions == sorted(positions)
    assert "Try a hand-written state machine" not in md  # the abandoned branch is not shown by default
    assert "<summary>Thinking</summary>" in md and "### Compaction" in md and "### Branch summary" in md
    assert "label **diagnosis**" in md and "- **Leaf:** `fac25287`" in md and "\\$0.0214" in md


# ----- faithful JSON ------------------------------------------------------------------------------


def _file_records(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_faithful_json_round_trips_every_record(branched: Path) -> None:
    out = json.loads(export(str(branched), "json"))
    records = _file_records(branched)
    assert records[0]["type"] == "title" and out["title_slot"]["title"] == records[0]["title"]
    assert out["header"] == records[1] and out["entries"] == records[2:]
    assert out["format"] == "omp-session-export" and out["format_version"] == 1 and out["migrated"] is False
    assert out["malformed"] == []
    text = export(str(branched), "json").split("\n")
    start = text.index('"entries": [') + 1
    file_lines = branched.read_text(encoding="utf-8").splitlines()[2:]
    assert [line.rstrip(",") for line in text[start:start + len(file_lines)]] == file_lines  # same bytes
    with omp_session.open(branched) as s:
        assert out["leaf_id"] == s.get_leaf_id()
        assert out["branches"] == [s.ids[k] for k in branch_tips(s)] and len(out["branches"]) == 5


def test_faithful_json_keeps_unknown_fields_blob_refs_and_malformed_lines(tmp_path: Path) -> None:
    ref = "blob:sha256:" + "ab" * 32
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w",
         "future": {"x": [1, 2]}},
        {"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:00.001Z", "extra": True,
         "message": {"role": "user", "content": [{"type": "image", "data": ref, "mimeType": "image/png"}],
                     "timestamp": 1, "newField": "kept"}},
        {"type": "brand_new_type", "id": "b", "parentId": "a", "timestamp": "2026-01-01T00:00:00.002Z", "k": 1},
    ]
    body = "\n".join(json.dumps(x) for x in lines[:2]) + "\n{not json\n" + json.dumps(lines[2]) + "\n"
    path = tmp_path / "s.jsonl"
    path.write_text(body)
    out = json.loads(export(str(path), "json"))
    assert out["header"] == lines[0] and out["entries"] == lines[1:]
    assert out["malformed"] == [{"line": 3, "offset": body.index("{not"), "text": "{not json"}]
    assert out["title_slot"] is None and out["leaf_id"] == "b" and out["branches"] == ["b"]
    md = export(str(path), "md")
    assert "image/png" in md and "not in the blob store" in md and "Entry of type `brand_new_type`" in md


def test_faithful_json_leaf_option_sets_leaf_id(branched: Path) -> None:
    with omp_session.open(branched) as s:
        first = s.ids[0]
        out = json.loads(export(s, "json", leaf=first))
        assert out["leaf_id"] == first and s.get_leaf_id() != first  # the session itself is not moved


# ----- lossy transcript ---------------------------------------------------------------------------


def test_lossy_transcript_is_the_branch_messages(branched: Path) -> None:
    with omp_session.open(branched) as s:
        for tip in branch_tips(s):
            leaf = s.ids[tip]
            out = json.loads(export(s, "json", lossy=True, leaf=leaf))
            branch = [e for e in s.get_branch(leaf) if e["type"] == "message"]
            assert [m["entryId"] for m in out["messages"]] == [e["id"] for e in branch]
            assert [{k: v for k, v in m.items() if k != "entryId"} for m in out["messages"]] == \
                [e["message"] for e in branch]
            assert out["leaf_id"] == leaf and out["format"] == "omp-session-transcript"


def test_lossy_transcript_of_the_sample_has_summaries() -> None:
    with omp_session.open(SAMPLE) as s:
        value = lossy_transcript(s)
    roles = [m["role"] for m in value["messages"]]
    assert roles == ["user", "assistant", "toolResult", "assistant", "branchSummary", "user",
                     "compactionSummary", "assistant"]
    summary = value["messages"][4]
    assert summary == {"entryId": "27548602", "role": "branchSummary", "summary": summary["summary"],
                       "fromId": "52592a2f", "timestamp": 1767225600034}


# ----- branches -----------------------------------------------------------------------------------


def test_all_branches_shows_every_branch_and_every_entry_once(branched: Path) -> None:
    md = export(str(branched), "md", all_branches=True)
    with omp_session.open(branched) as s:
        for tip in branch_tips(s):
            assert f"`{s.ids[tip]}`" in md
        for k in range(len(s)):
            assert md.count(f"`{s.ids[k]}` · ") == 1  # each entry's meta line appears exactly once
    for t in ("start", "first answer", "main follow-up", "main answer", "side question", "side answer",
              "side-of-side", "retry of the first answer", "back on main"):
        assert f"\n{t}\n" in md
    hs = headings(md)
    assert [h for h in hs if h.startswith("Branch ")] == [h for h in hs if re.match(r"Branch \d+: ends at", h)]
    assert len([h for h in hs if h.startswith("Branch ")]) == 4  # four tips besides the exported leaf
    assert "Forks from branch 3 after entry" in md  # side-of-side forks off the side branch (branch 3)
    assert "(model changed from anthropic/m)" in md


def test_leaf_picks_the_branch(branched: Path) -> None:
    md = export(str(branched), "md", leaf=None)
    assert "side question" not in md and "back on main" in md
    with omp_session.open(branched) as s:
        side_tip = next(s.ids[k] for k in range(len(s)) if s.entry_at(k)["message"]["content"] == "side-of-side")
        md = export(s, "md", leaf=side_tip)
        assert "side question" in md and "back on main" not in md and "main answer" not in md
        with pytest.raises(EntryNotFoundError):
            export(s, "md", leaf="nope")


def test_single_branch_all_branches_says_so(tmp_path: Path) -> None:
    sm = new_manager(tmp_path)
    sm.append_message(user("only"))
    sm.append_message(assistant(text("one")))
    md = export(str(saved(sm)), "md", all_branches=True)
    assert "None: this is the only branch." in md


# ----- Markdown safety ----------------------------------------------------------------------------

EVIL = "```\n# Injected heading\n````\n</details>\n<script>alert(1)</script>\n~~~\n[x](http://evil) *em*"


def test_markdown_fences_survive_adversarial_content(tmp_path: Path) -> None:
    sm = new_manager(tmp_path)
    u = sm.append_message(user(EVIL))
    sm.append_message(assistant({"type": "thinking", "thinking": EVIL}, text(EVIL),
                                {"type": "toolCall", "id": "c`1", "name": "to`ol\n# x", "arguments": {"cmd": EVIL}}))
    sm.append_message(tool_result(EVIL + "\n`````", call_id="c`1", name="to`ol\n# x"))
    sm.append_label_change(u, "[lbl](http://evil) <b>x</b> `")
    sm.append_compaction(EVIL, "short ``` # h", u, 10)
    sm.set_session_name("# Title <i>`x`</i>", "user")
    md = export(str(saved(sm)), "md", all_branches=True)
    hs = headings(md)
    assert all("Injected" not in h for h in hs)
    assert hs[0].startswith("\\# Title") or hs[0].startswith("# Title")
    tokens = md_tokens(md)
    html = [t.content.strip() for t in tokens if t.type == "html_block"]
    assert set(html) <= {"<details>\n<summary>Thinking</summary>", "</details>"}
    inline_html = [c for t in tokens if t.type == "inline" for c in (t.children or []) if c.type == "html_inline"]
    links = [c for t in tokens if t.type == "inline" for c in (t.children or []) if c.type == "link_open"]
    assert inline_html == [] and links == []
    bodies = fences(md)
    for body in (EVIL + "\n", EVIL + "\n`````\n"):
        assert body in bodies
    assert any(json.loads(b) == {"cmd": EVIL} for b in bodies if b.startswith("{"))


_MD_CHARS = st.text(alphabet="`~#<>/\n *_[]()!\\-&|$:ab1. \t\r", max_size=60)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_MD_CHARS)
def test_fence_holds_any_text(body: str) -> None:
    md = "# H\n\n" + fence(body) + "\n\n## After\n"
    tokens = md_tokens(md)
    fenced = [t.content for t in tokens if t.type == "fence"]
    assert fenced == [body.replace("\r\n", "\n").replace("\r", "\n") + ("\n" if body and not
                                                                          body.replace("\r", "\n").endswith("\n")
                                                                          else "")]
    assert headings(md) == ["H", "After"]


@settings(max_examples=300)
@given(_MD_CHARS)
def test_inline_values_render_literally(value: str) -> None:
    collapsed = " ".join(value.split())
    tokens = md_tokens(f"x {inline(value)}\n")
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"]
    children = tokens[1].children or []
    assert all(c.type == "text" for c in children)
    assert "".join(c.content for c in children) == ("x " + collapsed).rstrip()
    tokens = md_tokens(f"x {inline_code(value)}\n")
    children = tokens[1].children or []
    assert [c.type for c in children] == ["text", "code_inline"]
    assert children[1].content == (collapsed or " ")


# ----- errors and damaged input -------------------------------------------------------------------


def test_format_errors() -> None:
    with pytest.raises(UnknownFormatError):
        export(str(SAMPLE), "pdf")
    assert export(str(SAMPLE), "html").startswith("<!DOCTYPE html>") or "<html" in export(str(SAMPLE), "html")
    with pytest.raises(ExportError, match="every branch"):
        export(str(SAMPLE), "html", all_branches=True)
    with pytest.raises(ExportError):
        export(str(SAMPLE), "md", lossy=True)
    with pytest.raises(ExportError):
        export(str(SAMPLE), "json", lossy=True, all_branches=True)
    assert issubclass(ExportError, SessionError)
    assert export(str(SAMPLE), "markdown") == export(str(SAMPLE), "md")


def test_oracle_examples_and_corpus_never_raise(make_corpus: Callable[[int, int], Path]) -> None:
    files = sorted(make_corpus(7, 60).glob("*.jsonl"))
    examples = ROOT / "tests" / "data" / "oracle_examples"
    files += sorted(examples.glob("*.jsonl")) if examples.is_dir() else []
    assert files
    for path in files:
        with omp_session.open(path) as s:
            leaf = s.get_leaf_id()
            for fmt, options in (("md", {"all_branches": True}), ("json", {}), ("json", {"lossy": True})):
                out = export(s, fmt, **options)
                out.encode("utf-8")  # always encodable
                if fmt == "md" and s.unique_string_ids:
                    assert all(inline_code(s.ids[tip]) in out for tip in branch_tips(s))
                if fmt == "json":
                    value = json.loads(out)
                    if not options:
                        assert len(value["entries"]) == len(s)
            assert s.get_leaf_id() == leaf


# ----- the command --------------------------------------------------------------------------------


def test_cli_prints_to_stdout() -> None:
    code, out, _ = run(str(SAMPLE), "--format", "md")
    assert code == 0 and out == (GOLDEN_DIR / "sample.md").read_text(encoding="utf-8")
    code, out, _ = run(str(SAMPLE), "--format", "json", "--lossy")
    assert code == 0 and out == (GOLDEN_DIR / "sample-lossy.json").read_text(encoding="utf-8")
    code, out, _ = run(str(SAMPLE), "--format", "md", "--all-branches", "--leaf", "a1b45091")
    assert code == 0 and "## Branch: 10 entries up to `a1b45091`" in out and "Branch 2: ends at `fac25287`" in out


def test_cli_writes_a_file_and_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert run(str(SAMPLE), "--format", "json", "-o", str(out))[0] == 0
    assert out.read_text(encoding="utf-8") == (GOLDEN_DIR / "sample.json").read_text(encoding="utf-8")
    out.write_text("keep me")
    code, _, err = run(str(SAMPLE), "--format", "md", "-o", str(out))
    assert code == 1 and "already exists" in err and err.count("\n") == 1 and out.read_text() == "keep me"
    assert run(str(SAMPLE), "--format", "md", "-o", str(out), "--force")[0] == 0
    assert out.read_text(encoding="utf-8") == (GOLDEN_DIR / "sample.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temp file left


def test_cli_never_writes_over_the_session_even_with_force(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_bytes(SAMPLE.read_bytes())
    (tmp_path / "link.jsonl").symlink_to(session)
    for out in (session, tmp_path / "link.jsonl"):
        code, _, err = run(str(session), "--format", "md", "-o", str(out), "--force")
        assert code == 1 and "is the input" in err and err.count("\n") == 1
        assert session.read_bytes() == SAMPLE.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "s.jsonl"]


def test_cli_leaves_nothing_when_the_export_fails(tmp_path: Path) -> None:
    out = tmp_path / "out.md"
    code, _, err = run(str(SAMPLE), "--format", "md", "--leaf", "nope", "-o", str(out))
    assert code == 1 and "no entry nope" in err and list(tmp_path.iterdir()) == []


def test_cli_write_failure_is_one_line_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    out = tmp_path / "out.md"
    code, _, err = run(str(SAMPLE), "--format", "md", "-o", str(out))
    assert code == 1 and "No space left" in err and err.count("\n") == 1 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "code", "message"), [
    (("/nonexistent/x.jsonl", "--format", "md"), 1, "no such file"),
    (("/", "--format", "md"), 1, "directory"),
    ((str(SAMPLE), "--format", "html", "--all-branches"), 2, "--all-branches"),
    ((str(SAMPLE), "--format", "pdf"), 2, "Invalid value"),
    ((str(SAMPLE),), 2, "missing --format"),
    ((str(SAMPLE), "-o", "x.txt"), 2, "cannot tell the format from 'x.txt'"),
    ((str(SAMPLE), "--format", "md", "--lossy"), 2, "--lossy"),
    ((str(SAMPLE), "--format", "json", "--lossy", "--all-branches"), 2, "--all-branches"),
])
def test_cli_errors(args: tuple[str, ...], code: int, message: str) -> None:
    got, _, err = run(*args)
    assert got == code and message in err and "Traceback" not in err
    if code == 1:
        assert err.startswith("omp-session: ") and err.count("\n") == 1


@pytest.mark.parametrize(("name", "start"), [("out.html", b"<!DOCTYPE html"), ("OUT.HTM", b"<!DOCTYPE html"),
                                             ("out.md", b"# "), ("out.json", b"{")])
def test_cli_infers_the_format_from_the_output_suffix(tmp_path: Path, name: str, start: bytes) -> None:
    out = tmp_path / name
    code, _, err = run(str(SAMPLE), "-o", str(out))
    assert code == 0, err
    assert out.read_bytes().lstrip().startswith(start)


def test_cli_resolves_session_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(tmp_path)
    sm = SessionManager.create(str(tmp_path), blob_store=MemoryBlobStore())
    sm.append_message(user("find me by id"))
    sm.append_message(assistant(text("found")))  # omp writes the file once an assistant answered
    session_id = sm.get_session_id()
    sm.close()
    for arg in (session_id[:13], "latest"):
        code, out, err = run(arg, "--format", "md")
        assert code == 0 and "find me by id" in out, err
    code, _, err = run("zzzz-no-such", "--format", "md")
    assert code == 1 and err.startswith("omp-session: no session matches")


def _deep_session(tmp_path: Path) -> Path:
    """Tool arguments, user content and an unknown block nested deeper than Python's recursion
    limit (the reader takes them through its exact scanner)."""
    deep = "[" * 5000 + "]" * 5000
    head = '"timestamp":"2026-01-01T00:00:01.000Z"'
    lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}',
             '{"type":"message","id":"a1","parentId":null,' + head + ',"message":{"role":"user","content":"hi"}}',
             '{"type":"message","id":"a2","parentId":"a1",' + head + ',"message":{"role":"assistant","content":'
             '[{"type":"toolCall","id":"c","name":"x","arguments":{"d":' + deep + '}},{"type":"odd","v":'
             + deep + '}]}}',
             '{"type":"message","id":"a3","parentId":"a2",' + head + ',"message":{"role":"user","content":'
             + deep + '}}']
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_markdown_of_deeply_nested_content_is_no_traceback(tmp_path: Path) -> None:
    path = _deep_session(tmp_path)
    md = export(str(path), "md", all_branches=True)
    bodies = fences(md)
    assert any(b.startswith('{"d":[[[') for b in bodies)  # the arguments, whole
    assert any(b.startswith("[[[[") and b.count("[") == 4999 for b in bodies)  # the user content's one block
    assert "Block of type `odd`" in md


def test_tree_of_deeply_nested_content_is_no_traceback(tmp_path: Path) -> None:
    from omp_session.cli import cli

    path = _deep_session(tmp_path)
    for args in (["tree", str(path)], ["tree", "--json", str(path)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert "a2" in result.output and "→ x(" in result.output


def test_tree_shows_every_entry_of_a_long_session(tmp_path: Path) -> None:
    from omp_session.cli import cli

    sm = new_manager(tmp_path)
    ids = [sm.append_message(user(f"question {i}")) for i in range(60)]
    sm.append_message(assistant(text("answer")))  # omp writes the file once an answer exists
    sm.branch(ids[29])
    sm.append_message(user("side"))
    result = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["tree", str(saved(sm))])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for want in [f"user: question {i}" for i in range(60)] + ["user: side"]:
        assert sum(line.split(" ◆")[0].endswith(want) for line in lines) == 1, want
    # a run stays at one indent; the fork after question 29 is marked, its side branch (question 30 on)
    # hangs below it at one indent, and the newest branch ("side") continues the run (docs/display.md)
    indent = {line.split(" ◆")[0].rstrip().rsplit(": ", 1)[1]: line.index("user") for line in lines
              if "user: " in line}
    assert indent["question 0"] == indent["question 29"] == indent["side"]
    assert indent["question 59"] == indent["question 31"] == indent["question 30"] > indent["question 29"]
    assert any(line.endswith("assistant: answer") for line in lines)


@pytest.mark.parametrize(("n", "words"), [(1, "1 warning"), (2, "2 warnings")])
def test_the_header_counts_problems_in_words(tmp_path: Path, n: int, words: str) -> None:
    """The header's problems read as ``show``'s: "2 warnings", not "2 warning"."""
    image = {"type": "image", "data": "blob:sha256:" + "ab" * 32, "mimeType": "image/png"}
    records: list[Any] = [builders.header("s1", cwd="/p")]
    records += [builders.entry(f"e{k}", f"e{k - 1}" if k else None, timestamp=builders.stamp(k),
                               message=user([image])) for k in range(n)]
    path = tmp_path / "s.jsonl"
    path.write_text(builders.jsonl(records))
    with omp_session.open(path, blob_store=MemoryBlobStore()) as s:
        md = export(s, "md")
    assert f"- **Problems found while reading:** {words} (run omp-session validate)" in md
