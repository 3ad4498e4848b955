"""Every command's -o: a device or FIFO is written into and never replaced (--force replaces only a
regular file), ``-`` is stdout where a command takes it, and a new file's mode follows the umask
(store/atomic.py). Private mknod nodes and FIFOs in temp folders only, never the real /dev/null."""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from builders import assistant, entry, header, invoke, stamp, user, write_session
from omp_session.cli import cli
from omp_session.errors import SessionError
from omp_session.store.atomic import check_output, copy_mode, write_new_file

# (name, arguments before -o): every command that writes an output file
COMMANDS: list[tuple[str, Callable[[Path], list[str]]]] = [
    ("export md", lambda s: ["export", str(s), "--format", "md"]),
    ("export json", lambda s: ["export", str(s), "--format", "json"]),
    ("export html", lambda s: ["export", str(s), "--format", "html", "--no-subagents"]),
    ("redact", lambda s: ["redact", str(s)]),
    ("repair", lambda s: ["repair", str(s)]),
    ("prune", lambda s: ["prune", str(s), "--keep-branch"]),
    ("externalize", lambda s: ["externalize", str(s), "--blobs", str(s.parent / "blobs")]),
    ("stats --html", lambda s: ["stats", str(s), "--html"]),  # its -o is --html
    ("pack", lambda s: ["pack", str(s)]),
]
SHARED = {"export md", "export json", "export html", "redact", "stats --html", "pack"}


def _args(name: str, build: Callable[[Path], list[str]], session: Path, out: str, *extra: str) -> list[str]:
    args = build(session)
    return [*args, out, *extra] if name == "stats --html" else [*args, "-o", out, *extra]


@pytest.fixture
def session(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    return write_session(folder / "2026-01-01T00-00-00-000Z_s.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user("hello AKIAIOSFODNN7EXAMPLE")),
        entry("a1", "u1", timestamp=stamp(2), message=assistant("hi")),
    ], head=header("s", cwd=str(tmp_path)))


@pytest.fixture
def nodes(tmp_path: Path) -> Path:
    folder = tmp_path / "nodes"
    folder.mkdir()
    return folder


def _null(folder: Path) -> Path:
    node = folder / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private null device
    return node


class _Reader:
    """Reads a FIFO to its end in a thread; :meth:`finish` unblocks it if nobody ever wrote."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.data = b""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with open(self.fifo, "rb") as f:
            self.data = f.read()

    def finish(self) -> bytes:
        self.thread.join(10)
        if self.thread.is_alive():  # the command never opened it: open and close a writer end
            with contextlib.suppress(OSError):
                os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
            self.thread.join(10)
        return self.data


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize(("name", "build"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_force_writes_into_a_character_device_and_keeps_it(name: str, build: Callable[[Path], list[str]],
                                                           session: Path, nodes: Path) -> None:
    node = _null(nodes)
    result = invoke(cli, *_args(name, build, session, str(node), "--force"))
    assert result.exit_code == 0, result.output
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert sorted(os.listdir(nodes)) == ["null"] or name == "repair"  # no temporary file left


@pytest.mark.parametrize(("name", "build"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_force_streams_into_a_fifo_and_keeps_it(name: str, build: Callable[[Path], list[str]],
                                               session: Path, nodes: Path, tmp_path: Path) -> None:
    fifo = nodes / "pipe"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    result = invoke(cli, *_args(name, build, session, str(fifo), "--force"))
    data = reader.finish()
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # the same bytes a new file gets
    out = tmp_path / "plain"
    assert invoke(cli, *_args(name, build, session, str(out))).exit_code == 0
    if name == "pack":  # the manifest's creation time differs: compare the members
        with tarfile.open(out) as a, tarfile.open(fileobj=__import__("io").BytesIO(data)) as b:
            assert a.getnames() == b.getnames()
    elif name == "stats --html":
        assert data.startswith(b"<!") and len(data) > 1000
    else:
        assert data == out.read_bytes()


def test_without_force_a_fifo_is_written_too_by_pack(session: Path, nodes: Path) -> None:
    """Writing into a FIFO replaces nothing: pack needs no --force (the other commands' own
    checks still ask for it)."""
    fifo = nodes / "pipe"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    result = invoke(cli, "pack", str(session), "-o", str(fifo))
    assert result.exit_code == 0, result.output
    assert reader.finish()[:2] == b"\x1f\x8b"


def test_pack_to_stdout_sends_the_summary_to_stderr(session: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # were - taken as a name, the file lands here
    result = invoke(cli, "pack", str(session), "-o", "-", "--compression", "none")
    assert result.exit_code == 0, result.stderr
    import io

    with tarfile.open(fileobj=io.BytesIO(result.stdout_bytes)) as tar:
        assert "manifest.json" in tar.getnames()[0]
    assert "wrote -" in result.stderr


def test_a_regular_file_is_still_replaced_with_force(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "old.md"
    out.write_text("old")
    assert invoke(cli, "export", str(session), "--format", "md", "-o", str(out), "--force").exit_code == 0
    assert out.read_text() != "old"


def test_a_link_to_a_file_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_new_file(link, [b"new"], force=True, error=SessionError)
    assert link.is_symlink() and real.read_bytes() == b"new"


@pytest.mark.parametrize("kind", ["block device", "socket", "dangling link", "directory"])
def test_what_is_neither_file_nor_stream_is_refused(kind: str, tmp_path: Path) -> None:
    node = tmp_path / "node"
    if kind == "block device":
        os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(7, 250))
    elif kind == "socket":
        import socket

        s = socket.socket(socket.AF_UNIX)
        s.bind(str(node))
    elif kind == "dangling link":
        node.symlink_to(tmp_path / "missing")
    else:
        node.mkdir()
    with pytest.raises(SessionError, match="node: "):
        write_new_file(node, [b"x"], force=True, error=SessionError)
    assert sorted(os.listdir(tmp_path)) == ["node"]


def test_dash_is_refused_unless_the_command_takes_stdout(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="does not write to stdout"):
        check_output("-", force=True, error=SessionError)
    assert check_output("-", force=False, error=SessionError, stdout=True).kind == "stdout"


@pytest.mark.parametrize("mask", [0o022, 0o077])
@pytest.mark.parametrize(("name", "build"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_new_files_follow_the_umask(name: str, build: Callable[[Path], list[str]], mask: int,
                                    session: Path, tmp_path: Path) -> None:
    """Like cp: 0644 under umask 022, 0600 under 077. (Session copies take the session's own bits:
    a 0644 session, as omp writes them, gives the same.)"""
    out = tmp_path / "out"
    with _umask(mask):
        result = invoke(cli, *_args(name, build, session, str(out)))
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~mask


def test_copy_mode_keeps_a_private_session_private(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    src.write_text("x")
    src.chmod(0o600)
    out = tmp_path / "copy.jsonl"
    with _umask(0o022):
        write_new_file(out, [b"y"], force=False, error=SessionError, mode=copy_mode(src))
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert copy_mode(tmp_path / "missing") == 0o600


SESSION_COPIES = [c for c in COMMANDS if c[0] not in SHARED]


@pytest.mark.parametrize(("name", "build"), SESSION_COPIES, ids=[c[0] for c in SESSION_COPIES])
def test_a_copy_of_a_private_session_stays_private(name: str, build: Callable[[Path], list[str]],
                                                   session: Path, tmp_path: Path) -> None:
    session.chmod(0o600)
    out = tmp_path / "out"
    with _umask(0o022):
        result = invoke(cli, *_args(name, build, session, str(out)))
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_repair_in_place_keeps_a_private_backup(session: Path) -> None:
    with open(session, "ab") as f:
        f.write(b'{"type":"message","id":"x"\n')  # a torn record: repair has work to do
    session.chmod(0o600)
    with _umask(0o022):
        result = invoke(cli, "repair", str(session), "--in-place")
    assert result.exit_code == 0, result.output
    backups = list(session.parent.glob(session.name + ".bak*"))
    assert backups and all(stat.S_IMODE(os.stat(b).st_mode) == 0o600 for b in backups)
    quarantines = list(session.parent.glob(session.name + ".quarantine*"))
    assert all(stat.S_IMODE(os.stat(q).st_mode) == 0o600 for q in quarantines)


def test_repair_into_a_stream_refuses_when_records_need_quarantine(session: Path, nodes: Path) -> None:
    with open(session, "ab") as f:
        f.write(b"this line is not a record\n")
        f.write(b'{"type":"message","id":"z","parentId":"a1","timestamp":"2026-01-01T00:00:09.000Z",'
                b'"message":{"role":"user","content":"after"}}\n')
    node = _null(nodes)
    result = invoke(cli, "repair", str(session), "-o", str(node), "--force")
    assert result.exit_code == 1, result.output
    assert "quarantine" in result.output
    assert sorted(os.listdir(nodes)) == ["null"]  # no null.quarantine beside the device
    assert stat.S_ISCHR(os.stat(node).st_mode)
