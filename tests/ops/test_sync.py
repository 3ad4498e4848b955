"""omp-session sync: byte-identical, incremental, idempotent copies between any two stores;
conflicts reported, never overwritten."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from builders import ASSISTANT, user
from omp_session.cli import cli
from omp_session.format.blobs import MemoryBlobStore
from omp_session.ops.sync import sync_urls
from omp_session.paths import project_dir_name, sessions_dir
from omp_session.store import open_store, parse_store_url
from omp_session.write.manager import SessionManager
from stores.sqlutil import SQL_BACKENDS, drop_table, fresh_table, store_url

USER = user("hello ✓")
SERVERS = {"postgres", "mysql", "redis"}


def cases(*values: Any) -> list[Any]:
    """Parametrize values (tuples or single values); those naming a database server are marked ``db``."""
    params = []
    for value in values:
        args = value if isinstance(value, tuple) else (value,)
        params.append(pytest.param(*args, marks=pytest.mark.db if SERVERS & set(args) else ()))
    return params


@pytest.fixture
def tables() -> Iterator[list[tuple[str, str]]]:
    made: list[tuple[str, str]] = []
    yield made
    for kind, table in made:
        if kind == "redis":
            import redis

            client = redis.Redis.from_url("redis://127.0.0.1:6379/0")
            keys = list(client.scan_iter(match=f"{table}*", count=500))
            if keys:
                client.delete(*keys)
            client.close()
        else:
            drop_table(kind, table)


@pytest.fixture
def new_url(tmp_path: Path, tables: list[tuple[str, str]]) -> Any:
    """``new_url(kind)``: a fresh, empty store of that kind (file, sqlite, postgres, mysql)."""
    def make(kind: str) -> str:
        if kind == "file":
            d = tmp_path / f"files-{len(tables)}-{fresh_table()}"
            d.mkdir()
            return f"file:{d}"
        if kind == "redis":
            prefix = f"omp-test-{fresh_table()}:"
            tables.append(("redis", prefix))
            return f"redis://127.0.0.1:6379/0?prefix={prefix}"
        table = fresh_table()
        tables.append((kind, table))
        return store_url(kind, table, tmp_path / f"{table}.db")

    return make


def write_sessions(url: str, project: str, n: int) -> list[str]:
    paths = []
    root = parse_store_url(url).root
    for i in range(n):
        sm = SessionManager.create(project, root + project_dir_name(project), storage=url,
                                   blob_store=MemoryBlobStore())
        sm.append_message({**USER, "content": f"question {i}"})
        sm.append_message(ASSISTANT)
        path = sm.get_session_file()
        assert path is not None
        paths.append(path)
        sm.close()
    return paths


def contents(url: str) -> dict[str, bytes]:
    parsed = parse_store_url(url)
    store = open_store(parsed, create=False)
    try:
        return {f.path[len(parsed.root):]: store.read(f.path) for f in store.scan(parsed.root)}
    finally:
        store.close()


def grow(url: str, path: str, text: str = "more") -> None:
    sm = SessionManager.open(path, storage=url, blob_store=MemoryBlobStore())
    sm.append_message({**USER, "content": text})
    sm.close()


@pytest.mark.parametrize(("src", "dst"), cases(("file", "sqlite"), ("sqlite", "postgres"), ("postgres", "mysql"),
                                                ("mysql", "redis"), ("redis", "file"), ("file", "file")))
def test_a_copy_is_byte_identical_incremental_and_idempotent(src: str, dst: str, new_url: Any,
                                                            tmp_path: Path) -> None:
    a, b = new_url(src), new_url(dst)
    paths = write_sessions(a, str(tmp_path), 3)
    first = sync_urls(a, b)
    assert first.count("copied") == 3 and not first.conflicts
    assert contents(b) == contents(a)
    again = sync_urls(a, b)
    assert again.count("unchanged") == 3 and again.bytes_moved == 0
    before = contents(a)[paths[0][len(parse_store_url(a).root):]]
    grow(a, paths[0], "grown ✓")
    grown = sync_urls(a, b)
    after = contents(a)
    delta = len(after[paths[0][len(parse_store_url(a).root):]]) - len(before)
    assert grown.count("appended") == 1 and grown.count("unchanged") == 2
    assert grown.bytes_moved == delta  # only the appended bytes moved
    assert contents(b) == after


def test_a_title_change_moves_the_slot_and_the_new_entry(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("sqlite"), new_url("file")
    [path] = write_sessions(a, str(tmp_path), 1)
    sync_urls(a, b)
    sm = SessionManager.open(path, storage=a, blob_store=MemoryBlobStore())
    sm.set_session_name("Renamed ✓", "user")
    sm.close()
    report = sync_urls(a, b)
    assert [i.action for i in report.items] == ["titled"]
    assert contents(b) == contents(a)
    assert b'"title":"Renamed \xe2\x9c\x93"' in next(iter(contents(b).values()))[:256]


def test_a_session_changed_on_both_sides_is_a_conflict_left_alone(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("file"), new_url("sqlite")
    [path] = write_sessions(a, str(tmp_path), 1)
    sync_urls(a, b)
    grow(a, path, "on the source")
    target_path = parse_store_url(b).root + path[len(parse_store_url(a).root):]
    grow(b, target_path, "on the target")
    target_before = contents(b)
    report = sync_urls(a, b)
    assert [i.action for i in report.items] == ["conflict"]
    assert "both changed" in report.items[0].reason
    assert contents(b) == target_before
    # the CLI says so and exits 1
    result = CliRunner().invoke(cli, ["sync", "--from", a, "--to", b])
    assert result.exit_code == 1 and "conflict" in result.output and "both changed" in result.output


@pytest.mark.db
def test_a_target_that_changed_alone_is_kept_and_a_rewritten_source_replaces(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("file"), new_url("sqlite")
    [path] = write_sessions(a, str(tmp_path), 1)
    sync_urls(a, b)
    target_path = parse_store_url(b).root + path[len(parse_store_url(a).root):]
    grow(b, target_path, "only on the target")
    kept = contents(b)
    assert [i.action for i in sync_urls(a, b).items] == ["kept"]
    assert contents(b) == kept
    # the source rewritten (not a prefix any more) while the target is as the last sync left it
    c = new_url("postgres")
    sync_urls(a, c)
    body = Path(path).read_bytes()
    Path(path).write_bytes(body.replace(b"question 0", b"question X"))
    report = sync_urls(a, c)
    assert [i.action for i in report.items] == ["replaced"] and "rewritten" in report.items[0].reason
    assert contents(c) == contents(a)


def test_without_a_record_only_a_prefix_is_extended(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("file"), new_url("sqlite")
    paths = write_sessions(a, str(tmp_path), 2)
    sync_urls(a, b)
    for state in (Path(os.environ["XDG_CACHE_HOME"]) / "omp-session" / "sync").iterdir():
        state.unlink()  # the record is lost: contents decide
    grow(a, paths[0])
    target_path = parse_store_url(b).root + paths[1][len(parse_store_url(a).root):]
    grow(b, target_path, "target only")
    report = sync_urls(a, b)
    actions = {i.source: i.action for i in report.items}
    assert actions == {paths[0]: "appended", paths[1]: "conflict"}
    assert "no record" in report.conflicts[0].reason


def test_project_since_and_dry_run(new_url: Any, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    a, b = new_url("file"), new_url("sqlite")
    write_sessions(a, str(one), 2)
    write_sessions(a, str(two), 1)
    dry = sync_urls(a, b, dry_run=True)
    assert dry.count("copied") == 3 and dry.bytes_moved > 0
    assert not Path(parse_store_url(b).location).exists()  # nothing written, not even the table
    report = sync_urls(a, b, project=str(two))
    assert report.count("copied") == 1
    assert list(contents(b)) == [k for k in contents(a) if k.startswith(project_dir_name(str(two)) + "/")]
    assert sync_urls(a, b, since_ms=9e15).items == []


def test_a_dry_run_into_a_store_that_does_not_exist_yet_creates_nothing(new_url: Any, tmp_path: Path) -> None:
    a = new_url("file")
    write_sessions(a, str(tmp_path), 1)
    db = tmp_path / "later.db"
    report = sync_urls(a, f"sqlite:{db}", dry_run=True)
    assert report.count("copied") == 1 and not db.exists()


def test_keys_keep_their_path_below_each_root(new_url: Any, tmp_path: Path) -> None:
    a = new_url("file")
    b = store_url("sqlite", "t", tmp_path / "r.db") + "&root=/team/sessions"
    write_sessions(a, str(tmp_path), 1)
    sync_urls(a, b)
    store = open_store(b, create=False)
    [stored] = store.scan("/")
    store.close()
    assert stored.path.startswith("/team/sessions/" + project_dir_name(str(tmp_path)) + "/")


def test_the_cli_reports_json_and_refuses_bad_input(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("file"), new_url("sqlite")
    write_sessions(a, str(tmp_path), 2)
    runner = CliRunner()
    result = runner.invoke(cli, ["sync", "--from", a, "--to", b, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["counts"]["copied"] == 2 and data["bytes"] == sum(len(v) for v in contents(a).values())
    result = runner.invoke(cli, ["sync", "--from", a, "--to", b])
    assert result.exit_code == 0 and "2 unchanged" in result.output and "moved 0 bytes" in result.output
    result = runner.invoke(cli, ["sync", "--from", a, "--to", a])
    assert result.exit_code == 1 and "the source and the target are the same store" in result.output
    result = runner.invoke(cli, ["sync", "--from", "nope://x", "--to", b])
    assert result.exit_code == 1 and result.output.count("\n") == 1 and "is not a store URL" in result.output
    result = runner.invoke(cli, ["sync", "--from", a, "--to", "postgresql://postgres@127.0.0.1:1/test"])
    assert result.exit_code == 1 and "cannot connect" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("kind", cases(*SQL_BACKENDS))
def test_read_commands_take_a_store(kind: str, new_url: Any, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    url = new_url(kind)
    monkeypatch.chdir(tmp_path)
    [path] = write_sessions(url, str(tmp_path), 1)
    grow(url, path, "the last question")
    runner = CliRunner()
    session_id = path.rsplit("_", 1)[1][: -len(".jsonl")]
    listed = runner.invoke(cli, ["list", "--store", url, "--json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.output)
    assert row["path"] == path and row["id"] == session_id and row["messages"] == 3
    for args, expect in ((["show", "latest", "--json"], session_id), (["tree", session_id[:12]], "the last question"),
                         (["context", path], "the last question"), (["cat", "latest", "--whole-file"], "the last question"),
                         (["export", "latest", "--format", "md"], "the last question"),
                         (["validate"], "1 file(s) checked, no errors")):
        result = runner.invoke(cli, [*args, "--store", url])
        assert result.exit_code == 0, (args, result.output)
        assert expect in result.output, args
    cat = runner.invoke(cli, ["cat", "latest", "--whole-file", "--store", url])
    store = open_store(url, create=False)
    # every byte as stored, the title slot included (issue 15)
    assert cat.stdout_bytes == store.read(path)
    store.close()
    missing = runner.invoke(cli, ["show", "ffffffff", "--store", url])
    assert missing.exit_code == 1 and "no session matches" in missing.output


@pytest.mark.parametrize("command", [["show"], ["tail"], ["export", "--format", "html"]])
def test_a_key_naming_a_folder_of_a_file_store_is_one_line(command: list[str], new_url: Any) -> None:
    url = new_url("file")
    (Path(url[len("file:"):]) / "proj" / "x.jsonl").mkdir(parents=True)
    result = CliRunner().invoke(cli, [command[0], "proj/x.jsonl", *command[1:], "--store", url])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1 and "is a directory" in result.output and result.output.count("\n") == 1


def test_an_id_prefix_in_a_store_names_sessions_not_subagent_transcripts() -> None:
    from omp_session.cli._store import resolve_in_store
    from omp_session.errors import SessionNotFoundError
    from omp_session.store.base import MemoryStorage

    parsed = parse_store_url("sqlite:/x.db?root=/r")
    bucket = "/r/" + project_dir_name("/w") + "/"
    store = MemoryStorage()
    for key in (f"{bucket}2026-01-01T00-00-00-000Z_0197aa.jsonl", f"{bucket}2026-01-01T00-00-00-000Z_0197aa/0197b.jsonl",
                f"{bucket}2026-01-01T00-00-00-000Z_0197aa/Reviewer.jsonl", f"{bucket}.0197c.jsonl",
                "/r/-other/2026-01-02T00-00-00-000Z_0198aa/0198b.jsonl"):
        store.files[key] = bytearray(b'{"type":"session"}\n')
    # as among the files: a session directly in a bucket, never a transcript in its artifacts folder
    assert resolve_in_store("0197", parsed, store, cwd="/w") == f"{bucket}2026-01-01T00-00-00-000Z_0197aa.jsonl"
    for arg in ("rev", "0198"):
        with pytest.raises(SessionNotFoundError):
            resolve_in_store(arg, parsed, store, cwd="/w")


@pytest.mark.parametrize("args", [["show", "ffffffff"], ["tail", "ffffffff"], ["export", "x", "--format", "nope"],
                                  ["export", "ffffffff", "--format", "md"]])
def test_the_store_is_closed_when_the_command_fails(args: list[str], new_url: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from omp_session.store.sqlite import SqliteStorage

    url = new_url("sqlite")
    open_store(url).close()  # the table exists
    closed: list[bool] = []
    close = SqliteStorage.close
    monkeypatch.setattr(SqliteStorage, "close", lambda self: (closed.append(True), close(self))[1])
    result = CliRunner().invoke(cli, [*args, "--store", url])
    assert result.exit_code in (1, 2) and closed == [True]


def test_latest_in_a_store_breaks_an_mtime_tie_as_omp_does() -> None:
    from omp_session.cli._store import resolve_in_store
    from omp_session.store.base import MemoryStorage

    parsed = parse_store_url("sqlite:/x.db?root=/r")
    bucket = "/r/" + project_dir_name("/w") + "/"
    store = MemoryStorage()
    for day in ("01", "03", "02"):  # copied with their mtimes to the second: all alike
        key = f"{bucket}2026-01-{day}T00-00-00-000Z_0197{day}.jsonl"
        store.files[key] = bytearray(b'{"type":"session"}\n')
        store.mtimes[key] = 1_767_225_600_000.0
    assert resolve_in_store("latest", parsed, store, cwd="/w") == f"{bucket}2026-01-03T00-00-00-000Z_019703.jsonl"


def test_a_store_listing_shows_the_stored_mtime_to_the_millisecond() -> None:
    from omp_session.catalog.store_listing import store_session_info
    from omp_session.store.base import MemoryStorage

    store, key = MemoryStorage(), "/r/-w/2026-01-01T00-00-00-000Z_0197.jsonl"
    store.files[key] = bytearray((Path(__file__).resolve().parents[2] / "src" / "omp_session" / "samples"
                                  / "sample.jsonl").read_bytes())
    for ms in range(1_767_225_600_000, 1_767_225_600_020):  # the SQL stores give mtime_ms as a float
        store.mtimes[key] = float(ms)
        stored = store.stat(key)
        assert stored is not None
        info = store_session_info(store, stored)
        assert info is not None and info.modified == ms


def test_the_default_root_is_this_machines_sessions_dir() -> None:
    assert parse_store_url("sqlite:/tmp/x.db").root == str(sessions_dir()) + "/"


def test_a_writer_racing_the_sync_makes_a_conflict_not_a_loss() -> None:
    from omp_session.ops.sync import sync
    from omp_session.store.base import MemoryStorage

    class Racing(MemoryStorage):
        """A target another writer appends to between the sync's read and its write."""

        def replace(self, path: str, body: bytes, expected_size: int | None) -> None:
            if path in self.files:
                MemoryStorage.append(self, path, b'{"racer":1}\n')
            super().replace(path, body, expected_size)

    source, target = MemoryStorage(), Racing()
    source.files["/s/p/a.jsonl"] = bytearray(b'{"type":"session"}\n{"a":1}\n')
    target.files["/t/p/a.jsonl"] = bytearray(b'{"type":"session"}\n{"b":2}\n')
    # no record and a divergence: a conflict at once, nothing written
    report = sync(source, target, source_root="/s", target_root="/t")
    assert [i.action for i in report.items] == ["conflict"]
    # a target cut mid-line is replaced whole; the racer's append is then refused by the size check
    target.files["/t/p/a.jsonl"] = bytearray(b'{"type":"session"}\n{"a"')
    report = sync(source, target, source_root="/s", target_root="/t")
    assert [i.action for i in report.items] == ["conflict"] and "changed during the sync" in report.items[0].reason
    assert bytes(target.files["/t/p/a.jsonl"]) == b'{"type":"session"}\n{"a"\n{"racer":1}\n'


def test_a_body_the_target_cannot_hold_fails_alone(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("file"), new_url("sqlite")
    paths = write_sessions(a, str(tmp_path), 2)
    with open(paths[0], "ab") as f:
        f.write(b'{"type":"custom","bad":"\xff"}\n')  # not UTF-8: an SQL text column cannot hold it
    report = sync_urls(a, b)
    actions = {i.source: i.action for i in report.items}
    assert actions == {paths[0]: "failed", paths[1]: "copied"}
    assert "not UTF-8" in report.items[[i.source for i in report.items].index(paths[0])].reason
    result = CliRunner().invoke(cli, ["sync", "--from", a, "--to", b])
    assert result.exit_code == 1 and "failed" in result.output


def test_an_unreadable_or_vanishing_session_fails_alone() -> None:
    from omp_session.ops.sync import sync
    from omp_session.store.base import MemoryStorage

    class Unreadable(MemoryStorage):
        def read(self, path: str) -> bytes:
            if path.endswith("/a.jsonl"):
                raise PermissionError(13, "Permission denied", path)
            return super().read(path)

    class Vanishing(MemoryStorage):
        """A target session deleted between the sync's listing and its read."""

        def read(self, path: str) -> bytes:
            self.files.pop(path, None)
            return super().read(path)

    source = Unreadable()
    for name in ("a", "b"):
        source.files[f"/s/p/{name}.jsonl"] = bytearray(b'{"type":"session"}\n{"a":1}\n')
    target = Vanishing()
    target.files["/t/p/b.jsonl"] = bytearray(b'{"type":"session"}\n{"b":2}\n')
    report = sync(source, target, source_root="/s", target_root="/t")
    assert [(i.source, i.action) for i in report.items] == [("/s/p/a.jsonl", "failed"), ("/s/p/b.jsonl", "failed")]
    assert report.items[0].reason == "/s/p/a.jsonl: Permission denied"
    assert report.items[1].reason == "/t/p/b.jsonl: disappeared during the sync"


@pytest.mark.parametrize("text", ["[]", "null", '{"sessions": []}'])
def test_a_sync_record_of_another_shape_is_ignored(tmp_path: Path, text: str) -> None:
    from omp_session.ops.sync import SyncState

    path = tmp_path / "state.json"
    path.write_text(text)
    assert SyncState(path).records == {}


def test_two_syncs_at_once_never_append_the_same_entries_twice(tmp_path: Path) -> None:
    from omp_session.ops.sync import SyncState, sync
    from omp_session.store.base import MemoryStorage

    class Source(MemoryStorage):
        meanwhile: Any = None

        def read(self, path: str) -> bytes:
            run, self.meanwhile = self.meanwhile, None
            if run is not None:
                run()
            return super().read(path)

    source, target, record = Source(), MemoryStorage(), tmp_path / "state.json"
    source.files["/s/p/a.jsonl"] = bytearray(b'{"type":"session"}\n{"a":1}\n')
    assert sync(source, target, source_root="/s", target_root="/t", state=SyncState(record)).count("copied") == 1
    source.files["/s/p/a.jsonl"] += b'{"a":2}\n'
    # a second sync of the same pair runs between this one's listing and its append
    source.meanwhile = lambda: sync(source, target, source_root="/s", target_root="/t", state=SyncState(record))
    report = sync(source, target, source_root="/s", target_root="/t", state=SyncState(record))
    assert bytes(target.files["/t/p/a.jsonl"]) == bytes(source.files["/s/p/a.jsonl"])
    assert [i.action for i in report.items] == ["conflict"] and "changed during the sync" in report.items[0].reason


def test_a_key_that_climbs_out_of_the_root_is_not_copied(new_url: Any, tmp_path: Path) -> None:
    src = store_url("sqlite", "t", tmp_path / "shared.db") + "&root=/team/sessions"
    dst = new_url("file")
    store = open_store(src)
    body = (Path(__file__).resolve().parents[2] / "src" / "omp_session" / "samples" / "sample.jsonl").read_bytes()
    store.replace("/team/sessions/-p/ok.jsonl", body, None)
    assert [item.action for item in sync_urls(src, dst).items] == ["copied"]  # the bucket exists now
    store.replace("/team/sessions/-p/../escape.jsonl", body, None)
    store.close()
    report = sync_urls(src, dst)
    escaped = [item for item in report.items if item.source.endswith("escape.jsonl")]
    assert [(i.action, "is not copied" in i.reason) for i in escaped] == [("failed", True)]
    assert not list(tmp_path.rglob("escape.jsonl"))


# ----- modification times, --prefer, -q / -v (issue 15 item 13) -----------------------------------


def mtimes(url: str) -> dict[str, float]:
    parsed = parse_store_url(url)
    store = open_store(parsed, create=False)
    try:
        return {f.path[len(parsed.root):]: f.mtime_ms for f in store.scan(parsed.root)}
    finally:
        store.close()


def set_source_mtime(url: str, rel: str, mtime_ms: int) -> None:
    path = parse_store_url(url).root + rel
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


@pytest.mark.parametrize("dst", cases("file", "sqlite", "postgres", "mysql", "redis"))
def test_the_target_keeps_the_source_modification_times(dst: str, new_url: Any, tmp_path: Path) -> None:
    """Otherwise every synced session looks modified at sync time: newest-first and `latest` lose
    their meaning in the target."""
    a, b = new_url("file"), new_url(dst)
    write_sessions(a, str(tmp_path), 3)
    rels = sorted(contents(a))
    for k, rel in enumerate(rels):
        set_source_mtime(a, rel, 1_700_000_000_000 + k * 86_400_000)  # days apart, oldest first
    sync_urls(a, b)
    assert {r: int(m) for r, m in mtimes(b).items()} == {r: int(m) for r, m in mtimes(a).items()}
    # a session that grows takes its new source mtime; the listing's newest is the source's newest
    grow(a, parse_store_url(a).root + rels[0], "later")
    set_source_mtime(a, rels[0], 1_800_000_000_000)
    sync_urls(a, b)
    assert int(mtimes(b)[rels[0]]) == 1_800_000_000_000
    assert max(mtimes(b), key=lambda r: mtimes(b)[r]) == rels[0]


def test_a_second_sync_fixes_the_mtimes_an_earlier_version_left(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("file"), new_url("file")
    write_sessions(a, str(tmp_path), 1)
    [rel] = contents(a)
    sync_urls(a, b)
    set_source_mtime(b, rel, 1_750_000_000_000)  # as if stamped at sync time by an older version
    report = sync_urls(a, b)
    assert [i.action for i in report.items] == ["unchanged"]
    assert int(mtimes(b)[rel]) == int(mtimes(a)[rel])


def _conflict(new_url: Any, tmp_path: Path, dst: str = "file") -> tuple[str, str, str, str]:
    a, b = new_url("file"), new_url(dst)
    [path] = write_sessions(a, str(tmp_path), 1)
    sync_urls(a, b)
    grow(a, path, "on the source")
    target_path = parse_store_url(b).root + path[len(parse_store_url(a).root):]
    grow(b, target_path, "on the target")
    return a, b, path, target_path


def test_prefer_source_overwrites_says_so_and_keeps_a_backup_for_files(new_url: Any, tmp_path: Path) -> None:
    a, b, _, target_path = _conflict(new_url, tmp_path)
    before = Path(target_path).read_bytes()
    result = CliRunner().invoke(cli, ["sync", "--from", a, "--to", b, "--prefer", "source"])
    assert result.exit_code == 0, result.output
    assert contents(b) == contents(a)
    [backup] = [p for p in Path(target_path).parent.iterdir() if ".sync-backup-" in p.name]
    assert backup.read_bytes() == before and not backup.name.endswith(".jsonl")  # omp does not list it
    assert "overwrote" in result.output and str(backup) in result.output  # never silent, even without -v
    again = sync_urls(a, b)
    assert [i.action for i in again.items] == ["unchanged"]


@pytest.mark.db
def test_prefer_source_into_a_database_reports_what_it_overwrote(new_url: Any, tmp_path: Path) -> None:
    a, b, _, _ = _conflict(new_url, tmp_path, "sqlite")
    report = sync_urls(a, b, prefer="source")
    [item] = report.items
    assert item.action == "replaced" and "overwrote the target's version" in item.reason and "sha256" in item.reason
    assert contents(b) == contents(a)


def test_prefer_target_keeps_the_target_and_settles_the_conflict(new_url: Any, tmp_path: Path) -> None:
    a, b, _, _ = _conflict(new_url, tmp_path)
    target_before = contents(b)
    result = CliRunner().invoke(cli, ["sync", "--from", a, "--to", b, "--prefer", "target"])
    assert result.exit_code == 0, result.output
    assert contents(b) == target_before and "kept the target's version" in result.output
    assert [i.action for i in sync_urls(a, b).items] == ["unchanged"]


def test_one_summary_line_by_default_every_session_with_v_nothing_with_q(new_url: Any, tmp_path: Path) -> None:
    a, b = new_url("file"), new_url("file")
    write_sessions(a, str(tmp_path), 3)
    result = CliRunner().invoke(cli, ["sync", "--from", a, "--to", b, "--dry-run"])
    assert result.exit_code == 0 and result.output.splitlines() == [
        result.output.strip()] and "3 copied" in result.output
    result = CliRunner().invoke(cli, ["sync", "--from", a, "--to", b, "-v"])
    assert result.exit_code == 0 and len(result.output.splitlines()) == 4
    assert sum(line.startswith("copied ") for line in result.output.splitlines()) == 3
    result = CliRunner().invoke(cli, ["sync", "--from", a, "--to", b, "-q"])
    assert result.exit_code == 0 and result.output == ""


def test_latest_and_prefixes_in_every_project_of_a_store() -> None:
    from omp_session.cli._store import resolve_in_store
    from omp_session.store.base import MemoryStorage

    parsed = parse_store_url("sqlite:/x.db?root=/r")
    here = "/r/" + project_dir_name("/w") + "/"
    store = MemoryStorage()
    mine, theirs = f"{here}2026-01-01T00-00-00-000Z_0197aa.jsonl", "/r/-other/2026-01-02T00-00-00-000Z_0198aa.jsonl"
    for key in (mine, theirs, "/r/-other/2026-01-02T00-00-00-000Z_0198aa/sub.jsonl"):
        store.files[key] = bytearray(b'{"type":"session"}\n')
    store.mtimes.update({mine: 1000.0, theirs: 2000.0, "/r/-other/2026-01-02T00-00-00-000Z_0198aa/sub.jsonl": 3000.0})
    assert resolve_in_store("latest", parsed, store, cwd="/w") == mine
    # the newest session of any bucket; a subagent transcript in an artifacts folder is none
    assert resolve_in_store("latest", parsed, store, cwd="/w", every_project=True) == theirs
    assert resolve_in_store("0198", parsed, store, cwd="/w", every_project=True) == theirs
    assert resolve_in_store("0197", parsed, store, cwd="/w", every_project=True) == mine
