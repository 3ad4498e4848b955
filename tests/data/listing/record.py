"""Regenerate the listing golden data from the real omp (spec S11): ``python tests/data/listing/record.py``.

Writes, next to this script:

* ``inputs/hand/`` -- hand-made session files for every S11 case (plus ``.bak`` orphans, a hidden file,
  a non-session file and a nested directory); ``inputs/gen/`` -- a ``gen_sessions.py`` corpus.
* ``inputs/meta.json`` -- the mtime (ns) of every input (git does not keep mtimes) and the pinned ids.
* ``expected.json`` -- what omp 18.2.3 returns, paths shown as ``<DIR>`` (our copy of ``inputs``) or
  ``<ROOT>`` (the sessions root ``listAll`` scans):

  - ``list_hand`` / ``list_gen``: ``SessionManager.list(cwd, <DIR>/hand|gen)`` with no pins;
  - ``list_hand_pinned``: the same for ``hand`` with the pins in ``meta.json``;
  - ``list_all_pinned``: ``SessionManager.listAll()`` over a root holding ``hand`` and ``gen``.

The oracle gives omp a fresh agent dir that no script op can write to, so for the pinned run this script
watches ``$OMP_ORACLE_TMP`` and, as soon as the supervisor has made ``home/.omp/agent``, drops
``session-pins.json`` and the sessions tree there (the worker needs ~0.3 s to import omp first). The
results are checked for the pins having taken effect.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "inputs"
SHARED = Path(os.environ.get("OMP_ORACLE_DIR", HERE.parents[2] / "tests" / "reference"))
ORACLE = SHARED / "omp-reference"

BASE_MS = 1_767_000_000_000  # 2025-12-29, well before the headers' timestamps below
TS = "2026-01-05T10:00:00.000Z"


def jl(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def slot(title: Any, source: str | None = "user", v: Any = 1) -> str:
    """A 256-byte title slot line (the padding keeps omp's width; titles here are short)."""
    obj: dict[str, Any] = {"type": "title"}
    if v is not None:
        obj["v"] = v
    obj["title"] = title
    if source is not None:
        obj["source"] = source
    obj["updatedAt"] = TS
    obj["pad"] = ""
    width = len(jl(obj).encode())
    obj["pad"] = " " * max(0, 255 - width)
    return jl(obj) + "\n"


def header(sid: str, ts: Any = TS, cwd: Any = "/home/dev/project", **extra: Any) -> str:
    obj: dict[str, Any] = {"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": cwd}
    obj.update(extra)
    return jl(obj) + "\n"


_ids = iter(range(1, 10**6))


def entry(kind: str, **fields: Any) -> str:
    n = next(_ids)
    obj: dict[str, Any] = {"type": kind, "id": f"{n:08x}", "parentId": None, "timestamp": TS}
    obj.update(fields)
    return jl(obj) + "\n"


def msg(role: str, content: Any, **extra: Any) -> str:
    message: dict[str, Any] = {"role": role, "content": content, "timestamp": 1767607200000}
    message.update(extra)
    return entry("message", message=message)


def user(text: Any) -> str:
    return msg("user", text)


def asst(text: str, stop: str = "stop", blocks: list[Any] | None = None) -> str:
    content = [{"type": "text", "text": text}, *(blocks or [])]
    return msg("assistant", content, stopReason=stop, api="openai-responses", provider="openai", model="gpt-5")


def hand_cases() -> dict[str, str | bytes]:
    """File name -> content. Names say what each case checks."""
    big = "x" * 5000
    c: dict[str, str | bytes] = {}
    c["a01_plain.jsonl"] = slot("") + header("a01") + user("hello there") + asst("hi!")
    c["a02_slot_title.jsonl"] = slot("Slot Title") + header("a02", title="Header Title") + user("q") + asst("a")
    c["a03_blank_slot_hides_header_title.jsonl"] = slot("   ") + header("a03", title="Hidden") + user("q")
    c["a04_header_title.jsonl"] = header("a04", title="Header Only") + user("q") + asst("a")
    c["a05_empty_header_title.jsonl"] = header("a05", title="") + entry("compaction", summary="s",
                                                                        shortSummary="not used")
    c["a06_compaction_fallback.jsonl"] = (header("a06") + user("q") + asst("a")
                                          + entry("compaction", summary="s", shortSummary="first short")
                                          + entry("compaction", summary="s", shortSummary="second short")
                                          + entry("compaction", summary="s", shortSummary=7))
    c["a07_compaction_beyond_prefix.jsonl"] = (header("a07") + entry("compaction", summary="s", shortSummary="in")
                                               + user("y" * 4200)
                                               + entry("compaction", summary="s", shortSummary="beyond"))
    c["a08_blank_slot_then_compaction.jsonl"] = (slot("") + header("a08", title="Hidden")
                                                 + entry("compaction", summary="s", shortSummary="short"))
    c["a09_slot_without_v_or_source.jsonl"] = slot("No v", source=None, v=None) + header("a09") + user("q")
    c["a10_slot_non_string_title.jsonl"] = slot(42) + header("a10", title="From Header") + user("q")
    c["b01_text_blocks.jsonl"] = header("b01") + msg("user", [
        {"type": "text", "text": "alpha"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "beta"}, {"type": "text"}, {"type": "text", "text": 12.5},
        {"type": "text", "text": None}, {"type": "text", "text": [1, None, "z"]}, "stray", 3]) + asst("reply")
    c["b02_empty_user_then_assistant.jsonl"] = header("b02") + user("") + asst("assistant speaks")
    c["b03_developer_only.jsonl"] = header("b03") + msg("developer", "dev note") + msg("toolResult", "tool out")
    c["b04_long_first_line.jsonl"] = header("b04") + user(big) + asst("short") + user("second")
    c["b05_long_escapes.jsonl"] = header("b05") + user('line1\nline2 "q" \\ tab\t' + "é€😀" * 1200)
    c["b06_long_assistant_first.jsonl"] = header("b06") + asst("z" * 5000) + user("later")
    c["b07_many_long_lines.jsonl"] = header("b07") + "".join(user(f"m{i} " + "w" * 1500) for i in range(6))
    c["b08_small_messages_count.jsonl"] = header("b08") + "".join(
        user(f"u{i}") + asst(f"a{i}") for i in range(40))
    c["b09_message_zero.jsonl"] = (header("b09") + entry("message", message=0) + entry("message", message="str")
                                   + user("real"))
    c["b10_no_messages.jsonl"] = header("b10") + entry("model_change", provider="openai", modelId="gpt-5")
    c["b11_header_only.jsonl"] = header("b11")
    c["b12_role_in_text.jsonl"] = header("b12") + msg("custom", "x", note='"role":"user","content":"fake"')
    c["s01_error.jsonl"] = header("s01") + user("q") + asst("boom", stop="error")
    c["s02_aborted.jsonl"] = header("s02") + user("q") + asst("stop", stop="aborted")
    c["s03_length.jsonl"] = header("s03") + user("q") + asst("cut", stop="length")
    c["s04_tool_call.jsonl"] = header("s04") + user("q") + asst("call", blocks=[
        {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {}}])
    c["s05_tool_result.jsonl"] = header("s05") + user("q") + msg("toolResult", [{"type": "text", "text": "o"}],
                                                                 toolCallId="c1", toolName="bash")
    c["s06_pending.jsonl"] = header("s06") + asst("a") + user("waiting")
    c["s07_unknown_role.jsonl"] = header("s07") + user("q") + msg("bashExecution", "ls")
    c["s08_trailing_non_message.jsonl"] = (header("s08") + user("q") + asst("done")
                                           + entry("label", targetId="x", label="l") + "\n  \n")
    c["s09_huge_last_message.jsonl"] = header("s09") + user("q") + asst("big " + "b" * 40000)
    c["s10_huge_then_small.jsonl"] = header("s10") + user("q") + asst("big " + "b" * 40000, stop="length") + \
        user("after")
    c["s11_crlf.jsonl"] = (header("s11") + user("q") + asst("crlf")).replace("\n", "\r\n")
    c["s12_no_final_newline.jsonl"] = (header("s12") + user("q") + asst("a", stop="aborted")).rstrip("\n")
    c["s13_bad_last_line.jsonl"] = header("s13") + user("q") + asst("a") + '{"type":"message","message":{"ro'
    c["s14_message_null_message.jsonl"] = header("s14") + user("q") + entry("message", message=None)
    c["s15_status_of_weird.jsonl"] = header("s15") + user("q") + entry("message", message="string message")
    c["h01_headerless.jsonl"] = user("no header") + asst("a")
    c["h02_empty.jsonl"] = ""
    c["h03_title_only.jsonl"] = slot("Only a title")
    c["h04_no_id.jsonl"] = jl({"type": "session", "version": 3, "timestamp": TS, "cwd": "/x"}) + "\n" + user("q")
    c["h05_numeric_id.jsonl"] = header(5) + user("q")  # type: ignore[arg-type]
    c["h06_header_second.jsonl"] = user("first") + header("h06")
    c["h07_invalid_timestamp.jsonl"] = header("h07", ts="garbage") + user("q")
    c["h08_no_timestamp.jsonl"] = jl({"type": "session", "version": 3, "id": "h08", "cwd": "/x"}) + "\n"
    c["h09_numeric_cwd.jsonl"] = header("h09", cwd=17, parentSession="/parent/file.jsonl") + user("q")
    c["h10_parent_id.jsonl"] = header("h10", parentSession="0197abcd-parent-id", cwd=None) + user("q")
    c["h11_legacy_date.jsonl"] = header("h11", ts="Jan 2 2026 10:00") + user("q")
    c["h12_numeric_timestamp.jsonl"] = header("h12", ts=1767000000000) + user("q")
    c["h13_empty_id.jsonl"] = header("") + user("q")
    c["h14_null_after_header.jsonl"] = header("h14") + "null\n" + user("q")
    c["h15_content_object.jsonl"] = header("h15") + msg("user", {"text": "obj"})
    c["h16_content_null_assistant.jsonl"] = header("h16") + user("ok") + msg("assistant", None)
    c["h17_null_block.jsonl"] = header("h17") + msg("user", [None])
    c["h18_content_object_developer.jsonl"] = header("h18") + msg("developer", {"text": "not read"}) + user("u")
    c["h19_nonobject_lines.jsonl"] = header("h19") + "42\n\"str\"\n[1,2]\ntrue\n" + user("q")
    c["t01_bom.jsonl"] = b"\xef\xbb\xbf" + (header("t01") + user("bom user")).encode()
    c["t02_bom_slot.jsonl"] = b"\xef\xbb\xbf" + (slot("BOM Slot") + header("t02") + user("q")).encode()
    c["t03_malformed_header.jsonl"] = ('{"type":"session","id":"t03","cwd":"/damaged","title":"T\\u00e9\\n",'
                                       '"timestamp":"2026-01-03T00:00:00Z", oops}\n') + user("after damage")
    c["t04_header_trailing_garbage.jsonl"] = header("t04").rstrip("\n") + " trailing\n" + user("q")
    c["t05_slot_then_malformed_header.jsonl"] = slot("Slot T05") + '{"type":"session","id":"t05" ,,}\n' + user("q")
    c["t06_blank_lines_first.jsonl"] = "\n\n   \n" + header("t06") + "\n" + user("q")
    c["t07_cut_header.jsonl"] = '{"type":"session","version":3,"id":"t07","timestamp":"2026-01-04T00:00:00.000Z","cwd":"/cut'
    c["t08_multiline_header.jsonl"] = json.dumps({"type": "session", "id": "t08", "timestamp": TS}, indent=1) + \
        "\n" + user("q")
    c["t09_textual_escaped.jsonl"] = '{"type":"session","id":"t\\u0030\\u0039","title":"a\\qb\\n",bad\n'
    c["t10_invalid_utf8.jsonl"] = (header("t10") + user("caf")).encode()[:-3] + b"\xff\xfe" + b'"}}\n'
    c["t11_two_objects_line.jsonl"] = header("t11").rstrip("\n") + " " + user("same line")
    c["t12_big_slot_prefix.jsonl"] = slot("Big") + header("t12", title="x" * 3900) + user("beyond prefix")
    # Ordering: equal mtimes (set in mtimes()) make created, then path, decide.
    c["o01_tie_old.jsonl"] = header("o01", ts="2026-01-01T00:00:00.000Z") + user("q")
    c["o02_tie_new.jsonl"] = header("o02", ts="2026-01-02T00:00:00.000Z") + user("q")
    c["o03_tie_same_a.jsonl"] = header("o03", ts="2026-01-02T00:00:00.000Z") + user("q")
    c["O03_tie_same_B.jsonl"] = header("o03b", ts="2026-01-02T00:00:00.000Z") + user("q")
    c["o03_tie-same_c.jsonl"] = header("o03c", ts="2026-01-02T00:00:00.000Z") + user("q")
    c["o04_tie_invalid.jsonl"] = header("o04", ts="nope") + user("q")
    c["o05_tie_invalid.jsonl"] = header("o05", ts="nope") + user("q")
    c["o06_tie_older.jsonl"] = header("o06", ts="2025-12-01T00:00:00.000Z") + user("q")
    c["o07_tie_newest.jsonl"] = header("o07", ts="2026-02-01T00:00:00.000Z") + user("q")
    c["o08_tie_invalid.jsonl"] = header("o08", ts="") + user("q")
    # Pinned ids (meta.json): p01 is old, so only the pin brings it to the top.
    c["p01_pinned_old.jsonl"] = header("pin-old") + user("pinned")
    c["p02_pinned_new.jsonl"] = header("pin-new") + user("pinned too")
    # Not listed by a bucket scan: hidden, not .jsonl, nested.
    c[".hidden.jsonl"] = header("hidden") + user("q")
    c["notes.txt"] = header("txt") + user("q")
    c["sub/nested.jsonl"] = header("nested") + user("q")
    # Orphaned backups (S8.4.3): promoted when the primary is missing, newest backup wins.
    c["r01_orphan.jsonl.0123456789abcdef.bak"] = header("r01") + user("restored")
    c["r02_dup.jsonl.00000000000000aa.bak"] = header("r02-old") + user("older backup")
    c["r02_dup.jsonl.00000000000000bb.bak"] = header("r02-new") + user("newer backup")
    c["r03_primary.jsonl"] = header("r03") + user("primary stays")
    c["r03_primary.jsonl.0000000000000001.bak"] = header("r03-bak") + user("not promoted")
    c["r04_bad.jsonl.bak"] = header("r04") + user("no snowflake")
    return c


def mtimes(names: list[str]) -> dict[str, int]:
    """Deterministic mtimes in ns: mostly one second apart, with ties for the ordering cases."""
    out: dict[str, int] = {}
    for i, name in enumerate(sorted(names)):
        ms = BASE_MS + 1000 * (i + 1)
        base = name.split("/")[-1]
        if "_tie_invalid" in base:
            # Invalid created dates tie among themselves only: mixed with valid ones in one mtime,
            # omp's comparator stops being transitive and the order depends on Bun's sort algorithm.
            ms = BASE_MS + 400_000
        elif base.startswith(("o0", "O0")):
            ms = BASE_MS + 500_000  # the other ordering cases share one mtime
        elif base.startswith("p01"):
            ms = BASE_MS
        elif base.startswith("r02") and "aa" in base:
            ms = BASE_MS + 600_000
        # Bun's mtimeMs is a double: .999999 ms rounds up to the next ms, .123456 is truncated away.
        sub = 999_999 if i % 3 == 0 and not base.startswith(("o0", "O0")) else 123_456
        out[name] = ms * 1_000_000 + sub
    return out


def write_inputs() -> dict[str, Any]:
    if INPUTS.exists():
        shutil.rmtree(INPUTS)
    hand = INPUTS / "hand"
    for name, content in hand_cases().items():
        path = hand / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    gen = INPUTS / "gen"
    kinds = ("v3_linear,v3_branched,v3_compaction,v3_labels,v3_custom,v3_title,v3_misc,v3_mixed,v1,v2,"
             "dmg_malformed,dmg_blank,dmg_truncated,dmg_nonobject,dmg_bom,dmg_unknown,dmg_header,dmg_encoding,"
             "dmg_entry_shape")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(SHARED / "gen_sessions.py"), "--seed", "11", "--count", "40",
                        "--kinds", kinds, "--out", tmp], check=True, capture_output=True)
        gen.mkdir(parents=True)
        for f in sorted(Path(tmp).glob("*.jsonl")):
            shutil.copy(f, gen / f.name)
    names = [p.relative_to(INPUTS).as_posix() for p in sorted(INPUTS.rglob("*")) if p.is_file()]
    meta = {"mtimes": mtimes(names), "pins": ["pin-old", "pin-new", "s01", "gen-none"]}
    (INPUTS / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def materialise(dest: Path, meta: dict[str, Any]) -> None:
    """Copy ``inputs`` to ``dest`` and apply the recorded mtimes (tests use the same procedure)."""
    for rel, ns in meta["mtimes"].items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(INPUTS / rel, target)
        os.utime(target, ns=(ns, ns))


def run_oracle(script: dict[str, Any], work: Path, plant: dict[str, Any] | None = None) -> list[Any]:
    """Run one script; with ``plant``, put pins and a sessions tree into omp's agent dir first."""
    script_path = work / f"script-{time.monotonic_ns()}.json"
    script_path.write_text(json.dumps(script))
    oracle_tmp = work / f"oracle-{time.monotonic_ns()}"
    oracle_tmp.mkdir()
    planted = threading.Event()

    def planter() -> None:
        assert plant is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for root in oracle_tmp.glob("omp-oracle-*"):
                agent = root / "home" / ".omp" / "agent"
                if agent.is_dir():
                    materialise(agent / "sessions", plant["meta_subset"])
                    (agent / "session-pins.json").write_text(json.dumps(plant["pins"]))
                    planted.set()
                    return
            time.sleep(0.0005)

    thread = threading.Thread(target=planter) if plant else None
    if thread:
        thread.start()
    env = dict(os.environ, OMP_ORACLE_TMP=str(oracle_tmp))
    res = subprocess.run([str(ORACLE), "run", str(script_path)], capture_output=True, text=True, env=env,
                         check=True, timeout=300)
    if thread:
        thread.join()
        assert planted.is_set(), "could not plant pins in the oracle's agent dir"
    record = json.loads(res.stdout)
    steps = record["steps"]
    for step in steps:
        assert step["error"] is None, step
    return [step["result"] for step in steps]


def scrub(value: Any, subs: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for old, new in subs:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [scrub(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, subs) for k, v in value.items()}
    return value


def main() -> None:
    meta = write_inputs()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        plain = work / "plain"
        materialise(plain, meta)
        list_hand, list_gen = run_oracle({"ops": [
            {"op": "static", "method": "list", "args": ["/home/dev/project", str(plain / "hand")]},
            {"op": "static", "method": "list", "args": ["/home/dev/project", str(plain / "gen")]},
        ]}, work)
        pinned = work / "pinned"
        materialise(pinned, meta)
        list_all, list_hand_pinned = run_oracle({"ops": [
            {"op": "static", "method": "listAll", "args": []},
            {"op": "static", "method": "list", "args": ["/home/dev/project", str(pinned / "hand")]},
        ]}, work, plant={"meta_subset": meta, "pins": meta["pins"]})
    subs = [(str(plain), "<DIR>"), (str(pinned), "<DIR>"), ("<ORACLE_TMP>/home/.omp/agent/sessions", "<ROOT>")]
    expected = scrub({"list_hand": list_hand, "list_gen": list_gen, "list_hand_pinned": list_hand_pinned,
                      "list_all_pinned": list_all}, subs)
    assert {s["id"] for s in expected["list_hand_pinned"][:3]} == {"pin-new", "s01", "pin-old"}, \
        "pins did not take effect"
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    print({k: len(v) for k, v in expected.items()})


if __name__ == "__main__":
    main()
