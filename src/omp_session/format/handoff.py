"""Pieces handed to a thread of their own as they are made: the thread takes each in order (writes
it to a file, sends it down a pipe) while the maker goes on with the next, so work that waits on
the kernel (a copy into the page cache, a full pipe) runs without the interpreter lock beside the
making. What waits between them is bounded by a cost per piece: bytes where the pieces' sizes
vary, one each where a count is the bound.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

__all__ = ["handed_on"]


def handed_on(made: Iterable[bytes], take: Callable[[bytes], object], *, limit: int,
              cost: Callable[[bytes], int], name: str) -> int:
    """``take`` each of ``made`` in order, from a thread named ``name``; returns the bytes made.
    Pieces whose ``cost`` sums to at most ``limit`` wait for the thread (a piece that alone costs
    more waits alone), besides the one being taken and the one being made.

    The thread starts after the first piece is made (a generator that forks does so on its first
    step, and a process with a thread forks no child). Every piece handed on is taken or dropped
    before this returns or raises; a failed ``take`` is raised here, no piece taken after it and
    the maker stopped at its next piece; an error making a piece is raised once the pieces made
    before it are taken."""
    it = iter(made)
    first = next(it, None)
    if first is None:
        return 0
    waiting: deque[bytes | None] = deque()
    held = 0  # the cost of what waits
    turn = threading.Condition()
    failed: list[BaseException] = []

    def taker() -> None:
        nonlocal held
        while True:
            with turn:
                while not waiting:
                    turn.wait()
                piece = waiting.popleft()
                if piece is not None:
                    held -= cost(piece)
                turn.notify()
            if piece is None:
                return
            if not failed:
                try:
                    take(piece)
                except BaseException as e:  # raised by the maker's thread, below
                    failed.append(e)

    def hand(piece: bytes | None) -> None:
        nonlocal held
        with turn:
            price = 0 if piece is None else cost(piece)
            while price and waiting and held + price > limit:
                turn.wait()
            waiting.append(piece)
            held += price
            turn.notify()

    thread = threading.Thread(target=taker, name=name, daemon=True)
    thread.start()
    total = 0
    try:
        hand(first)
        total += len(first)
        for piece in it:
            if failed:
                break
            hand(piece)
            total += len(piece)
    finally:
        hand(None)
        thread.join()
    if failed:
        raise failed[0]
    return total
