"""The command table, the commands behind it and docs/cli.md agree, so none of them can drift."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from omp_session.cli import COMMANDS, cli
from omp_session.cli._errors import Command, Group
from omp_session.cli._lazy import LazyGroup

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "cli.md").read_text("utf-8")
CLI_SRC = ROOT / "src" / "omp_session" / "cli"


def _load(name: str) -> click.Command:
    module, _, attr = COMMANDS[name][0].partition(":")
    command = getattr(importlib.import_module(module, "omp_session.cli"), attr)
    assert isinstance(command, click.Command)
    return command


def _walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _walk(sub, f"{path} {name}")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_table_says_what_the_command_says(name: str) -> None:
    command = _load(name)
    assert command.name == name
    assert COMMANDS[name][1] == command.get_short_help_str(limit=1 << 30)
    assert cli.commands[name] is command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_and_the_error_handler(name: str) -> None:
    for path, command in _walk(_load(name), name):
        assert command.help and command.help.strip(), path
        # parsing and body under cli/_errors.py's handler, also when run without the group
        assert isinstance(command, Command | Group), path


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_is_in_the_docs(name: str) -> None:
    assert re.search(rf"^\| `{re.escape(name)}` \|", DOCS, re.MULTILINE), f"no row for {name} in docs/cli.md"
    assert re.search(rf"^## `omp-session {re.escape(name)}[ `]", DOCS, re.MULTILINE), \
        f"no section for {name} in docs/cli.md"


def test_the_docs_list_no_other_command() -> None:
    table = DOCS.split("## Commands", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE)) == set(COMMANDS)


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_the_lazy_listing_is_clicks_own(width: int) -> None:
    """A fresh group (nothing imported yet) lists, from the table alone, exactly what click lists
    from the imported commands."""
    lazy = LazyGroup("omp-session", table=COMMANDS, package="omp_session.cli")
    plain = click.Group("omp-session", commands={name: _load(name) for name in COMMANDS})
    out = []
    for group in (lazy, plain):
        formatter = click.HelpFormatter(width=width)
        group.format_commands(click.Context(group), formatter)
        out.append(formatter.getvalue())
    assert out[0] == out[1]
    assert not lazy.table._loaded  # listing imported nothing


def test_the_command_mapping() -> None:
    group = LazyGroup("g", table={"show": (".view:show", "Show.")}, package="omp_session.cli")
    ctx = click.Context(group)
    assert group.list_commands(ctx) == ["show"] and len(group.commands) == 1
    assert group.get_command(ctx, "nope") is None
    extra = click.Command("extra", help="Extra.")
    group.add_command(extra)
    assert group.list_commands(ctx) == ["extra", "show"] and group.get_command(ctx, "extra") is extra
    assert group.get_command(ctx, "show") is _load("show")
    del group.commands["show"]
    assert group.list_commands(ctx) == ["extra"]


def _reports_session_error(handler: ast.ExceptHandler) -> bool:
    names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} if handler.type else set()
    body = handler.body
    reraises = len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is None
    return "SessionError" in names and not reraises


def test_no_command_reports_errors_itself() -> None:
    """cli/_errors.py (with cli/_report.py, its click-free form) is the one place a SessionError
    becomes a message and an exit status."""
    wrong = []
    for path in sorted(CLI_SRC.glob("*.py")):
        if path.name in ("_errors.py", "_report.py"):  # the rule, and its click-free form
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ExceptHandler) and _reports_session_error(node):
                wrong.append(f"{path.name}:{node.lineno} catches SessionError")
            if isinstance(node, ast.FunctionDef) and node.name == "_fail":
                wrong.append(f"{path.name}:{node.lineno} defines its own _fail")
    assert wrong == []
