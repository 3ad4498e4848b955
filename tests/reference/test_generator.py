"""The project's own corpus generator (gen_sessions.py) and record comparer (compare.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GEN, CMP = HERE / "gen_sessions.py", HERE / "compare.py"
ENTRY_ID = re.compile(r"[0-9a-f]{8}\Z")


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"reference_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


gen = load(GEN)
cmp = load(CMP)
SMALL_KINDS = [k for k in gen.KINDS if k != "large_stream"]


def generate_cli(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GEN), "--out", str(out), *args], text=True, capture_output=True)


def tree_bytes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# -- generator ---------------------------------------------------------------------------------------

def test_same_seed_gives_the_same_bytes(tmp_path: Path) -> None:
    for name in ("a", "b"):
        proc = generate_cli(tmp_path / name, "--seed", "7", "--count", "60", "--scripts", "6")
        assert proc.returncode == 0, proc.stderr
    first, second = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert first == second
    assert len([n for n in first if n.endswith(".jsonl")]) == 60
    assert len([n for n in first if n.startswith("scripts/")]) == 6
    assert any(n.startswith("blobs/") for n in first)


def test_another_seed_gives_other_files(tmp_path: Path) -> None:
    assert generate_cli(tmp_path / "a", "--seed", "1", "--count", "24").returncode == 0
    assert generate_cli(tmp_path / "b", "--seed", "2", "--count", "24").returncode == 0
    a, b = tree_bytes(tmp_path / "a"), tree_bytes(tmp_path / "b")
    assert [n for n in a if a[n] != b.get(n)]


def test_a_file_depends_only_on_seed_index_and_kind(tmp_path: Path) -> None:
    assert generate_cli(tmp_path, "--seed", "3", "--count", "30").returncode == 0
    # file 27 is the 4th kind of the second round; made alone it is the same file
    data, _ = gen.generate(3, 27, SMALL_KINDS[3])
    assert (tmp_path / f"0027_{SMALL_KINDS[3]}.jsonl").read_bytes() == data
    # and it does not change when fewer or other kinds are generated around it
    assert generate_cli(tmp_path / "alone", "--seed", "3", "--count", "4", "--kinds",
                        f"{SMALL_KINDS[3]},v1").returncode == 0
    assert gen.generate(3, 0, SMALL_KINDS[3])[0] == (tmp_path / "alone" / f"0000_{SMALL_KINDS[3]}.jsonl").read_bytes()


def test_rotation_covers_every_kind_and_large_files_every_fourth_round() -> None:
    kinds = list(gen.KINDS)
    order = gen.rotation(kinds, 4 * len(SMALL_KINDS) + 1)
    assert set(order) == set(kinds)
    assert order.count("large_stream") == 1
    assert order.index("large_stream") == 4 * len(SMALL_KINDS)  # the end of the 4th round
    assert order[: len(SMALL_KINDS)] == SMALL_KINDS
    assert gen.rotation(["large_stream"], 2) == ["large_stream", "large_stream"]


def test_every_kind_the_readme_names_is_produced() -> None:
    named = ["v3_linear", "v3_branched", "v3_compaction", "v3_labels", "v3_custom", "v3_title", "v3_misc",
             "v3_mixed", "v1", "v2", "dmg_malformed", "dmg_blank", "dmg_truncated", "dmg_dup_ids",
             "dmg_missing_parent", "dmg_cycle", "dmg_nonobject", "dmg_bom", "dmg_unknown", "dmg_huge", "dmg_blob",
             "dmg_header", "dmg_encoding", "dmg_entry_shape", "large_stream"]
    assert list(gen.KINDS) == named
    for index, kind in enumerate(SMALL_KINDS):
        data, entry = gen.generate(5, index, kind)
        assert entry["kind"] == kind and entry["size"] == len(data)
        assert data or kind == "dmg_header"


def test_large_stream_files_reach_the_streaming_loader() -> None:
    data, _ = gen.generate(1, 0, "large_stream")
    assert len(data) >= 8 * 1024 * 1024 == gen.STREAM_THRESHOLD
    # no string over omp's 500,000-character persistence limit: that is dmg_huge's business
    assert max(len(line) for line in data.split(b"\n")) < 500_000


def test_selection_and_listing(tmp_path: Path) -> None:
    assert gen.select_kinds("valid") == [k for k in gen.KINDS if k.startswith("v")]
    assert gen.select_kinds("damaged") == [k for k in gen.KINDS if k.startswith("dmg_")]
    assert gen.select_kinds("v2, v1") == ["v1", "v2"]
    listed = subprocess.run([sys.executable, str(GEN), "--list-kinds"], text=True, capture_output=True)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == list(gen.KINDS)
    bad = generate_cli(tmp_path, "--kinds", "v3_linear,nope")
    assert bad.returncode == 2 and "unknown kind 'nope'" in bad.stderr


def test_manifest_describes_every_file(tmp_path: Path) -> None:
    assert generate_cli(tmp_path, "--seed", "11", "--count", "50", "--scripts", "3").returncode == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["seed"] == 11 and manifest["count"] == 50 and manifest["kinds"] == list(gen.KINDS)
    names = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert [f["file"] for f in manifest["files"]] == names
    for item in manifest["files"]:
        assert item["file"] == f"{names.index(item['file']):04d}_{item['kind']}.jsonl"
        assert item["size"] == (tmp_path / item["file"]).stat().st_size
        assert isinstance(item["features"], list)
    assert manifest["scripts"] == ["0000_script.json", "0001_script.json", "0002_script.json"]
    for blob in (tmp_path / "blobs").iterdir():
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name


def check_valid_v3(lines: list[bytes]) -> None:
    """What omp writes: optional 256-byte slot, header, entries with fresh ids whose parents came first."""
    if lines[0].startswith(b'{"type":"title"'):
        assert len(lines[0]) + 1 == gen.SLOT_WIDTH
        lines = lines[1:]
    header = json.loads(lines[0])
    assert list(header)[:5] == ["type", "version", "id", "timestamp", "cwd"] and header["version"] == 3
    seen: set[str] = set()
    for line in lines[1:]:
        record = json.loads(line)
        assert ENTRY_ID.match(record["id"]) and record["id"] not in seen
        assert record["parentId"] is None or record["parentId"] in seen
        envelope = [k for k in record if k in ("type", "id", "parentId", "timestamp")]
        assert envelope == ["type", "id", "parentId", "timestamp"]
        if record["type"] == "message":
            message = record["message"]
            assert isinstance(message["timestamp"], int)
            if message["role"] == "assistant":
                assert message["stopReason"] in ("stop", "length", "toolUse", "error", "aborted")
                assert "total" in message["usage"]["cost"]
        seen.add(record["id"])


@pytest.mark.parametrize("kind", [k for k in SMALL_KINDS if k.startswith("v3_") and k != "v3_title"])
def test_valid_kinds_look_like_what_omp_writes(kind: str) -> None:
    for index in range(6):
        data, _ = gen.generate(9, index, kind)
        assert data.endswith(b"\n") and b"\r" not in data
        check_valid_v3(data[:-1].split(b"\n"))


def test_legacy_kinds_carry_their_version_marks() -> None:
    for index in range(6):
        v1 = [json.loads(x) for x in gen.generate(4, index, "v1")[0].splitlines()]
        assert "version" not in v1[0]
        assert any("firstKeptEntryIndex" in r for r in v1)
        v2 = [json.loads(x) for x in gen.generate(4, index, "v2")[0].splitlines()]
        assert v2[0]["version"] == 2 and all("id" in r for r in v2[1:])


def test_scripts_reference_only_earlier_results() -> None:
    for index in range(10):
        script = gen.script(1, index)
        named: set[str] = set()
        for op in script["ops"]:
            for key, value in op.items():
                if key != "as" and isinstance(value, str) and value.startswith("$"):
                    assert value[1:] in named, (index, op)
            if "as" in op:
                named.add(op["as"])
        assert script["ops"][-1] == {"op": "flush"}


# -- compare.py --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``load`` records of a small generated corpus, as our adapter prints them."""
    root = tmp_path_factory.mktemp("corpus")
    assert generate_cli(root, "--seed", "2", "--count", str(len(SMALL_KINDS))).returncode == 0
    files = sorted(str(p) for p in root.glob("*.jsonl"))
    out = subprocess.run([sys.executable, str(REPO / "tests" / "conformance" / "adapter.py"), "load", "--blobs",
                          str(root / "blobs"), *files], text=True, capture_output=True, check=True)
    path = root / "records.jsonl"
    path.write_text(out.stdout)
    return path


def run_compare(a: Path, b: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CMP), str(a), str(b), *args], text=True, capture_output=True)


def rewrite(path: Path, target: Path, change: Any) -> Path:
    recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    target.write_text("".join(json.dumps(change(r)) + "\n" for r in recs))
    return target


def test_identical_records_pass(records: Path) -> None:
    proc = run_compare(records, records)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[-1] == f"{len(SMALL_KINDS)} passed, 0 failed"


def test_a_planted_difference_fails_and_is_named(records: Path, tmp_path: Path) -> None:
    def plant(r: dict[str, Any]) -> dict[str, Any]:
        if Path(r["file"]).name.startswith("0000_") and r["entries"]:
            r["entries"][1]["message"]["content"] = "changed"
        return r

    other = rewrite(records, tmp_path / "other.jsonl", plant)
    proc = run_compare(records, other)
    assert proc.returncode == 1
    out = proc.stdout.splitlines()
    assert out[-1] == f"{len(SMALL_KINDS) - 1} passed, 1 failed"
    assert any(line.startswith("FAIL 0000_v3_linear.jsonl") for line in out)
    assert any("entries.1.message.content" in line for line in out)
    assert "differences by top-level field: entries=1" in out
    # the planted field left out: the record passes
    assert run_compare(records, other, "--ignore", "entries.*.message").returncode == 0
    assert run_compare(records, other, "--only", "header", "--only", "leaf_id").returncode == 0


def test_generated_ids_are_aligned_unless_strict(records: Path, tmp_path: Path) -> None:
    def renumber(r: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(r)
        for entry in r.get("entries") or []:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) and ENTRY_ID.match(entry["id"]):
                text = text.replace(entry["id"], hashlib.sha256(entry["id"].encode()).hexdigest()[:8])
        return dict(json.loads(text), file=r["file"])

    other = rewrite(records, tmp_path / "other.jsonl", renumber)
    assert run_compare(records, other).returncode == 0
    strict = run_compare(records, other, "--ids", "strict")
    assert strict.returncode == 1 and ".id: oracle" in strict.stdout


def test_missing_records_fail(records: Path, tmp_path: Path) -> None:
    first = records.read_text().splitlines()[0]
    short = tmp_path / "short.jsonl"
    short.write_text(first + "\n")
    proc = run_compare(records, short)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == f"1 passed, {len(SMALL_KINDS) - 1} failed"
    assert "missing from other output" in proc.stdout


def write_records(path: Path, *recs: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_normalisation_options(tmp_path: Path) -> None:
    base = {"oracle": 1, "kind": "load", "file": "/x/f.jsonl", "error": "TypeError: a", "n": 1,
            "view_errors": {"tree": "OracleTimeout: x"}, "entries": [{"id": "aaaaaaaa", "timestamp": 5}]}
    other = dict(base, error="Error: b", n=1.0, view_errors={"tree": "RecursionError: y"})
    a, b = write_records(tmp_path / "a.jsonl", base), write_records(tmp_path / "b.jsonl", other)
    assert run_compare(a, b).returncode == 0
    assert "error: oracle \"TypeError\" vs other \"Error\"" in run_compare(a, b, "--errors", "name").stdout
    assert "n: oracle 1 vs other 1.0" in run_compare(a, b, "--numbers", "exact").stdout
    # run records mask timestamps by default, load records only with --timestamps always
    later = dict(base, entries=[{"id": "aaaaaaaa", "timestamp": 6}])
    b2 = write_records(tmp_path / "b2.jsonl", later)
    assert run_compare(a, b2).returncode == 1
    assert run_compare(a, b2, "--timestamps", "always").returncode == 0
    run_a = write_records(tmp_path / "ra.jsonl", dict(base, kind="run", t="2026-01-01T00:00:00.000Z"))
    run_b = write_records(tmp_path / "rb.jsonl", dict(later, kind="run", t="2026-05-05T10:00:00.123Z"))
    assert run_compare(run_a, run_b).returncode == 0
    assert run_compare(run_a, run_b, "--timestamps", "never").returncode == 1


def test_file_states_compare_as_text(tmp_path: Path) -> None:
    import base64

    def state(text: str) -> dict[str, Any]:
        raw = text.encode()
        return {"exists": True, "changed": True, "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest(),
                "b64": base64.b64encode(raw).decode()}

    body = "".join(f'{{"type":"custom","id":"{n:08x}","n":{n}}}\n' for n in range(20))
    a = write_records(tmp_path / "a.jsonl", {"file": "f", "after_flush": state(body)})
    b = write_records(tmp_path / "b.jsonl", {"file": "f", "after_flush": state(body.replace('"n":7', '"n":8'))})
    proc = run_compare(a, b)
    assert proc.returncode == 1
    assert "after_flush.text: line 8 col" in proc.stdout
    assert run_compare(a, b, "--bytes", "ignore").returncode == 0


def test_path_patterns() -> None:
    opts = cmp.Options(ignore=[["context", "messages", "*", "timestamp"]], only=[["**", "usage"]])
    assert not cmp.wanted(opts, ["context", "messages", "3", "timestamp"])
    assert cmp.wanted(opts, ["context", "messages", "3", "usage", "cost"])
    assert cmp.wanted(opts, ["context"])  # could still lead to a usage
    assert cmp.covered([["entries"]], ["entries", "0", "id"])
    assert not cmp.covered([["entries", "*", "id"]], ["entries", "0", "parentId"])


def test_records_are_split_on_newlines_only(tmp_path: Path) -> None:
    # omp prints U+2028, U+0085 and friends raw inside strings; they do not end a record
    rec = {"file": "f", "text": "a\u2028b\u0085c\x1cd"}
    a = tmp_path / "a.jsonl"
    a.write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
    proc = run_compare(a, a)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "1 passed, 0 failed"


def test_pairing_by_index_and_only_reaching_leaves(tmp_path: Path) -> None:
    a = write_records(tmp_path / "a.jsonl", {"file": "/x/1", "e": [{"id": "a", "t": 1}]}, {"file": "/x/2", "n": 1})
    b = write_records(tmp_path / "b.jsonl", {"file": "/y/one", "e": [{"id": "a", "t": 2}]}, {"file": "/y/two", "n": 1})
    by_index = run_compare(a, b, "--match", "index", "--ignore", "file")
    assert by_index.returncode == 1 and "FAIL 0 (1 difference)" in by_index.stdout
    assert run_compare(a, b, "--ignore", "file").stdout.count("missing from") == 4
    assert run_compare(a, b, "--match", "index", "--only", "**.id").returncode == 0
    assert run_compare(a, b, "--match", "index", "--only", "e.*.t").returncode == 1


def test_groups_mix_with_kinds_in_a_comma_list() -> None:
    """``--kinds valid,dmg_bom`` (the tests' own use) is every valid kind plus dmg_bom."""
    kinds = gen.select_kinds("valid,dmg_bom")
    assert "dmg_bom" in kinds and all(k in kinds for k in gen.select_kinds("valid"))
    assert gen.select_kinds("damaged,v1") == [k for k in gen.KINDS if k.startswith("dmg_") or k == "v1"]


def test_a_snapshots_view_errors_compare_like_the_records(tmp_path: Path) -> None:
    """A ``snapshot`` step's view errors are masked by --errors like the record's own: omp's
    TypeError text and ours differ, both say the view failed."""
    base = {"oracle": 1, "kind": "run", "file": "/x/s.json", "error": None, "view_errors": {}}
    a = dict(base, steps=[{"index": 0, "op": "snapshot", "error": None,
                           "result": {"view_errors": {"context": "TypeError: message.content.some is not a function"}}}])
    b = dict(base, steps=[{"index": 0, "op": "snapshot", "error": None,
                           "result": {"view_errors": {"context": "Error: entry 'x': content.some fails"}}}])
    (tmp_path / "a.jsonl").write_text(json.dumps(a) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps(b) + "\n")
    run = subprocess.run([sys.executable, str(CMP), str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")],
                         text=True, capture_output=True)
    assert run.returncode == 0, run.stdout
    exact = subprocess.run([sys.executable, str(CMP), str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                            "--errors", "exact"], text=True, capture_output=True)
    assert exact.returncode == 1
