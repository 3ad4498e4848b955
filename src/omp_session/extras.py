"""Optional dependencies: the database drivers and zstandard are extras, imported where used.

Reading, writing and every file command need only the core. A store URL or a ``.tar.zst``
archive without its extra is one line saying what to install (``MissingExtraError``, exit 1).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from omp_session.errors import MissingExtraError

__all__ = ["EXTRAS", "require"]

# import name -> (extra, what needs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "psycopg": ("postgres", "a PostgreSQL store"),
    "pymysql": ("mysql", "a MySQL/MariaDB store"),
    "redis": ("redis", "a Redis store"),
    "zstandard": ("zstd", "a .tar.zst archive"),
    "mcp": ("mcp", "omp-session mcp"),
    "jq": ("jq", "--jq"),
    "starlette": ("serve", "omp-session serve"),
    "uvicorn": ("serve", "omp-session serve"),
    "watchfiles": ("watch", "sync --watch"),
}


def require(module: str) -> ModuleType:
    """``import module``, or :class:`MissingExtraError` naming the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if e.name is not None and e.name != module and not e.name.startswith(module + "."):
            raise  # the package is there but broken in another way: not ours to explain
        extra, purpose = EXTRAS[module]
        raise MissingExtraError(f"{purpose} needs the {module} package: pip install 'omp-session[{extra}]' "
                                f"(or omp-session[all])", extra=extra) from None
