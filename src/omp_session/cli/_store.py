"""``--store URL`` and the SESSION it changes: read sessions from a database or Redis store
instead of the files (docs/stores.md). Used by _options and the commands that take ``--store``.

The option is eager, so the store is open before SESSION is resolved: with ``--store``, SESSION is
a key in that store (omp's keys are the absolute paths the files would have), a path relative to
the store's root, a session id or a unique prefix of one, or ``latest`` (the newest session of the
current project's bucket in the store). The store is opened for reading: nothing is created.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from omp_session.catalog.resolve import name_matches, pick_one, resolve_session
from omp_session.errors import FormatError, SessionError, SessionFileError, SessionNotFoundError
from omp_session.paths import project_dir_name

if TYPE_CHECKING:  # the store modules load only when --store is given; the model when a session is read
    from omp_session.model.session import Session
    from omp_session.store import StoreURL
    from omp_session.store.base import SessionStorage

__all__ = ["KeyOrPath", "active_store", "open_one", "open_stored", "refuse_non_session", "refuse_non_session_file",
           "resolve_any", "resolve_in_store", "store_option", "stored_keys", "timeout_option"]

F = TypeVar("F", bound=Callable[..., Any])
_KEY = "omp_session.store"


def timeout_option(fn: F) -> F:
    """``--timeout SECONDS``: how long a store's server has to connect and finish its handshake."""
    return click.option(
        "--timeout", metavar="SECONDS", type=click.FloatRange(min=0, min_open=True, max=1e9), default=None,
        is_eager=True, expose_value=False, callback=_got_timeout,
        help="With --store: give up on a server that has not connected and answered its handshake after "
             "SECONDS (default 10, or the URL's timeout= option).")(fn)


def store_option(fn: F) -> F:
    """``--store URL`` and ``--timeout SECONDS``; eager, so the store is open before SESSION is resolved."""
    return timeout_option(click.option(
        "--store", metavar="URL", is_eager=True, expose_value=False, callback=_got_url,
        help="Read from this session store instead of the files: file:DIR, sqlite:PATH, postgresql://…, "
             "mysql://…, redis://… (docs/stores.md). SESSION is then a key, an id or prefix, or latest.")(fn))


# click runs eager callbacks in the order the options were typed: the store opens when the second
# of the two has been seen, so `--timeout 2 --store URL` and `--store URL --timeout 2` agree
_URL, _TIMEOUT = "omp_session.store.url", "omp_session.store.timeout"


def _got_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    ctx.meta[_URL] = (value,)
    _open(ctx)


def _got_timeout(ctx: click.Context, param: click.Parameter, value: float | None) -> None:
    ctx.meta[_TIMEOUT] = (value,)
    _open(ctx)


def _open(ctx: click.Context) -> None:
    if _URL not in ctx.meta or _TIMEOUT not in ctx.meta:
        return
    (value,), (timeout,) = ctx.meta.pop(_URL), ctx.meta.pop(_TIMEOUT)
    if value is None:
        return
    from omp_session.store import open_store, parse_store_url

    parsed = parse_store_url(value)
    if timeout is not None:  # every connection the command makes (the search tables' too) waits as long
        parsed = dataclasses.replace(parsed, options={**parsed.options, "timeout": repr(timeout)})
    storage: SessionStorage
    if parsed.kind == "postgres":
        # connected when first used: `list/stats/search --store` read the search tables only, on a
        # connection of their own, and connecting and checking the session table cost as much again
        storage = cast("SessionStorage", _OnFirstUse(lambda: open_store(parsed, create=False, timeout=timeout)))
    else:
        storage = open_store(parsed, create=False, timeout=timeout)
    ctx.meta[_KEY] = (parsed, storage)
    # on the outermost context: a SESSION that is not found, or a usage error, ends the parsing of
    # this command's context, whose close callbacks then never run; the outermost one always closes
    ctx.find_root().call_on_close(storage.close)


class _OnFirstUse:
    """A store opened (connected, its table checked) when a command first uses it; its errors are
    then the command's, each one line as ever."""

    def __init__(self, opener: Callable[[], SessionStorage]) -> None:
        self._opener = opener
        self._storage: SessionStorage | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.opened(), name)

    def opened(self) -> SessionStorage:
        if self._storage is None:
            self._storage = self._opener()
        return self._storage

    def close(self) -> None:
        if self._storage is not None:
            self._storage.close()


def active_store(*, connect: bool = False) -> tuple[StoreURL, SessionStorage] | None:
    """The store ``--store`` opened for the running command, if any. A server's store is connected
    when first used; ``connect``: now (a server to serve from it checks it before it listens)."""
    ctx = click.get_current_context(silent=True)
    found = ctx.meta.get(_KEY) if ctx is not None else None
    if not isinstance(found, tuple):
        return None
    if connect and isinstance(found[1], _OnFirstUse):
        return found[0], found[1].opened()
    return found


def resolve_in_store(arg: str, parsed: StoreURL, storage: SessionStorage, cwd: str | None = None, *,
                     every_project: bool = False) -> str:
    """The key ``arg`` names in the store (see the module docstring); ``every_project`` as for
    the files (catalog/resolve.py)."""
    root = parsed.root
    if arg.endswith(".jsonl") or "/" in arg:
        key = arg if arg.startswith("/") else root + arg
        if storage.stat(key) is None:
            raise SessionNotFoundError(f"{parsed.name}: no session {key}")
        return key
    bucket = root + project_dir_name(cwd if cwd is not None else os.getcwd()) + "/"
    if arg == "latest":
        if every_project:  # a session directly in a bucket under the root
            found = [f for f in storage.scan(root) if f.path[len(root):].count("/") == 1
                     and f.path.endswith(".jsonl")]
        else:
            found = [f for f in storage.scan(bucket) if "/" not in f.path[len(bucket):]]
        if not found:
            where = "in any project under " + root if every_project else "for this project under " + bucket
            raise SessionNotFoundError(f"{parsed.name}: no session {where}")
        # omp's order: newest modified first, then (the name starts with the creation time) the
        # last name, which also decides between sessions restored with the same mtime
        return max(found, key=lambda f: (f.mtime_ms, f.path)).path
    def matches(prefix: str, depth: int) -> list[str]:
        # as among the files: sessions directly in a bucket, not transcripts in artifacts folders
        files = [f for f in storage.scan(prefix) if f.path[len(prefix):].count("/") <= depth
                 and not f.path.rsplit("/", 1)[-1].startswith(".")]
        return [f.path for f in files if name_matches(f.path.rsplit("/", 1)[-1], arg)]

    # root: a store whose root is one bucket too
    candidates = matches(root, 1) if every_project else matches(bucket, 0) or matches(root, 1)
    return pick_one(candidates, arg, f"{parsed.name}: no session matches {arg!r} under {root}")


EVERY_PROJECT = "omp_session.every_project"  # ctx.meta: SESSION's command was given --all
EVERY_PROJECT_OFFERED = "omp_session.every_project_offered"  # ctx.meta: the command takes that --all


def _every_project() -> bool:
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool(ctx.meta.get(EVERY_PROJECT))


def _offers_every_project() -> bool:
    """Whether the running command takes ``--all`` for SESSION (cat's old ``--all`` is refused)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool(ctx.meta.get(EVERY_PROJECT_OFFERED))


def resolve_any(arg: str) -> str:
    """SESSION resolved in the ``--store`` store when one is active, else among the files;
    with the command's ``--all``, in every project."""
    active = active_store()
    if active is None:
        try:
            return resolve_session(arg, every_project=_every_project())
        except SessionNotFoundError as e:
            if arg != "latest" or _every_project() or not _offers_every_project():
                raise
            # latest is the current project's: a first try from another folder finds nothing
            raise SessionNotFoundError(f"{e} (--all: the newest of every project)") from None
    return resolve_in_store(arg, *active, every_project=_every_project())


class KeyOrPath(click.Path):
    """A PATH argument that, under ``--store``, is a key or key prefix in the store (not checked
    on the local disk); among the files, what is no existing path may be a session id, a unique
    prefix of one or ``latest`` (resolved as SESSION is everywhere else)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if active_store() is not None:
            return Path(value) if isinstance(value, str) else value
        if isinstance(value, str) and not os.path.lexists(value) and os.sep not in value \
                and not value.endswith((".jsonl", ".jsonl.gz")):
            return Path(resolve_session(value, every_project=_every_project()))
        return super().convert(value, param, ctx)


def stored_keys(paths: tuple[Path, ...]) -> list[Path]:
    """Under ``--store``: the session keys PATHs name — a key, or every session under a key
    prefix (a directory); without PATH, every session under the store's root."""
    active = active_store()
    assert active is not None
    parsed, storage = active
    out: list[Path] = []
    for raw in [str(p) for p in paths] or [parsed.root]:
        key = raw if raw.startswith("/") else parsed.root + raw
        if key.endswith(".jsonl") and storage.stat(key) is not None:
            out.append(Path(key))
            continue
        found = storage.scan(key if key.endswith("/") else key + "/")
        if not found:
            raise SessionNotFoundError(f"{parsed.name}: no session under {key}")
        out.extend(Path(f.path) for f in found)
    return out


def open_stored(path: str | os.PathLike[str], *, usage: bool = False) -> Session:
    """The session ``path`` names: from the ``--store`` store when one is active, else the file
    (``usage``: as :func:`omp_session.open`'s)."""
    active = active_store()
    if active is None:
        from omp_session.model.session import open_session

        return open_session(path, usage=usage)
    parsed, storage = active
    try:
        from omp_session.catalog.stored import read_stored_session

        return read_stored_session(storage, os.fspath(path), usage=usage)
    except SessionError:  # SessionFileError is an OSError too: it already says what happened
        raise
    except FileNotFoundError:
        raise SessionNotFoundError(f"{parsed.name}: no session {os.fspath(path)}") from None
    except IsADirectoryError:  # file: stores only: a key naming a folder
        raise SessionFileError(os.fspath(path), "is a directory, not a session file") from None
    except OSError as e:
        raise SessionFileError(os.fspath(path), e.strerror or str(e)) from None


def open_one(path: str | os.PathLike[str], *, usage: bool = False) -> Session:
    """The session ``path`` names, for a command that reads one session (show, tree, context, cat,
    export, stats, resume...): as :func:`open_stored`, but a file (or a key's value) that is not an
    omp session at all is refused with one line, the words ``validate`` uses (catalog/not_a_session.py).
    ``validate`` and ``repair`` report on such files: they call :func:`open_stored`."""
    s = open_stored(path, usage=usage)
    try:
        refuse_non_session(s, path)
    except BaseException:
        s.close()
        raise
    return s


def refuse_non_session(s: Session, path: str | os.PathLike[str] | None = None) -> None:
    """FormatError (``PATH: not an omp session file: <why>``, exit 1) when ``s`` was read from
    something that is not an omp session; a damaged session passes."""
    from omp_session.catalog.not_a_session import why_not_a_session

    reason = why_not_a_session(s)
    if reason is not None:
        where = s.path if s.path is not None else (os.fspath(path) if path is not None else None)
        raise not_a_session_error(reason, where)


def refuse_non_session_file(path: str | os.PathLike[str]) -> None:
    """:func:`refuse_non_session` of a file a command reads itself (size, redact, stats), or of a
    key in the ``--store`` store; it reads a file's first megabyte, or the whole of it only when
    that does not tell."""
    if active_store() is not None:
        open_one(path).close()
        return
    from omp_session.catalog.not_a_session import why_not_a_session_file

    reason = why_not_a_session_file(path)
    if reason is not None:
        raise not_a_session_error(reason, os.path.expanduser(os.fspath(path)))


def not_a_session_error(reason: str, path: str | None) -> FormatError:
    """What a command raises for a file that is no session: ``PATH: not an omp session file: <why>``,
    one line, exit 1."""
    from omp_session.catalog.not_a_session import not_a_session_message

    return FormatError(not_a_session_message(reason), path=path)
