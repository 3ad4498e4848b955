"""Test modules outside packages are imported by their base name (pytest's default rootdir
import mode), so two ``test_x.py`` in different folders without ``__init__.py`` break collection
of the whole suite: keep their names unique."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_names_are_unique_outside_packages() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "node_modules" in path.parts or (path.parent / "__init__.py").exists():
            continue
        seen[path.name].append(str(path.relative_to(TESTS)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
