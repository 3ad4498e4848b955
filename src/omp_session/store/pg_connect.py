"""Which client opens a PostgreSQL connection: the built-in one (:mod:`.pgwire`) when it can open
it exactly as psycopg would, else psycopg 3.

``OMP_SESSION_PG_DRIVER=psycopg`` always takes psycopg; ``OMP_SESSION_PG_DRIVER=wire`` always the
built-in client (a connection it cannot open is then an error, not psycopg's: for tests).
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["DRIVER_VARIABLE", "connect", "driver_errors"]

DRIVER_VARIABLE = "OMP_SESSION_PG_DRIVER"


def driver_errors() -> tuple[type[BaseException], ...]:
    """The exception classes a connection of ours may raise: the built-in client's, and
    psycopg's once something imported it."""
    from .pgwire import Error

    psycopg = sys.modules.get("psycopg")
    return (Error,) if psycopg is None else (Error, psycopg.Error)


def connect(conninfo: str, options: dict[str, Any], *,
            writes: bool = False) -> tuple[Any, tuple[type[BaseException], ...]]:
    """A connection in autocommit mode (``options``: libpq's, as store/pg_options.py gives them)
    and the exception classes to catch around it; ``writes``: psycopg's, whose COPY and
    ``executemany`` the caller uses. A failure to connect raises one of
    :func:`driver_errors` (read it again after the call: the fallback may have imported psycopg);
    psycopg missing where it is needed is :class:`~omp_session.errors.MissingExtraError`."""
    from . import pgwire

    driver = "psycopg" if writes else os.environ.get(DRIVER_VARIABLE, "")
    if driver != "psycopg":
        try:
            return pgwire.connect(conninfo, autocommit=True, **options), driver_errors()
        except pgwire.Unsupported as e:
            if driver == "wire":
                raise pgwire.OperationalError(
                    f"{DRIVER_VARIABLE}=wire: the built-in client cannot: {e}"
                ) from e
    from omp_session.extras import require

    psycopg = require("psycopg")
    return psycopg.connect(conninfo, autocommit=True, **options), driver_errors()
