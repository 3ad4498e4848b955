"""``omp-session tail SESSION [-f]``: the end of the current branch, optionally followed live (issue 5).

Without ``-f`` the file is read as omp loads it (S1.4, S6.1). With ``-f`` it is followed by
:class:`omp_session.follow.Follower`, which reads only appended lines (S8.2) and re-reads the file
when it is replaced (S8.4) or truncated. See that module for what counts as a complete line.

Lines are plain text, styled on a terminal (cli/_style.py), each cut to ``$COLUMNS`` or the
terminal's width when there is one; the session's own control characters are shown as U+FFFD
(``inert``), on a terminal and in a pipe. ``--json`` prints the entries as stored.

Exit status: 0 (also on Ctrl-C while following), 1 when the file cannot be read, 2 usage errors.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, overload

import click

from omp_session.errors import SessionFileError
from omp_session.js import codec
from omp_session.model.session import Session, read_session
from omp_session.model.text import shown
from omp_session.ops.follow import (
    Appended,
    BranchSwitch,
    Created,
    Deleted,
    Event,
    Follower,
    Reloaded,
    Replaced,
    Skipped,
    TitleChanged,
    Truncated,
    Unreadable,
)
from omp_session.store.base import StoredFile

from . import _render as render
from ._errors import command
from ._options import json_option, session_argument
from ._store import (
    active_store,
    open_one,
    open_stored,
    refuse_non_session,
    refuse_non_session_file,
    store_option,
)
from ._style import Styler, clip, inert, terminal_width, uncoloured, width

__all__ = ["tail"]

_BURST = 10  # when -n is smaller: at least this many entries of a new branch or a re-read file are shown
_ROLE_STYLE = {"user": ("bold", "green"), "assistant": ("bold", "cyan"), "toolResult": ("magenta",)}


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(ts: Any) -> str:
    """The entry's timestamp, to the second, as written (UTC); epoch milliseconds are converted."""
    if isinstance(ts, str):
        return ts[:19].replace("T", " ") if len(ts) >= 19 and ts[10:11] == "T" else _clip(ts, 19)
    if isinstance(ts, int | float) and not isinstance(ts, bool):
        try:
            return datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            pass
    return "-"


def _blocks(content: Any) -> tuple[str, list[str], bool]:
    """(text, tool call names, has thinking) of a message's content."""
    if isinstance(content, str):
        return content, [], False
    texts: list[str] = []
    calls: list[str] = []
    thinking = False
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                texts.append(shown(block.get("text", "")))
            elif kind == "toolCall":
                calls.append(shown(block.get("name")))
            elif kind == "image":
                texts.append("[image]")
            elif kind in ("thinking", "redactedThinking"):
                thinking = True
    return " ".join(texts), calls, thinking


def _preview(entry: Any) -> tuple[str, str]:
    """(label, one-line preview) of an entry."""
    if not isinstance(entry, dict):
        return "record", render.summary(entry)
    kind = entry.get("type")
    msg = entry.get("message")
    if kind != "message" or not isinstance(msg, dict):
        text = render.summary(entry)
        label = shown(kind)
        if text.startswith(label):
            text = text[len(label):].lstrip(" :")
        return label, _clip(text, 100)
    role = shown(msg.get("role"))
    text, calls, thinking = _blocks(msg.get("content"))
    text = uncoloured(text)
    if role == "assistant":
        parts = [_clip(text, 80)] if text.strip() else []
        if calls:
            parts.append("→ " + ", ".join(calls))
        if msg.get("stopReason") == "error":
            parts.append(f"error: {_clip(shown(msg.get('errorMessage', '')), 60)}")
        if not parts:
            parts.append("(thinking)" if thinking else "(empty)")
        return role, " ".join(parts)
    if role == "toolResult":
        mark = " [error]" if msg.get("isError") is True else ""
        return role, f"{shown(msg.get('toolName'))}{mark}: {_clip(text, 60)}"
    return role, _clip(text, 100)


class _Printer:
    def __init__(self, as_json: bool, count: int) -> None:
        self.as_json = as_json
        self.count = count
        self.st = Styler()
        self.cells = terminal_width()  # None: a pipe without COLUMNS, nothing cut to a width

    def line(self, *parts: tuple[str, tuple[str, ...]], collapse: bool = True) -> None:
        """One line of ``parts`` (text, styles), joined by spaces and cut to the width: the parts
        on the left stay, the last gives way first. ``collapse``: white space runs as one space
        (previews); else only newlines and tabs become spaces (a notice's titles and paths stay
        as they are: a change of white space must still read as one)."""
        left = self.cells
        out: list[str] = []
        for text, styles in parts:
            text = inert(text)
            # one row, whatever the session holds
            text = " ".join(text.split()) if collapse else text.replace("\n", " ").replace("\t", " ")
            if left is not None:
                if left <= 0:
                    break
                text = clip(text, left)
                left -= width(text) + 1
            out.append(self.st(text, *styles))
        sys.stdout.write(" ".join(out) + "\n")

    def entries(self, entries: Sequence[Any], limit: int) -> None:
        shown = entries[-limit:] if limit else []
        if len(entries) > len(shown) and not self.as_json:
            self.line((f"… {len(entries) - len(shown):,} earlier entries not shown", ("dim",)))
        for entry in shown:
            self.entry(entry)

    def entry(self, entry: Any) -> None:
        if self.as_json:
            sys.stdout.write((codec.stringify(entry) or "null") + "\n")
            return
        label, text = _preview(entry)
        ts = _when(entry.get("timestamp")) if isinstance(entry, dict) else "-"
        self.line((ts, ("dim",)), (label, _ROLE_STYLE.get(label, ("yellow",))), (text, ()))

    def notice(self, text: str) -> None:
        """A change to the file rather than a new entry: on stdout for people, on stderr with
        --json so that stdout stays one entry per line."""
        if self.as_json:
            click.echo(f"omp-session: {inert(text)}", err=True)
        else:
            self.line((f"── {text}", ("bold", "yellow")), collapse=False)

    def event(self, event: Event, path: str) -> None:
        burst = max(self.count, _BURST)
        if isinstance(event, Appended):
            self.entry(event.entry)
        elif isinstance(event, BranchSwitch):
            fork = "a new root" if event.fork_id is None else f"{event.fork_id}"
            self.notice(f"branch switch: leaf {event.old_leaf} → {event.new_leaf} (forks at {fork}, "
                        f"{len(event.entries)} {'entry' if len(event.entries) == 1 else 'entries'} since)")
            self.entries(event.entries, burst)
        elif isinstance(event, Reloaded):
            what = {Created: "file appeared", Truncated: "file truncated or rewritten in place",
                    Replaced: "file replaced (rewritten)"}.get(type(event), "file re-read")
            self.notice(f"{what}: read again, {event.branch_length} entries on the current branch, "
                        f"leaf {event.new_leaf}")
            self.entries(event.entries, burst if not isinstance(event, Created) else self.count)
        elif isinstance(event, TitleChanged):
            self.notice(f"title: {event.old!r} → {event.new!r}")
        elif isinstance(event, Deleted):
            self.notice(f"{path} was deleted; waiting for it to come back")
        elif isinstance(event, Skipped):
            self.notice(f"skipped a malformed record at byte {event.offset} ({event.length} bytes; omp skips it too)")
        elif isinstance(event, Unreadable):
            self.notice(f"cannot read {path}: {event.reason}; retrying")


def _follow_store(key: Path, branch: list[Any], printer: _Printer, interval: float, max_polls: int | None) -> None:
    """-f on a database or Redis store: poll the stored size, read the session again when it
    changes, and print what the current branch gained (or announce a switch)."""
    active = active_store()
    assert active is not None
    storage = active[1]
    seen = storage.stat(str(key))
    polls = 0
    sys.stdout.flush()
    while max_polls is None or polls < max_polls:
        polls += 1
        _sleep(interval)
        now = storage.stat(str(key))
        if _state(now) == _state(seen):
            continue
        if now is None:
            printer.notice(f"{key} was deleted from the store; waiting for it to come back")
            sys.stdout.flush()  # each line as it happens, as after every other change
            seen = None
            continue
        seen = now
        with open_stored(key) as s:
            fresh = s.get_branch()
        ids = [e.get("id") if isinstance(e, dict) else None for e in branch]
        leaf = ids[-1] if ids else None
        new_ids = [e.get("id") if isinstance(e, dict) else None for e in fresh]
        if leaf is not None and leaf in new_ids:
            gained = fresh[new_ids.index(leaf) + 1:]
            printer.entries(gained, len(gained))
        else:
            printer.notice(f"the current branch changed: {len(fresh)} entries, leaf {new_ids[-1] if new_ids else None}")
            printer.entries(fresh, max(printer.count, _BURST))
        branch = fresh
        sys.stdout.flush()


def _state(f: StoredFile | None) -> tuple[int, float] | None:
    return None if f is None else (f.size, f.mtime_ms)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)  # a module attribute, so tests can drive the follow loop without waiting


class _Branch(Sequence[Any]):
    """The entries at ``indices``, decoded when looked at and not kept: tail shows the end of a
    branch, and the rest of a big session's branch must cost no memory."""

    def __init__(self, s: Session, indices: Sequence[int]) -> None:
        self._s = s
        self._k = indices

    def __len__(self) -> int:
        return len(self._k)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._s.peek_entry(k) for k in self._k[i]]
        return self._s.peek_entry(self._k[i])


def _session_now(path: Path) -> Session:
    try:
        return read_session(os.path.expanduser(path))
    except IsADirectoryError:
        raise SessionFileError(str(path), "is a directory, not a session file") from None
    except FileNotFoundError:
        raise SessionFileError(str(path), "no such file") from None
    except PermissionError:
        raise SessionFileError(str(path), "permission denied") from None
    except OSError as e:
        raise SessionFileError(str(path), os.strerror(e.errno or 5)) from None


@command("tail")
@session_argument("path", resolve=True, as_given=True)  # with -f, a path may not exist yet
@store_option
@click.option("-f", "--follow", is_flag=True, help="Keep reading as omp appends; Ctrl-C to stop.")
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=10, show_default=True,
              help="How many entries of the current branch to print first.")
@json_option("Print the entries as JSON lines, as stored.")
@click.option("--interval", type=click.FloatRange(min=0.01), default=0.5, show_default=True,
              help="Seconds between checks of the file with -f.")
@click.option("--max-polls", type=click.IntRange(min=0), default=None, hidden=True)
def tail(path: Path, follow: bool, count: int, as_json: bool, interval: float, max_polls: int | None) -> None:
    """Print the last entries of the current branch; with -f, follow the file as omp writes it.

    With -f, new entries are printed as they are appended. Branch switches, a truncated or
    replaced file, title changes and deletion are announced; with --json these notices go to
    stderr and stdout keeps one entry per line. A last line without LF is waited for.

    \b
    Examples:
      omp-session tail -f latest
      omp-session tail -n 50 ab12            # an id prefix, or a path
    """
    printer = _Printer(as_json, count)
    try:
        if active_store() is not None:
            with open_one(path) as s:  # a key that is not a session: one line, exit 1
                branch = s.get_branch()
            printer.entries(branch, count)
            if follow:
                _follow_store(path, branch, printer, interval, max_polls)
            return
        if not follow:
            with _session_now(path) as s:
                refuse_non_session(s, path)
                printer.entries(_Branch(s, s.branch_indices()), count)
            return
        # -f: an empty file may still become a session, so it is waited for
        if os.path.isfile(path) and os.path.getsize(path):
            refuse_non_session_file(path)
        follower = Follower(path)
        printer.entries(follower.initial(), count)
        if follower.session is None:
            printer.notice(f"waiting for {path} to appear")
        sys.stdout.flush()
        for event in follower.events(interval, max_polls=max_polls, sleep=_sleep):
            printer.event(event, str(path))
            sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stdout.flush()
