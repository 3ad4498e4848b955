"""size (byte accounting, suggestions) and prune --keep-branch, against independent golden figures
and, for prune, against omp itself."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from builders import ORACLE, assistant, entry, header, stamp, usage, user, write_jsonl
from omp_session.cli import cli
from omp_session.errors import EditError, EntryNotFoundError
from omp_session.ops.size.doctor import LONG_TOOL_OUTPUT_BYTES, analyze_size, biggest_sessions
from omp_session.ops.size.externalize import externalize
from omp_session.ops.size.prune import prune


def golden(path: Path) -> dict[str, Any]:
    """The figures computed straight from the lines with the json module."""
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    lines = lines[:-1]
    if json.loads(lines[0]).get("type") == "title":
        head, lines = len(lines[0]) + len(lines[1]) + 2, lines[2:]
    else:
        head, lines = len(lines[0]) + 1, lines[1:]
    entries = [(json.loads(raw), len(raw) + 1) for raw in lines]
    g: dict[str, Any] = {"head": head, "type": {}, "role": {}, "tool": {}, "images": [0, 0], "thinking": [0, 0],
                         "long": [0, 0], "abandoned": [0, 0]}

    def add(d: dict[str, list[int]], k: str, n: int) -> None:
        d.setdefault(k, [0, 0])
        d[k][0] += 1
        d[k][1] += n

    def images(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                images(x)
        elif isinstance(v, dict):
            if v.get("type") == "image" and isinstance(v.get("data"), str) and not v["data"].startswith("blob:"):
                g["images"][0] += 1
                g["images"][1] += len(v["data"])
            for x in v.values():
                images(x)

    by_id = {e["id"]: e for e, _ in entries}
    on_path = set()
    cur: Any = entries[-1][0]["id"]
    while cur is not None and cur not in on_path:
        on_path.add(cur)
        cur = by_id[cur]["parentId"]
    for e, n in entries:
        add(g["type"], e["type"], n)
        if e["id"] not in on_path:
            g["abandoned"][0] += 1
            g["abandoned"][1] += n
        images(e)
        if e["type"] != "message":
            continue
        m = e["message"]
        add(g["role"], m["role"], n)
        if m["role"] == "toolResult":
            add(g["tool"], m["toolName"], n)
            if n > LONG_TOOL_OUTPUT_BYTES:
                g["long"][0] += 1
                g["long"][1] += n
        if m["role"] == "assistant":
            for b in m["content"]:
                if b["type"] == "thinking":
                    g["thinking"][0] += 1
                    g["thinking"][1] += len(json.dumps(b, ensure_ascii=False, separators=(",", ":")).encode())
    return g


def test_accounting_matches_golden(large: Path, tmp_path: Path) -> None:
    r = analyze_size(large)
    g = golden(large)
    assert r.bytes == large.stat().st_size
    assert r.header_bytes == g["head"] and r.other_bytes == 0
    assert r.header_bytes + sum(b.bytes for b in r.by_type.values()) == r.bytes
    assert {k: [b.count, b.bytes] for k, b in r.by_type.items()} == g["type"]
    assert {k: [b.count, b.bytes] for k, b in r.by_role.items()} == g["role"]
    assert {k: [b.count, b.bytes] for k, b in r.by_tool.items()} == g["tool"]
    assert [r.inline_images.count, r.inline_images.bytes] == g["images"] and g["images"][0] > 0
    assert [r.thinking.count, r.thinking.bytes] == g["thinking"]
    assert [r.long_tool_outputs.count, r.long_tool_outputs.bytes] == g["long"] and g["long"][0] > 0
    assert [r.abandoned.count, r.abandoned.bytes] == g["abandoned"] and g["abandoned"][0] > 0
    assert [x[2] for x in r.longest_tool_outputs] == sorted([x[2] for x in r.longest_tool_outputs], reverse=True)
    # every saving is what the remedy really saves
    ext = externalize(large, tmp_path / "e.jsonl", store=tmp_path / "blobs")
    prune(large, tmp_path / "p.jsonl")
    assert r.externalize is not None and r.externalize.saved == ext.saved > 0
    assert r.externalize.saved == r.bytes - (tmp_path / "e.jsonl").stat().st_size
    assert r.prune_saves == r.bytes - (tmp_path / "p.jsonl").stat().st_size > 0

    assert r.archive_bytes is not None and abs(r.archive_bytes - len(gzip.compress(large.read_bytes(), 6))) < 64
    assert [s.action for s in r.suggestions] == [s.action for s in sorted(r.suggestions, key=lambda s: -s.saves)]
    assert {s.action for s in r.suggestions} == {"externalize", "prune", "archive"}


def test_prune_output_is_the_path(large: Path, tmp_path: Path) -> None:
    g_lines = large.read_bytes().split(b"\n")[:-1]
    plan = prune(large, tmp_path / "p.jsonl")
    out = (tmp_path / "p.jsonl").read_bytes().split(b"\n")[:-1]
    assert out[:2] == g_lines[:2]  # title slot and header, byte for byte
    kept = set(out[2:2 + len(plan.path)])
    assert kept <= set(g_lines)  # every kept entry is an original line, unchanged
    ids = [json.loads(x)["id"] for x in out[2:2 + len(plan.path)]]
    parents = [json.loads(x)["parentId"] for x in out[2:2 + len(plan.path)]]
    assert parents == [None, *ids[:-1]]  # one connected chain root -> leaf
    assert plan.bytes_after == (tmp_path / "p.jsonl").stat().st_size
    assert large.read_bytes().split(b"\n")[:-1] == g_lines  # original untouched


def test_prune_errors(large: Path, tmp_path: Path) -> None:
    with pytest.raises(EntryNotFoundError):
        prune(large, tmp_path / "x.jsonl", leaf="nope")
    with pytest.raises(EditError, match="in place"):
        prune(large, large)
    v1 = tmp_path / "v1.jsonl"
    v1.write_text('{"type":"session","id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
                  '{"type":"message","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}\n')
    with pytest.raises(EditError, match="older than version 3"):
        prune(v1, tmp_path / "y.jsonl")
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "y.jsonl").exists()


def test_all_lists_the_biggest(tmp_path: Path, large: Path) -> None:
    root = tmp_path / "root"
    (root / "p").mkdir(parents=True)
    (root / "p" / "big.jsonl").write_bytes(large.read_bytes())
    prune(large, root / "p" / "small.jsonl")
    (root / "p" / "notes.jsonl").write_text("not a session\n")
    count, total, reports, failures = biggest_sessions([root], top=2)
    assert count == 3 and total == sum(p.stat().st_size for p in (root / "p").iterdir())
    assert [Path(r.path).name for r in reports] == ["big.jsonl", "small.jsonl"]
    assert reports[1].abandoned.bytes == 0 and reports[1].prune_saves == 0
    count, _, reports, failures = biggest_sessions([root], top=5)
    assert [Path(p).name for p, _ in failures] == ["notes.jsonl"] and len(reports) == 2


def test_cli(large: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["size", str(large), "--json", "--no-archive"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["bytes"] == large.stat().st_size and data["archive_bytes"] is None
    assert {s["action"] for s in data["suggestions"]} == {"externalize", "prune"}
    r = runner.invoke(cli, ["size", str(large)])
    assert r.exit_code == 0 and "abandoned branches" in r.output and "omp-session prune" in r.output
    assert runner.invoke(cli, ["size"]).exit_code == 2
    r = runner.invoke(cli, ["size", "--all", "--root", str(large.parent), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["sessions"][0]["path"] == str(large)
    out = tmp_path / "p.jsonl"
    r = runner.invoke(cli, ["prune", str(large), "--keep-branch", "-o", str(out)])
    assert r.exit_code == 0 and out.exists() and "saves" in r.output, r.output
    r = runner.invoke(cli, ["prune", str(large), "--keep-branch", "--dry-run", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["bytes_after"] == out.stat().st_size
    assert runner.invoke(cli, ["prune", str(large), "-o", str(tmp_path / "q.jsonl")]).exit_code == 2
    r = runner.invoke(cli, ["prune", str(large), "--keep-branch", "zzz", "--dry-run"])
    assert r.exit_code == 1 and "no entry zzz" in r.output


# ----------------------------------------------------------------- prune vs omp


def _labelled(path: Path) -> None:
    """Two branches; labels set on the kept path, changed and added on the other branch."""
    def e(i: str, parent: str | None, ts: int, **f: Any) -> dict[str, Any]:
        return entry(i, parent, timestamp=stamp(ts), **f)

    def asst(text: str) -> dict[str, Any]:
        return assistant(text, api="x", provider="p", usage=usage(cost=0), timestamp=1)

    rows = [
        header("sess", cwd="/w"),
        e("u1", None, 1, message=user("one")), e("a1", "u1", 2, message=asst("ans one")),
        e("l1", "a1", 3, type="label", targetId="u1", label="first"),
        e("u2", "l1", 4, message=user("two")), e("a2", "u2", 5, message=asst("ans two")),
        e("u3", "a1", 6, message=user("other")), e("a3", "u3", 7, message=asst("ans other")),
        e("l2", "a3", 8, type="label", targetId="u1", label="changed"),
        e("l3", "l2", 9, type="label", targetId="a1", label="kept"),
        e("l4", "l3", 10, type="label", targetId="u3", label="dropped"),
    ]
    write_jsonl(path, rows, ensure_ascii=True)


def test_prune_carries_labels(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    _labelled(src)
    plan = prune(src, tmp_path / "o.jsonl", leaf="a2")
    assert [x["id"] for x in map(json.loads, (tmp_path / "o.jsonl").read_text().splitlines()[1:6])] == \
        ["u1", "a1", "l1", "u2", "a2"]
    assert [(x["targetId"], x["label"], x["parentId"]) for x in plan.labels] == \
        [("u1", "changed", "a2"), ("a1", "kept", plan.labels[0]["id"])]


@pytest.mark.oracle
def test_prune_context_matches_omp(tmp_path: Path, make_corpus: Any) -> None:
    """For corpus sessions and leaves on and off the current path: omp's context of the pruned file
    equals omp's context of the original at that leaf; labels of kept entries are the same."""
    corpus = make_corpus(11, 40)
    files = [p for p in sorted(corpus.glob("*.jsonl"))
             if any(k in p.name for k in ("v3_branched", "v3_compaction", "v3_labels", "v3_mixed"))][:10]
    own = tmp_path / "labelled.jsonl"
    _labelled(own)
    cases: list[tuple[Path, str]] = [(own, "a2"), (own, "l4")]
    for f in files:
        entries = [json.loads(x) for x in f.read_text().splitlines()[1:]]
        ids = [x["id"] for x in entries if isinstance(x, dict) and isinstance(x.get("id"), str)]
        cases += [(f, ids[-1]), (f, ids[len(ids) // 2])]
    scripts, outs = [], []
    for n, (f, leaf) in enumerate(cases):
        try:
            prune(f, tmp_path / f"out{n}.jsonl", leaf=leaf)
        except EditError:
            continue  # a legacy file among the samples
        script = tmp_path / f"script{n}.json"
        script.write_text(json.dumps({"from_file": str(f), "ops": [
            {"op": "branch", "entryId": leaf}, {"op": "buildSessionContext"},
            {"op": "buildSessionContext", "options": {"transcript": True}}]}))
        scripts.append(str(script))
        outs.append(str(tmp_path / f"out{n}.jsonl"))
    assert len(outs) >= 10
    blobs = ["--blobs", str(corpus / "blobs")] if (corpus / "blobs").is_dir() else []
    run = subprocess.run([str(ORACLE / "omp-reference"), "run", *scripts], capture_output=True, text=True,
                         timeout=600, check=True)
    load = subprocess.run([str(ORACLE / "omp-reference"), "load", *blobs, *outs], capture_output=True, text=True,
                          timeout=600, check=True)
    for r, o in zip(run.stdout.splitlines(), load.stdout.splitlines(), strict=True):
        before, after = json.loads(r), json.loads(o)
        assert after["error"] is None and after["view_errors"] == {}, after["file"]
        assert before["steps"][1]["error"] is None
        assert after["context"] == before["steps"][1]["result"], after["file"]
        assert after["transcript"] == before["steps"][2]["result"], after["file"]
        kept = {e.get("id") for e in after["entries"] if isinstance(e, dict)}
        dropped = {e.get("id") for e in before["entries"] if isinstance(e, dict)} - kept
        assert after["labels"] == {k: v for k, v in before["labels"].items() if k not in dropped}, after["file"]


@pytest.mark.oracle
def test_omp_branched_session_cuts_the_path_where_prune_does_not(tmp_path: Path) -> None:
    """omp's createBranchedSession drops the label entry on the path without re-linking its child
    (u2 keeps parentId l1), so the new session's branch starts at u2; prune keeps u1 and a1."""
    src = tmp_path / "s.jsonl"
    _labelled(src)
    script = tmp_path / "cb.json"
    script.write_text(json.dumps({"from_file": str(src), "ops": [{"op": "createBranchedSession", "leafId": "a2"}]}))
    prune(src, tmp_path / "o.jsonl", leaf="a2")
    run = json.loads(subprocess.run([str(ORACLE / "omp-reference"), "run", str(script)], capture_output=True,
                                    text=True, timeout=120, check=True).stdout)
    load = json.loads(subprocess.run([str(ORACLE / "omp-reference"), "load", str(tmp_path / "o.jsonl")],
                                     capture_output=True, text=True, timeout=120, check=True).stdout)
    assert run["branch"][:2] == ["u2", "a2"]
    assert load["branch"][:5] == ["u1", "a1", "l1", "u2", "a2"]
    assert len(load["context"]["messages"]) == 4 and len(run["context"]["messages"]) == 2


def test_every_corpus_file_is_accounted_or_refused(tmp_path: Path, make_corpus: Any) -> None:
    """Valid, legacy and damaged files: the bytes add up exactly, or a one-line SessionError."""
    from omp_session.errors import FormatError, SessionError

    refused = accounted = 0
    for f in sorted(make_corpus(3, 60).glob("*.jsonl")):
        try:
            r = analyze_size(f, archive=False)
        except FormatError:
            refused += 1
            continue
        accounted += 1
        assert r.header_bytes + sum(b.bytes for b in r.by_type.values()) + r.other_bytes == r.bytes, f.name
        assert r.other_bytes >= 0 and r.abandoned.bytes <= r.bytes - r.header_bytes, f.name
        try:
            plan = prune(f, tmp_path / f.name)
        except SessionError as e:
            assert "\n" not in str(e)
            continue
        assert plan.bytes_after == (tmp_path / f.name).stat().st_size
        assert r.prune_saves == plan.saved, f.name
    assert accounted > 40 and refused < 10


def test_archived_session_is_accounted_like_the_plain_file(tmp_path: Path) -> None:
    import gzip

    plain = Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" / "sample.jsonl"
    archived = tmp_path / "sample.jsonl.gz"
    archived.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = analyze_size(archived), analyze_size(plain)
    assert a.bytes == b.bytes and a.abandoned.bytes == b.abandoned.bytes
    assert {k: v.bytes for k, v in a.by_type.items()} == {k: v.bytes for k, v in b.by_type.items()}
    assert b.suggestions and not a.suggestions  # writers need the plain file


def test_text_report_names_blob_references_and_heads_the_longest_outputs(tmp_path: Path) -> None:
    """The blob references are counted as references (the blob store may not hold them: validate
    says so), and the list of the longest tool outputs has a heading of its own (it read as a
    list of those images)."""
    from builders import tool_result, write_session

    image = {"type": "image", "mimeType": "image/png", "data": "blob:sha256:" + "a" * 64}
    path = tmp_path / "s.jsonl"
    write_session(path, [
        entry("u1", None, message=user([image])),
        entry("t1", "u1", message=tool_result("x" * (LONG_TOOL_OUTPUT_BYTES + 100), name="read")),
    ])
    r = CliRunner().invoke(cli, ["size", str(path), "--no-archive"])
    assert r.exit_code == 0, r.output
    assert "already in the blob store" not in r.output
    assert "(1 image stored as a blob reference, not counted above)" in r.output
    lines = r.output.splitlines()
    at = next(i for i, line in enumerate(lines) if "largest tool outputs" in line)
    assert "t1" in lines[at + 1] and "read" in lines[at + 1]
