"""Sessions roots of three team members for the ``serve --store`` tests: alice (one session runs
subagents, nested and missing ones among them), bob and carol, each with its own ids and words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import assistant, entry, header, usage, user, write_session
from omp_session.paths import project_dir_name

# the namespace each member's sync records (carol shares alice's machine)
NAMESPACES = {"alice": "alice@laptop", "bob": "bob@desk", "carol": "carol@laptop"}
TASK_SESSION = "alice-task-0001"


def _when(second: int) -> str:
    return f"2026-01-02T10:{second // 60:02d}:{second % 60:02d}.000Z"


def _msg(eid: str, parent: str | None, second: int, message: dict[str, Any]) -> dict[str, Any]:
    return entry(eid, parent, timestamp=_when(second), message=message)


def _answer(text: str, cost: float, model: str = "m") -> dict[str, Any]:
    return assistant(text, model=model, timestamp=1767348000000, usage=usage(100, 10, cost))


def _task(n: int, parent: str, agents: list[str], progress: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """An assistant turn calling the task tool and the result naming the agents it ran."""
    call = _msg(f"c{n}", parent, n, assistant([{"type": "toolCall", "id": f"call{n}", "name": "task",
                                                "arguments": {"tasks": [{"name": a} for a in agents]}}],
                                              timestamp=1767348000000, usage=usage(50, 5, 0.002)))
    details = {"results": [{"index": i, "id": a, "agent": "task", "task": "look", "exitCode": 0, "output": "done"}
                           for i, a in enumerate(agents)],
               "progress": [{"index": 0, "id": a, "status": "running"} for a in progress]}
    result = _msg(f"r{n}", f"c{n}", n + 1, {"role": "toolResult", "toolCallId": f"call{n}", "toolName": "task",
                                            "content": [{"type": "text", "text": "agents finished"}],
                                            "details": details, "isError": False, "timestamp": n})
    return [call, result]


def _session(root: Path, cwd: str, sid: str, minute: int, entries: list[dict[str, Any]]) -> Path:
    path = root / project_dir_name(cwd) / f"2026-01-02T10-{minute:02d}-00-000Z_{sid}.jsonl"
    return write_session(path, entries, head=header(sid, cwd=cwd, timestamp=_when(minute * 60)))


def _plain(root: Path, owner: str, n: int, cwd: str) -> Path:
    sid = f"{owner}-plain-{n:04d}"
    return _session(root, cwd, sid, 10 + n + 10 * len(owner), [
        _msg("u1", None, 1, user(f"shared question {n} from {owner}")),
        _msg("a1", "u1", 2, _answer(f"shared answer {owner}word {n}", 0.01 * (n + 1) * len(owner)))])


def build_member(root: Path, owner: str) -> dict[str, Path]:
    """The sessions of ``owner`` under ``root``; alice's first one has subagents: Anna (who ran
    Anna.Carl in turn), Bob (named, no transcript), ``../evil`` (no file name), Extra (a transcript
    no task names) and an advisor."""
    out: dict[str, Path] = {}
    for n in range(2 if owner != "carol" else 1):
        out[f"{owner}-plain-{n:04d}"] = _plain(root, owner, n, f"/work/{owner}/p{n}")
    if owner == "alice":
        parent = _session(root, "/work/alice/p0", TASK_SESSION, 5, [
            _msg("u1", None, 1, user("split the work, shared")),
            *_task(2, "u1", ["Anna", "Bob"]),
            *_task(4, "r2", ["../evil"], progress=("Anna",)),
            _msg("a9", "r4", 9, _answer("both done", 0.003))])
        folder = parent.with_suffix("")
        write_session(folder / "Anna.jsonl", [
            _msg("au1", None, 1, user("look at the parser </script> annaword")),
            *_task(2, "au1", ["Anna.Carl"]),
            _msg("aa1", "r2", 4, _answer("Anna's answer", 0.004))],
            head=header("anna-session", cwd="/work/alice/p0", timestamp=_when(301)))
        write_session(folder / "Anna" / "Anna.Carl.jsonl", [_msg("cu1", None, 1, user("Carl's task"))],
                      head=header("carl-session", cwd="/work/alice/p0", timestamp=_when(302)))
        write_session(folder / "Extra.jsonl", [_msg("eu1", None, 1, user("an unnamed subagent"))],
                      head=header("extra-session", cwd="/work/alice/p0", timestamp=_when(303)))
        write_session(folder / "__advisor.jsonl", [], head=header("advisor-session", cwd="/work/alice/p0",
                                                                   timestamp=_when(304)))
        out[TASK_SESSION] = parent
    return out
