"""bench/gen_large.py: the project's own generator of realistic large sessions.

Benchmarks and size-sensitive tests rely on it, so it must be reproducible from its seed, hit
its size target (overshooting by at most one turn), keep its command line, and write files that
omp_session opens cleanly (the oracle comparison lives in the report of issue 17, not here: it
needs bun).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import omp_session
from builders import run
from omp_session.cli import cli
from omp_session.diagnostics import Severity
from omp_session.format.blobs import BlobStore

GEN = Path(__file__).resolve().parents[2] / "bench" / "gen_large.py"


def load_gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_large", GEN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def gen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GEN), *args], capture_output=True, text=True, timeout=60)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def two_mb(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("gen")
    out, blobs = d / "s.jsonl", d / "blobs"
    proc = gen("--size", "2M", "--seed", "3", "-o", str(out), "--blob-dir", str(blobs))
    assert proc.returncode == 0, proc.stderr
    return out, blobs


def test_same_seed_same_bytes_and_blobs(tmp_path: Path) -> None:
    outs = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        assert gen("--size", "300K", "--seed", seed, "-o", str(tmp_path / f"{name}.jsonl"),
                   "--blob-dir", str(tmp_path / f"blobs-{name}")).returncode == 0
        blobs = {p.name: p.read_bytes() for p in (tmp_path / f"blobs-{name}").iterdir()}
        outs.append(((tmp_path / f"{name}.jsonl").read_bytes(), blobs))
    assert outs[0] == outs[1]
    assert outs[0][0] != outs[2][0]


def test_size_target_overshoots_by_at_most_one_turn(tmp_path: Path) -> None:
    for size, target in (("200K", 200 * 1024), ("1.5M", int(1.5 * 1024 * 1024))):
        out = tmp_path / f"{size}.jsonl"
        assert gen("--size", size, "--seed", "2", "-o", str(out)).returncode == 0
        data = out.read_bytes()
        assert len(data) >= target
        # The last turn starts at the last user prompt; a compaction or a few small entries may
        # come just before it, so everything before that prompt is below the target plus those.
        last_user = max(i for i, r in enumerate(records(out))
                        if r.get("type") == "message" and r["message"]["role"] == "user")
        before = sum(len(x) + 1 for x in data.splitlines()[:last_user])
        assert before < target + 20_000


def test_parse_size_suffixes() -> None:
    mod = load_gen()
    assert mod.parse_size("512") == 512
    assert mod.parse_size("50K") == 50 * 1024
    assert mod.parse_size("5m") == 5 * 1024**2
    assert mod.parse_size("1G") == 1024**3


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    assert gen("--size", "lots", "-o", str(tmp_path / "x.jsonl")).returncode == 2
    assert gen("--size", "1M").returncode == 2                      # no -o
    assert gen("--many", "3").returncode == 2                       # no --dir
    assert gen("--many", "2", "--dir", str(tmp_path / "d"), "--min-size", "2M", "--max-size", "1M").returncode == 2
    assert gen("--inline-image-share", "1.5", "-o", str(tmp_path / "x.jsonl")).returncode == 2
    helptext = gen("--help").stdout
    for opt in ("--size", "--seed", "-o", "--blob-dir", "--no-title-slot", "--inline-image-share",
                "--large-inline-share", "--many", "--dir", "--min-size", "--max-size", "--stats"):
        assert opt in helptext


def test_many_writes_sessions_named_like_omp(tmp_path: Path) -> None:
    d = tmp_path / "many"
    proc = gen("--many", "4", "--min-size", "20K", "--max-size", "200K", "--seed", "9", "--dir", str(d))
    assert proc.returncode == 0, proc.stderr
    files = sorted(d.iterdir())
    assert len(files) == 4
    for f in files:
        head = records(f)[1]
        assert f.name.endswith(f"_{head['id']}.jsonl")
        assert f.stat().st_size >= 20 * 1024


def test_title_slot_layout_and_stats(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    proc = gen("--size", "100K", "-o", str(out), "--stats")
    assert proc.returncode == 0 and "toolResult" in proc.stderr
    first = out.read_bytes().split(b"\n", 1)[0]
    assert len(first) + 1 == 256 and json.loads(first)["type"] == "title"
    legacy = tmp_path / "legacy.jsonl"
    assert gen("--size", "100K", "--no-title-slot", "-o", str(legacy)).returncode == 0
    head = records(legacy)[0]
    assert head["type"] == "session" and head["version"] == 3 and head["title"]


def test_two_mb_session_is_well_formed(two_mb: tuple[Path, Path]) -> None:
    path, blobs = two_mb
    recs = records(path)[2:]
    ids = [r["id"] for r in recs]
    assert len(ids) == len(set(ids))
    seen: set[str] = set()
    calls: set[str] = set()
    kinds = set()
    for r in recs:
        assert r["parentId"] is None or r["parentId"] in seen
        seen.add(r["id"])
        kinds.add(r["type"])
        if r["type"] == "compaction":
            assert r["firstKeptEntryId"] in seen
        if r["type"] == "message":
            m = r["message"]
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if b["type"] == "toolCall":
                    calls.add(b["id"])
                if b["type"] == "image":
                    if b["data"].startswith("blob:sha256:"):
                        sha = b["data"].removeprefix("blob:sha256:")
                        assert hashlib.sha256((blobs / sha).read_bytes()).hexdigest() == sha
                    else:
                        base64.b64decode(b["data"], validate=True)
            if m["role"] == "toolResult":
                assert m["toolCallId"] in calls
    assert {"message", "model_change", "thinking_level_change", "compaction", "title_change",
            "model_usage"} <= kinds


def test_library_opens_two_mb_session_cleanly(two_mb: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    path, blobs = two_mb
    with omp_session.open(path, blob_store=BlobStore(blobs)) as s:
        assert [d for d in s.diagnostics if d.severity is not Severity.INFO] == []
        assert s.build_session_context()
        assert s.get_tree()
        assert s.raw_leaf == records(path)[-1]["id"]
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(blobs.parent))  # its blobs dir is ours
    code, out, err = run(cli, "validate", "--strict", str(path))
    assert code == 0, out + err
