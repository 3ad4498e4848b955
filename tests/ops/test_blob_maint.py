"""blobs verify / gc / stats over session roots (archives, subagents, registered sessions)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from omp_session.cli import cli
from omp_session.errors import BlobError
from omp_session.ops import blobs as blob_maint
from omp_session.ops.blobs import collect_gc, delete_blobs, scan_file_refs, store_stats, verify_store


def put(store: Path, data: bytes, ext: str | None = None, *, age: float = 7200) -> str:
    store.mkdir(parents=True, exist_ok=True)
    sha = hashlib.sha256(data).hexdigest()
    (store / sha).write_bytes(data)
    if ext:
        os.link(store / sha, store / f"{sha}.{ext}")
    old = time.time() - age
    os.utime(store / sha, (old, old))
    return sha


def session_text(*refs: str, extra: str = "") -> str:
    lines = ['{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}']
    for i, sha in enumerate(refs):
        lines.append(json.dumps({"type": "message", "id": f"m{i}", "parentId": None, "timestamp": "x",
                                 "message": {"role": "user", "content": [
                                     {"type": "image", "data": f"blob:sha256:{sha}", "mimeType": "image/png"}]}},
                                separators=(",", ":")))
    return "\n".join(lines) + "\n" + extra


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A store whose blobs are referenced from every kind of place gc must look, plus unused ones."""
    agent = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    root = agent / "sessions"
    store = agent / "blobs"
    rng = random.Random(1)
    blobs = {name: put(store, rng.randbytes(200 + i), "png" if i % 2 else None)
             for i, name in enumerate(["live", "subagent", "archived", "backup", "registered", "text",
                                       "unused1", "unused2"])}
    young = put(store, b"just written", age=10)
    bucket = root / "-proj"
    bucket.mkdir(parents=True)
    (bucket / "2026_a.jsonl").write_text(session_text(blobs["live"]))
    (bucket / "2026_a").mkdir()
    (bucket / "2026_a" / "agent1.jsonl").write_text(session_text(blobs["subagent"]))
    with gzip.open(bucket / "2026_b.jsonl.gz", "wt") as f:
        f.write(session_text(blobs["archived"]))
    (bucket / "2026_c.jsonl.bak").write_text(session_text(blobs["backup"]))
    # a reference in plain text: omp never resolves it, but gc must not break it either
    (bucket / "2026_d.jsonl").write_text(session_text(extra=f'{{"note":"see blob:sha256:{blobs["text"]}"}}\n'))
    elsewhere = tmp_path / "elsewhere" / "mine.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text(session_text(blobs["registered"]))
    (agent / "custom-session-files").mkdir()
    (agent / "custom-session-files" / "abc1234").write_text(str(elsewhere) + "\n")
    (bucket / "1.bash.log").write_text(f"blob:sha256:{blobs['unused1']}")  # not a session file
    return {"root": root, "store": store, "blobs": blobs, "young": young, "bucket": bucket}


def test_scan_finds_refs_across_chunks_with_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    parts: list[str] = []
    for _ in range(400):
        parts.append("x" * rng.randint(0, 90))
        parts.append(rng.choice(["\n", "", "blob:sha256:" + hashlib.sha256(rng.randbytes(4)).hexdigest(),
                                 "blob:sha256:ABC", "blob:sha256:" + "a" * 10 + "\n"]))
    text = "".join(parts) + "blob:sha256:" + "b" * 30  # cut short by the end of the file
    p = tmp_path / "f.jsonl"
    p.write_text(text)
    expected = [(text.count("\n", 0, m.start()) + 1, m.group(1)[:64])
                for m in re.finditer(r"(?=blob:sha256:([\s\S]{0,64}))", text)]
    for chunk in (7, 64, 100, 1 << 20):
        monkeypatch.setattr(blob_maint, "_CHUNK", chunk)
        got = [(r.line, r.sha) for r in scan_file_refs(str(p), lines=True)]
        assert [g[0] for g in got] == [e[0] for e in expected], chunk
        assert [g[1] for g in got] == [e[1] if re.fullmatch("[a-f0-9]{64}", e[1]) else None for e in expected]
    assert [r.sha for r in scan_file_refs(str(p))] == [g[1] for g in got]  # lines not counted: same refs
    assert {r.line for r in scan_file_refs(str(p))} == {0}
    gz = tmp_path / "f.jsonl.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert [(r.line, r.sha) for r in scan_file_refs(str(gz), lines=True)] == [(r.line, r.sha) for r in scan_file_refs(str(p), lines=True)]


def test_gc_dry_run_then_apply(world: dict[str, object]) -> None:
    root, store, blobs = world["root"], world["store"], world["blobs"]
    assert isinstance(root, Path) and isinstance(store, Path) and isinstance(blobs, dict)
    names_before = sorted(os.listdir(store))
    res = collect_gc([root], store)
    assert sorted(b.sha for b in res.unreferenced) == sorted([blobs["unused1"], blobs["unused2"]])
    assert [b.sha for b in res.too_young] == [world["young"]]
    assert res.bytes == sum((store / b.sha).stat().st_size for b in res.unreferenced)
    assert res.files_scanned == 6 and res.referenced == 6
    assert sorted(os.listdir(store)) == names_before  # a dry run deletes nothing
    rewritten = store / blobs["unused2"]
    os.utime(rewritten, (time.time() - 5000, time.time() - 5000))  # omp stored it again meanwhile
    delete_blobs(res)
    assert res.deleted == [blobs["unused1"]] and res.rewritten == [blobs["unused2"]]
    os.unlink(rewritten)
    os.unlink(store / f"{blobs['unused2']}.png")
    left = sorted(os.listdir(store))
    unused = {blobs["unused1"], blobs["unused2"]}
    assert not [n for n in left if n[:64] in unused]  # sidecars went with their blob
    assert sorted(n for n in names_before if n[:64] not in unused) == left
    assert collect_gc([root], store).unreferenced == []


def test_gc_refuses_wrong_roots(world: dict[str, object], tmp_path: Path) -> None:
    store = world["store"]
    assert isinstance(store, Path)
    with pytest.raises(BlobError, match="no such sessions directory"):
        collect_gc([tmp_path / "nope"], store)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BlobError, match="no session file found"):
        collect_gc([empty], store, registered=False)
    assert len(collect_gc([empty], store, registered=False, allow_empty=True).unreferenced) == 8
    bad = world["bucket"]
    assert isinstance(bad, Path)
    (bad / "z.jsonl.gz").write_bytes(b"\x1f\x8bnot gzip at all")
    with pytest.raises(BlobError, match=r"z\.jsonl\.gz: cannot be scanned"):
        collect_gc([world["root"]], store)  # type: ignore[list-item]


def test_verify(world: dict[str, object]) -> None:
    root, store, blobs, bucket = world["root"], world["store"], world["blobs"], world["bucket"]
    assert isinstance(store, Path) and isinstance(bucket, Path) and isinstance(blobs, dict)
    res = verify_store([root], store)  # type: ignore[list-item]
    assert res.ok and res.blobs_checked == 9 and res.files_scanned == 6 and res.refs_checked == 6
    (store / blobs["unused2"]).write_bytes(b"bit rot")
    missing = hashlib.sha256(b"gone").hexdigest()
    (bucket / "2026_e.jsonl").write_text(session_text(missing) + '{"x":"blob:sha256:../etc/passwd"}\n')
    res = verify_store([root], store)  # type: ignore[list-item]
    assert not res.ok
    assert res.corrupt == [blobs["unused2"]]
    assert [(Path(r.file).name, r.line, r.sha) for r in res.missing] == [("2026_e.jsonl", 2, missing)]
    assert [(Path(r.file).name, r.line, r.ref) for r in res.malformed] == [("2026_e.jsonl", 3, "../etc/passwd")]


def test_stats(world: dict[str, object]) -> None:
    root, store, blobs = world["root"], world["store"], world["blobs"]
    assert isinstance(store, Path) and isinstance(blobs, dict)
    st = store_stats([root], store)  # type: ignore[list-item]
    sizes = {sha: (store / sha).stat().st_size for sha in [*blobs.values(), world["young"]]}
    used = {blobs[k] for k in ("live", "subagent", "archived", "backup", "registered", "text")}
    assert (st.blobs, st.bytes) == (9, sum(sizes.values()))
    assert (st.referenced, st.referenced_bytes) == (6, sum(sizes[s] for s in used))
    assert st.by_type["png"] == (4, sum(sizes[blobs[k]] for k in ("subagent", "backup", "text", "unused2")))
    assert st.largest[0][1] == max(sizes.values()) and st.refs == 6 and st.missing == 0


def test_cli(world: dict[str, object]) -> None:
    store = world["store"]
    assert isinstance(store, Path)
    runner = CliRunner()
    r = runner.invoke(cli, ["blobs", "verify"])  # the default root and store come from PI_CODING_AGENT_DIR
    assert r.exit_code == 0 and r.output.strip().endswith("ok"), r.output
    r = runner.invoke(cli, ["blobs", "gc", "--json"])
    out = json.loads(r.output)
    assert r.exit_code == 0 and out["unreferenced_count"] == 2 and out["applied"] is False
    n = len(os.listdir(store))
    r = runner.invoke(cli, ["blobs", "gc", "--apply", "--min-age", "0"])
    assert r.exit_code == 0 and "deleted 3 blob(s)" in r.output
    assert len(os.listdir(store)) == n - 4  # three blobs and one sidecar
    r = runner.invoke(cli, ["blobs", "stats", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["unreferenced"] == 0
    (store / world["blobs"]["live"]).write_bytes(b"x")  # type: ignore[index]
    r = runner.invoke(cli, ["blobs", "verify"])
    assert r.exit_code == 1 and "corrupt blob" in r.output
    r = runner.invoke(cli, ["blobs", "gc", "--root", "/nonexistent/x"])
    assert r.exit_code == 1 and "no such sessions directory" in r.output


def test_gc_keeps_blobs_of_sessions_omp_archived(world: dict[str, object]) -> None:
    # `omp gc --archive` moves old sessions to <sessions dir>/../archive/sessions/<bucket>/<file>.jsonl.gz
    store, blobs = world["store"], world["blobs"]
    assert isinstance(store, Path) and isinstance(blobs, dict)
    archive = Path(os.environ["PI_CODING_AGENT_DIR"]) / "archive" / "sessions" / "-proj"
    archive.mkdir(parents=True)
    with gzip.open(archive / "2025_old.jsonl.gz", "wt") as f:
        f.write(session_text(blobs["unused1"]))
    r = CliRunner().invoke(cli, ["blobs", "gc", "--json"])
    assert r.exit_code == 0, r.output
    assert [b["sha"] for b in json.loads(r.output)["unreferenced"]] == [blobs["unused2"]]


def test_gc_follows_symlinked_project_folders(world: dict[str, object], tmp_path: Path) -> None:
    root, store, blobs = world["root"], world["store"], world["blobs"]
    assert isinstance(root, Path) and isinstance(store, Path) and isinstance(blobs, dict)
    moved = tmp_path / "bigdisk" / "-other"
    moved.mkdir(parents=True)
    (moved / "2026_x.jsonl").write_text(session_text(blobs["unused1"]))
    (root / "-other").symlink_to(moved)
    (moved / "loop").symlink_to(root)  # a cycle must not make the walk run forever
    assert [b.sha for b in collect_gc([root], store).unreferenced] == [blobs["unused2"]]


def test_gc_keeps_blobs_of_the_session_a_terminal_breadcrumb_names(world: dict[str, object], tmp_path: Path) -> None:
    # omp's own gc also trusts terminal breadcrumbs (line 1 cwd, line 2 session path, maybe
    # relative to it): they name the current --session file even when its registry marker is missing
    store, blobs = world["store"], world["blobs"]
    assert isinstance(store, Path) and isinstance(blobs, dict)
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "notes" / "talk.jsonl").write_text(session_text(blobs["unused1"]))
    crumbs = Path(os.environ["PI_CODING_AGENT_DIR"]) / "terminal-sessions"
    crumbs.mkdir()
    (crumbs / "pts-3").write_text(f"{work}\nnotes/talk.jsonl\nfresh\n")
    (crumbs / "pts-4").write_text("\n")  # empty or odd breadcrumbs are ignored
    assert [b.sha for b in collect_gc([world["root"]], store).unreferenced] == [blobs["unused2"]]  # type: ignore[list-item]
    assert collect_gc([world["root"]], store, registered=False).unreferenced  # type: ignore[list-item]


def test_odd_entries_in_the_store_are_left_alone(world: dict[str, object]) -> None:
    store, blobs = world["store"], world["blobs"]
    assert isinstance(store, Path) and isinstance(blobs, dict)
    folder = store / hashlib.sha256(b"a folder").hexdigest()
    (folder / "inside").mkdir(parents=True)  # a folder with a blob's name is no blob
    (store / f"{blobs['unused1']}.webp").mkdir()  # nor is one with a sidecar's
    old = time.time() - 7200
    os.utime(folder, (old, old))
    res = verify_store([world["root"]], store)  # type: ignore[list-item]
    assert res.ok and res.blobs_checked == 9 and folder.name in res.stray_files
    r = CliRunner().invoke(cli, ["blobs", "gc", "--apply", "--json"])
    assert r.exit_code == 0, r.output
    assert sorted(json.loads(r.output)["deleted"]) == sorted([blobs["unused1"], blobs["unused2"]])
    assert folder.is_dir() and (store / f"{blobs['unused1']}.webp").is_dir()


def test_a_blob_that_cannot_be_deleted_is_one_line(world: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(blob_maint.os, "unlink", refuse)
    r = CliRunner().invoke(cli, ["blobs", "gc", "--apply"])
    assert r.exit_code == 1 and "cannot delete" in r.output and "Permission denied" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_gc_reads_the_registry_omp_keeps_in_xdg_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # after `omp config init-xdg`, custom-session-files lives in $XDG_STATE_HOME/omp (state), the
    # sessions and blobs in $XDG_DATA_HOME/omp (data)
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    for var in ("OMP_PROFILE", "PI_PROFILE", "PI_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    data = tmp_path / "data" / "omp"
    (data / "sessions" / "-w").mkdir(parents=True)
    (data / "sessions" / "-w" / "a.jsonl").write_text(session_text())
    kept = put(data / "blobs", b"registered elsewhere")
    outside = tmp_path / "mine.jsonl"
    outside.write_text(session_text(kept))
    registry = tmp_path / "state" / "omp" / "custom-session-files"
    registry.mkdir(parents=True)
    (registry / "1234abc").write_text(str(outside))
    res = collect_gc(blob_maint.default_roots())
    assert res.store == str(data / "blobs") and res.unreferenced == [] and res.referenced == 1


def test_breadcrumbs_count_without_a_registry(tmp_path: Path) -> None:
    agent = Path(os.environ["PI_CODING_AGENT_DIR"])
    (agent / "sessions" / "-w").mkdir(parents=True)
    (agent / "sessions" / "-w" / "a.jsonl").write_text(session_text())
    kept = put(agent / "blobs", b"named by a breadcrumb only")
    (tmp_path / "s.jsonl").write_text(session_text(kept))
    (agent / "terminal-sessions").mkdir()
    (agent / "terminal-sessions" / "pts-1").write_text(f"/\n{tmp_path / 's.jsonl'}\n")
    assert collect_gc(blob_maint.default_roots()).unreferenced == []


def test_gc_searches_the_session_dir_omp_is_told_to_use(world: dict[str, object], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # PI_CODING_AGENT_SESSION_DIR puts omp's sessions outside its root; older files there may
    # have no registry marker
    blobs = world["blobs"]
    assert isinstance(blobs, dict)
    elsewhere = tmp_path / "my-sessions"
    elsewhere.mkdir()
    (elsewhere / "2026_z.jsonl").write_text(session_text(blobs["unused1"]))
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(elsewhere))
    r = CliRunner().invoke(cli, ["blobs", "gc", "--json"])
    assert r.exit_code == 0, r.output
    assert [b["sha"] for b in json.loads(r.output)["unreferenced"]] == [blobs["unused2"]]


def test_a_blob_verify_cannot_read_is_one_line(world: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(path: Path) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(blob_maint, "_hash_file", unreadable)
    r = CliRunner().invoke(cli, ["blobs", "verify"])
    assert r.exit_code == 1 and "cannot read" in r.output and "Permission denied" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
