"""How a library error reads on stderr, without click: one line, exit status 1.

cli/_errors.py applies it to every click command; cli/_fast_view.py, which answers the plain
``show``/``tree``/``context`` without importing click, applies the same rule through
:func:`reported_plain`, so both say an error the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from omp_session.errors import SessionError

__all__ = ["error_line", "reported_plain"]


def error_line(error: SessionError) -> str:
    return f"omp-session: {error}"


@contextmanager
def reported_plain() -> Iterator[None]:
    """A ``SessionError`` raised inside becomes its line on stderr and exit status 1."""
    try:
        yield
    except SessionError as e:
        sys.stderr.write(error_line(e) + "\n")
        sys.exit(1)
