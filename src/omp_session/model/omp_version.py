"""Which omp release the library imitates where releases derive or write differently (S20).

The one list of versions lives here: adding a release is one line in ``KNOWN`` (plus golden data
under ``tests/data/omp-<version>/``). Everything else asks :func:`at_least` of a resolved version,
so a version between two known ones behaves like the older one.
"""

from __future__ import annotations

import os
from typing import Final

from omp_session.errors import SessionError

# oldest first; the last is the default. 18.2.9 derives like 18.2.3: S20 does not say which of
# its changes 18.2.9 already had, and 18.2.9 reads 18.2.3's corpus the same way.
KNOWN: Final = ("18.2.3", "18.2.9", "18.3.4")
DEFAULT: Final = KNOWN[-1]
ENV_VAR: Final = "OMP_SESSION_OMP"

# S20's changes first appear in the 18.3 line
S20: Final = "18.3.0"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


_chosen: list[str] = []  # the CLI's --omp for the command being run (a stack: nested runs)


def choose(version: str) -> None:
    """Make ``version`` the default until :func:`unchoose` (the CLI's ``--omp``)."""
    _chosen.append(resolve(version))


def unchoose() -> None:
    if _chosen:
        _chosen.pop()


def resolve(version: str | None = None) -> str:
    """A known version for ``version`` ("18.3" means the newest 18.3.x we know); ``None`` means
    the CLI's ``--omp``, else ``$OMP_SESSION_OMP``, else the newest. Anything else raises
    :class:`SessionError`."""
    source = "omp version"
    if version is None:
        if _chosen:
            return _chosen[-1]
        version = os.environ.get(ENV_VAR) or DEFAULT
        source = ENV_VAR if os.environ.get(ENV_VAR) else source
    found = find(version)
    if found is None:
        raise SessionError(f"{source} {version!r} is not one we imitate ({choices()})")
    return found


def find(version: str) -> str | None:
    """The known version ``version`` names, or None."""
    text = str(version).strip()
    if text in KNOWN:
        return text
    line = [known for known in KNOWN if known.startswith(text + ".")] if text.count(".") == 1 else []
    return line[-1] if line else None


def choices() -> str:
    return f"choose from {', '.join(KNOWN)}, or {', '.join(sorted({k.rsplit('.', 1)[0] for k in KNOWN}))}"


def at_least(version: str, minimum: str) -> bool:
    return _key(version) >= _key(minimum)


def has_s20(version: str) -> bool:
    """True for versions that derive and write the S20 way (18.3 onward)."""
    return at_least(version, S20)
