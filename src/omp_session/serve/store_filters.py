"""``user=`` and ``machine=`` (``serve --store``): the sessions of one namespace, ``user@machine``,
as ``list``, ``search`` and ``stats --store --user/--machine`` filter them (docs/serve.md). The
filters themselves are the derived tables' (store/derived/namespace.py); here are the request's
values, what the store offers to pick from, and why a store cannot filter.

On the files the parameters are a 400: the files carry no namespace, and a filter that is
silently not applied would show every session as if it were one person's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from omp_session.errors import SessionError, StoreError
from omp_session.store.derived.namespace import check_namespace, split_namespace

from .sessions import QueryError

if TYPE_CHECKING:
    from omp_session.store.derived import DerivedTables

__all__ = ["Namespaces", "namespace_filters", "needs_tables", "store_namespaces"]

Namespaces = tuple[list[str], list[str]]  # the users and the machines a store's sessions came from


def namespace_filters(params: Mapping[str, str], *, store: bool) -> tuple[str | None, str | None]:
    """(user, host) a request asks for (None: any; an empty value is none, as a form sends "all").
    Raises QueryError on the files, and for a value no namespace can hold."""
    user, host = params.get("user") or None, params.get("machine") or None
    for name, what, value in (("user", "user", user), ("machine", "host", host)):
        if value is None:
            continue
        if not store:
            raise QueryError(f"{name}= filters a store's sessions by where they were synced from: it needs "
                             "omp-session serve --store URL")
        why = check_namespace(value, what)
        if why is not None:
            raise QueryError(f"{name}= {why}")
    return user, host


def needs_tables(name: str, version: int | None, *, supported: bool = True) -> SessionError:
    """Why ``user=``/``machine=`` cannot be applied: the namespaces are only in the search tables
    (a StoreError for MariaDB and Redis, which have none; a SessionError when they are missing or
    of another layout: run ``index --store``)."""
    if not supported:
        from omp_session.store.derived import NOT_SUPPORTED

        return StoreError(f"{name}: user= and machine= {NOT_SUPPORTED}")
    from omp_session.store.derived.schema import SCHEMA_VERSION

    if version is not None and version > SCHEMA_VERSION:  # index --store refuses those: the CLI's advice
        from omp_session.store.derived.layout import newer_layout

        return SessionError(newer_layout(name, version))
    why = "there are none yet" if version is None else f"they are of another layout ({version})"
    return SessionError(f"{name}: user= and machine= read the namespaces in the search tables, and {why}: "
                        "run omp-session index --store URL")


def store_namespaces(tables: DerivedTables, root: str) -> Namespaces | None:
    """The users and machines of the namespaces of the sessions listed under ``root``, each
    sorted; None when the tables are not of this omp-session's layout (nothing to filter by)."""
    from omp_session.store.derived.schema import SCHEMA_VERSION

    if tables.version() != SCHEMA_VERSION:
        return None
    # the sessions list --store --all lists: directly in a bucket under the root
    rows = tables.rows(f"SELECT DISTINCT namespace FROM {tables.names.sessions} WHERE root_folder = ? "
                       "AND list_id IS NOT NULL AND namespace IS NOT NULL", [root], "listing the namespaces")
    users: set[str] = set()
    hosts: set[str] = set()
    for (namespace,) in rows:
        user, host = split_namespace(str(namespace))
        users.add(user)
        if host is not None:
            hosts.add(host)
    return sorted(users), sorted(hosts)
