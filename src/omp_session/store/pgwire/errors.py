"""The client's exceptions (the hierarchy :mod:`.` describes) and the words libpq uses for a
connection the server or the network ended."""

from __future__ import annotations

import os

__all__ = [
    "SERVER_GONE",
    "Closed",
    "ConnectionTimeout",
    "DatabaseError",
    "Error",
    "OperationalError",
    "ProgrammingError",
    "Unsupported",
    "os_error",
]

SERVER_GONE = (
    "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n"
    "\tbefore or while processing the request."
)


class Unsupported(Exception):
    """What the connection needs is libpq's to do: connect with psycopg."""


class Error(Exception):
    """A driver error; ``str()`` is the message as psycopg gives it."""

    sqlstate: str | None = None

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class OperationalError(Error):
    pass


class ConnectionTimeout(OperationalError):
    pass


class DatabaseError(Error):
    pass


class ProgrammingError(Error):
    pass


class Closed(ConnectionError):
    """The server closed the connection (end of file)."""




def os_error(e: OSError) -> str:
    return os.strerror(e.errno) if e.errno else str(e)
