"""Where omp keeps sessions and blobs (spec S9), as omp 18.2.3's pi-utils resolves it.

Bucket names of plain paths are also checked against the real omp by the conformance script
``tests/conformance/scripts/paths.json``; the environment cases here cannot go through the
oracle, which removes those variables.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omp_session.paths import (
    agent_dir,
    blobs_dir,
    default_session_dir,
    project_dir_name,
    session_dir_override,
    sessions_dir,
)
from omp_session.write.manager import SessionManager


def env(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), "TMPDIR": "/nonexistent-tmp", **extra}


def test_default_agent_dir_and_override(tmp_path: Path) -> None:
    assert agent_dir(env(tmp_path)) == tmp_path / ".omp" / "agent"
    assert agent_dir(env(tmp_path, PI_CONFIG_DIR=".pi")) == tmp_path / ".pi" / "agent"
    assert agent_dir(env(tmp_path, PI_CODING_AGENT_DIR="/x/agent")) == Path("/x/agent")
    assert sessions_dir(env(tmp_path, PI_CODING_AGENT_DIR="/x/agent")) == Path("/x/agent/sessions")
    assert blobs_dir(env(tmp_path)) == tmp_path / ".omp" / "agent" / "blobs"


@pytest.mark.parametrize(("variables", "profile"), [
    ({"OMP_PROFILE": "work"}, "work"),
    ({"PI_PROFILE": "old"}, "old"),
    ({"OMP_PROFILE": "work", "PI_PROFILE": "old"}, "work"),
    ({"OMP_PROFILE": "", "PI_PROFILE": "old"}, None),  # an empty OMP_PROFILE is the default profile
    ({"OMP_PROFILE": " work "}, "work"),
    ({"OMP_PROFILE": "default"}, None),
    ({"OMP_PROFILE": "Bad"}, None),  # invalid names fall back to the default profile
    ({"OMP_PROFILE": "x."}, None),
    ({"OMP_PROFILE": "com0.txt"}, None),
    ({"OMP_PROFILE": "lpt9"}, None),
    ({"OMP_PROFILE": "a" * 65}, None),
])
def test_profiles(tmp_path: Path, variables: dict[str, str], profile: str | None) -> None:
    root = tmp_path / ".omp"
    expected = (root / "profiles" / profile if profile else root) / "agent"
    assert agent_dir(env(tmp_path, **variables)) == expected


def test_a_profile_ignores_the_agent_dir_override(tmp_path: Path) -> None:
    e = env(tmp_path, OMP_PROFILE="work", PI_CODING_AGENT_DIR="/x/agent")
    assert agent_dir(e) == tmp_path / ".omp" / "profiles" / "work" / "agent"


def test_xdg_only_when_its_directory_exists_and_the_agent_dir_is_the_default(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    e = env(tmp_path, XDG_DATA_HOME=str(xdg))
    assert sessions_dir(e) == tmp_path / ".omp" / "agent" / "sessions"
    (xdg / "omp").mkdir(parents=True)
    assert sessions_dir(e) == xdg / "omp" / "sessions" and blobs_dir(e) == xdg / "omp" / "blobs"
    assert sessions_dir({**e, "PI_CODING_AGENT_DIR": "/x/agent"}) == Path("/x/agent/sessions")
    profiled = {**e, "OMP_PROFILE": "work"}
    assert sessions_dir(profiled) == tmp_path / ".omp" / "profiles" / "work" / "agent" / "sessions"
    (xdg / "omp" / "profiles" / "work").mkdir(parents=True)
    assert sessions_dir(profiled) == xdg / "omp" / "profiles" / "work" / "sessions"


def test_project_dir_names(tmp_path: Path) -> None:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    (home / "src" / "api").mkdir(parents=True)
    (tmp / "x" / "y").mkdir(parents=True)
    e = {"HOME": str(home), "TMPDIR": str(tmp)}
    assert project_dir_name(str(home), e) == "-"
    assert project_dir_name(str(home / "src" / "api"), e) == "-src-api"
    assert project_dir_name(str(tmp), e) == "-tmp"
    assert project_dir_name(str(tmp / "x" / "y"), e) == "-tmp-x-y"
    assert project_dir_name("/opt/my proj/a:b", e) == "--opt-my proj-a-b--"
    assert project_dir_name("/", e) == "----"
    link = tmp_path / "link"
    link.symlink_to(home / "src" / "api")
    assert project_dir_name(str(link), e) == "-src-api"  # a symlink goes to its target's bucket
    nested_home = {"HOME": str(tmp / "x"), "TMPDIR": str(tmp)}
    assert project_dir_name(str(tmp / "x" / "y"), nested_home) == "-y"  # home wins over temp


def test_default_session_dir_is_created(tmp_path: Path) -> None:
    directory = default_session_dir("/srv/app", agent_dir=str(tmp_path / "agent"))
    assert directory == str(tmp_path / "agent" / "sessions" / "--srv-app--") and os.path.isdir(directory)


def test_session_dir_override_is_where_new_sessions_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "mine"))
    assert session_dir_override() == str(tmp_path / "mine")
    sm = SessionManager.create(str(tmp_path))
    assert os.path.dirname(sm.get_session_file() or "") == str(tmp_path / "mine")
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR")
    sm = SessionManager.create(str(tmp_path))
    assert Path(sm.get_session_file() or "").parent.parent == tmp_path / "agent" / "sessions"
    assert Path(sm.get_session_file() or "").name.endswith(f"_{sm.get_session_id()}.jsonl")
    assert sm.get_artifacts_dir() == (sm.get_session_file() or "")[: -len(".jsonl")]
