"""What converting one foreign transcript gives: omp entries, the cwd, the title, and a report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .jsonl import Problem

__all__ = ["Converted"]


@dataclass
class Converted:
    """A foreign session as omp's in-memory manager holds it after ``store.load``: ``entries``
    (message, model_change, compaction; each with its id and parentId), the ``cwd`` the transcript
    recorded, and the title to set (``title_source``: "user" or "auto"; ``title_trigger``).

    ``kinds`` counts the source records by kind and fate (``"user: converted"``,
    ``"summary: skipped"``...); ``problems`` are the lines and records worth telling about."""

    cwd: str
    entries: list[dict[str, Any]]
    title: str | None = None
    title_source: str = "auto"
    title_trigger: str | None = None
    problems: list[Problem] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
