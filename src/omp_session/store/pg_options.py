"""The libpq options every PostgreSQL connection of ours is opened with (the URL's own win).

* ``connect_timeout``: a wrong service on the port never answers libpq's start-up.
* TCP keepalives and ``tcp_user_timeout``: a server that vanished without closing the connection
  (a cable cut, a suspended VM, a NAT that forgot the flow) is otherwise waited for forever, and
  ``sync --watch`` would hang on its next read or write instead of reconnecting. With these the
  kernel gives up on an idle connection after about a minute of silence (30 s, then 3 probes 10 s
  apart) and on unacknowledged data after 60 s; the driver then raises and the caller reconnects.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["KEEPALIVES", "libpq_options"]

KEEPALIVES: dict[str, int] = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
                              "keepalives_count": 3, "tcp_user_timeout": 60_000}


def libpq_options(conninfo: str, timeout: float, *, least: int = 1) -> dict[str, Any]:
    """Keyword options for ``psycopg.connect(conninfo, ...)``: each of ours the conninfo does not
    set itself (as ``key=`` in a key=value string or a URL's query). ``timeout`` in seconds
    (libpq counts whole seconds, at least ``least``)."""
    given = set(re.findall(r"(?:^|[\s?&])([a-z_]+)\s*=", conninfo))
    wanted: dict[str, Any] = {"connect_timeout": max(least, math.ceil(timeout)), **KEEPALIVES}
    return {k: v for k, v in wanted.items() if k not in given}
