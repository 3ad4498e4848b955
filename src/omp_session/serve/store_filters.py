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
    from omp_session.store.derived.layout import TablesLayout

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


def needs_tables(layout: TablesLayout) -> SessionError:
    """Why ``user=``/``machine=`` cannot be applied: the namespaces are only in the search tables,
    and ``layout`` (store/derived/layout.py) says why those cannot serve. A StoreError for MariaDB
    and Redis, which have none; a SessionError (a 400) when they are missing or of another layout:
    run ``index --store``, or upgrade omp-session for a newer one (which ``index --store``
    refuses)."""
    from omp_session.store.derived.layout import Fact, newer_layout

    if layout.fact is Fact.UNSUPPORTED:
        return StoreError(f"{layout.name}: user= and machine= {layout.why}")
    if layout.fact is Fact.NEWER:  # the command line's line
        return SessionError(newer_layout(layout.name, layout.version))
    return SessionError(f"{layout.name}: user= and machine= read the namespaces in the search tables, and "
                        f"{layout.why}")


def store_namespaces(tables: DerivedTables, root: str) -> Namespaces | None:
    """The users and machines of the namespaces of the sessions listed under ``root``, each
    sorted; None when the tables are not of this omp-session's layout (nothing to filter by)."""
    from omp_session.store.derived.layout import tables_layout

    if not tables_layout(tables).current:
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
