#!/usr/bin/env python3
"""Print, for each input, what omp-session derives, in the oracle's JSON shapes.

    python tests/conformance/adapter.py load [--omp VERSION] [--blobs DIR] FILE...
    python tests/conformance/adapter.py run [--omp VERSION] SCRIPT.json...

One JSON line per FILE, in exactly the shape ``tests/reference/omp-reference load`` prints
(its README defines every field), computed by omp_session alone, with the same procedure:
copy the file into a temp session dir, open it for writing, take the views, close, take the
tree. ``--omp`` names the omp release the library imitates (default 18.2.3, the release the
live reference runs), so a matrix run compares like with like. Where omp throws, hangs or loses data and we deliberately do not, the record shows what
we do (docs/compatibility.md lists those scenarios).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "src"))
sys.path.insert(0, str(HERE))

from omp_session.errors import SessionError  # noqa: E402
from omp_session.format.blobs import BlobStore  # noqa: E402
from omp_session.format.reader import scan_file  # noqa: E402
from omp_session.js import codec  # noqa: E402
from omp_session.js.codec import UNDEFINED  # noqa: E402
from omp_session.model.omp_version import resolve as resolve_omp  # noqa: E402
from omp_session.model.tree import js_key  # noqa: E402
from omp_session.write.manager import SessionManager  # noqa: E402

ORACLE_CWD = "/oracle/cwd"


def make_temp_dir(parent: str | Path, prefix: str) -> Path:
    """``fs.mkdtempSync(parent/prefix)``: six random characters, as Node makes them. Paths of the
    same length as the oracle's keep byte sizes of files that hold a path comparable."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    while True:
        path = Path(parent) / (prefix + "".join(random.choice(alphabet) for _ in range(6)))
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def err_text(e: BaseException) -> str:
    name = "Error" if isinstance(e, SessionError) else type(e).__name__
    return f"{name}: {e}"


def scrub_bytes(data: bytes, subs: list[tuple[str, str]]) -> bytes:
    for old, new in subs:
        data = data.replace(old.encode(), new.encode())
    return data


def scrub(value: Any, subs: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for old, new in subs:
            if old in value:
                value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [scrub(v, subs) for v in value]
    if isinstance(value, dict):
        return {scrub(k, subs): scrub(v, subs) for k, v in value.items()}
    return value


def file_state(path: Path, reference: bytes | None, subs: list[tuple[str, str]]) -> dict[str, Any]:
    if not path.exists():
        return {"exists": False, "changed": reference is not None, "size": None, "sha256": None, "b64": None}
    raw = path.read_bytes()
    changed = reference is None or raw != reference
    data = scrub_bytes(raw, subs) if changed else raw
    return {"exists": True, "changed": changed, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "b64": base64.b64encode(data).decode() if changed else None}


def list_dir(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out.append(f"{d}/" if rel == "." else f"{rel}/{d}/")
        for f in filenames:
            out.append(f if rel == "." else f"{rel}/{f}")
    return sorted(out)


def json_value(value: Any) -> Any:
    """The value as JSON.stringify renders it (drops undefined, doubles for numbers)."""
    text = codec.stringify(value)
    return None if text is None else codec.loads(text)


def id_or_null(entry: Any) -> Any:
    if isinstance(entry, dict):
        v = entry.get("id", UNDEFINED)
        return None if v is UNDEFINED else v
    return None


def js_string(value: Any) -> str:
    """``String(value)``: how a JS object turns a key into a property name."""
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, str):
        return value
    return codec.stringify(value) or "undefined" if not isinstance(value, dict | list) else str(value)


def labels_view(sm: SessionManager) -> dict[str, Any]:
    # omp's own definition (getLabel of every label entry's targetId), not Session.labels(): that
    # plain-JSON view files a missing targetId under None, beside targetId null
    out: dict[str, Any] = {}
    s = sm.session
    for k in range(len(s)):
        entry = s.entry_at(k)
        if isinstance(entry, dict) and entry.get("type") == "label":
            target = entry.get("targetId", UNDEFINED)
            label = s.get_label(target)
            if label is not None:
                out[js_string(target)] = label
    return out


def children_view(sm: SessionManager) -> list[dict[str, Any]]:
    s = sm.session
    seen: set[Any] = set()
    out: list[dict[str, Any]] = []
    for k in range(len(s)):
        entry = s.entry_at(k)
        p = entry.get("parentId", UNDEFINED) if isinstance(entry, dict) else UNDEFINED
        key = js_key(p)
        if key in seen:
            continue
        seen.add(key)
        out.append({"parent": {"$undefined": True} if p is UNDEFINED else p,
                    "children": [id_or_null(s.entry_at(c)) for c in s.children_indices(p)]})
    return out


def tree_view(sm: SessionManager) -> list[dict[str, Any]]:
    s = sm.session
    tree = sm.get_tree()
    first_index: dict[Any, int] = {}
    for k in range(len(s)):
        e = s.entry_at(k)
        # omp's harness maps an entry object to its first position; equal primitives share one
        key: Any = ("obj", id(e)) if isinstance(e, dict | list) else ("prim", js_key(e))
        first_index.setdefault(key, k)
    labels = s._label_map()
    rows: list[dict[str, Any]] = []
    for node, depth in tree.walk():
        e = s.entry_at(node)
        key = ("obj", id(e)) if isinstance(e, dict | list) else ("prim", js_key(e))
        row: dict[str, Any] = {"id": id_or_null(e), "index": first_index.get(key), "depth": depth}
        label = labels.get(js_key(s.ids[node]), UNDEFINED)
        if label is not UNDEFINED:
            row["label"] = label
        rows.append(row)
    return rows


def new_record(file: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"oracle": 1, "kind": "load", "file": file, "error": None, "error_stage": None,
                           "view_errors": {}, "input": None, "loader": None, "after_open": None}
    for name in ("header", "session_name", "entries", "leaf_id", "branch", "context", "transcript",
                 "labels", "children", "usage", "tree"):
        rec[name] = None
    rec["after_flush"] = None
    rec["session_dir_files"] = None
    return rec


def loader_view(path: Path) -> dict[str, Any]:
    j = scan_file(path)
    try:
        records = len(j)
        first = j.value(0) if records else None
        valid = isinstance(first, dict) and first.get("type") == "session" and isinstance(first.get("id"), str)
        invalid = (records > 0 and not valid) or (records == 0 and bool(j.malformed))
        return {"entry_count": 0 if invalid else records, "malformed_records": len(j.malformed),
                "invalid_header": invalid, "title_slot": j.slot.to_json() if j.slot else None,
                "source_size": j.source_size}
    finally:
        j.close()


def do_load(file: str, tmp_root: Path, blobs: Path | None, omp: str = "18.2.3") -> dict[str, Any]:
    rec = new_record(file)
    try:
        data = Path(file).resolve().read_bytes()
    except OSError as e:
        rec["error"] = err_text(e)
        rec["error_stage"] = "read"
        return rec
    rec["input"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    work = make_temp_dir(tmp_root, "load-")
    session_dir = work / "sessions"
    session_dir.mkdir()
    copy = session_dir / "session.jsonl"
    probe = work / "probe.jsonl"
    copy.write_bytes(data)
    probe.write_bytes(data)
    subs = [(str(copy), "<FILE>"), (str(probe), "<FILE>"), (str(session_dir), "<SESSIONS>"),
            (str(work), "<TMP>"), (str(tmp_root), "<ORACLE_TMP>")]
    blob_dir = work / "agent" / "blobs"
    if blobs is not None and blobs.is_dir():
        shutil.copytree(blobs, blob_dir)
    store = BlobStore(blob_dir)
    errors: dict[str, str] = rec["view_errors"]
    try:
        rec["loader"] = loader_view(probe)
    except Exception as e:  # the loader view is one view among others
        errors["loader"] = err_text(e)
    try:
        sm = SessionManager.open(copy, initial_cwd=ORACLE_CWD, blob_store=store, omp=omp)
    except (SessionError, OSError) as e:
        rec["error"] = err_text(e)
        rec["error_stage"] = "open"
        rec["after_open"] = file_state(copy, data, subs)
        rec["session_dir_files"] = list_dir(session_dir)
        return scrub(rec, subs)
    rec["after_open"] = file_state(copy, data, subs)

    def view(name: str, fn: Any) -> None:
        try:
            rec[name] = json_value(fn())
        except Exception as e:  # mirrors the oracle: one failing view does not stop the others
            rec[name] = None
            errors[name] = err_text(e)

    view("header", sm.get_header)
    view("session_name", sm.get_session_name)
    view("entries", sm.get_entries)
    view("leaf_id", sm.get_leaf_id)
    view("branch", lambda: [id_or_null(e) for e in sm.get_branch()])
    view("context", sm.build_session_context)
    view("transcript", lambda: sm.build_session_context(transcript=True))
    view("labels", lambda: labels_view(sm))
    view("children", lambda: children_view(sm))
    view("usage", sm.get_usage_statistics)
    try:
        sm.flush()
    except Exception as e:
        errors["flush"] = err_text(e)
    try:
        sm.close()
    except Exception as e:
        errors["close"] = err_text(e)
    rec["after_flush"] = file_state(copy, data, subs)
    rec["session_dir_files"] = list_dir(session_dir)
    view("tree", lambda: tree_view(sm))
    return scrub(rec, subs)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="kind", required=True)
    load = sub.add_parser("load", help="one JSON line per session file")
    load.add_argument("--omp", default="18.2.3", help="the omp release to imitate (default 18.2.3)")
    load.add_argument("--blobs", type=Path, help="blob files to make available (like the oracle's --blobs)")
    load.add_argument("--list", type=Path, help="read more input paths from this file, one per line")
    load.add_argument("files", nargs="*")
    run = sub.add_parser("run", help="one JSON line per run script")
    run.add_argument("--omp", default="18.2.3", help="the omp release to imitate (default 18.2.3)")
    run.add_argument("--list", type=Path, help="read more script paths from this file, one per line")
    run.add_argument("--keep-files", type=Path, help="copy every session file a script wrote into this directory")
    run.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    try:
        omp = resolve_omp(args.omp)
    except SessionError as e:
        parser.error(str(e))
    files = list(args.files)
    if args.list:
        files += [line for line in args.list.read_text().splitlines() if line.strip()]
    base = os.path.realpath(os.environ.get("OMP_ORACLE_TMP") or tempfile.gettempdir())
    tmp_root = make_temp_dir(base, "omp-adapter")  # as long as the oracle's "omp-oracle-"
    try:
        # the oracle worker's environment: a home of its own, omp's agent dir inside it
        home = tmp_root / "home"
        os.environ["HOME"] = str(home)
        os.environ["PI_CODING_AGENT_DIR"] = str(home / ".omp" / "agent")
        for name in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "OMP_PROFILE",
                     "PI_PROFILE", "PI_CONFIG_DIR", "PI_CODING_AGENT_SESSION_DIR"):
            os.environ.pop(name, None)
        out = sys.stdout
        for file in files:
            if args.kind == "run":
                from script_runner import do_run

                rec = do_run(file, tmp_root, args.keep_files, omp)
            else:
                rec = do_load(file, tmp_root, args.blobs, omp)
            out.write((codec.stringify(rec) or "null") + "\n")
            out.flush()
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
