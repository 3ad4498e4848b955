"""The usage and models of the Markdown export's header (docs/export.md), in as few passes as
give the same figures: the branch's models and usage, and the usage of every branch.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from omp_session.errors import ContextError
from omp_session.format.split import ReadAhead
from omp_session.model.session import Session, with_side_calls
from omp_session.model.text import model_of, nonempty_str, usage_line
from omp_session.model.usage import branch_and_all_usage, usage_statistics
from omp_session.model.usage_plain import Numbers, usage_reader

__all__ = ["all_figures", "branch_figures", "note_model", "usage_text"]


def usage_text(entries: Iterable[Any]) -> str:
    try:
        return usage_line(usage_statistics(entries))
    except ContextError as e:  # omp cannot sum these either; say so rather than fail the export
        return f"unavailable ({e})"


def branch_figures(s: Session, branch: Sequence[int], counted: Sequence[int]) -> tuple[list[str], str]:
    """The models of ``branch`` in order of first use and its usage line, in one pass that keeps
    no entry."""
    models: dict[str, None] = {}
    mine = [k for k in branch if counted[k]]
    on_branch = set(mine)

    def entries() -> Iterator[Any]:
        for k in with_side_calls(s, branch, mine):
            entry = s.peek_entry(k)
            if k in on_branch:  # (a side call's model is not one the conversation used)
                note_model(models, entry)
            yield entry

    walk = entries()
    usage = usage_text(walk)
    for _ in walk:  # usage gave up part-way: the models still come from the whole branch
        pass
    return list(models), usage


def all_figures(s: Session, branch: Sequence[int], counted: Sequence[int]) -> tuple[list[str], str, str]:
    """(the models of ``branch``, its usage line, the usage line of every branch), as
    :func:`branch_figures` and :func:`usage_text` over every counted entry give them: both sums
    as ``branch_and_all_usage`` makes them (one pass when the branch is in file order, a plain
    assistant's usage read from its bytes: model/usage_plain.py), the branch's models noted as
    its entries pass. Only where omp would throw are the entries read again, each sum on its own
    so that each says where omp gives up on it."""
    every = [k for k in range(len(s)) if counted[k]]
    mine = [k for k in branch if counted[k]]
    models: dict[str, None] = {}
    on_branch = set(mine)  # (a side call's model is not one the conversation used)
    mine = with_side_calls(s, branch, mine)
    plain, cancel = _usage_ahead(s, every)
    peek = s.peek_in_order()

    def numbers(k: int) -> Sequence[int | float] | None:
        fast = plain(k)
        if fast is None:
            return None
        if k in on_branch:
            model = model_of({"model": fast[0], "provider": fast[1]})
            if model:
                models.setdefault(model)
        return fast[2]

    def entry(k: int) -> Any:
        value = peek(k)
        if k in on_branch:
            note_model(models, value)
        return value

    try:
        branch_usage, whole = branch_and_all_usage(entry, mine, every, numbers)
        return list(models), usage_line(branch_usage), usage_line(whole)
    except ContextError:
        pass
    finally:
        cancel()
    models_seen, usage = branch_figures(s, branch, counted)
    if mine == every:
        return models_seen, usage, usage
    return models_seen, usage, usage_text(s.peek_entry(k) for k in every)


def _usage_ahead(s: Session, every: list[int]) -> tuple[Callable[[int], Numbers | None], Callable[[], None]]:
    """What :func:`usage_reader` reads of each entry of ``every`` (model, provider, numbers, or
    None), asked for in that order, and what stops the reading: the numbers the scan kept, or
    (a second of a 1 GB session's export before its first line) read from the entries' bytes,
    the later part by a forked child meanwhile (:class:`~omp_session.format.split.ReadAhead`)."""
    read = usage_reader(s)
    if s.journal.usage_records is not None:
        return read, lambda: None
    ahead = ReadAhead(every, read, s.journal.size, 55)
    return (lambda k: ahead(bisect_left(every, k))), ahead.cancel


def note_model(seen: dict[str, None], entry: Any) -> None:
    """Add the provider/model an assistant message or model change names (in order of first use)."""
    if not isinstance(entry, dict):
        return
    if entry.get("type") == "model_change" and nonempty_str(entry.get("model")):
        seen.setdefault(entry["model"])
    message = entry.get("message")
    if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant":
        model = model_of(message)
        if model:
            seen.setdefault(model)
