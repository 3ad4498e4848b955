"""A reader that closes stdout early (``omp-session cat S | head -1``): every command ends there
quietly with status 0, as it would have had the reader taken everything (docs/cli.md, "Exit
status"). Imports nothing but the standard library: the fast paths (cli/_fast_view.py) use it.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

__all__ = ["leave_quietly", "rich_gave_up", "stdout_closed"]


def stdout_closed() -> bool:
    """Whether the reader of stdout has gone (the pipe has no reader): what a ``BrokenPipeError``
    means for the command's own output, and not for a socket or a child's pipe."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): not a pipe either
        return False
    try:
        import select

        poll = select.poll()
    except (ImportError, AttributeError):  # no poll (Windows): take EPIPE at its word, as click does
        return True
    poll.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poll.poll(0))


def leave_quietly() -> NoReturn:
    """End with status 0 and nothing on stderr: what is still buffered for stdout goes nowhere
    (the recipe of Python's signal docs: the final flush must not fail again)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass
    sys.exit(0)



def rich_gave_up(started: os.stat_result | None) -> bool:
    """Whether rich met the closed pipe: its ``Console.on_broken_pipe`` points stdout at
    ``os.devnull`` and exits 1, which would read as our "problems found". Stdout was something
    else when the command ``started`` (its ``fstat``) and is the null device now."""
    try:
        now = os.fstat(sys.stdout.fileno())
        null = os.stat(os.devnull)
    except (AttributeError, OSError, ValueError):
        return False
    return started is not None and not os.path.samestat(started, null) and os.path.samestat(now, null)
