"""Cyclic garbage collection paused while a pass builds many objects that make no cycles.

Every full collection walks every container alive, so a pass that keeps hundreds of thousands
of them (a 1 GB session's records, rows or usage entries) pays for them again and again: a
tenth to a fifth of ``show``, ``validate``'s entry pass and ``stats``. The same holds inside one
value: a record nested 100,000 levels deep is 100,000 live containers, and collections while the
exact parser built it made one such line cost more than linear time (issue 16: a 1.6 M-level line
parsed in 7.5 s, 2.8 s without collections). Reference counting still frees everything these
passes drop; what cycles they make are collected once collection is back on.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside the block (nested blocks: the outermost turns it back on)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
