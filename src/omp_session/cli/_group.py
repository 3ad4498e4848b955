"""The command table and the group: every command, imported only when it runs (cli/_lazy.py)."""

from __future__ import annotations

from typing import Any

import click

from omp_session._version import __version__

from ._lazy import LazyGroup

__all__ = ["COMMANDS", "cli"]

# name -> ("module:command", short help). The short help is the first sentence of the command's
# docstring: --help lists it without importing the module; tests/cli/test_commands.py keeps the two
# equal. A new command is one entry here (docs/cli.md, "How the command line is built").
COMMANDS: dict[str, tuple[str, str]] = {
    "list": (".list:list_command", "List sessions, newest first: when, title, cwd, messages, size, status."),
    "show": (".view:show",
             "Show a session: header, title, size, entry counts, leaf and branches, labels, models, tokens "
             "and cost (current branch and all), and the problems found while reading it."),
    "tree": (".view:tree",
             "Show the entry tree; the branch the session resumes on is marked with * and highlighted."),
    "context": (".view:context",
                "Show exactly the messages omp would send to the model when the session resumes."),
    "demo": (".view:demo",
             "Show the bundled sample session (written by omp 18.2.3): header, tree and context."),
    "cat": (".cat:cat", "Print raw records as JSON lines, byte for byte as stored: safe to pipe into jq."),
    "tail": (".tail:tail",
             "Print the last entries of the current branch; with -f, follow the file as omp writes it."),
    "validate": (".validate:validate",
                 "Check session files and report every problem: what it is, where, and what omp does "
                 "with it."),
    "repair": (".repair:repair",
               "Repair a damaged session file so omp can open it, losing nothing readable."),
    "export": (".export:export",
               "Export a session as Markdown, JSON or a self-contained HTML viewer (docs/export.md)."),
    "redact": (".redact:redact",
               "Write a copy of SESSION with secrets redacted; ids and the tree stay as they were."),
    "search": (".search:search_command",
               "Search the text of every session: messages, tool calls and results, summaries, titles and "
               "labels (thinking with --thinking)."),
    "index": (".search:index_command",
              "Bring the search index up to date (search does this by itself; this is for cron or a first "
              "build with a progress bar)."),
    "stats": (".stats:stats_command",
              "Tokens and cost, billed and on the current branch, grouped by session, day, week, month, "
              "model, provider or project."),
    "size": (".size:size",
             "Show where a session's bytes go (entry types, roles, tools, images, long tool outputs, "
             "thinking, abandoned branches) and what would shrink it, with the exact bytes each remedy "
             "saves."),
    "externalize": (".size:externalize",
                    "Write a copy of SESSION with its inline images moved into the blob store, by omp's own "
                    "rules (1,024-character threshold, SHA-256 of the decoded bytes); omp loads the same "
                    "entries and context from the copy."),
    "prune": (".size:prune",
              "Write a new session holding only one branch of SESSION (entries copied byte for byte, labels "
              "carried); the abandoned branches stay in the original, which is never changed."),
    "blobs": (".blobs:blobs",
              "Check, clean and measure omp's blob store (images kept outside the session files)."),
    "pack": (".pack:pack",
             "Pack sessions, their artifact folders (subagent transcripts, tool output) and every blob they "
             "reference into one archive, with a manifest of ids, working directories, paths, sizes and "
             "SHA-256 hashes."),
    "unpack": (".pack:unpack",
               "Unpack an archive made by 'pack': every hash is verified before anything is placed; each "
               "session goes to the project folder of its (new) working directory, its header's cwd "
               "rewritten; ids are kept; existing sessions are never overwritten (--force keeps a backup)."),
    "mcp": (".mcp:mcp_command",
            "Serve earlier sessions to coding agents over MCP (stdio): read-only tools to list, search and "
            "read sessions, their trees and token stats, and recent sessions as resources."),
    "serve": (".serve:serve_command",
              "Serve every session as a local web app: the sessions list, each session in the HTML viewer "
              "(updating live while omp writes it), full-text search and the cost reports."),
    "completion": (".completion:completion",
                   "Print the shell completion script for SHELL: commands, options and session ids."),
    "resume": (".resume:resume",
               "Print the command that resumes SESSION in omp, in the session's working directory."),
    "sync": (".sync:sync",
             "Copy sessions from one store to another, byte for byte, moving only what changed."),
    "import": (".importing:import_command",
               "Import Claude Code or Codex sessions into omp, exactly as omp's own importer does."),
}


def _choose_omp(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    # imported here: --help and --version import nothing of the library
    from omp_session.model import omp_version

    if omp_version.find(value) is None:
        raise click.BadParameter(f"{value!r} is not an omp version we imitate ({omp_version.choices()})")
    omp_version.choose(value)
    # the choice lasts for this command only (tests run many commands in one process)
    ctx.call_on_close(omp_version.unchoose)
    return value


class _Top(LazyGroup):
    """The top group: its own usage errors (an unknown command, a bad --omp) are one line too;
    without a command it prints its help and exits 0."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            if not args and self.no_args_is_help and not ctx.resilient_parsing:  # `omp-session` alone: its help, as `gh` does
                from ._errors import print_help

                print_help(ctx)
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            from ._errors import one_line

            raise one_line(e) from None
        except BrokenPipeError:  # `omp-session --version | true` (cli/_pipe.py)
            from ._pipe import leave_quietly, stdout_closed

            if not stdout_closed():
                raise
            leave_quietly()

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:  # `omp-session --omp 18.2.3` and no command: "Missing command"
            from ._errors import one_line

            raise one_line(e) from None

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            from ._errors import one_line

            raise one_line(e) from None


@click.group(cls=_Top, table=COMMANDS, package=__package__ or "omp_session.cli",
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__)
@click.option("--omp", "omp", metavar="VERSION", expose_value=False, is_eager=True, callback=_choose_omp,
              help="The omp release to imitate where releases differ, e.g. 18.2.3, or 18.3 for the newest "
                   "18.3 we know (a wrong one lists them). Default: $OMP_SESSION_OMP, else the newest "
                   "(docs/compatibility.md, \"Support matrix\").")
def cli() -> None:
    """Read and check the session files of the omp (oh-my-pi) coding agent.

    SESSION is a session file (.jsonl), a session id or a unique prefix of one, or 'latest'.
    Reading never changes the file.
    """
