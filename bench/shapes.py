"""Benchmark: odd shapes cost what a normal file of the same size costs (issue 16 item 4).

    python bench/shapes.py [--runs 5] [--sizes 50000,200000,800000,3000000] [--shapes a,b] [--tasks a,b] [--json]

For every shape and size it writes the odd file and a normal session of the same byte size (a
linear chain of ordinary user/assistant turns), then times, in this process, side by side and
round-robin, the medians of ``--runs`` runs of:

* ``view``    ``open`` + ``build_session_context()`` + ``get_tree()`` walked + usage,
* ``repair``  ``plan_repair`` (reads, plans and checks the output; writes nothing),
* ``validate``,
* ``export``  ``export(p, "json")`` and ``export(p, "html")``,
* ``size``    ``externalize`` as a dry run (the persistence walk over every record with an image).

Shapes (each one line holding all but a few hundred bytes of the file, but the chains):

* ``deep``          a user message whose ``content`` is an array nested size/2 levels,
* ``deep-object``   an entry holding ``{"a":{"a":…}}`` nested size/6 levels,
* ``torn-deep``     ``{"a":{"a":…}}`` with its innermost value missing: a malformed line
                    that repair used to re-parse once per ``{"`` (quadratic),
* ``long-string``   one text block of size bytes,
* ``many-keys``     one object with size/12 keys,
* ``bracket-line``  a line of size ``[`` that never closes, then ordinary records (the fuzz
                    campaign's worst case, seed 1 case 292: the open array swallows a line),
* ``deep-provider`` an assistant whose ``provider`` is ``[[[…"x"…]]]`` size/2 levels deep (a
                    field the context view turns into a string; fuzz seed 2 case 1359),
* ``deep-call-id``  a toolResult whose ``toolCallId`` is ``{"type":{"type":…}}`` size/8 levels
                    deep (fuzz seed 1 case 166),
* ``deep-image``    an image of 2,000 base64 characters inside size/2 levels of ``[``: the
                    persistence walk reaches it (``size``),
* ``chain``         size/128 tiny label entries in one chain (many records for their bytes),
* ``dup-chain``     the same chain below a duplicated id that is its own ancestor (d -> b -> d):
                    omp's getTree() cycle, the tree walk guards every path (fuzz seed 1 case 1880).

Printed: the odd/normal ratio per shape, size and task, and the growth of the odd time from the
smallest to the largest size divided by the size growth (1.0 = linear). Linear means the ratio
stays flat as the size grows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}'
USER = ('{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":%s,"timestamp":1}}')
ASSISTANT = ('{"type":"message","id":"%s","parentId":"%s","timestamp":"2026-01-01T00:00:02.000Z",'
             '"message":{"role":"assistant","content":[{"type":"text","text":%s}],"api":"anthropic-messages",'
             '"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,'
             '"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.001}},'
             '"stopReason":"stop","timestamp":2}}')


def _odd_line(shape: str, size: int) -> str:
    if shape == "deep":
        d = size // 2
        return USER % ("x", '"u"', "[" * d + "]" * d)
    if shape == "deep-object":
        d = size // 6
        return USER % ("x", '"u"', '"hi","x":' + '{"a":' * d + "1" + "}" * d)
    if shape == "torn-deep":
        d = size // 6
        return '{"a":' * d + "}" * d
    if shape == "long-string":
        return USER % ("x", '"u"', json.dumps("word " * (size // 5)))
    if shape == "many-keys":
        keys = ",".join(f'"k{i}":{i}' for i in range(size // 12))
        return USER % ("x", '"u"', '"hi","x":{' + keys + "}")
    if shape == "bracket-line":
        return "[" * size + "\n" + USER % ("x", '"u"', '"after"')
    if shape == "deep-provider":
        d = size // 2
        return ASSISTANT.replace('"provider":"p"', '"provider":' + "[" * d + '"x"' + "]" * d) % ("x", "u", '"hi"')
    if shape == "deep-call-id":
        d = size // 8
        return ('{"type":"message","id":"x","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z",'
                '"message":{"role":"toolResult","toolCallId":' + '{"type":' * d + '"k"' + "}" * d
                + ',"toolName":"read","content":[{"type":"text","text":"r"}],"isError":false,"timestamp":2}}')
    if shape == "deep-image":
        d = size // 2
        image = '{"type":"image","data":"' + "QUJD" * 500 + '","mimeType":"image/png"}'
        return USER % ("x", '"u"', "[" * d + image + "]" * d)
    if shape in ("chain", "dup-chain"):
        label = ('{"type":"label","id":"c%07d","parentId":"%s","timestamp":"2026-01-01T00:00:03.000Z",'
                 '"targetId":null,"label":null}')
        lines = []
        if shape == "dup-chain":  # d -> b -> d: the id d is its own ancestor through its copy
            lines = [f'{{"type":"label","id":"{i}","parentId":"{p}","timestamp":"2026-01-01T00:00:02.000Z",'
                     '"targetId":null,"label":null}' for i, p in (("d", "u"), ("b", "d"), ("d", "b"))]
        parent = "d" if shape == "dup-chain" else "u"
        for k in range(size // 128):
            lines.append(label % (k, parent))
            parent = f"c{k:07d}"
        return "\n".join(lines)
    raise ValueError(shape)


SHAPES = ("deep", "deep-object", "torn-deep", "long-string", "many-keys", "bracket-line", "deep-provider",
          "deep-call-id", "deep-image", "chain", "dup-chain")


def write_odd(path: Path, shape: str, size: int) -> int:
    text = HEADER + "\n" + USER % ("u", "null", '"hi"') + "\n" + _odd_line(shape, size) + "\n"
    path.write_text(text)
    return len(text.encode())


def write_normal(path: Path, size: int) -> None:
    """A linear chain of ordinary turns, as close to ``size`` bytes as whole lines allow."""
    lines = [HEADER]
    total = len(HEADER) + 1
    parent = "null"
    k = 0
    while total < size:
        u, a = f"u{k}", f"a{k}"
        for line in (USER % (u, parent, json.dumps(f"question {k} about the code")),
                     ASSISTANT % (a, u, json.dumps(f"answer {k}: " + "some words " * 20))):
            lines.append(line)
            total += len(line) + 1
        parent = f'"{a}"'
        k += 1
    path.write_text("\n".join(lines) + "\n")


def _tasks() -> dict[str, Callable[[Path], Any]]:
    import omp_session
    from omp_session.ops.export.formats import export
    from omp_session.ops.repair.plan import plan_repair
    from omp_session.ops.size.externalize import externalize

    def view(p: Path) -> None:
        with omp_session.open(p) as s:
            s.build_session_context()
            for node in s.get_tree():
                node.children  # noqa: B018 - walk every node
            s.get_usage_statistics()

    def exports(p: Path) -> None:
        export(p, "json")
        export(p, "html")

    return {"view": view, "repair": lambda p: plan_repair(p), "validate": lambda p: omp_session.validate(p),
            "export": exports, "size": lambda p: externalize(p, None)}


def _time(fn: Callable[[Path], Any], path: Path) -> float:
    t = time.perf_counter()
    fn(path)
    return time.perf_counter() - t


def run(sizes: list[int], runs: int, shapes: tuple[str, ...] = SHAPES,
        only: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    tasks = {name: fn for name, fn in _tasks().items() if only is None or name in only}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="omp-shapes-") as tmp:
        for size in sizes:
            for shape in shapes:
                odd, normal = Path(tmp, f"{shape}-{size}.jsonl"), Path(tmp, f"normal-{size}.jsonl")
                real = write_odd(odd, shape, size)
                write_normal(normal, real)
                for name, fn in tasks.items():
                    times: dict[str, list[float]] = {"odd": [], "normal": []}
                    for _ in range(runs):  # round-robin: noise falls on both sides
                        times["odd"].append(_time(fn, odd))
                        times["normal"].append(_time(fn, normal))
                    o, n = statistics.median(times["odd"]), statistics.median(times["normal"])
                    rows.append({"shape": shape, "size": real, "task": name, "odd_s": o, "normal_s": n,
                                 "ratio": o / n if n else float("inf")})
    return rows


def growth(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per shape and task: (odd time at the largest size / at the smallest) / (size growth)."""
    out = []
    for shape in dict.fromkeys(r["shape"] for r in rows):
        for task in dict.fromkeys(r["task"] for r in rows):
            mine = sorted((r for r in rows if r["shape"] == shape and r["task"] == task), key=lambda r: r["size"])
            if len(mine) >= 2 and mine[0]["odd_s"] > 0:
                g = (mine[-1]["odd_s"] / mine[0]["odd_s"]) / (mine[-1]["size"] / mine[0]["size"])
                out.append({"shape": shape, "task": task, "growth": g})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="50000,200000,800000,3000000")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated, default all")
    ap.add_argument("--tasks", default=None, help="comma-separated (view,repair,validate,export,size), default all")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    shapes = tuple(args.shapes.split(","))
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        ap.error(f"unknown shape(s): {', '.join(sorted(unknown))}")
    rows = run([int(s) for s in args.sizes.split(",")], args.runs, shapes,
               None if args.tasks is None else tuple(args.tasks.split(",")))
    if args.json:
        print(json.dumps({"rows": rows, "growth": growth(rows)}))
        return 0
    print(f"{'shape':<13} {'size':>9} {'task':<9} {'odd s':>8} {'normal s':>9} {'odd/normal':>10}")
    for r in rows:
        print(f"{r['shape']:<13} {r['size']:>9,} {r['task']:<9} {r['odd_s']:>8.3f} {r['normal_s']:>9.3f} "
              f"{r['ratio']:>9.1f}x")
    print("\ngrowth of the odd time over the size growth (1.0 = linear):")
    for g in growth(rows):
        print(f"  {g['shape']:<13} {g['task']:<9} {g['growth']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
