"""``/events/<id>``: a session's changes as server-sent events, from the ``tail -f`` follower.

The stream opens with ``ready`` (the leaf and the number of entries now, so a page rendered a
moment earlier can tell it missed something), then one event per change the follower sees:
``appended``, ``branch_switch``, ``title_changed``, ``created`` / ``truncated`` / ``replaced``
(the file was read again), ``deleted``, ``skipped``, ``unreadable``. Events carry ids and counts,
never entries: the page fetches what it shows. A comment line every few seconds finds a closed
connection. Nothing the file does ends the stream; only the client leaving does.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import anyio.to_thread

from omp_session.errors import SessionError
from omp_session.js.codec import UNDEFINED
from omp_session.ops.follow import (
    Appended,
    BranchSwitch,
    Deleted,
    Event,
    Follower,
    Reloaded,
    Skipped,
    TitleChanged,
    Unreadable,
)

__all__ = ["KEEPALIVE_S", "event_payload", "plain", "session_events", "sse"]

KEEPALIVE_S: Final = 10.0


def plain(value: Any) -> Any:
    """An id as JSON can carry it (an entry's id may be missing or of any type in a damaged file)."""
    if value is None or value is UNDEFINED:
        return None
    return value if isinstance(value, str | int | float | bool) else str(value)


def _entry_id(entry: Any) -> Any:
    return plain(entry.get("id")) if isinstance(entry, dict) else None


def event_payload(event: Event) -> dict[str, Any]:
    """What the stream says about one follower event."""
    if isinstance(event, Appended):
        e = event.entry
        return {"id": _entry_id(e), "type": plain(e.get("type")) if isinstance(e, dict) else None}
    if isinstance(event, BranchSwitch):
        return {"old_leaf": plain(event.old_leaf), "new_leaf": plain(event.new_leaf),
                "fork_id": plain(event.fork_id), "entries": [_entry_id(e) for e in event.entries]}
    if isinstance(event, Reloaded):
        return {"old_leaf": plain(event.old_leaf), "new_leaf": plain(event.new_leaf),
                "branch_length": event.branch_length}
    if isinstance(event, TitleChanged):
        return {"old": event.old, "new": event.new}
    if isinstance(event, Skipped):
        return {"offset": event.offset, "length": event.length}
    if isinstance(event, Unreadable):
        return {"reason": event.reason}
    assert isinstance(event, Deleted)
    return {}


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=True)}\n\n".encode()


def sse(kind: str, data: dict[str, Any]) -> bytes:
    """One server-sent event (a stored session's stream sends the same)."""
    return _sse(kind, data)


def _start(follower: Follower) -> list[bytes]:
    try:
        follower.initial()
    except SessionError as e:  # a path that exists but cannot be read: said once, then polled as usual
        return [_sse("unreadable", {"reason": str(e)})]
    s = follower.session
    return [_sse("ready", {"leaf": plain(follower.leaf_id), "entries": 0 if s is None else len(s),
                           "title": follower.title})]


_NOT_LISTED: Final = "no longer a session file of the sessions root (a symlink or not a regular file)"


class _Guarded:
    """The follower, asked only while its path is still a file the listing would serve: the
    follower opens the path on every poll, so a session swapped for a symlink would otherwise be
    read wherever the link points, and its title and ids told to the page. Whatever was read
    while the path was not allowed is thrown away with the follower that read it."""

    def __init__(self, path: str, allowed: Callable[[str], bool]) -> None:
        self.path = path
        self.allowed = allowed
        self.follower = Follower(path)
        self.refused = False

    def _refuse(self) -> list[bytes]:
        self.follower = Follower(self.path)
        if self.refused:
            return []
        self.refused = True
        return [_sse("unreadable", {"reason": _NOT_LISTED})]

    def start(self) -> list[bytes]:
        if not self.allowed(self.path):
            return self._refuse()
        said = _start(self.follower)
        return said if self.allowed(self.path) else self._refuse()

    def poll(self) -> list[bytes]:
        if not self.allowed(self.path):
            return self._refuse()
        if self.refused:  # a file again: read afresh, and the page reloads
            said = _start(self.follower)
            if not self.allowed(self.path):
                return self._refuse()
            if not said[0].startswith(b"event: ready"):
                return []  # still not readable: said already
            self.refused = False
            f = self.follower
            return [_sse("replaced", {"old_leaf": None, "new_leaf": plain(f.leaf_id),
                                      "branch_length": len(f.branch)})]
        events = self.follower.poll()
        if not self.allowed(self.path):  # it changed while it was read
            return self._refuse()
        return [_sse(e.kind, event_payload(e)) for e in events]


async def session_events(path: str, *, interval: float, follow: bool = True,
                         clock: Callable[[], float] = time.monotonic,
                         allowed: Callable[[str], bool] = lambda _path: True,
                         stopping: threading.Event | None = None) -> AsyncIterator[bytes]:
    """The event stream of the session file at ``path``. ``follow=False`` (an archive, which no
    one writes) says ``ready`` and then only keeps the connection. ``allowed(path)`` says whether
    the path may still be read (checked before and after each poll); the stream ends when
    ``stopping`` is set."""
    yield b"retry: 1000\n\n"  # reconnect quickly after a restart of the server
    guarded = _Guarded(path, allowed)
    if follow:
        for chunk in await anyio.to_thread.run_sync(guarded.start):
            yield chunk
    else:
        yield _sse("ready", {"leaf": None, "entries": None, "title": None})
    quiet_since = clock()
    while stopping is None or not stopping.is_set():
        await anyio.sleep(interval)
        if stopping is not None and stopping.is_set():
            return
        chunks = await anyio.to_thread.run_sync(guarded.poll) if follow else []
        for chunk in chunks:
            yield chunk
        if chunks:
            quiet_since = clock()
        elif clock() - quiet_since >= KEEPALIVE_S:
            yield b": keepalive\n\n"
            quiet_since = clock()
