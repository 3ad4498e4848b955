"""Make the README's screenshots of ``omp-session serve`` (docs/img/serve-*.png).

    .venv/bin/python docs/img/make_screenshots.py [--out DIR]

A real server runs on a temporary agent dir filled with the serve tests' generated sessions
(tests/serve/serve_corpus.py), never on the user's own: the pictures hold no real transcript.
Headless chromium (``bash tests/browser/setup.sh``) takes one picture per page through
screenshots.mjs; the PNGs are then re-compressed losslessly at zlib's highest level.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "serve"), str(REPO / "src")]

from serve_corpus import build, sid  # noqa: E402

from omp_session.serve.app import start  # noqa: E402

SESSIONS = 60
WIDTH, HEIGHT = 1100, 700
NAMES = ("serve-list.png", "serve-session.png", "serve-search.png", "serve-costs.png")


def recompress(path: Path) -> None:
    """Re-encode a PNG's image data at zlib level 9 (lossless; chromium writes a fast level)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    chunks: list[tuple[bytes, bytes]] = []
    idat = bytearray()
    pos = 8
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + size]
        pos += 12 + size
        if kind == b"IDAT":
            if not idat:
                chunks.append((b"IDAT", b""))  # where the image data goes
            idat += body
        else:
            chunks.append((kind, body))
    packed = zlib.compress(zlib.decompress(bytes(idat)), 9)
    out = bytearray(data[:8])
    for kind, body in chunks:
        body = packed if kind == b"IDAT" else body
        out += struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    if len(out) < len(data):
        path.write_bytes(bytes(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where the PNGs go (default: docs/img)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="omp-serve-shots-") as tmp:
        agent = Path(tmp) / "agent"
        # nothing of the user's: the agent dir and every cache are the temporary folder's
        os.environ["PI_CODING_AGENT_DIR"] = str(agent)
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        root = agent / "sessions"
        build(root, SESSIONS)
        with start(root) as running:
            spec = {"url": running.url, "out": str(args.out), "width": WIDTH, "height": HEIGHT,
                    "session": sid(1), "entry": "b1", "search": "pagination"}
            (Path(tmp) / "spec.json").write_text(json.dumps(spec), "utf-8")
            done = subprocess.run(["node", str(HERE / "screenshots.mjs"), str(Path(tmp) / "spec.json")],
                                  capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        print(f"make_screenshots: the browser failed:\n{done.stderr.strip()}", file=sys.stderr)
        return 1
    for name in NAMES:
        path = args.out / name
        recompress(path)
        print(f"{path}: {path.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
