"""The second QA pass of `omp-session serve` over HTTP: whole token counts print without ".0",
every 404 is the styled page (JSON under /api/), and since > until or per_page=0 is a 400
everywhere. Each test failed before its fix."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from builders import assistant, entry, header, usage, user, write_session
from conftest import Served
from omp_session.paths import project_dir_name
from omp_session.serve.app import start

DAY_MS = 86_400_000
BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _half(input: float, output: float, cost: float) -> dict[str, Any]:
    """``usage()`` with counts that are not whole (an imported session's)."""
    return {**usage(cost=cost), "input": input, "output": output, "totalTokens": input + output}


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One session of imported usage counted in halves: 1.5 + 1.5 tokens on 1 January, 1.25 on the 2nd."""
    base = tmp_path_factory.mktemp("qa2")
    root = base / "sessions"
    cwd = "/home/u/halves"
    es = [entry("u1", None, message=user("count in halves")),
          entry("a1", "u1", message=assistant("one", usage=_half(1.5, 1.5, 0.25),
                                              timestamp=BASE_MS + 3_600_000)),
          entry("a2", "a1", message=assistant("two", usage=_half(1.25, 0, 0.5),
                                              timestamp=BASE_MS + DAY_MS + 3_600_000))]
    write_session(root / project_dir_name(cwd) / "2026-01-01T00-00-00-000Z_halves.jsonl", es,
                  head=header("halves", cwd=cwd))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        mp.setenv("PI_CODING_AGENT_DIR", str(base / "agent"))
        with start(root) as running:
            yield Served(root, {}, running)


def _billed_tokens(page: str) -> str:
    found = re.search(r'<dd id="billed-tokens">([^<]*)</dd>', page)
    assert found is not None
    return found.group(1)


def test_a_whole_token_count_prints_without_a_decimal(halves: Served) -> None:
    r = halves.get("/costs?tz=UTC&since=2026-01-01&until=2026-01-01")
    assert r.status == 200
    assert _billed_tokens(r.text) == "3"  # 1.5 + 1.5, was "3.0"
    r = halves.get("/costs?tz=UTC&since=2026-01-01&until=2026-01-02")
    assert _billed_tokens(r.text) == "4.25"  # not a whole number: its decimals kept


def test_an_unknown_url_is_the_styled_404(served: Served) -> None:
    r = served.get("/nope")
    assert r.status == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "404 · omp-session" in r.text and 'href="/static/serve.css"' in r.text
    # the API's unknown addresses answer JSON, as its errors do
    r = served.get("/api/nope")
    assert r.status == 404 and r.headers["content-type"] == "application/json" and "error" in r.json()
    r = served.get("/nope", headers={"Accept": "application/json"})
    assert r.status == 404 and "error" in r.json()


@pytest.mark.parametrize("path", ["/", "/api/sessions", "/costs", "/api/costs"])
def test_since_after_until_is_a_400_everywhere(served: Served, path: str) -> None:
    r = served.get(f"{path}?since=2026-06-01&until=2026-05-01")
    assert r.status == 400, r.text


def test_the_same_day_for_since_and_until_is_that_day(served: Served) -> None:
    assert served.get("/api/sessions?since=2026-01-01&until=2026-01-01").status == 200


@pytest.mark.parametrize("query", ["page=0", "per_page=0", "per_page=-3"])
def test_a_page_or_page_size_below_one_is_a_400(served: Served, query: str) -> None:
    r = served.get(f"/api/sessions?{query}")
    assert r.status == 400 and "error" in r.json()
    assert served.get(f"/?{query}").status == 400


def test_a_page_size_above_the_most_is_still_cut_to_it(served: Served) -> None:
    r = served.get("/api/sessions?per_page=1000000")
    assert r.status == 200 and r.json()["per_page"] == 100_000


