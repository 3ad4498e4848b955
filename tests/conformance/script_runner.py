"""``adapter.py run``: execute an oracle ``run`` script with our SessionManager.

The script format and the record it prints are the oracle's (``tests/reference/omp-reference``,
"run scripts"): the same ops with the same positional arguments (an absent key is JavaScript
``undefined``, so omp's defaults apply; ``null`` stays null), ``$name`` references, the same
final views, files and directory listing.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapter import (
    children_view,
    err_text,
    id_or_null,
    json_value,
    labels_view,
    list_dir,
    make_temp_dir,
    scrub,
    scrub_bytes,
    tree_view,
)

from omp_session.format.blobs import BlobStore
from omp_session.js import codec
from omp_session.js.codec import UNDEFINED
from omp_session.store.base import FileStorage
from omp_session.write import ids
from omp_session.write.manager import SessionManager

VIEW_NAMES = ("header", "session_name", "entries", "leaf_id", "branch", "context", "transcript", "labels",
              "children", "usage", "tree")
# Payload keys: never searched for $references (the oracle's list).
PAYLOAD_KEYS = frozenset({"message", "content", "data", "details", "init", "serviceTier"})
DEFAULT_CWD = "/home/dev/project"


class _Run:
    """What one ``do_run`` sets for every op: the omp release to imitate, and the directory a
    relative path in a script resolves against (the oracle's worker runs in its tmp root)."""

    omp = "18.2.3"
    base = "."
    clock: Any = iter(())


class ScriptError(Exception):
    pass


def resolve_refs(value: Any, refs: dict[str, Any], key: str | None = None) -> Any:
    if key is not None and key in PAYLOAD_KEYS:
        return value
    if isinstance(value, str):
        if value.startswith("$$"):
            return value[1:]
        if value.startswith("$"):
            if value[1:] not in refs:
                raise ScriptError(f"unknown reference {value}")
            return refs[value[1:]]
        return value
    if isinstance(value, list):
        return [resolve_refs(v, refs) for v in value]
    if isinstance(value, dict):
        return {k: resolve_refs(v, refs, k) for k, v in value.items()}
    return value


def collect_views(sm: SessionManager, rec: dict[str, Any], only: tuple[str, ...] = VIEW_NAMES) -> None:
    errors: dict[str, str] = rec["view_errors"]
    views: dict[str, Callable[[], Any]] = {
        "header": sm.get_header,
        "session_name": sm.get_session_name,
        "entries": sm.get_entries,
        "leaf_id": sm.get_leaf_id,
        "branch": lambda: [id_or_null(e) for e in sm.get_branch()],
        "context": sm.build_session_context,
        "transcript": lambda: sm.build_session_context(transcript=True),
        "labels": lambda: labels_view(sm),
        "children": lambda: children_view(sm),
        "usage": sm.get_usage_statistics,
        "tree": lambda: tree_view(sm),
    }
    for name in only:
        try:
            rec[name] = json_value(views[name]())
        except Exception as e:  # one failing view does not stop the others, as in the oracle
            rec[name] = None
            errors[name] = err_text(e)


def _context_options(options: Any) -> dict[str, bool]:
    if not isinstance(options, dict):
        return {}
    names = {"transcript": "transcript", "collapseCompactedHistory": "collapse_compacted_history",
             "keepDanglingToolCalls": "keep_dangling_tool_calls"}
    return {names[k]: bool(v) for k, v in options.items() if k in names}


def _args(op: dict[str, Any], *names: str) -> list[Any]:
    """Positional arguments as the oracle passes them: trailing absent ones left out."""
    values = [op.get(n, UNDEFINED) for n in names]
    while values and values[-1] is UNDEFINED:
        values.pop()
    return values


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def _call(sm: SessionManager, op: dict[str, Any]) -> Any:
    """One forwarding op; returns the method's result."""
    name = op["op"]
    a = op.get
    if name == "appendMessage":
        return sm.append_message(*_args(op, "message"))
    if name == "appendMessageToBranch":
        return sm.append_message_to_branch(a("message", UNDEFINED), a("parentId", UNDEFINED))
    if name == "appendModelChange":
        model, role, fallback = (op.get(k, UNDEFINED) for k in ("model", "role", "resolvedModelIsFallback"))
        return sm.append_model_change(model, role, False if fallback is UNDEFINED else fallback)
    if name == "appendThinkingLevelChange":
        level, configured = (op.get(k, UNDEFINED) for k in ("thinkingLevel", "configured"))
        return sm.append_thinking_level_change(None if level is UNDEFINED else level,
                                               None if configured is UNDEFINED else configured)
    if name == "appendServiceTierChange":
        return sm.append_service_tier_change(a("serviceTier", UNDEFINED))
    if name == "appendModeChange":
        return sm.append_mode_change(a("mode", UNDEFINED), a("data", UNDEFINED))
    if name == "appendSessionInit":
        return sm.append_session_init(a("init", UNDEFINED))
    if name == "appendCompaction":
        options = a("options", UNDEFINED)
        opts = options if isinstance(options, dict) else {}
        return sm.append_compaction(
            a("summary", UNDEFINED), a("shortSummary", UNDEFINED), a("firstKeptEntryId", UNDEFINED),
            a("tokensBefore", UNDEFINED),
            details=opts.get("details", UNDEFINED), from_extension=opts.get("fromExtension", UNDEFINED),
            preserve_data=opts.get("preserveData", UNDEFINED), method=opts.get("method", UNDEFINED),
            provider_replay_through_entry_id=opts.get("providerReplayThroughEntryId", UNDEFINED),
            tokens_after=opts.get("tokensAfter", UNDEFINED))
    if name == "appendResetBoundary":
        return sm.append_reset_boundary()
    if name == "appendCustomEntry":
        return sm.append_custom_entry(a("customType", UNDEFINED), a("data", UNDEFINED))
    if name == "appendCustomMessageEntry":
        attribution = a("attribution", UNDEFINED)
        return sm.append_custom_message_entry(
            a("customType", UNDEFINED), a("content", UNDEFINED), a("display", UNDEFINED), a("details", UNDEFINED),
            "agent" if attribution is UNDEFINED else attribution, a("timestamp", UNDEFINED))
    if name == "appendLabelChange":
        return sm.append_label_change(a("targetId", UNDEFINED), a("label", UNDEFINED))
    if name == "appendTtsrInjection":
        return sm.append_ttsr_injection(a("ruleNames", UNDEFINED))
    if name == "appendCredentialPin":
        return sm.append_credential_pin(a("provider", UNDEFINED), a("hash", UNDEFINED))
    if name == "branch":
        return sm.branch(a("entryId", UNDEFINED))
    if name == "branchWithSummary":
        return sm.branch_with_summary(a("entryId", UNDEFINED), a("summary", UNDEFINED), a("details", UNDEFINED),
                                      a("fromExtension", UNDEFINED))
    if name == "resetLeaf":
        return sm.reset_leaf()
    if name == "setSessionName":
        source = a("source", UNDEFINED)
        trigger = a("trigger", UNDEFINED)
        return sm.set_session_name(a("name", UNDEFINED), "auto" if source is UNDEFINED else source,
                                   None if trigger is UNDEFINED else trigger)
    if name == "createBranchedSession":
        return sm.create_branched_session(a("leafId", UNDEFINED))
    if name == "fork":
        forked = sm.fork()
        return None if forked is None else {"oldSessionFile": forked[0], "newSessionFile": forked[1]}
    if name == "newSession":
        options = a("options", UNDEFINED)
        opts = options if isinstance(options, dict) else {}
        session_dir = opts.get("sessionDir")
        return sm.new_session(parent_session=opts.get("parentSession"),
                              provider_prompt_cache_key=opts.get("providerPromptCacheKey"),
                              additional_directories=opts.get("additionalDirectories") or (),
                              session_dir=os.path.join(_Run.base, session_dir) if isinstance(session_dir, str)
                              else None)
    if name == "flush":
        return sm.flush(rewrite=False)
    if name == "flushSync":
        return sm.flush()
    if name == "close":
        return sm.close()
    if name == "ensureOnDisk":
        return sm.ensure_on_disk()
    if name == "rewriteEntries":
        return sm.rewrite_entries()
    if name == "getLeafId":
        return sm.get_leaf_id()
    if name == "getEntry":
        return sm.get_entry(a("id", UNDEFINED))
    if name == "getChildren":
        return sm.get_children(a("parentId", UNDEFINED))
    if name == "getLabel":
        return sm.get_label(a("id", UNDEFINED))
    if name == "getBranch":
        return sm.get_branch(a("fromId", UNDEFINED))
    if name == "getHeader":
        return sm.get_header()
    if name == "getEntries":
        return sm.get_entries()
    if name == "getSessionName":
        return sm.get_session_name()
    if name == "getSessionFile":
        return sm.get_session_file()
    if name == "getTree":
        return tree_view(sm)
    if name == "buildSessionContext":
        return sm.build_session_context(**_context_options(a("options", UNDEFINED)))
    if name == "call" and a("method") == "appendModelUsage":
        usage, owner = ([*list(a("args") or []), UNDEFINED, UNDEFINED])[:2]
        owner = owner if isinstance(owner, dict) else {}
        return sm.append_model_usage(usage, session_id=owner.get("sessionId"), parent_id=owner.get("parentId"))
    if name == "call":
        method = getattr(sm, snake(str(a("method", ""))), None)
        if not callable(method):
            raise ScriptError(f"call: no SessionManager method {a('method')}")
        return method(*(a("args") or []))
    raise ScriptError(f"unknown op {name}")


def _static(method: str, args: list[Any], blobs: BlobStore) -> Any:
    """``{"op": "static"}``: a static SessionManager method; a returned manager becomes current."""
    if method == "getDefaultSessionDir":
        return SessionManager.get_default_session_dir(*args)
    if method in ("list", "listAll"):
        infos = (SessionManager.list(*args, omp=_Run.omp) if method == "list"
                 else SessionManager.list_all(omp=_Run.omp))
        return [info.to_dict() for info in infos]
    if method == "create":
        return SessionManager.create(*args, blob_store=blobs, omp=_Run.omp)
    if method == "inMemory":
        return SessionManager.in_memory(*args, blob_store=blobs, omp=_Run.omp)
    if method == "continueRecent":
        return SessionManager.continue_recent(*args, blob_store=blobs, omp=_Run.omp)
    if method == "forkFrom":
        source, cwd, session_dir = ([*args, None, None, None])[:3]
        return SessionManager.fork_from(source, cwd, session_dir, blob_store=blobs, omp=_Run.omp)
    if method == "open":
        path, session_dir = ([*args, None, None])[:2]
        return SessionManager.open(path, session_dir, blob_store=blobs, omp=_Run.omp)
    raise ScriptError(f"static: no SessionManager static {method}")


def new_run_record(file: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"oracle": 1, "kind": "run", "file": file, "error": None, "error_stage": None,
                           "view_errors": {}, "steps": [], "refs": {}}
    for name in VIEW_NAMES:
        rec[name] = None
    rec["session_file"] = None
    rec["files"] = []
    rec["session_dir_files"] = None
    return rec


CLOCK_BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00.000Z, where the oracle's clock starts


def install_clock() -> None:
    """The oracle's deterministic clock for omp, for us: it starts at 2026-01-01T00:00:00.000Z
    and advances 1 ms per reading, reset for every script. Our readings are not omp's (the
    timestamps themselves are masked), but new entries then sort against the entries of a
    loaded file, and against each other, as omp's do."""
    clock = iter(range(CLOCK_BASE_MS, CLOCK_BASE_MS + 10**9))
    ids.now_ms = lambda: next(clock)
    ids._last_session_ms = 0
    _Run.clock = clock
    # omp reads its clock a few more times around each write than we do (18.2.3 and 18.3.4
    # alike: 3 readings after an appended line, 4 after writing a whole file). Timestamps are
    # masked in run records, but a derived time (18.3's historyRewriteAt) shows them: so our
    # clock skips the same readings.
    if not getattr(FileStorage.append, "ticks", False):
        FileStorage.append = _tick_after(FileStorage.append, 3)  # type: ignore[method-assign]
        FileStorage.replace = _tick_after(FileStorage.replace, 4)  # type: ignore[method-assign]


def _tick_after(method: Callable[..., Any], readings: int) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        for _ in range(readings):
            next(_Run.clock, None)
        return result
    wrapped.ticks = True  # type: ignore[attr-defined]
    return wrapped


def do_run(file: str, tmp_root: Path, keep_files: Path | None = None, omp: str = "18.2.3") -> dict[str, Any]:
    """Run one script imitating omp ``omp``; with ``keep_files``, copy every session file it
    wrote there as ``<script name>.<k>.jsonl`` (for reading them back with omp)."""
    install_clock()
    _Run.omp = omp
    _Run.base = str(tmp_root)
    rec = new_run_record(file)
    script_path = Path(file).resolve()
    try:
        script = codec.loads(script_path.read_bytes())
        if not isinstance(script, dict) or not isinstance(script.get("ops"), list):
            raise ScriptError("script must be an object with an `ops` array")
    except (OSError, ValueError, ScriptError) as e:
        rec["error"] = err_text(e)
        rec["error_stage"] = "script"
        return rec
    work = make_temp_dir(tmp_root, "run-")
    session_dir = work / "sessions"
    session_dir.mkdir()
    subs = [(str(session_dir), "<SESSIONS>"), (str(work), "<TMP>"), (str(tmp_root), "<ORACLE_TMP>")]
    cwd = script["cwd"].replace("{TMP}", str(work)) if isinstance(script.get("cwd"), str) else DEFAULT_CWD
    if script.get("create_cwd"):
        os.makedirs(cwd, exist_ok=True)
    blobs = BlobStore(work / "agent" / "blobs")
    seen: list[str] = []

    def note(f: Any) -> None:
        if isinstance(f, str) and f not in seen:
            seen.append(f)

    try:
        if isinstance(script.get("from_file"), str):
            src = (script_path.parent / script["from_file"]).resolve()
            dest = session_dir / (src.name if src.name.endswith(".jsonl") else "session.jsonl")
            shutil.copyfile(src, dest)
            sm = SessionManager.open(dest, session_dir, initial_cwd=cwd, blob_store=blobs, omp=omp)
        elif script.get("in_memory"):
            sm = SessionManager.in_memory(cwd, blob_store=blobs, omp=omp)
        else:
            sm = SessionManager.create(cwd, session_dir, blob_store=blobs, omp=omp)
    except Exception as e:
        rec["error"] = err_text(e)
        rec["error_stage"] = "create"
        rec["session_dir_files"] = list_dir(session_dir)
        return scrub(rec, subs)
    note(sm.get_session_file())
    refs: dict[str, Any] = rec["refs"]
    for k, op in enumerate(script["ops"]):
        step: dict[str, Any] = {"index": k, "op": op.get("op") if isinstance(op, dict) else None,
                                "result": None, "error": None}
        try:
            if not isinstance(op, dict) or not isinstance(op.get("op"), str):
                raise ScriptError("op must be an object with a string `op`")
            args = resolve_refs(op, refs)
            if op["op"] == "reopen":
                current = sm.get_session_file()
                if not current:
                    raise ScriptError("reopen: session has no file")
                sm.close()
                sm = SessionManager.open(current, session_dir, initial_cwd=cwd, blob_store=blobs, omp=omp)
                result: Any = current
            elif op["op"] == "static":
                result = _static(str(args.get("method")), list(args.get("args") or []), blobs)
                if isinstance(result, SessionManager):
                    sm = result
                    result = sm.get_session_file()
            elif op["op"] == "snapshot":
                snap: dict[str, Any] = {"view_errors": {}}
                collect_views(sm, snap)
                result = snap
            else:
                result = _call(sm, args)
            step["result"] = json_value(None if result is UNDEFINED else result)
            if isinstance(op.get("as"), str):
                refs[op["as"]] = step["result"]
        except Exception as e:  # an op that throws is recorded and the script goes on, as in the oracle
            step["error"] = err_text(e)
        note(sm.get_session_file())
        if isinstance(step["result"], dict):
            note(step["result"].get("oldSessionFile"))
            note(step["result"].get("newSessionFile"))
        elif isinstance(step["result"], str) and step["result"].endswith(".jsonl"):
            note(step["result"])
        rec["steps"].append(step)
        if step["error"] and script.get("stop_on_error"):
            break
    collect_views(sm, rec, tuple(n for n in VIEW_NAMES if n != "tree"))
    rec["session_file"] = sm.get_session_file()
    if script.get("close") is not False:
        try:
            sm.close()
        except Exception as e:
            rec["view_errors"]["close"] = err_text(e)
    rec["files"] = [_file_record(f, subs) for f in seen]
    if keep_files is not None:
        for k, f in enumerate(seen):
            if os.path.isfile(f):
                shutil.copyfile(f, keep_files / f"{script_path.stem}.{k}.jsonl")
    rec["session_dir_files"] = list_dir(session_dir)
    collect_views(sm, rec, ("tree",))
    return scrub(rec, subs)


def _file_record(path: str, subs: list[tuple[str, str]]) -> dict[str, Any]:
    if not os.path.exists(path):
        return {"path": path, "exists": False, "size": None, "text": None, "b64": None}
    raw = Path(path).read_bytes()
    data = scrub_bytes(raw, subs)
    text = data.decode("utf-8", "replace")
    lossless = text.encode("utf-8") == data
    return {"path": path, "exists": True, "size": len(raw), "text": text,
            "b64": None if lossless else base64.b64encode(data).decode()}
