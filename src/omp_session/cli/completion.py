"""``omp-session completion bash|zsh|fish``: the shell completion script (click's), to install."""

from __future__ import annotations

import click

from ._errors import command

__all__ = ["completion"]

# the variable click's completion answers to, named after the program
_VAR = "_OMP_SESSION_COMPLETE"


@command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL: commands, options and session ids.

    \b
    Install (then open a new shell):
      bash:  echo 'eval "$(omp-session completion bash)"' >> ~/.bashrc
      zsh:   echo 'eval "$(omp-session completion zsh)"' >> ~/.zshrc
      fish:  omp-session completion fish \\
               > ~/.config/fish/completions/omp-session.fish

    SESSION completes to 'latest' and the current project's session ids (8 characters, newest
    first), read from the file names alone.
    """
    from click.shell_completion import get_completion_class

    from ._group import cli

    cls = get_completion_class(shell)
    assert cls is not None  # the Choice above names only shells click knows
    click.echo(cls(cli, {}, "omp-session", _VAR).source())
