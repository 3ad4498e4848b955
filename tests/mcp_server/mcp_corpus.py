"""The sessions the MCP tests read: two projects, a fork, a long tool output with a secret in it,
a compaction, a label and a subagent session."""

from __future__ import annotations

from pathlib import Path

from builders import assistant, entry, header, jsonl, stamp, text, tool_result, user, write_session

SECRET = "sk-ant-api03-" + "A" * 90
LONG = "x" * 5000 + f" token {SECRET} end"
PARSER = "2026-01-01T00-00-00-000Z_aaaa1111-0000-4000-8000-000000000001"
DOCS = "2026-01-02T00-00-00-000Z_bbbb2222-0000-4000-8000-000000000002"
PARSER_ID = "aaaa1111-0000-4000-8000-000000000001"
DOCS_ID = "bbbb2222-0000-4000-8000-000000000002"


def build(root: Path) -> dict[str, Path]:
    """Write the corpus under the sessions ``root``; the session files by name."""
    parser = write_session(root / "--work-proj--" / f"{PARSER}.jsonl", [
        entry("u1", None, timestamp=stamp(1), message=user("please fix the flaky parser test")),
        entry("a1", "u1", timestamp=stamp(2), message=assistant(
            [text("Running it"), {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "pytest"}}])),
        entry("t1", "a1", timestamp=stamp(3), message=tool_result(LONG)),
        entry("a2", "t1", timestamp=stamp(4), message=assistant("The parser test was flaky because of dict ordering.")),
        entry("l1", "a2", type="label", timestamp=stamp(5), targetId="a2", label="diagnosis"),
    ], head=header(PARSER_ID, cwd="/work/proj"), slot="Fix parser")
    docs = write_session(root / "--other--" / f"{DOCS}.jsonl", [
        entry("u1", None, timestamp=stamp(1, "2026-01-02"), message=user("write docs for the cache")),
        entry("a1", "u1", timestamp=stamp(2, "2026-01-02"), message=assistant("Docs written in docs/cache.md.")),
        entry("c1", "a1", type="compaction", timestamp=stamp(3, "2026-01-02"), summary="Cache docs were written.",
              shortSummary="cache docs", firstKeptEntryId="a1", tokensBefore=1234),
        entry("u2", "c1", timestamp=stamp(4, "2026-01-02"), message=user("now the other branch")),
        entry("a3", "u1", timestamp=stamp(5, "2026-01-02"), message=assistant("An abandoned branch.")),
    ], head=header(DOCS_ID, cwd="/other"))
    # the last entry written was on the other branch: put the leaf back on the main one
    with docs.open("a") as f:
        f.write(jsonl([entry("u3", "u2", timestamp=stamp(6, "2026-01-02"), message=user("and the cache sizes"))]))
    sub = write_session(root / "--work-proj--" / PARSER / "agent-1.jsonl", [
        entry("s1", None, timestamp=stamp(7), message=user("subagent: look at the tokenizer")),
        entry("s2", "s1", timestamp=stamp(8), message=assistant("The tokenizer is fine.")),
    ], head=header("cccc3333-0000-4000-8000-000000000003", cwd="/work/proj"))
    return {"parser": parser, "docs": docs, "sub": sub}


def append_message(path: Path, entry_id: str, parent: str, words: str) -> None:
    """What omp does when a session goes on: one more line at the end."""
    with path.open("a") as f:
        f.write(jsonl([entry(entry_id, parent, timestamp=stamp(30), message=user(words))]))
