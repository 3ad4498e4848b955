"""``split.forked``: one call run by a forked child while the caller goes on (``show`` validates
that way on a big file); whatever happens in the child, the result or the exception is the
call's own."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assistant, entry, user, write_session
from omp_session.cli import cli
from omp_session.format import split


@pytest.fixture
def always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)


def test_the_call_runs_in_a_child_and_its_result_comes_back(always: None) -> None:
    result = split.forked(lambda: {"pid": os.getpid(), "values": [1, "two", 3.0, None]}, 0)
    got = result()
    assert got["pid"] != os.getpid() and got["values"] == [1, "two", 3.0, None]
    assert result() is got  # asked again: the same value, no second child


def test_an_exception_in_the_child_is_raised_here_by_the_call_itself(always: None) -> None:
    calls: list[int] = []

    def failing() -> int:
        calls.append(os.getpid())
        raise ValueError("bad record")

    result = split.forked(failing, 0)
    with pytest.raises(ValueError, match="bad record"):
        result()
    assert calls == [os.getpid()]  # the child's call is not seen here; this process's is


def test_a_child_that_dies_leaves_the_call_to_this_process(always: None) -> None:
    parent = os.getpid()

    def dies_in_child() -> int:
        if os.getpid() != parent:
            os._exit(3)
        return 7

    assert split.forked(dies_in_child, 0)() == 7


def test_without_a_child_the_call_waits_until_asked_and_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: False)
    calls: list[int] = []
    result = split.forked(lambda: calls.append(os.getpid()) or len(calls), 1 << 40)
    assert calls == []
    assert result() == 1 and result() == 1 and calls == [os.getpid()]


def test_show_says_the_same_with_validate_in_a_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    es = [entry("u1", None, message=user("hello")), entry("a1", "u1", message=assistant("hi")),
          entry("a1", "u1", message=assistant("a duplicate id: a finding")),
          entry("x1", "missing", message=user("an orphan"))]
    path = str(write_session(tmp_path / "s.jsonl", es))
    runner = CliRunner(env={"COLUMNS": "80"})
    alone = [runner.invoke(cli, ["show", path, *flag]).output for flag in ((), ("--json",))]
    assert split._worth_splitting(os.path.getsize(path), 0) is False  # so far, validated here
    real = split.forked
    children: list[int] = []

    def in_a_child(fn: Callable[[], Any], size: int) -> Callable[[], Any]:
        children.append(size)
        return real(lambda: (os.getpid(), fn()), size)

    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: True)
    pids: list[int] = []
    monkeypatch.setattr(split, "forked", lambda fn, size: _recorded(in_a_child(fn, size), pids))
    forked = [runner.invoke(cli, ["show", path, *flag]).output for flag in ((), ("--json",))]
    assert children == [os.path.getsize(path)] * 2 and all(p != os.getpid() for p in pids)
    assert forked == alone and "duplicate" in alone[0]


def _recorded(result: Callable[[], tuple[int, Any]], pids: list[int]) -> Callable[[], Any]:
    def value() -> Any:
        pid, got = result()
        pids.append(pid)
        return got

    return value


def _pieces(lo: int, hi: int) -> bytes:
    return b"".join(b"<%d:%d>" % (k, os.getpid() != _PARENT) for k in range(lo, hi))


_PARENT = os.getpid()


@pytest.mark.parametrize(("count", "piece"), [(0, 3), (1, 3), (3, 3), (4, 3), (10, 3), (100, 7), (64, 1)])
def test_interleaved_gives_the_pieces_in_order_half_of_them_from_the_child(always: None, count: int,
                                                                           piece: int) -> None:
    out = b"".join(split.interleaved(split.pieces_of(count, [1] * count, piece), _pieces, 0))
    assert out.replace(b":1>", b":0>") == b"".join(b"<%d:0>" % k for k in range(count))
    from_child = {k for k in range(count) if b"<%d:1>" % k in out}
    assert from_child == {k for k in range(count) if (k // piece) % 2} if count > piece else not from_child


@pytest.mark.parametrize("how", ["exit", "raise"])
def test_interleaved_renders_here_what_a_dying_child_did_not_send(always: None, how: str) -> None:
    def render(lo: int, hi: int) -> bytes:
        if os.getpid() != _PARENT and lo >= 9:  # the child fails before its third piece
            if how == "exit":
                os._exit(3)  # at once: what its sending thread held is lost (made here again)
            raise ValueError("bad record")  # what it made before is sent first
        return _pieces(lo, hi)

    out = b"".join(split.interleaved(split.pieces_of(30, [1] * 30, 3), render, 0))
    assert out.replace(b":1>", b":0>") == b"".join(b"<%d:0>" % k for k in range(30))
    assert b"<15:1>" not in out and b"<15:0>" in out
    if how == "raise":
        assert b"<3:1>" in out


def _children() -> set[int]:
    """This process's children, reaped or not (a zombie is still listed until it is waited for)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def test_interleaved_stopped_early_leaves_no_child(always: None) -> None:
    before = _children()
    pieces = split.interleaved(split.pieces_of(1000, [1] * 1000, 2), _pieces, 0)
    assert next(pieces) == b"<0:0><1:0>" and next(pieces) == b"<2:1><3:1>"
    assert len(_children() - before) == 1
    pieces.close()
    assert _children() == before  # killed and reaped


def test_interleaved_without_a_child_renders_every_piece_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "_worth_splitting", lambda size, start: False)
    assert b"".join(split.interleaved(split.pieces_of(10, [1] * 10, 3), _pieces, 1 << 40)) == \
        b"".join(b"<%d:0>" % k for k in range(10))


def test_pieces_are_cut_by_size_with_at_least_one_item_each() -> None:
    assert split.pieces_of(0, []) == []
    sizes = [5, 1, 1, 9, 0, 0, 2, 30, 1]
    assert split.pieces_of(len(sizes), sizes, 6) == [(0, 2), (2, 4), (4, 8), (8, 9)]
    assert split.pieces_of(len(sizes), iter(sizes), 6) == [(0, 2), (2, 4), (4, 8), (8, 9)]
    assert split.pieces_of(3, [0, 0, 0], 1) == [(0, 3)]
    assert split.pieces_of(3, [7, 7, 7], 0) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError, match="2 sizes for 3 items"):  # never a piece short of an item
        split.pieces_of(3, [1, 1], 6)


def _pieces_step_by_step(sizes: list[int], limit: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    lo = held = 0
    for k, size in enumerate(sizes):
        held += size
        if held >= limit:
            out.append((lo, k + 1))
            lo, held = k + 1, 0
    if lo < len(sizes):
        out.append((lo, len(sizes)))
    return out


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=60), st.integers(-2, 120))
def test_pieces_by_running_sums_are_those_of_a_step_per_item(sizes: list[int], limit: int) -> None:
    # each piece ends with the item that brings it to the limit, as a step per item cuts it
    assert split.pieces_of(len(sizes), sizes, limit) == _pieces_step_by_step(sizes, limit)


def _failing() -> int:
    raise ValueError("bad record")


def test_forked_asked_again_after_a_failure_raises_the_calls_own_error(always: None) -> None:
    result = split.forked(_failing, 0)
    with pytest.raises(ValueError, match="bad record"):
        result()
    # the child is gone and its pipe closed: the second call must not read, close or wait again
    with pytest.raises(ValueError, match="bad record"):
        result()


def test_forked_asked_again_after_a_failure_leaves_other_files_alone(always: None, tmp_path: Path) -> None:
    result = split.forked(_failing, 0)
    with pytest.raises(ValueError):
        result()
    other = tmp_path / "other.txt"
    other.write_bytes(b"someone else's data")
    fd = os.open(other, os.O_RDONLY)  # the lowest free number: very likely the pipe's old one
    try:
        with pytest.raises(ValueError):
            result()
        # the descriptor is still open and still at its start: nothing read it or closed it
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
        assert os.read(fd, 100) == b"someone else's data"
    finally:
        with contextlib.suppress(OSError):  # closed already by the bug
            os.close(fd)


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children split makes while the test runs."""
    made: list[int] = []
    real = split._child

    def recorded(work: Callable[[Callable[[bytes], None]], None]) -> tuple[int, int] | None:
        child = real(work)
        if child is not None:
            made.append(child[0])
        return child

    monkeypatch.setattr(split, "_child", recorded)
    return made


def _reaped(pids: list[int]) -> bool:
    """Whether each of ``pids`` is gone and waited for (not running, not a zombie)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return True


def test_a_cancelled_call_stops_and_reaps_its_child(always: None, children: list[int]) -> None:
    # a child whose result is never asked for (its caller failed) must not be left waiting on a
    # full pipe, or as a zombie, in a process that goes on (a server)
    parent = os.getpid()
    ran_here: list[int] = []

    def slow_and_big() -> bytes:
        if os.getpid() == parent:
            ran_here.append(1)
        return b"x" * (4 << 20)  # more than a pipe holds: the child blocks until read

    result = split.forked(slow_and_big, 0)
    fds = len(os.listdir("/proc/self/fd"))
    result.cancel()
    assert children and _reaped(children) and len(os.listdir("/proc/self/fd")) == fds - 1  # the pipe is closed
    result.cancel()  # twice: nothing more to do
    assert not ran_here


def test_cancel_after_the_result_changes_nothing(always: None, children: list[int]) -> None:
    result = split.forked(lambda: 42, 0)
    assert result() == 42
    result.cancel()
    assert result() == 42 and children and _reaped(children)


def test_validate_leaves_no_child_when_its_own_part_fails(always: None, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, children: list[int]) -> None:
    from omp_session.ops.validate import entries as validate_entries
    from omp_session.ops.validate.check import validate

    entries = []
    parent_id = None
    for k in range(60):
        entries.append(entry(f"e{k}", parent_id, message=user(f"question {k} " + "x" * 200)))
        parent_id = f"e{k}"
    path = write_session(tmp_path / "s.jsonl", entries)
    monkeypatch.setattr(validate_entries, "_BLOCK", 500)
    parent = os.getpid()
    real = validate_entries._scan_blocks

    def failing_here(*args: Any) -> None:
        if os.getpid() == parent:
            raise MemoryError("no more")
        real(*args)

    monkeypatch.setattr(validate_entries, "_scan_blocks", failing_here)
    with pytest.raises(MemoryError):
        validate(path)
    assert children and _reaped(children)


@pytest.mark.parametrize("command", ["stats", "repair", "size"])
def test_no_child_is_left_when_this_process_fails(always: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  command: str, children: list[int]) -> None:
    from omp_session.ops.repair import blocks as repair_blocks
    from omp_session.ops.repair import records as repair_records
    from omp_session.ops.repair.plan import plan_repair
    from omp_session.ops.size import doctor
    from omp_session.ops.stats import report

    entries = []
    parent_id = None
    for k in range(40):
        entries.append(entry(f"u{k}", parent_id, message=user(f"question {k} " + "x" * 200)))
        entries.append(entry(f"a{k}", f"u{k}", message=assistant(f"answer {k}")))
        parent_id = f"a{k}"
    path = write_session(tmp_path / "s.jsonl", entries)
    parent = os.getpid()

    def here_only(real: Callable[..., Any]) -> Callable[..., Any]:
        def failing(*args: Any, **kwargs: Any) -> Any:
            if os.getpid() == parent:
                raise MemoryError("no more")
            return real(*args, **kwargs)
        return failing

    def run() -> Any:
        if command == "stats":
            return report.read_file_usage(path)
        if command == "repair":
            return plan_repair(path)
        return doctor.analyze_size(path, archive=False)

    # each fails in this process's own part, before it asks for the child's
    if command == "stats":
        monkeypatch.setattr(report, "_plain_record", here_only(report._plain_record))
    elif command == "repair":
        monkeypatch.setattr(repair_blocks, "_BLOCK", 500)
        monkeypatch.setattr(repair_records, "prove_loads", here_only(repair_records.prove_loads))
    else:
        monkeypatch.setattr(doctor, "_account", here_only(doctor._account))
    with pytest.raises(MemoryError):
        run()
    assert children and _reaped(children)


# ----- the child's pieces sent from a thread of their own (split._ahead) -------------------------


def test_the_maker_goes_on_while_a_send_waits_and_every_piece_arrives_in_order() -> None:
    import threading

    count = 6  # the maker may run this far ahead (split._AHEAD is 8)
    made: list[int] = []
    sent: list[bytes] = []
    seen: list[int] = []
    all_made = threading.Event()

    def maker() -> Any:
        for n in range(count):
            made.append(n)
            if len(made) == count:
                all_made.set()
            yield b"%d" % n

    def send(data: bytes) -> None:
        if not sent:  # the first send waits for the pipe: the maker goes on meanwhile
            all_made.wait(2)
            seen.append(len(made))
        sent.append(data)

    split._ahead(maker(), send)
    assert seen == [count] and sent == [b"%d" % n for n in range(count)]


def test_a_failed_send_stops_the_maker_and_is_raised() -> None:
    made: list[int] = []

    def maker() -> Any:
        for n in range(10 * split._AHEAD):
            made.append(n)
            yield b"x"

    def send(data: bytes) -> None:
        raise BrokenPipeError("the reader went away")

    with pytest.raises(BrokenPipeError, match="went away"):
        split._ahead(maker(), send)
    assert len(made) <= 2 * split._AHEAD + 2  # it stopped soon after, not at the end


def test_what_was_made_before_the_maker_failed_is_sent_then_its_error_raised() -> None:
    sent: list[bytes] = []

    def maker() -> Any:
        yield b"a"
        yield b"b"
        raise ValueError("bad record")

    with pytest.raises(ValueError, match="bad record"):
        split._ahead(maker(), sent.append)
    assert sent == [b"a", b"b"]


def test_interleaved_pieces_arrive_whole_when_the_child_runs_ahead(always: None) -> None:
    # pieces of about the pipe's size, the child's made at once, this process's slowly: the child
    # holds several while the pipe is full, and each arrives whole and in its place
    import time

    def render(lo: int, hi: int) -> bytes:
        if os.getpid() == parent:
            time.sleep(0.01)
        return bytes([lo % 251]) * (700_000 + lo)

    parent = os.getpid()
    pieces = [(k, k + 1) for k in range(24)]
    got = list(split.interleaved(pieces, render, 0))
    assert got == [bytes([k % 251]) * (700_000 + k) for k in range(24)]


def test_a_child_collects_without_walking_what_it_inherits(always: None) -> None:
    # a full collection in the child would walk every object this process holds (a session's
    # columns) and copy the pages they are on; this process goes on collecting them
    import gc

    held = [[k] for k in range(1000)]  # containers this process holds when it forks
    in_child = split.forked(lambda: (gc.get_freeze_count(), any(o is held for o in gc.get_objects())), 0)()
    assert in_child[0] >= len(held) and not in_child[1]
    assert gc.get_freeze_count() == 0 and any(o is held for o in gc.get_objects())


def test_a_childs_child_leaves_what_its_parent_inherited_frozen(always: None) -> None:
    import gc

    def in_child() -> tuple[int, int]:
        inherited = gc.get_freeze_count()
        assert split.forked(lambda: 1, 0)() == 1  # the child forks a child of its own
        return inherited, gc.get_freeze_count()

    inherited, after = split.forked(in_child, 0)()
    assert inherited > 0 and after >= inherited
    assert gc.get_freeze_count() == 0


def test_a_program_that_froze_objects_itself_is_left_as_it_was(always: None) -> None:
    import gc

    held = [[k] for k in range(100)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert split.forked(lambda: 1, 0)() == 1
        fresh = [[k] for k in range(100)]  # made after: nothing more is frozen by a fork
        assert split.forked(lambda: 2, 0)() == 2
        assert gc.get_freeze_count() == frozen and any(o is fresh for o in gc.get_objects())
    finally:
        gc.unfreeze()
    assert held
