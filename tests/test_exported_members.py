"""The façade: ``__all__`` is exactly the public names, each resolves lazily, none shadows a
submodule, and ``import omp_session`` loads nothing but the façade and its version."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import omp_session


def test_all_names_resolve_and_match_the_public_names() -> None:
    for name in omp_session.__all__:
        assert getattr(omp_session, name) is not None, name
    submodules = {m.name for m in pkgutil.iter_modules(omp_session.__path__)}
    public = {name for name in vars(omp_session) if not name.startswith("_") and name not in submodules}
    assert sorted(public | {"__version__"}) == omp_session.__all__


def test_no_public_name_shadows_a_submodule() -> None:
    submodules = {m.name for m in pkgutil.iter_modules(omp_session.__path__)}
    assert submodules & set(omp_session.__all__) == set()
    assert {"js", "format", "model", "store", "write", "catalog", "ops", "cli", "errors"} <= submodules


def test_unknown_names_raise_attribute_error() -> None:
    try:
        omp_session.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("no AttributeError")


def test_import_loads_only_the_facade() -> None:
    code = "import sys, omp_session; print(sorted(m for m in sys.modules if m.startswith('omp_session')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['omp_session', 'omp_session._version']"
    code = "import sys, omp_session; print(sorted(m for m in ('typing', 'orjson', 'msgspec', 'click', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_dir_lists_the_public_names() -> None:
    assert set(omp_session.__all__) <= set(dir(omp_session))
