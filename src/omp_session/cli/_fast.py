"""``--version`` and ``--help`` without importing click: the two answers people ask for most.

``--version`` is one line. The top-level help is what click renders; it is kept, once rendered,
in the cache dir under a key of everything it depends on (our version, the width click wraps to,
and the files of the command table and its formatting), so a later ``--help`` prints it as it is. A missing, unreadable or
stale copy only means click renders it again. This module imports nothing but ``os`` and ``sys``.
"""

from __future__ import annotations

import os
import sys

from omp_session._version import __version__

__all__ = ["answer", "remember_help"]

HELP_ARGS = (["--help"], ["-h"])


def _help_file() -> str | None:
    # shutil.get_terminal_size's rule (click's): a positive COLUMNS, else the terminal, else 80;
    # click then wraps help to that width less 2, between 50 and 78 columns (HelpFormatter)
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (OSError, ValueError, AttributeError):
            columns = 0
        columns = columns or 80
    width = max(min(columns, 80) - 2, 50)
    here = os.path.dirname(__file__)
    try:  # the table and the group's help formatting
        stamps = [os.stat(os.path.join(here, name)) for name in ("_group.py", "_lazy.py")]
    except OSError:
        return None
    key = "-".join(f"{st.st_mtime_ns}.{st.st_size}" for st in stamps)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "omp-session", f"help-{__version__}-{width}-{key}.txt")


def answer(argv: list[str]) -> bool:
    """Print the answer to ``argv`` if it is one of the two we know without click; True if done."""
    if argv == ["--version"]:
        sys.stdout.write(f"omp-session, version {__version__}\n")
        return True
    if argv in HELP_ARGS:
        path = _help_file()
        try:
            with open(path or "", encoding="utf-8") as f:
                text = f.read()
        except (OSError, ValueError):
            return False
        sys.stdout.write(text)
        return True
    return False


def remember_help(text: str) -> None:
    """Keep the help click rendered for the next ``--help`` (quietly: it is only an accelerator)."""
    path = _help_file()
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        pass
