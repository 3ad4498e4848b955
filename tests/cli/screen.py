"""``omp-session ARGS`` run in-process as the console script runs it (the quick path for a plain
show, tree or context, click for the rest), stdout a terminal or a pipe: what the display tests
(test_display_safety.py, test_display_width.py) read."""

from __future__ import annotations

import io
import os
import re
import sys

import pytest

OUR_STYLE = re.compile(r"\x1b\[[0-9;]*m")


class Screen(io.StringIO):
    """stdout as a terminal (what ``isatty()`` says is what the commands look at) of ``size``
    columns (``None``: no size to ask)."""

    def __init__(self, size: int | None = None) -> None:
        super().__init__()
        self.size = size

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        if self.size is None:
            raise io.UnsupportedOperation("fileno")
        return 1


def run_main(monkeypatch: pytest.MonkeyPatch, args: list[str], *, tty: bool, columns: int | None = None,
             terminal: int | None = None) -> str:
    """Everything ``omp-session ARGS`` writes to stdout, which is a terminal (of ``terminal``
    columns) or a pipe, with ``COLUMNS`` set to ``columns`` or unset; it must succeed."""
    from omp_session.cli import main

    out: io.StringIO = Screen(terminal) if tty else io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", out)
        m.setattr(sys, "argv", ["omp-session", *args])
        if terminal is not None:
            m.setattr(os, "get_terminal_size", lambda _fd=0: os.terminal_size((terminal, 24)))
        m.setenv("OMP_SESSION_PAGER", "0")
        m.delenv("NO_COLOR", raising=False)
        if columns is None:
            m.delenv("COLUMNS", raising=False)
        else:
            m.setenv("COLUMNS", str(columns))
        try:
            main()
        except SystemExit as e:
            assert e.code in (0, None), out.getvalue()
    return out.getvalue()
