"""``HEAD`` answers with the headers alone: no session page is rendered for it (Starlette's
streaming response runs its body to the end for HEAD too, and the server then drops it), and
``blocks=`` on the costs API takes the usual spellings of off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from serve_corpus import sid

from conftest import Served
from omp_session.serve import viewer


def test_head_of_a_session_page_renders_no_piece(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[int] = []
    real = viewer.render_html_pieces

    def counting(*args: Any, **kwargs: Any) -> Iterator[bytes]:
        for piece in real(*args, **kwargs):
            taken.append(len(piece))
            yield piece

    monkeypatch.setattr(viewer, "render_html_pieces", counting)
    head = served.get(f"/s/{sid(1)}", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers["content-type"].startswith("text/html") and "content-security-policy" in head.headers
    assert taken == []
    got = served.get(f"/s/{sid(1)}")  # GET still renders it
    assert got.status == 200 and taken and sum(taken) <= len(got.body)


def test_head_of_a_missing_session_is_404(served: Served) -> None:
    assert served.get("/s/0197ffffffff-none", method="HEAD").status == 404


@pytest.mark.parametrize("off", ["0", "false", "no", "off", "False", ""])
def test_blocks_off_spelled_any_usual_way_is_off(served: Served, off: str) -> None:
    got = served.get(f"/api/costs?blocks={off}&by=model")
    assert got.status == 200, got.text
    assert got.json() == served.get("/api/costs?by=model").json()


@pytest.mark.parametrize("on", ["1", "true", "yes", "on"])
def test_blocks_on_spelled_any_usual_way_is_on(served: Served, on: str) -> None:
    spelled, canonical = (
        served.get(f"/api/costs?blocks={on}").json(),
        served.get("/api/costs?blocks=1").json(),
    )
    # the two answers are taken a moment apart: "now" may cross a second
    spelled.pop("now"), canonical.pop("now")
    assert spelled == canonical and spelled["blocks"]


def test_blocks_of_another_word_is_a_400(served: Served) -> None:
    got = served.get("/api/costs?blocks=maybe")
    assert got.status == 400 and "blocks=" in got.json()["error"]


def test_the_pager_keeps_the_page_size(served: Served) -> None:
    import html
    import re

    page = served.get("/?per_page=5").text
    [nxt] = re.findall(r'rel="next" href="([^"]+)"', page)
    assert "per_page=5" in html.unescape(nxt)
    second = served.get(html.unescape(nxt)).text
    assert 'id="count">30 session(s)' in second and "page 2 of 6" in second
    assert "per_page" not in "".join(re.findall(r'rel="next" href="([^"]+)"', served.get("/").text))
