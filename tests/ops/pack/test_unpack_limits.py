"""unpack under attack: nothing staged before every hash checks out, a bounded manifest, stale
staging folders of a killed unpack cleaned, session names omp would never write refused."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from builders import assistant, entry, header, invoke, stamp, user, write_session
from omp_session.cli import cli
from omp_session.errors import PackError
from omp_session.ops.pack import unpack as unpack_module
from omp_session.ops.pack.archive import pack
from omp_session.ops.pack.manifest import MAX_MANIFEST
from omp_session.ops.pack.unpack import unpack

NAME = "2026-01-01T00-00-00-000Z_0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"


@pytest.fixture
def good(tmp_path: Path) -> Path:
    bucket = tmp_path / "a" / "sessions" / "--old--"
    src = write_session(bucket / NAME, [
        entry("u1", None, timestamp=stamp(1), message=user("hello")),
        entry("a1", "u1", timestamp=stamp(2), message=assistant("hi")),
    ], head=header("0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", cwd="/old"))
    out = tmp_path / "good.tar"
    pack([src], out, blobs_dir=tmp_path / "a" / "blobs")
    return out


def _members(archive: Path) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(archive) as tar:
        return [(m, tar.extractfile(m).read() if m.isreg() else None) for m in tar]  # type: ignore[union-attr]


def _craft(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w") -> Path:
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _manifest(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> dict[str, Any]:
    data = members[0][1]
    assert data is not None
    return dict(json.loads(data))


def _with(members: list[tuple[tarfile.TarInfo, bytes | None]], doc: dict[str, Any]
          ) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    return [(members[0][0], json.dumps(doc).encode()), *members[1:]]


def _tree(base: Path) -> list[str]:
    return sorted(str(p.relative_to(base)) for p in base.rglob("*")) if base.exists() else []


def test_a_member_whose_hash_fails_is_never_staged(good: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A zstd bomb's shape: the manifest lists a huge member honestly but its hash is wrong. Every
    hash is checked before a byte goes to disk, so a refusal costs no disk at all."""
    members = _members(good)
    k = next(i for i, (m, _) in enumerate(members) if m.name.endswith(".jsonl"))
    info, data = members[k]
    assert data is not None
    bigger = data + b"\n" * (8 << 20)
    doc = _manifest(members)
    next(f for f in doc["files"] if f["name"] == info.name)["size"] = len(bigger)  # honest size, old hash
    crafted = _with(members, doc)
    crafted[k] = (info, bigger)
    staged: list[str] = []
    real = unpack_module._open_staged
    monkeypatch.setattr(unpack_module, "_open_staged", lambda p: (staged.append(p), real(p))[1])
    root = tmp_path / "b" / "sessions"
    with pytest.raises(PackError, match="SHA-256 does not match"):
        unpack(_craft(tmp_path / "bomb.tar.gz", crafted, "w:gz"), root=root, cwd="/new")
    assert staged == []
    assert _tree(tmp_path / "b") == []


def test_a_member_longer_than_the_manifest_says_is_refused_unread(good: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    members = _members(good)
    k = next(i for i, (m, _) in enumerate(members) if m.name.endswith(".jsonl"))
    info, data = members[k]
    assert data is not None
    crafted = list(members)
    crafted[k] = (info, data + b"x" * (4 << 20))  # the manifest keeps the true size
    staged: list[str] = []
    real = unpack_module._open_staged
    monkeypatch.setattr(unpack_module, "_open_staged", lambda p: (staged.append(p), real(p))[1])
    with pytest.raises(PackError, match="the manifest says"):
        unpack(_craft(tmp_path / "long.tar", crafted), root=tmp_path / "b" / "sessions", cwd="/new")
    assert staged == [] and _tree(tmp_path / "b") == []


class _Spaces:
    def __init__(self, n: int) -> None:
        self.left = n

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return b" " * n


def test_a_manifest_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """The cap is low enough that a manifest at the cap parses in bounded memory (docs/pack.md)."""
    assert MAX_MANIFEST <= 64 * 1024 * 1024
    archive = tmp_path / "big.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = MAX_MANIFEST + 1
        tar.addfile(info, _Spaces(info.size))  # type: ignore[arg-type]
    with pytest.raises(PackError, match=r"manifest.json is larger than .* MB"):
        unpack(archive, root=tmp_path / "b" / "sessions", cwd="/new")


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_staging_folders_of_a_killed_unpack_are_removed_and_reported(good: Path, tmp_path: Path) -> None:
    root = tmp_path / "b" / "sessions"
    blobs = tmp_path / "b" / "blobs"
    dead = _dead_pid()
    stale = [root / f".omp-session-unpack-{dead}-abcd1234", blobs / f".omp-session-unpack-{dead}-ef567890",
             root / ".omp-session-unpack-k3j2h1g0"]  # an older version's name: no pid, judged by age
    for d in stale:
        (d / "0").mkdir(parents=True)
        (d / "0" / "1.bash.log").write_text("x")
    hour_ago = time.time() - 3600
    os.utime(stale[2], (hour_ago, hour_ago))
    live = root / f".omp-session-unpack-{os.getpid()}-00000000"  # an unpack still running
    live.mkdir()
    young = root / ".omp-session-unpack-youngone"
    young.mkdir()
    result = invoke(cli, "unpack", str(good), "--root", str(root), "--blobs", str(blobs), "--new-cwd", "/new")
    assert result.exit_code == 0, result.output
    assert not any(d.exists() for d in stale)
    assert live.is_dir() and young.is_dir()
    assert "removed 3 staging folder(s) left by an interrupted unpack" in result.stderr
    res = unpack(good, root=root, blobs_dir=blobs, cwd="/other")
    assert res.stale_removed == []


@pytest.mark.parametrize("bad", ["2026-01-01T00-00-00-000Z_a\nb.jsonl", "evil\u202egnp.jsonl",
                                 "\uff0e\uff0e\uff0fx.jsonl", "a\udce9b.jsonl", "..jsonl", ".hidden.jsonl",
                                 "with space.jsonl"])
def test_session_names_omp_never_writes_are_refused(good: Path, tmp_path: Path, bad: str) -> None:
    members = _members(good)
    doc = _manifest(members)
    s = doc["sessions"][0]
    old_member = s["member"]
    new_member = old_member.rsplit("/", 1)[0] + "/" + bad
    s["member"] = new_member
    for f in doc["files"]:
        if f["name"] == old_member:
            f["name"] = new_member
    crafted = _with(members, doc)
    for i, (info, data) in enumerate(crafted):
        if info.name == old_member:
            info.name = new_member
            crafted[i] = (info, data)
    archive = _craft(tmp_path / "names.tar", crafted)
    with pytest.raises(PackError, match="not a session file name omp writes"):
        unpack(archive, root=tmp_path / "b" / "sessions", cwd="/new")
    assert _tree(tmp_path / "b") == []


def test_pack_refuses_a_name_unpack_would_refuse(tmp_path: Path) -> None:
    src = write_session(tmp_path / "my\u202esession.jsonl", [entry("u1", None, message=user("x"))])
    with pytest.raises(PackError, match="not a session file name omp writes"):
        pack([src], tmp_path / "x.tar")
    assert not (tmp_path / "x.tar").exists()
