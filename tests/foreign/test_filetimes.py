"""Birth times through ``statx``: found without ``ldconfig``, and the same either way it is found."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omp_session.foreign import filetimes


def _statx_btime_ms(path: Path) -> float | None:
    # what the file system says, through the library found the old way
    from ctypes.util import find_library

    fn = ctypes.CDLL(find_library("c"), use_errno=True).statx
    buf = ctypes.create_string_buffer(256)
    if fn(-100, os.fsencode(path), 0, 0x800, buf) != 0 or not int.from_bytes(buf.raw[:4], "little") & 0x800:
        return None
    return (int.from_bytes(buf.raw[80:88], "little", signed=True) * 1e3
            + int.from_bytes(buf.raw[88:92], "little") / 1e6)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="statx is Linux's")
def test_birth_time_is_the_file_systems(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"{}\n")
    assert filetimes.file_times(path).birthtime_ms == (_statx_btime_ms(path) or 0.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="statx is Linux's")
def test_statx_is_taken_from_libc_when_the_process_does_not_have_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    real = ctypes.CDLL

    class _NoStatxInProcess:
        def __init__(self, name: str | None, **kwargs: Any) -> None:
            self._lib = real(name, **kwargs)
            self._process = name is None

        def __getattr__(self, attr: str) -> Any:
            if self._process:
                raise AttributeError(attr)
            return getattr(self._lib, attr)

    monkeypatch.setattr(ctypes, "CDLL", _NoStatxInProcess)
    fn = filetimes._load_statx()
    assert fn is not None
    monkeypatch.setattr(filetimes, "_statx", fn)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"{}\n")
    assert filetimes.file_times(path).birthtime_ms == (_statx_btime_ms(path) or 0.0)


def test_loading_the_module_runs_no_ldconfig() -> None:
    # find_library("c") runs `ldconfig -p` in a child: on every import and `list --foreign`, for
    # a function the process's own symbols hold
    code = ("import subprocess\n"
            "def refuse(*a, **k):\n"
            "    raise AssertionError('a child process was started')\n"
            "subprocess.Popen = refuse\n"
            "import omp_session.foreign.filetimes as f\n"
            "print(f._statx is not None)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sys.platform.startswith("linux"))
