"""``_clip`` looks at a prefix of a long text (the same line as collapsing the whole text), and
``context`` keeps one row per message at the terminal's width."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from pytest import MonkeyPatch

from omp_session.cli._render import _clip

pieces = st.sampled_from(["a", "word", " ", "  ", "\n", "\t\t", " " * 300, "x" * 90, "é", "\u3000", "\x1c"])


@settings(max_examples=500, deadline=None)
@given(st.lists(pieces, max_size=60).map("".join), st.integers(1, 100))
def test_clip_is_the_whole_text_collapsed_and_cut(text: str, width: int) -> None:
    whole = " ".join(text.split())
    want = whole if len(whole) <= width else whole[: width - 1] + "…"
    assert _clip(text, width) == want


def test_context_keeps_one_row_per_message_at_the_terminals_width(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    from functools import partial

    import builders
    from builders import assistant, entry, header, jsonl, stamp, user
    from omp_session.cli import cli
    from omp_session.cli._style import width

    long = "word " * 60 + "世界 " * 40
    records = [header("s1", cwd="/p"), entry("a0000001", None, timestamp=stamp(1), message=user(long)),
               entry("a0000002", "a0000001", timestamp=stamp(2), message=assistant(long))]
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(records), encoding="utf-8")
    run = partial(builders.run, cli)
    for cells in (60, 80, 200):
        monkeypatch.setenv("COLUMNS", str(cells))
        _, out, _ = run("context", str(path))
        rows = out.splitlines()[1:]
        assert len(rows) == 2 and all(width(r) <= cells for r in rows), (cells, rows)
        assert all(r.endswith("…") for r in rows)
    monkeypatch.delenv("COLUMNS")
    _, out, _ = run("context", str(path))  # not a terminal: the 100-character cut as before
    assert all(len(r.split(": ", 1)[1]) == 100 for r in out.splitlines()[1:])
