"""The Markdown header's usage figures read by this process and a forked child together
(markdown_usage._plain_ahead, split.ReadAhead) are the figures one process reads, and no child outlives them."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from builders import assistant, entry, usage, user, write_session
from omp_session.format import split
from omp_session.model.session import open_session, usage_or_model_candidates
from omp_session.ops.export import markdown_usage
from omp_session.ops.export.markdown_usage import all_figures, branch_figures, usage_text


def _story(tmp_path: Path, seed: int, *, broken: str = "") -> Path:
    """Assistants of several models with costs whose sum depends on its order, a side branch, and
    entries the fast reader does not take (a usage with a string, a model change)."""
    rng = random.Random(seed)
    es: list[Any] = []
    parent = None
    if broken == "first":  # omp gives up before the child's part is asked for: the child is stopped
        es.append(entry("broken", None, message=_without_cost()))
        parent = "broken"
    for n in range(rng.randrange(20, 80)):
        uid, aid = f"u{n}", f"a{n}"
        es.append(entry(uid, parent, message=user(f"q{n}")))
        cost = rng.choice([0.1, 0.2, 0.3, 1e-17, 1e16, 0.007])
        spent = usage(cost=cost)
        if rng.random() < 0.1:
            spent["input"] = "12"  # a string: JavaScript's + then makes the total a string
        reply = assistant(f"a{n}", model=rng.choice(["m-a", "m-b", "m-c"]), usage=spent)
        if rng.random() < 0.1:
            reply.pop("model")
        es.append(entry(aid, uid, message=reply))
        if rng.random() < 0.2:  # a branch the export's branch leaves
            es.append(entry(f"s{n}", uid, message=assistant("side", model="m-side", usage=usage(cost=0.5))))
        if rng.random() < 0.1:
            es.append(entry(f"c{n}", aid, type="model_change", model=f"p/m-{n}"))
            aid = f"c{n}"
        parent = aid
    if broken == "last":
        es.append(entry("broken", parent, message=_without_cost()))
    return write_session(tmp_path / f"s{seed}.jsonl", es)


def _without_cost() -> dict[str, Any]:
    """A usage without its cost: omp throws while summing, and the header says so."""
    reply = assistant("no cost", usage=usage())
    del reply["usage"]["cost"]
    return reply


def _figures(path: Path) -> tuple[list[str], str, str]:
    with open_session(path) as s:
        return all_figures(s, s.branch_indices(), usage_or_model_candidates(s))


def _figures_decoded(path: Path) -> tuple[list[str], str, str]:
    """The same figures from every entry decoded, a sum at a time (what all_figures stands for)."""
    with open_session(path) as s:
        counted = usage_or_model_candidates(s)
        models, mine = branch_figures(s, s.branch_indices(), counted)
        return models, mine, usage_text(s.peek_entry(k) for k in range(len(s)) if counted[k])


def _no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("broken", ["", "first", "last"])
def test_figures_read_in_two_processes_are_the_figures_read_in_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   seed: int, broken: str) -> None:
    path = _story(tmp_path, seed, broken=broken)
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: False)
    alone = _figures(path)
    assert alone == _figures_decoded(path)
    assert ("unavailable" in alone[2]) is bool(broken)
    forks: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    monkeypatch.setattr(os, "fork", counted_fork)
    assert _figures(path) == alone
    assert forks  # the child read the later part
    assert _no_child_left()  # taken, or stopped where the figures gave up on the fast pass


def test_a_child_that_fails_leaves_its_part_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _story(tmp_path, 3)
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: False)
    alone = _figures(path)
    here = os.getpid()
    real_reader = markdown_usage.usage_reader

    def dies_in_the_child(s: Any) -> Any:
        plain = real_reader(s)

        def read(k: int) -> Any:
            if os.getpid() != here:
                os._exit(3)
            return plain(k)

        return read

    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    monkeypatch.setattr(markdown_usage, "usage_reader", dies_in_the_child)
    assert _figures(path) == alone
    assert _no_child_left()
