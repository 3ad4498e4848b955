"""``pack`` refusing missing blobs names the sessions that reference them and says what to do."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import entry, header, stamp, user
from omp_session.cli import cli
from omp_session.errors import PackError
from omp_session.js import codec
from omp_session.ops.pack.archive import all_sessions, pack
from omp_session.paths import project_dir_name


def _sha(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def _session(root: Path, cwd: str, sid: str, blobs: list[str]) -> Path:
    folder = root / project_dir_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
    lines = [codec.dumps_line(header(sid, cwd=cwd))]
    for i, sha in enumerate(blobs):
        lines.append(codec.dumps_line(entry(f"e{i}", f"e{i - 1}" if i else None, timestamp=stamp(i + 1),
                                            message=user([{"type": "image", "data": f"blob:sha256:{sha}",
                                                           "mimeType": "image/png"}]))))
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[Path]]:
    """Six sessions: one references blobs that are all there, five reference some that are not."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    root, blobs = tmp_path / "agent" / "sessions", tmp_path / "agent" / "blobs"
    blobs.mkdir(parents=True)
    present = b"an image"
    good_sha = hashlib.sha256(present).hexdigest()
    (blobs / good_sha).write_bytes(present)
    good = _session(root, "/p/good", "good-session", [good_sha])
    broken = [_session(root, f"/p/broken{k}", f"broken-{k}", [good_sha] + [_sha(10 * k + j) for j in range(10)])
              for k in range(5)]
    return root, good, broken


def test_missing_blobs_error_names_the_sessions_and_the_way_out(store: tuple[Path, Path, list[Path]],
                                                                 tmp_path: Path) -> None:
    root, good, broken = store
    with pytest.raises(PackError) as caught:
        pack(all_sessions(root=root), tmp_path / "all.tar")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("50 referenced blob(s) are not in ")
    assert "referenced by 5 session(s): " in message and " and 2 more" in message
    named = [str(p) for p in broken if str(p) in message]
    assert len(named) == 3, message
    assert str(good) not in message
    assert "--allow-missing-blobs" in message and "nothing was packed" in message
    assert not (tmp_path / "all.tar").exists()


def test_missing_blobs_of_one_session_name_it(store: tuple[Path, Path, list[Path]], tmp_path: Path) -> None:
    _root, good, broken = store
    with pytest.raises(PackError, match=r"referenced by 1 session\(s\): " + str(broken[2]).replace(".", r"\.")
                       + "; pack anyway"):
        pack([good, broken[2]], tmp_path / "two.tar")
    assert pack([good], tmp_path / "good.tar").missing_blobs == []


def test_cli_pack_all_names_the_sessions(store: tuple[Path, Path, list[Path]], tmp_path: Path) -> None:
    root, _good, broken = store
    result = CliRunner().invoke(cli, ["pack", "--all", "--root", str(root), "-o", str(tmp_path / "all.tar.zst")])
    assert result.exit_code == 1
    assert sum(str(p) in result.output for p in broken) == 3 and "and 2 more" in result.output
    assert "--allow-missing-blobs" in result.output
    ok = CliRunner().invoke(cli, ["pack", "--all", "--root", str(root), "--allow-missing-blobs",
                                  "-o", str(tmp_path / "all.tar.zst")])
    assert ok.exit_code == 0, ok.output
