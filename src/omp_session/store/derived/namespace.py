"""Namespaces: where a derived session came from, ``user@host`` (docs/team.md).

The user is everything before the last ``@`` and the host everything after it: a host name has
no ``@``, a user name may (``alice@example.com@laptop``). A namespace without ``@`` is all user
and has no host. The row-level security recipe (``rls.sql``) reads the user the same way.
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["check_namespace", "namespace_condition", "split_namespace"]


def check_namespace(value: str, what: str = "namespace") -> str | None:
    """Why ``value`` cannot be a namespace (or one part of it), or None when it can: not empty,
    no control characters, no surrounding spaces, and for a whole namespace no empty user or host
    around its ``@`` (a stored value a filter could never match)."""
    if not value:
        return f"the {what} is empty"
    if value != value.strip():
        return f"the {what} {value!r} starts or ends with a space"
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in value):
        return f"the {what} {value!r} holds a control character"
    if what == "namespace" and "@" in value:
        user, host = split_namespace(value)
        if not user:
            return f"the {what} {value!r} has no user before its @"
        if not host:
            return f"the {what} {value!r} has no host after its @"
    return None


def split_namespace(namespace: str) -> tuple[str, str | None]:
    """(user, host) of a namespace; host None when it has no ``@``."""
    user, at, host = namespace.rpartition("@")
    return (user, host) if at else (namespace, None)


def namespace_condition(dialect: str, column: str, *, user: str | None = None,
                        host: str | None = None) -> tuple[list[str], list[Any]]:
    """SQL conditions (``?`` placeholders) on the namespace ``column``: its user is ``user``, its
    host is ``host``. A session without a namespace matches neither."""
    where: list[str] = []
    args: list[Any] = []
    pg = dialect == "postgres"
    find, n = ("strpos", "?::integer") if pg else ("instr", "?")
    if user is not None:
        # user@… with no @ after it; or, for a user without @, the whole namespace
        cond = f"(substr({column}, 1, {n}) = ? AND {find}(substr({column}, {n}), '@') = 0)"
        args += [len(user) + 1, user + "@", len(user) + 2]
        if "@" not in user:
            cond = f"({cond} OR {column} = ?)"
            args.append(user)
        where.append(cond)
    if host is not None:
        if "@" in host:  # no host has one: nothing matches, said by a condition that is false
            where.append("1 = 0")
        else:
            tail = f"right({column}, {n})" if pg else f"substr({column}, -?)"
            where.append(f"({column} IS NOT NULL AND {tail} = ?)")
            args += [len(host) + 1, "@" + host]
    return where, args
