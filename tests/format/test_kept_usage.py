"""A scan asked to keep usage (``scan_file(usage=True)``, what ``show`` and the Markdown export
open with) keeps exactly the numbers the entry-by-entry reader (model/usage_plain.py) reads, in
one process and in two, changes nothing else the scan gives, and every sum and figure made from
them is the one made without them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omp_session.cli._render import _plain_numbers
from omp_session.errors import ContextError
from omp_session.format import reader
from omp_session.format import split as scan_split
from omp_session.model.session import open_session, usage_or_model_candidates
from omp_session.model.usage import branch_and_all_usage, usage_statistics
from omp_session.model.usage_plain import plain_assistant, usage_reader
from omp_session.ops.export.markdown import markdown
from omp_session.ops.export.markdown_usage import all_figures

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = sorted([*(DATA / "validate").glob("*.jsonl"), *(DATA / "context" / "inputs").glob("*.jsonl")])


def _snapshot(j: reader.Journal) -> tuple[Any, ...]:
    return (list(j.starts), list(j.ends), j.types, j.ids, j.parents, j.heads, list(j.linear),
            [repr(j.value(i)) for i in range(len(j))], [(m.start, m.end) for m in j.malformed], j.blob_offsets)


def _kept(j: reader.Journal) -> dict[int, list[float]]:
    records = j.usage_records
    assert records is not None
    assert list(records) == sorted(set(records))
    return {r: list(j.usage_numbers[6 * n:6 * n + 6]) for n, r in enumerate(records)}


def _plain(j: reader.Journal) -> dict[int, list[float]]:
    found = {}
    for i in range(len(j)):
        plain = plain_assistant(j.raw(i))
        if plain is not None:
            found[i] = [float(x) for x in plain.numbers]
    return found


@pytest.fixture(scope="module")
def corpus(make_corpus: Callable[[int, int], Path]) -> Path:
    return make_corpus(7, 40)


def test_the_kept_numbers_are_the_plain_readers_in_one_process_and_in_two(corpus: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_split, "MIN_SPLIT_SIZE", 0)
    kept_somewhere = split_used = 0
    for path in [*sorted(corpus.glob("*.jsonl")), *FIXTURES]:
        monkeypatch.setenv("OMP_SESSION_WORKERS", "1")
        alone, without = reader.scan_file(path, usage=True), reader.scan_file(path)
        monkeypatch.setenv("OMP_SESSION_WORKERS", "2")
        two, two_without = reader.scan_file(path, usage=True), reader.scan_file(path)
        split_used += scan_split._midpoint(two.source, two.size, two.body_start) is not None
        # nothing else changes: heads are the same shared objects
        assert _snapshot(alone) == _snapshot(without) and _snapshot(two) == _snapshot(two_without), path.name
        assert all(h is None or reader.is_shared_head(h) for h in alone.heads if not alone.loose_heads)
        plain = _plain(alone)
        for kept in (_kept(alone), _kept(two)):
            # a record the scan reads on its own (damage nearby) keeps nothing: read from its bytes
            assert kept.keys() <= plain.keys(), path.name
            assert all(plain[r] == numbers for r, numbers in kept.items()), path.name
            if path.parent == corpus and "_dmg_" not in path.name:  # every record in the usual chunks
                assert kept == plain, path.name
            kept_somewhere += len(kept)
    assert kept_somewhere > 500 and split_used > 30


def _sums(s: Any, numbers: Any) -> Any:
    every = list(range(len(s)))
    branch = [k for k in every if k % 3]  # (not a branch: a part of every, in order, as the sums take it)
    try:
        return branch_and_all_usage(s.peek_entry, branch, every, numbers)
    except ContextError as e:
        return str(e)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_figures_and_sums_are_the_same_with_kept_numbers(path: Path) -> None:
    with open_session(path) as s, open_session(path, usage=True) as kept:
        assert kept.journal.usage_records is not None and s.journal.usage_records is None
        assert repr(_sums(kept, _plain_numbers(kept))) == repr(_sums(s, _plain_numbers(s))) == repr(_sums(s, None))
        counted = usage_or_model_candidates(s)
        assert all_figures(kept, kept.branch_indices(), counted) == all_figures(s, s.branch_indices(), counted)
        # the public sum, as omp's getUsageStatistics() over every entry decoded
        assert repr(_statistics(kept)) == repr(_statistics(s)) == repr(_statistics(s, decoded=True))
        if not s.migrated:  # (a v1 file's ids are made up on every load)
            assert markdown(kept, all_branches=True) == markdown(s, all_branches=True)


def _statistics(s: Any, decoded: bool = False) -> Any:
    try:
        return usage_statistics(s.entries) if decoded else s.get_usage_statistics()
    except ContextError as e:
        return str(e)


_HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'
_PLAIN = '{"input":10,"output":5,"cacheRead":1,"cacheWrite":0,"totalTokens":16,"cost":{"total":0.25}}'


def _assistant(n: int, *, usage: str = _PLAIN, extra: str = "") -> str:
    parent = f'"a{n - 1}"' if n else "null"
    return (f'{{"type":"message","id":"a{n}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z",'
            f'"message":{{"role":"assistant","content":[],"provider":"p","model":"m","usage":{usage},'
            f'"timestamp":1{extra}}}}}')


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([_HEADER, *lines]) + "\n")
    return path


def test_an_entry_changed_in_memory_is_summed_as_changed(tmp_path: Path) -> None:
    path = _write(tmp_path, [_assistant(n) for n in range(4)])
    with open_session(path, usage=True) as s:
        assert len(_kept(s.journal)) == 4
        s.entry_at(2)["message"]["usage"]["input"] = 1000  # decoded and kept: its bytes no longer say it
        branch, every = _sums(s, _plain_numbers(s))
        assert (branch["input"], every["input"]) == (1010, 1030)  # (the "branch": entries 1 and 2)
        assert usage_reader(s)(2) is None and usage_reader(s)(1) is not None


def test_what_the_full_decode_reads_otherwise_is_not_kept(tmp_path: Path) -> None:
    """A model the full decode gives as another value (an integer beyond 64 bits) is read whole;
    an entry's odd timestamps change no number, and its numbers are kept."""
    lines = [_assistant(0), _assistant(1).replace('"model":"m"', '"model":123456789012345678901234'),
             _assistant(2, extra=',"stopReason":"stop"').replace('"timestamp":1', '"timestamp":{"odd":[1]}'),
             _assistant(3, usage=_PLAIN[:-1] + ',"premiumRequests":2}')]
    path = _write(tmp_path, lines)
    with open_session(path, usage=True) as s:
        assert sorted(_kept(s.journal)) == [1, 2, 3]  # records: the header is 0
        read = usage_reader(s)
        assert read(0) == ("m", "p", read(0)[2]) and list(read(0)[2]) == [10, 5, 1, 0, 16, 0.25]  # type: ignore[index]
        assert read(1) is None and read(2) is not None and read(3) is None
        with open_session(path) as plain:
            assert repr(_sums(s, _plain_numbers(s))) == repr(_sums(plain, None))
            counted = usage_or_model_candidates(s)
            assert all_figures(s, s.branch_indices(), counted) == all_figures(plain, plain.branch_indices(), counted)


def test_the_cli_opens_show_and_the_markdown_export_keeping_usage(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    from click.testing import CliRunner

    from omp_session.cli import cli
    from omp_session.model import session as session_module

    path = _write(tmp_path, [_assistant(n) for n in range(3)])
    asked: list[bool] = []
    real = session_module.read_session

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("usage", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(session_module, "read_session", spy)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", os.fspath(tmp_path / "agent"))
    for args, wanted in ((["show", str(path)], True), (["export", str(path), "--format", "md"], True),
                         (["export", str(path), "--format", "json"], False), (["tree", str(path)], False)):
        asked.clear()
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert asked == [wanted], args


def test_a_model_equal_to_another_record_s_is_its_own(tmp_path: Path) -> None:
    """Message heads are shared between records whose fields are equal, and true, 1 and 1.0 are:
    such a model or provider is read from the entry's own bytes, as without kept numbers."""
    lines = [_assistant(n).replace('"model":"m"', f'"model":{m}').replace('"provider":"p"', f'"provider":{m}')
             for n, m in enumerate(["true", "1", "1.0", '"m"', "null"])]
    path = _write(tmp_path, lines)
    with open_session(path, usage=True) as kept, open_session(path) as plain:
        got = [usage_reader(kept)(k) for k in range(5)]
        want = [usage_reader(plain)(k) for k in range(5)]
        assert [(type(g[0]), g[0], type(g[1])) if g else None for g in got][3:] == [(str, "m", str),
                                                                                  (type(None), None, type(None))]
        assert got[:3] == [None, None, None] and want[:3] != [None, None, None]
        for g, w in zip(got, want, strict=True):
            assert g is None or (repr(g[:2]), list(g[2])) == (repr(w[:2]), list(w[2]))  # type: ignore[index]
