"""Session listing (spec S11) against omp's recorded output (tests/data/listing, see record.py there)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omp_session.catalog.listing import (
    SessionInfo,
    find_most_recent_session,
    list_all_sessions,
    list_sessions,
    load_pinned_session_ids,
    recover_orphaned_backups,
    scan_session_info,
)
from omp_session.js import codec

DATA = Path(__file__).resolve().parents[1] / "data" / "listing"
EXPECTED: dict[str, list[dict[str, Any]]] = json.loads((DATA / "expected.json").read_text())
META: dict[str, Any] = json.loads((DATA / "inputs" / "meta.json").read_text())


def _load_recorder() -> Any:
    spec = importlib.util.spec_from_file_location("listing_record", DATA / "record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORD = _load_recorder()


def _inputs(tmp_path: Path) -> Path:
    dest = tmp_path / "in"
    RECORD.materialise(dest, META)
    return dest


def _lines(infos: list[SessionInfo], subs: list[tuple[str, str]]) -> list[str]:
    out = []
    for info in infos:
        text = info.to_json()
        for old, new in subs:
            text = text.replace(codec.stringify(old)[1:-1], new)  # type: ignore[index]
        out.append(text)
    return out


def _golden(name: str) -> list[str]:
    # Re-serialising with JavaScript rules gives the exact JSON.stringify text omp produced.
    return [codec.stringify(item) for item in EXPECTED[name]]  # type: ignore[misc]


def _assert_same(ours: list[str], theirs: list[str]) -> None:
    if ours != theirs:
        by_path = {json.loads(t)["path"]: t for t in theirs}
        for line in ours:
            want = by_path.get(json.loads(line)["path"])
            assert line == want, f"\nours:   {line}\nomp:    {want}"
        assert [json.loads(x)["path"] for x in ours] == [json.loads(x)["path"] for x in theirs]


@pytest.mark.parametrize("bucket", ["hand", "gen"])
def test_list_matches_omp(bucket: str, tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    ours = list_sessions(root / bucket, pins=())
    _assert_same(_lines(ours, [(str(root), "<DIR>")]), _golden(f"list_{bucket}"))


def test_list_with_pins_matches_omp(tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    ours = list_sessions(root / "hand", pins=META["pins"])
    _assert_same(_lines(ours, [(str(root), "<DIR>")]), _golden("list_hand_pinned"))


def test_list_all_matches_omp(tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    ours = list_all_sessions(root, pins=META["pins"])
    _assert_same(_lines(ours, [(str(root), "<ROOT>")]), _golden("list_all_pinned"))


def test_pins_file_is_read_from_agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _inputs(tmp_path)
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "session-pins.json").write_text(json.dumps(META["pins"]))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.delenv("OMP_PROFILE", raising=False)
    monkeypatch.delenv("PI_PROFILE", raising=False)
    ours = list_sessions(root / "hand")
    _assert_same(_lines(ours, [(str(root), "<DIR>")]), _golden("list_hand_pinned"))


@pytest.mark.parametrize(("content", "want"), [
    (None, set()),
    (b'["a", 1, null, "b", "a"]', {"a", "b"}),
    (b'{"a": 1}', set()),
    (b"\xef\xbb\xbf[\"a\"]", set()),  # JSON.parse rejects a BOM; omp warns and uses no pins
    (b"[\"a\"", set()),
])
def test_load_pinned_session_ids(tmp_path: Path, content: bytes | None, want: set[str]) -> None:
    if content is not None:
        (tmp_path / "session-pins.json").write_bytes(content)
    assert load_pinned_session_ids(tmp_path) == want


def test_find_most_recent_session(tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    unpinned = [item["path"] for item in EXPECTED["list_hand"]]
    assert find_most_recent_session(root / "hand") == unpinned[0].replace("<DIR>", str(root))
    assert find_most_recent_session(tmp_path / "missing") is None
    (tmp_path / "empty").mkdir()
    assert find_most_recent_session(tmp_path / "empty") is None


def test_most_recent_ignores_pins_and_status(tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    info = scan_session_info(root / "hand" / "s01_error.jsonl", with_status=False)
    assert info is not None and info.status is None and "status" not in info.to_dict()


def test_backups_are_promoted_once(tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    hand = root / "hand"
    done = recover_orphaned_backups(hand)
    assert sorted(Path(p).name for _, p in done) == ["r01_orphan.jsonl", "r02_dup.jsonl"]
    # The newest backup by mtime wins (record.py makes the "aa" one newer).
    assert scan_session_info(hand / "r02_dup.jsonl").id == "r02-old"  # type: ignore[union-attr]
    assert (hand / "r02_dup.jsonl.00000000000000bb.bak").exists()
    assert (hand / "r03_primary.jsonl.0000000000000001.bak").exists()
    assert recover_orphaned_backups(hand) == []


def test_list_all_does_not_promote_or_descend(tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    paths = {Path(s.path).name for s in list_all_sessions(root, pins=())}
    assert "r01_orphan.jsonl" not in paths and "nested.jsonl" not in paths and ".hidden.jsonl" not in paths
    assert (root / "hand" / "r01_orphan.jsonl.0123456789abcdef.bak").exists()


def test_unreadable_and_odd_paths_are_not_listed(tmp_path: Path) -> None:
    assert scan_session_info(tmp_path / "missing.jsonl") is None
    assert scan_session_info(tmp_path) is None
    (tmp_path / "dir.jsonl").mkdir()
    (tmp_path / "real.jsonl").write_text(RECORD.header("real") + RECORD.user("q"))
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "real.jsonl")
    assert [s.id for s in list_sessions(tmp_path, pins=())] == ["real"]  # Bun.Glob skips symlinks
    assert list_sessions(tmp_path / "missing", pins=()) == []
    assert list_all_sessions(tmp_path / "missing", pins=()) == []


def test_session_info_fields(tmp_path: Path) -> None:
    root = _inputs(tmp_path)
    info = scan_session_info(root / "hand" / "a02_slot_title.jsonl")
    assert info is not None
    assert (info.id, info.title, info.cwd, info.message_count, info.status) == (
        "a02", "Slot Title", "/home/dev/project", 2, "complete")
    assert info.created == 1767607200000 and info.modified == META["mtimes"]["hand/a02_slot_title.jsonl"] // 10**6
    bad = scan_session_info(root / "hand" / "h07_invalid_timestamp.jsonl")
    assert bad is not None and bad.created is None and '"created":null' in bad.to_json()


def _oracle() -> Path:
    return Path(os.environ.get("OMP_ORACLE_DIR", Path(__file__).resolve().parents[2] / "tests" / "reference"))


@pytest.mark.oracle
def test_live_oracle_agrees_on_generated_corpus(tmp_path: Path) -> None:
    """Live differential (about 1 s): a fresh gen_sessions corpus, listed by omp and by us."""
    oracle = _oracle()
    if not (oracle / "omp-reference").exists():
        pytest.skip("oracle not available")
    bucket = tmp_path / "bucket"
    subprocess.run([sys.executable, str(oracle / "gen_sessions.py"), "--seed", "5", "--count", "40", "--kinds",
                    "valid,dmg_malformed,dmg_blank,dmg_truncated,dmg_bom,dmg_header,dmg_encoding,dmg_entry_shape",
                    "--out", str(bucket)], check=True, capture_output=True)
    shutil.rmtree(bucket / "blobs", ignore_errors=True)
    for i, f in enumerate(sorted(bucket.glob("*.jsonl"))):
        ns = (1_767_000_000_000 + (i % 7) * 1000) * 1_000_000  # ties on purpose
        os.utime(f, ns=(ns, ns))
    results = RECORD.run_oracle({"ops": [{"op": "static", "method": "list", "args": ["/x", str(bucket)]}]},
                                tmp_path)
    theirs = [codec.stringify(item) for item in results[0]]
    _assert_same(_lines(list_sessions(bucket, pins=()), []), theirs)  # type: ignore[arg-type]


def test_locale_compare_orders_ascii_like_bun() -> None:
    from omp_session.catalog.listing import _locale_compare

    # Printable ASCII sorted with Bun 1.4.4's String.prototype.localeCompare (en-US ICU collation).
    bun = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"
    assert "".join(sorted(bun[::-1], key=functools.cmp_to_key(_locale_compare))) == bun
    # Pairs checked with Bun: case is a tertiary difference, punctuation primary, controls ignorable.
    for lo, hi in [("a", "A"), ("A", "b"), ("a_b", "a-b"), ("a10", "a2"), ("ab", "aB"), ("aB", "Ab"),
                   ("e", "é"), ("é", "ex"), ("ex", "éx"), ("a-b", "a1")]:
        assert _locale_compare(lo, hi) == -1 and _locale_compare(hi, lo) == 1
    assert _locale_compare("ab", "a\u0001b") == 0


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "inputs" / "hand").glob("*.jsonl")))
def test_cut_and_damaged_files_never_raise(name: str, tmp_path: Path) -> None:
    data = (DATA / "inputs" / "hand" / name).read_bytes()
    rng = random.Random(name)
    for cut in sorted({0, 1, len(data) // 2, len(data) - 1, *(rng.randrange(len(data) + 1) for _ in range(4))}):
        path = tmp_path / f"{cut}.jsonl"
        mangled = bytearray(data[:cut])
        for _ in range(3 if mangled else 0):
            mangled[rng.randrange(len(mangled))] = rng.randrange(256)
        path.write_bytes(bytes(mangled))
        info = scan_session_info(path)
        assert info is None or isinstance(info.to_json(), str)
