"""``search --store`` finds what the file search finds, on the same sessions; ``sync --to`` keeps a
store's search tables up to date; ``index --store`` makes them (docs/team.md)."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from builders import assistant, entry, header, run, user, write_session
from omp_session.catalog.derived import default_namespace, refresh_url
from omp_session.cli.search import index_command, search_command
from omp_session.errors import QueryError
from omp_session.ops.search.query import search
from omp_session.ops.sync import sync_urls
from omp_session.store.derived import open_derived
from omp_session.store.derived.query import search_derived
from omp_session.store.url import parse_store_url
from stores.sqlutil import POSTGRES_URL
from stores.teamutil import drop_derived, team_url

ROOT = "/team/sessions/"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    table = f"t_{uuid.uuid4().hex[:16]}"
    base = f"sqlite:{tmp_path / 'team.db'}" if request.param == "sqlite" else POSTGRES_URL
    yield f"{base}?table={table}&root={ROOT}"
    if request.param == "postgres":  # only what this test made: omp's table and our three
        drop_derived(table)


def _sessions(root: Path, count: int, seed: int) -> None:
    rnd = random.Random(seed)
    for s in range(count):
        records = []
        parent = None
        for n in range(rnd.randint(1, 6)):
            words = " ".join(rnd.sample(WORDS, 2))
            msg = user(f"common {words}") if n % 2 == 0 else assistant(f"reply {words}")
            records.append(entry(f"e{n}", parent, timestamp=f"2026-01-0{1 + s % 9}T00:00:0{n}.000Z", message=msg))
            parent = f"e{n}"
        project = f"/work/p{s % 3}"
        write_session(root / f"--work-p{s % 3}--" / f"2026-01-01T00-00-{s:02d}-000Z_s{s}.jsonl", records,
                      head=header(f"s{s}", cwd=project), slot=f"session {s} {WORDS[s % len(WORDS)]}")


def _found(paths: Iterable[str], root: str) -> set[str]:
    return {p[len(root):] for p in paths}


def test_the_store_finds_what_the_files_do(url: str, tmp_path: Path) -> None:
    files = tmp_path / "sessions"
    _sessions(files, 24, seed=7)
    assert refresh_url(url) is not None  # the tables, once: sync keeps them from now on
    report = sync_urls(f"file:{files}", url, use_state=False)
    assert report.count("copied") == 24
    assert report.derived is not None and report.derived["added"] == 24
    index = tmp_path / "search.sqlite"
    parsed = parse_store_url(url)
    with open_derived(parsed) as tables:
        for word in [*WORDS, "common", "reply", "session"]:
            for role, roles in ((None, None), ("assistant", ("assistant",))):
                on_files = search(word, index_path=index, root=files, role=role, limit=1000, sessions=True).hits
                in_store = search_derived(tables, word, root=ROOT, fts5=f'"{word}"', roles=roles, limit=1000,
                                          sessions=True)
                assert _found((h.key for h in in_store), ROOT) == _found((h.path for h in on_files), f"{files}/"), \
                    (word, role)
                assert on_files or role is not None
        project = search("common", index_path=index, root=files, cwd="/work/p1", limit=1000, sessions=True).hits
        stored = search_derived(tables, "common", root=ROOT, fts5='"common"', cwd="/work/p1", limit=1000,
                                sessions=True)
        assert _found((h.key for h in stored), ROOT) == _found((h.path for h in project), f"{files}/")
        assert len(stored) == 8


def test_search_json_has_the_file_search_s_shape(url: str, tmp_path: Path) -> None:
    files = tmp_path / "sessions"
    _sessions(files, 6, seed=3)
    code, out, err = run(index_command, "--store", url, "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == 0  # the store is still empty
    sync_urls(f"file:{files}", url, use_state=False)
    code, out, err = run(search_command, "common", "--store", url, "--json", "--limit", "3")
    assert code == 0, err
    stored = json.loads(out)
    code, out, err = run(search_command, "common", "--root", str(files), "--index", str(tmp_path / "ix.sqlite"),
                         "--json", "--limit", "3")
    assert code == 0, err
    on_files = json.loads(out)
    assert len(stored) == len(on_files) == 3
    assert [list(h) for h in stored] == [list(h) for h in on_files]
    hit = stored[0]
    assert hit["path"].startswith(ROOT) and hit["kind"] == "text" and "[common]" in hit["snippet"]
    assert hit["resume"] == f"omp --resume {hit['session_id']}" and hit["score"] < 0


def test_sync_records_the_namespace_and_follows_appends(url: str, tmp_path: Path) -> None:
    files = tmp_path / "sessions"
    _sessions(files, 2, seed=1)
    code, _out, err = run(index_command, "--store", url)
    assert code == 0, err
    sync_urls(f"file:{files}", url, use_state=False)
    path = sorted(files.rglob("*.jsonl"))[0]
    added = (json.dumps(entry("z1", "e0", message=user("kilo lima"))) + "\n").encode()
    with path.open("ab") as f:
        f.write(added)
    report = sync_urls(f"file:{files}", url, use_state=False)
    assert report.count("appended") == 1
    assert report.derived is not None and report.derived["grown"] == 1 and report.derived["bytes_read"] == len(added) + 64
    with open_derived(url) as tables:
        n = tables.names
        spaces = {r[0] for r in tables.rows(f"SELECT namespace FROM {n.sessions}")}
        (hits,) = tables.rows(f"SELECT count(*) FROM {n.entries} WHERE text = 'kilo lima'")
    assert spaces == {default_namespace()} and hits == (1,)


def test_usage_errors_and_a_store_without_tables(url: str, tmp_path: Path) -> None:
    files = tmp_path / "sessions"
    _sessions(files, 1, seed=1)
    sync_urls(f"file:{files}", url, use_state=False)  # no search tables: sync makes none
    with open_derived(url) as tables:
        assert not tables.exists()
    code, _out, err = run(search_command, "alpha", "--store", url)
    assert code == 1 and "search --store needs the search tables, and there are none yet: run omp-session index " \
        "--store URL" in err
    code, _out, err = run(search_command, "alpha", "--store", url, "--current-branch")
    assert code == 2 and "--current-branch applies to the file index, not with --store" in err
    code, _out, err = run(index_command, "--store", "redis://127.0.0.1:6379/0")
    assert code == 1 and "not supported: use PostgreSQL or SQLite for team search" in err


def test_words_inside_code_identifiers(url: str, tmp_path: Path) -> None:
    """PostgreSQL's parser keeps ``omp_session.store`` as one token; the file search sees three
    words: the store splits them too, in the text and in the query."""
    files = tmp_path / "sessions"
    write_session(files / "--w--" / "2026-01-01T00-00-00-000Z_s.jsonl",
                  [entry("a", None, message=user("edit omp_session.store and src/cli/x.py for user@example.com"))],
                  head=header("s", cwd="/w"))
    refresh_url(url)
    sync_urls(f"file:{files}", url, use_state=False)
    with open_derived(url) as tables:
        for query in ("store", "session", "cli", "py", "example", "omp_session.store", "src/cli/x.py"):
            hits = search_derived(tables, query, root=ROOT, fts5=f'"{query}"', limit=5)
            on_files = search(query, index_path=tmp_path / "ix.sqlite", root=files, limit=5).hits
            assert [h.entry_id for h in hits] == [h.entry_id for h in on_files] == ["a"], query


def test_hits_kept_past_the_first_ranks_get_their_snippets_too(url: str, tmp_path: Path) -> None:
    # PostgreSQL cuts the snippets of the first `limit` ranks in the search's own statement; one
    # session holding the best ranks (one hit per session) keeps hits from further down, whose
    # snippets a second statement cuts: every hit shown has its snippet, as the files' search does
    files = tmp_path / "sessions"
    many = [entry(f"e{n}", f"e{n - 1}" if n else None, timestamp=f"2026-01-01T00:00:{n:02d}.000Z",
                  message=user("walrus walrus walrus walrus")) for n in range(12)]
    write_session(files / "--work-a--" / "2026-01-01T00-00-00-000Z_a.jsonl", many, head=header("a", cwd="/work/a"))
    for s in range(3):
        write_session(files / "--work-b--" / f"2026-01-01T00-00-0{s + 1}-000Z_b{s}.jsonl",
                      [entry("e0", None, message=user(f"one walrus among other words {s}"))],
                      head=header(f"b{s}", cwd="/work/b"))
    assert refresh_url(url) is not None
    sync_urls(f"file:{files}", url, use_state=False)
    with open_derived(parse_store_url(url)) as tables:
        hits = search_derived(tables, "walrus", root=ROOT, fts5='"walrus"', limit=3, sessions=True)
        assert len({h.key for h in hits}) == 3
        assert all("\x02walrus\x03" in h.snippet for h in hits), [h.snippet for h in hits]
        every = search_derived(tables, "walrus", root=ROOT, fts5='"walrus"', limit=4)
        assert len(every) == 4 and all("\x02walrus\x03" in h.snippet for h in every)


def test_a_query_of_no_words_is_refused_not_searched(tmp_path: Path) -> None:
    # PostgreSQL learns that the query had no words only when it matched nothing: then it is said
    with team_url("postgres", tmp_path, ROOT) as url:
        files = tmp_path / "sessions"
        _sessions(files, 3, seed=1)
        assert refresh_url(url) is not None
        sync_urls(f"file:{files}", url, use_state=False)
        with open_derived(parse_store_url(url)) as tables:
            with pytest.raises(QueryError, match="nothing to search for"):
                search_derived(tables, "!!! ...", root=ROOT)
            assert search_derived(tables, "zzqqxx", root=ROOT) == []
