"""``/events/<id>`` of a stored session: a store has no file to follow, so its key's size and
modified time (``storage.stat``) are polled, and a change is told with the follower's event
names (events.py): ``appended`` when the session grew, ``replaced`` when it was rewritten
(shorter, or the same size at another time), ``deleted`` when the key is gone. The page
fetches itself again on any of them, as for a file."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Final

import anyio.to_thread

from omp_session.catalog.stored import read_stored_session
from omp_session.errors import SessionError
from omp_session.format.blobs import MemoryBlobStore
from omp_session.store.base import SessionStorage, StoredFile

from .events import KEEPALIVE_S, plain, sse

__all__ = ["STORE_POLL_S", "store_events"]

STORE_POLL_S: Final = 1.0


def _facts(storage: SessionStorage, key: str) -> tuple[StoredFile | None, dict[str, object]]:
    """The key's stat, and the leaf, number of entries and title of the session it holds now."""
    stored = storage.stat(key)
    if stored is None:
        return None, {}
    try:
        with read_stored_session(storage, key, blob_store=MemoryBlobStore()) as s:
            return stored, {"leaf": plain(s.get_leaf_id()), "entries": len(s), "title": s.get_session_name()}
    except FileNotFoundError:
        return None, {}


async def store_events(storage: SessionStorage, key: str, *, interval: float = STORE_POLL_S,
                       clock: Callable[[], float] = time.monotonic,
                       stopping: threading.Event | None = None) -> AsyncIterator[bytes]:
    """The event stream of the stored session ``key``; ends when ``stopping`` is set."""
    yield b"retry: 1000\n\n"
    try:
        last, facts = await anyio.to_thread.run_sync(_facts, storage, key)
    except (SessionError, OSError) as e:
        last, facts = None, {}
        yield sse("unreadable", {"reason": str(e)})
    else:
        yield sse("ready", facts) if last is not None else sse("deleted", {})
    quiet_since = clock()
    while stopping is None or not stopping.is_set():
        await anyio.sleep(interval)
        if stopping is not None and stopping.is_set():
            return
        try:
            now = await anyio.to_thread.run_sync(storage.stat, key)
        except (SessionError, OSError) as e:  # the database went away: said, then polled again
            yield sse("unreadable", {"reason": str(e)})
            quiet_since = clock()
            continue
        if now == last:
            if clock() - quiet_since >= KEEPALIVE_S:
                yield b": keepalive\n\n"
                quiet_since = clock()
            continue
        if now is None:
            last = None
            yield sse("deleted", {})
        else:
            grew = last is not None and now.size > last.size
            try:
                now, facts = await anyio.to_thread.run_sync(_facts, storage, key)
            except (SessionError, OSError) as e:
                yield sse("unreadable", {"reason": str(e)})
                continue
            last = now
            if grew:
                yield sse("appended", {"id": facts.get("leaf"), "type": None})
            else:
                yield sse("replaced", {"old_leaf": None, "new_leaf": facts.get("leaf"),
                                        "branch_length": facts.get("entries")})
        quiet_since = clock()
