"""For tests of work a command shares with a forked child (format/split.py): run it in one
process, or with the split forced and each child watched or made to die."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest

from omp_session.format import split


@contextmanager
def one_process() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(split, "_worth_splitting", lambda size, start: False)
        yield


@contextmanager
def split_watched(module: ModuleType) -> Iterator[list[int]]:
    """The split forced on any file, and ``module.forked`` watched: yields a list that gets one
    item per child asked for, 0, or this process's pid where the child's part ran here after all
    (the child's own writes to the list are not seen here)."""
    asked: list[int] = []
    real = module.forked

    def watched(fn: Callable[[], Any], size: int) -> Any:
        def where() -> Any:
            asked[-1] = os.getpid()
            return fn()
        asked.append(0)
        return real(where, size)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(split, "_worth_splitting", lambda size, start: True)
        m.setattr(module, "forked", watched)
        yield asked


@contextmanager
def dying_children(module: ModuleType) -> Iterator[None]:
    """The split forced on any file, and each child ``module.forked`` makes dying before it sends
    anything (the call then runs in this process)."""
    parent = os.getpid()
    real = module.forked

    def dying(fn: Callable[[], Any], size: int) -> Any:
        def where() -> Any:
            if os.getpid() != parent:
                os._exit(3)
            return fn()
        return real(where, size)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(split, "_worth_splitting", lambda size, start: True)
        m.setattr(module, "forked", dying)
        yield
