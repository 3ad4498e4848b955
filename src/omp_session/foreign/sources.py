"""Where Claude Code and Codex keep their sessions, found as omp finds them, and what a listing
says about one session (omp's ``ForeignSessionInfo``).

* Claude Code: ``$CLAUDE_CONFIG_DIR`` (trimmed; made absolute) when set and not blank, else
  ``~/.claude``; the project list comes from ``<that dir>/.claude.json`` with the variable, else
  ``~/.claude.json`` (``resolveClaudePaths``).
* Codex: always ``~/.codex``. omp ignores ``$CODEX_HOME`` (Codex's own override), so we do too;
  ``--from DIR`` names any other root.

``~`` is ``$HOME`` when set, as Bun's ``os.homedir()``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from omp_session.js.value import JS_SPACE

__all__ = ["SOURCES", "ForeignSession", "Source", "claude_config_file", "claude_root", "codex_root", "default_root",
           "home_dir"]

Source = Literal["claude", "codex"]
SOURCES: tuple[Source, ...] = ("claude", "codex")


@dataclass(frozen=True)
class ForeignSession:
    """One foreign session as a listing finds it. Times are JavaScript time values (ms; NaN for an
    invalid date), as omp's ``Date`` fields hold them."""

    source: Source
    id: str
    path: str
    cwd: str
    created_ms: float
    modified_ms: float
    title: str | None = None
    first_message: str | None = None
    message_count: int | None = None


def home_dir(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("HOME") or os.path.expanduser("~")


def claude_root(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    override = env.get("CLAUDE_CONFIG_DIR", "").strip(JS_SPACE)
    return os.path.abspath(override) if override else os.path.join(home_dir(env), ".claude")


def claude_config_file(root: str, env: Mapping[str, str] | None = None) -> str:
    """The ``.claude.json`` that registers projects for the sessions under ``root``."""
    env = os.environ if env is None else env
    override = env.get("CLAUDE_CONFIG_DIR", "").strip(JS_SPACE)
    config_dir = os.path.abspath(override) if override else os.path.join(home_dir(env), ".claude")
    if root == config_dir:
        return os.path.join(config_dir, ".claude.json") if override else os.path.join(home_dir(env), ".claude.json")
    return os.path.join(os.path.dirname(root), ".claude.json")


def codex_root(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(home_dir(env), ".codex")


def default_root(source: Source, env: Mapping[str, str] | None = None) -> str:
    return claude_root(env) if source == "claude" else codex_root(env)
