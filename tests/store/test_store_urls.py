"""Store URLs that are wrong, and servers that are the wrong service: one line naming the store,
never a traceback, never a hang (connect and handshake timeouts, --timeout, ``timeout=``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builders import invoke
from omp_session.cli import cli
from omp_session.errors import StoreError
from omp_session.store import open_store, parse_store_url
from omp_session.store.url import DEFAULT_TIMEOUT

BAD_URLS = [
    ("postgresql://postgres@[::1/test", "not a valid URL"),
    ("redis://127.0.0.1:6379/9?bogus=1", "unknown option 'bogus'"),
    ("sqlite:/tmp/x%00y.db", "NUL"),
    ("file:/tmp/x%00y", "NUL"),
    ("mysql://root:secret@[::1/test", "not a valid URL"),
    ("redis://127.0.0.1:6379/0?timeout=abc", "timeout"),
    ("postgresql://postgres@127.0.0.1/test?timeout=-1", "timeout"),
    # redis-py lets ?db= win over the path: messages named database 13 while keys went to 12
    ("redis://127.0.0.1:6379/13?db=12", "database twice"),
    ("rediss://127.0.0.1:6379/0?db=0", "database twice"),
]


@pytest.mark.parametrize(("url", "match"), BAD_URLS)
def test_a_bad_url_is_one_line_naming_it(url: str, match: str) -> None:
    with pytest.raises(StoreError, match=match) as e:
        open_store(url, create=True)
    assert "\n" not in str(e.value) and "secret" not in str(e.value)


@pytest.mark.parametrize(("url", "match"), BAD_URLS)
def test_the_cli_says_one_line_for_a_bad_url(url: str, match: str) -> None:
    result = invoke(cli, "list", "--all", "--store", url)
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, result.exc_info
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("omp-session: ") and match in lines[0]


def test_timeout_is_an_option_of_the_url_and_of_open_store() -> None:
    assert parse_store_url("redis://127.0.0.1:6379/0").timeout == DEFAULT_TIMEOUT == 10
    assert parse_store_url("redis://127.0.0.1:6379/0?timeout=2.5").timeout == 2.5
    assert parse_store_url("mysql://root@127.0.0.1/test?timeout=3").timeout == 3
    assert "timeout" not in parse_store_url("postgresql://postgres@127.0.0.1/test?timeout=3").location


WRONG_SERVICE = [
    "mysql://root@127.0.0.1:6379/test",  # MySQL's client waits for a greeting Redis never sends
    "mysql://root@127.0.0.1:5432/test",
    "postgresql://postgres@127.0.0.1:6379/test",
    "rediss://127.0.0.1:6379/0",  # a TLS handshake with a plain server
]


@pytest.mark.parametrize("url", WRONG_SERVICE)
def test_a_wrong_service_gives_up_after_the_timeout(url: str, tmp_path: Path) -> None:
    """The real command line, as a process; the guard only stops a hang (600 s before the fix)."""
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "XDG_CACHE_HOME": str(tmp_path / "c")}
    done = subprocess.run([sys.executable, "-m", "omp_session", "list", "--all", "--store", url, "--timeout", "2"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and url.split("@")[-1].split("/")[0] in lines[0], done.stderr
    assert "within 2 s" in lines[0]


@pytest.mark.parametrize("url", WRONG_SERVICE)
def test_the_url_timeout_and_open_store_timeout_apply(url: str) -> None:
    with pytest.raises(StoreError, match="within 1 s"):
        open_store(url + "?timeout=1", create=False)
    with pytest.raises(StoreError, match="within 1 s"):
        open_store(url, create=False, timeout=1)


def test_sync_takes_timeout_too(tmp_path: Path) -> None:
    result = invoke(cli, "sync", "--from", f"file:{tmp_path}", "--to", "mysql://root@127.0.0.1:6379/test",
                    "--timeout", "1")
    assert result.exit_code == 1 and "within 1 s" in result.stderr, result.output


def test_the_drivers_own_options_reach_it_as_they_were_written() -> None:
    """libpq reads ``+`` in a URL as a plus and ``%20`` as a space: the options that are not ours
    are passed on untouched (they were decoded and encoded again, a space becoming ``+``, so
    ``options=-c%20statement_timeout%3D5000`` reached the server as "+statement_timeout")."""
    url = ("postgresql://postgres@127.0.0.1:5432/test?table=t&options=-c%20default_transaction_isolation%3Dserializable"
           "&application_name=a+b&root=/team/")
    parsed = parse_store_url(url)
    assert parsed.location == ("postgresql://postgres@127.0.0.1:5432/test"
                               "?options=-c%20default_transaction_isolation%3Dserializable&application_name=a+b")
    assert parsed.options == {"table": "t", "root": "/team/"}


@pytest.mark.db
def test_a_libpq_option_with_a_space_and_a_plus_reaches_the_server() -> None:
    from stores.sqlutil import POSTGRES_URL, drop_table, fresh_table

    sep = "&" if "?" in POSTGRES_URL else "?"
    table = fresh_table()
    storage = open_store(f"{POSTGRES_URL}{sep}table={table}&options=-c%20application_name%3Domp+test", create=True)
    try:
        assert storage._query("SHOW application_name", (), "reading") == [("omp+test",)]  # type: ignore[attr-defined]
    finally:
        storage.close()
        drop_table("postgres", table)
