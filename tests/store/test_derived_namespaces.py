"""Many people, one database: ``sync --namespace`` records where sessions came from, ``search
--store --user/--machine`` filters by it, and row-level security (store/derived/rls.sql) keeps two
people's transcripts apart (docs/team.md)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from builders import assistant, entry, header, run, stamp, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.cli import cli
from omp_session.cli.search import search_command
from omp_session.cli.sync import sync as sync_command
from omp_session.ops.sync import sync_urls
from omp_session.store.derived import derived_names, open_derived
from omp_session.store.derived.namespace import split_namespace
from omp_session.store.derived.query import search_derived
from omp_session.store.derived.rls import apply_rls
from stores.sqlutil import POSTGRES_URL
from stores.teamutil import as_role, drop_derived, pg_roles, team_url


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with team_url(request.param, tmp_path) as made:
        yield made


def _machine(folder: Path, owner: str, count: int) -> None:
    """``count`` sessions mentioning ``shared`` and the owner's own word."""
    for s in range(count):
        records = [entry("e0", None, message=user(f"shared question from {owner} {s}")),
                   entry("e1", "e0", message=assistant(f"shared answer for {owner}"))]
        write_session(folder / "--work-p--" / f"2026-01-01T00-00-0{s}-000Z_{owner}{s}.jsonl", records,
                      head=header(f"{owner}{s}", cwd="/work/p"))


def _owners(hits: Any) -> set[str]:
    return {re.sub(r"\d+\.jsonl$", "", h.key.rsplit("_", 1)[1]) for h in hits}


def test_split_namespace() -> None:
    assert split_namespace("alice@laptop") == ("alice", "laptop")
    assert split_namespace("carol@example.org@desk") == ("carol@example.org", "desk")
    assert split_namespace("robot") == ("robot", None)


def test_sync_namespace_and_the_user_host_filters(url: str, tmp_path: Path) -> None:
    spaces = {"alice": "alice@laptop", "bob": "bob@laptop", "carol": "carol@example.org@desk", "dave": "dave"}
    assert refresh_url(url) is not None
    for owner, ns in spaces.items():
        _machine(tmp_path / owner, owner, 2)
        report = sync_urls(f"file:{tmp_path / owner}", url, use_state=False, namespace=ns)
        assert report.derived is not None and report.derived["added"] == 2, report.derived
    with open_derived(url) as tables:
        stored = dict(tables.rows(f"SELECT key, namespace FROM {tables.names.sessions}"))
        assert {k.rsplit("_", 1)[1][:-6]: v for k, v in stored.items()} == \
            {f"{o}{s}": ns for o, ns in spaces.items() for s in range(2)}

        def found(**filters: str) -> set[str]:
            fts5 = '"shared"' if tables.dialect == "sqlite" else None
            return _owners(search_derived(tables, "shared", fts5=fts5, limit=100, **filters))

        assert found() == set(spaces)
        assert found(user="alice") == {"alice"}
        assert found(host="laptop") == {"alice", "bob"}
        assert found(user="bob", host="laptop") == {"bob"}
        assert found(user="bob", host="desk") == set()
        assert found(user="carol@example.org") == {"carol"}  # the user is before the last @
        assert found(user="carol") == set()
        assert found(host="example.org@desk") == set()
        assert found(user="dave") == {"dave"}  # no @: all user, no host
        assert found(host="dave") == set()
        assert found(user="ali") == set() and found(host="top") == set()  # whole parts, not prefixes
    # a rebuild derives the bytes again: where the sessions came from is kept
    assert refresh_url(url, rebuild=True) is not None
    with open_derived(url) as tables:
        assert dict(tables.rows(f"SELECT key, namespace FROM {tables.names.sessions}")) == stored
    # the same through the command line
    runner = CliRunner()
    result = runner.invoke(search_command, ["shared", "--store", url, "--user", "bob", "--json"])
    assert result.exit_code == 0, result.output
    assert '"bob0"' in result.output and "alice" not in result.output


def test_namespace_flags_are_checked(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(search_command, ["word", "--user", "alice"])
    assert result.exit_code == 2 and "--user filters a store's sessions: it needs --store URL" in result.output
    result = runner.invoke(search_command, ["word", "--store", f"sqlite:{tmp_path / 'x.db'}", "--machine", ""])
    assert result.exit_code == 2 and "--machine: the host is empty" in result.output
    result = runner.invoke(sync_command, ["--from", f"file:{tmp_path}", "--to", f"file:{tmp_path / 'b'}",
                                          "--namespace", "bad\nname"])
    assert result.exit_code == 2 and "--namespace: the namespace 'bad\\nname' holds a control character" \
        in result.output
    # a namespace whose user or host is empty could never be picked by --user or --machine
    for value, why in (("@laptop", "has no user before its @"), ("alice@", "has no host after its @")):
        result = runner.invoke(sync_command, ["--from", f"file:{tmp_path}", "--to", f"file:{tmp_path / 'b'}",
                                              "--namespace", value])
        assert result.exit_code == 2 and f"--namespace: the namespace {value!r} {why}" in result.output, \
            result.output
        assert not (tmp_path / "b").exists()


def test_sync_default_namespace_is_user_at_host(url: str, tmp_path: Path) -> None:
    from omp_session.catalog.derived import default_namespace

    _machine(tmp_path / "me", "me", 1)
    assert refresh_url(url) is not None
    result = CliRunner().invoke(sync_command, ["--from", f"file:{tmp_path / 'me'}", "--to", url, "-q"])
    assert result.exit_code == 0, result.output
    with open_derived(url) as tables:
        assert [r[0] for r in tables.rows(f"SELECT namespace FROM {tables.names.sessions}")] == [default_namespace()]


# ----- row-level security: two roles on a copy of the tables -----------------------------------------


@pytest.fixture
def roles() -> Iterator[tuple[str, str, str]]:
    """A group role and two members that may log in (the server trusts 127.0.0.1), dropped after."""
    tag = uuid.uuid4().hex[:10]
    team, alice, bob = f"omp_rls_{tag}_team", f"omp_rls_{tag}_alice", f"omp_rls_{tag}_bob"
    with pg_roles(alice, bob, group=team):
        yield team, alice, bob


_as = as_role


def test_row_level_security_keeps_two_people_apart(roles: tuple[str, str, str], tmp_path: Path) -> None:
    team, alice, bob = roles
    table = f"t_{uuid.uuid4().hex[:16]}"
    roots = {alice: f"/home/{alice}/sessions/", bob: f"/home/{bob}/sessions/"}
    base = f"{POSTGRES_URL}?table={table}"
    n = derived_names(table)
    try:
        for role, root in roots.items():  # omp's rows, as omp writes them (no search tables yet)
            who = role.rsplit("_", 1)[1]
            _machine(tmp_path / who, who, 3)
            assert sync_urls(f"file:{tmp_path / who}", f"{base}&root={root}", use_state=False).count("copied") == 3
        with open_derived(base) as tables:  # the owner makes the search tables and secures them
            tables.create()
            apply_rls(tables, team)
            apply_rls(tables, team)  # again: harmless
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            # omp's own table has no namespace: kept apart by each person's key prefix
            conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
            for role, root in roots.items():
                conn.execute(sql.SQL(f"CREATE POLICY {role}_rows ON {table} TO {role} USING "
                                     "(starts_with(path, {}))").format(sql.Literal(root)))
        for role, root in roots.items():
            # each person derives their own sessions as their own role (what sync --to does after
            # its copy): the rows go in under the policy's WITH CHECK, by INSERT (no COPY under RLS)
            report = refresh_url(f"{_as(role, base)}&root={root}", create=False, new_namespace=f"{role}@laptop")
            assert report is not None and len(report.added) == 3
        for role, root in roots.items():
            who = role.rsplit("_", 1)[1]
            with open_derived(_as(role, base)) as tables:
                hits = search_derived(tables, "shared", limit=100)
                assert _owners(hits) == {who} and len(hits) == 6
                assert all(h.key.startswith(root) for h in hits)
                # a direct SELECT shows nothing of the other's either, in any of the tables
                for name in (n.sessions, n.entries, n.usage, table):
                    column = "path" if name == table else "key"
                    keys = {r[0] for r in tables.rows(f"SELECT {column} FROM {name}")}
                    assert keys and all(k.startswith(root) for k in keys), name
                other = next(r for r in roots if r != role)
                # nor can one write a row in the other's name
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                    tables.conn.execute(f"UPDATE {n.sessions} SET namespace = %s", (f"{other}@laptop",))
        with open_derived(base) as tables:  # the owner sees everybody's
            assert _owners(search_derived(tables, "shared", limit=100)) == {"alice", "bob"}
            assert tables.rows(f"SELECT count(*) FROM {n.entries}")[0][0] == 12
    finally:
        drop_derived(table)


def _conversation(turns: int) -> list[dict[str, Any]]:
    """``turns`` questions and answers (each answer billed), ids and times distinct."""
    out: list[dict[str, Any]] = []
    parent = None
    for t in range(turns):
        for kind in ("u", "a"):
            eid = f"{kind}{t:03d}"
            message = user(f"question {t}") if kind == "u" else assistant(f"answer {t}")
            out.append(entry(eid, parent, timestamp=stamp(2 * t + (kind == "a")), message=message))
            parent = eid
    return out


def _flags(url: str) -> list[tuple[Any, ...]]:
    with open_derived(url) as tables:
        return sorted(tables.rows(f"SELECT key, seq, n, dedup, shared, matched FROM {tables.names.usage}"))


def _billed(url: str) -> dict[str, Any]:
    from omp_session.ops.stats.database import stats_in_tables

    with open_derived(url) as tables:
        report = stats_in_tables(tables, None, all_sessions=True, root="/", by="session").to_dict()
    return {g["key"]: g["billed"]["requests"] for g in report["groups"]} | {"": report["total"]["billed"]["requests"]}


def test_row_level_security_a_fork_of_another_persons_session(roles: tuple[str, str, str], tmp_path: Path) -> None:
    """Bob forked a session of Alice's: the fork holds copies of her records (same ids and times).
    Each derives as their own role, and each one's write settles which records another transcript
    holds among the rows that role sees: neither sees the other's copy. Each person's report is
    right for them (bob's fork bills its copies to bob: alice's session is not in his report); the
    owner's, which reads both, bills the copies twice until the owner's own next update settles them
    (an update by a role exempt from the policies sees every copy): then the tables are what a rebuild
    makes, and so is every report."""
    team, alice, bob = roles
    table = f"t_{uuid.uuid4().hex[:16]}"
    roots = {alice: f"/home/{alice}/sessions/", bob: f"/home/{bob}/sessions/"}
    base = f"{POSTGRES_URL}?table={table}"
    original = _conversation(3)
    write_session(tmp_path / "alice" / "--work-p--" / "2026-01-01T00-00-00-000Z_orig.jsonl", original,
                  head=header("orig", cwd="/work/p"))
    fork = [*original, entry("u100", original[-1]["id"], timestamp=stamp(50), message=user("and then")),
            entry("a100", "u100", timestamp=stamp(51), message=assistant("then this"))]
    write_session(tmp_path / "bob" / "--work-p--" / "2026-01-01T00-01-00-000Z_fork.jsonl", fork,
                  head=header("fork", cwd="/work/p", timestamp="2026-01-01T00:01:00.000Z", parentSession="orig"))
    try:
        for role, root in roots.items():
            who = role.rsplit("_", 1)[1]
            assert sync_urls(f"file:{tmp_path / who}", f"{base}&root={root}", use_state=False).count("copied") == 1
        with open_derived(base) as tables:
            tables.create()
            apply_rls(tables, team)
        for role, root in roots.items():  # each person's sync derives their own as their role
            report = refresh_url(f"{_as(role, base)}&root={root}", create=False, new_namespace=f"{role}@laptop")
            assert report is not None and len(report.added) == 1
        orig_key, fork_key = (f"{roots[alice]}--work-p--/2026-01-01T00-00-00-000Z_orig.jsonl",
                              f"{roots[bob]}--work-p--/2026-01-01T00-01-00-000Z_fork.jsonl")
        mine = {who: _billed(_as(who, base)) for who in (alice, bob)}
        assert mine == {alice: {orig_key: 3, "": 3}, bob: {fork_key: 4, "": 4}}
        # the owner's report as the two writes left the tables: the three copies billed twice
        assert _billed(base) == {orig_key: 3, fork_key: 4, "": 7}
        # a role's update settles nothing of the other's; nor does the owner's sync (only index --store)
        assert refresh_url(f"{_as(bob, base)}&root={roots[bob]}", create=False) is not None
        assert refresh_url(f"{base}&root={roots[bob]}", create=False) is not None
        assert _billed(base)[""] == 7
        # the owner's index --store (from cron): nothing to derive, the copies settled
        code, out, err = run(cli, "index", "--store", f"{base}&root={roots[alice]}", "--json")
        assert code == 0 and err == "", err
        assert json.loads(out)["added"] == 0 and json.loads(out)["copies_settled"] == 6
        settled = _flags(base)
        assert _billed(base) == {orig_key: 3, fork_key: 1, "": 4}
        assert {who: _billed(_as(who, base)) for who in (alice, bob)} == mine  # each person's stays theirs
        # what a rebuild makes of the same sessions: the owner derives both roots again
        assert refresh_url(f"{base}&root={roots[alice]}", create=False, rebuild=True) is not None
        assert refresh_url(f"{base}&root={roots[bob]}", create=False) is not None
        assert _flags(base) == settled
        assert _billed(base) == {orig_key: 3, fork_key: 1, "": 4}
    finally:
        drop_derived(table)
