"""The CLI kit: the one error handler (cli/_errors.py) and the shared options (cli/_options.py)."""

from __future__ import annotations

import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from omp_session.cli._errors import Command, command, group, os_errors
from omp_session.cli._options import WHEN, json_option, since_option, until_option
from omp_session.errors import SessionError, SessionFileError, StatsOptionError


def _raising(error: Exception) -> click.Command:
    @command("probe")
    def probe() -> None:
        """Probe."""
        raise error

    return probe


def test_a_session_error_is_one_line_and_exit_1() -> None:
    result = CliRunner().invoke(_raising(SessionError("x.jsonl: broken")))
    assert result.exit_code == 1
    assert result.stderr == "omp-session: x.jsonl: broken\n" and result.stdout == ""


def test_a_stats_option_error_is_a_usage_error() -> None:
    result = CliRunner().invoke(_raising(StatsOptionError("unknown time zone 'X'")))
    assert result.exit_code == 2
    assert result.stderr == "probe: unknown time zone 'X' (see 'probe --help')\n"


@pytest.mark.parametrize(("args", "line"), [
    (["show"], "omp-session show: Missing argument 'SESSION' (see 'omp-session show --help')"),
    (["lst"], "omp-session: No such command 'lst'. Did you mean 'list'? (see 'omp-session --help')"),
    (["export", "x", "--format", "pdf"], "omp-session export: Invalid value for '--format': 'pdf' is not one of "
                                         "'md', 'json', 'html' (see 'omp-session export --help')"),
    (["tail", "-n", "x", "latest"], "omp-session tail: Invalid value for '-n' / '--lines': 'x' is not a valid "
                                    "integer range (see 'omp-session tail --help')"),
    (["cat", "latest", "--all"], "omp-session cat: cat's --all is now --whole-file (--all means every project in "
                                 "every command) (see 'omp-session cat --help')"),
    (["blobs", "gc", "--bogus"],
     "omp-session blobs gc: No such option '--bogus'. Did you mean '--blobs'? (see 'omp-session blobs gc --help')"),
])
def test_usage_errors_are_one_line_naming_the_command(args: list[str], line: str) -> None:
    from omp_session.cli import cli

    result = CliRunner().invoke(cli, args, prog_name="omp-session")
    assert (result.exit_code, result.stderr, result.stdout) == (2, line + "\n", "")


def test_other_exceptions_are_not_swallowed() -> None:
    result = CliRunner().invoke(_raising(KeyError("bug")))
    assert result.exit_code == 1 and isinstance(result.exception, KeyError)


def test_errors_while_parsing_are_reported_too() -> None:
    def refuse(ctx: click.Context, param: click.Parameter, value: str) -> str:
        raise SessionError(f"no session matches {value!r}")

    @command("probe")
    @click.argument("session", callback=refuse)
    def probe(session: str) -> None:
        """Probe."""

    result = CliRunner().invoke(probe, ["nosuch"])
    assert result.exit_code == 1 and result.stderr == "omp-session: no session matches 'nosuch'\n"


def test_a_group_makes_handled_subcommands() -> None:
    @group("g")
    def g() -> None:
        """G."""

    @g.command("sub")
    def sub() -> None:
        """Sub."""
        raise SessionError("refused")

    assert isinstance(sub, Command)
    result = CliRunner().invoke(g, ["sub"])
    assert result.exit_code == 1 and result.stderr == "omp-session: refused\n"


def test_os_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match=r"^/nowhere/x: No such file or directory$"), os_errors("fallback"):
        open("/nowhere/x")  # noqa: SIM115
    with pytest.raises(SessionError, match=r"^fallback: disk full$"), os_errors("fallback"):
        raise OSError("disk full")
    original = SessionFileError("a.jsonl", "is a directory, not a session file")
    with pytest.raises(SessionFileError) as caught, os_errors("fallback"):
        raise original
    assert caught.value is original


@command("when")
@since_option("Since.")
@until_option("Until.")
@json_option()
def when(since: int | None, until: int | None, as_json: bool) -> None:
    """When."""
    click.echo(f"{since} {until} {as_json}")


def test_when_takes_dates_and_ages() -> None:
    result = CliRunner().invoke(when, ["--since", "2026-05-14T10:00Z", "--until", "2026-05-15", "--json"])
    assert result.stdout == "1778752800000 1778803200000 True\n"
    before = int(time.time() * 1000)
    result = CliRunner().invoke(when, ["--since", "7d", "--until", "30m"])
    since, until, _ = result.stdout.split()
    assert abs(before - 7 * 86_400_000 - int(since)) < 60_000
    assert abs(before - 30 * 60_000 - int(until)) < 60_000
    assert WHEN.convert(5, None, None) == 5  # a default given in milliseconds stays as it is


def test_when_refuses_what_is_not_a_date() -> None:
    result = CliRunner().invoke(when, ["--since", "not a date"])
    assert result.exit_code == 2
    assert "Invalid value for '--since': 'not a date' is not a date" in result.stderr
    assert "--since WHEN" in CliRunner().invoke(when, ["--help"]).stdout
