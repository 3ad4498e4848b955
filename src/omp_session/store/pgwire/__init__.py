"""A small PostgreSQL client in the standard library: the wire protocol 3.0 over a socket, for the
connections psycopg 3 would open the same way (``import psycopg`` alone costs 0.2-0.4 s, far more
than a read command's queries).

It stands in for ``psycopg.connect(conninfo, autocommit=True, **options)`` only where it gives the
same answers: a ``postgresql://`` URL with one host, the options :mod:`.pg_options` passes and
``sslmode`` disable/allow/prefer/require. Anything libpq would read or do beyond that (another
conninfo form, a unix socket, several hosts, other URL options, a ``PG*`` environment variable, a
password file, client certificates, Kerberos, channel binding, an authentication other than trust,
password, MD5 and SCRAM-SHA-256, a retry libpq would make with or without TLS) raises
:class:`Unsupported`, before connecting or during the start-up: the caller then connects through
psycopg (:mod:`.pg_connect`).

What it returns is what psycopg 3 returns by default: parameters typed as psycopg types them
(``str`` as unknown, ``int`` as the smallest integer type, lists as arrays), results read in text
format into ``int``, ``float``, ``Decimal``, ``bool``, ``str``, ``bytes``, JSON values and lists;
error messages as libpq words them (``str(e)`` is psycopg's: the severity left out). Types psycopg
makes other objects of (dates and times, intervals, UUIDs, network addresses, ranges, records)
come back as their text: none of our reading queries returns one.

Exceptions::

    Unsupported            not an Error: connect with psycopg instead
    Error                  .sqlstate (None unless the server sent one)
    ├── OperationalError   the connection: refused, lost, closed, a peer that is not PostgreSQL
    │   └── ConnectionTimeout
    ├── DatabaseError      the server refused a statement
    └── ProgrammingError   a placeholder or a parameter this client cannot send

Modules, each importing only those above it: :mod:`.errors`; :mod:`.conninfo` (the URL and options),
:mod:`.messages` (framing, error wording), :mod:`.params` (parameters out), :mod:`.results`
(values in), :mod:`.auth` (MD5, SCRAM); :mod:`.connection` (the socket, start-up, queries, cursor).
"""

from __future__ import annotations

from .connection import Connection, Cursor, connect
from .errors import ConnectionTimeout, DatabaseError, Error, OperationalError, ProgrammingError, Unsupported
from .results import Column

__all__ = [
    "Column",
    "Connection",
    "ConnectionTimeout",
    "Cursor",
    "DatabaseError",
    "Error",
    "OperationalError",
    "ProgrammingError",
    "Unsupported",
    "connect",
]
