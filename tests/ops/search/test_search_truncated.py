"""``search`` says when its limit cut the hits: ``SearchResult.truncated``, and one line on the
command's stderr (stdout stays the hits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders import run
from omp_session.cli import cli
from omp_session.ops.search.query import search


def _root(tmp_path: Path, sessions: int, per_session: int) -> Path:
    root = tmp_path / "sessions"
    bucket = root / "-w"
    bucket.mkdir(parents=True)
    for n in range(sessions):
        lines = [{"type": "session", "version": 3, "id": f"s{n}", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}]
        parent = None
        for k in range(per_session):
            lines.append({"type": "message", "id": f"u{k}", "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                          "message": {"role": "user", "content": f"the config number {k}", "timestamp": 1}})
            parent = f"u{k}"
        (bucket / f"2026-01-01T00-00-0{n}-000Z_s{n}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def test_the_result_says_whether_the_limit_cut_it(tmp_path: Path) -> None:
    root = _root(tmp_path, 3, 2)
    index = tmp_path / "i.sqlite"
    assert search("config", root=root, index_path=index, limit=6).truncated is False
    cut = search("config", root=root, index_path=index, limit=5)
    assert cut.truncated is True and len(cut.hits) == 5
    assert search("config", root=root, index_path=index, limit=None).truncated is False
    assert search("config", root=root, index_path=index, limit=3, sessions=True).truncated is False
    per_session = search("config", root=root, index_path=index, limit=2, sessions=True)
    assert per_session.truncated is True and len(per_session.hits) == 2


def test_the_command_says_it_on_stderr(tmp_path: Path) -> None:
    root = _root(tmp_path, 3, 2)
    common = ("--root", str(root), "--index", str(tmp_path / "i.sqlite"))
    code, out, err = run(cli, "search", "config", "--limit", "4", *common)
    assert code == 0, err
    assert "the first 4 hits shown, there are more" in err and "--sessions" in err
    assert "there are more" not in out and out.count("resume:") == 4
    code, out, err = run(cli, "search", "config", "--limit", "6", *common)
    assert code == 0 and "there are more" not in err
    code, out, err = run(cli, "search", "config", "--limit", "2", "--sessions", *common)
    assert "the first 2 sessions shown, there are more" in err
    code, out, err = run(cli, "search", "config", "--limit", "4", "--json", *common)
    assert len(json.loads(out)) == 4


def test_asking_whether_the_limit_cut_changes_no_hit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query matching at least RANK_CAP texts is answered from its newest matches, unless those
    leave fewer hits than the limit. Asking for one hit more than the limit moved that line: with
    exactly ``limit`` sessions among the newest matches, --sessions returned every match ranked by
    score instead of the newest hits. The hits are the ones the limit alone gives."""
    import omp_session.ops.search.query as q

    root = _root(tmp_path, 3, 4)
    index = tmp_path / "i.sqlite"
    search("config", root=root, index_path=index, limit=None)  # indexed before the cap is lowered
    monkeypatch.setattr(q, "RANK_CAP", 4)  # the 4 newest of 12 matches: the third session's
    got = search("config", root=root, index_path=index, limit=1, sessions=True, update=False)
    direct = q.SearchIndex(index)
    try:
        alone = q._query(direct, got.fts, role=None, cwd=None, since_ms=None, until_ms=None, session=None,
                         current_branch=False, thinking=False, limit=1, sessions=True)
    finally:
        direct.close()
    assert [(h.session_id, h.entry_id, h.score) for h in got.hits] == \
        [(h.session_id, h.entry_id, h.score) for h in alone]
    assert got.truncated is True


@pytest.mark.parametrize("how", [[], ["--session", "s"]], ids=["root", "session"])
def test_a_limit_past_64_bits_is_no_limit_not_a_traceback(tmp_path: Path, how: list[str]) -> None:
    # SQLite takes 64-bit integers: --limit 10**20 was an OverflowError (an IntegrityError with
    # --session) and a traceback
    root = _root(tmp_path, 3, 2)
    common = ["--root", str(root), "--index", str(tmp_path / "i.sqlite")]
    if how:
        common += ["--session", str(next((root / "-w").glob("*_s1.jsonl")))]
    code, out, err = run(cli, "search", "config", "--limit", str(10**20), "--json", *common)
    assert code == 0, err
    assert len(json.loads(out)) == (2 if how else 6) and "there are more" not in err
    result = search("config", root=root, index_path=tmp_path / "j.sqlite", limit=2**63)
    assert len(result.hits) == 6 and result.truncated is False
