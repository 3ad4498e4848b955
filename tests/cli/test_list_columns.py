"""``list`` fits its table to the terminal (issue 15, item 1): one line per session, the id (as
short as unique, at least 8) and the modification time always, columns dropped in a documented
order, the title taking the rest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import assistant, entry, header, stamp, user, write_session
from omp_session.cli import cli
from omp_session.cli._columns import DROP_ORDER
from omp_session.cli._style import width
from omp_session.paths import project_dir_name

IDS = ["01a23264-c802-772e-9f40-1307e1b2e643", "01a23264-c8ff-7000-8000-000000000001",
       "7f000000-0000-7000-8000-000000000002"]
SHORT = [i[:12] for i in IDS]  # the first two share 11 characters
MULTILINE = "CI is red on main:\n```\nFAILED tests/test_x.py::test_y - AssertionError\n```\nwhy?"
CJK = "日本語のタイトル: a title that goes on " + "and on " * 30


def _session(folder: Path, i: int, cwd: str, *, title: str | None = None, first: str = "hello") -> None:
    entries = [entry("aaaaaaaa", None, timestamp=stamp(1), message=user(first)),
               entry("bbbbbbbb", "aaaaaaaa", timestamp=stamp(2), message=assistant("done"))]
    head = header(IDS[i], cwd=cwd, **({"title": title} if title else {}))
    path = write_session(folder / f"2026-01-0{i + 1}T00-00-00-000Z_{IDS[i]}.jsonl", entries, head=head,
                         slot=title)
    os.utime(path, (1_767_225_600 + i * 60, 1_767_225_600 + i * 60))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    work = tmp_path / "work" / "a project folder with a long name" / "src" / "importer"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    bucket = tmp_path / "agent" / "sessions" / project_dir_name(str(work))
    _session(bucket, 0, str(work), first=MULTILINE)
    _session(bucket, 1, str(work), title=CJK)
    _session(bucket, 2, str(work), title="Short")
    return work


def _list(columns: int, *args: str) -> list[str]:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(cli, ["list", *args])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


@pytest.mark.parametrize("columns", [60, 80, 120, 200])
def test_one_line_per_session_with_id_and_modified_at_any_width(project: Path, columns: int) -> None:
    lines = _list(columns)
    assert len(lines) == 4 and all(width(line) <= columns for line in lines)
    names = lines[0].split()
    assert names[:2] == ["id", "modified"] and names[-1] == "title"
    # the columns that went are the first ones of the documented order
    order = [c for c in DROP_ORDER if c in ("created", "messages", "size", "status", "cwd")]
    gone = [c for c in order if c not in names]
    assert gone == order[:len(gone)] and (columns < 200) == bool(gone)
    for short, line in zip(reversed(SHORT), lines[1:], strict=True):  # newest first
        assert line.startswith(short + "  ") and line[12] == " "
        assert line[14:30] == "2026-01-01 00:0" + line[29] and line[29].isdigit()
    assert lines[3].rstrip().endswith("CI is red on main:")  # its first line only
    assert "日本語のタイトル" in lines[2]


def test_the_narrowest_terminal_keeps_id_modified_and_title(project: Path) -> None:
    assert _list(60)[0].split() == ["id", "modified", "title"]
    assert _list(200)[0].split() == ["id", "modified", "created", "messages", "size", "status", "cwd", "title"]


def test_a_wide_listing_cuts_only_the_title(project: Path) -> None:
    lines = _list(200, "--all")
    row = next(line for line in lines if line.startswith(SHORT[1]))
    assert width(row) == 200 and row.endswith("…")
    names = lines[0].split()
    cells = row.split("  ")
    assert cells[0] == SHORT[1] and [c.strip() for c in cells if c.strip().endswith("KB") or c.strip().endswith(" B")]
    size = next(c.strip() for c in cells if c.strip().endswith(("KB", " B")))
    assert size[0].isdigit() and "…" not in size and names.count("size") == 1


def test_ids_are_as_long_as_needed_to_be_unique() -> None:
    from omp_session.cli._columns import short_id_length

    assert short_id_length(IDS) == 12
    assert short_id_length(["abcdef0123", "99"]) == 8
    assert short_id_length(["ABCDEF0123X", "abcdef0123y"]) == 11  # prefixes match case-insensitively


def test_json_keeps_every_field(project: Path) -> None:
    result = CliRunner(env={"COLUMNS": "60"}).invoke(cli, ["list", "--json"])
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == list(reversed(IDS))
    assert set(rows[0]) == {"path", "id", "title", "cwd", "created", "modified", "messages", "size", "status",
                            "first_message", "parent_session", "subagent_of"}
    assert next(r for r in rows if r["id"] == IDS[0])["first_message"].startswith("CI is red on main:\n")
