"""The options and arguments several commands share, declared once (docs/cli.md, "Shared options").

Each is a decorator factory, so a command keeps its own help text where the meaning differs
(``--json``: one object, an array, JSON lines...) while the name, the parameter name and the
parsing stay the same everywhere. ``--store URL`` lives in _store, beside the resolution it
changes; SESSION's callback imports it when it runs, so a command that only takes ``--json`` does
not load the store layer.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    _ParamType = click.ParamType[int, Any]
else:  # older click (pyproject allows 8.1) has no type parameters to subscript
    _ParamType = click.ParamType

__all__ = ["JSON_FIELDS", "WHEN", "When", "complete_sessions", "every_project_option", "force_option", "json_option",
           "output_option", "session_argument", "since_option", "until_option"]

F = TypeVar("F", bound=Callable[..., Any])


def json_option(help: str = "Print one JSON object.") -> Callable[[F], F]:
    """``--json`` (parameter ``as_json``): machine output with stable field names; with it come
    ``--jq EXPR`` and ``--json FIELDS`` (cli/_jsonout.py), which filter that output."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def run(*args: Any, jq_expr: str | None, json_fields: str | None, **kwargs: Any) -> Any:
            if jq_expr is None and json_fields is None:
                return f(*args, **kwargs)
            from ._jsonout import filtered_stdout, parse_fields

            fields = parse_fields(json_fields) if json_fields is not None else None
            if not kwargs.get("as_jsonl"):  # list --jsonl is JSON already
                kwargs["as_json"] = True
            with filtered_stdout(jq_expr, fields):
                return f(*args, **kwargs)

        wrapped = click.option("--json", "as_json", is_flag=True, help=help + " --json FIELDS (a,b,c; or "
                               "--json=a): only those fields.")(run)
        wrapped = click.option("--jq", "jq_expr", metavar="EXPR", help="Filter the JSON output through this "
                               "jq program (implies --json; strings print raw).")(wrapped)
        # --json FIELDS arrives here: Command.parse_args rewrites it (cli/_errors.py)
        return click.option(JSON_FIELDS, "json_fields", hidden=True)(wrapped)  # type: ignore[return-value]

    return decorate


JSON_FIELDS = "--json-fields"


def force_option(help: str = "Replace OUT if it exists.") -> Callable[[F], F]:
    """``--force``: replace what is in the way; without it an existing output is refused."""
    return click.option("--force", is_flag=True, help=help)


def output_option(help: str, *, name: str = "out", required: bool = False,
                  dir_okay: bool = True) -> Callable[[F], F]:
    """``-o/--output``: where a command writes (never the input); a ``Path``."""
    return click.option("-o", "--output", name, required=required,
                        type=click.Path(dir_okay=dir_okay, path_type=Path), help=help)


_AGE_UNITS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000}


class When(_ParamType):
    """A time: anything JavaScript's ``Date.parse`` reads, or an age (``7d``, ``12h``, ``30m``
    ago). The value is epoch milliseconds."""

    name = "when"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value)
        if text[-1:] in _AGE_UNITS and text[:-1].isdigit():
            now = int(datetime.now(UTC).timestamp() * 1000)
            return now - int(text[:-1]) * _AGE_UNITS[text[-1]]
        from omp_session.js.date import date_parse

        ms = date_parse(text)
        if ms != ms:  # NaN: not a date
            self.fail(f"{text!r} is not a date (try 2026-05-14, 2026-05-14T10:00Z or 7d)", param, ctx)
        return int(ms)


WHEN = When()


def since_option(help: str) -> Callable[[F], F]:
    """``--since WHEN`` (parameter ``since``, epoch ms or None)."""
    return click.option("--since", type=WHEN, help=help)


def until_option(help: str) -> Callable[[F], F]:
    """``--until WHEN`` (parameter ``until``, epoch ms or None)."""
    return click.option("--until", type=WHEN, help=help)


def session_argument(name: str = "session", *, resolve: bool = False, as_given: bool = False,
                     required: bool = True, many: bool = False, every_project: bool = True) -> Callable[[F], F]:
    """SESSION: a path, a session id or a unique prefix of one, or ``latest``; under ``--store``,
    a key of that store (docs/cli.md).

    The value is the text as given, for the command to resolve with ``_store.resolve_any`` once
    its own checks have passed; with ``resolve`` it is resolved while the command line is parsed
    and the value is a ``Path``; ``as_given`` takes what looks like a path as it is, even when no
    such file exists yet (``tail -f`` waits for it). ``many``: ``[SESSION]...``, a tuple.
    ``every_project`` (one SESSION only): the command takes ``--all``, which looks for ``latest``
    and prefixes in every project (a command whose own ``--all`` says the same passes False).
    """
    if many:
        return click.argument(name, nargs=-1, metavar="[SESSION]...", shell_complete=complete_sessions)
    callback = _resolver(as_given) if resolve else None
    argument = click.argument(name, metavar="SESSION", required=required, callback=callback,
                              shell_complete=complete_sessions)
    if not every_project:
        return argument

    def decorate(f: F) -> F:
        return every_project_option(argument(f))

    return decorate


def complete_sessions(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of SESSION: ``latest``, then the current project's session ids (8
    characters, as ``list`` shows them; newest first), from the file names alone: instant."""
    from click.shell_completion import CompletionItem

    from omp_session.catalog.resolve import session_ids
    from omp_session.paths import project_dir_name, sessions_dir

    if os.sep in incomplete or incomplete.startswith("."):
        return [CompletionItem(incomplete, type="file")]  # a path: the shell completes it
    items = [CompletionItem("latest", help="the most recently modified session")] \
        if "latest".startswith(incomplete) else []
    try:
        bucket = sessions_dir() / project_dir_name(os.getcwd())
        found = session_ids(bucket)
    except OSError:
        found = []
    low = incomplete.lower()
    seen: set[str] = set()
    for sid, stamp in found:
        short = sid[:8] if len(sid) > 8 else sid
        if sid.lower().startswith(low) and short not in seen:
            seen.add(short)
            items.append(CompletionItem(short if short.lower().startswith(low) else sid, help=stamp))
    return items


def every_project_option(f: F) -> F:
    """``--all`` for a command naming sessions: ``latest`` and prefixes in every project."""
    # eager: known before SESSION is resolved, wherever it stands on the command line
    return click.option("--all", is_flag=True, expose_value=False, is_eager=True, callback=_remember_all,
                        help="Look for SESSION (latest, an id prefix) in every project, not only the current "
                             "one's.")(f)


def _remember_all(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    from ._store import EVERY_PROJECT, EVERY_PROJECT_OFFERED

    ctx.meta[EVERY_PROJECT_OFFERED] = True  # (called given or not: the command takes --all)
    if value:
        ctx.meta[EVERY_PROJECT] = True


def _resolver(as_given: bool) -> Callable[[click.Context, click.Parameter, str], Path]:
    def resolve(ctx: click.Context, param: click.Parameter, value: str) -> Path:
        from ._store import active_store, resolve_any

        if as_given and active_store() is None and (os.path.exists(value) or os.sep in value
                                                    or value.endswith(".jsonl")):
            return Path(value)
        return Path(resolve_any(value))

    return resolve
