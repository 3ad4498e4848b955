"""The md and json exports are written piece by piece (issue 16: big sessions in bounded memory).

The pieces must add up to exactly what the in-memory export made, decode no entry for keeps, and
the figures read past undecoded entries must be the ones a full decode gives.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import assistant, entry, tool_result, usage, user, write_session
from omp_session.errors import ContextError, EntryNotFoundError
from omp_session.js import codec
from omp_session.model.session import Session, open_session, usage_or_model_candidates
from omp_session.model.tree import branch_tips, leaf_of
from omp_session.model.usage import usage_statistics
from omp_session.ops.export.formats import export, export_chunks, lossy_transcript
from omp_session.ops.export.markdown import _one_final_newline

DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE = Path(__file__).resolve().parents[3] / "src" / "omp_session" / "samples" / "sample.jsonl"
FILES = [SAMPLE, *sorted((DATA / "export").rglob("*.jsonl")), *sorted((DATA / "repair").rglob("*.jsonl")),
         *sorted((DATA / "context" / "inputs").glob("*.jsonl"))[:40]]


def _j(value: Any) -> str:
    out = codec.stringify(value)
    return "null" if out is None else out


def _array(values: Any) -> str:
    items = [_j(v) for v in values]
    return "[\n" + ",\n".join(items) + "\n]" if items else "[]"


def reference_faithful(s: Session, leaf: str | None = None) -> str:
    """The faithful JSON built all in memory from every entry, as it was before streaming."""
    j = s.journal

    def stored(k: int) -> Any:
        if s.migrated or s.header is None:
            return s.entry_at(k)
        try:
            return codec.loads(j.raw(k + 1))
        except ValueError:
            return s.entry_at(k)

    # a record of the file is its line as it is, when that is one line of UTF-8
    records = sum(start < j.size for start in j.starts)
    plain = {k for k in range(len(s)) if not (s.migrated or s.header is None) and k + 1 < records}

    def text(k: int) -> str:
        if k in plain and b"\n" not in j.raw(k + 1):
            try:
                return j.raw(k + 1).decode()
            except UnicodeDecodeError:
                pass
        return _j(stored(k))

    if s.raw_header is codec.UNDEFINED:
        header = None
    elif s.migrated:
        header = s.header
    else:
        try:
            header = codec.loads(j.raw(0))
        except ValueError:
            header = s.raw_header
    fields = [
        ("format", _j("omp-session-export")), ("format_version", _j(1)),
        ("title_slot", _j(j.slot.to_json() if j.slot is not None else None)),
        ("header", _j(header)), ("migrated", _j(s.migrated)),
        ("entries", "[\n" + ",\n".join(map(text, range(len(s)))) + "\n]" if len(s) else "[]"),
        ("malformed", _array({"line": j.line_of(m.start), "offset": m.start,
                              "text": j.read(m.start, m.end).decode("utf-8", "replace")} for m in j.malformed)),
        ("leaf_id", _j(leaf_of(s, leaf))),
        ("branches", _j([s.ids[k] if s.ids[k] is not codec.UNDEFINED else None for k in branch_tips(s)])),
    ]
    return "{\n" + ",\n".join(f"{_j(k)}: {v}" for k, v in fields) + "\n}\n"


def reference_lossy(s: Session) -> str:
    value = lossy_transcript(s)
    fields = [f"{_j(k)}: {_j(v)}" for k, v in value.items() if k != "messages"]
    fields.append(f'"messages": {_array(value["messages"])}')
    return "{\n" + ",\n".join(fields) + "\n}\n"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_streamed_json_is_the_in_memory_json(path: Path) -> None:
    with open_session(path) as s:
        faithful = b"".join(export_chunks(s, "json"))
        lossy = b"".join(export_chunks(s, "json", lossy=True))
    with open_session(path) as s:
        assert faithful == reference_faithful(s).encode()
        assert lossy == reference_lossy(s).encode()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_streamed_markdown_is_the_exported_text(path: Path) -> None:
    for all_branches in (False, True):
        with open_session(path) as s:
            pieces = list(export_chunks(s, "md", all_branches=all_branches))
        with open_session(path) as s:
            text = export(s, "md", all_branches=all_branches)
        assert b"".join(pieces).decode() == text
        assert text.endswith("\n") and not text.endswith("\n\n")


@given(st.lists(st.text(alphabet="ab\n", max_size=6).map(str.encode), max_size=8))
def test_one_final_newline_is_rstrip_plus_one(pieces: list[bytes]) -> None:
    assert b"".join(_one_final_newline(pieces)) == b"".join(pieces).rstrip(b"\n") + b"\n"


def _big(tmp_path: Path, turns: int = 600, size: int = 4000) -> Path:
    entries, parent = [], None
    for n in range(turns):
        entries.append(entry(f"u{n}", parent, message=user(f"question {n} " + "x" * size)))
        entries.append(entry(f"a{n}", f"u{n}", message=assistant(f"answer {n} " + "é" * size,
                                                                 usage=usage(n, 2 * n, 0.01))))
        entries.append(entry(f"t{n}", f"a{n}", message=tool_result("out " + "y" * size)))
        parent = f"t{n}"
    return write_session(tmp_path / "big.jsonl", entries)


@pytest.mark.parametrize(("fmt", "lossy", "all_branches"),
                         [("md", False, False), ("md", False, True), ("json", False, False), ("json", True, False)])
def test_streaming_keeps_no_entry_decoded(tmp_path: Path, fmt: str, lossy: bool, all_branches: bool) -> None:
    path = _big(tmp_path)
    with open_session(path) as s:
        before = len(s.journal.values)
        written = sum(len(p) for p in export_chunks(s, fmt, lossy=lossy, all_branches=all_branches))
        assert written > path.stat().st_size // 2
        assert len(s.journal.values) <= before + 2  # nothing of 1,800 entries is kept


def test_streaming_peak_memory_is_far_below_the_session(tmp_path: Path) -> None:
    path = _big(tmp_path, turns=800, size=6000)  # ~19 MB of JSON text once decoded as str
    size = path.stat().st_size
    for fmt in ("md", "json"):
        with open_session(path) as s:
            tracemalloc.start()
            try:
                for _ in export_chunks(s, fmt):
                    pass
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        assert peak < size // 4, (fmt, peak, size)


def test_missing_leaf_is_refused_before_any_piece(tmp_path: Path) -> None:
    path = _big(tmp_path, turns=2, size=10)
    with open_session(path) as s, pytest.raises(EntryNotFoundError):
        export_chunks(s, "md", leaf="nope")


# ----- entries skipped undecoded hold no usage -----------------------------------------------


def _usage_or_error(entries: Any) -> Any:
    try:
        return usage_statistics(entries)
    except ContextError as e:
        return str(e)


@pytest.mark.parametrize("path", [*FILES, *sorted((DATA / "validate").glob("*.jsonl"))], ids=lambda p: p.name)
def test_skipped_entries_change_no_usage(path: Path) -> None:
    with open_session(path) as s:
        counted = usage_or_model_candidates(s)
        assert len(counted) == len(s)
        fast = _usage_or_error(s.peek_entry(k) for k in range(len(s)) if counted[k])
        assert json.dumps(fast) == json.dumps(_usage_or_error(s.entries))


@pytest.mark.parametrize("name", ["task", "t\\u0061sk", "\\u0074ask", "tas\\u006B"])
def test_a_task_result_is_counted_however_its_name_is_spelled(tmp_path: Path, name: str) -> None:
    details = {"usage": usage(5, 7, 0.5)}
    line = json.dumps(entry("t1", "a1", message=tool_result("done", name="NAME", details=details)),
                      separators=(",", ":")).replace("NAME", name)
    path = write_session(tmp_path / "s.jsonl", [entry("u1", None, message=user("go")),
                                                entry("a1", "u1", message=assistant("ok", usage=usage()))])
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    with open_session(path) as s:
        counted = usage_or_model_candidates(s)
        assert counted[2] == 1
        assert usage_statistics(s.peek_entry(k) for k in range(len(s)) if counted[k])["cost"] == pytest.approx(0.501)


@pytest.mark.parametrize("path", FILES[:40], ids=lambda p: p.name)
def test_json_made_in_two_processes_is_the_json_made_in_one(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a big file's entries are rendered a piece each in turn by this process and a forked child
    from omp_session.format import split

    with open_session(path) as s:
        alone = b"".join(export_chunks(s, "json"))
    real = split.pieces_of
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    monkeypatch.setattr("omp_session.format.reader.pieces_of", lambda count, size_of, _limit: real(count, size_of, 300))
    with open_session(path) as s:
        assert b"".join(export_chunks(s, "json")) == alone


def _model_story(tmp_path: Path) -> Path:
    """Models named, changed, unnamed and reset across many entries: what each "model changed"
    note says depends on every entry before it."""
    es: list[Any] = []
    parent = None
    models = ["m-a", None, "m-b", "m-b", None, "m-c"]
    for n in range(60):
        uid, aid = f"u{n}", f"a{n}"
        es.append(entry(uid, parent, message=user(f"question {n}")))
        reply = assistant(f"answer {n}")
        model = models[n % len(models)]
        if model is None:
            reply.pop("model", None)
        else:
            reply["model"] = model
        es.append(entry(aid, uid, message=reply))
        parent = aid
        if n % 7 == 3:  # a model change, now and then to nothing (the note is then left out)
            es.append(entry(f"c{n}", parent, type="model_change", model="" if n % 14 == 3 else f"p/m-{n}"))
            parent = f"c{n}"
    return write_session(tmp_path / "models.jsonl", es)


@pytest.mark.parametrize("limit", [1, 300, 5000])
def test_markdown_made_in_two_processes_is_the_markdown_made_in_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    limit: int) -> None:
    # a big file's branch is rendered a piece each in turn by this process and a forked child; each
    # piece starts from the model the entries before it left in use
    from omp_session.format import split

    paths = [_model_story(tmp_path), *FILES[:30]]
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: False)
    alone = []
    for path in paths:
        with open_session(path) as s:
            alone.append(b"".join(export_chunks(s, "md")) + b"".join(export_chunks(s, "md", all_branches=True)))
    assert b"model changed from" in alone[0]
    real = split.pieces_of
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    monkeypatch.setattr("omp_session.format.reader.pieces_of", lambda count, size_of, _limit: real(count, size_of, limit))
    for path, expected in zip(paths, alone, strict=True):
        with open_session(path) as s:
            got = b"".join(export_chunks(s, "md")) + b"".join(export_chunks(s, "md", all_branches=True))
        assert got == expected, path.name


@pytest.mark.parametrize("reset", ["", None, 7])
def test_a_side_branch_starts_from_the_model_its_fork_left_in_use(tmp_path: Path, reset: Any) -> None:
    # a model change to no model resets the renderer's model: a branch forking after it starts with
    # none, as the branch rendered on its own does, so "model changed from" is not said on either
    es = [entry("u1", None, message=user("q")),
          entry("a1", "u1", message={**assistant("first"), "model": "m-a"}),
          entry("c1", "a1", type="model_change", model=reset),
          entry("a2", "c1", message={**assistant("side"), "model": "m-b"}),
          entry("a3", "c1", message={**assistant("main"), "model": "m-b"})]
    path = write_session(tmp_path / "fork.jsonl", es)
    with open_session(path) as s:
        side_alone = b"".join(export_chunks(s, "md", leaf="a2"))
        both = b"".join(export_chunks(s, "md", all_branches=True))
    assert b"model changed from" not in side_alone
    assert b"### Branch 2: ends at `a2`" in both
    assert b"model changed from" not in both
