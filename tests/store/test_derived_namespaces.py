"""Many people, one database: ``sync --namespace`` records where sessions came from, ``search
--store --user/--machine`` filters by it, and row-level security (store/derived/rls.sql) keeps two
people's transcripts apart (docs/team.md)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from builders import assistant, entry, header, user, write_session
from omp_session.catalog.derived import refresh_url
from omp_session.cli.search import search_command
from omp_session.cli.sync import sync as sync_command
from omp_session.ops.sync import sync_urls
from omp_session.store.derived import derived_names, open_derived
from omp_session.store.derived.namespace import split_namespace
from omp_session.store.derived.query import search_derived
from omp_session.store.derived.rls import apply_rls
from stores.sqlutil import POSTGRES_URL

ROOT = "/team/sessions/"


def _drop(table: str) -> None:
    n = derived_names(table)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        for name in (n.entries, n.usage, n.sessions, table):
            conn.execute(f"DROP TABLE IF EXISTS {name}")


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    table = f"t_{uuid.uuid4().hex[:16]}"
    base = f"sqlite:{tmp_path / 'team.db'}" if request.param == "sqlite" else POSTGRES_URL
    yield f"{base}?table={table}&root={ROOT}"
    if request.param == "postgres":
        _drop(table)


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
    made: list[str] = []
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {team} NOLOGIN")
            made.append(team)
            for name in (alice, bob):
                conn.execute(f"CREATE ROLE {name} LOGIN IN ROLE {team}")
                made.append(name)
        yield team, alice, bob
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            for name in reversed(made):
                conn.execute(f"DROP OWNED BY {name}")  # grants left on tables not yet dropped
                conn.execute(f"DROP ROLE {name}")


def _as(role: str, url: str) -> str:
    """``url`` connecting as ``role`` instead of the test's user."""
    assert url.startswith("postgresql://postgres@")
    return url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)


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
        _drop(table)
