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

__all__ = ["KEEPALIVE_S", "event_payload", "plain", "session_events"]

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


def _start(follower: Follower) -> list[bytes]:
    try:
        follower.initial()
    except SessionError as e:  # a path that exists but cannot be read: said once, then polled as usual
        return [_sse("unreadable", {"reason": str(e)})]
    s = follower.session
    return [_sse("ready", {"leaf": plain(follower.leaf_id), "entries": 0 if s is None else len(s),
                           "title": follower.title})]


def _poll(follower: Follower) -> list[bytes]:
    return [_sse(e.kind, event_payload(e)) for e in follower.poll()]


async def session_events(path: str, *, interval: float, follow: bool = True,
                         clock: Callable[[], float] = time.monotonic) -> AsyncIterator[bytes]:
    """The event stream of the session file at ``path``. ``follow=False`` (an archive, which no
    one writes) says ``ready`` and then only keeps the connection."""
    yield b"retry: 1000\n\n"  # reconnect quickly after a restart of the server
    follower = Follower(path)
    if follow:
        for chunk in await anyio.to_thread.run_sync(_start, follower):
            yield chunk
    else:
        yield _sse("ready", {"leaf": None, "entries": None, "title": None})
    quiet_since = clock()
    while True:
        await anyio.sleep(interval)
        chunks = await anyio.to_thread.run_sync(_poll, follower) if follow else []
        for chunk in chunks:
            yield chunk
        if chunks:
            quiet_since = clock()
        elif clock() - quiet_since >= KEEPALIVE_S:
            yield b": keepalive\n\n"
            quiet_since = clock()
