"""A click group whose commands are imported when they run, not when the program starts.

The group holds a table, name -> ("module:attribute", short help). ``omp-session --help`` lists
every command from that table alone, so it imports click and nothing of the library; a command's
module is imported the first time the command is looked up (it runs, or its own ``--help`` is
asked for). This is click's documented "LazyGroup" pattern, with one difference: ``commands``
stays a mapping (it loads on access), so code that iterates ``group.commands`` still sees every
command. This module must import nothing but click and the standard library.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import click

__all__ = ["LazyGroup"]


class _Commands(MutableMapping[str, click.Command]):
    def __init__(self, table: Mapping[str, tuple[str, str]], package: str) -> None:
        self._table = dict(table)
        self._package = package
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            where, _help = self._table[name]  # KeyError: no such command, as for a plain dict
            module, _, attr = where.partition(":")
            command = getattr(importlib.import_module(module, self._package), attr)
            if not isinstance(command, click.Command):
                raise TypeError(f"{where} is not a click command")
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._table and name not in self._loaded:
            raise KeyError(name)
        self._table.pop(name, None)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._table), **dict.fromkeys(self._loaded)})

    def __len__(self) -> int:
        return len(self._table.keys() | self._loaded.keys())

    def listed(self, name: str) -> tuple[str, bool]:
        """(help to shorten, hidden) without importing a command that is not loaded yet."""
        command = self._loaded.get(name)
        if command is None:
            return self._table[name][1], False
        return command.get_short_help_str(limit=1 << 30), command.hidden


class LazyGroup(click.Group):
    """A group over a table of lazily imported commands (the module docstring).

    ``package`` anchors relative module names in the table (``.view:show``).
    """

    def __init__(self, name: str | None = None, *, table: Mapping[str, tuple[str, str]], package: str,
                 **kwargs: Any) -> None:
        self.table = _Commands(table, package)
        super().__init__(name, commands=self.table, **kwargs)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        # click's own version loads every command for its short help: the table has it
        from click.shell_completion import CompletionItem

        items = []
        for name in self.list_commands(ctx):
            text, hidden = self.table.listed(name)
            if name.startswith(incomplete) and not hidden:
                items.append(CompletionItem(name, help=click.Command(name, help=text).get_short_help_str()))
        return items + click.Command.shell_complete(self, ctx, incomplete)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own version calls get_command for every row, which would import every module
        rows = [(name, *self.table.listed(name)) for name in self.list_commands(ctx)]
        shown = [(name, text) for name, text, hidden in rows if not hidden]
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in shown)
        # shortened exactly as click shortens a command's help (the table holds its first sentence)
        cut = [(name, click.Command(name, help=text).get_short_help_str(limit)) for name, text in shown]
        with formatter.section("Commands"):
            formatter.write_dl(cut)
