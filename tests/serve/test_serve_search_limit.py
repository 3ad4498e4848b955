"""When the limit cut the results, the search page says so and links to more and to one hit per
session; ``/api/search`` says it in ``X-Search-Truncated`` (and ``truncated`` with ``meta=1``)."""

from __future__ import annotations

from conftest import COUNT, Served
from omp_session.ops.search.query import search


def test_the_page_says_when_the_limit_cut_the_results(served: Served) -> None:
    everything = search("about", root=served.root, limit=None).hits
    assert len(everything) > 5
    page = served.get("/search?q=about&limit=5").text
    assert "5 match(es) in" not in page
    assert "first 5 matches shown" in page
    assert 'href="/search?q=about&amp;limit=10"' in page  # more
    assert 'href="/search?q=about&amp;sessions=1"' in page  # one hit per session
    whole = served.get(f"/search?q=about&limit={len(everything)}").text
    assert "first " not in whole and f"{len(everything)} match(es) in" in whole


def test_the_page_keeps_role_and_sessions_in_its_links(served: Served) -> None:
    page = served.get("/search?q=about&limit=3&sessions=1&role=user").text
    assert "first 3 sessions shown" in page
    assert 'href="/search?q=about&amp;role=user&amp;sessions=1&amp;limit=6"' in page


def test_the_api_says_whether_it_was_truncated(served: Served) -> None:
    cut = served.get("/api/search?q=about&limit=2")
    assert len(cut.json()) == 2 and cut.headers["x-search-truncated"] == "true"
    whole = served.get("/api/search?q=about&sessions=1&limit=500")
    assert len(whole.json()) == COUNT - 1 and whole.headers["x-search-truncated"] == "false"
    meta = served.get("/api/search?q=about&limit=2&meta=1").json()
    assert meta["truncated"] is True and meta["limit"] == 2 and meta["hits"] == cut.json()
    assert served.get("/api/search?q=about&sessions=1&limit=500&meta=1").json()["truncated"] is False
