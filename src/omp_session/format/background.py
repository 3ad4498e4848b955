"""One call in a second thread, for work that runs outside the interpreter lock (zlib, hashlib on
large pieces) while this thread goes on; its result or its exception is handed over on request."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Background"]

T = TypeVar("T")


class Background(Generic[T]):
    """``fn(stop)`` started in a daemon thread named ``name``; ``fn`` should return early once
    ``stop`` is set (see :meth:`cancel`)."""

    def __init__(self, fn: Callable[[threading.Event], T], name: str) -> None:
        self._stop = threading.Event()
        self._done: list[T] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[threading.Event], T]) -> None:
        try:
            self._done.append(fn(self._stop))
        except BaseException as e:  # handed to the caller in result()
            self._error = e

    def result(self) -> T:
        """Wait for the call; its value, or its exception raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._done[0]

    def cancel(self) -> None:
        """Ask the call to stop and wait until it has."""
        self._stop.set()
        self._thread.join()
