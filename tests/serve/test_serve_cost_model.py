"""The sessions list sorted by cost and filtered by model (issue 18): the figures of
``list --stats``, computed only when asked for, in the same order as ``list --sort cost``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_corpus import BASE_S, iso, session_path, sid

from builders import assistant, entry, header, run, usage, user, write_session
from conftest import Served
from omp_session.cli import cli
from omp_session.serve import pages
from omp_session.serve.app import start
from omp_session.serve.sessions import Catalog, Page, Query

MODELS = (("anthropic", "opus"), ("openai", "gpt-x"), ("google", "gem"))
COUNT = 14


def _build(root: Path) -> dict[str, Any]:
    """Sessions with costs that tie and differ, one model each (session 4 two, session 5's
    subagent a third one), an unreadable cost (session 6: no assistant at all)."""
    info: dict[str, Any] = {}
    for i in range(COUNT):
        cwd = f"/home/u/proj{i % 3}"
        t = i * 60
        provider, model = MODELS[i % 3]
        es = [entry("u1", None, timestamp=iso(t + 1), message=user(f"question {i}"))]
        if i != 6:
            es.append(entry("a1", "u1", timestamp=iso(t + 2), message=assistant(
                f"answer {i}", provider=provider, model=model, usage=usage(cost=0.01 * (i % 4)),
                timestamp=(BASE_S + t + 2) * 1000)))
        if i == 4:
            es.append(entry("a2", "a1", timestamp=iso(t + 3), message=assistant(
                "again", provider="openai", model="gpt-x", usage=usage(cost=0.5), timestamp=(BASE_S + t + 3) * 1000)))
        path = write_session(session_path(root, i, cwd), es, head=header(sid(i), cwd=cwd, timestamp=iso(t)))
        if i == 5:
            sub = path.with_suffix("") / "agent1.jsonl"
            write_session(sub, [entry("s1", None, timestamp=iso(t + 5), message=assistant(
                "sub", provider="mistral", model="large", usage=usage(cost=0.02)))],
                head=header("sub-5", cwd=cwd, timestamp=iso(t + 5)))
            os.utime(sub, (BASE_S + t, BASE_S + t))
        os.utime(path, (BASE_S + t, BASE_S + t))
        info[sid(i)] = path
    return info


@pytest.fixture(scope="module")
def costly(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("costly")
    root = base / "sessions"
    files = _build(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        with start(root) as running:
            yield Served(root, {"paths": files}, running)


def _api(served: Served, query: str) -> dict[str, Any]:
    """The JSON of /api/sessions, asked again until every figure is known."""
    for _ in range(100):
        got = served.get(f"/api/sessions?per_page=1000&{query}")
        assert got.status == 200, got.text
        body: dict[str, Any] = got.json()
        if body["stats_pending"] == 0:
            return body
        time.sleep(0.1)
    raise AssertionError("stats never computed")


def _list_stats(root: Path, *extra: str) -> list[dict[str, Any]]:
    code, out, err = run(cli, "list", "--all", "--root", str(root), "--stats", "--json", *extra)
    assert code == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


@pytest.mark.parametrize("reverse", [False, True])
def test_cost_order_is_list_sort_cost(costly: Served, reverse: bool) -> None:
    expected = _list_stats(costly.root, "--sort", "cost", *(["--reverse"] if reverse else []))
    body = _api(costly, "sort=cost" + ("&reverse=1" if reverse else ""))
    assert [(r["path"], r["subagent_of"]) for r in body["sessions"]] == \
        [(r["path"], r["subagent_of"]) for r in expected]
    assert [r["cost"] for r in body["sessions"]] == [r["cost"] for r in expected]
    assert [r["models"] for r in body["sessions"]] == [r["models"] for r in expected]
    costs = [r["cost"] for r in body["sessions"] if r["subagent_of"] is None and r["cost"] is not None]
    assert costs == sorted(costs, reverse=not reverse) and len(set(costs)) > 2


@pytest.mark.parametrize("model", ["openai/gpt-x", "gpt-x", "google/gem", "mistral/large", "nobody/none"])
def test_model_filter_keeps_exactly_the_sessions_using_it(costly: Served, model: str) -> None:
    rows = _list_stats(costly.root)
    name = model.split("/")[-1]

    def uses(r: dict[str, Any]) -> bool:
        return any(m == model or m.split("/")[-1] == name for m in r["models"] or [])

    parents = {r["path"] for r in rows if r["subagent_of"] is None}
    expected = {r["path"] if r["subagent_of"] is None else r["subagent_of"] for r in rows if uses(r)}
    body = _api(costly, "model=" + model)
    got = {r["path"] for r in body["sessions"] if r["subagent_of"] is None}
    assert got == expected and got <= parents
    assert body["total"] == len(expected)
    if model == "mistral/large":  # only session 5's subagent used it: the parent is listed for it
        assert got == {str(costly.files["paths"][sid(5)])}


def test_model_filter_with_project_and_cost_sort(costly: Served) -> None:
    body = _api(costly, "model=openai/gpt-x&project=/home/u/proj1&sort=cost")
    ids = [r["id"] for r in body["sessions"] if r["subagent_of"] is None]
    # sessions 1, 4, 7, 10, 13 are in proj1; gpt-x is used by 1, 4 (twice), 7, 10, 13 (i % 3 == 1)
    assert set(ids) == {sid(i) for i in (1, 4, 7, 10, 13)}
    assert ids[0] == sid(4)  # 0.01 * 0 + 0.5: the most expensive


def test_figures_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "sessions"
    _build(root)
    catalog = Catalog(root)
    plain = catalog.page(Query(per_page=1000))
    assert plain.total == COUNT and not any(r.stats_known for r in plain.rows)
    cache = (tmp_path / "cache" / "omp-session" / "list-stats.json").read_text("utf-8")
    assert '"stats"' not in cache  # no session was read whole for a plain listing
    by_cost = catalog.page(Query(sort="cost", per_page=1000))
    assert all(r.stats_known for p in by_cost.rows for r in (p, *p.children))
    assert '"stats"' in (tmp_path / "cache" / "omp-session" / "list-stats.json").read_text("utf-8")


def test_page_with_cost_column(costly: Served) -> None:
    page = costly.get("/?sort=cost")
    assert page.status == 200
    assert "<th>Cost</th>" in page.text and 'class="num cost">$0.50<' in page.text
    assert 'id="f-model"' in page.text
    assert costly.get("/?sort=price").status == 400


def test_changed_file_is_computed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "sessions"
    files = _build(root)
    catalog = Catalog(root)
    first = catalog.page(Query(sort="cost", per_page=1000))
    assert first.stats_pending == 0 and first.rows[0].id == sid(4)
    path = files[sid(9)]
    with path.open("a") as f:
        f.write(json.dumps(entry("a9", "a1", timestamp=iso(9 * 60 + 9), message=assistant(
            "costly", provider="openai", model="gpt-x", usage=usage(cost=3.0)))) + "\n")
    again = catalog.page(Query(sort="cost", per_page=1000))
    assert again.stats_pending == 0 and again.rows[0].id == sid(9)
    assert [r.id for r in catalog.page(Query(model="gpt-x", per_page=1000)).rows if r.id == sid(9)] == [sid(9)]


def test_page_says_figures_are_still_being_computed() -> None:
    page = Page(rows=[], total=0, page=1, pages=1, projects=[], stats_pending=1234)
    text = pages.list_page(page, Query(sort="cost"), 0)
    assert 'id="stats-pending"' in text and "still being computed for 1234 session(s)" in text
    assert "sorted by those known" in text
    done = pages.list_page(Page(rows=[], total=0, page=1, pages=1, projects=[]), Query(sort="cost"), 0)
    assert "stats-pending" not in done
