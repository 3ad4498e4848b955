"""The usage and models of the Markdown export's header (docs/export.md), in as few passes as
give the same figures: the branch's models and usage, and the usage of every branch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from typing import Any

from omp_session.errors import ContextError
from omp_session.model.session import Session
from omp_session.model.text import model_of, nonempty_str, usage_line
from omp_session.model.usage import UsageSum, usage_statistics
from omp_session.model.usage_plain import plain_reader

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

    def entries() -> Iterator[Any]:
        for k in branch:
            if counted[k]:
                entry = s.peek_entry(k)
                note_model(models, entry)
                yield entry

    walk = entries()
    usage = usage_text(walk)
    for _ in walk:  # usage gave up part-way: the models still come from the whole branch
        pass
    return list(models), usage


def all_figures(s: Session, branch: Sequence[int], counted: Sequence[int]) -> tuple[list[str], str, str]:
    """(the models of ``branch``, its usage line, the usage line of every branch), as
    :func:`branch_figures` and :func:`usage_text` over every counted entry give them. When the
    branch is in file order, one pass over every counted entry adds each to the whole sum and the
    branch's to the branch sum, in the order the two passes would; a plain assistant's usage and
    model are read from its bytes without building the entry (model/usage_plain.py). Only where
    omp would throw, or on a branch out of file order, are the entries read twice."""
    every = [k for k in range(len(s)) if counted[k]]
    mine = [k for k in branch if counted[k]]
    if all(a < b for a, b in pairwise(mine)):
        # the branch in file order (each entry after its parent, as omp appends): both sums and
        # the models in one pass over every counted entry, each decoded once at most
        models: dict[str, None] = {}
        on_branch = set(mine)
        branch_sum, whole = UsageSum(), UsageSum()
        # a plain assistant's usage and model read from its bytes, its text skipped (usage_plain.py)
        plain, peek = plain_reader(s), s.peek_in_order()
        try:
            for k in every:
                fast = plain(k)
                if fast is not None and whole.add_numbers(fast.numbers):
                    if k in on_branch:
                        model = model_of({"model": fast.model, "provider": fast.provider})
                        if model:
                            models.setdefault(model)
                        if not branch_sum.add_numbers(fast.numbers):
                            branch_sum.add(peek(k))
                    continue
                entry = peek(k)
                whole.add(entry)
                if k in on_branch:
                    note_model(models, entry)
                    branch_sum.add(entry)
            return list(models), usage_line(branch_sum.result()), usage_line(whole.result())
        except ContextError:
            pass  # each sum on its own below, so that each says where omp gives up on it
    models_seen, usage = branch_figures(s, branch, counted)
    if mine == every:
        return models_seen, usage, usage
    return models_seen, usage, usage_text(s.peek_entry(k) for k in every)


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
