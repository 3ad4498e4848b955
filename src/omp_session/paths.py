"""Where omp keeps its files: agent dir, sessions dir, blobs dir (spec S9)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["agent_dir", "blobs_dir", "cache_dir", "default_session_dir", "project_dir_name", "session_dir_override",
           "sessions_dir"]

_PROFILE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}\Z")
_WINDOWS_DEVICE = re.compile(r"(?:CON|PRN|AUX|NUL|COM[0-9]|LPT[0-9])(?:\..*)?\Z", re.IGNORECASE)


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def profile_name(env: Mapping[str, str]) -> str | None:
    """The named profile: ``OMP_PROFILE`` when set at all (empty = default), else ``PI_PROFILE``.
    An invalid name means the default profile, as when omp's modules load."""
    raw = env["OMP_PROFILE"] if "OMP_PROFILE" in env else env.get("PI_PROFILE", "")
    name = raw.strip()
    if not name or name == "default":
        return None
    if name in (".", "..") or name.endswith(".") or not _PROFILE.match(name) or _WINDOWS_DEVICE.match(name):
        return None
    return name


def config_root(env: Mapping[str, str]) -> Path:
    root = _home(env) / (env.get("PI_CONFIG_DIR") or ".omp")
    profile = profile_name(env)
    return root / "profiles" / profile if profile else root


def agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$PI_CODING_AGENT_DIR`` (absolute) unless a named profile is active, else ``<root>/agent``."""
    env = _env(env)
    override = env.get("PI_CODING_AGENT_DIR")
    if override and profile_name(env) is None:
        return Path(os.path.abspath(override))
    return config_root(env) / "agent"


def _xdg_data_dir(env: Mapping[str, str]) -> Path | None:
    """The flattened XDG location, used only when it already exists and the agent dir is the
    default one (S9.1)."""
    if sys.platform not in ("linux", "darwin") or agent_dir(env) != config_root(env) / "agent":
        return None
    xdg = env.get("XDG_DATA_HOME")
    if not xdg:
        return None
    profile = profile_name(env)
    base = Path(xdg) / "omp"
    candidate = base / "profiles" / profile if profile else base
    return candidate if candidate.is_dir() else None


def sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    """The root holding one directory per project (``<agent dir>/sessions``, or XDG's)."""
    env = _env(env)
    xdg = _xdg_data_dir(env)
    return xdg / "sessions" if xdg else agent_dir(env) / "sessions"


def session_dir_override(env: Mapping[str, str] | None = None) -> str | None:
    """``$PI_CODING_AGENT_SESSION_DIR``: omp's command line puts sessions directly in this
    directory instead of the project's bucket (its ``--session-dir`` default)."""
    value = _env(env).get("PI_CODING_AGENT_SESSION_DIR")
    return os.path.abspath(value) if value else None


def blobs_dir(env: Mapping[str, str] | None = None) -> Path:
    env = _env(env)
    xdg = _xdg_data_dir(env)
    return xdg / "blobs" if xdg else agent_dir(env) / "blobs"


def _encode(rel: str) -> str:
    return re.sub(r"[/\\:]", "-", rel)


def project_dir_name(cwd: str, env: Mapping[str, str] | None = None) -> str:
    """The bucket name omp derives from a working directory (S9.2)."""
    env = _env(env)
    resolved = os.path.abspath(cwd)
    canonical = os.path.realpath(resolved)
    home = os.path.realpath(str(_home(env)))
    tmp = os.path.realpath(env.get("TMPDIR") or "/tmp")
    if canonical == home or canonical.startswith(home.rstrip(os.sep) + os.sep):
        rel = os.path.relpath(canonical, home)
        return "-" if rel == "." else "-" + _encode(rel)
    if canonical == tmp or canonical.startswith(tmp.rstrip(os.sep) + os.sep):
        rel = os.path.relpath(canonical, tmp)
        return "-tmp" if rel == "." else "-tmp-" + _encode(rel)
    return "--" + _encode(canonical[1:] if canonical.startswith(os.sep) else canonical) + "--"


def default_session_dir(cwd: str, env: Mapping[str, str] | None = None, *, agent_dir: str | None = None) -> str:
    """``<sessions root>/<project dir name>`` for ``cwd``, created if missing (S9.2, S10.1).

    An explicit ``agent_dir`` puts the root at ``<agent_dir>/sessions``. omp also renames
    legacy bucket names it finds there (S9.3); we leave those directories alone.
    """
    root = Path(agent_dir) / "sessions" if agent_dir is not None else sessions_dir(env)
    directory = root / project_dir_name(cwd, env)
    directory.mkdir(parents=True, exist_ok=True)
    return str(directory)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/omp-session``, else ``~/.cache/omp-session`` (a relative XDG path is ignored, per XDG)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(os.path.expanduser("~")) / ".cache"
    return base / "omp-session"
