"""``show``, ``tree`` and ``context`` of one small session without click (issue 15: start-up).

These three are what people type most, on sessions of a few hundred kilobytes, where importing
click costs more than reading and drawing the session. The plain form ``omp-session show
SESSION`` (no option, SESSION a path, an id or prefix, or ``latest``) is answered here by the same
library calls and the same drawing code (cli/_render.py) as the click command in cli/view.py.
Anything else (an option, a store, a large file, a file that is not a session, a name that
resolves to nothing or to several sessions) goes to click, which then gives its usual answer and
error messages: this path gives up before it has written anything.
"""

from __future__ import annotations

import os
import sys

__all__ = ["MAX_BYTES", "answer_view"]

COMMANDS = ("show", "tree", "context")
# beyond this the reading dominates and click's import no longer shows
MAX_BYTES = 4 * 1024 * 1024


def answer_view(argv: list[str]) -> bool:
    """Draw ``argv`` (``[command, SESSION]``) if it is a plain show/tree/context; True if done."""
    if len(argv) != 2 or argv[0] not in COMMANDS or argv[1].startswith("-") or not argv[1]:
        return False
    from omp_session.catalog.resolve import resolve_session

    try:
        path = resolve_session(argv[1])
        if os.path.getsize(path) > MAX_BYTES:
            return False
        from omp_session.model.session import open_session

        session = open_session(path)
    except Exception:  # nothing written yet: click's command runs and says what is wrong
        return False
    with session:
        from omp_session.catalog.not_a_session import why_not_a_session

        if why_not_a_session(session) is not None:  # click's command refuses it (cli/_store.open_one)
            return False
        findings = None
        if argv[0] == "show":
            from omp_session.ops.validate.check import validate

            findings = validate(session)
        from . import _render as render
        from ._report import reported_plain

        for stream in (sys.stdout, sys.stderr):  # as cli.main does for click's commands
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")
        try:
            with reported_plain():  # a library error reads as cli/_errors.reported has it
                if argv[0] == "show":
                    render.show(session, False, findings)
                elif argv[0] == "tree":
                    render.tree(session, False, depth=None, only_messages=False)
                else:
                    render.context(session, False, transcript=False)
        except BrokenPipeError:  # `show | head`: quiet, exit 0, as click's commands end (cli/_pipe.py)
            from ._pipe import leave_quietly, stdout_closed

            if not stdout_closed():
                raise
            leave_quietly()
    return True
