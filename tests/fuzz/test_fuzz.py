"""The bounded fuzz campaign of CI (the long one is ``./dev fuzz``, docs/fuzz.md).

* 2,000 mutated omp files (three fixed run seeds and one random, printed) through ``open`` and
  every view: a call may return or raise a ``SessionError``; any other exception fails, and so
  does a call still running after the alarm (a coarse hang guard, not a timing threshold);
* 200 mutated files through every CLI read command: a traceback or an exit status other than
  0/1/2 fails;
* every saved regression under tests/data/fuzz/ is replayed, so a fixed bug stays fixed.

A failure listed in tests/fuzz/known_failures.json (with its reason) does not fail the run; one
that is listed but no longer happens does, so that the list is emptied as fixes land.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from . import campaign
from .cli import COMMANDS
from .mutate import MUTATIONS, Seed, make_case
from .views import Failure

HANG_GUARD = 60.0  # seconds; a hang, never a timing assertion: the long run measures time
RANDOM_SEED = random.randrange(1 << 31)
VIEW_RUNS = [(1, 500), (2, 500), (3, 500), (RANDOM_SEED, 500)]
CLI_RUNS = [(1, 150), (RANDOM_SEED, 50)]
REGRESSIONS = campaign.regressions()
_REPLAYED: dict[str, list[Failure]] = {}


@pytest.fixture(scope="module")
def seeds(make_corpus: Callable[[int, int], Path]) -> list[Seed]:
    # files over 1 MB (gen_sessions' large_stream) would make CI minutes long; ./dev fuzz has them
    return campaign.seeds_from(campaign.golden_paths() + sorted(make_corpus(1, 60).glob("*.jsonl")),
                               max_size=1 << 20)


def _report(run: campaign.Run, seed: int, tmp_path: Path) -> str:
    known = campaign.known_failures()
    new = {s: f for s, f in run.found.items() if s not in known}
    saved = {s: campaign.save_failure(f, tmp_path / "fuzz", tmp_path, HANG_GUARD, minimise_budget=10,
                                      seed_files="CI: golden + gen_sessions seed 1 x60 (<= 1 MB)")
             for s, f in new.items()}
    lines = campaign.report_lines(run, known, saved, f"run seed {seed}")
    lines.append("a new failure: fix it, or copy its .jsonl and .json into tests/data/fuzz/ and list its "
                 "signature in tests/fuzz/known_failures.json with the reason")
    return "\n".join(lines) if new else ""


@pytest.mark.parametrize(("seed", "count"), VIEW_RUNS, ids=["seed1", "seed2", "seed3", "random"])
def test_views_on_mutated_files(seeds: list[Seed], seed: int, count: int, tmp_path: Path) -> None:
    print(f"fuzz run seed {seed}: {count} cases")
    run = campaign.run_cases(seeds, seed, range(count), tmp_path, HANG_GUARD)
    assert run.cases == count
    report = _report(run, seed, tmp_path)
    assert not report, report


@pytest.mark.parametrize(("seed", "count"), CLI_RUNS, ids=["seed1", "random"])
def test_cli_read_commands_on_mutated_files(seeds: list[Seed], seed: int, count: int, tmp_path: Path) -> None:
    print(f"fuzz cli run seed {seed}: {count} files x {len(COMMANDS)} commands")
    run = campaign.run_cli_cases(seeds, seed, range(count), tmp_path, HANG_GUARD)
    assert run.cases == count
    report = _report(run, seed, tmp_path)
    assert not report, report


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name.split(".")[0] for p in REGRESSIONS])
def test_saved_regression_replays(path: Path, tmp_path: Path) -> None:
    meta = campaign.meta_of(path)
    known = campaign.known_failures()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest not in _REPLAYED:  # one case may be saved once per call it broke
        _REPLAYED[digest] = campaign.check_regression(path, HANG_GUARD, tmp_path)
    failures = _REPLAYED[digest]
    unexpected = [f.signature for f in failures if f.signature not in known]
    assert not unexpected, f"{path.name} ({meta['mutations']}) fails: {unexpected}"
    for sig, entry in known.items():  # a known failure must still happen on the files it names
        if path.name in entry["regressions"] and not sig.endswith(": slow"):  # slow: timing varies
            assert sig in {f.signature for f in failures}, (
                f"{sig} no longer happens on {path.name}: remove it from tests/fuzz/known_failures.json")


def test_known_failures_are_observed_and_saved() -> None:
    entries = json.loads(campaign.KNOWN.read_text("utf-8"))["known"]
    saved = {p.name: json.loads(p.read_text("utf-8"))["signature"] for p in campaign.DATA.glob("*.json")}
    assert len({e["signature"] for e in entries}) == len(entries)
    for e in entries:
        assert e["reason"].strip(), e
        assert e["regressions"], e
        for name in e["regressions"]:
            assert saved.get(name.removesuffix(".gz").removesuffix(".jsonl") + ".json") == e["signature"], (e, name)


def test_cases_are_reproducible_from_their_seed() -> None:
    seeds = campaign.seeds_from(campaign.golden_paths())
    for n in range(30):
        a, b = make_case(seeds, 7, n), make_case(seeds, 7, n)
        assert (a.data, a.mutations, a.source) == (b.data, b.mutations, b.source)
    assert any(make_case(seeds, 7, n).data != make_case(seeds, 8, n).data for n in range(10))


@pytest.mark.parametrize("name", MUTATIONS)
def test_every_mutation_changes_a_real_file(name: str) -> None:
    sample = campaign.seeds_from([campaign.golden_paths()[0]])
    changed = sum(make_case(sample, 1, n, only=name).data != sample[0].data for n in range(10))
    assert changed >= 5, name


def test_the_harness_reports_exceptions_and_hangs_but_not_session_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.errors import ContextError

    from . import views

    def deep(s: object) -> None:
        return deep(s)

    def hang(s: object) -> None:
        while True:
            pass

    def omp_throws(s: object) -> None:
        raise ContextError("omp throws here too")

    monkeypatch.setitem(views.VIEWS, "get_branch", deep)
    monkeypatch.setitem(views.VIEWS, "labels", hang)
    monkeypatch.setitem(views.VIEWS, "get_leaf_id", omp_throws)
    path = campaign.golden_paths()[0]
    failures, _ = views.check_file(path, 0.5)
    assert [f.signature for f in failures] == ["get_branch: RecursionError", "labels: slow"]
