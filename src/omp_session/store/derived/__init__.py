"""Tables derived from omp's session table, beside it in the same database: per session, per
searchable text, per usage record (docs/team.md). PostgreSQL and SQLite; ``catalog.derived``
fills them, ``query`` reads them."""

from __future__ import annotations

from .schema import KINDS, TEXT_LIMIT, DerivedNames, derived_names
from .tables import (
    HEAD_BYTES,
    NOT_SUPPORTED,
    DerivedState,
    DerivedTables,
    Facts,
    Listed,
    Pending,
    TextRow,
    UsageRow,
    open_derived,
    title_columns,
)

__all__ = ["HEAD_BYTES", "KINDS", "NOT_SUPPORTED", "TEXT_LIMIT", "DerivedNames", "DerivedState", "DerivedTables",
           "Facts", "Listed", "Pending", "TextRow", "UsageRow", "derived_names", "open_derived", "title_columns"]
