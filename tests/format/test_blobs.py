"""Blob store, lenient base64 and load-time resolution, checked against omp 18.2.3 (tests/data/persist)."""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from omp_session.errors import BlobError
from omp_session.format.blobs import (
    BLOB_PREFIX,
    BlobRefProblem,
    BlobStore,
    MemoryBlobStore,
    b64decode_lenient,
    b64encode,
    blob_extension_for_mime,
    is_blob_ref,
    parse_blob_ref,
    resolve_blob_refs,
)

DATA = Path(__file__).parents[1] / "data" / "persist"
SHA_A = hashlib.sha256(b"a").hexdigest()


# ----------------------------------------------------------------- refs


def test_ref_predicates() -> None:
    assert BLOB_PREFIX == "blob:sha256:"
    assert is_blob_ref("blob:sha256:") and is_blob_ref("blob:sha256:../x")
    assert not is_blob_ref("Blob:sha256:" + SHA_A) and not is_blob_ref(None) and not is_blob_ref(5)
    assert parse_blob_ref(BLOB_PREFIX + SHA_A) == SHA_A
    for bad in (SHA_A, BLOB_PREFIX + SHA_A.upper(), BLOB_PREFIX + SHA_A[:-1], BLOB_PREFIX + SHA_A + "0",
                BLOB_PREFIX + "../" + SHA_A[3:], BLOB_PREFIX + SHA_A + "\n", BLOB_PREFIX + " " + SHA_A[1:],
                BLOB_PREFIX + "g" * 64):
        assert parse_blob_ref(bad) is None, bad


# ----------------------------------------------------------------- base64


def test_lenient_base64_matches_bun() -> None:
    recorded = json.loads((DATA / "expected" / "b64_cases.json").read_text())
    assert len(recorded["cases"]) > 50
    bad = [(c["input"], b64decode_lenient(c["input"]).hex(), c["hex"]) for c in recorded["cases"]
           if b64decode_lenient(c["input"]).hex() != c["hex"]]
    assert not bad


def test_lenient_base64_spec_examples() -> None:
    assert b64decode_lenient("AA=EC") == b"\x00"
    assert b64decode_lenient("QUJD") == b"ABC"
    assert b64decode_lenient("QUJDRA") == b"ABCD"           # missing padding
    assert b64decode_lenient("-_-_") == b"\xfb\xff\xbf"     # URL-safe alphabet
    assert b64decode_lenient("Q\nU J\tD") == b"ABC"         # whitespace skipped
    # Bun reads only each UTF-16 unit's low byte: U+013D counts as "=".
    assert b64decode_lenient("QU\u013dA") == b"A"


def test_b64encode_round_trip() -> None:
    for n in range(10):
        data = bytes(range(n))
        assert b64encode(data) == base64.b64encode(data).decode()
        assert b64decode_lenient(b64encode(data)) == data


# ----------------------------------------------------------------- sidecar names


@pytest.mark.parametrize(("mime", "ext"), [
    ("image/png", "png"), ("image/jpeg", "jpg"), ("image/jpg", "jpg"), ("IMAGE/JPEG", "jpg"),
    ("image/gif", "gif"), ("image/webp", "webp"), ("image/svg+xml", "svg"), ("image/x-icon; charset=x", "x-icon"),
    ("image/vnd.foo+zip", "vnd.foo"), ("image/", None), ("image/.hidden", "hidden"), ("image/a b", None),
    ("image/" + "y" * 33, None), ("image/" + "z" * 32, "z" * 32), ("application/octet-stream", None),
    ("image/PNG;x=1", "png"), ("image/-x", None), ("", None), (None, None), (5, None),
])
def test_blob_extension_for_mime(mime: object, ext: str | None) -> None:
    assert blob_extension_for_mime(mime) == ext


# ----------------------------------------------------------------- BlobStore


def test_store_put_get_and_sidecar(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    store = BlobStore(root)
    assert not root.exists()                     # created lazily
    assert list(store.iter_hashes()) == []
    data = b"\x89PNG fake"
    sha = store.put(data, "image/png")
    assert sha == hashlib.sha256(data).hexdigest()
    assert (root / sha).read_bytes() == data
    assert os.stat(root / sha).st_ino == os.stat(root / f"{sha}.png").st_ino
    assert store.get(sha) == data and sha in store and store.verify(sha)
    assert store.path(sha) == root / sha
    # Idempotent, and a second sidecar type is added next to the first.
    assert store.put(data, "image/jpeg") == sha
    assert sorted(os.listdir(root)) == sorted([sha, f"{sha}.png", f"{sha}.jpg"])
    assert list(store.iter_hashes()) == [sha]
    assert store.put(b"x") == hashlib.sha256(b"x").hexdigest()
    assert len(list(store.iter_hashes())) == 2


def test_store_new_blob_mode_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        sha = BlobStore(tmp_path).put(b"m")
    finally:
        os.umask(old)
    assert (os.stat(tmp_path / sha).st_mode & 0o777) == 0o644


def test_store_whose_dir_was_removed_since_makes_it_again(tmp_path: Path) -> None:
    # the store makes its dir once: a dir removed after that (a clean-up, `blobs gc`) is made again
    root = tmp_path / "blobs"
    store = BlobStore(root)
    store.put(b"first", "image/png")
    shutil.rmtree(root)
    sha = store.put(b"second", "image/png")
    assert (root / sha).read_bytes() == b"second" and (root / f"{sha}.png").read_bytes() == b"second"
    assert [p.name for p in root.iterdir() if p.name.endswith(".tmp")] == []


def test_store_put_of_a_blob_it_holds_renews_its_time(tmp_path: Path) -> None:
    # omp writes the blob again when it stores the same image, and `blobs gc` holds back a blob
    # touched since its scan; an unchanged old blob put again (externalize) stayed old, so a gc
    # whose scan ran before could delete the blob the new file references (found by a hunt)
    store = BlobStore(tmp_path / "blobs")
    sha = store.put(b"image bytes")
    old = 1_000_000_000
    os.utime(store.path(sha), (old, old))
    assert store.put(b"image bytes") == sha
    assert store.path(sha).stat().st_mtime > old + 10**8


def test_store_repairs_damaged_blob_in_place(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    data = b"original bytes"
    sha = store.put(data, "image/gif")
    (tmp_path / sha).write_bytes(b"garbage, longer than the original")
    assert not store.verify(sha)
    store.put(data, "image/gif")
    assert store.verify(sha)
    assert (tmp_path / f"{sha}.gif").read_bytes() == data  # the hard link sees the repair


def test_store_refuses_non_canonical_hashes(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"do not read")
    store = BlobStore(tmp_path / "blobs")
    (tmp_path / "blobs").mkdir()
    for bad in ("../secret", SHA_A.upper(), SHA_A[:10], "", SHA_A + ".png", "/etc/passwd"):
        with pytest.raises(BlobError):
            store.get(bad)
        with pytest.raises(BlobError):
            store.path(bad)
        with pytest.raises(BlobError):
            store.verify(bad)
        assert bad not in store
    assert store.get(SHA_A) is None and not store.verify(SHA_A) and SHA_A not in store


def test_iter_hashes_skips_everything_else(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    sha = store.put(b"z", "image/webp")
    (tmp_path / f".{sha}.0123456789abcdef.tmp").write_bytes(b"")
    (tmp_path / ("F" * 64)).write_bytes(b"")
    (tmp_path / ("0" * 64)).mkdir()
    assert list(store.iter_hashes()) == [sha]


def test_memory_store() -> None:
    mem = MemoryBlobStore()
    sha = mem.put(b"img", "image/svg+xml")
    assert mem.get(sha) == b"img" and sha in mem and mem.verify(sha)
    assert mem.sidecars == {sha: {"svg"}}
    assert list(mem.iter_hashes()) == [sha]
    assert mem.get(SHA_A) is None
    with pytest.raises(BlobError):
        mem.get("../x")
    mem.blobs[SHA_A] = b"not a"
    assert not mem.verify(SHA_A)


# ----------------------------------------------------------------- resolution (C63, C64)


def _load_record() -> dict[str, Any]:
    with gzip.open(DATA / "expected" / "resolve.load.json.gz", "rb") as f:
        rec: dict[str, Any] = json.loads(f.read())
    return rec


def _disk_entries() -> tuple[dict[str, Any], list[Any]]:
    lines = (DATA / "load" / "resolve.jsonl").read_text().splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def test_resolution_matches_omp_load(tmp_path: Path) -> None:
    rec = _load_record()
    assert rec["error"] is None and rec["view_errors"] == {}
    header, entries = _disk_entries()
    # Work on a copy of the blob dir so nothing can alter the recorded inputs.
    blob_dir = tmp_path / "blobs"
    shutil.copytree(DATA / "load" / "resolve.blobs", blob_dir)
    store = BlobStore(blob_dir)
    before = copy.deepcopy(entries)
    problems: list[BlobRefProblem] = []
    resolved = [resolve_blob_refs(e, store, problems) for e in entries]
    assert resolved == rec["entries"]
    assert entries == before
    # The header is never resolved (omp skips it), although it holds a ref.
    assert resolve_blob_refs(header, store) is header
    assert rec["header"]["x"] == header["x"]
    # The same through a MemoryBlobStore.
    mem = MemoryBlobStore({p.name: p.read_bytes() for p in blob_dir.iterdir()})
    assert [resolve_blob_refs(e, mem) for e in entries] == rec["entries"]

    png_ref = entries[0]["message"]["content"][1]["data"]
    png = store.get(png_ref[len(BLOB_PREFIX):])
    assert png is not None
    r0 = resolved[0]["message"]["content"]
    assert r0[1]["data"] == base64.b64encode(png).decode()     # resolved
    assert r0[0]["text"] == png_ref                             # text blocks never
    assert r0[6]["data"] == ""                                  # empty blob
    d1 = resolved[1]["message"]["details"]
    assert d1["frames"][0]["data"] == png_ref                   # frames stay refs ...
    assert d1["frames"][1]["data"] == png_ref
    assert d1["frames"][1]["image_url"] == "data:image/png;base64,iVBORw0KGgo="  # ... but are descended
    assert d1["image"]["data"] == png_ref and d1["data"] == png_ref
    assert d1["images"][0]["data"] == base64.b64encode(png).decode()

    kinds = [(p.kind, p.path) for p in problems]
    assert kinds == [
        ("malformed", ("message", "content", 2, "data")),
        ("malformed", ("message", "content", 3, "data")),
        ("malformed", ("message", "content", 4, "data")),
        ("missing", ("message", "content", 5, "data")),
        ("malformed", ("message", "content", 7, "data")),
        ("missing", ("message", "providerPayload", "items", 1, "result")),
        ("malformed", ("message", "providerPayload", "items", 2, "result")),
        ("missing", ("message", "providerPayload", "items", 3, "content", 2, "image_url")),
        ("malformed", ("message", "providerPayload", "items", 3, "content", 3, "image_url")),
    ]
    assert problems[1].ref == "blob:sha256:../../etc/passwd"
    assert str(problems[1]) == ("malformed blob reference at message.content.3.data: "
                                "'blob:sha256:../../etc/passwd' (left as is, as omp does)")


def test_resolution_is_copy_on_write() -> None:
    mem = MemoryBlobStore()
    sha = mem.put(b"\x00\x01")
    keep = {"type": "text", "text": BLOB_PREFIX + sha}
    other = {"deep": [1, 2]}
    entry = {"type": "message", "message": {"role": "user", "content": [keep, {"type": "image", "data": BLOB_PREFIX + sha}],
                                            "other": other}}
    before = copy.deepcopy(entry)
    out = resolve_blob_refs(entry, mem)
    assert entry == before
    assert out["message"]["content"][1]["data"] == "AAE="
    assert out["message"]["content"][0] is keep and out["message"]["other"] is other
    # Nothing to resolve (or only unresolvable refs): the very same object.
    plain = {"type": "message", "message": {"content": [keep]}}
    assert resolve_blob_refs(plain, mem) is plain
    broken = {"type": "message", "message": {"content": [{"type": "image", "data": BLOB_PREFIX + "X"}]}}
    problems: list[BlobRefProblem] = []
    assert resolve_blob_refs(broken, mem, problems) is broken
    assert problems == [BlobRefProblem("malformed", BLOB_PREFIX + "X", ("message", "content", 0, "data"))]
    for v in (None, 3, "blob:sha256:" + sha, [BLOB_PREFIX + sha]):
        assert resolve_blob_refs(v, mem) is v


def test_data_url_blob_with_invalid_utf8() -> None:
    mem = MemoryBlobStore()
    sha = mem.put(b"data:image/png;base64,\xff\xfe\xc3(")
    out = resolve_blob_refs({"image_url": BLOB_PREFIX + sha}, mem)
    assert out == {"image_url": "data:image/png;base64,\ufffd\ufffd\ufffd("}
