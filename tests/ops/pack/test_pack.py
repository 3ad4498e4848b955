"""pack / unpack: round trips, header rewriting, every kind of bad archive, memory bound, CLI, oracle."""

from __future__ import annotations

import base64
import errno
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import omp_session
from builders import ORACLE, assistant, entry, header, stamp, usage, user
from omp_session import SessionManager
from omp_session.catalog.resolve import resolve_session
from omp_session.cli import cli
from omp_session.errors import PackError
from omp_session.format.blobs import BlobStore
from omp_session.format.title import TITLE_SLOT_BYTES, parse_title_slot
from omp_session.js import codec
from omp_session.ops.pack import unpack as unpack_module
from omp_session.ops.pack.archive import all_sessions, pack, project_sessions
from omp_session.ops.pack.manifest import Manifest, RefScanner, check_member_name
from omp_session.ops.pack.unpack import parse_map, unpack
from omp_session.paths import project_dir_name

USAGE = usage(cost=0)


class Agent:
    """One agent dir: sessions root and blob store side by side, as omp lays them out."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "sessions"
        self.blobs = base / "blobs"

    def session(self, cwd: str, *, image: bool = True, title: str | None = "a title",
                subagent: bool = True, text: str = "hello") -> str:
        sm = SessionManager.create(cwd, self.root / project_dir_name(cwd), blob_store=BlobStore(self.blobs))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image:
            data = base64.b64encode(hashlib.sha256(text.encode()).digest() * 64).decode()
            content.append({"type": "image", "data": data, "mimeType": "image/png"})
        u = sm.append_message({"role": "user", "content": content, "timestamp": 1767225600000})
        sm.append_message(assistant("ok", api="x", provider="p", usage=USAGE, timestamp=1767225600001))
        sm.append_label_change(u, "start")
        sm.branch(u)
        sm.append_message(assistant("another way", api="x", provider="p", usage=USAGE, timestamp=1767225600002))
        if title:
            sm.set_session_name(title, "user")
        path = sm.path
        sm.close()
        assert path is not None
        if subagent:
            art = Path(path[: -len(".jsonl")])
            (art / "sub").mkdir(parents=True)
            (art / "1.bash.log").write_text("tool output\n")
            (art / "agent1.jsonl").write_bytes(codec.dumps_line(header("agent-1", cwd=cwd, parentSession=path))
                                               + codec.dumps_line(entry("a1", timestamp=stamp(1), message=user("sub task"))))
        return path


def _snapshot(*dirs: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for d in dirs:
        for here, subdirs, files in os.walk(d):
            for s in subdirs:
                out[os.path.join(here, s)] = None
            for f in files:
                out[os.path.join(here, f)] = Path(here, f).read_bytes()
    return out


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Agent, Agent, Path]:
    """Agent dirs a (where omp_session's defaults point: pack reads its blob store) and b."""
    old = tmp_path / "old-project"
    old.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "a"))
    return Agent(tmp_path / "a"), Agent(tmp_path / "b"), old


def _header_line(data: bytes) -> tuple[int, int]:
    start = TITLE_SLOT_BYTES if parse_title_slot(data[: data.index(b"\n")]) else 0
    return start, data.index(b"\n", start)


# --------------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("suffix", [".tar", ".tar.gz", ".tar.zst"])
def test_round_trip_moves_sessions_and_keeps_every_other_byte(agents: tuple[Agent, Agent, Path],
                                                               tmp_path: Path, suffix: str) -> None:
    a, b, old = agents
    path = a.session(str(old))
    blob_names = sorted(n for n in os.listdir(a.blobs) if "." not in n)
    out = tmp_path / f"out{suffix}"
    result = pack([path], out)
    assert result.compression == {".tar": "none", ".tar.gz": "gzip", ".tar.zst": "zstd"}[suffix]
    assert result.blobs == 1 and len(blob_names) == 1
    new = tmp_path / "new-project"
    res = unpack(out, root=b.root, cwd=str(new))
    (s,) = res.sessions
    target = Path(s.target)
    assert target == b.root / project_dir_name(str(new)) / os.path.basename(path)
    before, after = Path(path).read_bytes(), target.read_bytes()
    # title slot untouched (still 256 bytes, still valid), header cwd rewritten, the rest byte for byte
    assert after[:TITLE_SLOT_BYTES] == before[:TITLE_SLOT_BYTES]
    assert parse_title_slot(after[: TITLE_SLOT_BYTES - 1]) is not None
    hs, he = _header_line(before)
    header = codec.loads(before[hs:he])
    header["cwd"] = str(new)
    assert after == before[:hs] + codec.dumps_line(header)[:-1] + before[he:]
    assert os.stat(target).st_mtime == pytest.approx(os.stat(path).st_mtime, abs=1e-3)
    # the artifact folder came along, the subagent's header moved with it (and its parent link)
    art = Path(str(target)[: -len(".jsonl")])
    assert (art / "1.bash.log").read_text() == "tool output\n" and (art / "sub").is_dir()
    sub = codec.loads((art / "agent1.jsonl").read_bytes().split(b"\n")[0])
    assert sub["cwd"] == str(new) and sub["parentSession"] == str(target)
    assert sorted(os.listdir(b.blobs)) == blob_names
    assert res.blobs_added == 1 and res.blobs_present == 0
    # nothing else was left in the roots (no staging folders)
    assert sorted(os.listdir(b.root)) == [project_dir_name(str(new))]
    s1 = omp_session.open(path, blob_store=BlobStore(a.blobs))
    s2 = omp_session.open(target, blob_store=BlobStore(b.blobs))
    assert list(s1.entries) == list(s2.entries) and s2.diagnostics == []
    assert s1.build_session_context() == s2.build_session_context()


def test_map_rewrites_cwd_and_additional_directories_and_parent_links(tmp_path: Path) -> None:
    a, b = Agent(tmp_path / "a"), Agent(tmp_path / "b")
    bucket = a.root / "--srv-app--"
    bucket.mkdir(parents=True)
    parent = bucket / "2026-01-01T00-00-00-000Z_p1.jsonl"
    child = bucket / "2026-01-01T00-00-01-000Z_c1.jsonl"
    other = bucket / "2026-01-01T00-00-02-000Z_o1.jsonl"
    parent.write_bytes(codec.dumps_line({"type": "session", "version": 3, "id": "p1", "timestamp": "t",
                                         "cwd": "/srv/app", "additionalDirectories": ["/srv/lib", "/opt/x"]}))
    child.write_bytes(codec.dumps_line({"type": "session", "version": 3, "id": "c1", "timestamp": "t",
                                        "cwd": "/srv/app/sub", "parentSession": str(parent)}))
    other.write_bytes(codec.dumps_line({"type": "session", "version": 3, "id": "o1", "timestamp": "t",
                                        "cwd": "/elsewhere", "parentSession": "/not/packed.jsonl"}))
    out = tmp_path / "x.tar"
    pack(all_sessions(root=a.root), out)
    res = unpack(out, root=b.root, maps=[parse_map("/srv=/home/u/srv"), parse_map("/srv/app=/work/app")])
    by_id = {s.id: s for s in res.sessions}
    hp = codec.loads(Path(by_id["p1"].target).read_bytes())
    hc = codec.loads(Path(by_id["c1"].target).read_bytes())
    ho = Path(by_id["o1"].target).read_bytes()
    # the longest OLD wins; additionalDirectories under a mapping move, others stay; key order kept
    assert list(hp) == ["type", "version", "id", "timestamp", "cwd", "additionalDirectories"]
    assert hp["cwd"] == "/work/app" and hp["additionalDirectories"] == ["/home/u/srv/lib", "/opt/x"]
    assert hc["cwd"] == "/work/app/sub" and hc["parentSession"] == by_id["p1"].target
    assert ho == other.read_bytes()  # nothing to change: the very same bytes
    assert Path(by_id["c1"].target).parent.name == project_dir_name("/work/app/sub")


def test_archived_jsonl_gz_is_packed_as_the_plain_session(agents: tuple[Agent, Agent, Path],
                                                         tmp_path: Path) -> None:
    a, b, old = agents
    path = a.session(str(old), subagent=False)
    gz = path + ".gz"
    with open(path, "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    plain = Path(path).read_bytes()
    os.unlink(path)
    pack([gz], tmp_path / "x.tgz")
    res = unpack(tmp_path / "x.tgz", root=b.root, cwd=str(old))
    (s,) = res.sessions
    assert s.target.endswith(".jsonl") and Path(s.target).read_bytes() == plain


def test_project_and_all_select_what_list_shows(agents: tuple[Agent, Agent, Path], tmp_path: Path) -> None:
    a, _, old = agents
    p1 = a.session(str(old), subagent=False, text="one")
    other = tmp_path / "other"
    other.mkdir()
    p2 = a.session(str(other), subagent=False, text="two")
    (a.root / project_dir_name(str(old)) / ".hidden.jsonl").write_text("x")
    assert project_sessions(str(old), root=a.root) == [p1]
    assert sorted(all_sessions(root=a.root)) == sorted([p1, p2])
    # what omp's gc --archive moved aside joins with archived=True
    gz = a.base / "archive" / "sessions" / project_dir_name(str(old)) / (Path(p1).name + ".gz")
    gz.parent.mkdir(parents=True)
    gz.write_bytes(gzip.compress(Path(p1).read_bytes()))
    assert project_sessions(str(old), root=a.root, archived=True) == [p1, str(gz)]
    assert sorted(all_sessions(root=a.root, archived=True)) == sorted([p1, p2, str(gz)])
    assert all_sessions(root=a.root) == all_sessions()  # the root defaults to omp's


def test_blob_already_in_store_is_checked_not_replaced(agents: tuple[Agent, Agent, Path], tmp_path: Path) -> None:
    a, b, old = agents
    path = a.session(str(old), subagent=False)
    pack([path], tmp_path / "x.tar")
    shutil.copytree(a.blobs, b.blobs)
    (sha,) = [n for n in os.listdir(b.blobs) if "." not in n]
    inode = os.stat(b.blobs / sha).st_ino
    res = unpack(tmp_path / "x.tar", root=b.root, cwd=str(old))
    assert res.blobs_added == 0 and res.blobs_present == 1 and os.stat(b.blobs / sha).st_ino == inode
    # a damaged blob in the target store is an error, and nothing is placed
    shutil.rmtree(b.root)
    (b.blobs / sha).write_bytes(b"damaged")
    with pytest.raises(PackError, match="already in the store is damaged"):
        unpack(tmp_path / "x.tar", root=b.root, cwd=str(old))
    assert list(b.root.rglob("*.jsonl")) == []


def test_existing_session_is_never_overwritten_and_force_keeps_a_backup(agents: tuple[Agent, Agent, Path],
                                                                        tmp_path: Path) -> None:
    a, b, old = agents
    path = a.session(str(old))
    pack([path], tmp_path / "x.tar.gz")
    target = Path(unpack(tmp_path / "x.tar.gz", root=b.root, cwd=str(old)).sessions[0].target)
    target.write_bytes(target.read_bytes() + b'{"type":"custom","id":"local"}\n')
    local = target.read_bytes()
    before = _snapshot(b.base)
    with pytest.raises(PackError, match="already there"):
        unpack(tmp_path / "x.tar.gz", root=b.root, cwd=str(old))
    assert _snapshot(b.base) == before
    res = unpack(tmp_path / "x.tar.gz", root=b.root, cwd=str(old), force=True)
    backup = res.sessions[0].backup
    assert backup is not None and Path(backup).read_bytes() == local
    assert not backup.endswith((".jsonl", ".bak"))  # omp neither lists nor promotes it
    stamp = backup.rsplit(".unpack-backup-", 1)[1]
    assert (Path(f"{str(target)[: -len('.jsonl')]}.unpack-backup-{stamp}") / "1.bash.log").exists()
    assert target.read_bytes() != local and (Path(str(target)[:-6]) / "agent1.jsonl").exists()
    # once more within the same second: a second backup, the first one kept
    again = unpack(tmp_path / "x.tar.gz", root=b.root, cwd=str(old), force=True).sessions[0].backup
    assert again is not None and again != backup and Path(backup).read_bytes() == local
    assert Path(again).read_bytes() == target.read_bytes()


def test_dry_run_verifies_and_places_nothing(agents: tuple[Agent, Agent, Path], tmp_path: Path) -> None:
    a, b, old = agents
    pack([a.session(str(old))], tmp_path / "x.tar")
    res = unpack(tmp_path / "x.tar", root=b.root, cwd=str(old), dry_run=True)
    assert res.dry_run and len(res.sessions) == 1
    assert not b.base.exists()  # not even the folders it would have created


# --------------------------------------------------------------------------------------------------
# Pack refusals


def test_pack_refuses_missing_blobs_unless_allowed(agents: tuple[Agent, Agent, Path], tmp_path: Path) -> None:
    a, b, old = agents
    path = a.session(str(old), subagent=False)
    for n in os.listdir(a.blobs):
        os.unlink(a.blobs / n)
    with pytest.raises(PackError, match=r"not in .*allow-missing-blobs"):
        pack([path], tmp_path / "x.tar")
    assert not (tmp_path / "x.tar").exists() and os.listdir(tmp_path).count("x.tar") == 0
    result = pack([path], tmp_path / "x.tar", allow_missing_blobs=True)
    assert len(result.missing_blobs) == 1
    res = unpack(tmp_path / "x.tar", root=b.root, cwd=str(old))
    assert res.missing_blobs == result.missing_blobs


def test_pack_refuses_damaged_blob_non_sessions_and_existing_output(agents: tuple[Agent, Agent, Path],
                                                                   tmp_path: Path) -> None:
    a, _, old = agents
    path = a.session(str(old), subagent=False)
    (tmp_path / "exists.tar").write_text("keep")
    with pytest.raises(PackError, match="already exists"):
        pack([path], tmp_path / "exists.tar")
    assert (tmp_path / "exists.tar").read_text() == "keep"
    (tmp_path / "junk.jsonl").write_text("not json\n")
    with pytest.raises(PackError, match="not an omp session"):
        pack([tmp_path / "junk.jsonl"], tmp_path / "y.tar")
    (sha,) = [n for n in os.listdir(a.blobs) if "." not in n]
    (a.blobs / sha).write_bytes(b"changed")
    with pytest.raises(PackError, match="damaged"):
        pack([path], tmp_path / "y.tar")
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["exists.tar", "junk.jsonl"]


def test_pack_refuses_a_file_rewritten_between_the_two_reads(agents: tuple[Agent, Agent, Path], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.ops.pack import archive as pack_module

    a, _, old = agents
    path = a.session(str(old), subagent=False)
    real = pack_module._collect

    def collect_then_touch(*args: Any) -> Any:
        got = real(*args)
        data = bytearray(Path(path).read_bytes())
        data[300] ^= 1
        Path(path).write_bytes(bytes(data))
        return got

    monkeypatch.setattr(pack_module, "_collect", collect_then_touch)
    with pytest.raises(PackError, match="changed while packing"):
        pack([path], tmp_path / "x.tar")
    assert list(tmp_path.glob("*.tar*")) == [] and list(tmp_path.glob(".x.tar*")) == []


def test_pack_refuses_a_damaged_archived_session(tmp_path: Path) -> None:
    # a .jsonl.gz whose deflate data is broken: zlib's own error, not gzip's, must not escape
    bucket = tmp_path / "sessions" / "--srv--"
    bucket.mkdir(parents=True)
    gz = bucket / "2026-01-01T00-00-00-000Z_s1.jsonl.gz"
    gz.write_bytes(bytes.fromhex("1f8b08000000000000ff") + b"\x07" + b"\x00" * 20)  # invalid block type
    with pytest.raises(PackError, match=r"cannot be read.*nothing was packed"):
        pack([gz], tmp_path / "x.tar")
    assert not (tmp_path / "x.tar").exists()


def test_artifact_file_vanishing_while_listed_is_a_clear_error(agents: tuple[Agent, Agent, Path], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    a, _, old = agents
    path = a.session(str(old))
    real_walk = os.walk

    def walk(top: Any, **kw: Any) -> Any:
        for here, dirs, files in real_walk(top, **kw):
            yield here, dirs, [*files, "gone.log"]  # listed, then deleted before it is looked at

    monkeypatch.setattr(os, "walk", walk)
    with pytest.raises(PackError, match=r"gone\.log.*nothing was packed"):
        pack([path], tmp_path / "x.tar")
    assert not (tmp_path / "x.tar").exists()


def test_unreadable_artifact_subfolder_is_a_clear_error(agents: tuple[Agent, Agent, Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # a folder that cannot be listed must not silently drop out of the archive
    a, _, old = agents
    path = a.session(str(old))
    real_scandir = os.scandir

    def scandir(p: Any = ".") -> Any:
        if os.path.basename(os.fspath(p)) == "sub":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(p))
        return real_scandir(p)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(PackError, match=r"sub: cannot be read.*nothing was packed"):
        pack([path], tmp_path / "x.tar")
    assert not (tmp_path / "x.tar").exists()


def test_names_that_are_not_utf8_round_trip(agents: tuple[Agent, Agent, Path], tmp_path: Path) -> None:
    a, b, old = agents
    path = a.session(str(old))
    art = os.fsencode(path[: -len(".jsonl")])
    with open(os.path.join(art, b"caf\xe9.log"), "wb") as f:  # a Latin-1 name on a UTF-8 system
        f.write(b"latin")
    pack([path], tmp_path / "x.tar")
    (s,) = unpack(tmp_path / "x.tar", root=b.root, cwd=str(old)).sessions
    with open(os.path.join(os.fsencode(s.target[: -len(".jsonl")]), b"caf\xe9.log"), "rb") as f:
        assert f.read() == b"latin"


# --------------------------------------------------------------------------------------------------
# Bad archives: a clear error and nothing written


def _members(archive: Path) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(archive) as tar:
        return [(m, tar.extractfile(m).read() if m.isreg() else None) for m in tar]  # type: ignore[union-attr]


def _craft(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _with_manifest(members: list[tuple[tarfile.TarInfo, bytes | None]],
                   edit: Callable[[dict[str, Any]], None]) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    info, data = members[0]
    assert data is not None
    doc = json.loads(data)
    edit(doc)
    return [(info, json.dumps(doc).encode()), *members[1:]]


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


@pytest.fixture
def packed(agents: tuple[Agent, Agent, Path], tmp_path: Path) -> tuple[Path, Agent, Path]:
    a, b, old = agents
    out = tmp_path / "good.tar"
    pack([a.session(str(old))], out)
    return out, b, old


def _refused(archive: Path, b: Agent, old: Path, match: str) -> None:
    b.base.mkdir(parents=True, exist_ok=True)
    (b.base / "marker").write_text("x")
    before = _snapshot(b.base)
    with pytest.raises(PackError, match=match):
        unpack(archive, root=b.root, cwd=str(old))
    assert _snapshot(b.base) == before  # nothing half-written, no staging folder left


def test_truncated_archives_are_refused(packed: tuple[Path, Agent, Path], tmp_path: Path,
                                        agents: tuple[Agent, Agent, Path]) -> None:
    good, b, old = packed
    data = good.read_bytes()
    for cut in (100, 1024 + 300, len(data) // 2, len(data) - 3000):
        bad = tmp_path / f"cut{cut}.tar"
        bad.write_bytes(data[:cut])
        _refused(bad, b, old, "truncated|ends before|not an omp-session")
    for suffix in (".tar.gz", ".tar.zst"):
        full = tmp_path / f"full{suffix}"
        pack([_source_of(good)], full)
        raw = full.read_bytes()
        for cut in (len(raw) // 3, len(raw) - 5):
            bad = tmp_path / f"cut{cut}{suffix}"
            bad.write_bytes(raw[:cut])
            _refused(bad, b, old, "truncated|damaged|ends before")


def _source_of(archive: Path) -> str:
    manifest = json.loads(_members(archive)[0][1] or b"")
    return str(manifest["sessions"][0]["path"])


def test_tampered_member_and_manifest_hash_mismatch(packed: tuple[Path, Agent, Path], tmp_path: Path) -> None:
    good, b, old = packed
    members = _members(good)
    k = next(i for i, (m, _) in enumerate(members) if m.name.endswith(".jsonl") and m.name.count("/") == 2)
    info, data = members[k]
    assert data is not None
    tampered = data.replace(b'"ok"', b'"OK"')
    assert tampered != data
    bad = list(members)
    bad[k] = (info, tampered)
    _refused(_craft(tmp_path / "tampered.tar", bad), b, old, "SHA-256 does not match")
    # the manifest lies about a hash
    lying = _with_manifest(members, lambda d: d["files"][0].update(sha256="0" * 64))
    _refused(_craft(tmp_path / "lying.tar", lying), b, old, "SHA-256 does not match")
    # a byte flipped inside the gzip stream: gzip's CRC or our hash catches it
    gz = tmp_path / "x.tar.gz"
    pack([_source_of(good)], gz)
    raw = bytearray(gz.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (tmp_path / "flipped.tar.gz").write_bytes(bytes(raw))
    _refused(tmp_path / "flipped.tar.gz", b, old, "damaged|SHA-256|truncated|manifest")


def test_missing_blob_and_unlisted_blob_reference(packed: tuple[Path, Agent, Path], tmp_path: Path) -> None:
    good, b, old = packed
    members = _members(good)
    without_blob = [(m, d) for m, d in members if not m.name.startswith("blobs/")]
    _refused(_craft(tmp_path / "noblob.tar", without_blob), b, old, "ends before 'blobs/")
    # manifest and members both without the blob: the session's reference gives it away
    def drop(d: dict[str, Any]) -> None:
        d["files"] = [f for f in d["files"] if not f["name"].startswith("blobs/")]
        d["blobs"] = []
    _refused(_craft(tmp_path / "unlisted.tar", _with_manifest(without_blob, drop)), b, old,
             "references blob .* does not hold")


@pytest.mark.parametrize("name,kind,link,match", [
    ("../evil", tarfile.REGTYPE, "", "unsafe member name"),
    ("/etc/evil", tarfile.REGTYPE, "", "unsafe member name"),
    ("sessions/0/../../x", tarfile.REGTYPE, "", "unsafe member name"),
    ("sessions/0/link", tarfile.SYMTYPE, "/etc/passwd", "is a link"),
    ("sessions/0/hard", tarfile.LNKTYPE, "manifest.json", "is a link"),
    ("sessions/0/dev", tarfile.CHRTYPE, "", "device or special"),
    ("sessions/0/fifo", tarfile.FIFOTYPE, "", "device or special"),
    ("sessions/9/extra.jsonl", tarfile.REGTYPE, "", "not in the manifest|manifest lists"),
])
def test_unsafe_members_are_refused(packed: tuple[Path, Agent, Path], tmp_path: Path, name: str, kind: bytes,
                                    link: str, match: str) -> None:
    good, b, old = packed
    members = _members(good)
    for position in (1, len(members)):
        crafted = list(members)
        crafted.insert(position, (_info(name, kind, link), b"x" if kind == tarfile.REGTYPE else None))
        _refused(_craft(tmp_path / f"bad{position}.tar", crafted), b, old, match)
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize("edit,match", [
    (lambda d: d.update(version=2), "version 2 is not supported"),
    (lambda d: d.update(format="zip"), "not an omp-session-pack manifest"),
    (lambda d: d["files"].append({"name": "blobs/../../x", "type": "file", "size": 1, "sha256": "0" * 64}),
     "unsafe member name"),
    (lambda d: d["files"].append({"name": "blobs/ABC", "type": "file", "size": 1, "sha256": "0" * 64}),
     "malformed blob member"),
    (lambda d: d["blobs"].append("../" + "a" * 61), "malformed blob hash"),
    (lambda d: d["sessions"][0].update(member="../x.jsonl"), "bad member"),
    (lambda d: d["files"][0].update(mtime=float("nan")), "bad mtime"),
    (lambda d: d["files"][0].update(mtime=1e300), "bad mtime"),
    (lambda d: d["files"][0].update(mtime=10**400), "bad mtime"),
])
def test_malformed_manifests_are_refused(packed: tuple[Path, Agent, Path], tmp_path: Path,
                                         edit: Callable[[dict[str, Any]], None], match: str) -> None:
    good, b, old = packed
    _refused(_craft(tmp_path / "m.tar", _with_manifest(_members(good), edit)), b, old, match)


def test_deeply_nested_manifest_is_refused(packed: tuple[Path, Agent, Path], tmp_path: Path) -> None:
    good, b, old = packed
    members = _members(good)
    deep = b"[" * 100_000 + b"]" * 100_000
    _refused(_craft(tmp_path / "deep.tar", [(members[0][0], deep), *members[1:]]), b, old, "not valid JSON")


def test_cwd_with_a_nul_byte_is_refused(packed: tuple[Path, Agent, Path], tmp_path: Path) -> None:
    good, b, _ = packed
    crafted = _craft(tmp_path / "nul.tar", _with_manifest(_members(good), lambda d: d["sessions"][0].update(
        cwd="/a\x00b")))
    b.base.mkdir(parents=True, exist_ok=True)
    before = _snapshot(b.base)
    for maps in ([], [parse_map("/x=/y")]):
        with pytest.raises(PackError, match="no usable cwd"):
            unpack(crafted, root=b.root, maps=maps)
        assert _snapshot(b.base) == before


def test_not_an_archive_and_manifest_not_first(packed: tuple[Path, Agent, Path], tmp_path: Path) -> None:
    good, b, old = packed
    (tmp_path / "junk.tar").write_bytes(b"hello world" * 100)
    _refused(tmp_path / "junk.tar", b, old, "truncated or damaged|not an omp-session")
    members = _members(good)
    _refused(_craft(tmp_path / "late.tar", [*members[1:], members[0]]), b, old, "manifest.json is not its first")
    with pytest.raises(PackError, match="No such file"):
        unpack(tmp_path / "missing.tar", root=b.root)


def test_target_not_writable_is_a_clear_error_with_nothing_left(packed: tuple[Path, Agent, Path],
                                                                tmp_path: Path) -> None:
    good, b, old = packed
    b.base.mkdir(parents=True)
    (b.base / "sessions").write_text("a file where the sessions root should be")
    _refused(good, b, old, "sessions: cannot create it|Not a directory|File exists")
    # the project folder is a file: found only when placing, after blobs were placed; all rolled back
    (b.base / "sessions").unlink()
    b.root.mkdir()
    (b.root / project_dir_name(str(old))).write_text("in the way")
    _refused(good, b, old, "nothing was unpacked")


def test_full_disk_while_staging_leaves_nothing(packed: tuple[Path, Agent, Path], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    good, b, old = packed

    class Full(io.BytesIO):
        def write(self, data: Any) -> int:
            if self.tell() + len(data) > 100:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "staged")
            return super().write(data)

    real = unpack_module._open_staged
    monkeypatch.setattr(unpack_module, "_open_staged", lambda p: (real(p), Full())[1])
    _refused(good, b, old, "No space left on device")


# --------------------------------------------------------------------------------------------------
# Pieces


def test_ref_scanner_finds_refs_across_chunk_boundaries() -> None:
    h = "ab" * 32
    text = (b"x" * 50 + b'"blob:sha256:' + h.encode() + b'" ' + b"xblob:sha256:" + b"c" * 64
            + b" blob:sha256:" + b"D" * 64 + b"e " + b"blob:sha256:" + b"F" * 64)
    for size in (1, 7, 77, 1000):
        s = RefScanner()
        for i in range(0, len(text), size):
            s.feed(text[i: i + size])
        assert s.finish() == {h, "f" * 64}, size


def test_read_head_finds_the_header_line_as_omp_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.format.title import build_title_slot
    from omp_session.ops.pack import manifest as pack_manifest

    header = b'{"type":"session","id":"s1","cwd":"/a"}'
    body = b'{"type":"message","id":"m1"}\n'
    slot = build_title_slot("t", "user", "2026-01-01T00:00:00.000Z")
    for prefix, term in ((b"", b"\n"), (b"\xef\xbb\xbf", b"\n"), (slot, b"\r\n"), (slot + b"\n  \t\n", b"\n")):
        data = prefix + header + term + body
        head = pack_manifest.read_head(io.BytesIO(data).read)
        assert head.header == {"type": "session", "id": "s1", "cwd": "/a"}
        assert data[head.start: head.end] == header and head.data == data  # small: all read at once
    assert pack_manifest.read_head(io.BytesIO(body + header).read).header is None  # an entry first
    assert pack_manifest.read_head(io.BytesIO(b"").read).header is None
    # no header line within the limit: nothing is lost, the caller copies the bytes
    monkeypatch.setattr(pack_manifest, "MAX_HEAD", 10)
    monkeypatch.setattr(pack_manifest, "CHUNK", 8)
    long = b'{"type":"session","id":"s1","cwd":"' + b"x" * 100 + b'"}\n'
    stream = io.BytesIO(long)
    head = pack_manifest.read_head(stream.read)
    assert head.header is None and head.data + stream.read() == long


def test_crlf_header_keeps_its_line_end(tmp_path: Path) -> None:
    a, b = Agent(tmp_path / "a"), Agent(tmp_path / "b")
    bucket = a.root / "--srv--"
    bucket.mkdir(parents=True)
    f = bucket / "2026-01-01T00-00-00-000Z_s1.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"type":"session","id":"s1","cwd":"/srv","x":1e400}\r\n{"type":"m"}\r\n')
    pack([f], tmp_path / "x.tar")
    (s,) = unpack(tmp_path / "x.tar", root=b.root, cwd="/new").sessions
    # re-serialised as JSON.stringify would (1e400 is Infinity -> null), BOM and CRLF kept
    assert Path(s.target).read_bytes() == b'\xef\xbb\xbf{"type":"session","id":"s1","cwd":"/new","x":null}\r\n{"type":"m"}\r\n'


def test_member_names() -> None:
    check_member_name("sessions/0/a.jsonl")
    for bad in ("", "/a", "a/../b", "a//b", "./a", "a\\b", "a/"):
        with pytest.raises(PackError):
            check_member_name(bad)
    with pytest.raises(PackError, match="OLD=NEW"):
        parse_map("nothing")


def test_manifest_round_trips(packed: tuple[Path, Agent, Path]) -> None:
    good, _, _ = packed
    data = _members(good)[0][1]
    assert data is not None
    m = Manifest.from_bytes(data)
    assert Manifest.from_bytes(m.to_bytes()).to_bytes() == m.to_bytes()
    doc = json.loads(data)
    assert doc["format"] == "omp-session-pack" and doc["version"] == 1
    s = doc["sessions"][0]
    assert {"id", "cwd", "path", "member", "artifacts"} <= set(s)
    assert all(f["type"] == "dir" or len(f["sha256"]) == 64 for f in doc["files"])


def test_pack_and_unpack_stream_in_pieces(tmp_path: Path) -> None:
    a, b = Agent(tmp_path / "a"), Agent(tmp_path / "b")
    bucket = a.root / "-big"
    bucket.mkdir(parents=True)
    big = bucket / "2026-01-01T00-00-00-000Z_big.jsonl"
    line = codec.dumps_line({"type": "custom", "id": "x", "parentId": None, "data": "y" * 4000})
    with open(big, "wb") as f:
        f.write(codec.dumps_line({"type": "session", "version": 3, "id": "big", "timestamp": "t", "cwd": "/big"}))
        for _ in range(4000):  # 16 MB
            f.write(line)
    size = big.stat().st_size
    assert size > 16_000_000
    tracemalloc.start()
    try:
        pack([big], tmp_path / "big.tar.gz")
        _, peak_pack = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        unpack(tmp_path / "big.tar.gz", root=b.root, cwd="/big2")
        _, peak_unpack = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a few 256 KB pieces in flight (tarfile's buffer, the decompressor's, ours), never the file
    assert peak_pack < size / 5 and peak_unpack < size / 5, (peak_pack, peak_unpack, size)


# --------------------------------------------------------------------------------------------------
# Archived .jsonl.gz sessions read like plain files


def test_jsonl_gz_reads_like_the_plain_file(agents: tuple[Agent, Agent, Path], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    a, _, old = agents
    path = a.session(str(old), subagent=False)
    gz = Path(path + ".gz")
    with open(path, "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    plain = omp_session.open(path, blob_store=BlobStore(a.blobs))
    archived = omp_session.open(gz, blob_store=BlobStore(a.blobs))
    assert archived.header == plain.header and list(archived.entries) == list(plain.entries)
    assert archived.get_session_name() == plain.get_session_name() == "a title"
    assert archived.build_session_context() == plain.build_session_context()
    assert archived.diagnostics == plain.diagnostics == []
    runner = CliRunner()
    cat_plain = runner.invoke(cli, ["cat", path, "--whole-file"])
    cat_gz = runner.invoke(cli, ["cat", str(gz), "--whole-file"])
    assert cat_gz.exit_code == 0 and cat_gz.stdout_bytes == cat_plain.stdout_bytes != b""
    os.unlink(path)
    # SESSION resolution finds it by id prefix; the commands read it
    sid = plain.header["id"] if plain.header else ""
    monkeypatch.chdir(old)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(a.base))
    assert resolve_session(sid[:13], root=a.root) == str(gz)
    for args in (["show", str(gz), "--json"], ["context", sid[:13], "--json"], ["tree", str(gz)],
                 ["tail", str(gz), "-n", "2", "--json"],
                 ["export", str(gz), "--format", "md", "-o", str(tmp_path / "x.md")],
                 ["redact", str(gz), "-o", str(tmp_path / "r.jsonl")]):
        r = runner.invoke(cli, args)
        assert r.exit_code == 0, (args, r.output)
    assert "another way" in (tmp_path / "x.md").read_text()
    assert omp_session.open(tmp_path / "r.jsonl").header["id"] == sid  # type: ignore[index]
    # a damaged archive is one clear line
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(b"x" * 1000)[:20])
    r = runner.invoke(cli, ["show", str(tmp_path / "bad.jsonl.gz")])
    assert r.exit_code == 1 and "not a readable gzip archive" in r.output and "Traceback" not in r.output


# --------------------------------------------------------------------------------------------------
# CLI


def test_cli_pack_project_unpack_and_list(agents: tuple[Agent, Agent, Path], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, old = agents
    a.session(str(old), text="one")
    a.session(str(old), text="two", subagent=False)
    runner = CliRunner()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(a.base))
    r = runner.invoke(cli, ["pack", "--project", str(old), "-o", str(tmp_path / "p.tar.zst"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert len(doc["sessions"]) == 2 and doc["compression"] == "zstd" and doc["blobs"] == 2
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(b.base))
    new = tmp_path / "new"
    new.mkdir()
    r = runner.invoke(cli, ["unpack", str(tmp_path / "p.tar.zst"), "--new-cwd", str(new)])
    assert r.exit_code == 0, r.output
    assert "unpacked 2 session(s)" in r.output
    r = runner.invoke(cli, ["list", "--project", str(new), "--json"])
    assert r.exit_code == 0, r.output
    listed = [s for s in json.loads(r.stdout) if s["subagent_of"] is None]
    assert sorted(s["id"] for s in listed) == sorted(s["id"] for s in doc["sessions"])
    assert all(s["cwd"] == str(new) for s in listed)
    # again: refused, one line, exit 1
    r = runner.invoke(cli, ["unpack", str(tmp_path / "p.tar.zst"), "--new-cwd", str(new)])
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "already there" in r.output


def test_cli_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["pack", "-o", str(tmp_path / "x.tar")])
    assert r.exit_code == 2
    r = runner.invoke(cli, ["unpack", str(tmp_path / "x.tar"), "--new-cwd", "/a", "--map", "/b=/c"])
    assert r.exit_code == 2
    r = runner.invoke(cli, ["unpack", str(tmp_path / "x.tar")])
    assert r.exit_code == 1 and "omp-session: " in r.output
    for cmd in ("pack", "unpack"):
        r = runner.invoke(cli, [cmd, "--help"])
        assert r.exit_code == 0 and "Example" in r.output


# --------------------------------------------------------------------------------------------------
# Acceptance: the real omp opens the unpacked sessions as it opened the originals


def _oracle_load(files: list[str], blobs: Path) -> list[dict[str, Any]]:
    proc = subprocess.run([str(ORACLE / "omp-reference"), "load", "--timeout", "20", "--blobs", str(blobs), *files],
                          check=True, capture_output=True, text=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.oracle
def test_omp_opens_unpacked_sessions_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = Agent(tmp_path / "agent-a"), Agent(tmp_path / "agent-b")
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(ORACLE / "gen_sessions.py"), "--seed", "11", "--count", "12", "--kinds",
                    "v3_linear,v3_branched,v3_compaction,v3_labels,v3_title,v3_misc,v1,v2,dmg_blob",
                    "--out", str(corpus)], check=True, capture_output=True)
    shutil.copytree(corpus / "blobs", a.blobs)
    old = tmp_path / "old"
    old.mkdir()
    originals: list[str] = []
    for f in sorted(corpus.glob("*.jsonl")):
        cwd = omp_session.open(f).header["cwd"]  # type: ignore[index]
        bucket = a.root / project_dir_name(cwd)
        bucket.mkdir(parents=True, exist_ok=True)
        originals.append(str(shutil.copy(f, bucket / f"2026-03-01T09-00-00-000Z_{f.stem}.jsonl")))
    originals += [a.session(str(old), text="img one"), a.session(str(old), text="img two")]
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(a.base))
    archive = tmp_path / "all.tar.zst"
    result = pack(all_sessions(), archive, allow_missing_blobs=True)
    assert len(result.sessions) == len(originals)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(b.base))
    new = tmp_path / "new"
    new.mkdir()
    res = unpack(archive, cwd=str(new))
    moved = {s.source: s.target for s in res.sessions}
    assert set(moved) == set(originals)
    before = _oracle_load(originals, a.blobs)
    after = _oracle_load([moved[p] for p in originals], b.blobs)
    for x, y in zip(before, after, strict=True):
        assert x["error"] is None and y["error"] is None, (x["file"], x["error"], y["error"])
        for key in ("entries", "leaf_id", "branch", "context", "transcript", "labels", "children", "usage",
                    "tree", "session_name", "view_errors"):
            assert x[key] == y[key], (x["file"], key)
        hx, hy = dict(x["header"]), dict(y["header"])
        assert hy.pop("cwd") == str(new) and hx.pop("cwd") != str(new)
        assert hx == hy
        assert y["after_open"]["changed"] is False  # omp had nothing to fix in what we wrote
    # the image blobs were resolved from the new store (an unresolved one would stay a blob: ref)
    images = [blk["data"] for rec in after[-2:] for e in rec["entries"] if e["type"] == "message"
              for blk in e["message"]["content"] if isinstance(blk, dict) and blk.get("type") == "image"]
    assert len(images) == 2 and not any(d.startswith("blob:") for d in images)
    r = CliRunner().invoke(cli, ["list", "--project", str(new), "--json"])
    assert r.exit_code == 0, r.output
    assert sorted(s["path"] for s in json.loads(r.stdout) if s["subagent_of"] is None) == sorted(moved.values())


def test_pack_refuses_to_write_over_a_session_it_packs(tmp_path: Path) -> None:
    from omp_session.ops.pack.archive import PackError, pack

    session = tmp_path / "s.jsonl"
    session.write_bytes((Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" /
                         "sample.jsonl").read_bytes())
    before = session.read_bytes()
    with pytest.raises(PackError, match="one of the sessions"):
        pack([session], session, force=True, blobs_dir=tmp_path / "blobs", allow_missing_blobs=True)
    assert session.read_bytes() == before


def test_output_without_hard_links_is_still_never_clobbered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from omp_session.errors import EditError
    from omp_session.store import atomic

    def no_links(src: str, dst: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")  # vfat, exFAT

    monkeypatch.setattr(atomic.os, "link", no_links)
    out = tmp_path / "out.txt"
    assert atomic.write_new_file(out, [b"one"], force=False, error=EditError) == 3
    assert out.read_bytes() == b"one"
    with pytest.raises(EditError, match="already exists"):
        atomic.write_new_file(out, [b"two"], force=False, error=EditError)
    assert out.read_bytes() == b"one" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_stale_artifacts_folder_is_in_the_way_too(agents: tuple[Agent, Agent, Path], tmp_path: Path) -> None:
    a, b, old = agents
    path = a.session(str(old), subagent=False)
    assert not Path(path[: -len(".jsonl")]).exists()  # packed without an artifacts folder
    pack([path], tmp_path / "x.tar")
    planned = unpack(tmp_path / "x.tar", root=b.root, cwd=str(old), dry_run=True).sessions[0].target
    stale = Path(planned[: -len(".jsonl")])
    stale.mkdir(parents=True)
    (stale / "someone-else.jsonl").write_bytes(b"{}\n")
    with pytest.raises(PackError, match="artifacts folder is already there"):
        unpack(tmp_path / "x.tar", root=b.root, cwd=str(old))
    assert not Path(planned).exists()
    res = unpack(tmp_path / "x.tar", root=b.root, cwd=str(old), force=True)
    assert Path(planned).exists() and not stale.exists()  # moved aside with the session's backup name
    assert res.sessions[0].backup is not None and (Path(res.sessions[0].backup) / "someone-else.jsonl").exists()


def test_a_manifest_cwd_that_is_not_the_headers_is_refused(packed: tuple[Path, Agent, Path], tmp_path: Path) -> None:
    good, b, _ = packed
    crafted = _craft(tmp_path / "moved.tar", _with_manifest(_members(good), lambda d: d["sessions"][0].update(
        cwd="/somewhere/else")))
    b.base.mkdir(parents=True, exist_ok=True)
    before = _snapshot(b.base)
    with pytest.raises(PackError, match="the manifest says cwd '/somewhere/else'"):
        unpack(crafted, root=b.root)
    assert _snapshot(b.base) == before
