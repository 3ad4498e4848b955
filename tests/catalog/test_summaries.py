"""list --stats: per-session statistics, their cache (incremental, invalidation, corruption), archives."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import builders
import omp_session
from builders import usage, user
from omp_session.catalog.summaries import CACHE_NAME, ListCache, compute_stats
from omp_session.cli import cli
from omp_session.errors import ContextError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.write.manager import SessionManager


def assistant(model: str, total: int = 10, cost: float = 0.1) -> dict[str, Any]:
    return builders.assistant("ok", api=None, provider="prov", model=model, usage=usage(total - 1, 1, cost))


USER = user()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never the real ~/.omp or ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def reference(path: Path) -> dict[str, Any]:
    """The same numbers from the library's full views, computed the slow, obvious way."""
    s = omp_session.open(path)
    entries = list(s.entries)
    models: list[str] = []
    for e in entries:
        m = e.get("message") if isinstance(e, dict) and e.get("type") == "message" else None
        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("model"), str):
            key = f"{m['provider']}/{m['model']}" if isinstance(m.get("provider"), str) else m["model"]
            if key in models:
                models.remove(key)
            models.append(key)
    pidx = s.parent_index
    referenced = {p for k, p in enumerate(pidx) if p >= 0 and p != k}
    try:
        totals: dict[str, Any] | None = s.get_usage_statistics()
    except ContextError:
        totals = None
    return {"entries": len(entries), "branches": len(entries) - len(referenced), "models": models,
            "messages": sum(1 for e in entries if isinstance(e, dict) and e.get("type") == "message"),
            "usage": totals}


def as_dict(path: Path) -> dict[str, Any]:
    st = compute_stats(path)
    return {"entries": st.entries, "branches": st.branches, "models": st.models, "messages": st.messages,
            "usage": st.usage}


def same(a: Any, b: Any) -> bool:
    # NaN totals (a usage field missing) compare equal to themselves here
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_stats_match_the_library_views_on_generated_sessions(make_corpus: Callable[[int, int], Path]) -> None:
    files = sorted(make_corpus(11, 60).rglob("*.jsonl"))
    assert files
    for path in files:
        assert same(as_dict(path), reference(path)), path


def make(cwd: Path, turns: int = 2) -> SessionManager:
    sm = SessionManager.create(str(cwd), blob_store=MemoryBlobStore())
    for i in range(turns):
        sm.append_message(USER)
        sm.append_message(assistant(f"m{i % 2}", 10 + i, 0.1 * (i + 1)))
    return sm


def test_appended_bytes_are_folded_in_incrementally(isolated: Path) -> None:
    sm = make(isolated, 3)
    path = sm.get_session_file() or ""
    sm.close()
    cache = ListCache()
    first = cache.stats(path)
    assert first is not None and first.models == ["prov/m1", "prov/m0"] and cache.counts["stats_reads"] == 1
    assert cache.save()
    # grow the file with omp's own writer: a new branch from the first user message, a new model
    sm = SessionManager.open(path, blob_store=MemoryBlobStore())
    first_user = sm.get_entries()[0]["id"]
    sm.branch(first_user)
    sm.append_message(assistant("m9", 100, 1.5))
    sm.append_message(USER)
    sm.close()
    cache = ListCache()
    grown = cache.stats(path)
    assert cache.counts == {**cache.counts, "stats_appends": 1, "stats_reads": 0}
    assert grown is not None and same(as_dict(Path(path)), {"entries": grown.entries, "branches": grown.branches,
                                                            "models": grown.models, "messages": grown.messages,
                                                            "usage": grown.usage})
    assert grown.branches == 2 and grown.models[-1] == "prov/m9" and same(reference(Path(path))["usage"], grown.usage)
    cache.save()
    again = ListCache()
    assert again.stats(path) == grown and again.counts["stats_hits"] == 1


def test_rewrite_and_truncation_invalidate(isolated: Path) -> None:
    sm = make(isolated, 3)
    path = Path(sm.get_session_file() or "")
    sm.close()
    cache = ListCache()
    assert cache.stats(str(path)) is not None
    cache.save()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]))  # truncated: same inode, smaller
    cache = ListCache()
    shrunk = cache.stats(str(path))
    assert cache.counts["stats_reads"] == 1 and shrunk is not None and shrunk.entries == reference(path)["entries"]
    cache.save()
    # rewritten in place, larger, but the bytes before the old end changed: not an append
    text = b"".join(lines).replace(b'"m0"', b'"mX"')
    path.write_bytes(text)
    cache = ListCache()
    rewritten = cache.stats(str(path))
    assert cache.counts["stats_reads"] == 1 and rewritten is not None and "prov/mX" in rewritten.models
    cache.save()
    # replaced by another file (new inode) with extra lines
    tmp = path.with_suffix(".tmp")
    shutil.copyfile(path, tmp)
    with open(tmp, "ab") as f:
        f.write(lines[-1])
    os.replace(tmp, path)
    cache = ListCache()
    replaced = cache.stats(str(path))
    assert cache.counts["stats_reads"] == 1 and replaced is not None
    assert same(as_dict(path)["usage"], replaced.usage)


def test_a_corrupt_or_foreign_cache_is_ignored(isolated: Path, tmp_path: Path) -> None:
    sm = make(isolated)
    path = sm.get_session_file() or ""
    sm.close()
    cache_file = tmp_path / "xdg-cache" / "omp-session" / CACHE_NAME
    cache = ListCache()
    good = cache.stats(path)
    cache.save()
    assert cache_file.is_file()
    for junk in (b"{not json", b"[]", json.dumps({"version": 1, "files": {path: {"stats": {"key": "x"}}}}).encode(),
                 json.dumps({"version": 1, "files": {path: {"key": 5, "info": 3, "stats": []}}}).encode()):
        cache_file.write_bytes(junk)
        cache = ListCache()
        assert cache.stats(path) == good and cache.info(path) is not None
        assert cache.save()
    # a lying entry with the right key is not something we guard against; a damaged one is
    data = json.loads(cache_file.read_bytes())
    data["files"][path]["stats"]["stats"] = {"entries": "many"}
    cache_file.write_bytes(json.dumps(data).encode())
    assert ListCache().stats(path) == good
    # --no-cache neither reads nor writes
    cache_file.unlink()
    off = ListCache(enabled=False)
    assert off.stats(path) == good and off.save() and not cache_file.exists()


def test_archived_sessions_are_listed_and_counted(isolated: Path) -> None:
    sm = make(isolated, 2)
    sm.set_session_name("Archived one", "user")
    path = Path(sm.get_session_file() or "")
    sm.close()
    live = make(isolated, 1)
    live.close()
    archive = path.with_name(path.name + ".gz")
    archive.write_bytes(gzip.compress(path.read_bytes()))
    expected = as_dict(path)
    path.unlink()
    result = CliRunner().invoke(cli, ["list", "--jsonl", "--stats"])
    assert result.exit_code == 0, result.output
    rows = {r["path"]: r for r in map(json.loads, result.stdout.splitlines())}
    row = rows[str(archive)]
    assert row["archived"] is True and row["title"] == "Archived one" and row["size"] == archive.stat().st_size
    assert row["entries"] == expected["entries"] and row["cost"] == expected["usage"]["cost"]
    assert "archived" not in rows[live.get_session_file() or ""]


def test_cli_stats_fields(isolated: Path, tmp_path: Path) -> None:
    sm = make(isolated, 2)
    path = sm.get_session_file() or ""
    sm.close()
    runner = CliRunner()
    plain = runner.invoke(cli, ["list", "--jsonl"])
    assert plain.exit_code == 0 and "entries" not in json.loads(plain.stdout.splitlines()[0])
    for args in (["list", "--stats", "--jsonl"], ["list", "--stats", "--jsonl", "--no-cache"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, result.output
        (row,) = map(json.loads, result.stdout.splitlines())
        assert {"entries", "branches", "models", "cost", "tokens"} <= set(row)
        ref = reference(Path(path))
        assert (row["entries"], row["messages"], row["branches"], row["models"]) == (
            ref["entries"], ref["messages"], ref["branches"], ref["models"])
        assert row["cost"] == ref["usage"]["cost"] and row["tokens"] == ref["usage"]["totalTokens"]
    assert (tmp_path / "xdg-cache" / "omp-session" / CACHE_NAME).is_file()
    table = runner.invoke(cli, ["list", "--stats", "--sort", "cost"])
    assert table.exit_code == 0 and "hello" in table.stdout
    assert runner.invoke(cli, ["list", "--sort", "cost"]).exit_code == 0  # --sort cost turns on --stats


def test_a_damaged_ids_file_or_cached_usage_is_read_again_not_a_traceback(isolated: Path, tmp_path: Path) -> None:
    sm = make(isolated)
    path = sm.get_session_file() or ""
    sm.close()
    cache_file = tmp_path / "xdg-cache" / "omp-session" / CACHE_NAME
    for damage in ("ids", "usage-list", "usage-dict", "usage-list-unchanged"):
        cache = ListCache()
        assert cache.stats(path) is not None and cache.save()
        data = json.loads(cache_file.read_bytes())
        rec = data["files"][path]["stats"]
        if damage == "ids":
            Path(rec["ids_file"]).write_bytes(b"[]")  # valid JSON, not the document we wrote
        else:
            rec["stats"]["usage"] = {"cost": 1} if damage == "usage-dict" else []
            cache_file.write_bytes(json.dumps(data).encode())
        if damage != "usage-list-unchanged":  # grown: the cached record would be folded into
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"type": "custom", "id": f"x-{damage}", "parentId": None, "customType": "k"})
                        + "\n")
        cache = ListCache()
        assert cache.stats(path) == compute_stats(path) and cache.counts["stats_reads"] == 1
        assert cache.save()
