"""docs/cli.md's flag table is the command line's: every visible option of every command is a row
with exactly the commands that take it, each flag has one short form (or none) everywhere, and
each row says what the flag means."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import click

from omp_session.cli import COMMANDS, cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
ROW = re.compile(r"^\| `(--[a-z][a-z-]*)`(?:, `(-[a-zA-Z])`)? \| (.+?) \| (.+?) \|$")


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    out: list[tuple[str, click.Command]] = []
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            out.extend((f"{name} {sub}", command.commands[sub]) for sub in command.list_commands(ctx))
        else:
            out.append((name, command))
    return out


def _from_code() -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    uses: dict[str, list[str]] = defaultdict(list)
    shorts: dict[str, set[str]] = defaultdict(set)
    for name, command in _commands():
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            longs = [o for o in param.opts if o.startswith("--")]
            assert len(longs) == 1, (name, param.opts)  # one spelling per flag
            uses[longs[0]].append(name)
            shorts[longs[0]].update(o for o in param.opts if not o.startswith("--"))
    return uses, shorts


def _from_doc() -> dict[str, tuple[str | None, str, list[str]]]:
    text = DOC.read_text("utf-8")
    table = text.split("<!-- flag-table: start -->", 1)[1].split("<!-- flag-table: end -->", 1)[0]
    rows: dict[str, tuple[str | None, str, list[str]]] = {}
    for line in table.strip().splitlines()[2:]:
        m = ROW.match(line)
        assert m, f"docs/cli.md flag table: cannot read {line!r}"
        flag, short, meaning, commands = m.groups()
        assert flag not in rows, f"{flag} has two rows: one meaning per flag"
        rows[flag] = (short, meaning, [c.strip() for c in commands.split(",")])
    return rows


def test_every_option_of_every_command_is_in_the_flag_table() -> None:
    uses, _ = _from_code()
    rows = _from_doc()
    assert sorted(uses) == sorted(rows), "flags missing from (or only in) docs/cli.md's table"
    for flag, commands in uses.items():
        assert rows[flag][2] == commands, (flag, "the table's commands differ from the code's")
        assert len(rows[flag][1]) >= 8, (flag, "say what it means")


def test_a_short_form_is_the_same_flag_everywhere() -> None:
    uses, shorts = _from_code()
    rows = _from_doc()
    owner: dict[str, str] = {}
    for flag, found in shorts.items():
        assert len(found) <= 1, (flag, found)
        for short in found:
            assert owner.setdefault(short, flag) == flag, f"{short} is {owner[short]} and {flag}"
        assert rows[flag][0] == (next(iter(found)) if found else None), (flag, "the table's short form")
    # a flag with a short form in one command has it in every command that takes it
    for flag in uses:
        if shorts[flag]:
            short = next(iter(shorts[flag]))
            for name, command in _commands():
                for param in command.params:
                    if isinstance(param, click.Option) and flag in param.opts and not param.hidden:
                        assert short in param.opts, (name, flag, short)
    assert owner.get("-o") == "--output" and owner.get("-f") == "--follow" and owner.get("-n") == "--lines"
