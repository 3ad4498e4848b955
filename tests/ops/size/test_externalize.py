"""externalize: inline images move into the blob store by omp's rules; omp loads the same session."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import builders
from builders import ORACLE, header, line, stamp, user
from omp_session.cli import cli
from omp_session.errors import EditError, FormatError
from omp_session.ops.size.externalize import externalize

SLOT_TS = "2026-01-01T00:00:00.000Z"


def b64(n_bytes: int, seed: int) -> str:
    return base64.b64encode(random.Random(seed).randbytes(n_bytes)).decode()


def entry(i: int, parent: str | None, **fields: Any) -> dict[str, Any]:
    """Entry number ``i``: id e000000i, stamped i seconds past midnight."""
    return builders.entry(f"e{i:07d}", parent, timestamp=stamp(i), **fields)


# Images by size in base64 characters: omp's threshold is 1,024 UTF-16 units of `data`.
BIG = b64(3000, 1)          # 4,000 characters: moves
EXACT = b64(768, 2)         # exactly 1,024 characters: moves (the rule is >= 1024)
SMALL = b64(765, 3)         # 1,020 characters: stays
NESTED = b64(2000, 4)       # inside a toolResult's content
CUSTOM = b64(1500, 5)       # in a custom_message's content
DETAILS = b64(1200, 6)      # under details.images (mimeType only, no type)
UNPADDED = b64(1000, 7).rstrip("=")  # non-canonical: omp would load it back padded
assert len(EXACT) == 1024 and len(SMALL) == 1020 and not UNPADDED.endswith("=") and len(UNPADDED) % 4
DATA_URL = "data:image/png;base64," + b64(1100, 8)


def image(data: str, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime}


def make_session(path: Path) -> list[dict[str, Any]]:
    head = header("0199aaaa-0000-7000-8000-000000000001", timestamp=SLOT_TS, cwd="/work")
    entries = [
        entry(1, None, message=user([{"type": "text", "text": "look"}, image(BIG), image(SMALL, "image/jpeg")])),
        entry(2, "e0000001", message={"role": "assistant", "content": [
            {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a.png"}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude", "stopReason": "toolUse",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "timestamp": 2}),
        entry(3, "e0000002", message={"role": "toolResult", "toolCallId": "t1", "toolName": "read",
                                      "content": [{"type": "text", "text": "Read image"}, image(NESTED),
                                                  image(EXACT, "image/webp")],
                                      "details": {"images": [{"data": DETAILS, "mimeType": "image/gif"}],
                                                  "image": {"type": "image", "data": BIG}},
                                      "isError": False, "timestamp": 3}),
        entry(4, "e0000003", type="custom_message", customType="screenshot",
              content=[{"type": "text", "text": "shot"}, image(CUSTOM, "image/jpeg")], display=True),
        entry(5, "e0000004", message=user([image(UNPADDED), image(BIG)], timestamp=5)),
        entry(6, "e0000005", message=user([{"type": "text", "text": "url"},
                                           {"type": "input_image", "image_url": DATA_URL}], timestamp=6)),
    ]
    slot = {"type": "title", "v": 1, "title": "pics", "updatedAt": SLOT_TS, "pad": ""}
    slot_line = line(slot)
    slot["pad"] = " " * (256 - len(slot_line.encode()) - 1)
    path.write_text("\n".join([line(slot), line(head), *map(line, entries)]) + "\n", encoding="utf-8")
    return entries


def sha_of_b64(s: str) -> str:
    return hashlib.sha256(base64.b64decode(s + "=" * (-len(s) % 4))).hexdigest()


def test_moves_exactly_omp_positions_and_sizes(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    make_session(src)
    before = src.read_bytes()
    store = tmp_path / "blobs"
    res = externalize(src, tmp_path / "out.jsonl", store=store)
    assert src.read_bytes() == before  # never in place
    out = (tmp_path / "out.jsonl").read_text()
    moved = {BIG: "png", EXACT: "webp", NESTED: "png", CUSTOM: "jpg", DETAILS: "gif"}
    for data, ext in moved.items():
        sha = sha_of_b64(data)
        assert data not in out.replace(f'"image":{{"type":"image","data":"{BIG}"}}', "")
        assert f"blob:sha256:{sha}" in out
        assert (store / sha).read_bytes() == base64.b64decode(data)
        assert (store / f"{sha}.{ext}").read_bytes() == base64.b64decode(data)
    url_sha = hashlib.sha256(DATA_URL.encode()).hexdigest()
    assert f'"image_url":"blob:sha256:{url_sha}"' in out and (store / url_sha).read_bytes() == DATA_URL.encode()
    # stays inline: under the threshold, non-canonical base64, and details.image (not an image position)
    assert SMALL in out and UNPADDED in out and f'"image":{{"type":"image","data":"{BIG}"}}' in out
    assert res.images_moved == 7  # BIG twice, EXACT, NESTED, CUSTOM, DETAILS, the data URL
    assert res.below_threshold == 1 and res.kept_noncanonical == 1
    assert sorted(res.blobs) == sorted({*(sha_of_b64(d) for d in moved), url_sha})
    assert res.bytes_after == len(out.encode()) < res.bytes_before == len(before)
    # the title slot, the header and untouched lines are byte for byte the same
    assert out.splitlines()[:2] == before.decode().splitlines()[:2]
    assert out.splitlines()[3] == before.decode().splitlines()[3]


def test_dry_run_writes_nothing_and_predicts_the_size(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    make_session(src)
    dry = externalize(src, None, store=tmp_path / "blobs")
    assert not (tmp_path / "blobs").exists()
    real = externalize(src, tmp_path / "out.jsonl", store=tmp_path / "blobs")
    assert (dry.bytes_after, dry.images_moved, dry.blobs) == (real.bytes_after, real.images_moved, real.blobs)
    assert real.new_blobs == len(real.blobs)
    again = externalize(tmp_path / "out.jsonl", tmp_path / "out2.jsonl", store=tmp_path / "blobs")
    assert again.images_moved == 0 and again.saved == 0
    assert (tmp_path / "out2.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()


def test_refuses_in_place_existing_and_non_sessions(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    make_session(src)
    with pytest.raises(EditError, match="never written in place"):
        externalize(src, src, store=tmp_path / "b")
    (tmp_path / "o.jsonl").write_text("x")
    with pytest.raises(EditError, match="already exists"):
        externalize(src, tmp_path / "o.jsonl", store=tmp_path / "b")
    assert (tmp_path / "o.jsonl").read_text() == "x"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"message"}\n')
    with pytest.raises(FormatError, match="session header"):
        externalize(bad, tmp_path / "x.jsonl")
    gz = tmp_path / "s.jsonl.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    with pytest.raises(FormatError, match="gzip archive"):
        externalize(gz, tmp_path / "z.jsonl")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_cli(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    make_session(src)
    runner = CliRunner()
    r = runner.invoke(cli, ["externalize", str(src), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["images_moved"] == 7
    r = runner.invoke(cli, ["externalize", str(src), "-o", str(tmp_path / "o.jsonl"), "--blobs", str(tmp_path / "b")])
    assert r.exit_code == 0 and "moved 7 image(s)" in r.output and "below omp's" in r.output
    r = runner.invoke(cli, ["externalize", str(src), "-o", str(tmp_path / "o.jsonl"), "--blobs", str(tmp_path / "b")])
    assert r.exit_code == 1 and "already exists" in r.output
    assert runner.invoke(cli, ["externalize", str(src)]).exit_code == 2


@pytest.mark.oracle
def test_omp_loads_the_same_session(tmp_path: Path) -> None:
    """The oracle loads the original (no blobs needed) and the copy (with the store): same views."""
    src = tmp_path / "s.jsonl"
    make_session(src)
    store = tmp_path / "blobs"
    externalize(src, tmp_path / "out.jsonl", store=store)
    big = tmp_path / "big.jsonl"
    subprocess.run(["python3", str(ORACLE.parents[1] / "bench" / "gen_large.py"), "--size", "4M", "--seed", "5",
                    "-o", str(big), "--blob-dir", str(store), "--inline-image-share", "0.9",
                    "--large-inline-share", "0.6"], check=True, capture_output=True)
    big_res = externalize(big, tmp_path / "big_out.jsonl", store=store)
    assert big_res.images_moved > 0 and big_res.saved > 0
    proc = subprocess.run([str(ORACLE / "omp-reference"), "load", "--blobs", str(store), str(src),
                           str(tmp_path / "out.jsonl"), str(big), str(tmp_path / "big_out.jsonl")],
                          capture_output=True, text=True, timeout=300, check=True)
    recs = [json.loads(x) for x in proc.stdout.splitlines()]
    for before, after in (recs[0:2], recs[2:4]):
        assert after["error"] is None and after["view_errors"] == {}
        for view in ("header", "entries", "context", "transcript", "labels", "tree", "leaf_id", "usage"):
            assert after[view] == before[view], view
        assert after["after_flush"]["changed"] is False  # nothing omp would rewrite


@pytest.mark.oracle
def test_corpus_loads_the_same(tmp_path: Path, make_corpus: Any) -> None:
    """Every generated session with images (refs present, missing, malformed; large inline ones)
    and custom messages: omp loads the externalized copy exactly as the original."""
    corpus = make_corpus(3, 60)
    files = [p for p in sorted(corpus.glob("*.jsonl"))
             if any(k in p.name for k in ("dmg_blob", "v3_custom", "v3_mixed", "dmg_bom", "dmg_malformed"))]
    store = tmp_path / "blobs"
    store.mkdir()
    for b in (corpus / "blobs").iterdir():
        (store / b.name).write_bytes(b.read_bytes())
    pairs: list[tuple[Path, Path]] = []
    moved = 0
    for f in files:
        out = tmp_path / f.name
        try:
            res = externalize(f, out, store=store)
        except FormatError:
            continue
        moved += res.images_moved
        pairs.append((f, out))
    assert moved > 0 and len(pairs) >= 8
    proc = subprocess.run([str(ORACLE / "omp-reference"), "load", "--jobs", "2", "--blobs", str(store),
                           *[str(p) for pair in pairs for p in pair]],
                          capture_output=True, text=True, timeout=600, check=True)
    recs = [json.loads(x) for x in proc.stdout.splitlines()]
    for (src, _), before, after in zip(pairs, recs[0::2], recs[1::2], strict=True):
        for view in ("error", "view_errors", "header", "entries", "context", "transcript", "labels", "tree",
                     "leaf_id", "usage", "session_name"):
            assert after[view] == before[view], (src.name, view)
