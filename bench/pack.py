"""Benchmark: ``pack`` and ``unpack`` of a large session, side by side with GNU tar (issue 7).

    python bench/pack.py [--sizes 100M,1G] [--runs N] [--seed S] [--json]

omp has no pack command, so the comparisons are floors, each a fresh process, run round-robin:

* ``tar-gz`` / ``untar-gz``  GNU ``tar -czf`` / ``tar -xzf`` of the session and its blob folder
  (one pass, no hashing, no manifest: the least any gzip archiver can do);
* ``hash-copy``              SHA-256 of the session while copying it in 1 MiB pieces (one pass of
  the work pack does per file; pack reads every file twice, so ~2x is its natural ratio);
* ``pack-tar`` / ``pack-gz`` / ``pack-zst``  ``omp_session.ops.pack.archive.pack`` to ``.tar`` / ``.tar.gz`` /
  ``.tar.zst``;
* ``unpack-gz``              ``omp_session.ops.pack.unpack.unpack`` of that ``.tar.gz`` into a fresh root
  with a new cwd (verify every hash, rewrite the header, place).

Data comes from ``bench/gen_large.py`` (cached like ``bench/open_context.py``). Prints
medians, the ratios pack-gz/tar-gz, unpack-gz/untar-gz and pack-tar/hash-copy, the archive sizes
and the peak RSS of pack and unpack (the issue: bounded memory on a 1 GB session).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from open_context import DATA_DIR, MB, ensure_data, parse_size, round_robin, run_child, warm

CHUNK = 1 << 20
KINDS = ("tar-gz", "hash-copy", "pack-tar", "pack-gz", "pack-zst", "untar-gz", "unpack-gz")


def _peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(kind: str, session: str, blobs: str, scratch: str, archive: str) -> None:
    out = Path(tempfile.mkdtemp(prefix=kind + "-", dir=scratch))
    t0 = time.perf_counter()
    size = 0
    if kind == "tar-gz":
        target = out / "x.tar.gz"
        subprocess.run(["tar", "-czf", str(target), "-C", str(Path(session).parent), Path(session).name,
                        Path(blobs).name], check=True)
        size = target.stat().st_size
    elif kind == "untar-gz":
        subprocess.run(["tar", "-xzf", archive + ".floor.tar.gz", "-C", str(out)], check=True)
    elif kind == "hash-copy":
        digest = hashlib.sha256()
        with open(session, "rb") as src, open(out / "copy", "wb") as dst:
            while block := src.read(CHUNK):
                digest.update(block)
                dst.write(block)
    elif kind.startswith("pack-"):
        from omp_session.ops.pack.archive import pack

        target = out / {"pack-tar": "x.tar", "pack-gz": "x.tar.gz", "pack-zst": "x.tar.zst"}[kind]
        size = pack([session], target, blobs_dir=blobs).size
    else:
        from omp_session.ops.pack.unpack import unpack

        unpack(archive, root=out / "sessions", cwd=str(out / "new-cwd"))
    seconds = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps({"seconds": seconds, "peak_rss": _peak_rss(), "archive_bytes": size}))


def _median_ratio(runs: dict[str, list[dict[str, float]]], a: str, b: str) -> float:
    return statistics.median(x["seconds"] / y["seconds"] for x, y in zip(runs[a], runs[b], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100M,1G")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="omp-bench-pack-") as tmp:
        scratch = Path(tmp)
        for label in args.sizes.split(","):
            parse_size(label)
            session, blobs, _, _ = ensure_data(label, args.seed, DATA_DIR)
            warm(session, blobs)
            # the archives the unpack contenders read, made once, untimed
            from omp_session.ops.pack.archive import pack

            archive = scratch / f"{label}.tar.gz"
            pack([session], archive, blobs_dir=blobs, force=True)
            subprocess.run(["tar", "-czf", str(archive) + ".floor.tar.gz", "-C", str(session.parent),
                            session.name, blobs.name], check=True)

            def one(kind: str, session: Path = session, blobs: Path = blobs, archive: Path = archive
                    ) -> dict[str, float]:
                cmd = [sys.executable, __file__, "--child", kind, str(session), str(blobs), str(scratch),
                       str(archive)]
                return run_child(kind, cmd, session, blobs, scratch)

            runs = round_robin(label, list(KINDS), args.runs, one)
            row = {
                "size": label,
                "bytes": session.stat().st_size,
                "median_s": {k: statistics.median(r["seconds"] for r in rs) for k, rs in runs.items()},
                "pack_gz_over_tar_gz": _median_ratio(runs, "pack-gz", "tar-gz"),
                "pack_tar_over_hash_copy": _median_ratio(runs, "pack-tar", "hash-copy"),
                "pack_zst_over_pack_gz": _median_ratio(runs, "pack-zst", "pack-gz"),
                "unpack_gz_over_untar_gz": _median_ratio(runs, "unpack-gz", "untar-gz"),
                "archive_mb": {k: runs[k][0]["archive_bytes"] / MB for k in ("tar-gz", "pack-gz", "pack-zst")},
                "peak_rss_mb": {k: max(r["peak_rss"] for r in runs[k]) / MB
                                for k in ("hash-copy", "pack-tar", "pack-gz", "pack-zst", "unpack-gz")},
            }
            rows.append(row)
            if not args.json:
                med = row["median_s"]
                print(f"{label} ({row['bytes'] / MB:.0f} MB): " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items()))
                print(f"  pack-gz/tar-gz {row['pack_gz_over_tar_gz']:.2f}x, pack-tar/hash-copy "
                      f"{row['pack_tar_over_hash_copy']:.2f}x, pack-zst/pack-gz {row['pack_zst_over_pack_gz']:.2f}x, "
                      f"unpack-gz/untar-gz {row['unpack_gz_over_untar_gz']:.2f}x")
                print("  archive MB: " + ", ".join(f"{k} {v:.1f}" for k, v in row["archive_mb"].items()))
                print("  peak RSS MB: " + ", ".join(f"{k} {v:.0f}" for k, v in row["peak_rss_mb"].items()),
                      flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
